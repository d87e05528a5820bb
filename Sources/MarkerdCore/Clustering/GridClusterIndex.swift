// Dynamic grid clustering: a per-zoom grid of tile-aligned cells, nested as a compressed quadtree,
// updated incrementally on every upsert, move and removal.

/// Dynamic clustering index (markerd's default algorithm).
///
/// For each zoom 0...maxZoom, points are grouped by grid cell (see `GridClusterOptions` for the cell
/// size). A cell with at least `minPoints` members is one cluster (count, centroid, member bounds);
/// a smaller cell returns its members unclustered; above `maxZoom` every point is returned alone.
/// The cells of zoom z+1 nest 2 x 2 in those of zoom z, so the non-empty cells form a quadtree.
///
/// Storage is a compressed quadtree: only cells holding at least two points are stored; a cell
/// holding a single point is represented by the point itself in its parent's child slot (or in the
/// root table), and the chain of single-member cells below it is implicit. Cells of `maxZoom` keep
/// their member lists. The structure depends only on the set of points (it is canonical).
///
/// Costs: `upsert` / `remove` touch at most two cells per zoom, O(maxZoom) (plus, on removal of a
/// point that defines a member bound of its maxZoom cell, a rescan of that cell's members). A move
/// that stays in the point's node (most small moves) walks up once, updating sums and bounds. Queries
/// visit only non-empty cells intersecting the box, O(result + maxZoom). Everything observable
/// (clusters, ids, positions, output order) depends only on the current set of points, not on
/// update order.
///
/// Inclusion rule: at zoom <= maxZoom a cell is returned (as a cluster or as its points) when the
/// cell's rectangle intersects the query box, whatever part of it the box covers; so a cell belongs
/// to exactly one tile, and neighbouring viewports agree. Above maxZoom points are filtered exactly.
///
/// Output order: root cells (zoom 0) by (cellY, cellX), then depth-first in quadrant order
/// (north-west, north-east, south-west, south-east); points of one finest cell by id.
///
/// Memory: one stored cell (~84 bytes with its child slots) per cell holding two or more points,
/// plus 16 bytes per point id (up to the largest id). 1M uniformly spread points: ~0.5M cells
/// (the uncompressed grid needed ~9.7M cells, about 1 GB).
///
/// Value type; not thread-safe for concurrent mutation (wrap it in the owner's lock).
public struct GridClusterIndex: Sendable {
    public let options: GridClusterOptions
    /// log2 of cells per tile side.
    private let k: Int

    // Node references (`Ref`): >= 0 a stored cell; -1 empty; <= -2 the single point `-2 - ref`.
    // Cell arena. `children[4 * c + q]`: the node in quadrant q = (cy & 1) << 1 | (cx & 1) at zoom + 1.
    private var cells: [Cell] = []
    private var children: [Int32] = []
    /// Members of stored maxZoom cells (empty for other cells).
    private var members: [[Int32]] = []
    private var freeCells: [Int32] = []
    /// Zoom-0 nodes by key `cy << 32 | cx`.
    private var roots: [UInt64: Int32] = [:]

    // Points by id, one 16-byte record each (a move reads and writes all four fields: one cache
    // line instead of four).
    private struct PointState {
        var x: UInt32
        var y: UInt32
        /// The cell whose child slot (or member list, see `pos`) holds the point; -1: a root slot;
        /// `absent` when the id is not in the index.
        var holder: Int32
        /// Position in `members[holder]`, or -1 when the point sits in a child or root slot.
        var pos: Int32
    }
    private var pts: [PointState] = []
    private static let absent = Int32.min

    /// Number of points.
    public private(set) var count = 0
    /// Number of stored cells (cells holding two or more points) over all zooms.
    public var cellCount: Int { cells.count - freeCells.count }

    struct Cell: Sendable {
        var sumX: UInt64 = 0
        var sumY: UInt64 = 0
        var count: Int32 = 0
        var parent: Int32 = -1
        var cx: UInt32 = 0
        var cy: UInt32 = 0
        var minX: UInt32 = 0
        var minY: UInt32 = 0
        var maxX: UInt32 = 0
        var maxY: UInt32 = 0
        var zoom: UInt8 = 0
        /// `stampNow` when the cell or anything below it last changed (see `GridNodeStamp`).
        var stamp: UInt32 = 0
    }

    /// Mutation counter: bumped by every `upsert` and `remove` before it writes any cell; each
    /// cell written takes its value as its `stamp`.
    private var stampNow: UInt32 = 0
    /// Identifies this index's line of stamps (see `GridNodeStamp`): random at creation, and
    /// drawn again when `stampNow` runs out (every stamp is then reset to 0).
    public private(set) var generation = UInt64.random(in: 1...UInt64.max)

    /// Starts a mutation: the next stamp (after 2^32 - 1 of them, a new generation).
    private mutating func nextStamp() {
        if stampNow == .max {
            for c in cells.indices { cells[c].stamp = 0 }
            stampNow = 0
            generation = UInt64.random(in: 1...UInt64.max)
        }
        stampNow += 1
    }

    /// An empty index. Traps on invalid options (`options.isValid`).
    public init(options: GridClusterOptions = GridClusterOptions()) {
        precondition(options.isValid, "GridClusterOptions invalid: radius/extent > 0, minPoints >= 1, 0 <= maxZoom, maxZoom + cellsPerTileLog2 <= 29")
        self.options = options
        self.k = options.cellsPerTileLog2
    }

    /// An index over `points` (a later duplicate of an id wins), built in bulk. Traps on invalid
    /// options or a negative id.
    ///
    /// The same index as upserting the points one by one, built without walking the tree once per
    /// point: the points are sorted by their quadtree (Morton) key, in which every cell of every
    /// zoom is a contiguous run, and the tree is built top-down over the sorted runs one zoom at a
    /// time (cells numbered breadth-first: see `buildLevels`), each cell's sums and bounds
    /// gathered bottom-up from its children. Memory access is sequential except for one write per
    /// point of its holder and position. O(n) for the radix sort plus O(cells x log n); 32 bytes
    /// per point of temporary memory.
    public init(options: GridClusterOptions = GridClusterOptions(), points: [ClusterPoint]) {
        self.init(options: options)
        guard let maxId = points.lazy.map(\.id).max() else { return }
        reserve(maxId: maxId)
        // The last occurrence of each id (input order), so that duplicates keep their meaning.
        var last = [Int32](repeating: -1, count: Int(maxId) + 1)
        for (i, p) in points.enumerated() {
            precondition(p.id >= 0, "ClusterPoint.id must be >= 0")
            last[Int(p.id)] = Int32(i)
        }
        var entries: [BulkEntry] = []
        entries.reserveCapacity(points.count)
        for (i, p) in points.enumerated() where last[Int(p.id)] == Int32(i) {
            pts[Int(p.id)].x = p.x
            pts[Int(p.id)].y = p.y
            entries.append(BulkEntry(key: Self.mortonKey(p.x, p.y), id: p.id))
        }
        last = []
        let depthBits = 2 * (options.maxZoom + k)  // the key bits that name a cell of maxZoom
        RadixSort.sort(&entries, bits: (64 - depthBits)..<64, maxDigitBits: 11) { $0.key }
        count = entries.count
        entries.withUnsafeBufferPointer { buildLevels($0) }
    }

    /// A point of the bulk build: its Morton key and id.
    private struct BulkEntry {
        var key: UInt64
        var id: Int32
    }

    /// A node of the bulk build waiting for its level: the entries `start..<end` of the sorted
    /// points (one cell's run) and the stored cell whose slot it fills (-1: a root).
    private struct BulkRun {
        var start: Int32
        var end: Int32
        var parent: Int32
    }

    /// Zooms at the bottom of a bulk-built tree numbered depth first (see `buildLevels`).
    static let depthFirstZooms = 4

    /// Builds the tree over the points `sorted` by Morton key, one zoom after the other, so that
    /// stored cells are numbered breadth-first: by zoom, then in quadtree (Morton) order within
    /// a zoom. A query at one zoom then reads runs of neighbouring cells of that zoom (and of
    /// their child slots) instead of one scattered cell per item, as a depth-first numbering
    /// (each cell followed by its whole subtree) gave on large layers. The deepest
    /// `depthFirstZooms` zooms (13-16 at the default max zoom) are numbered depth first below
    /// each cell of the zoom above them, so that an update, which walks one cell per zoom from a
    /// point to the root, finds the bottom of its path in a few neighbouring cache lines.
    /// Counts come from the runs' sizes; sums and bounds are gathered bottom-up (the cells
    /// numbered breadth-first once all are built, children before parents: a child always has a
    /// higher number than its parent). Memory: 12 bytes per node of a level.
    private mutating func buildLevels(_ sorted: UnsafeBufferPointer<BulkEntry>) {
        let lastBreadthFirst = options.maxZoom - Self.depthFirstZooms
        var runs: [BulkRun] = []
        var start = 0
        while start < sorted.count {
            // one run per zoom-0 cell: the top 2k bits of the key
            let root = sorted[start].key >> UInt64(64 - 2 * k)
            var end = start + 1
            while end < sorted.count && sorted[end].key >> UInt64(64 - 2 * k) == root { end += 1 }
            runs.append(BulkRun(start: Int32(start), end: Int32(end), parent: -1))
            start = end
        }
        var next: [BulkRun] = []
        var z = 0
        while !runs.isEmpty {
            next.removeAll(keepingCapacity: true)
            for run in runs {
                if z > lastBreadthFirst {
                    buildDepthFirst(sorted, Int(run.start)..<Int(run.end), z: z, parent: run.parent)
                } else if let c = buildNode(sorted, Int(run.start)..<Int(run.end), z: z, parent: run.parent), z < options.maxZoom {
                    let b = Self.quadrantBounds(sorted, Int(run.start)..<Int(run.end), below: z + k)
                    for q in 0..<4 where b[q] < b[q + 1] { next.append(BulkRun(start: Int32(b[q]), end: Int32(b[q + 1]), parent: Int32(c))) }
                }
            }
            swap(&runs, &next)
            z += 1
        }
        for c in stride(from: cells.count - 1, through: 0, by: -1) where Int(cells[c].zoom) <= lastBreadthFirst {
            addToParent(c)
        }
    }

    /// Builds the subtree of the run `range` (one cell of zoom `z`) below `parent` with its cells
    /// numbered depth first, and adds its sums and bounds to `parent`'s.
    private mutating func buildDepthFirst(_ sorted: UnsafeBufferPointer<BulkEntry>, _ range: Range<Int>, z: Int, parent: Int32) {
        guard let c = buildNode(sorted, range, z: z, parent: parent) else { return }
        if z < options.maxZoom {
            let b = Self.quadrantBounds(sorted, range, below: z + k)
            for q in 0..<4 where b[q] < b[q + 1] { buildDepthFirst(sorted, b[q]..<b[q + 1], z: z + 1, parent: Int32(c)) }
        }
        addToParent(c)
    }

    /// Places the node of the run `range` (one cell of zoom `z`) in `parent`'s slot: a single
    /// point (added to `parent`'s sums and bounds; returns nil), or a new stored cell with its
    /// count (and, at max zoom, its members, sums and bounds), whose number it returns.
    private mutating func buildNode(_ sorted: UnsafeBufferPointer<BulkEntry>, _ range: Range<Int>, z: Int, parent: Int32) -> Int? {
        let first = sorted[range.lowerBound]
        let fx = Self.mortonX(first.key), fy = Self.mortonY(first.key)
        let (cx, cy) = cellOf(fx, fy, z)
        if range.count == 1 {
            pts[Int(first.id)].holder = parent
            pts[Int(first.id)].pos = -1
            setSlot(parent, cx, cy, Self.pointRef(first.id))
            if parent >= 0 { addToBounds(Int(parent), UInt64(fx), UInt64(fy), fx, fy, fx, fy) }
            return nil
        }
        let c = Int(newCell(cx: cx, cy: cy, parent: parent, zoom: z))
        setSlot(parent, cx, cy, Int32(c))
        cells[c].count = Int32(range.count)
        cells[c].minX = .max; cells[c].minY = .max
        if z == options.maxZoom {
            var list: [Int32] = []
            list.reserveCapacity(range.count)
            for i in range {
                let e = sorted[i]
                pts[Int(e.id)].holder = Int32(c)
                pts[Int(e.id)].pos = Int32(list.count)
                list.append(e.id)
                let x = Self.mortonX(e.key), y = Self.mortonY(e.key)
                addToBounds(c, UInt64(x), UInt64(y), x, y, x, y)
            }
            members[c] = list
        }
        return c
    }

    /// Where the runs of the four quadrants of the run `range` of one cell at depth `depth`
    /// (zoom + cellsPerTileLog2) start: quadrant q is `b[q]..<b[q + 1]` (maybe empty), found by
    /// the next two key bits.
    private static func quadrantBounds(_ sorted: UnsafeBufferPointer<BulkEntry>, _ range: Range<Int>, below depth: Int) -> QuadrantBounds {
        let shift = UInt64(64 - 2 * (depth + 1))
        var b = QuadrantBounds(range.lowerBound, range.upperBound)
        var from = range.lowerBound
        for q in 0..<3 {
            var lo = from, hi = range.upperBound
            while lo < hi {  // first entry of a later quadrant
                let mid = (lo + hi) / 2
                if Int((sorted[mid].key >> shift) & 3) <= q { lo = mid + 1 } else { hi = mid }
            }
            b[q + 1] = lo
            from = lo
        }
        return b
    }

    /// The five bounds of `quadrantBounds`, without an allocation.
    private struct QuadrantBounds {
        private var v: (Int, Int, Int, Int, Int)
        init(_ lower: Int, _ upper: Int) { v = (lower, upper, upper, upper, upper) }
        subscript(_ i: Int) -> Int {
            get { switch i { case 0: v.0; case 1: v.1; case 2: v.2; case 3: v.3; default: v.4 } }
            set { switch i { case 0: v.0 = newValue; case 1: v.1 = newValue; case 2: v.2 = newValue; case 3: v.3 = newValue; default: v.4 = newValue } }
        }
    }

    /// Adds stored cell `c`'s sums and bounds to its parent's (bulk build).
    @inline(__always)
    private mutating func addToParent(_ c: Int) {
        let p = Int(cells[c].parent)
        if p >= 0 { addToBounds(p, cells[c].sumX, cells[c].sumY, cells[c].minX, cells[c].minY, cells[c].maxX, cells[c].maxY) }
    }

    /// Adds sums and a bounding box to stored cell `c`'s (bulk build; not its count).
    @inline(__always)
    private mutating func addToBounds(_ c: Int, _ x: UInt64, _ y: UInt64, _ x0: UInt32, _ y0: UInt32, _ x1: UInt32, _ y1: UInt32) {
        cells[c].sumX &+= x; cells[c].sumY &+= y
        cells[c].minX = min(cells[c].minX, x0); cells[c].minY = min(cells[c].minY, y0)
        cells[c].maxX = max(cells[c].maxX, x1); cells[c].maxY = max(cells[c].maxY, y1)
    }

    /// The quadtree order of a world point: the bits of y and x interleaved (y's bit first, as in
    /// the quadrant number `(cy & 1) << 1 | (cx & 1)`).
    @inline(__always)
    static func mortonKey(_ x: UInt32, _ y: UInt32) -> UInt64 {
        @inline(__always) func spread(_ v: UInt32) -> UInt64 {
            var w = UInt64(v)
            w = (w | (w << 16)) & 0x0000_FFFF_0000_FFFF
            w = (w | (w << 8)) & 0x00FF_00FF_00FF_00FF
            w = (w | (w << 4)) & 0x0F0F_0F0F_0F0F_0F0F
            w = (w | (w << 2)) & 0x3333_3333_3333_3333
            w = (w | (w << 1)) & 0x5555_5555_5555_5555
            return w
        }
        return spread(y) << 1 | spread(x)
    }

    /// x of a Morton key (the even bits).
    @inline(__always) static func mortonX(_ key: UInt64) -> UInt32 { compact(key) }
    /// y of a Morton key (the odd bits).
    @inline(__always) static func mortonY(_ key: UInt64) -> UInt32 { compact(key >> 1) }

    @inline(__always)
    private static func compact(_ key: UInt64) -> UInt32 {
        var w = key & 0x5555_5555_5555_5555
        w = (w | (w >> 1)) & 0x3333_3333_3333_3333
        w = (w | (w >> 2)) & 0x0F0F_0F0F_0F0F_0F0F
        w = (w | (w >> 4)) & 0x00FF_00FF_00FF_00FF
        w = (w | (w >> 8)) & 0x0000_FFFF_0000_FFFF
        w = (w | (w >> 16)) & 0x0000_0000_FFFF_FFFF
        return UInt32(w)
    }

    /// Approximate bytes held (array capacities and the root table).
    public var approximateBytes: Int {
        var memberBytes = 0
        for m in members where m.capacity > 0 { memberBytes += 32 + m.capacity * 4 }
        return cells.capacity * MemoryLayout<Cell>.stride + children.capacity * 4 + members.capacity * 8
            + freeCells.capacity * 4 + roots.capacity * 16 + pts.capacity * MemoryLayout<PointState>.stride
            + memberBytes
    }

    // MARK: updates

    /// Adds a point, or moves it if its id is present. O(maxZoom). Upserting a present point at
    /// its position changes no cluster but still gives the stored cells above it a new stamp
    /// (`touch`), so that memos of what a walk emits (see `GridNodeStamp`) also follow what
    /// their owner says about the point (a marker's record: style, z-index, attributes).
    public mutating func upsert(_ p: ClusterPoint) {
        precondition(p.id >= 0, "ClusterPoint.id must be >= 0")
        let id = Int(p.id)
        if id >= pts.count { reserve(maxId: p.id) }
        if pts[id].holder != Self.absent {
            nextStamp()
            if pts[id].x == p.x && pts[id].y == p.y {
                touch(id)
                return
            }
            if moveInPlace(id, to: p.x, p.y) { return }
            remove(id: p.id)
        }
        nextStamp()
        pts[id].x = p.x
        pts[id].y = p.y
        let maxZoom = options.maxZoom
        var parent: Int32 = -1
        var z = 0
        while true {
            let (cx, cy) = cellOf(p.x, p.y, z)
            let ref = slot(parent, cx, cy)
            if ref == -1 {
                setSlot(parent, cx, cy, Self.pointRef(p.id))
                pts[id].holder = parent
                pts[id].pos = -1
                break
            }
            var c: Int
            if ref <= -2 {
                // Split: the single-point node becomes a stored cell holding that point.
                let s = Self.pointID(ref)
                c = Int(newCell(cx: cx, cy: cy, parent: parent, zoom: z))
                let sx = pts[Int(s)].x, sy = pts[Int(s)].y
                cells[c].count = 1
                cells[c].sumX = UInt64(sx); cells[c].sumY = UInt64(sy)
                cells[c].minX = sx; cells[c].maxX = sx; cells[c].minY = sy; cells[c].maxY = sy
                setSlot(parent, cx, cy, Int32(c))
                if z == maxZoom {
                    members[c].append(s)
                    pts[Int(s)].holder = Int32(c)
                    pts[Int(s)].pos = 0
                } else {
                    let (qx, qy) = cellOf(sx, sy, z + 1)
                    children[4 * c + Int((qy & 1) << 1 | (qx & 1))] = Self.pointRef(s)
                    pts[Int(s)].holder = Int32(c)
                    pts[Int(s)].pos = -1
                }
            } else {
                c = Int(ref)
            }
            cells[c].stamp = stampNow
            cells[c].count += 1
            cells[c].sumX &+= UInt64(p.x)
            cells[c].sumY &+= UInt64(p.y)
            cells[c].minX = min(cells[c].minX, p.x); cells[c].maxX = max(cells[c].maxX, p.x)
            cells[c].minY = min(cells[c].minY, p.y); cells[c].maxY = max(cells[c].maxY, p.y)
            if z == maxZoom {
                pts[id].holder = Int32(c)
                pts[id].pos = Int32(members[c].count)
                members[c].append(p.id)
                break
            }
            parent = Int32(c)
            z += 1
        }
        count += 1
    }

    /// Stamps the stored cells from point `id`'s holder up to its root with `stampNow`
    /// (O(maxZoom)); a point alone in the root table has none.
    private mutating func touch(_ id: Int) {
        var c = Int(pts[id].holder)
        while c >= 0 {
            cells[c].stamp = stampNow
            c = Int(cells[c].parent)
        }
    }

    /// A move that keeps the point in the node it occupies (its maxZoom cell, or the single-point
    /// cell in its holder's slot, position -1), such as most small moves: the structure stays, only
    /// the sums and bounds of the cells above change, in one walk up instead of a removal and an
    /// insertion. Returns false (changing nothing) when the point leaves that cell.
    private mutating func moveInPlace(_ id: Int, to x: UInt32, _ y: UInt32) -> Bool {
        let holder = Int(pts[id].holder)
        let ox = pts[id].x, oy = pts[id].y
        if pts[id].pos >= 0 {
            guard cellOf(x, y, options.maxZoom) == (cells[holder].cx, cells[holder].cy) else { return false }
        } else {
            let z = holder < 0 ? 0 : Int(cells[holder].zoom) + 1
            guard cellOf(x, y, z) == cellOf(ox, oy, z) else { return false }
        }
        pts[id].x = x
        pts[id].y = y
        var c = holder
        while c >= 0 {  // bottom-up, so that a recomputation reads updated children
            cells[c].stamp = stampNow
            cells[c].sumX = cells[c].sumX &- UInt64(ox) &+ UInt64(x)
            cells[c].sumY = cells[c].sumY &- UInt64(oy) &+ UInt64(y)
            if ox == cells[c].minX || ox == cells[c].maxX || oy == cells[c].minY || oy == cells[c].maxY {
                recomputeBounds(c)
            } else {
                cells[c].minX = min(cells[c].minX, x); cells[c].maxX = max(cells[c].maxX, x)
                cells[c].minY = min(cells[c].minY, y); cells[c].maxY = max(cells[c].maxY, y)
            }
            c = Int(cells[c].parent)
        }
        return true
    }

    /// Removes a point; returns false if the id is absent. O(maxZoom), plus a rescan of the point's
    /// maxZoom cell when the point defines one of that cell's member bounds.
    @discardableResult
    public mutating func remove(id: Int32) -> Bool {
        guard id >= 0, Int(id) < pts.count, pts[Int(id)].holder != Self.absent else { return false }
        nextStamp()
        let i = Int(id)
        let holder = Int(pts[i].holder)
        let pos = Int(pts[i].pos)
        pts[i].holder = Self.absent
        count -= 1
        let x = pts[i].x, y = pts[i].y
        if pos >= 0 {
            let last = members[holder].removeLast()
            if last != id {
                members[holder][pos] = last
                pts[Int(last)].pos = Int32(pos)
            }
        } else {
            let z = holder < 0 ? 0 : Int(cells[holder].zoom) + 1
            let (cx, cy) = cellOf(x, y, z)
            setSlot(Int32(holder), cx, cy, -1)
        }
        // Pass 1: counts and sums; find the highest cell left with a single point.
        var c = holder
        var single = -1
        while c >= 0 {
            cells[c].stamp = stampNow
            cells[c].count -= 1
            cells[c].sumX &-= UInt64(x)
            cells[c].sumY &-= UInt64(y)
            if cells[c].count == 1 { single = c }
            c = Int(cells[c].parent)
        }
        var from = holder
        if single >= 0 {
            from = Int(cells[single].parent)
            collapse(single)
        }
        // Pass 2: member bounds, bottom-up, where the removed point touched them.
        c = from
        while c >= 0 {
            if x == cells[c].minX || x == cells[c].maxX || y == cells[c].minY || y == cells[c].maxY {
                recomputeBounds(c)
            }
            c = Int(cells[c].parent)
        }
        return true
    }

    /// Whether a point with this id is present.
    public func contains(id: Int32) -> Bool { id >= 0 && Int(id) < pts.count && pts[Int(id)].holder != Self.absent }

    /// The point with this id, if present.
    public func point(id: Int32) -> ClusterPoint? {
        contains(id: id) ? ClusterPoint(id: id, x: pts[Int(id)].x, y: pts[Int(id)].y) : nil
    }

    /// Removes every point (keeps the options).
    public mutating func removeAll() { self = GridClusterIndex(options: options) }

    // MARK: queries

    /// Clusters and unclustered points of the cells at `zoom` that intersect `box` (see the inclusion
    /// rule above); above maxZoom, the points inside `box`. Negative zooms are treated as 0.
    /// O(items returned + maxZoom).
    public func clusters(in box: ClusterBox, zoom: Int) -> [GridClusterItem] {
        var out = Collected()
        walk(box, zoom: zoom, into: &out)
        return out.items
    }

    /// `clusters(in:zoom:)` plus the expansion zoom of each item that is a cluster, in item order (the
    /// values of `expansionZoom(of:)`), found from the cells at hand instead of looking each id up again.
    public func clustersWithExpansionZooms(in box: ClusterBox, zoom: Int) -> (items: [GridClusterItem], expansionZooms: [Int]) {
        var out = Collected(expansionZooms: [])
        walk(box, zoom: zoom, into: &out)
        return (out.items, out.expansionZooms ?? [])
    }

    /// Hands `visitor` the items of `clusters(in:zoom:)`, in the same order, without building them
    /// into an array; `visitor` may answer whole subtrees itself (see `GridClusterVisitor`).
    /// O(items emitted + cells entered + maxZoom).
    public func visit<V: GridClusterVisitor>(in box: ClusterBox, zoom: Int, _ visitor: inout V) {
        walk(box, zoom: zoom, into: &visitor)
    }

    private func walk<V: GridClusterVisitor>(_ box: ClusterBox, zoom: Int, into out: inout V) {
        let zoom = max(0, zoom)
        let target = min(zoom, options.maxZoom)
        let exactPoints = zoom > options.maxZoom
        forEachRoot(in: box) { root, cx, cy in
            if !out.isDone {
                collect(root, z: 0, cx: cx, cy: cy, loaded: load(root), target: target, box: box, exactPoints: exactPoints, into: &out)
            }
        }
    }

    /// `clusters(in:zoom:)` for a box in degrees (see `ClusterBox(west:south:east:north:)`).
    public func clusters(west: Double, south: Double, east: Double, north: Double, zoom: Int) -> [GridClusterItem] {
        clusters(in: ClusterBox(west: west, south: south, east: east, north: north), zoom: zoom)
    }

    /// The items of tile z/x/y: every cell of zoom z lies in exactly one tile. Tile coordinates are
    /// wrapped in x and must satisfy 0 <= y < 2^z.
    public func clusters(tileZ z: Int, x: Int, y: Int) -> [GridClusterItem] {
        precondition(z >= 0 && z <= 32 && y >= 0 && UInt64(y) < (UInt64(1) << UInt64(z)), "tile out of range")
        let n = Int64(1) << Int64(z)
        let wx = ((Int64(x) % n) + n) % n
        return clusters(in: ClusterBox(tileZ: z, x: Int(wx), y: y), zoom: z)
    }

    /// The cluster with this id, or nil if the id names no cluster now.
    public func cluster(_ id: GridClusterID) -> GridCluster? {
        guard let node = findNode(id), nodeCount(node) >= options.minPoints else { return nil }
        return makeCluster(node, zoom: id.zoom)
    }

    /// The id of the cell containing a world point at `zoom` (0...maxZoom), whether or not it is a cluster.
    public func cellID(x: UInt32, y: UInt32, zoom: Int) -> GridClusterID {
        precondition(zoom >= 0 && zoom <= options.maxZoom, "zoom out of 0...maxZoom")
        let (cx, cy) = cellOf(x, y, zoom)
        return GridClusterID(zoom: zoom, cellX: cx, cellY: cy)
    }

    /// What the cluster becomes at zoom + 1: the clusters and points of the non-empty cells of
    /// zoom + 1 inside it (its points, sorted by id, when zoom == maxZoom).
    public func children(of id: GridClusterID) throws(GridClusterError) -> [GridClusterItem] {
        guard let node = findNode(id), nodeCount(node) >= options.minPoints else { throw .noCluster(id) }
        var out = Collected()
        if id.zoom == options.maxZoom {
            appendAllPoints(node, z: id.zoom, into: &out)
            return out.items
        }
        if node < 0 {
            let p = pointAt(Self.pointID(node))
            let (cx, cy) = cellOf(p.x, p.y, id.zoom + 1)
            collect(node, z: id.zoom + 1, cx: cx, cy: cy, loaded: load(node), target: id.zoom + 1, box: .world, exactPoints: false, into: &out)
            return out.items
        }
        let c = Int(node)
        for q in 0..<4 {
            let ch = children[4 * c + q]
            if ch != -1 {
                collect(ch, z: id.zoom + 1, cx: id.cellX << 1 | UInt32(q & 1), cy: id.cellY << 1 | UInt32(q >> 1), loaded: load(ch),
                        target: id.zoom + 1, box: .world, exactPoints: false, into: &out)
            }
        }
        return out.items
    }

    /// The member points of a cluster, `limit` of them after skipping `offset`, in the output order
    /// (quadrant order, then id). Skips whole sub-cells by count: O(maxZoom + limit) plus sorting the
    /// members of the finest cells visited.
    public func leaves(of id: GridClusterID, limit: Int = 10, offset: Int = 0) throws(GridClusterError) -> [ClusterPoint] {
        guard let node = findNode(id), nodeCount(node) >= options.minPoints else { throw .noCluster(id) }
        var out: [ClusterPoint] = []
        var skip = max(0, offset)
        appendLeaves(node, limit: max(0, limit), skip: &skip, into: &out)
        return out
    }

    /// The first zoom at which the cluster's members are no longer all in one cell
    /// (maxZoom + 1 if they share a cell up to maxZoom).
    public func expansionZoom(of id: GridClusterID) throws(GridClusterError) -> Int {
        guard let node = findNode(id), nodeCount(node) >= options.minPoints else { throw .noCluster(id) }
        return expansionZoom(node: node, zoom: id.zoom)
    }

    /// The expansion zoom of the non-empty node `node` of a cell at `zoom`.
    private func expansionZoom(node: Int32, zoom: Int) -> Int {
        if node < 0 { return options.maxZoom + 1 }
        var c = Int(node)
        var z = zoom
        while z < options.maxZoom {
            var only: Int32 = -1, n = 0
            for q in 0..<4 where children[4 * c + q] != -1 {
                n += 1
                only = children[4 * c + q]
            }
            if n > 1 || only < 0 { return z + 1 }
            c = Int(only)
            z += 1
        }
        return options.maxZoom + 1
    }

    // MARK: internals

    @inline(__always) private static func pointRef(_ id: Int32) -> Int32 { -2 - id }
    @inline(__always) private static func pointID(_ ref: Int32) -> Int32 { -2 - ref }

    @inline(__always)
    private func cellOf(_ x: UInt32, _ y: UInt32, _ z: Int) -> (UInt32, UInt32) {
        let shift = UInt64(32 - z - k)
        return (UInt32(UInt64(x) >> shift), UInt32(UInt64(y) >> shift))
    }

    /// The node in the slot of cell (cx, cy) below `parent` (-1: the root table).
    @inline(__always)
    private func slot(_ parent: Int32, _ cx: UInt32, _ cy: UInt32) -> Int32 {
        if parent < 0 { return roots[UInt64(cy) << 32 | UInt64(cx)] ?? -1 }
        return children[4 * Int(parent) + Int((cy & 1) << 1 | (cx & 1))]
    }

    @inline(__always)
    private mutating func setSlot(_ parent: Int32, _ cx: UInt32, _ cy: UInt32, _ ref: Int32) {
        if parent < 0 {
            roots[UInt64(cy) << 32 | UInt64(cx)] = ref == -1 ? nil : ref
        } else {
            children[4 * Int(parent) + Int((cy & 1) << 1 | (cx & 1))] = ref
        }
    }

    private mutating func reserve(maxId: Int32) {
        let n = Int(maxId) + 1
        guard n > pts.count else { return }
        let grow = max(n, pts.count + pts.count / 2) - pts.count
        pts.append(contentsOf: repeatElement(PointState(x: 0, y: 0, holder: Self.absent, pos: -1), count: grow))
    }

    private mutating func newCell(cx: UInt32, cy: UInt32, parent: Int32, zoom: Int) -> Int32 {
        var cell = Cell()
        cell.cx = cx
        cell.cy = cy
        cell.parent = parent
        cell.zoom = UInt8(zoom)
        cell.stamp = stampNow
        if let c = freeCells.popLast() {
            cells[Int(c)] = cell
            for q in 0..<4 { children[4 * Int(c) + q] = -1 }
            return c
        }
        cells.append(cell)
        children.append(contentsOf: [-1, -1, -1, -1])
        members.append([])
        return Int32(cells.count - 1)
    }

    /// Replaces stored cell `c`, left with one point, and its chain of stored descendants by that point.
    private mutating func collapse(_ c: Int) {
        var d = c
        var remaining: Int32 = -1
        while remaining < 0 {
            freeCells.append(Int32(d))
            if Int(cells[d].zoom) == options.maxZoom {
                remaining = members[d][0]
                members[d] = []
                break
            }
            var next: Int32 = -1
            for q in 0..<4 where children[4 * d + q] != -1 { next = children[4 * d + q] }
            if next <= -2 { remaining = Self.pointID(next) } else { d = Int(next) }
        }
        let parent = cells[c].parent
        setSlot(parent, cells[c].cx, cells[c].cy, Self.pointRef(remaining))
        pts[Int(remaining)].holder = parent
        pts[Int(remaining)].pos = -1
    }

    private mutating func recomputeBounds(_ c: Int) {
        var x0 = UInt32.max, y0 = UInt32.max, x1 = UInt32.min, y1 = UInt32.min
        if Int(cells[c].zoom) == options.maxZoom {
            for m in members[c] {
                let x = pts[Int(m)].x, y = pts[Int(m)].y
                x0 = min(x0, x); x1 = max(x1, x)
                y0 = min(y0, y); y1 = max(y1, y)
            }
        } else {
            for q in 0..<4 {
                let ch = children[4 * c + q]
                if ch == -1 { continue }
                if ch <= -2 {
                    let s = Int(Self.pointID(ch))
                    x0 = min(x0, pts[s].x); x1 = max(x1, pts[s].x)
                    y0 = min(y0, pts[s].y); y1 = max(y1, pts[s].y)
                } else {
                    let d = Int(ch)
                    x0 = min(x0, cells[d].minX); x1 = max(x1, cells[d].maxX)
                    y0 = min(y0, cells[d].minY); y1 = max(y1, cells[d].maxY)
                }
            }
        }
        cells[c].minX = x0; cells[c].minY = y0; cells[c].maxX = x1; cells[c].maxY = y1
    }

    @inline(__always)
    private func pointAt(_ id: Int32) -> ClusterPoint { ClusterPoint(id: id, x: pts[Int(id)].x, y: pts[Int(id)].y) }

    @inline(__always)
    private func nodeCount(_ node: Int32) -> Int { node <= -2 ? 1 : Int(cells[Int(node)].count) }

    /// The cluster of a node at `zoom` (a single-point node gives a cluster of one: minPoints 1).
    private func makeCluster(_ node: Int32, zoom: Int) -> GridCluster {
        if node <= -2 {
            let p = pointAt(Self.pointID(node))
            let (cx, cy) = cellOf(p.x, p.y, zoom)
            return GridCluster(id: GridClusterID(zoom: zoom, cellX: cx, cellY: cy), count: 1, x: p.x, y: p.y,
                               bounds: ClusterBox(minX: p.x, minY: p.y, maxX: p.x, maxY: p.y))
        }
        let cell = cells[Int(node)]
        let n = UInt64(cell.count)
        return GridCluster(id: GridClusterID(zoom: zoom, cellX: cell.cx, cellY: cell.cy), count: Int(cell.count),
                           x: UInt32(cell.sumX / n), y: UInt32(cell.sumY / n),
                           bounds: ClusterBox(minX: cell.minX, minY: cell.minY, maxX: cell.maxX, maxY: cell.maxY))
    }

    /// Whether the rectangle of cell (cx, cy) at zoom z (depth `z + k`, inclusive) intersects `box`.
    @inline(__always)
    private func cellIntersects(_ cx: UInt32, _ cy: UInt32, z: Int, _ box: ClusterBox) -> Bool {
        let shift = UInt64(32 - z - k)
        let cx = UInt64(cx), cy = UInt64(cy)
        return box.intersects(x0: UInt32(truncatingIfNeeded: cx << shift), y0: UInt32(truncatingIfNeeded: cy << shift),
                              x1: UInt32(truncatingIfNeeded: ((cx + 1) << shift) - 1),
                              y1: UInt32(truncatingIfNeeded: ((cy + 1) << shift) - 1))
    }

    /// Whether the rectangle of cell (cx, cy) at zoom z lies wholly inside `box`.
    @inline(__always)
    private func cellInside(_ cx: UInt32, _ cy: UInt32, z: Int, _ box: ClusterBox) -> Bool {
        let shift = UInt64(32 - z - k)
        let x0 = UInt64(cx) << shift, y0 = UInt64(cy) << shift
        let x1 = ((UInt64(cx) + 1) << shift) - 1, y1 = ((UInt64(cy) + 1) << shift) - 1
        guard y0 >= UInt64(box.minY) && y1 <= UInt64(box.maxY) else { return false }
        let minX = UInt64(box.minX), maxX = UInt64(box.maxX)
        if minX <= maxX { return x0 >= minX && x1 <= maxX }
        return x0 >= minX || x1 <= maxX  // one of the two parts (the cell never crosses the antimeridian)
    }

    /// Calls `body` with the zoom-0 nodes intersecting `box` and their cells (cx, cy), ordered by (cy, cx).
    private func forEachRoot(in box: ClusterBox, _ body: (Int32, UInt32, UInt32) -> Void) {
        if roots.isEmpty { return }
        let shift = UInt64(32 - k)
        let y0: UInt64 = UInt64(box.minY) >> shift
        let y1: UInt64 = UInt64(box.maxY) >> shift
        let xa: UInt64 = UInt64(box.minX) >> shift
        let xb: UInt64 = UInt64(box.maxX) >> shift
        let xmax: UInt64 = UInt64(UInt32.max) >> shift
        var xr: [(UInt64, UInt64)] = []
        if box.minX <= box.maxX { xr.append((xa, xb)) } else { xr.append((0, xb)); xr.append((xa, xmax)) }
        var width: UInt64 = 0
        for r in xr { width += r.1 - r.0 + 1 }
        let area: UInt64 = width * (y1 - y0 + 1)
        if area <= UInt64(roots.count) * 4 {
            // scan the candidate positions (merging the two x ranges in x order per row)
            let ranges = xr
            for cy in y0...y1 {
                var lastX: UInt64? = nil
                for (a, b) in ranges {
                    for cx in a...b where lastX == nil || cx > lastX! {
                        lastX = cx
                        if let r = roots[cy << 32 | cx] { body(r, UInt32(cx), UInt32(cy)) }
                    }
                }
            }
        } else {
            for (key, r) in roots.sorted(by: { $0.key < $1.key })
            where cellIntersects(UInt32(truncatingIfNeeded: key), UInt32(key >> 32), z: 0, box) {
                body(r, UInt32(truncatingIfNeeded: key), UInt32(key >> 32))
            }
        }
    }

    /// Output of a tree walk: the items and, when asked for (non-nil), each cluster's expansion zoom.
    private struct Collected: GridClusterVisitor {
        var items: [GridClusterItem] = []
        var expansionZooms: [Int]? = nil

        var wantsExpansionZooms: Bool { expansionZooms != nil }

        mutating func visitCluster(_ cluster: GridCluster, expansionZoom: Int) {
            items.append(.cluster(cluster))
            expansionZooms?.append(expansionZoom)
        }

        mutating func visitPoint(_ point: ClusterPoint) { items.append(.point(point)) }
    }

    /// What `collect` reads first from a non-empty node: a stored cell's stamp, or a single
    /// point's position (`x | y << 32`).
    @inline(__always)
    private func load(_ ref: Int32) -> UInt64 {
        if ref <= -2 {
            let i = Int(Self.pointID(ref))
            return UInt64(pts[i].x) | UInt64(pts[i].y) << 32
        }
        return UInt64(cells[Int(ref)].stamp)
    }

    /// Emits the items of node `ref`, which fills the slot of cell (cx, cy) of zoom z, at zoom
    /// `target` >= z, restricted to `box`; `loaded` is `load(ref)`, or anything when the cell
    /// does not intersect the box.
    ///
    /// On a large layer each stored cell or point read is mostly a cache miss, so: the slot's
    /// cell is tested against the box before the node is read (a child's cell follows from its
    /// parent's and its quadrant), so that the children of an edge cell lying outside the box
    /// cost no memory access; and the intersecting children of a cell are all read (`load`)
    /// before the walk descends into the first, so that their misses overlap.
    private func collect<V: GridClusterVisitor>(_ ref: Int32, z: Int, cx: UInt32, cy: UInt32, loaded: UInt64, target: Int,
                                                box: ClusterBox, exactPoints: Bool, into out: inout V) {
        if !cellIntersects(cx, cy, z: z, box) { return }
        if ref <= -2 {
            let p = ClusterPoint(id: Self.pointID(ref), x: UInt32(truncatingIfNeeded: loaded), y: UInt32(truncatingIfNeeded: loaded >> 32))
            if exactPoints {
                if box.contains(x: p.x, y: p.y) { out.visitPoint(p) }
                return
            }
            let (cx, cy) = cellOf(p.x, p.y, target)
            guard cellIntersects(cx, cy, z: target, box) else { return }
            emit(item(ref, target: target, wantsZooms: false), point: p, target: target, into: &out)
            return
        }
        let c = Int(ref)
        if exactPoints && z == target {
            for m in members[c].sorted() where box.contains(x: pts[Int(m)].x, y: pts[Int(m)].y) { out.visitPoint(pointAt(m)) }
            return
        }
        let node = GridNodeStamp(cell: Int32(c), stamp: UInt32(truncatingIfNeeded: loaded), zoom: z)
        let levels = exactPoints ? 0 : out.blockLevels
        if levels > 0 && z == target - levels {
            let mask = cellInside(cx, cy, z: z, box) ? Self.fullMask(levels) : blockMask(cx, cy, z: z, levels: levels, box)
            if out.enterBlock(node, target: target, mask: mask) { return }
            emitBlock(ref, cx: cx, cy: cy, levels: levels, target: target, mask: mask, into: &out)
            out.leaveBlock(node, target: target)
            return
        }
        // The output below a target cell, or below a cell wholly inside the box, does not depend on the box.
        let whole = !exactPoints && (z == target || cellInside(cx, cy, z: z, box))
        if whole && out.enterSubtree(node, target: target) { return }
        if z == target {
            emit(item(ref, target: z, wantsZooms: out.wantsExpansionZooms), target: z, into: &out)
        } else {
            let x = cx << 1, y = cy << 1
            let r0 = children[4 * c], r1 = children[4 * c + 1], r2 = children[4 * c + 2], r3 = children[4 * c + 3]
            @inline(__always) func read(_ r: Int32, _ x: UInt32, _ y: UInt32) -> UInt64 {
                r != -1 && cellIntersects(x, y, z: z + 1, box) ? load(r) : 0
            }
            let l0 = read(r0, x, y), l1 = read(r1, x | 1, y), l2 = read(r2, x, y | 1), l3 = read(r3, x | 1, y | 1)
            @inline(__always) func descend(_ r: Int32, _ x: UInt32, _ y: UInt32, _ l: UInt64, _ out: inout V) {
                if r != -1 && !out.isDone {
                    collect(r, z: z + 1, cx: x, cy: y, loaded: l, target: target, box: box, exactPoints: exactPoints, into: &out)
                }
            }
            descend(r0, x, y, l0, &out)
            descend(r1, x | 1, y, l1, &out)
            descend(r2, x, y | 1, l2, &out)
            descend(r3, x | 1, y | 1, l3, &out)
        }
        if whole { out.leaveSubtree(node, target: target) }
    }

    /// What is emitted for node `ref` (a stored cell or a single point) alone in its cell of the
    /// target zoom `target`: its cluster (and expansion zoom when `wantsZooms`; a single point
    /// only when `minPoints` is 1), the point, or (`small`) a stored cell of fewer than
    /// `minPoints` points, whose points are emitted one by one. `index`: see `NodeItem`.
    @inline(__always)
    private func item(_ ref: Int32, target: Int, wantsZooms: Bool, index: Int = 0) -> NodeItem {
        var item = NodeItem(kind: .cluster, ref: ref, index: index, cluster: Self.noCluster, expansionZoom: options.maxZoom + 1)
        if ref <= -2 {
            if options.minPoints <= 1 { item.cluster = makeCluster(ref, zoom: target) } else { item.kind = .point }
        } else if Int(cells[Int(ref)].count) >= options.minPoints {
            item.cluster = makeCluster(ref, zoom: target)
            if wantsZooms { item.expansionZoom = expansionZoom(node: ref, zoom: target) }
        } else {
            item.kind = .small
        }
        return item
    }

    /// Hands `item` (of the target zoom `target`) to the visitor; `point`: the item's point when
    /// the caller has it already (else it is read from the index).
    @inline(__always)
    private func emit<V: GridClusterVisitor>(_ item: NodeItem, point: ClusterPoint? = nil, target: Int, into out: inout V) {
        switch item.kind {
        case .cluster: out.visitCluster(item.cluster, expansionZoom: item.expansionZoom)
        case .point: out.visitPoint(point ?? pointAt(Self.pointID(item.ref)))
        case .small: appendAllPoints(item.ref, z: target, into: &out)
        }
    }

    /// `NodeItem.cluster` before it is set (`item(_:target:wantsZooms:index:)`).
    private static let noCluster = GridCluster(id: GridClusterID(rawValue: 0), count: 0, x: 0, y: 0, bounds: .world)

    /// The mask of a block of `levels` zooms with every target cell set.
    @inline(__always)
    private static func fullMask(_ levels: Int) -> UInt64 { levels >= 3 ? .max : (UInt64(1) << UInt64(1 << (2 * levels))) - 1 }

    /// The Morton index (x in the even bits) of the offset (dx, dy) of a target cell in its block.
    @inline(__always)
    static func blockIndex(_ dx: UInt32, _ dy: UInt32) -> Int {
        var i = 0
        for b in 0..<3 { i |= Int((dx >> UInt32(b)) & 1) << (2 * b) | Int((dy >> UInt32(b)) & 1) << (2 * b + 1) }
        return i
    }

    /// The mask (see `GridClusterVisitor.enterBlock`) of the target cells of the block of cell
    /// (cx, cy) at zoom z (`levels` zooms above them) that intersect `box`: the block's columns
    /// and rows that meet the box's span of target cells (in x, one span or two when the box
    /// crosses the antimeridian), crossed.
    private func blockMask(_ cx: UInt32, _ cy: UInt32, z: Int, levels: Int, _ box: ClusterBox) -> UInt64 {
        let shift = UInt32(32 - (z + levels) - k)
        let bx0 = UInt64(box.minX) >> UInt64(shift), bx1 = UInt64(box.maxX) >> UInt64(shift)
        let by0 = UInt64(box.minY) >> UInt64(shift), by1 = UInt64(box.maxY) >> UInt64(shift)
        let crosses = box.minX > box.maxX
        let x0 = UInt64(cx) << UInt64(levels), y0 = UInt64(cy) << UInt64(levels)
        var columns: UInt64 = 0, rows: UInt64 = 0, allColumns: UInt64 = 0, allRows: UInt64 = 0
        for d in 0..<(UInt32(1) << UInt32(levels)) {
            let ix = UInt64(1) << UInt64(Self.blockIndex(d, 0)), iy = UInt64(1) << UInt64(Self.blockIndex(0, d))
            allColumns |= ix
            allRows |= iy
            let x = x0 + UInt64(d), y = y0 + UInt64(d)
            if crosses ? (x >= bx0 || x <= bx1) : (x >= bx0 && x <= bx1) { columns |= 1 << UInt64(d) }
            if y >= by0 && y <= by1 { rows |= 1 << UInt64(d) }
        }
        var inX: UInt64 = 0, inY: UInt64 = 0  // the cells of the columns, and of the rows, that meet the box
        for d in 0..<(UInt32(1) << UInt32(levels)) {
            if columns >> UInt64(d) & 1 != 0 { inX |= allRows << UInt64(Self.blockIndex(d, 0)) }
            if rows >> UInt64(d) & 1 != 0 { inY |= allColumns << UInt64(Self.blockIndex(0, d)) }
        }
        return inX & inY
    }

    /// A node of a block being emitted (`emitBlock`): a stored cell or a single point, and the
    /// Morton index of its cell within the block at the level being expanded.
    private struct BlockNode {
        var ref: Int32
        var index: Int32
    }

    /// What is emitted for one node of the target zoom (`item(_:target:wantsZooms:index:)`): a
    /// cluster and its expansion zoom, a point, or (`small`) a stored cell of fewer than
    /// `minPoints` points whose points are emitted one by one; `index`, in a block (`emitBlock`,
    /// which computes every node's item before it emits any), the Morton index of its target cell.
    private struct NodeItem {
        enum Kind { case cluster, point, small }
        var kind: Kind
        var ref: Int32
        var index: Int
        var cluster: GridCluster
        var expansionZoom: Int
    }

    /// Emits the items of every non-empty target cell of the block of stored cell `ref` (cell
    /// (cx, cy) of zoom `target - levels`), each after `blockChild` with its index and whether
    /// `mask` has it (see `GridClusterVisitor.enterBlock`). A block being written afresh reads
    /// every node below its cell: they are read level by level (each level's child slots as
    /// independent loads, so that their cache misses overlap), then the target cells' clusters
    /// and expansion zooms are all computed, then emitted, instead of one miss after another
    /// in a depth-first walk with the visitor's calls in between. At most 4^levels nodes.
    private func emitBlock<V: GridClusterVisitor>(_ ref: Int32, cx: UInt32, cy: UInt32, levels: Int, target: Int, mask: UInt64,
                                                  into out: inout V) {
        let capacity = 1 << (2 * levels)
        let base = (cx << UInt32(levels), cy << UInt32(levels))
        let wantsZooms = out.wantsExpansionZooms
        withUnsafeTemporaryAllocation(of: BlockNode.self, capacity: 2 * capacity) { nodes in
            // Level by level in output order: each stored cell replaced by its non-empty children, points kept.
            var from = nodes.baseAddress!, to = from + capacity
            from[0] = BlockNode(ref: ref, index: 0)
            var n = 1
            for _ in 0..<levels {
                var m = 0
                for k in 0..<n {
                    let node = from[k]
                    if node.ref <= -2 {
                        to[m] = node
                        m += 1
                        continue
                    }
                    let c = 4 * Int(node.ref)
                    for q in 0..<4 where children[c + q] != -1 {
                        to[m] = BlockNode(ref: children[c + q], index: node.index << 2 | Int32(q))
                        m += 1
                    }
                }
                swap(&from, &to)
                n = m
            }
            let last = from
            withUnsafeTemporaryAllocation(of: NodeItem.self, capacity: n) { items in
                for k in 0..<n {
                    let r = last[k].ref
                    var index = Int(last[k].index)
                    if r <= -2 {
                        // A single point sits above the target zoom: its target cell follows from its position.
                        let p = pointAt(Self.pointID(r))
                        let (tx, ty) = cellOf(p.x, p.y, target)
                        index = Self.blockIndex(tx - base.0, ty - base.1)
                    }
                    (items.baseAddress! + k).initialize(to: item(r, target: target, wantsZooms: wantsZooms, index: index))
                }
                for k in 0..<n where !out.isDone {
                    out.blockChild(items[k].index, inBox: mask >> UInt64(items[k].index) & 1 != 0)
                    emit(items[k], target: target, into: &out)
                }
                items.baseAddress!.deinitialize(count: n)
            }
        }
    }

    private func appendAllPoints<V: GridClusterVisitor>(_ ref: Int32, z: Int, into out: inout V) {
        if ref <= -2 {
            out.visitPoint(pointAt(Self.pointID(ref)))
            return
        }
        let c = Int(ref)
        if z == options.maxZoom {
            for m in members[c].sorted() { out.visitPoint(pointAt(m)) }
            return
        }
        for q in 0..<4 {
            let ch = children[4 * c + q]
            if ch != -1 { appendAllPoints(ch, z: z + 1, into: &out) }
        }
    }

    private func appendLeaves(_ ref: Int32, limit: Int, skip: inout Int, into out: inout [ClusterPoint]) {
        if out.count >= limit { return }
        if ref <= -2 {
            if skip > 0 { skip -= 1 } else { out.append(pointAt(Self.pointID(ref))) }
            return
        }
        let c = Int(ref)
        let n = Int(cells[c].count)
        if skip >= n {
            skip -= n
            return
        }
        if Int(cells[c].zoom) == options.maxZoom {
            let sorted = members[c].sorted()
            var i = skip
            skip = 0
            while i < sorted.count && out.count < limit {
                out.append(pointAt(sorted[i]))
                i += 1
            }
            return
        }
        for q in 0..<4 {
            let ch = children[4 * c + q]
            if ch != -1 { appendLeaves(ch, limit: limit, skip: &skip, into: &out) }
            if out.count >= limit { return }
        }
    }

    /// The node (stored cell, or single point whose cell it is) of the non-empty cell named by `id`.
    private func findNode(_ id: GridClusterID) -> Int32? {
        let z = id.zoom
        guard z <= options.maxZoom else { return nil }
        let d = UInt32(z + k)
        let cx = id.cellX, cy = id.cellY
        guard d >= 32 || (UInt64(cx) >> UInt64(d) == 0 && UInt64(cy) >> UInt64(d) == 0) else { return nil }
        let zs = UInt32(z)
        guard var ref = roots[UInt64(cy >> zs) << 32 | UInt64(cx >> zs)] else { return nil }
        var level = 0
        while true {
            if ref <= -2 {
                let p = pointAt(Self.pointID(ref))
                let (pcx, pcy) = cellOf(p.x, p.y, z)
                return pcx == cx && pcy == cy ? ref : nil
            }
            if level == z { return ref }
            level += 1
            let s = UInt32(z - level)
            let bx: UInt32 = (cx >> s) & 1
            let by: UInt32 = (cy >> s) & 1
            ref = children[4 * Int(ref) + Int(by << 1 | bx)]
            if ref == -1 { return nil }
        }
    }
}

// MARK: - Counts and thinning (point tiles)

/// One non-empty cell of a zoom as `GridClusterIndex.cellSamples(in:zoom:limit:)` gives it: how
/// many points it holds and the one point that stands for them.
public struct GridCellSample: Sendable, Hashable {
    /// The cell (its zoom may lie above the index's max zoom).
    public var cell: GridClusterID
    /// Points in the cell (>= 1).
    public var count: Int
    /// The point standing for the cell (see `cellSamples(in:zoom:limit:)`).
    public var point: ClusterPoint
}

extension GridClusterIndex {
    /// The number of points inside `box` (`ClusterBox.contains`), exact when it is at most
    /// `limit`; otherwise some number above `limit` (the count stops there).
    ///
    /// A stored cell wholly inside the box adds its count without being entered, so the work is
    /// O(cells on the box's edge x maxZoom), plus the member lists of the max-zoom cells on the
    /// edge, and never more than about `limit` points read one by one.
    public func count(in box: ClusterBox, atMost limit: Int) -> Int {
        var n = 0
        forEachRoot(in: box) { root, cx, cy in countPoints(root, z: 0, cx: cx, cy: cy, box, limit, &n) }
        return n
    }

    private func countPoints(_ ref: Int32, z: Int, cx: UInt32, cy: UInt32, _ box: ClusterBox, _ limit: Int, _ n: inout Int) {
        guard n <= limit, cellIntersects(cx, cy, z: z, box) else { return }
        if ref <= -2 {
            let p = pts[Int(Self.pointID(ref))]
            if box.contains(x: p.x, y: p.y) { n += 1 }
            return
        }
        let c = Int(ref)
        if cellInside(cx, cy, z: z, box) {
            n += Int(cells[c].count)
        } else if z == options.maxZoom {
            for m in members[c] where box.contains(x: pts[Int(m)].x, y: pts[Int(m)].y) { n += 1 }
        } else {
            for q in 0..<4 where children[4 * c + q] != -1 {
                countPoints(children[4 * c + q], z: z + 1, cx: cx << 1 | UInt32(q & 1), cy: cy << 1 | UInt32(q >> 1), box, limit, &n)
            }
        }
    }

    /// One sample per non-empty cell of `zoom` that intersects `box` (the inclusion rule of
    /// `clusters(in:zoom:)`, whatever `minPoints` is), in output order (quadrant order), or nil
    /// when there are more than `limit` of them. `zoom` may exceed `maxZoom` (cells of
    /// `zoom + cellsPerTileLog2 <= 29` levels below the world); the members of the max-zoom
    /// cells are then grouped by their cell of `zoom`.
    ///
    /// Each sample's point is a member near its cell's centre of mass: from the cell, each step
    /// goes down into the child whose quadrant holds the current cell's centroid (or, when that
    /// quadrant is empty, into the child with the most points, the first in quadrant order on a
    /// tie), down to a single point or a max-zoom cell, whose member nearest the centroid is taken
    /// (the smallest id on a tie); in a group of a max-zoom cell's members, the member nearest the
    /// group's centroid. So the samples are spread as evenly as the cells, and, like everything
    /// the index answers, depend only on the set of points.
    ///
    /// Work: O(min(cells, limit + 1) x maxZoom), plus the member lists of the max-zoom cells read
    /// (at or above `maxZoom` only).
    public func cellSamples(in box: ClusterBox, zoom: Int, limit: Int) -> [GridCellSample]? {
        precondition(zoom >= 0 && zoom + k <= 29, "zoom out of range")
        var out: [GridCellSample] = []
        var over = false
        forEachRoot(in: box) { root, cx, cy in
            if !over { sample(root, z: 0, cx: cx, cy: cy, target: zoom, box, limit, &out, &over) }
        }
        return over ? nil : out
    }

    private func sample(_ ref: Int32, z: Int, cx: UInt32, cy: UInt32, target: Int, _ box: ClusterBox, _ limit: Int,
                        _ out: inout [GridCellSample], _ over: inout Bool) {
        guard !over, cellIntersects(cx, cy, z: z, box) else { return }
        func add(_ s: GridCellSample) {
            if out.count == limit { over = true } else { out.append(s) }
        }
        if ref <= -2 {
            let p = pointAt(Self.pointID(ref))
            let (tx, ty) = cellOf(p.x, p.y, target)
            if cellIntersects(tx, ty, z: target, box) {
                add(GridCellSample(cell: GridClusterID(zoom: target, cellX: tx, cellY: ty), count: 1, point: p))
            }
            return
        }
        let c = Int(ref)
        if z == target {
            add(GridCellSample(cell: GridClusterID(zoom: z, cellX: cx, cellY: cy), count: Int(cells[c].count), point: central(ref, z: z)))
        } else if z == options.maxZoom {
            // Deeper than the stored cells: group the members by their cell of `target` (runs in Morton order).
            let sorted = members[c].map { (key: Self.mortonKey(pts[Int($0)].x, pts[Int($0)].y), id: $0) }.sorted { ($0.key, $0.id) < ($1.key, $1.id) }
            let shift = UInt64(2 * (32 - target - k))
            var i = 0
            while i < sorted.count && !over {
                var j = i + 1
                while j < sorted.count && sorted[j].key >> shift == sorted[i].key >> shift { j += 1 }
                let group = sorted[i..<j].map(\.id)
                let first = pointAt(group[0])
                let (tx, ty) = cellOf(first.x, first.y, target)
                if cellIntersects(tx, ty, z: target, box) {
                    add(GridCellSample(cell: GridClusterID(zoom: target, cellX: tx, cellY: ty), count: group.count, point: nearestToCentroid(group)))
                }
                i = j
            }
        } else {
            for q in 0..<4 where children[4 * c + q] != -1 {
                sample(children[4 * c + q], z: z + 1, cx: cx << 1 | UInt32(q & 1), cy: cy << 1 | UInt32(q >> 1), target: target,
                       box, limit, &out, &over)
            }
        }
    }

    /// The point standing for the non-empty node `ref` of a cell of zoom `z` (see `cellSamples`).
    private func central(_ ref: Int32, z: Int) -> ClusterPoint {
        var r = ref, z = z
        while r >= 0 {
            let c = Int(r)
            if z == options.maxZoom { return nearestToCentroid(members[c]) }
            let n = UInt64(cells[c].count)
            let (qx, qy) = cellOf(UInt32(cells[c].sumX / n), UInt32(cells[c].sumY / n), z + 1)
            var next = children[4 * c + Int((qy & 1) << 1 | (qx & 1))]
            if next == -1 {
                for q in 0..<4 where children[4 * c + q] != -1 && (next == -1 || nodeCount(children[4 * c + q]) > nodeCount(next)) {
                    next = children[4 * c + q]
                }
            }
            r = next
            z += 1
        }
        return pointAt(Self.pointID(r))
    }

    /// The point of `ids` (not empty) nearest to their centroid; the smallest id on a tie.
    private func nearestToCentroid(_ ids: [Int32]) -> ClusterPoint {
        var sx: UInt64 = 0, sy: UInt64 = 0
        for id in ids { sx += UInt64(pts[Int(id)].x); sy += UInt64(pts[Int(id)].y) }
        let mx = Double(sx / UInt64(ids.count)), my = Double(sy / UInt64(ids.count))
        var best = ids[0], bestD = Double.infinity
        for id in ids {
            let dx = Double(pts[Int(id)].x) - mx, dy = Double(pts[Int(id)].y) - my
            let d = dx * dx + dy * dy
            if d < bestD || (d == bestD && id < best) { best = id; bestD = d }
        }
        return pointAt(best)
    }
}

// Dynamic grid clustering: a per-zoom grid of tile-aligned cells, nested as a quadtree, updated
// incrementally on every upsert, move and removal.

/// Dynamic clustering index (markerd's default algorithm).
///
/// For each zoom 0...maxZoom, points are grouped by grid cell (see `ClusterOptions` for the cell
/// size). A cell with at least `minPoints` members is one cluster (count, centroid, member bounds);
/// a smaller cell returns its members unclustered; above `maxZoom` every point is returned alone.
/// The cells of zoom z+1 nest 2 x 2 in those of zoom z, so the non-empty cells form a quadtree.
///
/// Costs: `upsert` / `remove` touch one cell per zoom, O(maxZoom) (plus, on removal of a point that
/// defines a member bound of its maxZoom cell, a rescan of that cell's members). Queries visit only
/// non-empty cells intersecting the box, O(result + maxZoom). Everything observable (clusters,
/// ids, positions, output order) depends only on the current set of points, not on update order.
///
/// Inclusion rule: at zoom <= maxZoom a cell is returned (as a cluster or as its points) when the
/// cell's rectangle intersects the query box, whatever part of it the box covers; so a cell belongs
/// to exactly one tile, and neighbouring viewports agree. Above maxZoom points are filtered exactly.
///
/// Output order: root cells (zoom 0) by (cellY, cellX), then depth-first in quadrant order
/// (north-west, north-east, south-west, south-east); points of one finest cell by id.
///
/// Memory: a point owns one cell (~72 bytes) per zoom until another point shares it, so isolated
/// points cost up to (maxZoom + 1) cells each (1M uniform points: ~9.7M cells, ~1 GB). Stopping the
/// descent at the first single-member cell (a compressed quadtree) would fix that; not done yet.
///
/// Value type; not thread-safe for concurrent mutation (wrap it in the owner's lock).
public struct GridClusterIndex: Sendable {
    public let options: ClusterOptions
    /// log2 of cells per tile side.
    private let k: Int

    // Cell arena. `children[4 * c + q]`: child cell at zoom+1 in quadrant q = (cy & 1) << 1 | (cx & 1), or -1.
    private var cells: [Cell] = []
    private var children: [Int32] = []
    /// Members of finest (maxZoom) cells; empty for other cells.
    private var members: [[Int32]] = []
    private var freeCells: [Int32] = []
    /// Zoom-0 cells by key `cy << 32 | cx`.
    private var roots: [UInt64: Int32] = [:]

    // Points by id.
    private var px: [UInt32] = []
    private var py: [UInt32] = []
    /// Finest cell of the point, or -1 when absent.
    private var pLeaf: [Int32] = []
    /// Position of the point in `members[pLeaf]`.
    private var pPos: [Int32] = []

    /// Number of points.
    public private(set) var count = 0
    /// Number of non-empty cells over all zooms.
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
    }

    /// An empty index. Traps on invalid options (`options.isValid`).
    public init(options: ClusterOptions = ClusterOptions()) {
        precondition(options.isValid, "ClusterOptions invalid: radius/extent > 0, minPoints >= 1, 0 <= maxZoom, maxZoom + cellsPerTileLog2 <= 29")
        self.options = options
        self.k = options.cellsPerTileLog2
    }

    /// An index over `points` (later duplicates of an id move it).
    public init(options: ClusterOptions = ClusterOptions(), points: [ClusterPoint]) {
        self.init(options: options)
        if let maxId = points.lazy.map(\.id).max() { reserve(maxId: maxId) }
        cells.reserveCapacity(points.count * 2)
        for p in points { upsert(p) }
    }

    // MARK: updates

    /// Adds a point, or moves it if its id is present. O(maxZoom).
    public mutating func upsert(_ p: ClusterPoint) {
        precondition(p.id >= 0, "ClusterPoint.id must be >= 0")
        let id = Int(p.id)
        if id >= px.count { reserve(maxId: p.id) }
        if pLeaf[id] >= 0 {
            if px[id] == p.x && py[id] == p.y { return }
            remove(id: p.id)
        }
        px[id] = p.x
        py[id] = p.y
        let x = UInt64(p.x), y = UInt64(p.y)
        var parent: Int32 = -1
        for z in 0...options.maxZoom {
            let shift = UInt64(32 - z - k)
            let cx = UInt32(x >> shift), cy = UInt32(y >> shift)
            var c: Int32
            if z == 0 {
                let key = UInt64(cy) << 32 | UInt64(cx)
                if let r = roots[key] { c = r } else {
                    c = newCell(cx: cx, cy: cy, parent: -1)
                    roots[key] = c
                }
            } else {
                let slot = 4 * Int(parent) + Int((cy & 1) << 1 | (cx & 1))
                c = children[slot]
                if c < 0 {
                    c = newCell(cx: cx, cy: cy, parent: parent)
                    children[slot] = c
                }
            }
            let ci = Int(c)
            if cells[ci].count == 0 {
                cells[ci].minX = p.x; cells[ci].maxX = p.x
                cells[ci].minY = p.y; cells[ci].maxY = p.y
            } else {
                cells[ci].minX = min(cells[ci].minX, p.x); cells[ci].maxX = max(cells[ci].maxX, p.x)
                cells[ci].minY = min(cells[ci].minY, p.y); cells[ci].maxY = max(cells[ci].maxY, p.y)
            }
            cells[ci].count += 1
            cells[ci].sumX &+= x
            cells[ci].sumY &+= y
            parent = c
        }
        pLeaf[id] = parent
        pPos[id] = Int32(members[Int(parent)].count)
        members[Int(parent)].append(p.id)
        count += 1
    }

    /// Removes a point; returns false if the id is absent. O(maxZoom), plus a rescan of the point's
    /// finest cell when the point defines one of that cell's member bounds.
    @discardableResult
    public mutating func remove(id: Int32) -> Bool {
        guard id >= 0, Int(id) < pLeaf.count, pLeaf[Int(id)] >= 0 else { return false }
        let i = Int(id)
        let leaf = Int(pLeaf[i])
        // swap-remove from the finest cell's member list
        let pos = Int(pPos[i])
        let last = members[leaf].removeLast()
        if last != id {
            members[leaf][pos] = last
            pPos[Int(last)] = Int32(pos)
        }
        pLeaf[i] = -1
        count -= 1
        let x = px[i], y = py[i]
        var c = leaf
        var isLeaf = true
        while c >= 0 {
            let parent = Int(cells[c].parent)
            cells[c].count -= 1
            cells[c].sumX &-= UInt64(x)
            cells[c].sumY &-= UInt64(y)
            if cells[c].count == 0 {
                let cx = cells[c].cx, cy = cells[c].cy
                if parent >= 0 {
                    children[4 * parent + Int((cy & 1) << 1 | (cx & 1))] = -1
                } else {
                    roots[UInt64(cy) << 32 | UInt64(cx)] = nil
                }
                freeCells.append(Int32(c))
            } else if x == cells[c].minX || x == cells[c].maxX || y == cells[c].minY || y == cells[c].maxY {
                if isLeaf { recomputeLeafBounds(c) } else { recomputeBoundsFromChildren(c) }
            }
            isLeaf = false
            c = parent
        }
        return true
    }

    /// Whether a point with this id is present.
    public func contains(id: Int32) -> Bool { id >= 0 && Int(id) < pLeaf.count && pLeaf[Int(id)] >= 0 }

    /// The point with this id, if present.
    public func point(id: Int32) -> ClusterPoint? {
        contains(id: id) ? ClusterPoint(id: id, x: px[Int(id)], y: py[Int(id)]) : nil
    }

    // MARK: queries

    /// Clusters and unclustered points of the cells at `zoom` that intersect `box` (see the inclusion
    /// rule above); above maxZoom, the points inside `box`. Negative zooms are treated as 0.
    /// O(items returned + maxZoom).
    public func clusters(in box: ClusterBox, zoom: Int) -> [GridClusterItem] {
        var out: [GridClusterItem] = []
        let zoom = max(0, zoom)
        let target = min(zoom, options.maxZoom)
        let exactPoints = zoom > options.maxZoom
        forEachRoot(in: box) { root in
            collect(root, z: 0, target: target, box: box, exactPoints: exactPoints, into: &out)
        }
        return out
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
        guard let c = findCell(id), Int(cells[c].count) >= options.minPoints else { return nil }
        return makeCluster(c, zoom: id.zoom)
    }

    /// The id of the cell containing a world point at `zoom` (0...maxZoom), whether or not it is a cluster.
    public func cellID(x: UInt32, y: UInt32, zoom: Int) -> GridClusterID {
        precondition(zoom >= 0 && zoom <= options.maxZoom, "zoom out of 0...maxZoom")
        let shift = UInt64(32 - zoom - k)
        return GridClusterID(zoom: zoom, cellX: UInt32(UInt64(x) >> shift), cellY: UInt32(UInt64(y) >> shift))
    }

    /// What the cluster becomes at zoom + 1: the clusters and points of the non-empty cells of
    /// zoom + 1 inside it (its points, sorted by id, when zoom == maxZoom).
    public func children(of id: GridClusterID) throws(GridClusterError) -> [GridClusterItem] {
        guard let c = findCell(id), Int(cells[c].count) >= options.minPoints else { throw .noCluster(id) }
        var out: [GridClusterItem] = []
        if id.zoom == options.maxZoom {
            for m in members[c].sorted() { out.append(.point(pointAt(m))) }
            return out
        }
        for q in 0..<4 {
            let ch = children[4 * c + q]
            if ch >= 0 { collect(Int(ch), z: id.zoom + 1, target: id.zoom + 1, box: .world, exactPoints: false, into: &out) }
        }
        return out
    }

    /// The member points of a cluster, `limit` of them after skipping `offset`, in the output order
    /// (quadrant order, then id). Skips whole sub-cells by count: O(maxZoom + limit) plus sorting the
    /// members of the finest cells visited.
    public func leaves(of id: GridClusterID, limit: Int = 10, offset: Int = 0) throws(GridClusterError) -> [ClusterPoint] {
        guard let c = findCell(id), Int(cells[c].count) >= options.minPoints else { throw .noCluster(id) }
        var out: [ClusterPoint] = []
        var skip = max(0, offset)
        appendLeaves(c, z: id.zoom, limit: max(0, limit), skip: &skip, into: &out)
        return out
    }

    /// The first zoom at which the cluster's members are no longer all in one cell
    /// (maxZoom + 1 if they share a cell up to maxZoom).
    public func expansionZoom(of id: GridClusterID) throws(GridClusterError) -> Int {
        guard var c = findCell(id), Int(cells[c].count) >= options.minPoints else { throw .noCluster(id) }
        var z = id.zoom
        while z < options.maxZoom {
            var only = -1, n = 0
            for q in 0..<4 where children[4 * c + q] >= 0 {
                n += 1
                only = Int(children[4 * c + q])
            }
            if n > 1 { return z + 1 }
            c = only
            z += 1
        }
        return options.maxZoom + 1
    }

    // MARK: internals

    private mutating func reserve(maxId: Int32) {
        let n = Int(maxId) + 1
        guard n > px.count else { return }
        let grow = max(n, px.count + px.count / 2) - px.count
        px.append(contentsOf: repeatElement(0, count: grow))
        py.append(contentsOf: repeatElement(0, count: grow))
        pLeaf.append(contentsOf: repeatElement(-1, count: grow))
        pPos.append(contentsOf: repeatElement(0, count: grow))
    }

    private mutating func newCell(cx: UInt32, cy: UInt32, parent: Int32) -> Int32 {
        var cell = Cell()
        cell.cx = cx
        cell.cy = cy
        cell.parent = parent
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

    private mutating func recomputeLeafBounds(_ c: Int) {
        var x0 = UInt32.max, y0 = UInt32.max, x1 = UInt32.min, y1 = UInt32.min
        for m in members[c] {
            let x = px[Int(m)], y = py[Int(m)]
            x0 = min(x0, x); x1 = max(x1, x)
            y0 = min(y0, y); y1 = max(y1, y)
        }
        cells[c].minX = x0; cells[c].minY = y0; cells[c].maxX = x1; cells[c].maxY = y1
    }

    private mutating func recomputeBoundsFromChildren(_ c: Int) {
        var x0 = UInt32.max, y0 = UInt32.max, x1 = UInt32.min, y1 = UInt32.min
        for q in 0..<4 {
            let ch = Int(children[4 * c + q])
            if ch < 0 { continue }
            x0 = min(x0, cells[ch].minX); x1 = max(x1, cells[ch].maxX)
            y0 = min(y0, cells[ch].minY); y1 = max(y1, cells[ch].maxY)
        }
        cells[c].minX = x0; cells[c].minY = y0; cells[c].maxX = x1; cells[c].maxY = y1
    }

    @inline(__always)
    private func pointAt(_ id: Int32) -> ClusterPoint { ClusterPoint(id: id, x: px[Int(id)], y: py[Int(id)]) }

    private func makeCluster(_ c: Int, zoom: Int) -> GridCluster {
        let cell = cells[c]
        let n = UInt64(cell.count)
        return GridCluster(id: GridClusterID(zoom: zoom, cellX: cell.cx, cellY: cell.cy), count: Int(cell.count),
                           x: UInt32(cell.sumX / n), y: UInt32(cell.sumY / n),
                           bounds: ClusterBox(minX: cell.minX, minY: cell.minY, maxX: cell.maxX, maxY: cell.maxY))
    }

    /// The cell's rectangle at depth `z + k`, inclusive.
    @inline(__always)
    private func cellIntersects(_ c: Int, z: Int, _ box: ClusterBox) -> Bool {
        let shift = UInt64(32 - z - k)
        let cx = UInt64(cells[c].cx), cy = UInt64(cells[c].cy)
        return box.intersects(x0: UInt32(truncatingIfNeeded: cx << shift), y0: UInt32(truncatingIfNeeded: cy << shift),
                              x1: UInt32(truncatingIfNeeded: ((cx + 1) << shift) - 1),
                              y1: UInt32(truncatingIfNeeded: ((cy + 1) << shift) - 1))
    }

    /// Calls `body` with the zoom-0 cells intersecting `box`, ordered by (cy, cx).
    private func forEachRoot(in box: ClusterBox, _ body: (Int) -> Void) {
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
                        if let r = roots[cy << 32 | cx] { body(Int(r)) }
                    }
                }
            }
        } else {
            for (_, r) in roots.sorted(by: { $0.key < $1.key }) where cellIntersects(Int(r), z: 0, box) {
                body(Int(r))
            }
        }
    }

    /// Emits the items of cell `c` (zoom z) at zoom `target` >= z, restricted to `box`.
    private func collect(_ c: Int, z: Int, target: Int, box: ClusterBox, exactPoints: Bool, into out: inout [GridClusterItem]) {
        if !cellIntersects(c, z: z, box) { return }
        if z == target {
            if exactPoints {
                for m in members[c].sorted() where box.contains(x: px[Int(m)], y: py[Int(m)]) { out.append(.point(pointAt(m))) }
            } else if Int(cells[c].count) >= options.minPoints {
                out.append(.cluster(makeCluster(c, zoom: z)))
            } else {
                appendAllPoints(c, z: z, into: &out)
            }
            return
        }
        for q in 0..<4 {
            let ch = children[4 * c + q]
            if ch >= 0 { collect(Int(ch), z: z + 1, target: target, box: box, exactPoints: exactPoints, into: &out) }
        }
    }

    private func appendAllPoints(_ c: Int, z: Int, into out: inout [GridClusterItem]) {
        if z == options.maxZoom {
            for m in members[c].sorted() { out.append(.point(pointAt(m))) }
            return
        }
        for q in 0..<4 {
            let ch = children[4 * c + q]
            if ch >= 0 { appendAllPoints(Int(ch), z: z + 1, into: &out) }
        }
    }

    private func appendLeaves(_ c: Int, z: Int, limit: Int, skip: inout Int, into out: inout [ClusterPoint]) {
        if out.count >= limit { return }
        let n = Int(cells[c].count)
        if skip >= n {
            skip -= n
            return
        }
        if z == options.maxZoom {
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
            if ch >= 0 { appendLeaves(Int(ch), z: z + 1, limit: limit, skip: &skip, into: &out) }
            if out.count >= limit { return }
        }
    }

    /// The arena index of the non-empty cell named by `id`, if any.
    private func findCell(_ id: GridClusterID) -> Int? {
        let z = id.zoom
        guard z <= options.maxZoom else { return nil }
        let d = UInt32(z + k)
        let cx = id.cellX, cy = id.cellY
        guard d >= 32 || (UInt64(cx) >> UInt64(d) == 0 && UInt64(cy) >> UInt64(d) == 0) else { return nil }
        let zs = UInt32(z)
        guard var c = roots[UInt64(cy >> zs) << 32 | UInt64(cx >> zs)].map(Int.init) else { return nil }
        var level = 1
        while level <= z {
            let s = UInt32(z - level)
            let bx: UInt32 = (cx >> s) & 1
            let by: UInt32 = (cy >> s) & 1
            let q = Int(by << 1 | bx)
            let ch = children[4 * c + q]
            if ch < 0 { return nil }
            c = Int(ch)
            level += 1
        }
        return c
    }
}

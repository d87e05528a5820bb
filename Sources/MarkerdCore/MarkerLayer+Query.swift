/// Result of `queryViewport`.
public struct ViewportResult: Sendable {
    public var mode: TilingMode
    /// NATIVE: visible markers whose icon overlaps the viewport; TILED: only live ones.
    /// In spatial order (`SpatialKey`: Morton key of the position, then id), at most `limit`.
    public var markers: [MarkerRecord]
    /// Visible static markers whose icon overlaps the viewport (all pages).
    public var staticInView: Int
    /// Visible live markers whose icon overlaps the viewport (all pages).
    public var liveInView: Int
    /// Nil when there are no more markers; else pass it back as `pageToken`.
    public var nextPageToken: String?
    public var layerVersion: UInt64
}

/// Result of `viewportPage`: `ViewportResult` with the page as slots instead of records, for
/// callers that read only some of each marker's fields (see `MarkerLayer+Slots.swift`). The
/// slots are valid until the layer next changes.
public struct ViewportPage: Sendable {
    public var mode: TilingMode
    /// As `ViewportResult.markers`.
    public var slots: [MarkerSlot]
    public var staticInView: Int
    public var liveInView: Int
    public var nextPageToken: String?
    public var layerVersion: UInt64
}

/// One hit of `hitTest`.
public struct MarkerHit: Sendable {
    public var marker: MarkerRecord
    /// True when the marker is drawn into raster tiles (a static marker of a TILED layer).
    public var tiled: Bool
}

/// A marker to draw into a raster tile.
public struct TileMarker: Sendable, Hashable {
    public var id: String
    public var position: WorldPoint
    public var zIndex: Int32
    public var style: IconStyle
}

/// The region a spatial query scans: exact viewport intervals for the per-marker test, plus
/// integer search rectangles widened by the largest icon extent (wrapped around the antimeridian),
/// and inner rectangles (widened by the smallest extent) whose points are in view whatever
/// their icon.
struct SearchArea {
    static let world = 4_294_967_296.0
    /// Viewport x-intervals (continuous world units; may reach outside [0, 2^32] for hit-tests).
    var viewX: [(Double, Double)]
    var viewY0: Double
    var viewY1: Double
    /// World units per px (density 1).
    var unitsPerPx: Double
    /// Disjoint search rectangles.
    var ranges: [CellRect] = []
    /// Rectangles whose points' icons all touch the viewport (may overlap each other).
    var inner: [CellRect] = []

    init(viewX: [(Double, Double)], viewY0: Double, viewY1: Double, unitsPerPx u: Double, maxExtents e: IconExtents,
         minExtents m: IconExtents = .zero) {
        self.viewX = viewX; self.viewY0 = viewY0; self.viewY1 = viewY1; self.unitsPerPx = u
        let w = Int64(1) << 32
        let ylo = Swift.max(0, Int64(CoreMath.floor(viewY0 - e.down * u)))
        let yhi = Swift.min(w - 1, Int64(CoreMath.ceil(viewY1 + e.up * u)))
        guard ylo <= yhi else { return }
        var xs: [(Int64, Int64)] = []
        for (a, b) in viewX {
            let lo = Int64(CoreMath.floor(a - e.right * u)), hi = Int64(CoreMath.ceil(b + e.left * u))
            if hi - lo + 1 >= w { xs = [(0, w - 1)]; break }
            // Split [lo, hi] at multiples of 2^32 and wrap each piece into [0, 2^32).
            var k = lo >= 0 ? lo / w : -((-lo + w - 1) / w)
            while k * w <= hi {
                let p0 = Swift.max(lo, k * w), p1 = Swift.min(hi, k * w + w - 1)
                if p0 <= p1 { xs.append((p0 - k * w, p1 - k * w)) }
                k += 1
            }
        }
        xs.sort { $0.0 < $1.0 }
        var merged: [(Int64, Int64)] = []
        for r in xs {
            if let last = merged.last, r.0 <= last.1 + 1 { merged[merged.count - 1].1 = Swift.max(last.1, r.1) } else { merged.append(r) }
        }
        ranges = merged.map { CellRect(x0: UInt32($0.0), y0: UInt32(ylo), x1: UInt32($0.1), y1: UInt32(yhi)) }
        // Inner: a point (mx, my) whose every icon touches the viewport. With the smallest
        // extents m, a point inside [v0 - m.right*u, v1 + m.left*u] (shifted by -W, 0 or W, as
        // `iconOverlaps` tests) x [y0 - m.down*u, y1 + m.up*u] qualifies; one unit of margin on
        // each side absorbs the rounding of these sums (they are exact to far below a unit).
        let iy0 = Swift.max(0, Int64(CoreMath.ceil(viewY0 - m.down * u)) + 1)
        let iy1 = Swift.min(w - 1, Int64(CoreMath.floor(viewY1 + m.up * u)) - 1)
        if iy0 <= iy1 {
            for (a, b) in viewX {
                let lo = Int64(CoreMath.ceil(a - m.right * u)) + 1, hi = Int64(CoreMath.floor(b + m.left * u)) - 1
                guard lo <= hi else { continue }
                for k in [Int64(-1), 0, 1] {
                    let p0 = Swift.max(0, lo - k * w), p1 = Swift.min(w - 1, hi - k * w)
                    if p0 <= p1 { inner.append(CellRect(x0: UInt32(p0), y0: UInt32(iy0), x1: UInt32(p1), y1: UInt32(iy1))) }
                }
            }
        }
    }

    @inline(__always) func inRanges(_ e: GridEntry) -> Bool { ranges.contains(where: { $0.contains(x: e.x, y: e.y) }) }
    @inline(__always) func inInner(_ e: GridEntry) -> Bool { inner.contains(where: { $0.contains(x: e.x, y: e.y) }) }
}

extension MarkerLayer {
    /// Whether a marker's icon (closed rectangle, wrapped around the antimeridian) touches the area.
    @inline(__always) func iconOverlaps(_ slot: Int32, _ a: SearchArea) -> Bool {
        let s = Int(slot)
        return iconOverlaps(x: table.x[s], y: table.y[s], styles.extents[Int(table.style[s])], a)
    }

    /// `iconOverlaps` for a grid entry: its position from the entry, and when every style in use
    /// has the same extents (`minExtents == maxExtents`, both conservative), no table access
    /// at all (each would be a cache miss on a big layer).
    @inline(__always) func iconOverlaps(_ entry: GridEntry, _ a: SearchArea) -> Bool {
        let uniform = styles.minExtents == styles.maxExtents
        return iconOverlaps(x: entry.x, y: entry.y, uniform ? styles.maxExtents : styles.extents[Int(table.style[Int(entry.slot)])], a)
    }

    @inline(__always) func iconOverlaps(x: UInt32, y: UInt32, _ e: IconExtents, _ a: SearchArea) -> Bool {
        let u = a.unitsPerPx
        let my = Double(y)
        if my + e.down * u < a.viewY0 || my - e.up * u > a.viewY1 { return false }
        let mx = Double(x)
        let l = mx - e.left * u, r = mx + e.right * u
        for (v0, v1) in a.viewX {
            if l <= v1 && r >= v0 { return true }
            if l - SearchArea.world <= v1 && r - SearchArea.world >= v0 { return true }
            if l + SearchArea.world <= v1 && r + SearchArea.world >= v0 { return true }
        }
        return false
    }

    /// Draw order: z-index, world y, id bytes (see `DrawKey`).
    @inline(__always) func drawLess(_ a: Int32, _ b: Int32) -> Bool {
        let za = table.zIndex[Int(a)], zb = table.zIndex[Int(b)]
        if za != zb { return za < zb }
        let ya = table.y[Int(a)], yb = table.y[Int(b)]
        if ya != yb { return ya < yb }
        return table.compareIDs(a, b) < 0
    }

    /// The draw-order key of a marker (for tests and the renderer).
    public func drawKey(id: String) -> DrawKey? {
        table.find(id).map { DrawKey(zIndex: table.zIndex[Int($0)], worldY: table.y[Int($0)], id: Array(table.idBytes($0))) }
    }

    /// Markers in the viewport, in spatial order (`SpatialKey`), paged.
    ///
    /// - bounds: validated (`GeoBounds.validate`); west > east crosses the antimeridian;
    ///   latitudes beyond the Mercator limit are clamped.
    /// - zoom: 0...22, fractional. density: device pixel ratio (0, 4]; icon rects are
    ///   (w*d x h*d) device px in a world of 256 * 2^zoom * d device px, so the result does not
    ///   depend on the density.
    /// - limit: 1...100,000 markers per page. pageToken: from a previous result (stateless; see
    ///   `SpatialKey` for what paging guarantees while the layer changes). A malformed token
    ///   throws `.invalidPageToken`.
    /// - now: Unix ms, for animations.
    ///
    /// A marker is in view when its icon rectangle (anchor on the marker) touches the bounds.
    /// NATIVE mode returns visible markers; TILED mode returns visible live markers (draggable
    /// or animating at `now`) and counts static ones. Cost: static markers are counted per grid
    /// node where whole nodes are in view (only the leaves on the boundary are scanned); live
    /// markers in the bounds are visited (and those after the token sorted for the page); the
    /// page walks the static class's grid in spatial order from the token and stops after
    /// `limit` + 1 markers (so a page of a big viewport costs about its own markers, not the
    /// viewport's).
    public func queryViewport(bounds: GeoBounds, zoom: Double, density: Double = 1, limit: Int = 1000,
                              pageToken: String? = nil, now: Int64) throws(MarkerdCoreError) -> ViewportResult {
        let page = try viewportPage(bounds: bounds, zoom: zoom, density: density, limit: limit, pageToken: pageToken, now: now)
        return ViewportResult(mode: page.mode, markers: page.slots.map(record), staticInView: page.staticInView,
                              liveInView: page.liveInView, nextPageToken: page.nextPageToken, layerVersion: page.layerVersion)
    }

    /// The search area of a viewport (bounds and zoom as `viewportPage` takes them, unchecked).
    private func viewportArea(_ bounds: GeoBounds, zoom: Double) -> SearchArea {
        let y = bounds.worldYRange
        return SearchArea(viewX: bounds.worldXRanges.map { ($0.lowerBound, $0.upperBound) },
                          viewY0: y.lowerBound, viewY1: y.upperBound, unitsPerPx: Mercator.worldUnitsPerPixel(zoom: zoom),
                          maxExtents: styles.maxExtents, minExtents: styles.minExtents)
    }

    /// Markers of the live class (draggable or animating, not yet expired) in the cells
    /// `viewportPage` searches for these bounds and zoom: how many of that class it visits, and
    /// an upper bound on its TILED page. Counted per grid node where whole nodes lie inside, so
    /// it costs about the nodes on the search rectangle's edge. Throws like `viewportPage` for
    /// bad bounds, zoom or density.
    public func viewportLiveClassCount(bounds: GeoBounds, zoom: Double, density: Double = 1) throws(MarkerdCoreError) -> Int {
        try bounds.validate()
        try Mercator.validate(zoom: zoom, density: density)
        let ranges = viewportArea(bounds, zoom: zoom).ranges
        return ranges.reduce(0) { n, r in n + grid.count(cls: GridIndex.Class.live.rawValue, rect: r, inner: [r]) { _ in true } }
    }

    /// `queryViewport` with the page as slots (same arguments, errors and order).
    public func viewportPage(bounds: GeoBounds, zoom: Double, density: Double = 1, limit: Int = 1000,
                             pageToken: String? = nil, now: Int64) throws(MarkerdCoreError) -> ViewportPage {
        // No budget: never nil.
        try viewportPage(bounds: bounds, zoom: zoom, density: density, limit: limit, pageToken: pageToken, now: now,
                         liveBudget: .max)!
    }

    /// `viewportPage(bounds:zoom:density:limit:pageToken:now:)`, or nil when the live class
    /// (draggable or animating markers, ended animations included) holds more than `liveBudget`
    /// markers in the searched cells (`viewportLiveClassCount` > `liveBudget`), found while the
    /// query visits them: it stops there, so a bounded caller (markerd's network thread) pays at
    /// most `liveBudget` of those visits, without counting them in a walk of its own first.
    public func viewportPage(bounds: GeoBounds, zoom: Double, density: Double = 1, limit: Int = 1000,
                             pageToken: String? = nil, now: Int64, liveBudget: Int) throws(MarkerdCoreError) -> ViewportPage? {
        try bounds.validate()
        try Mercator.validate(zoom: zoom, density: density)
        if limit < 1 || limit > 100_000 { throw .invalidArgument(field: "limit", reason: "\(limit) is not within 1...100000") }
        let after = try pageToken.map { (t: String) throws(MarkerdCoreError) -> SpatialKey in try SpatialKey(pageToken: t) }
        let mode = self.mode(now: now)
        let area = viewportArea(bounds, zoom: zoom)
        let tiled = mode == .tiled
        @inline(__always) func isLive(_ s: Int32) -> Bool { table.flags[Int(s)] & MarkerFlags.draggable != 0 || isAnimating(s, now: now) }
        @inline(__always) func inView(_ e: GridEntry) -> Bool { area.inInner(e) || iconOverlaps(e, area) }
        let filter = PageFilter(area: area, after: after)
        // In view: of the static class (counted per node where whole nodes are in view), and of
        // the live class those still live and those whose animation has ended (static). The
        // live class's page candidates (after the token; in TILED mode live ones only) are
        // collected on the way, to be sorted: that class is visited whole for its counts anyway.
        var staticClass = 0, liveInView = 0, ended = 0
        var liveClass: [SpatialCursor.Keyed] = []
        var liveBudgetLeft = liveBudget
        for r in area.ranges {
            var visited = 0
            let complete = grid.forEach(cls: GridIndex.Class.live.rawValue, rect: r, visitingAtMost: liveBudgetLeft) { e in
                visited += 1
                guard table.flags[Int(e.slot)] & MarkerFlags.visible != 0, inView(e) else { return }
                let live = isLive(e.slot)
                if live { liveInView += 1 } else { ended += 1 }
                guard live || !tiled else { return }
                let key = SpatialKey.morton(x: e.x, y: e.y)
                if filter.isAfter(e, key: key, table) { liveClass.append((key, e)) }
            }
            guard complete else { return nil }
            liveBudgetLeft -= visited
            staticClass += grid.count(cls: GridIndex.Class.staticMarker.rawValue, rect: r, inner: area.inner) { e in iconOverlaps(e, area) }
        }
        let staticInView = staticClass + ended
        SpatialCursor.sort(&liveClass, table)
        // The page: the first markers after the token in spatial order, the static class's walk
        // (not started when it has nothing in view: the counts are exact) merged with the live
        // class's candidates, one more than a page to know whether another page follows.
        var statics = tiled || staticClass == 0 ? nil
            : SpatialCursor(grid, cls: GridIndex.Class.staticMarker.rawValue, rects: area.ranges, from: after?.morton ?? 0)
        var l = 0
        var entries: [GridEntry] = []
        entries.reserveCapacity(Swift.min(limit + 1, staticInView + liveInView + 1))
        // On the first page, all of them found = nothing more to look for.
        let wanted = after == nil ? Swift.min(limit + 1, tiled ? liveInView : staticInView + liveInView) : limit + 1
        while entries.count < wanted {
            let s = statics?.peek(self, filter)
            if let s, l == liveClass.count || s.key < liveClass[l].key
                || (s.key == liveClass[l].key && table.compareIDs(s.entry.slot, liveClass[l].entry.slot) < 0) {
                entries.append(s.entry); statics!.advance()
            } else if l < liveClass.count {
                entries.append(liveClass[l].entry); l += 1
            } else {
                break
            }
        }
        var next: String? = nil
        if entries.count > limit {
            entries.removeLast()
            let last = entries[entries.count - 1]
            next = SpatialKey(morton: SpatialKey.morton(x: last.x, y: last.y), id: Array(table.idBytes(last.slot))).pageToken
        }
        return ViewportPage(mode: mode, slots: entries.map(MarkerSlot.init), staticInView: staticInView, liveInView: liveInView,
                            nextPageToken: next, layerVersion: version)
    }

    /// Clickable, visible markers (tiled and live alike) whose icon rect, widened by
    /// `tolerancePx` (px at density 1, scaled with the density like the icon) on every side,
    /// contains `point`. Topmost first (reverse draw order), at most `maxResults` (0...10,000).
    public func hitTest(point: LatLng, zoom: Double, density: Double = 1, tolerancePx: Double = 14,
                        maxResults: Int = 10, now: Int64) throws(MarkerdCoreError) -> [MarkerHit] {
        try point.validate(field: "point")
        try Mercator.validate(zoom: zoom, density: density)
        if !tolerancePx.isFinite || tolerancePx < 0 || tolerancePx > 1000 {
            throw .invalidArgument(field: "tolerance_px", reason: "\(tolerancePx) is not within 0...1000")
        }
        if maxResults < 0 || maxResults > 10_000 { throw .invalidArgument(field: "max_results", reason: "\(maxResults) is not within 0...10000") }
        if maxResults == 0 { return [] }
        let u = Mercator.worldUnitsPerPixel(zoom: zoom)
        let px = Mercator.worldX(longitude: point.longitude), py = Mercator.worldY(latitude: point.latitude)
        let t = tolerancePx * u
        // The widened icon contains the point iff the icon touches the square of side 2t around it.
        let area = SearchArea(viewX: [(px - t, px + t)], viewY0: py - t, viewY1: py + t, unitsPerPx: u, maxExtents: styles.maxExtents)
        var top = DrawCollector(limit: maxResults, topmost: true)
        // Nodes best-first by their (z, y) upper bound: the topmost candidates come first.
        grid.ordered(classes: [GridIndex.Class.staticMarker.rawValue, GridIndex.Class.live.rawValue], rects: area.ranges, topmost: true,
                     prune: { nb in top.isFull && !top.mightAccept(z: nb.maxZ, y: nb.y1) }) { e in
            guard top.mightAccept(z: e.z, y: e.y), iconOverlaps(e, area) else { return }
            let f = table.flags[Int(e.slot)]
            guard f & MarkerFlags.visible != 0, f & MarkerFlags.clickable != 0 else { return }
            top.offer(e, self)
        }
        let tiledMode = mode(now: now) == .tiled
        return top.sorted(self).reversed().map { MarkerHit(marker: record($0), tiled: tiledMode && isStatic($0, now: now)) }
    }

    /// Static markers (at `now`) whose icons touch a raster tile, in draw order (bottom first),
    /// for the renderer. `tileSize` (256 or 512; default the layer's) sets the px scale: a tile
    /// is `tileSize` px at density 1. Ignores the tiling mode.
    public func tileMarkers(_ tile: TileID, tileSize: Int? = nil, now: Int64) -> [TileMarker] {
        let size = Double(tileSize ?? options.tileSize)
        let rect = tile.worldRect
        let area = SearchArea(viewX: [(rect.minX, rect.maxX)], viewY0: rect.minY, viewY1: rect.maxY,
                              unitsPerPx: tile.worldSpan / size, maxExtents: styles.maxExtents)
        var found: [Int32] = []
        for r in area.ranges {
            grid.forEach(cls: GridIndex.Class.staticMarker.rawValue, rect: r) { e in
                if iconOverlaps(e, area) { found.append(e.slot) }
            }
            grid.forEach(cls: GridIndex.Class.live.rawValue, rect: r) { e in
                if isStatic(e.slot, now: now), iconOverlaps(e, area) { found.append(e.slot) }
            }
        }
        found.sort { drawLess($0, $1) }
        return found.map { s in
            TileMarker(id: table.id(s), position: WorldPoint(x: table.x[Int(s)], y: table.y[Int(s)]),
                       zIndex: table.zIndex[Int(s)], style: styles.style(at: table.style[Int(s)]))
        }
    }
}

/// Keeps the `limit` first markers in draw order (or the `limit` last ones when `topmost`) in
/// a bounded heap whose root is the worst one kept. Compares (z, y) from the grid entries and
/// reads ids from the table only on ties.
struct DrawCollector {
    let limit: Int
    let topmost: Bool
    private(set) var heap = BinaryHeap<GridEntry>()

    init(limit: Int, topmost: Bool) { self.limit = limit; self.topmost = topmost }

    var isFull: Bool { heap.count >= limit }

    /// Draw order: z, y, id bytes.
    @inline(__always) static func drawLess(_ a: GridEntry, _ b: GridEntry, _ layer: MarkerLayer) -> Bool {
        if a.z != b.z { return a.z < b.z }
        if a.y != b.y { return a.y < b.y }
        return layer.table.compareIDs(a.slot, b.slot) < 0
    }

    /// "Better" = kept in preference: earlier in draw order, or later when `topmost`.
    @inline(__always) private func better(_ a: GridEntry, _ b: GridEntry, _ layer: MarkerLayer) -> Bool {
        topmost ? DrawCollector.drawLess(b, a, layer) : DrawCollector.drawLess(a, b, layer)
    }

    /// Whether a marker with this z and y (any id) could still be kept.
    @inline(__always) func mightAccept(z: Int32, y: UInt32) -> Bool {
        guard heap.count >= limit, let w = heap.first else { return limit > 0 }
        if z != w.z { return topmost ? z > w.z : z < w.z }
        return topmost ? y >= w.y : y <= w.y
    }

    mutating func offer(_ e: GridEntry, _ layer: MarkerLayer) {
        if limit == 0 { return }
        // The heap's least element is the worst kept: `worse(a, b)` is `better(b, a)`.
        let topmost = self.topmost
        let worse = { (a: GridEntry, b: GridEntry) in
            topmost ? DrawCollector.drawLess(a, b, layer) : DrawCollector.drawLess(b, a, layer)
        }
        if heap.count < limit {
            heap.push(e, by: worse)
        } else if let w = heap.first, better(e, w, layer) {
            heap.replaceFirst(with: e, by: worse)
        }
    }

    /// The kept slots in draw order (bottom first).
    func sorted(_ layer: MarkerLayer) -> [Int32] { sortedEntries(layer).map(\.slot) }

    /// The kept entries in draw order (bottom first).
    func sortedEntries(_ layer: MarkerLayer) -> [GridEntry] {
        let table = layer.table   // captured once (not the whole layer per comparison)
        return heap.elements.sorted { a, b in
            if a.z != b.z { return a.z < b.z }
            if a.y != b.y { return a.y < b.y }
            return table.compareIDs(a.slot, b.slot) < 0
        }
    }
}

/// Which static-class entries in a viewport's search rectangles belong on a QueryViewport
/// page: after the token, icon in view. A struct, not a closure: a closure capturing the layer
/// would copy it (a few dozen reference counts) wherever the optimizer rebuilds its context.
struct PageFilter {
    let area: SearchArea
    let after: SpatialKey?

    /// Whether an entry with this Morton key comes after the token (ids compared only on a tie).
    @inline(__always) func isAfter(_ e: GridEntry, key: UInt64, _ table: borrowing MarkerTable) -> Bool {
        guard let after else { return true }
        return key != after.morton ? key > after.morton : table.compareID(e.slot, after.id) > 0
    }

    @inline(__always) func accepts(_ e: GridEntry, key: UInt64, _ layer: borrowing MarkerLayer) -> Bool {
        isAfter(e, key: key, layer.table) && (area.inInner(e) || layer.iconOverlaps(e, area))
    }
}

/// The entries of one grid class in a viewport that pass a `PageFilter`, in `SpatialKey`
/// order: the grid's `SpatialWalk` a leaf at a time, each leaf's accepted entries sorted (a
/// leaf holds at most `GridIndex.splitAbove` entries, except exact duplicates at the last level).
struct SpatialCursor {
    typealias Keyed = (key: UInt64, entry: GridEntry)
    private var walk: GridIndex.SpatialWalk
    private let rects: [CellRect]
    private var buffer: [Keyed] = []
    private var at = 0
    /// The leaves of the batch `peek` is filtering (kept to reuse its storage).
    private var leaves: [GridCell] = []

    /// - rects: the entries whose positions lie in one of these. from: see `SpatialWalk`.
    init(_ grid: GridIndex, cls: UInt32, rects: [CellRect], from: UInt64) {
        walk = GridIndex.SpatialWalk(grid, cls: cls, rects: rects, from: from)
        self.rects = rects
    }

    /// Sorts by key, then each run of equal keys (exact duplicates, rare) by id. (The key
    /// sort's comparison captures nothing: one capturing the table copies it per call.) Up to
    /// `insertionSortLimit` entries by insertion, which beats the generic sort at that size.
    static func sort(_ buffer: inout [Keyed], _ table: borrowing MarkerTable) {
        if buffer.count <= insertionSortLimit {
            buffer.withUnsafeMutableBufferPointer { b in
                for i in b.indices.dropFirst() {
                    let v = b[i]
                    var j = i
                    while j > 0 && b[j - 1].key > v.key {
                        b[j] = b[j - 1]
                        j -= 1
                    }
                    b[j] = v
                }
            }
        } else {
            buffer.sort { $0.key < $1.key }
        }
        var i = 0
        while i < buffer.count {
            var j = i + 1
            while j < buffer.count && buffer[j].key == buffer[i].key { j += 1 }
            if j - i > 1 {
                let t = copy table
                buffer[i..<j].sort { t.compareIDs($0.entry.slot, $1.entry.slot) < 0 }
            }
            i = j
        }
    }

    /// Up to this many entries are sorted by insertion: a batch of leaves, each in its own key
    /// range, so the insertion sort's work is the entries plus the inversions inside each leaf.
    static let insertionSortLimit = 8 * Int(GridIndex.splitAbove)

    /// Leaves the cursor filters at a time (`peek`).
    static let batchLeaves = 4

    /// The next entry that passes `filter`, without taking it; nil at the end.
    ///
    /// Leaves are taken from the walk `batchLeaves` at a time (consecutive in key order) and
    /// their entries filtered first without a branch on their position (a leaf on the
    /// viewport's edge has entries on both sides, and mispredicted branches discard the loads
    /// after them, so that the cache misses of the batch's leaves overlap): each is written to
    /// the buffer and kept by advancing its end or not. Only a batch with an entry in the first
    /// four search rectangles that is not surely on the page (outside every inner rectangle,
    /// or at or before the token's key), or a search of more rectangles, is filtered again with
    /// the exact test (`PageFilter.accepts`). The batch is then sorted as one.
    mutating func peek(_ layer: borrowing MarkerLayer, _ filter: borrowing PageFilter) -> Keyed? {
        while at == buffer.count {
            leaves.removeAll(keepingCapacity: true)
            var n = 0
            while leaves.count < SpatialCursor.batchLeaves, let leaf = walk.next(layer.grid) {
                leaves.append(leaf)
                n += Int(leaf.count)
            }
            guard !leaves.isEmpty else { return nil }
            SpatialCursor.touch(leaves, layer.grid)
            at = 0
            if buffer.count < n { buffer.append(contentsOf: repeatElement(Keyed(key: 0, entry: GridEntry(x: 0, y: 0, z: 0, slot: -1)), count: n - buffer.count)) }
            let inner = filter.area.inner, after = filter.after?.morton
            let sure = rects.count == 1 && inner.count == 1
                ? SpatialCursor.filter(leaves, layer.grid, ranges: rects[0], inner: inner[0], after: after, into: &buffer)
                : SpatialCursor.filter(leaves, layer.grid, ranges: InnerRects(rects), inner: InnerRects(inner), after: after, into: &buffer)
            var kept = sure.kept
            if sure.band != 0 || rects.count > 4 {
                kept = 0
                for leaf in leaves {
                    layer.grid.forEachEntry(leaf) { e in
                        guard rects.contains(where: { $0.contains(x: e.x, y: e.y) }) else { return }
                        let key = SpatialKey.morton(x: e.x, y: e.y)
                        if filter.accepts(e, key: key, layer) { buffer[kept] = (key, e); kept += 1 }
                    }
                }
            }
            buffer.removeLast(buffer.count - kept)
            SpatialCursor.sort(&buffer, layer.table)
        }
        return buffer[at]
    }

    /// Reads a word of every cache line of the leaves' entry runs, in a loop of independent loads
    /// (`CacheTouch`): each leaf's run lies at its own place in the grid's entries (a miss to
    /// memory on a big layer), and the filter, a few dozen instructions per entry, met those
    /// misses one leaf after another (most of `peek`'s own time at 10M markers).
    private static func touch(_ leaves: [GridCell], _ grid: borrowing GridIndex) {
        var sum: UInt32 = 0
        grid.entries.withUnsafeBufferPointer { es in
            for leaf in leaves where leaf.count > 0 {
                let base = GridIndex.runBase(leaf.head), end = base + Int(leaf.count)
                var k = base
                while k < end { sum &+= es[k].x; k += 4 }   // 4 entries of 16 bytes: a line
                sum &+= es[end - 1].x
            }
        }
        CacheTouch.keep(sum)
    }

    /// `peek`'s first pass over a batch of leaves: writes each entry with its key to `out`
    /// (at least as long as the leaves' entries), keeping those in `ranges` and `inner` and
    /// after `after` (nil: any key) at the front. Returns how many it kept, and non-zero `band`
    /// when some entry in `ranges` was not kept.
    private static func filter<R: PointTest, I: PointTest>(_ leaves: [GridCell], _ grid: borrowing GridIndex, ranges: R, inner: I,
                                                          after: UInt64?, into out: inout [Keyed]) -> (kept: Int, band: UInt8) {
        let anyKey = UInt8(bitPattern: after == nil), from = after ?? 0
        var kept = 0
        var band: UInt8 = 0
        out.withUnsafeMutableBufferPointer { out in
            for leaf in leaves {
                grid.forEachEntry(leaf) { e in
                    let key = SpatialKey.morton(x: e.x, y: e.y)
                    let inRange = UInt8(bitPattern: ranges.holds(e.x, e.y))
                    let sure = inRange & UInt8(bitPattern: inner.holds(e.x, e.y)) & (anyKey | UInt8(bitPattern: key > from))
                    out[kept] = (key, e)
                    kept &+= Int(sure)
                    band |= inRange & ~sure
                }
            }
        }
        return (kept, band)
    }

    /// Takes the entry `peek` returned.
    mutating func advance() { at += 1 }
}

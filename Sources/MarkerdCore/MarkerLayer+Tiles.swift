// What the raster-tile renderer and the per-tile versions need from a layer, without
// materialising `MarkerRecord`s: static markers as (slot, world x, y, style index, z-index),
// the exact draw order between two of them, and the icon footprints of changes.

/// A static marker as the tile renderer sees it. `slot` identifies the marker for
/// `MarkerLayer.drawOrderLess(_:_:)` and `markerID(slot:)` while the layer is not changed.
public struct TileCandidate: Sendable, Hashable {
    public var slot: Int32
    public var x: UInt32
    public var y: UInt32
    /// Index into the layer's `styles` (`StyleTable.style(at:)`).
    public var style: UInt32
    public var zIndex: Int32
}

/// Where a marker's icon reaches: its world position and the icon's extents in px at density 1.
/// Used to mark the tiles whose pixels a change can affect.
public struct IconFootprint: Sendable, Hashable {
    public var position: WorldPoint
    public var extents: IconExtents
    public init(position: WorldPoint, extents: IconExtents) { self.position = position; self.extents = extents }
}

extension MarkerLayer {
    /// Visits, in no particular order, every marker that is static at `now` (visible, not
    /// draggable, not animating) whose position lies within the view widened by the largest
    /// icon extent in use plus `marginPx` (px at density 1).
    ///
    /// - viewX: world x-intervals (continuous world units; may reach outside [0, 2^32]: they wrap).
    /// - viewY0, viewY1: world y-interval.
    /// - unitsPerPx: world units per px at density 1 (2^(24 - zoom) for 256 px tiles).
    ///
    /// Cost: when the widened view covers at least 1/16 of the world and the layer holds more than
    /// 200,000 markers, one sequential pass over the marker table (cheaper than chasing the grid's
    /// lists through most of memory); otherwise the grid cells around the view plus their markers.
    /// Visits a marker once per search rectangle that holds it (once, as the rectangles are disjoint).
    ///
    /// `readStyles` false: markers from the grid come with `style` `UInt32.max` instead of their
    /// style index (one random read of the marker table each, left out when the caller knows the
    /// style, e.g. only one is in use; see `staticStyle(slot:)`). Default true.
    public func forEachStaticMarker(viewX: [(Double, Double)], viewY0: Double, viewY1: Double, unitsPerPx: Double,
                                    marginPx: Double, now: Int64, readStyles: Bool = true, _ body: (TileCandidate) -> Void) {
        let (ranges, scan) = staticSearch(viewX: viewX, viewY0: viewY0, viewY1: viewY1, unitsPerPx: unitsPerPx,
                                          marginPx: marginPx, scanAbove: Self.scanAboveMarkers)
        if scan {
            scanStatic(ranges, now: now, body)
            return
        }
        for r in ranges {
            // The entry carries position and z-index: only the style comes from the table.
            grid.forEach(cls: GridIndex.Class.staticMarker.rawValue, rect: r) { e in
                body(TileCandidate(slot: e.slot, x: e.x, y: e.y, style: readStyles ? table.style[Int(e.slot)] : .max, zIndex: e.z))
            }
            grid.forEach(cls: GridIndex.Class.live.rawValue, rect: r) { e in
                if isStatic(e.slot, now: now) { body(candidate(e.slot)) }
            }
        }
    }

    /// `forEachStaticMarker(viewX:viewY0:viewY1:unitsPerPx:marginPx:now:readStyles:_:)` for callers
    /// that place markers in bulk: the same markers, in no particular order, handed to `body` in
    /// runs of grid entries (world position, z-index, slot) instead of one `TileCandidate` per
    /// call. Entries carry no style: with one style in use it is that one, else read
    /// `staticStyle(slot:)`. A run is only valid during its call; `body` must not change the
    /// layer.
    ///
    /// Cost: as `forEachStaticMarker`, without a call per marker. A grid leaf wholly inside the
    /// widened view is handed over as stored; other markers are copied to a buffer first.
    public func forEachStaticRun(viewX: [(Double, Double)], viewY0: Double, viewY1: Double, unitsPerPx: Double,
                                 marginPx: Double, now: Int64, _ body: (UnsafeBufferPointer<GridEntry>) -> Void) {
        forEachStaticRun(viewX: viewX, viewY0: viewY0, viewY1: viewY1, unitsPerPx: unitsPerPx, marginPx: marginPx, now: now,
                         scanAbove: Self.scanAboveMarkers, body)
    }

    /// `forEachStaticRun`, scanning the marker table for wide views when the layer holds more
    /// than `scanAbove` markers (tests lower it).
    func forEachStaticRun(viewX: [(Double, Double)], viewY0: Double, viewY1: Double, unitsPerPx: Double,
                          marginPx: Double, now: Int64, scanAbove: Int, _ body: (UnsafeBufferPointer<GridEntry>) -> Void) {
        let (ranges, scan) = staticSearch(viewX: viewX, viewY0: viewY0, viewY1: viewY1, unitsPerPx: unitsPerPx,
                                          marginPx: marginPx, scanAbove: scanAbove)
        var buffer: [GridEntry] = []
        buffer.reserveCapacity(Self.runBufferSize)
        func flush() {
            if !buffer.isEmpty { buffer.withUnsafeBufferPointer(body) }
            buffer.removeAll(keepingCapacity: true)
        }
        func add(_ c: TileCandidate) {
            buffer.append(GridEntry(x: c.x, y: c.y, z: c.zIndex, slot: c.slot))
            if buffer.count == Self.runBufferSize { flush() }
        }
        if scan {
            scanStatic(ranges, now: now, add)
            flush()
            return
        }
        for r in ranges {
            grid.forEachRun(cls: GridIndex.Class.staticMarker.rawValue, rect: r, scratch: &buffer, body)
            buffer.removeAll(keepingCapacity: true)
            grid.forEach(cls: GridIndex.Class.live.rawValue, rect: r) { e in
                if isStatic(e.slot, now: now) { add(candidate(e.slot)) }
            }
            flush()
        }
    }

    /// The search rectangles of a view widened by the largest icon extent plus `marginPx` (empty:
    /// nothing to visit), and whether to scan the marker table instead of the grid: the layer holds
    /// more than `scanAbove` markers and the rectangles cover at least 1/16 of the world.
    private func staticSearch(viewX: [(Double, Double)], viewY0: Double, viewY1: Double, unitsPerPx: Double,
                              marginPx: Double, scanAbove: Int) -> (ranges: [CellRect], scan: Bool) {
        var e = styles.maxExtents
        e.left += marginPx; e.right += marginPx; e.up += marginPx; e.down += marginPx
        let area = SearchArea(viewX: viewX, viewY0: viewY0, viewY1: viewY1, unitsPerPx: unitsPerPx, maxExtents: e)
        var covered = 0.0
        for r in area.ranges { covered += (Double(r.x1) - Double(r.x0) + 1) * (Double(r.y1) - Double(r.y0) + 1) }
        return (area.ranges, !area.ranges.isEmpty && table.count > scanAbove && covered >= SearchArea.world * SearchArea.world / 16)
    }

    /// Layers above this many markers are scanned, not searched, for views that cover at least
    /// 1/16 of the world (`forEachStaticMarker`, `forEachStaticRun`).
    static let scanAboveMarkers = 200_000

    /// Entries per run that `forEachStaticRun` copies before handing them over.
    static let runBufferSize = 512

    /// Static markers of a raster tile's area (see `forEachStaticMarker(viewX:...)`); `tileSize`
    /// 256 or 512 sets the px scale.
    public func forEachStaticMarker(inTile tile: TileID, tileSize: Int, marginPx: Double, now: Int64,
                                    _ body: (TileCandidate) -> Void) {
        let r = tile.worldRect
        forEachStaticMarker(viewX: [(r.minX, r.maxX)], viewY0: r.minY, viewY1: r.maxY,
                            unitsPerPx: tile.worldSpan / Double(tileSize), marginPx: marginPx, now: now, body)
    }

    @inline(__always) func candidate(_ s: Int32) -> TileCandidate {
        let i = Int(s)
        return TileCandidate(slot: s, x: table.x[i], y: table.y[i], style: table.style[i], zIndex: table.zIndex[i])
    }

    private func scanStatic(_ ranges: [CellRect], now: Int64, _ body: (TileCandidate) -> Void) {
        let n = table.slotCount
        let visible = MarkerFlags.visible, draggable = MarkerFlags.draggable, animating = MarkerFlags.animating
        table.flags.withUnsafeBufferPointer { flags in
            table.x.withUnsafeBufferPointer { xs in
                table.y.withUnsafeBufferPointer { ys in
                    table.style.withUnsafeBufferPointer { st in
                        table.zIndex.withUnsafeBufferPointer { zs in
                            var i = 0
                            while i < n {
                                let f = flags[i]
                                if f & (visible | draggable) == visible {
                                    let x = xs[i], y = ys[i]
                                    var inside = false
                                    for r in ranges where x >= r.x0 && x <= r.x1 && y >= r.y0 && y <= r.y1 { inside = true; break }
                                    if inside && (f & animating == 0 || !isAnimating(Int32(i), now: now)) {
                                        body(TileCandidate(slot: Int32(i), x: x, y: y, style: st[i], zIndex: zs[i]))
                                    }
                                }
                                i += 1
                            }
                        }
                    }
                }
            }
        }
    }

    /// The shared draw order between two markers visited by `forEachStaticMarker`: z-index,
    /// then world y, then id bytes (see `DrawKey`). True when `a` is drawn before (under) `b`.
    public func drawOrderLess(_ a: Int32, _ b: Int32) -> Bool { drawLess(a, b) }

    /// The id of a visited marker.
    public func markerID(slot: Int32) -> String { table.id(slot) }

    /// The icon footprint of a marker if it is drawn into tiles at `now` (static), else nil.
    public func staticFootprint(id: String, now: Int64) -> IconFootprint? {
        guard let s = table.find(id), isStatic(s, now: now) else { return nil }
        return IconFootprint(position: WorldPoint(x: table.x[Int(s)], y: table.y[Int(s)]),
                             extents: styles.extents[Int(table.style[Int(s)])])
    }

    /// Footprints of the markers whose animation ends at or before `now` and that are not
    /// expired yet (what `expireAnimations(now:)` is about to turn static). O(due heap entries).
    public func dueAnimationFootprints(now: Int64) -> [IconFootprint] {
        var out: [IconFootprint] = []
        animationHeap.forEachDue(now) { e in
            guard let a = animations[e.slot], a.seq == e.seq else { return }
            let s = Int(e.slot)
            guard table.flags[s] & MarkerFlags.visible != 0, table.flags[s] & MarkerFlags.draggable == 0 else { return }
            out.append(IconFootprint(position: WorldPoint(x: table.x[s], y: table.y[s]), extents: styles.extents[Int(table.style[s])]))
        }
        return out
    }
}

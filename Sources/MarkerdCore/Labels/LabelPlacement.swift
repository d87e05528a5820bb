/// Where a layer's labels go at one pixel zoom, decided once in world pixel space so that every
/// tile shows the same placement: a label crossing a tile edge is on both tiles, none appears on
/// one side of a seam only.
///
/// Pixel zoom `pz` (0...23) is the tile zoom for 256 px tiles, the tile zoom + 1 for 512 px
/// tiles; the world is `W = 256 << pz` px (density 1) wide, and a marker's anchor is its world
/// position in whole px (`LabelGeometry.anchor`). Sizes are px at density 1: a tile at density
/// d draws box (x, y) at device px (d x, d y) of the global raster.
///
/// Which markers are labelled: `MarkerLayer.isLabelled` (labels enabled, static at `now`, label
/// text non-empty), at tile zooms from `LabelStyle.minZoom` on.
///
/// Rank (placement order): z-index descending, then label priority descending
/// (`MarkerLayer.labelPriority`), then draw order descending (the marker drawn on top first:
/// world y descending, then id bytes descending). A total order: the placement depends on the
/// layer's content only.
///
/// Greedy: in rank order, each label takes the first of the style's `positions` whose box, grown
/// by `padding` (rounded up to whole px) on every side, overlaps no grown box of a label placed
/// before it; else it is dropped. Boxes wrap around the antimeridian (x is compared modulo `W`).
/// A candidate is first tested as a probe, the box of the smallest label size
/// (`LabelGeometry.minimumSize`, inside its box whatever the size), so labels that cannot fit
/// anywhere are dropped without being measured.
///
/// Costs (n labelled markers, m placed): from scratch O(slots) to find the labelled markers, an
/// O(n log n) sort, then per label O(positions) tests of O(1) each (a few grid cells, each
/// listing few labels: placed padded boxes do not overlap) and at most one measurement.
/// Memory: about 180 B per placed label at street zoom (48 B label, 24 B rank, ~100 B of
/// collision cells) plus 4 B per slot of the layer (see `approximateBytes`).
///
/// Measured (release, fake measurer, 2 shared cores under load, clustered places): 1M labelled
/// markers from scratch 1.7 s at pz 0 and 3 (a quarter measured), 3-4.4 s at pz 10 and 14.
public struct LabelPlacement: Sendable {
    /// The pixel zoom (0...23).
    public let pixelZoom: Int
    /// `256 << pixelZoom` px.
    public let worldWidth: Int64
    /// The style and tile size the placement was made with (`update` rebuilds when they change).
    let style: LabelStyle
    let tileSize: Int
    /// `style.padding` rounded up to whole px.
    let pad: Int64
    /// Placed labels, in no particular order, and their ranks.
    public internal(set) var labels: [PlacedLabel] = []
    var ranks: [LabelRank] = []
    /// Slot -> index into `labels`, -1 when the slot has no placed label.
    var indexOfSlot: [Int32] = []
    var grid: CollisionGrid
    /// The largest side of any label measured so far (px; at least the probe's): how far a
    /// label's candidates reach from its icon beyond `gap`.
    var reach: Int64
    /// Fewest queued labels before `update` gives up propagating and places from scratch
    /// (tests lower it).
    var minQueueBeforeRebuild = 4096

    /// Places the layer's labels from scratch at pixel zoom `pz` (0...23; traps outside).
    public init(layer: MarkerLayer, pixelZoom pz: Int, measurer: some LabelMeasurer, now: Int64) {
        precondition((0...23).contains(pz), "pixel zoom \(pz) is not within 0...23")
        pixelZoom = pz
        worldWidth = Int64(256) << Int64(pz)
        style = layer.labelStyle
        tileSize = layer.options.tileSize
        pad = Int64(CoreMath.ceil(Double(layer.labelStyle.padding)))
        grid = CollisionGrid(worldWidth: worldWidth)
        let least = LabelGeometry.minimumSize(layer.labelStyle.text)
        reach = Swift.max(least.width, least.height)
        indexOfSlot = Array(repeating: -1, count: layer.table.slotCount)
        guard isActive else { return }
        var order: [(rank: LabelRank, text: String)] = []
        for s in 0..<Int32(layer.table.slotCount) where layer.isStatic(s, now: now) {
            if let text = layer.labelText(slot: s) { order.append((layer.labelRank(s), text)) }
        }
        order.sort { layer.placedBefore($0.rank, $1.rank) }
        for (r, text) in order {
            if let p = decide(r, text: text, layer: layer, measurer: measurer) { insert(p, rank: r) }
        }
    }

    /// Labels are drawn at this zoom: enabled, and the tile zoom is at least `minZoom`.
    var isActive: Bool {
        style.enabled && pixelZoom - (tileSize == 512 ? 1 : 0) >= style.minZoom
    }

    /// Number of placed labels.
    public var count: Int { labels.count }

    /// Approximate bytes held (array capacities and the collision grid).
    public var approximateBytes: Int {
        labels.capacity * MemoryLayout<PlacedLabel>.stride + ranks.capacity * MemoryLayout<LabelRank>.stride
            + indexOfSlot.capacity * 4 + grid.approximateBytes
    }

    // MARK: Queries

    /// The placed label of a slot, or nil (no label, dropped, or a slot beyond the layer's).
    public func label(slot: Int32) -> PlacedLabel? {
        guard slot >= 0, Int(slot) < indexOfSlot.count, indexOfSlot[Int(slot)] >= 0 else { return nil }
        return labels[Int(indexOfSlot[Int(slot)])]
    }

    /// The placed labels whose box intersects the half-open px rectangle [x0, x1) x [y0, y1)
    /// (x may reach outside [0, W)), once per world copy that intersects it: the returned box's
    /// x is shifted by that copy's multiple of `W`, so it is where to draw the label. Sorted by
    /// slot, then x. Cost: O(cells of the rectangle + labels listed there).
    public func labels(inPixelRect x0: Int64, _ y0: Int64, _ x1: Int64, _ y1: Int64) -> [PlacedLabel] {
        guard x0 < x1, y0 < y1 else { return [] }
        var seen = Set<Int32>()
        var out: [PlacedLabel] = []
        _ = grid.first(x0: x0, y0: y0, x1: x1, y1: y1) { s in
            guard seen.insert(s).inserted, let p = label(slot: s), p.box.y < y1, y0 < p.box.y + p.box.height else { return false }
            // Copies k with p.box.x + k W < x1 and p.box.x + width + k W > x0.
            var k = floorDiv(x0 - p.box.x - p.box.width, worldWidth)
            while p.box.x + k * worldWidth < x1 {
                if p.box.x + p.box.width + k * worldWidth > x0 {
                    var c = p
                    c.box.x += k * worldWidth
                    out.append(c)
                }
                k += 1
            }
            return false
        }
        out.sort { ($0.slot, $0.box.x) < ($1.slot, $1.box.x) }
        return out
    }

    /// The labels to draw into a raster tile (see `labels(inPixelRect:_:_:_:)`), with boxes
    /// relative to the global px grid. Traps unless `tile.z` is this placement's tile zoom
    /// for `tileSize` (256 or 512).
    public func labels(inTile tile: TileID, tileSize: Int) -> [PlacedLabel] {
        precondition(tile.z + (tileSize == 512 ? 1 : 0) == pixelZoom && (tileSize == 256 || tileSize == 512),
                     "tile \(tile) of \(tileSize) px is not at pixel zoom \(pixelZoom)")
        let n = Int64(tileSize), x = Int64(tile.x) * n, y = Int64(tile.y) * n
        return labels(inPixelRect: x, y, x + n, y + n)
    }

    /// The placed label whose box contains the world px point (x, y) (density 1; x wraps), or
    /// nil. Placed boxes do not overlap, so at most one does. Cost O(1).
    public func label(atPixelX x: Double, y: Double) -> PlacedLabel? {
        guard x.isFinite, y.isFinite else { return nil }
        let w = Double(worldWidth)
        var px = x.truncatingRemainder(dividingBy: w)
        if px < 0 { px += w }
        let cx = Int64(CoreMath.floor(px)), cy = Int64(CoreMath.floor(y))
        var hit: PlacedLabel? = nil
        _ = grid.first(x0: cx, y0: cy, x1: cx + 1, y1: cy + 1) { s in
            guard let p = label(slot: s), y >= Double(p.box.y), y < Double(p.box.y + p.box.height) else { return false }
            var dx = px - Double(p.box.x)
            if dx < 0 { dx += w }
            if dx < Double(p.box.width) { hit = p; return true }
            return false
        }
        return hit
    }

    // MARK: Deciding

    /// The first position of the label of rank `r` whose padded box overlaps no padded box of a
    /// placed label ranked before it, or nil. Measures the text (`text`, else looked up) at most
    /// once, and only when a probe (the box of the minimum size) fits.
    mutating func decide(_ r: LabelRank, text: String? = nil, layer: MarkerLayer, measurer: some LabelMeasurer) -> PlacedLabel? {
        let s = Int(r.slot)
        let (ax, ay) = LabelGeometry.anchor(WorldPoint(x: layer.table.x[s], y: layer.table.y[s]), pixelZoom: pixelZoom)
        let e = layer.styles.extents[Int(layer.table.style[s])]
        let least = LabelGeometry.minimumSize(style.text)
        var size: (width: Int64, height: Int64)? = nil
        for position in style.positions {
            func candidate(_ w: Int64, _ h: Int64) -> LabelBox {
                LabelGeometry.box(anchorX: ax, anchorY: ay, extents: e, width: w, height: h, gap: style.gap,
                                  position: position, worldWidth: worldWidth)
            }
            if collides(candidate(least.width, least.height), r, layer) { continue }
            if size == nil {
                guard let text = text ?? layer.labelText(slot: r.slot) else { return nil }
                let sz = LabelGeometry.wholeSize(measurer.measure(text, style: style.text), style: style.text)
                reach = Swift.max(reach, sz.width, sz.height)
                size = sz
            }
            let b = candidate(size!.width, size!.height)
            if !collides(b, r, layer) { return PlacedLabel(slot: r.slot, box: b, position: position) }
        }
        return nil
    }

    /// Whether `b` grown by `pad` overlaps the grown box of a placed label ranked before `r`.
    func collides(_ b: LabelBox, _ r: LabelRank, _ layer: MarkerLayer) -> Bool {
        grid.first(x0: b.x - pad, y0: b.y - pad, x1: b.x + b.width + pad, y1: b.y + b.height + pad) { s in
            guard s != r.slot else { return false }
            let i = Int(indexOfSlot[Int(s)])
            return LabelGeometry.overlap(labels[i].box, b, pad: pad, worldWidth: worldWidth) && layer.placedBefore(ranks[i], r)
        }
    }

    mutating func insert(_ p: PlacedLabel, rank: LabelRank) {
        indexOfSlot[Int(p.slot)] = Int32(labels.count)
        labels.append(p)
        ranks.append(rank)
        let b = p.box
        grid.insert(p.slot, x0: b.x - pad, y0: b.y - pad, x1: b.x + b.width + pad, y1: b.y + b.height + pad)
    }

    mutating func remove(slot: Int32) {
        let i = Int(indexOfSlot[Int(slot)])
        let b = labels[i].box
        grid.remove(slot, x0: b.x - pad, y0: b.y - pad, x1: b.x + b.width + pad, y1: b.y + b.height + pad)
        indexOfSlot[Int(slot)] = -1
        let last = labels.count - 1
        if i != last {
            labels[i] = labels[last]; ranks[i] = ranks[last]
            indexOfSlot[Int(labels[i].slot)] = Int32(i)
        }
        labels.removeLast(); ranks.removeLast()
    }

    @inline(__always) private func floorDiv(_ a: Int64, _ b: Int64) -> Int64 {
        let q = a / b
        return a % b != 0 && (a < 0) != (b < 0) ? q - 1 : q
    }
}

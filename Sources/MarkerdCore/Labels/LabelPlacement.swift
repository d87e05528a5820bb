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
/// collision cells) plus 4 B per slot of the layer; a complete placement also 16 B per slot
/// (`blockedBy`) and 8 B per watch-list entry (about 3.5 per label at pixel zoom 0 for 1M real
/// places: about 50 MB in all). See `approximateBytes`.
///
/// Measured (release, fake measurer, 2 shared cores under load, clustered places): 1M labelled
/// markers from scratch 1.7 s at pz 0 and 3 (a quarter measured), 3-4.4 s at pz 10 and 14.
///
/// Lazy placement (`Mode.lazy`): the greedy decision of a label depends only on the decisions
/// of the labels ranked before it whose candidate boxes can reach its own, recursively; so the
/// labels of one region are decided exactly, with the same result as the eager placement, by
/// deciding only what they depend on (`decide(pixelRect:_:_:_:layer:measurer:now:)`). A label
/// tests its candidates as above; before taking one it decides, best ranked first, the
/// undecided labels ranked before it that could reach that box (searched in the layer's index
/// within `LabelGeometry.maximumSize` + gap + padding), stopping at the first placed one that
/// overlaps. At street zoom a tile decides its own labels and a few hundred around them.
///
/// Not thread-safe as a value under mutation: `decide` and `update` mutate; queries read.
public struct LabelPlacement: Sendable {
    /// How a placement decides its labels; every mode gives the same labels.
    public enum Mode: Sendable {
        /// Every label at once, in `init` (O(n log n); right when most labels collide anyway).
        case eager
        /// Only on demand: `decide(pixelRect:...)` before reading a region (right at street zoom).
        case lazy
        /// Lazy when the world at this zoom holds at least 64 x 64 px per marker of the layer
        /// (`W * W >= 4096 * markers`: pz >= 8 for 1M markers, pz >= 5 for 20,000), else eager.
        case automatic
    }

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
    /// Slot -> index into `labels` (>= 0), `undecided` (-1; in a complete placement: no label
    /// placed) or `dropped` (-2: decided, no label placed).
    var indexOfSlot: [Int32] = []
    static let undecided: Int32 = -1, dropped: Int32 = -2
    var grid: CollisionGrid
    /// Complete placements: who each placed label blocks (see `WatchLists`), what `update`
    /// re-decides when it leaves; and per slot the placed labels its label found blocking its
    /// candidates when last decided (`maxPositions` per slot, -1: none), which tells a current
    /// watch-list entry from a stale one. Empty in lazy placements (their updates search the
    /// layer's index instead: few labels within reach at street zoom).
    var watchers = WatchLists()
    var blockedBy: [Int32] = []
    static let maxPositions = 4
    /// The largest side of any label measured so far (px; at least the probe's): how far a
    /// decided label's candidates reach from its icon beyond `gap`.
    var reach: Int64
    /// Every labelled marker is decided: an eager placement, or a lazy one that completed.
    public internal(set) var isComplete: Bool
    /// Lazy: the 256 px cells of the rectangles `decide(pixelRect:...)` was called for (tiles
    /// may have been drawn there), and those rectangles that meet more than `maxCoverCells`
    /// cells. `update` decides a changed label that could reach one.
    var covered: Set<UInt64> = []
    var coveredRects: [LabelBox] = []
    static let maxCoverCells = 1024
    /// Labels decided plus markers visited by lazy neighbour searches so far (a counter for
    /// the work bound of `decide(pixelRect:...)`).
    var work = 0
    /// Fewest queued labels before `update` gives up propagating and places from scratch
    /// (tests lower it).
    var minQueueBeforeRebuild = 4096
    /// Least work (see `work`) one `decide(pixelRect:...)` call does before it completes the
    /// placement eagerly instead (tests lower it).
    var minWorkBeforeCompleting = 65536

    /// A placement of the layer's labels at pixel zoom `pz` (0...23; traps outside). `.eager`
    /// (default) places every label now; `.lazy` nothing yet (see `decide(pixelRect:...)`);
    /// `.automatic` picks by the rule its doc states.
    public init(layer: MarkerLayer, pixelZoom pz: Int, measurer: some LabelMeasurer, now: Int64, mode: Mode = .eager) {
        precondition((0...23).contains(pz), "pixel zoom \(pz) is not within 0...23")
        pixelZoom = pz
        worldWidth = Int64(256) << Int64(pz)
        style = layer.labelStyle
        tileSize = layer.options.tileSize
        pad = Int64(CoreMath.ceil(Double(layer.labelStyle.padding)))
        grid = CollisionGrid(worldWidth: worldWidth)
        let least = LabelGeometry.minimumSize(layer.labelStyle.text)
        reach = Swift.max(least.width, least.height)
        indexOfSlot = Array(repeating: Self.undecided, count: layer.table.slotCount)
        switch mode {
        case .eager: isComplete = true
        case .lazy: isComplete = false
        case .automatic: isComplete = worldWidth * worldWidth < 4096 * Int64(Swift.max(1, layer.table.count))
        }
        if isComplete && isActive {
            blockedBy = Array(repeating: -1, count: Self.maxPositions * layer.table.slotCount)
            complete(layer: layer, measurer: measurer, now: now)
        }
    }

    /// Decides every undecided label in rank order (the eager placement): each finds every label
    /// ranked before it decided. O(slots + u log u + u decisions) for u undecided labels.
    private mutating func complete(layer: MarkerLayer, measurer: some LabelMeasurer, now: Int64) {
        var order: [(rank: LabelRank, text: String)] = []
        for s in 0..<Int32(layer.table.slotCount) where indexOfSlot[Int(s)] == Self.undecided && layer.isStatic(s, now: now) {
            if let text = layer.labelText(slot: s) { order.append((layer.labelRank(s), text)) }
        }
        order.sort { layer.placedBefore($0.rank, $1.rank) }
        for (r, text) in order {
            var f = Frame(rank: r)
            guard case .decided(let p) = advance(&f, text: text, layer: layer, measurer: measurer) else {
                preconditionFailure("a label in rank order waits for none")
            }
            settle(r, p, blockers: f.blockers)
        }
        isComplete = true
    }

    /// Labels are drawn at this zoom: enabled, and the tile zoom is at least `minZoom`.
    var isActive: Bool {
        style.enabled && pixelZoom - (tileSize == 512 ? 1 : 0) >= style.minZoom
    }

    /// Number of placed labels (decided so far, when lazy).
    public var count: Int { labels.count }

    /// Approximate bytes held (array capacities, the collision grid and the covered cells).
    public var approximateBytes: Int {
        labels.capacity * MemoryLayout<PlacedLabel>.stride + ranks.capacity * MemoryLayout<LabelRank>.stride
            + indexOfSlot.capacity * 4 + grid.approximateBytes + covered.capacity * 9
            + coveredRects.capacity * MemoryLayout<LabelBox>.stride + watchers.approximateBytes + blockedBy.capacity * 4
    }

    // MARK: Queries
    //
    // A complete placement answers every query exactly. A lazy one answers from the labels
    // decided so far: a query over a rectangle is exact once `decide(pixelRect:...)` covered it
    // (since the placement was made or last rebuilt by `update`); `label(slot:)` is exact for a
    // marker whose icon lies in a covered rectangle (nil otherwise may mean undecided).

    /// The placed label of a slot, or nil (no label, dropped, undecided, or a slot beyond the layer's).
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
        let (x, y, n) = pixelRect(tile, tileSize)
        return labels(inPixelRect: x, y, x + n, y + n)
    }

    /// A tile's px origin and side at this pixel zoom; traps unless the tile is at it.
    private func pixelRect(_ tile: TileID, _ tileSize: Int) -> (x: Int64, y: Int64, side: Int64) {
        precondition(tile.z + (tileSize == 512 ? 1 : 0) == pixelZoom && (tileSize == 256 || tileSize == 512),
                     "tile \(tile) of \(tileSize) px is not at pixel zoom \(pixelZoom)")
        let n = Int64(tileSize)
        return (Int64(tile.x) * n, Int64(tile.y) * n, n)
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

    /// Lazy: decides every labelled marker whose icon or label candidates could meet the
    /// half-open px rectangle [x0, x1) x [y0, y1) (x may reach outside [0, W): it wraps), and
    /// first the labels their decisions depend on. Decisions are final until `update`. Call it
    /// before reading the rectangle (see Queries); a no-op when complete or inactive.
    ///
    /// Cost: one index search over the rectangle widened by the largest label's reach, then per
    /// label decided one index search around it (markers within about 2 x (icon + gap + largest
    /// label) px) and O(positions) collision tests; labels measured only where a probe fits.
    /// When one call has decided and visited more than max(65536, markers / 4) labels and markers
    /// (a dense region at middle zoom, a huge rectangle), it completes the placement eagerly
    /// instead (O(n log n), once): a call costs at most about twice an eager placement.
    ///
    /// Measured (release, fake measurer, 1M clustered real names, loaded 2-core host): a z14 tile
    /// in Paris 6-7.5 ms cold (260-330 labels decided), its neighbour 0.5-0.8 ms; a z10 tile there
    /// reaches the bound and completes: 3.3 s, as an eager placement (3.1 s).
    public mutating func decide(pixelRect x0: Int64, _ y0: Int64, _ x1: Int64, _ y1: Int64, layer: MarkerLayer,
                                measurer: some LabelMeasurer, now: Int64) {
        guard isActive, !isComplete, x0 < x1, y0 < y1 else { return }
        cover(x0, y0, x1, y1)
        var roots: [LabelRank] = []
        forEachNearby(LabelBox(x: x0, y: y0, width: x1 - x0, height: y1 - y0), side: largestSide, layer: layer, now: now) { s in
            if indexOfSlot[Int(s)] == Self.undecided && layer.isLabelled(slot: s, now: now) { roots.append(layer.labelRank(s)) }
        }
        roots.sort { layer.placedBefore($0, $1) }
        let limit = work + Swift.max(minWorkBeforeCompleting, layer.table.count / 4)
        for r in roots where indexOfSlot[Int(r.slot)] == Self.undecided {
            let (done, p, blockers) = decideWithNeeds(r, layer: layer, measurer: measurer, now: now, limit: limit)
            guard done else {
                // The same labels as completing the lazy one, with the blockers recorded.
                let knobs = (minQueueBeforeRebuild, minWorkBeforeCompleting)
                self = LabelPlacement(layer: layer, pixelZoom: pixelZoom, measurer: measurer, now: now, mode: .eager)
                (minQueueBeforeRebuild, minWorkBeforeCompleting) = knobs
                return
            }
            settle(r, p, blockers: blockers)
        }
    }

    /// `decide(pixelRect:...)` for a raster tile's area; traps like `labels(inTile:tileSize:)`.
    public mutating func decide(tile: TileID, tileSize: Int, layer: MarkerLayer, measurer: some LabelMeasurer, now: Int64) {
        let (x, y, n) = pixelRect(tile, tileSize)
        decide(pixelRect: x, y, x + n, y + n, layer: layer, measurer: measurer, now: now)
    }

    /// A label being decided: where it is in its candidates (position index, probe or measured
    /// size) and the undecided labels ranked before it that could reach one of them, best first
    /// (`cursor`: those before it cannot reach the box being tested, or are decided), and the
    /// placed labels found blocking the candidates passed over.
    struct Frame {
        var rank: LabelRank
        var near: [LabelRank] = []
        var position = 0
        var size: (width: Int64, height: Int64)? = nil
        var cursor = 0
        var blockers = Blockers()
    }

    /// The distinct slots that blocked a label's candidates (one per candidate at most: 1-4).
    struct Blockers {
        private var slots: (Int32, Int32, Int32, Int32) = (-1, -1, -1, -1)
        private var count = 0

        mutating func add(_ s: Int32) {
            switch count {
            case 0: slots.0 = s
            case 1: guard slots.0 != s else { return }; slots.1 = s
            case 2: guard slots.0 != s && slots.1 != s else { return }; slots.2 = s
            case 3: guard slots.0 != s && slots.1 != s && slots.2 != s else { return }; slots.3 = s
            default: return
            }
            count += 1
        }

        func forEach(_ body: (Int32) -> Void) {
            if count > 0 { body(slots.0) }
            if count > 1 { body(slots.1) }
            if count > 2 { body(slots.2) }
            if count > 3 { body(slots.3) }
        }
    }

    enum Step {
        case decided(PlacedLabel?)
        /// This undecided label, ranked before, could reach the box being tested: decide it first.
        case needs(LabelRank)
    }

    /// Greedy for one label: tests its candidates in order, the probe (minimum size) before the
    /// measured box, against the placed labels ranked before it; a box that no placed label
    /// blocks is taken once no undecided label in `near` could reach it. Measures the text
    /// (`text`, else looked up) at most once, and only when a probe fits.
    mutating func advance(_ f: inout Frame, text: String? = nil, layer: MarkerLayer, measurer: some LabelMeasurer) -> Step {
        let s = Int(f.rank.slot)
        let (ax, ay) = LabelGeometry.anchor(WorldPoint(x: layer.table.x[s], y: layer.table.y[s]), pixelZoom: pixelZoom)
        let e = layer.styles.extents[Int(layer.table.style[s])]
        while f.position < style.positions.count {
            let size = f.size ?? LabelGeometry.minimumSize(style.text)
            let b = LabelGeometry.box(anchorX: ax, anchorY: ay, extents: e, width: size.width, height: size.height, gap: style.gap,
                                      position: style.positions[f.position], worldWidth: worldWidth)
            if let blocker = blocker(of: b, f.rank, layer) {
                f.blockers.add(blocker)
                f.position += 1; f.cursor = 0
                continue
            }
            while f.cursor < f.near.count {
                let m = f.near[f.cursor]
                if indexOfSlot[Int(m.slot)] == Self.undecided
                    && LabelGeometry.overlap(candidateBounds(m.slot, layer), b, pad: pad, worldWidth: worldWidth) { return .needs(m) }
                f.cursor += 1
            }
            if f.size == nil {
                guard let text = text ?? layer.labelText(slot: f.rank.slot) else { return .decided(nil) }
                let sz = LabelGeometry.wholeSize(measurer.measure(text, style: style.text), style: style.text)
                reach = Swift.max(reach, sz.width, sz.height)
                f.size = sz; f.cursor = 0
                continue
            }
            return .decided(PlacedLabel(slot: f.rank.slot, box: b, position: style.positions[f.position]))
        }
        return .decided(nil)
    }

    /// The decision of `root`, after deciding (and settling) the undecided labels it needs, depth
    /// first on an explicit stack (each pushed label ranked before the one below it, so none
    /// twice). `root` itself is not settled (`update` compares it with its old decision): its
    /// decision comes back with its blockers. Not done when `work` reached `limit` (the frames
    /// left are undecided).
    mutating func decideWithNeeds(_ root: LabelRank, layer: MarkerLayer, measurer: some LabelMeasurer, now: Int64,
                                  limit: Int = .max) -> (done: Bool, label: PlacedLabel?, blockers: Blockers) {
        var stack = [Frame(rank: root, near: isComplete ? [] : undecidedBefore(root, layer: layer, now: now))]
        while true {
            switch advance(&stack[stack.count - 1], layer: layer, measurer: measurer) {
            case .needs(let m):
                guard work < limit else { return (false, nil, Blockers()) }
                stack.append(Frame(rank: m, near: undecidedBefore(m, layer: layer, now: now)))
            case .decided(let p):
                let f = stack.removeLast()
                if stack.isEmpty { return (true, p, f.blockers) }
                settle(f.rank, p, blockers: f.blockers)
            }
        }
    }

    /// The undecided labelled markers ranked before `r` whose candidates could reach one of
    /// `r`'s, best ranked first. One search of the layer's index.
    mutating func undecidedBefore(_ r: LabelRank, layer: MarkerLayer, now: Int64) -> [LabelRank] {
        var out: [LabelRank] = []
        var visited = 0
        forEachNearby(candidateBounds(r.slot, layer), side: largestSide, layer: layer, now: now) { s in
            visited += 1
            guard s != r.slot, indexOfSlot[Int(s)] == Self.undecided, layer.isLabelled(slot: s, now: now) else { return }
            let m = layer.labelRank(s)
            if layer.placedBefore(m, r) { out.append(m) }
        }
        out.sort { layer.placedBefore($0, $1) }
        work += visited
        return out
    }

    /// Records a decision: places the label or marks the slot dropped, and (complete) records
    /// the labels that blocked its other candidates.
    mutating func settle(_ r: LabelRank, _ p: PlacedLabel?, blockers: Blockers) {
        if let p { insert(p, rank: r) } else { indexOfSlot[Int(r.slot)] = Self.dropped }
        watch(r.slot, blockers)
        work += 1
    }

    /// Complete placements: records `blockers` as what blocked the slot's label, listing it as a
    /// watcher of those not recorded before (a no-op in lazy placements).
    mutating func watch(_ slot: Int32, _ blockers: Blockers) {
        guard !blockedBy.isEmpty else { return }
        let base = Self.maxPositions * Int(slot)
        var k = 0
        blockers.forEach { b in
            if !isWatching(slot, b) { watchers.add(slot, blockedBy: b) }
        }
        blockers.forEach { b in blockedBy[base + k] = b; k += 1 }
        while k < Self.maxPositions { blockedBy[base + k] = -1; k += 1 }
    }

    /// Forgets `blocker` from the slot's record (its watch list was taken).
    mutating func unwatch(_ slot: Int32, _ blocker: Int32) {
        let base = Self.maxPositions * Int(slot)
        for k in base..<base + Self.maxPositions where blockedBy[k] == blocker { blockedBy[k] = -1 }
    }

    /// Whether the slot's label recorded `blocker` when last decided (complete placements).
    func isWatching(_ slot: Int32, _ blocker: Int32) -> Bool {
        let base = Self.maxPositions * Int(slot)
        guard base < blockedBy.count else { return false }
        return blockedBy[base] == blocker || blockedBy[base + 1] == blocker || blockedBy[base + 2] == blocker
            || blockedBy[base + 3] == blocker
    }

    /// The largest side of any label box (`LabelGeometry.maximumSize`): how far an undecided
    /// label's candidates may reach beyond `gap`.
    var largestSide: Int64 {
        let m = LabelGeometry.maximumSize(style.text)
        return Swift.max(m.width, m.height)
    }

    /// A box holding every candidate box of the marker's label, whatever its size up to
    /// `LabelGeometry.maximumSize` (x wrapped into [0, W); it may be wider than the world).
    func candidateBounds(_ slot: Int32, _ layer: MarkerLayer) -> LabelBox {
        let s = Int(slot)
        let (ax, ay) = LabelGeometry.anchor(WorldPoint(x: layer.table.x[s], y: layer.table.y[s]), pixelZoom: pixelZoom)
        let e = layer.styles.extents[Int(layer.table.style[s])], g = Double(style.gap)
        let most = LabelGeometry.maximumSize(style.text)
        func out(_ v: Double) -> Int64 { Int64(CoreMath.ceil(v + g)) + 1 }
        let x0 = ax - out(e.left) - most.width, x1 = ax + out(e.right) + most.width
        let y0 = ay - out(e.up) - most.height, y1 = ay + out(e.down) + most.height
        let x = x0 % worldWidth
        return LabelBox(x: x < 0 ? x + worldWidth : x, y: y0, width: x1 - x0, height: y1 - y0)
    }

    /// Adds the 256 px cells the rectangle meets to `covered` (columns wrapped), or the
    /// rectangle to `coveredRects` when it meets more than `maxCoverCells`.
    mutating func cover(_ x0: Int64, _ y0: Int64, _ x1: Int64, _ y1: Int64) {
        let columns = Swift.min((x1 - 1) >> 8 - x0 >> 8 + 1, worldWidth >> 8), rows = (y1 - 1) >> 8 - y0 >> 8 + 1
        if columns * rows > Self.maxCoverCells {
            let x = x0 % worldWidth
            coveredRects.append(LabelBox(x: x < 0 ? x + worldWidth : x, y: y0, width: Swift.min(x1 - x0, worldWidth), height: y1 - y0))
        } else {
            forEachCoveredCell(x0, y0, x1, y1) { covered.insert($0); return false }
        }
    }

    /// Whether the rectangle grown by `pad` meets a covered cell or rectangle.
    func meetsCovered(_ b: LabelBox) -> Bool {
        coveredRects.contains { LabelGeometry.overlap($0, b, pad: pad, worldWidth: worldWidth) }
            || !covered.isEmpty && forEachCoveredCell(b.x - pad, b.y - pad, b.x + b.width + pad, b.y + b.height + pad) { covered.contains($0) }
    }

    /// Calls `body` with the key of each 256 px cell of a half-open px rectangle until it returns
    /// true; returns whether it did.
    @discardableResult
    func forEachCoveredCell(_ x0: Int64, _ y0: Int64, _ x1: Int64, _ y1: Int64, _ body: (UInt64) -> Bool) -> Bool {
        let columns = worldWidth >> 8
        let c0 = x0 >> 8, c1 = Swift.min((x1 - 1) >> 8, c0 + columns - 1)
        for r in (y0 >> 8)...((y1 - 1) >> 8) {
            for c in c0...c1 {
                var col = c % columns
                if col < 0 { col += columns }
                if body(UInt64(col) << 32 | UInt64(UInt32(truncatingIfNeeded: r))) { return true }
            }
        }
        return false
    }

    /// The best-ranked placed label ranked before `r` whose grown box overlaps `b` grown by
    /// `pad`, if any. The best-ranked one, because it is the least likely to leave (`watchers`:
    /// low-ranked labels filling gaps between big ones are the ones pushed out by writes, and a
    /// label they block alone is all their leaving re-decides).
    /// `orItself`: the label of `r` itself counts too.
    func blocker(of b: LabelBox, _ r: LabelRank, _ layer: MarkerLayer, orItself: Bool = false) -> Int32? {
        var best = -1
        _ = grid.first(x0: b.x - pad, y0: b.y - pad, x1: b.x + b.width + pad, y1: b.y + b.height + pad) { s in
            guard s != r.slot || orItself else { return false }
            let i = Int(indexOfSlot[Int(s)])
            if i != best && (best < 0 || layer.placedBefore(ranks[i], ranks[best]))
                && LabelGeometry.overlap(labels[i].box, b, pad: pad, worldWidth: worldWidth)
                && (s == r.slot || layer.placedBefore(ranks[i], r)) {
                best = i
            }
            return false
        }
        return best < 0 ? nil : labels[best].slot
    }

    /// Calls `body` with the slot of each placed label whose grown box overlaps `b` grown by `pad`
    /// (a label once per grid cell it shares with `b`).
    func forEachPlaced(overlapping b: LabelBox, _ body: (Int32) -> Void) {
        _ = grid.first(x0: b.x - pad, y0: b.y - pad, x1: b.x + b.width + pad, y1: b.y + b.height + pad) { s in
            if LabelGeometry.overlap(labels[Int(indexOfSlot[Int(s)])].box, b, pad: pad, worldWidth: worldWidth) { body(s) }
            return false
        }
    }

    mutating func insert(_ p: PlacedLabel, rank: LabelRank) {
        indexOfSlot[Int(p.slot)] = Int32(labels.count)
        labels.append(p)
        ranks.append(rank)
        let b = p.box
        grid.insert(p.slot, x0: b.x - pad, y0: b.y - pad, x1: b.x + b.width + pad, y1: b.y + b.height + pad)
    }

    /// Takes a placed label out of the grid (`update` takes its watch list first).
    mutating func remove(slot: Int32) {
        let i = Int(indexOfSlot[Int(slot)])
        let b = labels[i].box
        grid.remove(slot, x0: b.x - pad, y0: b.y - pad, x1: b.x + b.width + pad, y1: b.y + b.height + pad)
        indexOfSlot[Int(slot)] = Self.undecided
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

import MarkerdCore

/// The node sweep (`TileRenderer`, step 4 of its documentation): draws walked from the top of the
/// draw order down, grid nodes of static markers opened only when what comes later does not
/// settle every pixel their markers could draw.
extension TileRenderer {
    /// Where any marker's sprite can reach, per device row relative to the marker's device pixel:
    /// rows `top ..< top + lo.count`, in row `top + i` the columns `lo[i] ..< hi[i]` relative to
    /// the marker's pixel column (empty rows: `lo >= hi`).
    struct Footprint {
        var top: Int
        var lo: [Int]
        var hi: [Int]
        /// Smallest `lo`, largest `hi` (the bounding box's columns).
        var minLo: Int { lo.min() ?? 0 }
        var maxHi: Int { hi.max() ?? 0 }

        /// The union of the sprites' non-transparent row spans (`RGBAImage.rowSpans`), each placed
        /// at its anchor.
        init(_ sprites: [TileSprite]) {
            var rows: [Int: (Int, Int)] = [:]
            for s in sprites where !s.isBlank {
                for r in 0..<s.height {
                    let (a, b) = s.image.rowSpans.isEmpty ? (0, s.width) : (Int(s.image.rowSpans[2 * r]), Int(s.image.rowSpans[2 * r + 1]))
                    if a >= b { continue }
                    let k = r - s.anchorY, u = rows[k] ?? (Int.max, Int.min)
                    rows[k] = (min(u.0, a - s.anchorX), max(u.1, b - s.anchorX))
                }
            }
            let t = rows.keys.min() ?? 0
            let n = rows.isEmpty ? 0 : rows.keys.max()! - t + 1
            top = t
            lo = (0..<n).map { rows[t + $0]?.0 ?? Int.max / 4 }
            hi = (0..<n).map { rows[t + $0]?.1 ?? Int.min / 4 }
        }

        /// A box around the anchor: `extents` (px at density 1) times `density`, plus 1 px.
        init(box e: IconExtents, density: Int) {
            let d = Double(density)
            top = -Int((e.up * d).rounded(.up)) - 1
            let n = Int((e.down * d).rounded(.up)) + 2 - top
            lo = Array(repeating: -Int((e.left * d).rounded(.up)) - 1, count: n)
            hi = Array(repeating: Int((e.right * d).rounded(.up)) + 2, count: n)
        }
    }

    /// Styles in use up to this many get an exact footprint (their sprites); more get a box.
    static let footprintStyles = 64
    /// Nodes spanning more device px than this (rows, columns) are opened without a test.
    static let testedNodeRows = 64, testedNodeColumns = 256

    /// Whether `render` takes the sweep (see `init(sprites:culling:sweepAbove:)`).
    public func usesSweep(_ layer: MarkerLayer, _ view: RasterView) -> Bool {
        guard culling == .withinOne, let root = layer.staticSweepRoot else { return false }
        return TileRenderer.estimate(layer, root, view, atLeast: sweepAbove) >= sweepAbove
    }

    /// An upper bound of the static markers around `view` (widened by half its size each way),
    /// from grid node counts: nodes no larger than the view count whole; stops once `atLeast` is
    /// reached.
    static func estimate(_ layer: MarkerLayer, _ root: TileSweepNode, _ view: RasterView, atLeast: Int) -> Int {
        if atLeast <= 0 { return 0 }
        let spanX = Double(view.width) / view.scale, spanY = Double(view.height) / view.scale
        let x0 = Double(view.originX) / view.scale - spanX / 2, x1 = x0 + 2 * spanX
        let y0 = Double(view.originY) / view.scale - spanY / 2, y1 = y0 + 2 * spanY
        if x1 - x0 >= 4_294_967_296 || x0 < 0 || x1 > 4_294_967_296 { return root.count }
        var total = 0
        var frontier = [root]
        while let n = frontier.popLast() {
            if Double(n.maxX) < x0 || Double(n.minX) > x1 || Double(n.maxY) < y0 || Double(n.minY) > y1 { continue }
            if n.isLeaf || Double(n.maxX - n.minX) <= spanX {
                total += n.count
                if total >= atLeast { return total }
                continue
            }
            layer.forEachChild(of: n) { frontier.append($0) }
        }
        return total
    }

    /// A heap entry: a node (`ref >= 0`, index into the sweep's nodes) or a marker (`ref < 0`,
    /// `~ref` indexes the pending candidates), keyed by the (z-index, world y) bound of the draw order.
    private struct Event: Comparable {
        var key: UInt64
        var ref: Int32
        /// `a` comes out of the heap first: later in the draw order (higher key; at equal keys
        /// nodes before draws).
        @inline(__always) static func < (a: Event, b: Event) -> Bool {
            a.key != b.key ? a.key > b.key : a.ref >= 0 && b.ref < 0
        }
    }

    @inline(__always) private static func key(z: Int32, y: UInt32) -> UInt64 {
        UInt64(UInt32(bitPattern: z) ^ 0x8000_0000) << 32 | UInt64(y)
    }

    /// The device-pixel rows of node `n`'s markers and the world copies (bit k + 1 for copy k
    /// in -1, 0, 1) whose footprint touches the canvas; nil when none does.
    private func placement(_ n: TileSweepNode, _ view: RasterView, _ fp: Footprint, _ minLo: Int, _ maxHi: Int)
        -> (py0: Int, py1: Int, copies: UInt8)? {
        let py0 = Int(view.pixelY(n.minY)), py1 = Int(view.pixelY(n.maxY))
        if py1 + fp.top + fp.lo.count <= 0 || py0 + fp.top >= view.height { return nil }
        var copies: UInt8 = 0
        for k in -1...1 {
            let px0 = Int(view.pixelX(n.minX, copy: k)), px1 = Int(view.pixelX(n.maxX, copy: k))
            if px1 + maxHi > 0 && px0 + minLo < view.width { copies |= 1 << UInt8(k + 1) }
        }
        return copies == 0 ? nil : (py0, py1, copies)
    }

    /// Whether every pixel of node `n`'s footprint inside the canvas is settled in `mask` (false
    /// without looking for nodes spanning more than `testedNodeRows` x `testedNodeColumns`).
    private func settled(_ n: TileSweepNode, _ view: RasterView, _ fp: Footprint, _ minLo: Int, _ maxHi: Int,
                         _ mask: inout CoverageMask) -> Bool {
        guard let (py0, py1, copies) = placement(n, view, fp, minLo, maxHi) else { return true }
        if py1 - py0 > TileRenderer.testedNodeRows { return false }
        for k in -1...1 where copies & (1 << UInt8(k + 1)) != 0 {
            let px0 = Int(view.pixelX(n.minX, copy: k)), px1 = Int(view.pixelX(n.maxX, copy: k))
            if px1 - px0 > TileRenderer.testedNodeColumns { return false }
            for row in max(py0 + fp.top, 0)..<min(py1 + fp.top + fp.lo.count, view.height) {
                // Footprint rows that land on this canvas row from some marker row py0...py1.
                let j0 = max(0, row - py1 - fp.top), j1 = min(fp.lo.count - 1, row - py0 - fp.top)
                var lo = Int.max, hi = Int.min
                for j in j0...j1 { lo = min(lo, fp.lo[j]); hi = max(hi, fp.hi[j]) }
                if lo < hi && !mask.settled(row: row, px0 + lo, px1 + hi) { return false }
            }
        }
        return true
    }

    /// The draws that can change a pixel by more than the bound, in draw order, with their clips
    /// (as `cull`), the sprites, and the markers touching the raster (those of skipped nodes
    /// counted whole) and the markers visited one by one.
    func sweep(_ layer: MarkerLayer, _ view: RasterView, now: Int64) throws(RenderError)
        -> (items: [Item], clips: [Int16], sprites: [TileSprite], markers: Int, visited: Int) {
        var placer = Placer(self, layer, view)
        var styleIndexes: [UInt32] = []
        layer.styles.forEachInUse { i, _ in styleIndexes.append(i) }
        let fp: Footprint
        if styleIndexes.count <= TileRenderer.footprintStyles {
            for i in styleIndexes { _ = placer.sprite(style: i) }
            if let failure = placer.failure { throw failure }
            fp = Footprint(placer.sprites)
        } else {
            fp = Footprint(box: layer.styles.maxExtents, density: view.density)
        }
        let minLo = fp.minLo, maxHi = fp.maxHi
        var mask = CoverageMask(width: view.width, height: view.height)
        var shapes = CoverageMask.Shapes(placer.sprites)
        var nodes: [TileSweepNode] = []
        var pending: [TileCandidate] = []
        var heap = BinaryHeap<Event>()
        var kept: [Item] = [], clips: [Int16] = [], batch: [Item] = []
        var markers = 0, visited = 0

        func pushNode(_ n: TileSweepNode) {
            guard placement(n, view, fp, minLo, maxHi) != nil else { return }
            heap.push(Event(key: TileRenderer.key(z: n.maxZ, y: n.maxY), ref: Int32(nodes.count)))
            nodes.append(n)
        }
        func pushMarker(_ c: TileCandidate) {
            heap.push(Event(key: TileRenderer.key(z: c.zIndex, y: c.y), ref: ~Int32(pending.count)))
            pending.append(c)
        }

        // Device positions where a marker's whole footprint is known to be settled (settling only
        // grows, so a position stays known): most markers of a dense raster share a position
        // with many others and are left out here, when their leaf is opened (every draw in the
        // mask then comes after them), without a style lookup or a place in the heap.
        let h = view.height, w = view.width, rows = fp.lo.count
        let cw = w - minLo + maxHi + 1, ch = h + rows + 1
        var known = [UInt64](repeating: 0, count: (cw * ch + 63) / 64)
        func positionSettled(_ px: Int, _ py: Int) -> Bool {
            if px + maxHi <= 0 || px + minLo >= w || py + fp.top + rows <= 0 || py + fp.top >= h { return true }
            let i = (py + fp.top + rows) * cw + px + maxHi
            if known[i >> 6] >> UInt64(i & 63) & 1 != 0 { return true }
            for j in 0..<rows {
                let row = py + fp.top + j
                if row < 0 || row >= h || fp.lo[j] >= fp.hi[j] { continue }
                if !mask.settled(row: row, px + fp.lo[j], px + fp.hi[j]) { return false }
            }
            known[i >> 6] |= 1 << UInt64(i & 63)
            return true
        }
        func unsettled(_ x: UInt32, _ y: UInt32) -> Bool {
            let py = Int(view.pixelY(y))
            for k in -1...1 where !positionSettled(Int(view.pixelX(x, copy: k)), py) { return true }
            markers += 1
            return false
        }

        if let root = layer.staticSweepRoot { pushNode(root) }
        layer.forEachEndedAnimation(now: now) { pushMarker($0) }
        while !heap.isEmpty {
            let e = heap.pop()!
            if e.ref >= 0 {
                let n = nodes[Int(e.ref)]
                if settled(n, view, fp, minLo, maxHi, &mask) {
                    markers += n.count
                } else if n.isLeaf {
                    layer.forEachStaticMarker(inLeaf: n, where: unsettled) { pushMarker($0) }
                } else {
                    layer.forEachChild(of: n) { pushNode($0) }
                }
                continue
            }
            // Every marker with this key, unless settled by now at its position: placed (its style
            // read only now), in draw order among themselves, then culled last first.
            batch.removeAll(keepingCapacity: true)
            var next: Event? = e
            while let m = next {
                var c = pending[Int(~m.ref)]
                if unsettled(c.x, c.y) {
                    if c.style == .max { c.style = layer.staticStyle(slot: c.slot) }
                    if placer.place(c, into: &batch) { markers += 1 }
                    visited += 1
                }
                next = nil
                if let t = heap.first, t.ref < 0, t.key == e.key { next = heap.pop()! }
            }
            if batch.count > 1 { batch.sort { TileRenderer.less(layer, $0, $1) } }
            if let failure = placer.failure { throw failure }
            while shapes.shapes.count < placer.sprites.count { shapes.append(placer.sprites[shapes.shapes.count]) }
            for it in batch.reversed() {
                // Settled at its position (the cache): the draw would change nothing in the mask
                // and be dropped by `cullOne`, which would look at every row to find that out.
                let s = placer.sprites[Int(it.sprite)]
                if positionSettled(Int(it.x) + s.anchorX, Int(it.y) + s.anchorY) { continue }
                TileRenderer.cullOne(it, shapes, &mask, &kept, &clips)
            }
        }
        if let failure = placer.failure { throw failure }
        kept.reverse()
        return (kept, clips, placer.sprites, markers, visited)
    }
}

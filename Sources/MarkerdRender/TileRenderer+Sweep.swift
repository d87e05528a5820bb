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

        /// The union of the sprites' whole boxes (transparent margins included), each placed at
        /// its anchor.
        init(boxesOf sprites: [TileSprite]) {
            top = sprites.map { -$0.anchorY }.min() ?? 0
            let bottom = sprites.map { $0.height - $0.anchorY }.max() ?? 0
            let left = sprites.map { -$0.anchorX }.min() ?? 0, right = sprites.map { $0.width - $0.anchorX }.max() ?? 0
            lo = Array(repeating: left, count: max(0, bottom - top))
            hi = Array(repeating: right, count: max(0, bottom - top))
        }

        /// The bounding box of both footprints, as a box.
        func union(_ o: Footprint) -> Footprint {
            var u = self
            let t = min(top, o.top), b = max(top + lo.count, o.top + o.lo.count)
            u.top = t
            u.lo = Array(repeating: min(minLo, o.minLo), count: max(0, b - t))
            u.hi = Array(repeating: max(maxHi, o.maxHi), count: max(0, b - t))
            return u
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
        return usesSweep(layer, around: TileRenderer.estimate(layer, root, view, atLeast: sweepAbove))
    }

    /// `usesSweep` from `around`, the view's `staticAround(layer, view, atLeast:)` with `atLeast`
    /// >= `sweepAbove` (one walk of the nodes for this test and another threshold's).
    func usesSweep(_ layer: MarkerLayer, around: Int) -> Bool {
        culling == .withinOne && layer.staticSweepRoot != nil && around >= sweepAbove
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

    /// A heap entry: a part (`ref >= 0`, index into the sweep's parts) or a cursor over markers
    /// waiting for their turn (`ref < 0`, `~ref` indexes the cursors), keyed by the (z-index,
    /// world y) bound of the draw order.
    fileprivate struct Event: Comparable {
        var key: UInt64
        var ref: Int32
        /// `a` comes out of the heap first: later in the draw order (higher key; at equal keys
        /// parts before markers).
        @inline(__always) static func < (a: Event, b: Event) -> Bool {
            a.key != b.key ? a.key > b.key : a.ref >= 0 && b.ref < 0
        }
    }

    /// What the sweep walks: a grid node, or the markers of a leaf in one device row (`row`,
    /// world y `y0...y1`): a leaf whose markers span a few device rows is taken one row at a
    /// time, bottom up, so that the upper rows, whose footprints only later markers of their
    /// own row settle, do not keep the lower ones from being left out whole.
    fileprivate struct Part {
        var node: TileSweepNode
        var y0: UInt32, y1: UInt32
        /// Split leaves: the row of this part, the leaf's first row and its index in the sweep's
        /// per-leaf counts (-1: not split).
        var row: Int32 = 0, firstRow: Int32 = 0
        var leaf: Int32 = -1
    }

    /// A marker of an opened part waiting in a cursor: its draw-order key and its device pixel
    /// (world copy 0, relative to the canvas), computed once when read; `Int32.min` when outside
    /// Int32's range (far off the canvas: at z22 a world is 2^30 x density px wide), which
    /// `unsettled` takes as "compute the other copies exactly".
    /// (The z-index and world y are those of the key.)
    fileprivate struct Waiting {
        var key: UInt64
        var slot: Int32
        var x: UInt32
        /// `UInt32.max`: not read yet.
        var style: UInt32
        var px: Int32, py: Int32

        init(key: UInt64, slot: Int32, x: UInt32, style: UInt32, px: Int32, py: Int32) {
            self.key = key; self.slot = slot; self.x = x; self.style = style; self.px = px; self.py = py
        }

        var candidate: TileCandidate {
            .make(slot: slot, x: x, y: UInt32(truncatingIfNeeded: key), style: style,
                          zIndex: Int32(bitPattern: UInt32(truncatingIfNeeded: key >> 32) ^ 0x8000_0000))
        }
    }

    /// Markers of an opened part (or the ended animations) not known to be settled at their
    /// position when read, `pending[next ..< end]` in reverse draw order up to ties (descending
    /// key).
    fileprivate struct Cursor {
        var next: Int32
        var end: Int32
        var leaf: Int32
        /// The markers of a one-row part of at most two device positions away from the other
        /// world copies (`open`'s fast path), left unsorted: `pending[next]` is always the one
        /// with the highest key (moved there by `selectHead` after every change), and once a
        /// marker is found settled, every other marker at its position is too and they are
        /// dropped together (`dropSettled`). An opened part draws a few of its markers at most,
        /// so this costs a few passes over it instead of sorting it (at 10M markers, the z0
        /// tile opens ~61k such parts of ~21 markers and draws from them ~88k times).
        var selects = false
    }

    /// Parts whose markers fall on at most this many device positions (per world copy) are
    /// tested position by position (`SweepWalk.partSettled`).
    static let positionParts = 4

    /// Leaves spanning at most this many device rows are walked one row at a time (`Part`).
    static let splitLeafRows = 4

    @inline(__always) fileprivate static func key(z: Int32, y: UInt32) -> UInt64 {
        UInt64(UInt32(bitPattern: z) ^ 0x8000_0000) << 32 | UInt64(y)
    }

    /// The device-pixel rows of the markers of a node's rectangle with world y `y0...y1` and the
    /// world copies (bit k + 1 for copy k in -1, 0, 1) whose footprint touches the canvas; nil
    /// when none does.
    fileprivate func placement(_ n: TileSweepNode, _ y0: UInt32, _ y1: UInt32, _ view: RasterView, _ fp: Footprint,
                           _ minLo: Int, _ maxHi: Int) -> (py0: Int, py1: Int, copies: UInt8)? {
        let py0 = Int(view.pixelY(y0)), py1 = Int(view.pixelY(y1))
        if py1 + fp.top + fp.lo.count <= 0 || py0 + fp.top >= view.height { return nil }
        var copies: UInt8 = 0
        for k in -1...1 {
            let px0 = Int(view.pixelX(n.minX, copy: k)), px1 = Int(view.pixelX(n.maxX, copy: k))
            if px1 + maxHi > 0 && px0 + minLo < view.width { copies |= 1 << UInt8(k + 1) }
        }
        return copies == 0 ? nil : (py0, py1, copies)
    }

    /// Whether every pixel of part `p`'s footprint inside the canvas is settled in `mask` (false
    /// without looking for parts spanning more than `testedNodeRows` x `testedNodeColumns`).
    fileprivate func settled(_ p: Part, _ view: RasterView, _ fp: Footprint, _ minLo: Int, _ maxHi: Int,
                         _ mask: inout CoverageMask) -> Bool {
        let n = p.node
        guard let (py0, py1, copies) = placement(n, p.y0, p.y1, view, fp, minLo, maxHi) else { return true }
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

    /// The smallest world x in `lo...hi` whose device column (world copy 0, relative to the
    /// canvas) is at least `column`; `column` must be above `pixelX(lo)` and at most `pixelX(hi)`.
    static func firstX(column: Int, _ view: RasterView, _ lo: UInt32, _ hi: UInt32) -> UInt32 {
        first(column, origin: view.originX, view.scale, lo, hi)
    }

    /// The smallest world y in `lo...hi` whose device row (relative to the canvas) is at least
    /// `row`; `row` must be above `pixelY(lo)` and at most `pixelY(hi)`.
    static func firstY(row: Int, _ view: RasterView, _ lo: UInt32, _ hi: UInt32) -> UInt32 {
        first(row, origin: view.originY, view.scale, lo, hi)
    }

    /// The smallest world coordinate `v` in `lo...hi` with `floor(v x scale + 0.5) - origin >= pixel`
    /// (`RasterView.pixelX` of copy 0 and `pixelY`).
    private static func first(_ pixel: Int, origin: Int64, _ scale: Double, _ lo: UInt32, _ hi: UInt32) -> UInt32 {
        func at(_ v: UInt32) -> Int64 { RasterView.floor(Double(v) * scale + 0.5) - origin }
        let t = ((Double(pixel) + Double(origin) - 0.5) / scale).rounded(.up)
        var b = UInt32(max(Double(lo), min(Double(hi), t)))
        while b > lo && at(b - 1) >= pixel { b -= 1 }
        while b < hi && at(b) < pixel { b += 1 }
        return b
    }

    /// Step 4 for `view`: the sweep and its draws.
    func renderSweep(_ layer: MarkerLayer, _ view: RasterView, now: Int64) throws(RenderError) -> RenderedRaster {
        let (kept, clips, sprites, markers, visited) = try sweep(layer, view, now: now)
        var canvas = TileCanvas(width: view.width, height: view.height)
        let draws = Self.draw(kept, clips, sprites, on: &canvas)
        return RenderedRaster(canvas: canvas, markers: markers, draws: draws, visited: visited)
    }

    /// The draws that can change a pixel by more than the bound, in draw order, with their clips
    /// (as `cull`), the sprites, and the markers touching the raster (those of skipped nodes
    /// counted whole) and the markers visited one by one.
    func sweep(_ layer: MarkerLayer, _ view: RasterView, now: Int64) throws(RenderError)
        -> (items: [Item], clips: [UInt64], sprites: [TileSprite], markers: Int, visited: Int) {
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
        var walk = SweepWalk(renderer: self, view: view, fp: fp, placer: placer)
        // One style in use: markers have it, their style is not read from the marker table.
        if styleIndexes.count == 1 { walk.single = styleIndexes[0] }
        try walk.run(layer, now: now)
        walk.kept.reverse()
        return (walk.kept, walk.clips.array, walk.placer.sprites, walk.markers, walk.visited)
    }

    /// The state of one sweep (`sweep`), in one struct so that its mutable parts are reached
    /// through `self` in mutating methods (checked when compiled, not at every access).
    private struct SweepWalk {
        let renderer: TileRenderer
        let view: RasterView
        let fp: Footprint
        let minLo: Int, maxHi: Int
        var placer: Placer
        var mask: CoverageMask
        var shapes: CoverageMask.Shapes
        var parts: [Part] = []
        var pending: [Waiting] = []
        var cursors: [Cursor] = []
        /// Cursors not exhausted yet (each has one entry in the heap, or is being drawn).
        var liveCursors = 0
        /// Indexes of `parts` taken already, for reuse.
        var freeParts: [Int32] = []
        /// Per split leaf: markers of its opened rows counted so far (every marker of a split
        /// leaf counts once: those of an opened row when it is read, whether drawn or not; the
        /// rest when its top row comes out, opened or not).
        var leafCounted: [Int] = []
        var heap = BinaryHeap<Event>()
        /// Leaf parts taken and to be read (`openAll`).
        var opening: [Part] = []
        var kept: [Item] = [], batch: [Item] = []
        var clips = ClipBuffer(capacity: 0)
        var markers = 0, visited = 0
        /// The style of every marker when only one is in use (`UInt32.max`: read per marker).
        var single = UInt32.max
        // Device positions where a marker's whole footprint is known to be settled (settling only
        // grows, so a position stays known): most markers of a dense raster share a position
        // with many others and are left out here without a style lookup or a place in the heap.
        // Bit `(py + fp.top + rows) * knownWidth + px + maxHi`.
        var known: [UInt64]
        let knownWidth: Int
        /// The world's width in device px (`2^32 x scale`).
        let worldPx: Double
        /// The sprites' whole boxes (`fp` without leaving out transparent pixels): only for
        /// counting `markers` of nodes that touch the canvas with transparent pixels alone.
        let boxes: Footprint

        init(renderer: TileRenderer, view: RasterView, fp: Footprint, placer: Placer) {
            self.renderer = renderer; self.view = view; self.fp = fp; self.placer = placer
            boxes = placer.sprites.isEmpty ? fp : Footprint(boxesOf: placer.sprites).union(fp)
            minLo = fp.minLo; maxHi = fp.maxHi
            mask = CoverageMask(width: view.width, height: view.height)
            shapes = CoverageMask.Shapes(placer.sprites)
            knownWidth = view.width - minLo + maxHi + 1
            worldPx = Mercator.worldSize * view.scale
            known = [UInt64](repeating: 0, count: (knownWidth * (view.height + fp.lo.count + 1) + 63) / 64)
        }

        mutating func push(_ p: Part) {
            if let i = freeParts.popLast() {
                parts[Int(i)] = p
                heap.push(Event(key: TileRenderer.key(z: p.node.maxZ, y: p.y1), ref: i))
            } else {
                heap.push(Event(key: TileRenderer.key(z: p.node.maxZ, y: p.y1), ref: Int32(parts.count)))
                parts.append(p)
            }
        }

        mutating func pushNode(_ n: TileSweepNode) {
            guard let (py0, py1, _) = renderer.placement(n, n.minY, n.maxY, view, fp, minLo, maxHi) else {
                // Nothing the node's markers draw lands on the canvas, but their sprites' boxes
                // (transparent margins included) may: `markers` counts those too, as `collect` does.
                if renderer.placement(n, n.minY, n.maxY, view, boxes, boxes.minLo, boxes.maxHi) != nil { markers += n.count }
                return
            }
            if n.isLeaf && py1 > py0 && py1 - py0 <= TileRenderer.splitLeafRows {
                // The bottom row first; each part pushes the one above it when it comes out.
                leafCounted.append(0)
                push(Part(node: n, y0: TileRenderer.firstY(row: py1, view, n.minY, n.maxY), y1: n.maxY,
                          row: Int32(py1), firstRow: Int32(py0), leaf: Int32(leafCounted.count - 1)))
            } else {
                push(Part(node: n, y0: n.minY, y1: n.maxY))
            }
        }

        /// Counts one marker, unless it belongs to split leaf `leaf` (>= 0: counted by row, see
        /// `leafCounted`).
        @inline(__always) mutating func count(leaf: Int32) {
            if leaf < 0 { markers += 1 }
        }

        /// Whether the footprint placed at device pixel (px, py) is settled (remembered in `known`);
        /// `full` false: only whether it is known to be (no test of the mask).
        mutating func positionSettled(_ px: Int, _ py: Int, full: Bool = true) -> Bool {
            let rows = fp.lo.count, h = view.height
            if px + maxHi <= 0 || px + minLo >= view.width || py + fp.top + rows <= 0 || py + fp.top >= h { return true }
            let i = (py + fp.top + rows) * knownWidth + px + maxHi
            if known[i >> 6] >> UInt64(i & 63) & 1 != 0 { return true }
            if !full || !mask.footprintSettled(top: py + fp.top, x: px, lo: fp.lo, hi: fp.hi) { return false }
            known[i >> 6] |= 1 << UInt64(i & 63)
            return true
        }

        /// Whether marker `w` may still draw something (every draw in the mask must come after
        /// it); counts it when not. `full` false: unless known to be settled at its position
        /// (`positionSettled`), without testing the mask.
        @inline(__always) mutating func unsettled(_ w: Waiting, leaf: Int32, full: Bool = true) -> Bool {
            let px = Int(w.px), py = Int(w.py)
            if !positionSettled(px, py, full: full) { return true }
            // The world copies -1 and 1 lie about `worldPx` to the left and right (exactly, up to
            // rounding: 2 px spare); their exact pixel is computed only when they may touch.
            let far = w.px == .min
            if (far || Double(px + maxHi + 2) > worldPx)
                && !positionSettled(Int(view.pixelX(w.x, copy: -1)), py, full: full) { return true }
            if (far || Double(px + minLo - 2) < Double(view.width) - worldPx)
                && !positionSettled(Int(view.pixelX(w.x, copy: 1)), py, full: full) { return true }
            count(leaf: leaf)
            return false
        }

        /// The waiting form of a marker (`style` `UInt32.max`: read when placed).
        @inline(__always) func waiting(slot: Int32, x: UInt32, y: UInt32, z: Int32, style: UInt32) -> Waiting {
            Waiting(key: TileRenderer.key(z: z, y: y), slot: slot, x: x, style: style,
                    px: Int32(exactly: view.pixelX(x, copy: 0)) ?? .min, py: Int32(exactly: view.pixelY(y)) ?? .min)
        }

        /// Sorts `pending[start...]` by descending key (insertion sort: an opened part holds a few
        /// dozen markers), or with `selects` only moves the highest key first (`Cursor.selects`),
        /// and pushes a cursor over it.
        mutating func pushCursor(from start: Int, leaf: Int32, selects: Bool = false) {
            guard pending.count > start else { return }
            if selects {
                selectHead(start, pending.count)
            } else if pending.count - start > 64 {
                pending[start...].sort { $0.key > $1.key }
            } else {
                pending.withUnsafeMutableBufferPointer { b in
                    var i = start + 1
                    while i < b.count {
                        let x = b[i]
                        var j = i
                        while j > start && b[j - 1].key < x.key { b[j] = b[j - 1]; j -= 1 }
                        b[j] = x
                        i += 1
                    }
                }
            }
            heap.push(Event(key: pending[start].key, ref: ~Int32(cursors.count)))
            cursors.append(Cursor(next: Int32(start), end: Int32(pending.count), leaf: leaf, selects: selects))
            liveCursors += 1
        }

        /// Swaps the marker with the highest key in `pending[start ..< end]` (non-empty) to `start`.
        @inline(__always) mutating func selectHead(_ start: Int, _ end: Int) {
            pending.withUnsafeMutableBufferPointer { b in
                var best = start
                var k = start + 1
                while k < end {
                    if b[k].key > b[best].key { best = k }
                    k += 1
                }
                if best != start { b.swapAt(start, best) }
            }
        }

        /// A selecting cursor's head `pending[c.next]` is settled: moves every marker of
        /// `pending[c.next ..< c.end]` at its position to the front and past `c.next`, counting
        /// them (settling only grows, and the cursor's markers are settled exactly where their
        /// position is, see `Cursor.selects`).
        mutating func dropSettled(_ c: inout Cursor) {
            let leaf = c.leaf
            var dropped = 0
            pending.withUnsafeMutableBufferPointer { b in
                let px = b[Int(c.next)].px, py = b[Int(c.next)].py
                var w = Int(c.next)
                for k in Int(c.next)..<Int(c.end) where b[k].px == px && b[k].py == py {
                    b.swapAt(w, k)
                    w += 1
                }
                dropped = w - Int(c.next)
                c.next = Int32(w)
            }
            if leaf < 0 { markers += dropped }
        }

        /// Moves cursor `ci` past the markers settled by now and pushes it back unless empty
        /// (every marker left in it comes before every draw in the mask).
        mutating func advance(_ ci: Int) {
            var c = cursors[ci]
            if c.selects {
                while c.next < c.end {
                    let m = pending[Int(c.next)]
                    if !positionSettled(Int(m.px), Int(m.py)) {
                        heap.push(Event(key: m.key, ref: ~Int32(ci)))
                        break
                    }
                    dropSettled(&c)
                    if c.next < c.end { selectHead(Int(c.next), Int(c.end)) }
                }
            } else {
                while c.next < c.end {
                    let m = pending[Int(c.next)]
                    if unsettled(m, leaf: c.leaf) {
                        heap.push(Event(key: m.key, ref: ~Int32(ci)))
                        break
                    }
                    c.next += 1
                }
            }
            cursors[ci] = c
            if c.next >= c.end {
                // Exhausted. With no cursor left (mostly between device rows) every marker read
                // so far is done: `pending` starts over, so it stays about one row's size.
                liveCursors -= 1
                if liveCursors == 0 {
                    pending.removeAll(keepingCapacity: true)
                    cursors.removeAll(keepingCapacity: true)
                }
            }
        }

        /// Whether every pixel any marker of part `p` could draw is settled. A part whose markers
        /// fall on at most `TileRenderer.positionParts` device positions (per world copy) is
        /// tested position by position (`positionSettled`: the union of the footprints placed
        /// there, exactly what its markers can draw), so that positions already known settled
        /// cost a bit test and the ones tested now are remembered for the markers and parts that
        /// follow; larger parts are tested by rows (`TileRenderer.settled`).
        mutating func partSettled(_ p: Part) -> Bool {
            let n = p.node
            guard let (py0, py1, copies) = renderer.placement(n, p.y0, p.y1, view, fp, minLo, maxHi) else { return true }
            let rows = py1 - py0 + 1
            guard rows <= TileRenderer.positionParts else { return renderer.settled(p, view, fp, minLo, maxHi, &mask) }
            for k in -1...1 where copies & (1 << UInt8(k + 1)) != 0 {
                let columns = view.pixelX(n.maxX, copy: k) - view.pixelX(n.minX, copy: k) + 1
                if columns * Int64(rows) > TileRenderer.positionParts { return renderer.settled(p, view, fp, minLo, maxHi, &mask) }
            }
            for k in -1...1 where copies & (1 << UInt8(k + 1)) != 0 {
                let px0 = Int(view.pixelX(n.minX, copy: k)), px1 = Int(view.pixelX(n.maxX, copy: k))
                for py in py0...py1 {
                    for px in px0...px1 where !positionSettled(px, py) { return false }
                }
            }
            return true
        }

        /// A part out of the heap: left out when settled, else opened (a node's children go into
        /// the heap). Returns true for a leaf part whose markers are to be read (`open`).
        mutating func take(_ p: Part, _ layer: MarkerLayer) -> Bool {
            let n = p.node
            if p.leaf >= 0 && p.row > p.firstRow {
                // The leaf's next row up.
                let row = Int(p.row) - 1
                push(Part(node: n, y0: row > p.firstRow ? TileRenderer.firstY(row: row, view, n.minY, n.maxY) : n.minY,
                          y1: p.y0 - 1, row: Int32(row), firstRow: p.firstRow, leaf: p.leaf))
            }
            if p.leaf >= 0 && p.row == p.firstRow { markers += n.count - leafCounted[Int(p.leaf)] }
            if partSettled(p) {
                if p.leaf < 0 { markers += n.count }
                return false
            }
            if n.isLeaf { return true }
            layer.forEachChild(of: n) { self.pushNode($0) }
            return false
        }

        /// Reads the markers of the leaf parts in `opening` into cursors. Their entries are
        /// touched first (one read per cache line, none depending on another), so that the
        /// processor fetches the leaves together: about one memory latency per batch of leaves
        /// instead of one per leaf.
        mutating func openAll(_ layer: MarkerLayer) {
            var touched: UInt32 = 0
            for p in opening {
                touched &+= layer.withStaticEntries(inLeaf: p.node) { es in
                    var t: UInt32 = 0
                    var k = 0
                    while k < es.count { t &+= es[k].y; k += 4 }
                    return t
                }
            }
            CacheTouch.keep(touched)
            for p in opening { open(p, layer) }
            opening.removeAll(keepingCapacity: true)
        }

        /// The markers of a leaf part found not settled go into a cursor.
        mutating func open(_ p: Part, _ layer: MarkerLayer) {
            let start = pending.count
            let leaf = p.leaf, n = p.node
            let y0 = p.y0, span = p.y1 &- p.y0
            var inRange = 0
            // Only the positions known to be settled are left out here: the part was just found
            // not settled, so a full test would rarely leave one out (the cursor tests each marker
            // when its turn comes).
            let py = view.pixelY(p.y0), px0 = view.pixelX(n.minX, copy: 0), px1 = view.pixelX(n.maxX, copy: 0)
            let fast = py == view.pixelY(p.y1) && px1 - px0 <= 1 && px0 > -(1 << 30) && px1 < 1 << 30 && py > -(1 << 30) && py < 1 << 30
                && Double(px1) + Double(maxHi + 2) <= worldPx && Double(px0) + Double(minLo - 2) >= Double(view.width) - worldPx
            if fast {
                // One device row, at most two columns (split at world x `xb`), away from the other
                // world copies: what `waiting` and `unsettled(full: false)` would find per marker,
                // computed once.
                let xb = px1 > px0 ? TileRenderer.firstX(column: Int(px1), view, n.minX, n.maxX) : n.minX
                let skip0 = positionSettled(Int(px0), Int(py), full: false), skip1 = positionSettled(Int(px1), Int(py), full: false)
                let c0 = Int32(px0), c1 = Int32(px1), row = Int32(py)
                var skipped = 0
                layer.withStaticEntries(inLeaf: n) { es in
                    for e in es where e.y &- y0 <= span {
                        inRange += 1
                        let right = e.x >= xb
                        if right ? skip1 : skip0 {
                            skipped += 1
                        } else {
                            pending.append(Waiting(key: TileRenderer.key(z: e.z, y: e.y), slot: e.slot, x: e.x, style: .max,
                                                   px: right ? c1 : c0, py: row))
                        }
                    }
                }
                if leaf < 0 { markers += skipped }
            } else {
                layer.withStaticEntries(inLeaf: n) { es in
                    for e in es where e.y &- y0 <= span {
                        inRange += 1
                        let w = waiting(slot: e.slot, x: e.x, y: e.y, z: e.z, style: .max)
                        if unsettled(w, leaf: leaf, full: false) { pending.append(w) }
                    }
                }
            }
            if leaf >= 0 && p.row != p.firstRow { leafCounted[Int(leaf)] += inRange; markers += inRange }
            pushCursor(from: start, leaf: leaf, selects: fast)
        }

        /// Every marker with `key` (the cursors at the top of the heap, starting with `first`),
        /// unless settled by now at its position: placed (its style read only now), in draw order
        /// among themselves, then culled last first.
        mutating func draw(key: UInt64, first: Int, _ layer: MarkerLayer, taken: inout [Int]) throws(RenderError) {
            batch.removeAll(keepingCapacity: true)
            taken.removeAll(keepingCapacity: true)
            var ci = first
            while true {
                var cur = cursors[ci]
                while cur.next < cur.end {
                    let w = pending[Int(cur.next)]
                    if w.key != key { break }
                    cur.next += 1
                    if cur.selects && cur.next < cur.end { selectHead(Int(cur.next), Int(cur.end)) }
                    if unsettled(w, leaf: cur.leaf) {
                        var c = w.candidate
                        if c.style == .max { c.style = single != .max ? single : layer.staticStyle(slot: c.slot) }
                        if placer.place(c, into: &batch) { count(leaf: cur.leaf) }
                        visited += 1
                    }
                }
                cursors[ci] = cur
                taken.append(ci)
                guard let t = heap.first, t.ref < 0, t.key == key else { break }
                ci = Int(~heap.pop()!.ref)
            }
            if batch.count > 1 { TileRenderer.sortInDrawOrder(&batch, 0..<batch.count, layer) }
            if let failure = placer.failure { throw failure }
            while shapes.shapes.count < placer.sprites.count { shapes.append(placer.sprites[shapes.shapes.count]) }
            for it in batch.reversed() {
                // Settled at its position (the cache): the draw would change nothing in the mask
                // and be dropped by `cullOne`, which would look at every row to find that out.
                // (The anchor from `geometry`: copying the sprite out of `sprites` would retain
                // and release its image for every draw, 3 % of a z0 render's time.)
                let g = placer.geometry[Int(it.sprite)]
                if positionSettled(Int(it.x) + Int(g.anchorX), Int(it.y) + Int(g.anchorY)) { continue }
                TileRenderer.cullOne(it, shapes, &mask, &kept, &clips)
            }
            for ci in taken { advance(ci) }
        }

        mutating func run(_ layer: MarkerLayer, now: Int64) throws(RenderError) {
            if let root = layer.staticSweepRoot { pushNode(root) }
            layer.forEachEndedAnimation(now: now) { c in
                self.pending.append(self.waiting(slot: c.slot, x: c.x, y: c.y, z: c.zIndex, style: c.style))
            }
            pushCursor(from: 0, leaf: -1)
            var taken: [Int] = []
            while let e = heap.pop() {
                if e.ref >= 0 {
                    // This part and every other at the top of the heap with the same key (at z0,
                    // the first parts of a device row's leaves): taking one draws nothing, so
                    // the order among them does not matter. The leaves to read are counted
                    // first, in one pass whose memory reads overlap, then read from the cache.
                    var ref = e.ref
                    while true {
                        freeParts.append(ref)
                        let p = parts[Int(ref)]
                        if take(p, layer) { opening.append(p) }
                        guard let t = heap.first, t.ref >= 0, t.key == e.key else { break }
                        ref = heap.pop()!.ref
                    }
                    openAll(layer)
                } else {
                    try draw(key: e.key, first: Int(~e.ref), layer, taken: &taken)
                }
            }
            if let failure = placer.failure { throw failure }
        }
    }
}

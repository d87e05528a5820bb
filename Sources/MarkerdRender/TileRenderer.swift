import MarkerdCore

/// A raster in global device pixels: which part of the world a canvas shows and at what scale.
///
/// The world is `2^32 x scale` device px wide. A marker at world x is at device px
/// `floor(x * scale + 0.5)` (rounded to a whole pixel corner); relative to the canvas subtract
/// `originX`. For tiles every number involved is exact in Double arithmetic, so neighbouring
/// tiles and one big canvas over the same area agree pixel for pixel.
public struct RasterView: Sendable, Hashable {
    /// Global device px of the canvas's top-left corner.
    public var originX: Int64
    public var originY: Int64
    /// Canvas size in device px.
    public var width: Int
    public var height: Int
    /// Device px per world unit.
    public var scale: Double
    /// Device px per px (1, 2 or 3).
    public var density: Int

    public init(originX: Int64, originY: Int64, width: Int, height: Int, scale: Double, density: Int) {
        self.originX = originX; self.originY = originY; self.width = width; self.height = height
        self.scale = scale; self.density = density
    }

    /// The raster of XYZ tile `tile`: `tileSize x density` device px square.
    public static func tile(_ tile: TileID, tileSize: Int, density: Int) -> RasterView {
        let n = tileSize * density
        let scale = Double(n) * Double(sign: .plus, exponent: tile.z - 32, significand: 1)
        return RasterView(originX: Int64(tile.x) * Int64(n), originY: Int64(tile.y) * Int64(n),
                          width: n, height: n, scale: scale, density: density)
    }

    /// A `width x height` px (times `density` device px) view centred on `center` at a fractional
    /// `zoom` (256 px tiles).
    public static func snapshot(center: LatLng, zoom: Double, width: Int, height: Int, density: Int) -> RasterView {
        let scale = 256 * Mercator.worldUnitsPerPixel(zoom: 0) / Mercator.worldUnitsPerPixel(zoom: zoom)
            * Double(density) / Mercator.worldSize
        let cx = Mercator.worldX(longitude: center.longitude) * scale
        let cy = Mercator.worldY(latitude: center.latitude) * scale
        let w = width * density, h = height * density
        return RasterView(originX: Int64((cx + 0.5).rounded(.down)) - Int64(w / 2),
                          originY: Int64((cy + 0.5).rounded(.down)) - Int64(h / 2),
                          width: w, height: h, scale: scale, density: density)
    }

    /// World units per px at density 1.
    public var unitsPerPx: Double { Double(density) / scale }

    /// The device px (relative to the canvas) of a world x, for the world copy `k` (-1, 0, 1).
    @inline(__always) func pixelX(_ x: UInt32, copy k: Int) -> Int64 {
        RasterView.floor((Double(x) + Double(k) * Mercator.worldSize) * scale + 0.5) - originX
    }

    @inline(__always) func pixelY(_ y: UInt32) -> Int64 {
        RasterView.floor(Double(y) * scale + 0.5) - originY
    }

    /// `Int64(v.rounded(.down))` for |v| < 2^63, without a call to libm's `floor` (the build
    /// targets baseline x86-64, which has no rounding instruction).
    @inline(__always) static func floor(_ v: Double) -> Int64 {
        let t = Int64(v)
        return Double(t) > v ? t - 1 : t
    }

    /// The scale as `n / 2^shift` with a whole odd `n` below 2^20 and `shift` in 0...32 (every
    /// tile: `n x 2^(32 - shift) = tileSize x density x 2^z`), and `half` = 2^(shift - 1) (0 when
    /// `shift` is 0); else nil. Then `pixelX` and `pixelY` are `pixel(_:)` of the world
    /// coordinate plus the origin, exactly: the Double products they round are exact.
    var integerScale: (n: Int64, shift: Int64, half: Int64)? {
        let m = scale * 4_294_967_296.0
        guard m >= 1, m < 9_007_199_254_740_992.0, m == m.rounded(.down) else { return nil }
        let whole = UInt64(m), zeros = Swift.min(32, whole.trailingZeroBitCount)
        guard whole >> UInt64(zeros) < 1 << 20 else { return nil }
        let shift = Int64(32 - zeros)
        return (Int64(whole >> UInt64(zeros)), shift, shift > 0 ? 1 << (shift - 1) : 0)
    }

    /// `floor(w x n / 2^shift + 0.5)` for a world coordinate `w` (|w| < 2^34) and an
    /// `integerScale` (n, shift, half): the device px before subtracting the origin.
    @inline(__always) static func pixel(_ w: Int64, n: Int64, shift: Int64, half: Int64) -> Int64 {
        (w &* n &+ half) &>> shift
    }

    /// The world copies (-1, 0, 1) whose sprites can touch the canvas: those whose device-pixel
    /// span, widened each way by 4096 px (more than any sprite: icons up to 1024 px, times
    /// density 3), meets the canvas.
    var copies: ClosedRange<Int> {
        let world = Mercator.worldSize * scale, reach = 4096.0
        var lo = 1, hi = -1
        for k in -1...1 {
            let left = Double(k) * world - Double(originX) - reach, right = Double(k + 1) * world - Double(originX) + reach
            if left < Double(width) && right > 0 { lo = min(lo, k); hi = max(hi, k) }
        }
        return lo <= hi ? lo...hi : 0...0
    }
}

/// The result of rendering a raster.
public struct RenderedRaster: Sendable {
    public var canvas: TileCanvas
    /// Markers whose sprite touches the canvas (what a brute-force renderer would draw).
    public var markers: Int
    /// Sprite compositions actually performed (after skipping covered draws and folding
    /// repeated identical draws).
    public var draws: Int
    /// Markers the renderer placed and tested one by one; the others were left out with their
    /// grid node, or (node sweep) by their position alone when their leaf was opened (see
    /// `TileRenderer`).
    public var visited: Int = 0
}

/// Draws the static markers of a layer into raster tiles and snapshots.
///
/// What a tile shows: every marker that is static at `now` (visible, not draggable, not
/// animating) whose sprite (`TileSprite`) touches the raster, composited premultiplied
/// source-over (`TileCanvas`) in the shared draw order (z-index, latitude descending, id; the
/// copies of a marker in different world copies left to right). The output is within 1 per
/// channel (1/255, the tolerance) of drawing every such marker one after the other, and
/// equal to it with `Culling.exact`; the renderer leaves out draws only where that bound is
/// proven (`CoverageMask`):
///
/// 1. Order: one radix sort by (z-index rank, world y) puts the draws in draw order except
///    among markers with the same z-index and world y (and the world copies of one marker);
///    those runs are sorted exactly (`MarkerLayer.drawOrderLess`, then the copy).
/// 2. Walking the draws from the top of the draw order down, each pixel keeps how much the later
///    draws there squeeze any difference in what lies below (`CoverageMask`: one opaque draw,
///    two with alpha >= 240, eight with alpha >= 128, ... settle a pixel: whatever was drawn
///    there before changes the result by at most 1; `.exact` settles only under opaque
///    pixels, by 0). A draw is dropped when every one of its non-transparent pixels inside the
///    canvas is settled; one that stays is clipped to exactly its pixels not settled yet (per
///    sprite row, masks of 64 columns a word: `CoverageMask.uncovered`). Settled pixels form a
///    prefix of each pixel's draws, and every draw after them is drawn, so the bound holds.
///    Because a draw paints exactly its unsettled pixels, and whether a pixel is settled depends
///    on the draws covering that pixel alone, a pixel's value is a function of the draws that
///    cover it: a window rendered on its own (`renderPatched`), a neighbouring tile, the sweep
///    and the plain path all give the same bytes where they overlap.
/// 3. What is left is drawn bottom up; a run of identical draws (same sprite, same pixel) is
///    drawn as `TileCanvas.draw(sprite:atX:y:times:clips:)` draws it (`TileCanvas.composite`):
///    each pixel as many times as the run's clips hold it, stopping at the fixed point (identical
///    to drawing it that many times - repeated semi-transparent draws are not idempotent, so they
///    are never merged into one).
/// 4. Dense rasters (`sweepAbove`; `.withinOne` only) do not collect every marker first: a sweep
///    (`TileRenderer+Sweep.swift`) walks the static grid's nodes and the markers of opened leaves
///    in one heap by the draw order's bound (z-index, world y; a node at its largest z-index and
///    y, before the draws with the same key), culling draws as in step 2. A node is tested when
///    every draw after all of its markers has been added: if every pixel any of its markers
///    could draw (the union of the layer's sprites placed anywhere in the node's device-pixel
///    range, in every world copy) is settled, it is left out whole, without visiting its markers
///    (they still count in `RenderedRaster.markers`, whole, so the count is an upper bound there).
///    A leaf whose markers span a few device rows (`splitLeafRows`) is walked one row at a time,
///    bottom up (each row part keyed by its own largest world y, tested and left out or opened
///    on its own). An opened part's markers not known settled at their position go into the
///    heap as one cursor sorted by key, not one entry each. A marker is left out by its device
///    position alone when the footprint placed there is settled (remembered per position, as
///    settling only grows), so markers stacked on busy positions cost a grid entry read, not a
///    style lookup, a heap entry and a mask test.
///
/// Every render runs on the calling thread, and its pixels (and a tile's PNG bytes) depend on the
/// layer's content and the view alone, never on the host's load or on how the raster was
/// reached (rendered whole or patched from a kept canvas: step 2).
///
/// A kept draw updates the mask only inside its clip (`CoverageMask.add(...clip:)`: the rest of
/// it is settled already), so in a dense tile, where a kept pin mostly shows a few rows at its
/// top, adding it costs those rows, not the sprite's height; and step 2 remembers per sprite
/// position the row from which a draw there was settled (`SettledRows`), so the next marker
/// stacked there is tested down to that row only. Measured on marker-bench's cold city tiles
/// (`--only citytiles`, 10M markers, z10: about 20k pins in the densest tiles), process CPU per
/// tile p50 / p99 on one thread 7.6 / 17.2 ms against 12.9 / 31.4 ms before these two and the
/// cheaper sort (step 1); two bands cost about 15 % more CPU and gave no wall-clock gain, even on
/// a quiet machine (see Benchmarks/results/diary.md).
///
/// In every path a sprite position found fully settled is remembered per sprite
/// (`CoverageMask.markSettled`: settling only grows, so a later-visited draw of the same sprite
/// at the same pixel is settled too), so stacked identical draws cost one bit test. With one
/// style in use the marker table's style column is not read.
///
/// So the cost is about the markers visited (collected, sorted and tested one by one; in the
/// sweep, grid entries read from opened leaf rows, most of them left out by their position) plus
/// the pixels that show. Limit of step 4 for default pins of one z-index: a marker's topmost
/// sprite row is only ever covered by later markers of the same device row (same z-index), so a
/// row part can only be left out whole when later markers of its row (larger world y) already
/// settle its top row; pins' antialiased edges (alpha below 128) never settle by repetition
/// alone. In the evenly spread part of a 10M layer a z0 leaf spans about one device pixel and
/// straddles two rows: the part in the lower row comes after half of that row's markers and is
/// mostly left out whole; the part in the upper row comes first in its row and is opened. What
/// remains at z0 is every row's first few hundred markers, placed and culled one by one (about
/// 90k, 50k draws), and the row parts' tests; at 10M the larger cost is reading the opened
/// rows' markers around them (about 1.3M, each tested at its position when its turn comes; see
/// Benchmarks/results/diary.md for the profile and the figures).
public final class TileRenderer: Sendable {
    public let sprites: IconSpriteCache
    /// What the renderer may leave out (default `.withinOne`).
    public let culling: Culling
    /// See `init(sprites:culling:sweepAbove:)`.
    public let sweepAbove: Int
    /// Extra reach (px at density 1) added to the icon extents when looking for markers: pixel
    /// rounding of positions and anchors, and pin sprites' minimum size of 4 px.
    public static let marginPx: Double = 4

    /// Which draws may be left out.
    public enum Culling: Sendable {
        /// Only what cannot change a single pixel: pixels a later opaque draw replaces.
        case exact
        /// Also what cannot change any channel of the result by more than 1 (see `CoverageMask`):
        /// the tolerance (every channel within 1/255 of drawing every marker).
        case withinOne
    }

    /// `sweepAbove`: rasters around which the static grid counts at least this many markers
    /// (`estimate`: an upper bound from node counts) go through the node sweep (see the type's
    /// documentation; 0: every raster does). Only with `.withinOne`. The default 500,000 (about
    /// 8 markers per device pixel of a 256 px tile) is where the sweep paid off in marker-bench's
    /// in-process rows: 2.5x less CPU for the z0 tile over 1M markers, 6x over 10M, but no gain
    /// (up to 45 % more) for z4 and z10 city tiles holding fewer markers per pixel. Measured again
    /// with the block mask (`CoverageMask.blockBits`; `marker-bench --only citytiles`, 10M, 500
    /// tiles per zoom, load average 5-6): the sweep for every tile costs more at every zoom, render
    /// CPU p50 / p99 z10 9.87 / 23.37 ms against 5.30 / 12.45 ms, z14 1.27 / 3.90 against
    /// 0.77 / 2.79 ms, z18 0.31 / 0.69 against 0.04 / 0.17 ms, so the threshold stays.
    public init(sprites: IconSpriteCache, culling: Culling = .withinOne, sweepAbove: Int = 500_000) {
        self.sprites = sprites
        self.culling = culling
        self.sweepAbove = sweepAbove
    }

    /// Convenience: pins through a fresh `PinSpriteCache`, image icons from `images`.
    public convenience init(culling: Culling = .withinOne, sweepAbove: Int = 500_000,
                            images: @escaping @Sendable (String) -> RGBAImage? = { _ in nil }) {
        self.init(sprites: IconSpriteCache(images: images), culling: culling, sweepAbove: sweepAbove)
    }

    struct Item {
        var slot: Int32
        var x: Int32
        var y: Int32
        var sprite: Int32
        var zIndex: Int32
        var copy: Int32
        /// The marker's world y (with the z-index, the draw order up to ties).
        var worldY: UInt32
        /// Set by `cullExact`: where this draw's clip starts in its `clips`.
        var clip: Int32 = 0
    }

    /// Turns candidates into items: the sprite of each style once, the sprite's top-left relative
    /// to the canvas for each world copy (-1, 0, 1) whose sprite touches the canvas.
    struct Placer {
        let renderer: TileRenderer
        let layer: MarkerLayer
        let view: RasterView
        var spriteOfStyle: [Int32] = []
        var sprites: [TileSprite] = []
        /// Per sprite index: what placing a marker needs (no reference-counted storage per marker).
        var geometry: [(anchorX: Int64, anchorY: Int64, width: Int64, height: Int64, blank: Bool)] = []
        var failure: RenderError? = nil

        /// `view.copies`.
        let copies: ClosedRange<Int>

        init(_ renderer: TileRenderer, _ layer: MarkerLayer, _ view: RasterView) {
            self.renderer = renderer; self.layer = layer; self.view = view
            copies = view.copies
        }

        /// The sprite index of a style index (nil, with `failure` set, when it cannot be drawn).
        mutating func sprite(style: UInt32) -> Int32? {
            let si = Int(style)
            if si >= spriteOfStyle.count { spriteOfStyle.append(contentsOf: repeatElement(-1, count: si + 1 - spriteOfStyle.count)) }
            if spriteOfStyle[si] >= 0 { return spriteOfStyle[si] }
            do throws(RenderError) {
                let sprite = try renderer.sprites.sprite(layer.styles.style(at: style), density: view.density)
                let sIndex = Int32(sprites.count)
                sprites.append(sprite)
                geometry.append((Int64(sprite.anchorX), Int64(sprite.anchorY), Int64(sprite.width), Int64(sprite.height), sprite.isBlank))
                spriteOfStyle[si] = sIndex
                return sIndex
            } catch {
                if failure == nil { failure = error }
                return nil
            }
        }

        /// Appends the items of `c`; true when its sprite touches the canvas.
        @inline(__always) mutating func place(_ c: TileCandidate, into items: inout [Item]) -> Bool {
            guard let sIndex = sprite(style: c.style) else { return false }
            let g = geometry[Int(sIndex)]
            if g.blank { return false }
            let w = Int64(view.width), h = Int64(view.height)
            let top = view.pixelY(c.y) - g.anchorY
            if top >= h || top + g.height <= 0 { return false }
            // The world copies left to right (a marker near the antimeridian shows on both sides).
            var touched = false
            for k in copies {
                let left = view.pixelX(c.x, copy: k) - g.anchorX
                if left >= w || left + g.width <= 0 { continue }
                items.append(Item(slot: c.slot, x: Int32(left), y: Int32(top), sprite: sIndex, zIndex: c.zIndex, copy: Int32(k), worldY: c.y))
                touched = true
            }
            return touched
        }
    }

    /// The markers to draw, as items with the sprite's top-left relative to the canvas.
    /// `markers` counts those whose sprite touches the canvas.
    /// `bulk` (default true): with one style in use, `collectOneStyle`; false, a call per marker
    /// whatever the styles (what tests compare `collectOneStyle` with).
    func collect(_ layer: MarkerLayer, _ view: RasterView, now: Int64,
                 bulk: Bool = true) throws(RenderError) -> (items: [Item], sprites: [TileSprite], markers: Int) {
        let x0 = Double(view.originX) / view.scale, x1 = Double(view.originX + Int64(view.width)) / view.scale
        let y0 = Double(view.originY) / view.scale, y1 = Double(view.originY + Int64(view.height)) / view.scale
        // With one style in use every marker has it: the marker table's style column (a random
        // read per marker of a big layer) is not read.
        var only: UInt32? = nil, styles = 0
        layer.styles.forEachInUse { i, _ in only = i; styles += 1 }
        if bulk && styles == 1 {
            return try collectOneStyle(layer, view, style: only!, now: now, x0: x0, x1: x1, y0: y0, y1: y1)
        }
        var items: [Item] = []
        var placer = Placer(self, layer, view)
        var markers = 0
        let single: UInt32 = styles == 1 ? only! : .max
        layer.forEachStaticMarker(viewX: [(x0, x1)], viewY0: y0, viewY1: y1, unitsPerPx: view.unitsPerPx,
                                  marginPx: TileRenderer.marginPx, now: now, readStyles: styles != 1) { c in
            var c = c
            if c.style == .max { c.style = single }
            if placer.place(c, into: &items) { markers += 1 }
        }
        if let failure = placer.failure { throw failure }
        return (items, placer.sprites, markers)
    }

    /// `collect` when every marker has the same style (`style`): the grid's runs of entries
    /// (`MarkerLayer.forEachStaticRun`) placed in a loop without a call per marker, each run's
    /// items appended at once. The same items in the same order as `Placer.place` per marker.
    func collectOneStyle(_ layer: MarkerLayer, _ view: RasterView, style: UInt32, now: Int64,
                         x0: Double, x1: Double, y0: Double, y1: Double) throws(RenderError) -> (items: [Item], sprites: [TileSprite], markers: Int) {
        var placer = Placer(self, layer, view)
        // The sprite is made when the first marker comes (as `Placer.place` makes it): a view
        // without markers makes none, and throws nothing.
        var sprite: (index: Int32, g: (anchorX: Int64, anchorY: Int64, width: Int64, height: Int64, blank: Bool))? = nil
        let w = Int64(view.width), h = Int64(view.height)
        let copies = placer.copies
        let oneCopy = copies == 0...0
        // Integer arithmetic where it is exact (every tile), the Double formula otherwise.
        let exact = view.integerScale
        var items: [Item] = []
        var markers = 0
        var capacity = 256
        var scratch = UnsafeMutablePointer<Item>.allocate(capacity: capacity)
        defer { scratch.deallocate() }
        layer.forEachStaticRun(viewX: [(x0, x1)], viewY0: y0, viewY1: y1, unitsPerPx: view.unitsPerPx,
                               marginPx: TileRenderer.marginPx, now: now) { run in
            if sprite == nil {
                guard let i = placer.sprite(style: style) else { return }
                sprite = (i, placer.geometry[Int(i)])
            }
            let (sIndex, g) = sprite!
            if g.blank { return }
            let topOffset = view.originY &+ g.anchorY, leftOffset = view.originX &+ g.anchorX
            let most = run.count * copies.count
            if most > capacity {
                scratch.deallocate()
                capacity = Swift.max(most, 2 * capacity)
                scratch = .allocate(capacity: capacity)
            }
            var n = 0
            for e in run {
                let top = (exact.map { RasterView.pixel(Int64(e.y), n: $0.n, shift: $0.shift, half: $0.half) } ?? view.pixelY(e.y) &+ view.originY) &- topOffset
                if top >= h || top &+ g.height <= 0 { continue }
                var touched = false
                if oneCopy {
                    let left = (exact.map { RasterView.pixel(Int64(e.x), n: $0.n, shift: $0.shift, half: $0.half) } ?? view.pixelX(e.x, copy: 0) &+ view.originX) &- leftOffset
                    if left >= w || left &+ g.width <= 0 { continue }
                    (scratch + n).initialize(to: Item(slot: e.slot, x: Int32(truncatingIfNeeded: left), y: Int32(truncatingIfNeeded: top),
                                                      sprite: sIndex, zIndex: e.z, copy: 0, worldY: e.y))
                    n &+= 1
                    touched = true
                } else {
                    for k in copies {
                        let left = view.pixelX(e.x, copy: k) &- g.anchorX
                        if left >= w || left &+ g.width <= 0 { continue }
                        (scratch + n).initialize(to: Item(slot: e.slot, x: Int32(truncatingIfNeeded: left), y: Int32(truncatingIfNeeded: top),
                                                          sprite: sIndex, zIndex: e.z, copy: Int32(k), worldY: e.y))
                        n &+= 1
                        touched = true
                    }
                }
                if touched { markers &+= 1 }
            }
            if n > 0 {
                if items.capacity < items.count + n { items.reserveCapacity(Swift.max(items.count + n, 2 * items.capacity)) }
                items.append(contentsOf: UnsafeBufferPointer(start: scratch, count: n))
            }
        }
        if let failure = placer.failure { throw failure }
        return (items, placer.sprites, markers)
    }

    /// Renders `view` (see the type's documentation) on the calling thread. The pixels are a
    /// function of the layer's content, `view` and `now` alone. Throws when a pin sprite cannot
    /// be drawn.
    public func render(_ layer: MarkerLayer, view: RasterView, now: Int64) throws(RenderError) -> RenderedRaster {
        if usesSweep(layer, view) { return try renderSweep(layer, view, now: now) }
        let (items, sprites, markers) = try collect(layer, view, now: now)
        let (canvas, draws) = renderItems(layer, items, sprites, width: view.width, height: view.height)
        return RenderedRaster(canvas: canvas, markers: markers, draws: draws, visited: markers)
    }

    /// Steps 1-3 for collected items on this thread: the canvas and the draws performed.
    func renderItems(_ layer: MarkerLayer, _ items: [Item], _ sprites: [TileSprite], width: Int, height: Int) -> (canvas: TileCanvas, draws: Int) {
        let (kept, clips) = cull(layer, items, sprites, width: width, height: height)
        var canvas = TileCanvas(width: width, height: height)
        let draws = Self.draw(kept, clips, sprites, on: &canvas)
        return (canvas, draws)
    }

    /// `draw`'s limit for copying the sprites into one buffer: bytes of sprite pixels and spans per
    /// kept draw (a pin sprite is 9 KB at density 1; a dense z10 tile keeps thousands of draws).
    static let packBytesPerDraw = 256

    /// Step 3: draws the culled items (in draw order), a run of identical draws at once, each on
    /// exactly the pixels of its clip; returns the compositions performed.
    static func draw(_ kept: [Item], _ clips: [UInt64], _ sprites: [TileSprite], on canvas: inout TileCanvas) -> Int {
        // Every sprite's pixels and spans in two flat arrays, so that the loop holds plain
        // pointers: no reference counting or uniqueness check per draw (a dense tile keeps
        // thousands). Only where the copy is small beside the draws (at most `packBytesPerDraw`
        // bytes of sprites per kept draw): big image icons in a sparse raster are drawn from
        // their own storage, one draw at a time.
        var spriteBytes = 0
        for s in sprites { spriteBytes += s.image.pixels.count + 4 * s.image.rowSpans.count }
        if spriteBytes > packBytesPerDraw * kept.count {
            let images = sprites.map(\.image)
            return forEachRun(kept, clips) { it, clips in
                canvas.draw(sprite: images[Int(it.sprite)], atX: Int(it.x), y: Int(it.y), times: clips.count, clips: clips)
            }
        }
        var pixels: [UInt8] = [], spans: [Int32] = []
        var at: [(pixels: Int, spans: Int)] = []
        for s in sprites {
            at.append((pixels.count, s.image.rowSpans.isEmpty ? -1 : spans.count))
            pixels += s.image.pixels; spans += s.image.rowSpans
        }
        let (width, height) = (canvas.width, canvas.height)
        var draws = 0
        canvas.withCompositing { dst in
            var drew = false
            pixels.withUnsafeBytes { px in
            spans.withUnsafeBufferPointer { sp in
                let refs = zip(sprites, at).map { s, a in
                    TileCanvas.SpritePixels(pixels: px.baseAddress.map { $0 + a.pixels }, spans: a.spans < 0 ? nil : sp.baseAddress! + a.spans,
                                            width: s.image.width, height: s.image.height)
                }
                refs.withUnsafeBufferPointer { refs in
                    draws = forEachRun(kept, clips) { it, clips in
                        if TileCanvas.composite(refs[Int(it.sprite)], onto: dst, width: width, height: height,
                                                atX: Int(it.x), y: Int(it.y), times: clips.count, clips: clips) {
                            drew = true
                        }
                    }
                }
            }
            }
            return drew
        }
        return draws
    }

    /// Calls `body` for each run of identical kept draws (same sprite, same pixel) in order, with
    /// the run's first item and its draws' clips from the top of the draw order down (the run's
    /// last draw, culled first against the fewest settled pixels, first: each clip holds the
    /// pixels of the next); returns the number of runs.
    @inline(__always)
    private static func forEachRun(_ kept: [Item], _ clips: [UInt64],
                                   _ body: (Item, UnsafeBufferPointer<UnsafePointer<UInt64>>) -> Void) -> Int {
        if kept.isEmpty { return 0 }
        var runs = 0
        var run: [UnsafePointer<UInt64>] = []
        kept.withUnsafeBufferPointer { kept in
        clips.withUnsafeBufferPointer { clips in
            let base = clips.baseAddress!
            var i = 0
            while i < kept.count {
                let it = kept[i]
                var j = i + 1
                while j < kept.count && kept[j].sprite == it.sprite && kept[j].x == it.x && kept[j].y == it.y { j += 1 }
                if j == i + 1 {
                    var one = base + Int(it.clip)
                    withUnsafePointer(to: &one) { body(it, UnsafeBufferPointer(start: $0, count: 1)) }
                } else {
                    run.removeAll(keepingCapacity: true)
                    for k in stride(from: j - 1, through: i, by: -1) { run.append(base + Int(kept[k].clip)) }
                    run.withUnsafeBufferPointer { body(it, $0) }
                }
                runs += 1
                i = j
            }
        }
        }
        return runs
    }

    /// Renders the XYZ tile and encodes it (PNG, `PNGEncodeOptions.tile`) on the calling thread;
    /// an empty tile is the shared `TransparentTile`. The bytes are a function of the layer's
    /// content, the tile, its size and density, `now` and `debugOverlay` alone. `debugOverlay`
    /// draws the tile's border and "z/x/y entries=N".
    ///
    /// `keepCanvasFrom`: when at least this many markers touch the tile (`markers`), `canvas` is
    /// the rendered raster too, for patching it after a small change (`renderPatched`); else nil.
    /// Default `.max`: never. Never with `debugOverlay` (the overlay is not part of the markers'
    /// raster).
    public func renderTile(_ layer: MarkerLayer, tile: TileID, tileSize: Int, density: Int, now: Int64,
                           debugOverlay: Bool = false, keepCanvasFrom: Int = .max)
        throws(RenderError) -> (png: [UInt8], empty: Bool, markers: Int, canvas: TileCanvas?) {
        let view = RasterView.tile(tile, tileSize: tileSize, density: density)
        var r = try render(layer, view: view, now: now)
        let kept = !debugOverlay && r.markers >= keepCanvasFrom ? r.canvas : nil
        if debugOverlay {
            let overlay = try DebugOverlay.image(width: r.canvas.width, height: r.canvas.height, density: density,
                                                 text: "\(tile.z)/\(tile.x)/\(tile.y) entries=\(r.markers)")
            r.canvas.draw(sprite: overlay, atX: 0, y: 0)
        }
        return (r.canvas.encodePNG(options: .tile), r.canvas.isEmpty, r.markers, kept)
    }

    /// Sorts `items[range]` in the exact draw order (`less`): insertion sort for short runs (ties
    /// of the radix key, batches of the sweep), which unlike a sorting closure does not copy the
    /// layer's value for each call.
    static func sortInDrawOrder(_ items: inout [Item], _ range: Range<Int>, _ layer: MarkerLayer) {
        if range.count > 32 {
            items[range].sort { TileRenderer.less(layer, $0, $1) }
            return
        }
        var i = range.lowerBound + 1
        while i < range.upperBound {
            let x = items[i]
            var j = i
            while j > range.lowerBound && TileRenderer.less(layer, x, items[j - 1]) { items[j] = items[j - 1]; j -= 1 }
            items[j] = x
            i += 1
        }
    }

    /// The exact draw order of two items.
    @inline(__always) static func less(_ layer: MarkerLayer, _ a: Item, _ b: Item) -> Bool {
        if a.slot != b.slot { return layer.drawOrderLess(a.slot, b.slot) }
        return a.copy < b.copy
    }

    /// Steps 1-2 of the type's documentation: the draws that can change a pixel, in draw order,
    /// with their clip spans (see `cullExact`).
    func cull(_ layer: MarkerLayer, _ items: [Item], _ sprites: [TileSprite], width: Int, height: Int) -> (items: [Item], clips: [UInt64]) {
        if items.isEmpty { return ([], []) }
        var mask = coverageMask(width: width, height: height)
        return Self.cullExact(Self.inDrawOrder(layer, items), sprites, &mask)
    }

    /// A fresh mask for step 2 of a `width x height` raster, counting settled pixels as `culling` says.
    func coverageMask(width: Int, height: Int) -> CoverageMask {
        CoverageMask(width: width, height: height, exact: culling == .exact)
    }

    /// Step 1 of the type's documentation: `items` (not empty) sorted in the exact draw order.
    static func inDrawOrder(_ layer: MarkerLayer, _ items: [Item]) -> [Item] {
        // Ranks of the z-indexes present.
        var zs: [Int32: Int] = [:]
        var seenZ = items[0].zIndex
        zs[seenZ] = 0
        // (A hash per change of z-index, not per item: usually there is one z-index.)
        for it in items where it.zIndex != seenZ { seenZ = it.zIndex; zs[seenZ] = 0 }
        let zsorted = zs.keys.sorted()
        guard zsorted.count < 65536 else {
            // Rare (more than 65535 z-indexes in one raster): a comparison sort.
            return items.sorted { TileRenderer.less(layer, $0, $1) }
        }
        for (r, z) in zsorted.enumerated() { zs[z] = r }
        // Step 1: (z-index rank, world y) orders everything but markers with the same z-index and
        // world y (and the world copies of one marker): those runs are sorted exactly.
        var lastZ = items[0].zIndex, lastRank = zs[lastZ]!
        let keys = [UInt64](unsafeUninitializedCapacity: items.count) { k, count in
            for (i, it) in items.enumerated() {
                if it.zIndex != lastZ { lastZ = it.zIndex; lastRank = zs[lastZ]! }
                k[i] = UInt64(lastRank) << 32 | UInt64(it.worldY)
            }
            count = items.count
        }
        let order = RadixSort.order(keys)
        let n = order.count
        var sorted = [Item](unsafeUninitializedCapacity: n) { out, count in
            items.withUnsafeBufferPointer { src in
                order.withUnsafeBufferPointer { o in
                    for i in 0..<n { (out.baseAddress! + i).initialize(to: src[Int(o[i])]) }
                }
            }
            count = n
        }
        // The runs of equal keys (same z-index and world y), found on the sorted items: a
        // sequential read, not one of `keys` through `order` per item.
        var ties: [Range<Int>] = []
        sorted.withUnsafeBufferPointer { p in
            var s = 0
            while s < n {
                let z = p[s].zIndex, y = p[s].worldY
                var t = s &+ 1
                while t < n && p[t].worldY == y && p[t].zIndex == z { t &+= 1 }
                if t &- s > 1 { ties.append(s..<t) }
                s = t
            }
        }
        for r in ties {
            // Mostly the world copies of one marker (no need to look at the layer).
            if sorted[r].allSatisfy({ $0.slot == sorted[r.lowerBound].slot }) {
                sorted[r].sort { $0.copy < $1.copy }
            } else {
                Self.sortInDrawOrder(&sorted, r, layer)
            }
        }
        return sorted
    }

    /// Items in draw order: keeps those not covered by later ones, each with its clip
    /// (`CoverageMask.uncovered`: the sprite rows and, per row, the columns from the first to
    /// the last pixel not settled by later draws; `clips[item.clip...]`).
    ///
    /// `settledRows`: whether to keep `SettledRows` (nil: from `SettledRows.minItems` items up; its
    /// table of 2 bytes per sprite position costs more than it saves in sparse rasters).
    static func cullExact(_ items: [Item], _ sprites: [TileSprite], _ mask: inout CoverageMask,
                          settledRows: Bool? = nil) -> (items: [Item], clips: [UInt64]) {
        var kept: [Item] = []
        // Room for the usual case without regrowing (a dense z10 tile keeps about 40 % of its
        // draws, with a few clip rows each); reserved memory is not touched until used.
        kept.reserveCapacity(items.count)
        var clips = ClipBuffer(capacity: items.count * 4)
        let shapes = CoverageMask.Shapes(sprites)
        var rows: SettledRows? = settledRows ?? (items.count >= SettledRows.minItems)
            ? SettledRows(width: mask.width, height: mask.height) : nil
        for it in items.reversed() { cullOne(it, shapes, &mask, &kept, &clips, rows: &rows) }
        kept.reverse()
        return (kept, clips.array)
    }

    /// Per sprite position (top-left `x` in `-shape.width ..< width`, `y` in
    /// `-shape.height ..< height`, the first `CoverageMask.memoShapes` shapes), the sprite row
    /// from which down a draw there was last found settled (the end of its clip's rows).
    /// Settling only grows, so a later-visited draw of the same sprite there is settled from that
    /// row down too, and its test (`CoverageMask.uncovered`) stops at that row: in a dense tile,
    /// markers stacked on one position and kept for their top rows cost a few rows each, not the
    /// sprite's height.
    final class SettledRows {
        /// Rasters with fewer items do without (`cullExact`).
        static let minItems = 1024
        let width: Int, height: Int
        /// Per shape (allocated on first use): 0 unknown, else the row plus 1.
        private let rows: UnsafeMutablePointer<UnsafeMutablePointer<UInt16>?>

        init(width: Int, height: Int) {
            self.width = width; self.height = height
            rows = .allocate(capacity: CoverageMask.memoShapes)
            rows.initialize(repeating: nil, count: CoverageMask.memoShapes)
        }

        deinit {
            for s in 0..<CoverageMask.memoShapes { rows[s]?.deallocate() }
            rows.deallocate()
        }

        /// The rows of shape `s` (`height` rows high) at memo position `position`
        /// (`CoverageMask.memoPosition`, not -1) that may still hold a pixel not settled: `0 ..< bound`.
        @inline(__always) func bound(_ s: Int, at position: Int, height: Int) -> Int {
            guard let table = rows[s] else { return height }
            let r = Int(table[position])
            return r == 0 ? height : r &- 1
        }

        /// Records that shape `s` (`shape`) at memo position `position` (not -1) is settled from
        /// row `row` down.
        @inline(__always) func set(_ s: Int, _ shape: CoverageMask.Shapes.Shape, at position: Int, row: Int) {
            if rows[s] == nil { allocate(s, shape) }
            rows[s]![position] = UInt16(truncatingIfNeeded: row &+ 1)
        }

        private func allocate(_ s: Int, _ shape: CoverageMask.Shapes.Shape) {
            let n = (width + shape.width) * (height + shape.height)
            let table = UnsafeMutablePointer<UInt16>.allocate(capacity: n)
            table.initialize(repeating: 0, count: n)
            rows[s] = table
        }
    }

    /// The next draw down the draw order: appended to `kept` (in reverse draw order) with its clip
    /// unless every pixel of it is settled, then added to the mask. A sprite position found
    /// fully settled is remembered (`CoverageMask.markSettled`), so that later draws of the same
    /// sprite there (stacked markers) cost one bit test.
    @inline(__always)
    static func cullOne(_ item: Item, _ shapes: CoverageMask.Shapes, _ mask: inout CoverageMask, _ kept: inout [Item], _ clips: inout ClipBuffer) {
        var none: SettledRows? = nil
        cullOne(item, shapes, &mask, &kept, &clips, rows: &none)
    }

    /// `cullOne`, testing only the rows `rows` does not know to be settled, and recording the
    /// end of the clip's rows there.
    @inline(__always)
    static func cullOne(_ item: Item, _ shapes: CoverageMask.Shapes, _ mask: inout CoverageMask, _ kept: inout [Item], _ clips: inout ClipBuffer,
                        rows: inout SettledRows?) {
        let s = Int(item.sprite), x = Int(item.x), y = Int(item.y)
        let shape = shapes.shapes[s]
        // One position in both per-position tables (the memo and `rows`).
        let position = mask.memoPosition(s, shape, x: x, y: y)
        if position >= 0 && mask.knownSettled(s, at: position) { return }
        // Rows from `bound` down are settled: the test stops there (same answer, same clip).
        var tested = shape
        // (Optional chaining, not `if let`: binding the class would retain it for every draw.)
        if position >= 0 { tested.height = rows?.bound(s, at: position, height: shape.height) ?? shape.height }
        let at = clips.count
        // The draw's clip, added to the mask as it is found (only the clip's pixels can change:
        // the rest of the draw is settled).
        if !mask.uncoveredThenAdd(tested, shape, x: x, y: y, into: &clips) {
            if position >= 0 { mask.markSettled(s, shape, at: position) }
            return
        }
        if position >= 0 { rows?.set(s, shape, at: position, row: Int(clips[at &+ 1])) }
        var it = item
        it.clip = Int32(truncatingIfNeeded: at)
        kept.append(it)
    }
}

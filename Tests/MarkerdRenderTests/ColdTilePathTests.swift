import Foundation
import MarkerdCore
@testable import MarkerdRender
import MarkerdTestSupport
import Synchronization
import Testing

/// The cold-tile path's pieces added for dense tiles (`CoverageMask.add(...clip:)` against the
/// full `add` is in CullingBoundTests): `cullExact`'s row memo against testing every row, `RadixSort` against a comparison
/// sort, `RasterView`'s pixel rounding and world copies against their definitions, and two-band
/// renders (`TileRenderer.renderBands`) against brute force and against the one-thread render.
@Suite struct ColdTilePathTests {
    let now: Int64 = 1_700_000_000_000

    /// Round `round`'s dense random layer (`randomLayer`): `markers` to `markers + upTo - 1`
    /// markers spread 0.005, 0.05 or 0.5 degrees (by round) around a random center, which lies on
    /// the antimeridian every third round when `antimeridian`; and a point 20 degrees of latitude
    /// away from the center, where a z14 tile shows no marker.
    func roundLayer(_ round: Int, markers: Int, upTo: Int = 800, antimeridian: Bool = true,
                    _ rng: inout SplitMix64) throws -> (center: LatLng, far: LatLng, layer: MarkerLayer) {
        let center = LatLng(latitude: (rng.unit() - 0.5) * 140,
                            longitude: antimeridian && round % 3 == 0 ? -179.995 : (rng.unit() - 0.5) * 340)
        let layer = try randomLayer(count: markers + Int(rng.next() % UInt64(upTo)), center: center,
                                    spreadDegrees: [0.005, 0.05, 0.5][round % 3], rng: &rng, now: now)
        let far = LatLng(latitude: center.latitude > 0 ? center.latitude - 20 : center.latitude + 20, longitude: center.longitude)
        return (center, far, layer)
    }

    /// Step 1 (`inDrawOrder`: the radix sort by z-index rank and world y, then each run of equal
    /// keys sorted exactly) gives the exact draw order (`TileRenderer.less`) on random layers
    /// with stacked duplicates (equal keys of different markers, three z-indexes) and world
    /// copies on the antimeridian, below and above the radix sort's 2,048 items.
    @Test func drawOrderMatchesComparisonSort() throws {
        var rng = SplitMix64(seed: testSeed())
        let r = makeRenderer()
        var ties = 0, copies = 0, large = 0
        for round in 0..<9 {
            let (center, _, layer) = try roundLayer(round, markers: round < 4 ? 600 : 4000, upTo: 200, &rng)
            // Antimeridian rounds (markers just east of -180): the world's last z8 tile, where
            // they show as copies from the next world; else a z6 tile holding the whole spread.
            let tile = round % 3 == 0 ? TileID.containing(LatLng(latitude: center.latitude, longitude: 179.9999), zoom: 8)
                : TileID.containing(center, zoom: 6)
            let items = try r.collect(layer, RasterView.tile(tile, tileSize: 256, density: 1), now: now).items
            let expected = items.sorted { TileRenderer.less(layer, $0, $1) }
            let got = TileRenderer.inDrawOrder(layer, items)
            func key(_ it: TileRenderer.Item) -> [Int32] { [it.slot, it.copy] }
            #expect(got.map(key) == expected.map(key), "round \(round): \(items.count) items")
            ties += zip(expected, expected.dropFirst()).filter { $0.zIndex == $1.zIndex && $0.worldY == $1.worldY && $0.slot != $1.slot }.count
            copies += items.filter { $0.copy != 0 }.count
            if items.count >= 2048 { large += 1 }
        }
        #expect(ties > 100, "only \(ties) neighbours shared a key")
        #expect(copies > 0 && large >= 4, "\(copies) world copies, \(large) rounds of 2,048 items or more")
    }

    /// `cullExact`'s row memo (`SettledRows`: a draw's test stops at the row from which a draw
    /// of the same sprite at the same position was settled) keeps exactly the draws and clips of
    /// testing every row, on dense random layers where many markers share positions.
    @Test(arguments: [TileRenderer.Culling.exact, .withinOne])
    func settledRowsLeaveTheCullUnchanged(culling: TileRenderer.Culling) throws {
        var rng = SplitMix64(seed: testSeed())
        let r = makeRenderer(culling)
        var stacked = 0
        for round in 0..<6 {
            let center = LatLng(latitude: (rng.unit() - 0.5) * 140, longitude: (rng.unit() - 0.5) * 340)
            let layer = try randomLayer(count: 1500, center: center, spreadDegrees: [0.002, 0.02][round % 2], rng: &rng, now: now)
            let view = RasterView.tile(TileID.containing(center, zoom: 8 + Int(rng.next() % 5)), tileSize: 256, density: 1 + Int(rng.next() % 2))
            let c = try r.collect(layer, view, now: now)
            let sorted = c.items.sorted { TileRenderer.less(layer, $0, $1) }
            var withRows = CoverageMask(width: view.width, height: view.height, exact: culling == .exact)
            let fast = TileRenderer.cullExact(sorted, c.sprites, &withRows, settledRows: true)
            var everyRow = CoverageMask(width: view.width, height: view.height, exact: culling == .exact)
            let shapes = CoverageMask.Shapes(c.sprites)
            var kept: [TileRenderer.Item] = [], clips = ClipBuffer(capacity: 0)
            for it in sorted.reversed() { TileRenderer.cullOne(it, shapes, &everyRow, &kept, &clips) }
            kept.reverse()
            func key(_ it: TileRenderer.Item) -> [Int32] { [it.slot, it.x, it.y, it.sprite, it.copy, it.clip] }
            #expect(fast.items.map(key) == kept.map(key), "round \(round): kept draws differ")
            #expect(fast.clips == clips.array, "round \(round): clips differ")
            #expect(withRows.state == everyRow.state, "round \(round): masks differ")
            stacked += sorted.count - Set(sorted.map { [$0.x, $0.y, $0.sprite] }).count
        }
        #expect(stacked > 1000, "only \(stacked) draws shared a position")
    }

    /// With one style in use, `collect` places the grid's runs in bulk (`collectOneStyle`): the
    /// same items in the same order, and the same marker count, as a call per marker. Tiles at
    /// every zoom around dense and spread layers (a third on the antimeridian: two world copies),
    /// bands counted from a row, and snapshots at fractional zooms (the Double rounding).
    @Test func oneStyleCollectMatchesPerMarker() throws {
        var rng = SplitMix64(seed: testSeed())
        let r = makeRenderer()
        var items = 0, copies = 0, views = 0
        for round in 0..<18 {
            let center = LatLng(latitude: (rng.unit() - 0.5) * 140, longitude: round % 3 == 0 ? -179.995 : (rng.unit() - 0.5) * 340)
            let layer = try randomLayer(count: 300 + Int(rng.next() % 600), center: center, spreadDegrees: [0.005, 0.05, 0.5][round % 3],
                                    rng: &rng, now: now, oneStyle: round % 6)
            for _ in 0..<8 {
                let view: RasterView
                switch rng.next() % 3 {
                case 0:
                    view = .snapshot(center: center, zoom: 4 + rng.unit() * 14, width: 64 + Int(rng.next() % 400),
                                     height: 64 + Int(rng.next() % 400), density: 1 + Int(rng.next() % 3))
                default:
                    // Low zooms on the antimeridian: markers drawn in two world copies.
                    let z = round % 3 == 0 && rng.next() % 2 == 0 ? Int(rng.next() % 3) : Int(rng.next() % 19)
                    view = .tile(TileID.containing(center, zoom: z), tileSize: rng.next() % 3 == 0 ? 512 : 256, density: 1 + Int(rng.next() % 3))
                }
                let from = rng.next() % 2 == 0 ? Int.min : Int(rng.next() % UInt64(view.height))
                let bulk = try r.collect(layer, view, now: now, countFromRow: from)
                let each = try r.collect(layer, view, now: now, countFromRow: from, bulk: false)
                func key(_ it: TileRenderer.Item) -> [Int64] {
                    [Int64(it.slot), Int64(it.x), Int64(it.y), Int64(it.sprite), Int64(it.zIndex), Int64(it.copy), Int64(it.worldY)]
                }
                #expect(bulk.items.map(key) == each.items.map(key), "round \(round) view \(view): items differ")
                #expect(bulk.markers == each.markers, "round \(round) view \(view): \(bulk.markers) markers against \(each.markers)")
                #expect(bulk.sprites.map(\.width) == each.sprites.map(\.width))
                items += bulk.items.count; copies += bulk.items.filter { $0.copy != 0 }.count; views += 1
            }
        }
        #expect(items > 10_000 && copies > 0, "only \(items) items, \(copies) in other world copies")
        print("one-style collect: \(views) views, \(items) items, \(copies) in other world copies")
    }

    /// `RasterView.integerScale` and `pixel`: every tile's scale is n / 2^shift (2^0 for 512 px
    /// at density 2 and z22), and the integer
    /// rounding equals `pixelX` / `pixelY` (Double) for any world position and copy; other
    /// scales have none.
    @Test func integerPixelsMatchDoublePixels() {
        var rng = SplitMix64(seed: testSeed())
        for _ in 0..<3000 {
            let z = Int(rng.next() % 23), n = UInt32(1) << UInt32(z)
            let tile = TileID(z: z, x: UInt32(rng.next() % UInt64(n)), y: UInt32(rng.next() % UInt64(n)))!
            let size = rng.next() % 2 == 0 ? 256 : 512, density = 1 + Int(rng.next() % 3)
            let view = RasterView.tile(tile, tileSize: size, density: density)
            guard let s = view.integerScale else { Issue.record("tile \(tile) \(size) d\(density): no integer scale"); continue }
            #expect(s.n << (32 - s.shift) == Int64(size * density) << Int64(z), "tile \(tile) \(size) d\(density): \(s)")
            for _ in 0..<20 {
                let x = UInt32(truncatingIfNeeded: rng.next()), y = UInt32(truncatingIfNeeded: rng.next())
                #expect(RasterView.pixel(Int64(y), n: s.n, shift: s.shift, half: s.half) - view.originY == view.pixelY(y), "tile \(tile): y \(y)")
                for k in -1...1 {
                    let w = Int64(x) + Int64(k) << 32
                    #expect(RasterView.pixel(w, n: s.n, shift: s.shift, half: s.half) - view.originX == view.pixelX(x, copy: k), "tile \(tile): x \(x) copy \(k)")
                }
            }
        }
        let snapshot = RasterView.snapshot(center: LatLng(latitude: 10, longitude: 20), zoom: 7.3, width: 300, height: 200, density: 2)
        #expect(snapshot.integerScale == nil)
    }

    /// `RadixSort.order` is the stable sort by key: small and large key ranges, few and many
    /// distinct keys, below and above the comparison-sort cutoff.
    @Test func radixSortIsStableSortByKey() {
        var rng = SplitMix64(seed: testSeed())
        for round in 0..<60 {
            let n = [0, 1, 5, 2047, 2048, 5000, 20000][round % 7]
            let bits = UInt64([1, 8, 23, 33, 47, 64][round % 6])
            let base = rng.next()
            let keys = (0..<n).map { _ in base &+ (bits == 64 ? rng.next() : rng.next() % (UInt64(1) << bits)) }
            let expected = (0..<n).sorted { (keys[$0], $0) < (keys[$1], $1) }.map(Int32.init)
            #expect(mismatch(RadixSort.order(keys), expected) == nil, "round \(round): n \(n), \(bits)-bit range")
        }
    }

    /// `RasterView.floor` is `rounded(.down)`; `copies` holds every world copy in which some
    /// position's sprite (up to 3,072 px) can touch the canvas.
    @Test func pixelRoundingAndCopies() {
        var rng = SplitMix64(seed: testSeed())
        for v in [0.0, -0.0, 0.5, -0.5, 1, -1, 1e15 + 0.5, -1e15 - 0.5, 3.999999999, -3.000000001] {
            #expect(RasterView.floor(v) == Int64(v.rounded(.down)), "floor(\(v))")
        }
        for _ in 0..<10_000 {
            let v = (rng.unit() - 0.5) * Double(UInt64(1) << (rng.next() % 50))
            #expect(RasterView.floor(v) == Int64(v.rounded(.down)), "floor(\(v))")
        }
        for _ in 0..<2000 {
            let z = Int(rng.next() % 23), n = UInt32(1) << UInt32(z)
            let tile = TileID(z: z, x: UInt32(rng.next() % UInt64(n)), y: 0)!
            let view = RasterView.tile(tile, tileSize: rng.next() % 2 == 0 ? 256 : 512, density: 1 + Int(rng.next() % 3))
            let copies = view.copies
            for k in -1...1 where !copies.contains(k) {
                // No position of copy k comes within 3,072 px of the canvas.
                let left = view.pixelX(0, copy: k), right = view.pixelX(UInt32.max, copy: k)
                #expect(left >= Int64(view.width) + 3072 || right < -3072, "tile \(tile): copy \(k) left out but reaches the canvas")
            }
            #expect(copies.contains(0))
        }
    }

    /// `bandCut` gives the cut with the smallest larger band, counted directly.
    @Test func bandCutBalancesTheBands() throws {
        var rng = SplitMix64(seed: testSeed())
        let sprites = (0..<3).map { _ in ClippedDrawTests.randomSprite(&rng) }
        for round in 0..<200 {
            let height = 2 + Int(rng.next() % 300)
            let items = (0..<Int(rng.next() % 400)).map { i in
                TileRenderer.Item(slot: Int32(i), x: 0, y: Int32(Int(rng.next() % UInt64(height + 80)) - 40),
                                  sprite: Int32(rng.next() % 3), zIndex: 0, copy: 0, worldY: 0)
            }
            // Half the rounds weigh each band's covered rows too (`renderBandsPNG`'s PNG rows).
            let rowWeight = round % 2 == 0 ? 0 : Int(rng.next() % 30)
            let covered = (0..<height).map { r in items.contains { Int($0.y) <= r && r < Int($0.y) + sprites[Int($0.sprite)].height } }
            func load(_ s: Int) -> Int {
                let top = items.filter { Int($0.y) < s }.count
                let bottom = items.filter { Int($0.y) + sprites[Int($0.sprite)].height > s }.count
                return max(top + rowWeight * covered[..<s].filter { $0 }.count, bottom + rowWeight * covered[s...].filter { $0 }.count)
            }
            let cut = TileRenderer.bandCut(items, sprites, height: height, rowWeight: rowWeight)
            try #require(cut >= 1 && cut < height, "round \(round): cut \(cut) outside 1..<\(height)")
            let best = (1..<height).map(load).min()!
            #expect(load(cut) == best, "round \(round): cut \(cut) loads \(load(cut)), the best cut \(best)")
        }
    }

    /// Two bands, stacked: within the renderer's tolerance of brute force (equal to it with
    /// exact culling) and within 1 of the one-thread render, on dense random layers (pins of
    /// several sizes, image icons, three z-indexes, near the antimeridian too) at every density
    /// and both tile sizes; `markers` and the canvas size as in one thread.
    @Test(arguments: [TileRenderer.Culling.exact, .withinOne])
    func bandsMatchBruteForce(culling: TileRenderer.Culling) throws {
        var rng = SplitMix64(seed: testSeed())
        let r = makeRenderer(culling)
        var worst = 0, items = 0
        for round in 0..<6 {
            let (center, _, layer) = try roundLayer(round, markers: 800, &rng)
            for _ in 0..<3 {
                let tile = TileID.containing(center, zoom: 4 + Int(rng.next() % 9))
                let size = rng.next() % 3 == 0 ? 512 : 256
                let view = RasterView.tile(tile, tileSize: size, density: 1 + Int(rng.next() % 3))
                let collected = try r.collect(layer, view, now: now)
                items += collected.items.count
                let bands = r.renderBands(layer, collected.items, collected.sprites, width: view.width, height: view.height)
                let one = r.renderItems(layer, collected.items, collected.sprites, width: view.width, height: view.height)
                let slow = try bruteForce(layer, view, now: now, sprites: r.sprites)
                #expect(bands.canvas.width == view.width && bands.canvas.height == view.height)
                #expect(bands.canvas.isEmpty == one.canvas.isEmpty, "round \(round) tile \(tile): emptiness differs")
                let diff = maxDifference(bands.canvas.pixels, slow.pixels)
                worst = max(worst, diff)
                #expect(diff <= tolerance(r), "\(culling) round \(round) tile \(tile) \(view): bands differ from brute force by \(diff)")
                #expect(maxDifference(bands.canvas.pixels, one.canvas.pixels) <= 1, "round \(round) tile \(tile): bands differ from one thread by more than 1")
            }
        }
        print("bands (\(culling)): \(items) draws collected, worst difference \(worst)")
    }

    /// The two-band tile (`renderBandsPNG`: each band rendered and deflated as one PNG segment on
    /// its own thread) is byte for byte the segmented PNG (`PNGCodec.encodeSegmented`, one
    /// thread) of the same two bands rendered one after the other and stacked, cut at the same
    /// row; decodes to exactly the stacked canvas and to within the renderer's tolerance of brute
    /// force; and is the shared transparent tile when nothing shows.
    @Test(arguments: [TileRenderer.Culling.exact, .withinOne])
    func pipelinedBandsPNGMatchesStackedBands(culling: TileRenderer.Culling) throws {
        var rng = SplitMix64(seed: testSeed())
        let r = makeRenderer(culling)
        var empty = 0
        for round in 0..<6 {
            let (center, far, layer) = try roundLayer(round, markers: 600, &rng)
            for k in 0..<3 {
                // The last tile of each round lies far from the markers: both bands empty.
                let tile = k == 2 ? TileID.containing(far, zoom: 14)
                    : TileID.containing(center, zoom: 4 + Int(rng.next() % 9))
                let view = RasterView.tile(tile, tileSize: rng.next() % 3 == 0 ? 512 : 256, density: 1 + Int(rng.next() % 3))
                let c = try r.collect(layer, view, now: now)
                // nil while another test's render holds the band thread: try again.
                var result: (png: [UInt8], empty: Bool, draws: Int, bands: (top: TileCanvas, bottom: TileCanvas))? = nil
                while result == nil { result = r.renderBandsPNG(layer, c.items, c.sprites, width: view.width, height: view.height, options: .tile) }
                let got = result!
                let cut = TileRenderer.bandCut(c.items, c.sprites, height: view.height, rowWeight: TileRenderer.pngRowWeight)
                let (segmented, stacked, draws) = try Self.splitBandsPNG(r, layer, c.items, c.sprites, view, cut: cut)
                #expect(byteMismatch(got.png, segmented) == nil, "round \(round) tile \(tile) \(view)")
                // The bands handed back (what markerd keeps to patch) are the ones encoded.
                #expect(got.bands.top.height == cut && byteMismatch(TileCanvas(stacking: got.bands.top, got.bands.bottom).pixels, stacked.pixels) == nil)
                #expect(try byteMismatch(PNGCodec.decode(got.png, maxWidth: 4096, maxHeight: 4096, maxBytes: 64 << 20).pixels, stacked.pixels) == nil)
                #expect(got.empty == stacked.isEmpty && got.draws == draws)
                if got.empty { empty += 1; #expect(got.png == TransparentTile.shared(size: view.width)) }
                let slow = try bruteForce(layer, view, now: now, sprites: r.sprites)
                let decoded = try PNGCodec.decode(got.png, maxWidth: 4096, maxHeight: 4096, maxBytes: 64 << 20)
                #expect(maxDifference(decoded.pixels, slow.pixels) <= tolerance(r), "round \(round) tile \(tile): differs from brute force")
            }
        }
        #expect(empty > 0, "no empty tile was tried")
    }

    /// The two bands of `items` cut at `cut` (`split`), rendered one after the other on this
    /// thread and stacked, with their segmented PNG (`PNGCodec.encodeSegmented`; the shared
    /// transparent tile's encoding when empty) and the draws performed.
    static func splitBandsPNG(_ r: TileRenderer, _ layer: MarkerLayer, _ items: [TileRenderer.Item], _ sprites: [TileSprite],
                              _ view: RasterView, cut: Int) throws -> (png: [UInt8], stacked: TileCanvas, draws: Int) {
        let (top, bottom) = TileRenderer.split(items, sprites, at: cut)
        let a = r.renderItems(layer, top, sprites, width: view.width, height: cut)
        let b = r.renderItems(layer, bottom, sprites, width: view.width, height: view.height - cut)
        let stacked = TileCanvas(stacking: a.canvas, b.canvas)
        let png = stacked.isEmpty ? stacked.encodePNG(options: .tile) : try stacked.pixels.withUnsafeBufferPointer {
            try PNGCodec.encodeSegmented(premultiplied: $0, width: view.width, height: view.height, cuts: [cut], options: .tile)
        }
        return (png, stacked, a.draws + b.draws)
    }

    /// Bands that collect their own markers (`renderBandsCollecting`: each band a view of its
    /// rows, walked and placed on its own thread) give byte for byte the PNG of the tile's items
    /// split at the same cut (`split`, each band rendered, `PNGCodec.encodeSegmented`), count each
    /// marker once (as one `collect` of the whole tile does), and the shared transparent tile when
    /// nothing shows; at random cuts, on dense random layers (several icon sizes and anchors,
    /// z-indexes, ended animations, near the antimeridian too).
    @Test(arguments: [TileRenderer.Culling.exact, .withinOne])
    func bandsCollectingMatchTheSplitItems(culling: TileRenderer.Culling) throws {
        var rng = SplitMix64(seed: testSeed())
        let r = makeRenderer(culling)
        var empty = 0, straddling = 0
        for round in 0..<6 {
            let (center, far, layer) = try roundLayer(round, markers: 600, &rng)
            for k in 0..<3 {
                let tile = k == 2 ? TileID.containing(far, zoom: 14) : TileID.containing(center, zoom: 4 + Int(rng.next() % 9))
                let view = RasterView.tile(tile, tileSize: rng.next() % 3 == 0 ? 512 : 256, density: 1 + Int(rng.next() % 3))
                let c = try r.collect(layer, view, now: now)
                // The first tile of each round is cut at a random row; the second through the
                // middle of a random draw that can straddle (so that every seed tries straddling).
                var cut = 1 + Int(rng.next() % UInt64(view.height - 1))
                let across = c.items.filter { let h = c.sprites[Int($0.sprite)].height
                    return h >= 2 && Int($0.y) + h / 2 >= 1 && Int($0.y) + h / 2 < view.height }
                if k == 1, !across.isEmpty {
                    let it = across[Int(rng.next() % UInt64(across.count))]
                    cut = Int(it.y) + c.sprites[Int(it.sprite)].height / 2
                }
                var timing = TileRenderer.BandTiming()
                // nil while another test's render holds the band thread: try again.
                var result: (png: [UInt8], empty: Bool, markers: Int, bands: (top: TileCanvas, bottom: TileCanvas))? = nil
                while result == nil { result = try r.renderBandsCollecting(layer, view, now: now, cut: cut, options: .tile, timing: &timing) }
                let got = result!
                let (top, bottom) = TileRenderer.split(c.items, c.sprites, at: cut)
                straddling += top.count + bottom.count - c.items.count
                let (segmented, stacked, _) = try Self.splitBandsPNG(r, layer, c.items, c.sprites, view, cut: cut)
                #expect(byteMismatch(got.png, segmented) == nil, "round \(round) tile \(tile) \(view) cut \(cut)")
                #expect(got.bands.top.height == cut && byteMismatch(TileCanvas(stacking: got.bands.top, got.bands.bottom).pixels, stacked.pixels) == nil)
                #expect(got.empty == stacked.isEmpty, "round \(round) tile \(tile): emptiness")
                #expect(got.markers == c.markers, "round \(round) tile \(tile) cut \(cut): \(got.markers) markers, one collect finds \(c.markers)")
                if got.empty { empty += 1; #expect(got.png == TransparentTile.shared(size: view.width)) }
            }
        }
        #expect(empty > 0, "no empty tile was tried")
        #expect(straddling > 0, "no draw straddled a cut")
    }

    /// `bandEstimate` (grid node counts, no marker read) on dense tiles of one icon (the estimate
    /// assumes the layer's largest one), markers in Gaussian clusters as in cities: within 10 % of
    /// the markers `collect` finds, and its cut leaves the larger band (items plus `pngRowWeight`
    /// per covered row, as `bandCut` counts) within 10 % of the best cut's, counted from the items.
    @Test func bandEstimateFollowsTheMarkers() throws {
        var rng = SplitMix64(seed: testSeed())
        let r = makeRenderer(.withinOne)
        var tried = 0, dense = 0, excess: [Double] = []
        for round in 0..<12 {
            let center = LatLng(latitude: (rng.unit() - 0.5) * 140, longitude: (rng.unit() - 0.5) * 340)
            // Two clusters of 6,000-12,000 (so that items, not covered rows, weigh most, as in a
            // dense city tile), sigma 0.005-0.04 degrees, plus a few markers spread over the area.
            var layer = try MarkerLayer()
            var records: [MarkerRecord] = []
            for c in 0..<2 {
                let sigma = 0.005 + rng.unit() * 0.035
                let cLat = center.latitude + (rng.unit() - 0.5) * 0.1, cLon = center.longitude + (rng.unit() - 0.5) * 0.1
                for i in 0..<(6000 + Int(rng.next() % 6000)) {
                    // Box-Muller.
                    let rad = (-2 * Foundation.log(max(rng.unit(), 1e-12))).squareRoot(), t = 2 * Double.pi * rng.unit()
                    records.append(MarkerRecord(id: "c\(c)-\(i)", position: LatLng(latitude: cLat + sigma * rad * Foundation.cos(t),
                                                                                   longitude: cLon + sigma * rad * Foundation.sin(t))))
                }
            }
            for i in 0..<300 {
                records.append(MarkerRecord(id: "s\(i)", position: LatLng(latitude: center.latitude + (rng.unit() - 0.5) * 0.4,
                                                                          longitude: center.longitude + (rng.unit() - 0.5) * 0.4)))
            }
            _ = try layer.upsert(records, now: now)
            let view = RasterView.tile(TileID.containing(center, zoom: 9 + Int(rng.next() % 3)), tileSize: 256, density: 1 + Int(rng.next() % 2))
            let c = try r.collect(layer, view, now: now)
            guard c.markers >= 500 else { continue }
            tried += 1
            let e = try #require(r.bandEstimate(layer, view, rowWeight: TileRenderer.pngRowWeight))
            let ratio = e.markers / Double(c.markers)
            #expect(ratio > 0.9 && ratio < 1.1, "round \(round) \(view): estimate \(e.markers), collected \(c.markers)")
            let heights = c.sprites.map(\.height), w = TileRenderer.pngRowWeight
            let covered = (0..<view.height).map { row in c.items.contains { Int($0.y) <= row && row < Int($0.y) + heights[Int($0.sprite)] } }
            func load(_ s: Int) -> Int {
                let top = c.items.filter { Int($0.y) < s }.count
                let bottom = c.items.filter { Int($0.y) + heights[Int($0.sprite)] > s }.count
                return max(top + w * covered[..<s].filter { $0 }.count, bottom + w * covered[s...].filter { $0 }.count)
            }
            let best = load(TileRenderer.bandCut(c.items, c.sprites, height: view.height, rowWeight: w))
            // The estimated cut's load over the best cut's, on dense tiles (5,000 markers, 2.5
            // times the band gate's 2,000). On sparser tiles the covered rows, which the estimate
            // guesses from node counts, weigh as much as the items; so do the 512 rows of a 512 px
            // tile at density 2, where one tile of 14,130 markers was 11.5 % over
            // (SEED=892443893). A tile that far off costs a fraction of a millisecond; a cut
            // that ignores the markers costs much more. So each dense tile is held to 25 % and
            // their mean to 5 %: seeds 1-90 gave 11.5 % at most and means of about 1-1.5 %;
            // cutting through the middle instead gave means of 16-22 % (seeds 1-3).
            if c.markers >= 5_000 {
                dense += 1
                let over = Double(load(e.cut)) / Double(best) - 1
                excess.append(over)
                #expect(over <= 0.25, "round \(round) \(view): estimated cut \(e.cut) loads \(load(e.cut)), the best \(best)")
            }
            print("bandEstimate round \(round): \(c.markers) markers, estimate \(Int(e.markers)); cut load \(load(e.cut)) against \(best)")
        }
        let mean = excess.reduce(0, +) / Double(max(1, excess.count))
        print("bandEstimate: \(tried) tiles of 500 markers or more, \(dense) of 5,000; their cut loads over the best by \(mean * 100) % on average, \((excess.max() ?? 0) * 100) % at most")
        #expect(tried >= 6 && dense >= 4, "only \(tried) tiles of 500 markers, \(dense) of 5,000")
        #expect(mean <= 0.05, "the estimated cuts load \(mean * 100) % over the best on average")
    }

    /// A canvas's PNG in two segments on two threads (`encodePNGInTwo`) is byte for byte the
    /// segmented PNG cut at `segmentCut` made on one thread and decodes to exactly the canvas;
    /// `segmentCut` halves the non-transparent rows (counted directly); empty canvases are left
    /// to the shared transparent tile (nil).
    @Test func pngInTwoSegmentsMatchesOneThread() throws {
        var rng = SplitMix64(seed: testSeed())
        let r = makeRenderer(.exact)
        var tried = 0
        for round in 0..<6 {
            let (center, far, layer) = try roundLayer(round, markers: 100, upTo: 600, antimeridian: false, &rng)
            for k in 0..<3 {
                let tile = TileID.containing(k == 2 ? far : center, zoom: 4 + Int(rng.next() % 12))
                let view = RasterView.tile(tile, tileSize: rng.next() % 3 == 0 ? 512 : 256, density: 1 + Int(rng.next() % 2))
                let c = try r.collect(layer, view, now: now)
                let canvas = r.renderItems(layer, c.items, c.sprites, width: view.width, height: view.height).canvas
                let rowBytes = view.width * 4
                let nonEmpty = (0..<view.height).filter { y in canvas.pixels[(y * rowBytes)..<((y + 1) * rowBytes)].contains { $0 != 0 } }
                let cut = TileRenderer.segmentCut(canvas)
                #expect(cut >= 1 && cut < view.height)
                if !nonEmpty.isEmpty && cut > 1 && cut < view.height - 1 {
                    let above = nonEmpty.filter { $0 < cut }.count
                    #expect(abs(above - (nonEmpty.count - above)) <= 1, "round \(round): cut \(cut) leaves \(above) of \(nonEmpty.count) non-empty rows above")
                }
                var timing = TileRenderer.BandTiming()
                var got: [UInt8]? = nil
                // nil while another test's render holds the band thread: try again (not for an empty canvas).
                repeat { got = r.encodePNGInTwo(canvas, options: .tile, timing: &timing) } while got == nil && !canvas.isEmpty
                guard let got else { #expect(canvas.isEmpty); continue }
                tried += 1
                let oneThread = try canvas.pixels.withUnsafeBufferPointer {
                    try PNGCodec.encodeSegmented(premultiplied: $0, width: view.width, height: view.height, cuts: [cut], options: .tile)
                }
                #expect(byteMismatch(got, oneThread) == nil, "round \(round) tile \(tile) \(view)")
                #expect(try byteMismatch(PNGCodec.decode(got, maxWidth: 4096, maxHeight: 4096, maxBytes: 64 << 20).pixels, canvas.pixels) == nil)
            }
        }
        #expect(tried > 0, "no non-empty canvas was tried")
    }

    /// `renderTile` with bands from 0 draws up decodes to within the tolerance of brute force
    /// (pipelined when the load average leaves a core idle, else on one thread).
    @Test func renderTileWithBandsMatchesBruteForce() throws {
        var rng = SplitMix64(seed: testSeed())
        // Bands from 0 draws; and bands never, the PNG in two segments from `pngSegmentsAbove` draws.
        for (round, r) in [TileRenderer(bandsAbove: 0), TileRenderer(bandsAbove: Int.max - 1)].flatMap({ [$0, $0] }).enumerated() {
            let center = LatLng(latitude: (rng.unit() - 0.5) * 140, longitude: (rng.unit() - 0.5) * 340)
            let layer = try randomLayer(count: 1000, center: center, spreadDegrees: 0.05, rng: &rng, now: now)
            let tile = TileID.containing(center, zoom: 10)
            let view = RasterView.tile(tile, tileSize: 256, density: 1)
            let t = try r.renderTile(layer, tile: tile, tileSize: 256, density: 1, now: now)
            let slow = try bruteForce(layer, view, now: now, sprites: r.sprites)
            #expect(maxDifference(try PNGCodec.decode(t.png).pixels, slow.pixels) <= 1, "round \(round)")
        }
    }

    /// `BandThread` runs a job on another thread, refuses a second job while one runs, and
    /// `wait` returns after the job's writes.
    @Test func bandThreadRunsOneJobAtATime() throws {
        final class Flag: Sendable { let set = Atomic<Bool>(false) }
        let ran = BandThread.Result<Int>(), release = Flag()
        // Another test's render may hold the band thread: try until it is ours.
        while !BandThread.shared.start({
            while !release.set.load(ordering: .acquiring) { sched_yield() }
            ran.value = 42
        }) { sched_yield() }
        let second = BandThread.shared.start({})
        #expect(!second, "a second job was accepted while the first runs")
        release.set.store(true, ordering: .releasing)
        BandThread.shared.wait()
        #expect(ran.value == 42)
    }

    /// `render` with bands from 0 draws up (whether it takes them depends on other renders
    /// running, as with the service's concurrent requests) stays within tolerance of brute force.
    @Test func renderWithBandsMatchesBruteForce() throws {
        var rng = SplitMix64(seed: testSeed())
        // Bands from 0 draws; and bands never, the PNG in two segments from `pngSegmentsAbove` draws.
        for (round, r) in [TileRenderer(bandsAbove: 0), TileRenderer(bandsAbove: Int.max - 1)].flatMap({ [$0, $0] }).enumerated() {
            let center = LatLng(latitude: (rng.unit() - 0.5) * 140, longitude: (rng.unit() - 0.5) * 340)
            let layer = try randomLayer(count: 1000, center: center, spreadDegrees: 0.05, rng: &rng, now: now)
            let view = RasterView.tile(TileID.containing(center, zoom: 10), tileSize: 256, density: 1)
            let fast = try r.render(layer, view: view, now: now)
            let slow = try bruteForce(layer, view, now: now, sprites: r.sprites)
            #expect(maxDifference(fast.canvas.pixels, slow.pixels) <= 1, "round \(round)")
        }
    }

    /// `idleCoreLikely` reads the runnable count of /proc/loadavg: parsed from its text, and the
    /// rule is "fewer runnable than CPUs".
    /// A `BandThread.Claim` raced by the band thread and the caller (as `renderBandsPNG` and
    /// `encodePNGInTwo` race for the band thread's part) is taken exactly once, whichever wins.
    @Test func claimIsTakenOnce() {
        final class Tally: Sendable { let band = Atomic<Int>(0), here = Atomic<Int>(0) }
        let tally = Tally()
        for _ in 0..<2000 {
            let claim = BandThread.Claim()
            let started = BandThread.shared.start { if claim.take() { tally.band.wrappingAdd(1, ordering: .relaxed) } }
            if claim.take() { tally.here.wrappingAdd(1, ordering: .relaxed) }
            if started { BandThread.shared.wait() }
        }
        #expect(tally.band.load(ordering: .relaxed) + tally.here.load(ordering: .relaxed) == 2000)
        print("claims: band thread \(tally.band.load(ordering: .relaxed)), caller \(tally.here.load(ordering: .relaxed))")
    }

    @Test func idleCoreFollowsTheRunnableCount() throws {
        func parse(_ s: String) -> Int? { TileRenderer.runnableTasks(loadavg: Array(s.utf8)) }
        #expect(parse("0.52 0.58 0.59 2/467 12345\n") == 2)
        #expect(parse("7.75 6.77 4.04 13/1024 999") == 13)
        #expect(parse("0.00 0.00 0.00 1/80 1") == 1)
        #expect(parse("0.52 0.58 0.59") == nil)
        #expect(parse("0.52 0.58 0.59 x/467 1") == nil)
        #expect(parse("0.52 0.58 0.59 /467 1") == nil)
        #expect(parse("0.52 0.58 0.59 467 1") == nil)
        #expect(parse("") == nil)
        #expect(TileRenderer.idleCore(runnable: 1, cpus: 2))
        #expect(!TileRenderer.idleCore(runnable: 2, cpus: 2))
        #expect(!TileRenderer.idleCore(runnable: 5, cpus: 2))
        #expect(TileRenderer.idleCore(runnable: 3, cpus: 4))
        // renderTile's two-thread paths allow two runnable tasks per CPU.
        #expect(TileRenderer.secondCore(runnable: 3, cpus: 2) && TileRenderer.secondCore(runnable: 4, cpus: 2))
        #expect(!TileRenderer.secondCore(runnable: 5, cpus: 2))
        #expect(TileRenderer.secondCore(runnable: 8, cpus: 4) && !TileRenderer.secondCore(runnable: 9, cpus: 4))
        // The live file parses, and this (running) thread is among its runnable tasks.
        let now = try #require(TileRenderer.runnableTasksNow())
        #expect(now >= 1)
    }

    /// Stacking keeps every pixel of both canvases, top then bottom.
    @Test func stackingKeepsBothCanvases() {
        var rng = SplitMix64(seed: testSeed())
        var top = TileCanvas(width: 7, height: 3), bottom = TileCanvas(width: 7, height: 5)
        bottom.draw(sprite: randomImage(width: 4, height: 4, using: &rng), atX: 1, y: 1)
        let stacked = TileCanvas(stacking: top, bottom)
        #expect(stacked.width == 7 && stacked.height == 8 && !stacked.isEmpty)
        #expect(Array(stacked.pixels[..<(7 * 3 * 4)]) == top.pixels && Array(stacked.pixels[(7 * 3 * 4)...]) == bottom.pixels)
        top.clear()
        #expect(TileCanvas(stacking: top, TileCanvas(width: 7, height: 2)).isEmpty)
    }
}

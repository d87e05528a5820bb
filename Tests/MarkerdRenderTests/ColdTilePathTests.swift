import Foundation
import MarkerdCore
@testable import MarkerdRender
import MarkerdTestSupport
import Testing

/// The cold-tile path's pieces added for dense tiles (`CoverageMask.add(...clip:)` against the
/// full `add` is in CullingBoundTests; `RadixSort` in MarkerdCoreTests): `cullExact`'s row memo against testing
/// every row, `RasterView`'s pixel rounding and world copies against their definitions, and tiles
/// whose bytes depend on the layer alone.
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
    /// and snapshots at fractional zooms (the Double rounding).
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
                let bulk = try r.collect(layer, view, now: now)
                let each = try r.collect(layer, view, now: now, bulk: false)
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

    /// A tile's PNG is a function of the layer and the tile alone: the same dense tiles rendered
    /// alone and by several threads at once (as concurrent GetTile calls render them; until
    /// issue 37 a tile rendered while no other render ran took two threads, in bands whose pixels
    /// could differ by 1/255 and whose PNG was deflated in two segments) are byte for byte equal,
    /// and within the renderer's tolerance of brute force.
    @Test func tileBytesDependOnTheLayerAlone() async throws {
        var rng = SplitMix64(seed: testSeed())
        let r = TileRenderer()
        for round in 0..<3 {
            let center = LatLng(latitude: (rng.unit() - 0.5) * 140, longitude: (rng.unit() - 0.5) * 340)
            let layer = try randomLayer(count: 3000, center: center, spreadDegrees: 0.05, rng: &rng, now: now)
            let tiles = [TileID.containing(center, zoom: 10), TileID.containing(center, zoom: 8), try #require(TileID(z: 0, x: 0, y: 0))]
            let at = now
            let alone = try tiles.map { t in try r.renderTile(layer, tile: t, tileSize: 256, density: 1, now: at).png }
            let together = try await withThrowingTaskGroup(of: (Int, [UInt8]).self) { group in
                for k in 0..<(3 * tiles.count) {
                    group.addTask { (k % tiles.count, try r.renderTile(layer, tile: tiles[k % tiles.count], tileSize: 256, density: 1, now: at).png) }
                }
                var out: [(Int, [UInt8])] = []
                for try await x in group { out.append(x) }
                return out
            }
            #expect(together.count == 3 * tiles.count)
            for (i, png) in together {
                #expect(byteMismatch(png, alone[i]) == nil, "round \(round) tile \(tiles[i])")
            }
            for (i, t) in tiles.enumerated() {
                let slow = try bruteForce(layer, .tile(t, tileSize: 256, density: 1), now: now, sprites: r.sprites)
                #expect(maxDifference(try PNGCodec.decode(alone[i]).pixels, slow.pixels) <= 1, "round \(round) tile \(t)")
            }
        }
    }
}

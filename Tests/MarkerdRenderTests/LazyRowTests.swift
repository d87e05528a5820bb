import MarkerdCore
@testable import MarkerdRender
import MarkerdTestSupport
import Testing

/// The sweep's lazy rows (`TileRenderer.LazyRow`: a split leaf's one-row part keeps only its head
/// and reads the next one from the leaf) against the selecting cursors they replace
/// (`sweep(lazyRows: false)`, every marker of the row waiting in `pending`): the same draws with
/// the same clips, the same counts, on seeded dense layers (two pin styles, a faint one, opaque
/// icons at a second z-index, equal world y across markers, exact duplicates, the antimeridian).
@Suite struct LazyRowTests {
    let now: Int64 = 1_700_000_000_000

    @Test func lazyRowsDrawExactlyWhatSelectingCursorsDraw() throws {
        let seed = testSeed()
        var rng = SplitMix64(seed: seed)
        let r = TileRenderer(sweepAbove: 0, bandsAbove: .max, sweepBandsAbove: .max)
        var rasters = 0, lazyVisited = 0
        for round in 0..<4 {
            let layer = round == 2 ? try Self.equalKeys(&rng, now: now)
                : try SweepBandTests.denseLayer(&rng, count: 10_000 + Int(rng.next() % 10_000), edge: round == 3, now: now)
            for k in 0..<4 {
                let z = k < 2 ? 0 : Int(rng.next() % 3)
                let p = LatLng(latitude: (rng.unit() - 0.5) * 120, longitude: (rng.unit() - 0.5) * 340)
                let view = RasterView.tile(TileID.containing(p, zoom: z), tileSize: rng.next() % 3 == 0 ? 512 : 256,
                                           density: 1 + Int(rng.next() % 3))
                let lazy = try r.sweep(layer, view, now: now)
                let eager = try r.sweep(layer, view, now: now, lazyRows: false)
                let context = "seed \(seed) round \(round) \(view)"
                #expect(lazy.markers == eager.markers && lazy.visited == eager.visited,
                        "\(context): counted \(lazy.markers) / \(eager.markers), visited \(lazy.visited) / \(eager.visited)")
                #expect(lazy.items.count == eager.items.count, "\(context): \(lazy.items.count) draws against \(eager.items.count)")
                #expect(lazy.clips == eager.clips, "\(context): clips differ")
                for (a, b) in zip(lazy.items, eager.items)
                where a.slot != b.slot || a.x != b.x || a.y != b.y || a.sprite != b.sprite || a.clip != b.clip {
                    Issue.record("\(context): draw of slot \(a.slot) at (\(a.x), \(a.y)) against slot \(b.slot) at (\(b.x), \(b.y))")
                    break
                }
                rasters += 1
                lazyVisited += lazy.visited
            }
        }
        print("lazy rows: seed \(seed), \(rasters) rasters, \(lazyVisited) markers visited, same draws as selecting cursors")
    }

    /// Default pins and a faint pin at two z-indexes, every other marker at the world y of the
    /// one before it (equal keys within and across rows' positions).
    static func equalKeys(_ rng: inout SplitMix64, now: Int64) throws -> MarkerLayer {
        let faint = IconStyle(source: .pin(PinStyle(fillColor: 0x50_C03070, scale: 0.8)))
        var records = SweepTests.cluster("e", 20_000, center: LatLng(latitude: 15, longitude: -40), spread: 35,
                                         style: .defaultPin, zIndex: 0, &rng)
        for i in records.indices {
            if rng.next() % 4 == 0 { records[i].style = faint }
            if rng.next() % 8 == 0 { records[i].zIndex = 1 }
            if i % 2 == 1 { records[i].position.latitude = records[i - 1].position.latitude }
        }
        var layer = try MarkerLayer()
        _ = try layer.upsert(records, now: now)
        return layer
    }
}

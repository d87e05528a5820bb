import MarkerdCore
import MarkerdRender
import MarkerdTestSupport
import Testing

/// `TileRenderer.renderTimingPhases`: the render it times is `render`'s (same pixels, markers and
/// draws), step by step.
@Suite struct PhaseTimesTests {
    let now: Int64 = 1_700_000_000_000

    @Test(arguments: [TileRenderer.Culling.withinOne, .exact])
    func timedRenderEqualsRender(culling: TileRenderer.Culling) throws {
        var rng = SplitMix64(seed: testSeed())
        let r = makeRenderer(culling)
        var drawn = 0
        for round in 0..<6 {
            let center = LatLng(latitude: (rng.unit() - 0.5) * 120, longitude: (rng.unit() - 0.5) * 340)
            let layer = try randomLayer(count: 200 + Int(rng.next() % 400), center: center, spreadDegrees: [0.02, 0.2, 2][round % 3],
                                        rng: &rng, now: now)
            for _ in 0..<4 {
                let view = RasterView.tile(TileID.containing(center, zoom: Int(rng.next() % 12)), tileSize: 256, density: 1 + Int(rng.next() % 3))
                let plain = try r.render(layer, view: view, now: now)
                let (timed, phases) = try r.renderTimingPhases(layer, view: view, now: now)
                #expect(byteMismatch(timed.canvas.pixels, plain.canvas.pixels) == nil, "round \(round) view \(view)")
                #expect(timed.markers == plain.markers && timed.draws == plain.draws)
                #expect(phases.collect >= 0 && phases.sort >= 0 && phases.cull >= 0 && phases.draw >= 0)
                drawn += timed.draws
            }
        }
        #expect(drawn > 0, "no tile drew anything: the comparison tested nothing")
    }

    @Test func emptyRasterIsTransparent() throws {
        let layer = try MarkerLayer()
        let (raster, _) = try makeRenderer().renderTimingPhases(layer, view: .tile(TileID(z: 5, x: 3, y: 9)!, tileSize: 256, density: 1), now: now)
        #expect(raster.canvas.isEmpty && raster.markers == 0 && raster.draws == 0)
    }
}

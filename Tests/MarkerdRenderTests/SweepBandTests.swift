import MarkerdCore
@testable import MarkerdRender
import MarkerdTestSupport
import Synchronization
import Testing

/// The node sweep as two bands on two threads (`TileRenderer.renderSweepBands`): every band is
/// swept like a raster of its own, so the stacked picture stays within 1 per channel of brute
/// force and of the one-thread sweep, whatever the cut.
@Suite struct SweepBandTests {
    let now: Int64 = 1_700_000_000_000

    /// A dense layer for the sweep: default pins spread evenly over a region (many per device
    /// pixel at z0), a few tight stacks, a faint second pin style and opaque icons at a second
    /// z-index interleaved, some exact duplicates; near the antimeridian when `edge`.
    static func denseLayer(_ rng: inout SplitMix64, count: Int, edge: Bool, now: Int64) throws -> MarkerLayer {
        let faint = IconStyle(source: .pin(PinStyle(fillColor: 0x60_3070C0, scale: 0.75)))
        let square = IconStyle(source: .image(id: "square", width: 12, height: 12))
        let center = LatLng(latitude: (rng.unit() - 0.5) * 100, longitude: edge ? 179 : (rng.unit() - 0.5) * 300)
        var records = SweepTests.cluster("u", count, center: center, spread: 40, style: .defaultPin, zIndex: 0, &rng)
        for c in 0..<3 {
            let spot = LatLng(latitude: center.latitude + (rng.unit() - 0.5) * 30, longitude: center.longitude + (rng.unit() - 0.5) * 30)
            records += SweepTests.cluster("c\(c)-", count / 10, center: spot, spread: 0.05, style: .defaultPin, zIndex: 0, &rng)
        }
        for i in records.indices {
            let r = rng.next() % 16
            if r == 0 { records[i].style = faint } else if r == 1 { records[i].style = square; records[i].zIndex = 1 }
            if i % 9 == 8 { records[i].position = records[i - 1].position }
            if records[i].position.longitude > 180 { records[i].position.longitude -= 360 }
        }
        var layer = try MarkerLayer()
        _ = try layer.upsert(records, now: now)
        return layer
    }

    /// Bands of the sweep at random cuts (including the first and last rows) against the
    /// one-thread sweep and brute force, at z0-z2 and densities 1-3, 256 and 512 px tiles.
    @Test func bandsMatchOneThreadAndBruteForce() throws {
        var rng = SplitMix64(seed: testSeed())
        let r = TileRenderer(sweepAbove: 0, bandsAbove: .max, sweepBandsAbove: .max)
        var worst = 0, worstOne = 0, rasters = 0
        for round in 0..<4 {
            let layer = try Self.denseLayer(&rng, count: 12_000 + Int(rng.next() % 8000), edge: round == 3, now: now)
            for k in 0..<3 {
                let z = k == 0 ? 0 : Int(rng.next() % 3)
                let p = LatLng(latitude: (rng.unit() - 0.5) * 120, longitude: (rng.unit() - 0.5) * 340)
                let view = RasterView.tile(TileID.containing(p, zoom: z), tileSize: rng.next() % 3 == 0 ? 512 : 256,
                                           density: 1 + Int(rng.next() % 3))
                let cut = [1, view.height - 1, view.height / 2, 1 + Int(rng.next() % UInt64(view.height - 1))][k == 0 ? Int(round) % 4 : 3]
                let one = try r.renderSweepBand(layer, view, now: now)
                let bands = try r.renderSweepBands(layer, view, now: now, cut: cut)
                let slow = try bruteForce(layer, view, now: now, sprites: r.sprites)
                #expect(bands.canvas.width == view.width && bands.canvas.height == view.height)
                #expect(bands.canvas.isEmpty == one.canvas.isEmpty, "round \(round) \(view) cut \(cut): emptiness differs")
                let diff = maxDifference(bands.canvas.pixels, slow.pixels), diffOne = maxDifference(bands.canvas.pixels, one.canvas.pixels)
                #expect(diff <= 1, "round \(round) \(view) cut \(cut): bands differ from brute force by \(diff)")
                #expect(diffOne <= 1, "round \(round) \(view) cut \(cut): bands differ from one thread by \(diffOne)")
                // Each band counts at least the markers it draws; both count what one thread
                // counts (straddling markers twice), capped at the layer's size.
                #expect(bands.markers >= one.markers || bands.markers == layer.count, "markers \(bands.markers) against \(one.markers)")
                #expect(bands.markers <= layer.count)
                worst = max(worst, diff); worstOne = max(worstOne, diffOne); rasters += 1
            }
        }
        print("sweep bands: \(rasters) rasters, worst difference \(worst) from brute force, \(worstOne) from one thread")
    }

    /// `render` with sweep bands allowed from 0 markers (taken when no other render runs and a
    /// core is likely idle) stays within 1 of brute force, and repeated renders reuse the one
    /// worker thread (no new thread, no deadlock across many calls). Repeated renders need not be
    /// byte for byte equal: whether bands run depends on the load, and the learnt cut moves
    /// after each two-band render; each is within 1 of brute force, so two differ by at most 2.
    @Test func renderWithSweepBandsMatchesBruteForce() throws {
        var rng = SplitMix64(seed: testSeed())
        let r = TileRenderer(sweepAbove: 0, sweepBandsAbove: 0)
        let layer = try Self.denseLayer(&rng, count: 10_000, edge: false, now: now)
        let view = RasterView.tile(TileID(z: 0, x: 0, y: 0)!, tileSize: 256, density: 1)
        let slow = try bruteForce(layer, view, now: now, sprites: r.sprites)
        var last: RenderedRaster? = nil
        for _ in 0..<20 {
            let fast = try r.render(layer, view: view, now: now)
            #expect(maxDifference(fast.canvas.pixels, slow.pixels) <= 1)
            if let l = last { #expect(maxDifference(fast.canvas.pixels, l.canvas.pixels) <= 2, "renders of the same layer differ by more than 2") }
            last = fast
        }
    }

    /// The learnt cut moves halfway to where bands whose time is spread evenly over their rows
    /// would balance: computed directly for random cuts and times, and it stays put when they
    /// balance already; `bandCut` keeps `minimumBandRows` from either edge.
    @Test func learntCutMovesHalfwayToBalance() {
        var rng = SplitMix64(seed: testSeed())
        for _ in 0..<1000 {
            let h = 64 + Int(rng.next() % 1000), cut = 16 + Int(rng.next() % UInt64(h - 32))
            let top = 0.001 + rng.unit(), bottom = 0.001 + rng.unit()
            let f = Double(TileRenderer.learntCutFraction(cut: cut, height: h, top: top, bottom: bottom)) / 65536
            // Oracle: the row b in 0...h where the evenly spread work of both bands splits in two halves.
            func work(above b: Double) -> Double {
                b <= Double(cut) ? top * b / Double(cut) : top + bottom * (b - Double(cut)) / Double(h - cut)
            }
            var lo = 0.0, hi = Double(h)
            for _ in 0..<60 { let m = (lo + hi) / 2; if work(above: m) < (top + bottom) / 2 { lo = m } else { hi = m } }
            let expected = min(max((Double(cut) + lo) / 2 / Double(h), 0.05), 0.95)
            #expect(abs(f - expected) < 1e-4, "h \(h) cut \(cut) top \(top) bottom \(bottom): \(f) against \(expected)")
        }
        let even = Double(TileRenderer.learntCutFraction(cut: 100, height: 256, top: 0.06, bottom: 0.06)) / 65536 * 256
        #expect(abs(even - 100) < 0.01, "balanced bands moved the cut to \(even)")
        for h in [32, 33, 256, 1536] {
            let c = TileRenderer.bandCut(height: h)
            #expect(c >= TileRenderer.minimumBandRows && c <= h - TileRenderer.minimumBandRows)
        }
    }

    /// The worker runs jobs of concurrent callers without losing or mixing any: a busy worker
    /// makes the caller run both halves itself.
    @Test func workerRunsEveryJobOnce() async {
        final class Count: Sendable { let other = Atomic<Int>(0) }
        let count = Count()
        await withTaskGroup(of: Int.self) { group in
            for _ in 0..<8 {
                group.addTask {
                    var here = 0
                    for _ in 0..<200 {
                        BandThread.shared.run({ count.other.wrappingAdd(1, ordering: .relaxed) }, alongside: { here += 1 })
                    }
                    return here
                }
            }
            var here = 0
            for await h in group { here += h }
            #expect(here == 1600)
        }
        #expect(count.other.load(ordering: .relaxed) == 1600)
    }
}

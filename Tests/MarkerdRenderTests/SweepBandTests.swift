import MarkerdCore
@testable import MarkerdRender
import MarkerdTestSupport
import Synchronization
#if canImport(Glibc)
import Glibc
#endif
import Testing

/// The node sweep in strips shared by two threads (`TileRenderer.renderSweepStrips`, two bands
/// being the case of one cut): every strip is swept like a raster of its own, so the stacked
/// picture stays within 1 per channel of brute force and of the one-thread sweep, whatever the
/// cuts and whichever thread sweeps which strip.
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
                // Two bands, or 3-6 strips at random rows (the first and last rows among them at times).
                var cuts = [0, cut, view.height]
                if rng.next() % 2 == 0 {
                    var rows = Set([cut])
                    for _ in 0..<(1 + rng.next() % 4) { rows.insert(rng.next() % 4 == 0 ? view.height - 1 : 1 + Int(rng.next() % UInt64(view.height - 1))) }
                    cuts = [0] + rows.sorted() + [view.height]
                }
                let one = try r.renderSweepBand(layer, view, now: now)
                let bands = try r.renderSweepStrips(layer, view, now: now, cuts: cuts)
                let slow = try bruteForce(layer, view, now: now, sprites: r.sprites)
                #expect(bands.canvas.width == view.width && bands.canvas.height == view.height)
                #expect(bands.canvas.isEmpty == one.canvas.isEmpty, "round \(round) \(view) cuts \(cuts): emptiness differs")
                let diff = maxDifference(bands.canvas.pixels, slow.pixels), diffOne = maxDifference(bands.canvas.pixels, one.canvas.pixels)
                #expect(diff <= 1, "round \(round) \(view) cuts \(cuts): bands differ from brute force by \(diff)")
                #expect(diffOne <= 1, "round \(round) \(view) cuts \(cuts): bands differ from one thread by \(diffOne)")
                // Each band counts at least the markers it draws; both count what one thread
                // counts (straddling markers twice), capped at the layer's size.
                #expect(bands.markers >= one.markers || bands.markers == layer.count, "markers \(bands.markers) against \(one.markers)")
                #expect(bands.markers <= layer.count)
                worst = max(worst, diff); worstOne = max(worstOne, diffOne); rasters += 1
            }
        }
        print("sweep bands: \(rasters) rasters, worst difference \(worst) from brute force, \(worstOne) from one thread")
    }

    /// `render` with shared sweep strips from 0 markers (taken when no other render runs) stays
    /// within 1 of brute force, and repeated renders reuse the one worker thread (no new thread,
    /// no deadlock across many calls). Repeated renders need not be byte for byte equal: which
    /// thread sweeps which strip depends on timing, and the learnt cut moves after each render;
    /// each is within 1 of brute force, so two differ by at most 2.
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

    /// The learnt middle cut moves halfway to where strips whose time is spread evenly over
    /// their rows would balance: against a bisection oracle for random cuts and times, it stays
    /// put when the work balances already there, and `sweepStripCuts` keeps every strip at least
    /// `minimumBandRows` high with the middle among its cuts.
    @Test func learntCutMovesHalfwayToBalance() {
        var rng = SplitMix64(seed: testSeed())
        for _ in 0..<1000 {
            let h = 64 + Int(rng.next() % 1000)
            var rows = Set<Int>()
            for _ in 0..<(1 + rng.next() % 4) { rows.insert(1 + Int(rng.next() % UInt64(h - 1))) }
            let cuts = [0] + rows.sorted() + [h]
            let middle = cuts[1 + Int(rng.next() % UInt64(cuts.count - 2))]
            let seconds = (0..<cuts.count - 1).map { _ in rng.next() % 5 == 0 ? 0 : 0.001 + rng.unit() }
            let f = Double(TileRenderer.learntCutFraction(cuts: cuts, seconds: seconds, middle: middle)) / 65536
            // Oracle: the row b in 0...h where the evenly spread work of the strips splits in two halves.
            let total = seconds.reduce(0, +)
            func work(above b: Double) -> Double {
                var w = 0.0
                for i in seconds.indices {
                    let lo = Double(cuts[i]), hi = Double(cuts[i + 1])
                    w += seconds[i] * min(max((b - lo) / (hi - lo), 0), 1)
                }
                return w
            }
            var lo = 0.0, hi = Double(h)
            for _ in 0..<60 { let m = (lo + hi) / 2; if work(above: m) < total / 2 { lo = m } else { hi = m } }
            let expected = min(max((total > 0 ? (Double(middle) + lo) / 2 : Double(middle)) / Double(h), 0.05), 0.95)
            #expect(abs(f - expected) < 1e-3, "cuts \(cuts) middle \(middle) seconds \(seconds): \(f) against \(expected)")
        }
        let even = Double(TileRenderer.learntCutFraction(cuts: [0, 50, 100, 178, 256], seconds: [0.03, 0.03, 0.03, 0.03], middle: 100)) / 65536 * 256
        #expect(abs(even - 100) < 0.01, "balanced strips moved the cut to \(even)")
        for h in [32, 33, 63, 64, 256, 1536] {
            let m = TileRenderer.bandCut(height: h)
            #expect(m >= TileRenderer.minimumBandRows && m <= h - TileRenderer.minimumBandRows)
            for middle in [TileRenderer.minimumBandRows, m, h - TileRenderer.minimumBandRows] {
                let cuts = TileRenderer.sweepStripCuts(height: h, middle: middle)
                #expect(cuts.first == 0 && cuts.last == h && cuts.contains(middle), "height \(h) middle \(middle): \(cuts)")
                #expect(zip(cuts, cuts.dropFirst()).allSatisfy { $1 - $0 >= TileRenderer.minimumBandRows }, "height \(h) middle \(middle): \(cuts)")
                #expect(cuts.count == 3 + (middle >= 32 ? 1 : 0) + (h - middle >= 32 ? 1 : 0), "height \(h) middle \(middle): \(cuts)")
            }
        }
    }

    /// Strips claimed by two threads are each swept exactly once: with the band thread held busy
    /// by another caller's job, the calling thread sweeps every strip itself and the picture is
    /// the same as when the band thread helps.
    @Test func stripsWithABusyBandThreadAreAllSweptHere() throws {
        var rng = SplitMix64(seed: testSeed())
        let r = TileRenderer(sweepAbove: 0, bandsAbove: .max, sweepBandsAbove: .max)
        let layer = try Self.denseLayer(&rng, count: 8_000, edge: false, now: now)
        let view = RasterView.tile(TileID(z: 0, x: 0, y: 0)!, tileSize: 256, density: 1)
        let cuts = [0, 40, 96, 176, 256]
        let shared = try r.renderSweepStrips(layer, view, now: now, cuts: cuts)
        // Hold the band thread: its job waits until the strips are done.
        final class Gate: Sendable { let open = Atomic<Bool>(false) }
        let gate = Gate()
        // (Other tests may be using the band thread: wait for it.)
        while !BandThread.shared.start({ while !gate.open.load(ordering: .acquiring) { sched_yield() } }) { sched_yield() }
        let alone = try r.renderSweepStrips(layer, view, now: now, cuts: cuts)
        gate.open.store(true, ordering: .releasing)
        BandThread.shared.wait()
        let slow = try bruteForce(layer, view, now: now, sprites: r.sprites)
        #expect(maxDifference(alone.canvas.pixels, slow.pixels) <= 1)
        #expect(maxDifference(shared.canvas.pixels, slow.pixels) <= 1)
        #expect(alone.draws == shared.draws && alone.visited == shared.visited && alone.markers == shared.markers)
        #expect(byteMismatch(alone.canvas.pixels, shared.canvas.pixels) == nil, "the same strips swept by other threads gave other pixels")
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

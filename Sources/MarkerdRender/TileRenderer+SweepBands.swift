import MarkerdCore
private import Synchronization

/// The node sweep on two threads (`TileRenderer`, step 4 of its documentation, with
/// `sweepBandsAbove`).
///
/// The sweep's culling is pixel-local: whether a pixel is settled depends only on the draws that
/// cover it (`CoverageMask`), and whether a node, a position or a draw is left out depends only on
/// whether its pixels inside the raster are settled. So the raster is cut at rows into horizontal
/// strips, each swept exactly as `sweep` sweeps any `RasterView` (a strip is the view of that
/// window of device pixels: it walks the nodes and markers whose sprites reach into it, culls
/// against its own mask and draws on its own canvas), and the strips' canvases are stacked. Each
/// strip is within 1 per channel of drawing every marker (the bound the sweep keeps for every
/// view), so the stacked raster is too. It can differ from the one-thread sweep by 1 where a draw
/// that straddles a cut is dropped in one strip and two identical draws around it then fold into
/// one run there (`TileRenderer.draw`). The cuts are learnt and which thread sweeps which strip
/// depends on timing, so two renders of the same tile version can differ in such pixels (each
/// within 1 of drawing every marker, so by at most 2) (the tile cache keeps the first; the
/// gateway's ETags are weak for this reason).
///
/// Sharing, not a fixed split: the calling thread claims strips from the top, `BandThread`'s
/// parked thread from the bottom, until none is left (`renderSweepStrips`). So no load test is
/// needed up front: when the other core is busy the band thread starts late or never and the
/// calling thread sweeps the rest itself, at the cost of the strips' overlap (a few per cent);
/// when it is idle the two meet near the learnt middle and each thread that finishes early takes
/// a strip of the other's half. The old rule, asking whether a core was idle first
/// (`idleCoreLikely`, fewer tasks runnable than CPUs at that instant), said no for every
/// GetTile z0 of a quiet run in process where a compile ran beside it, and in markerd the nng
/// thread that handed the request over is often still runnable at that instant.
///
/// Where to cut: the work is not even over the rows (at z0 over the synthetic 10M layer, rows
/// 0-127 took 97.6 ms and rows 128-255 45.9 ms of thread CPU, each swept alone; rows 0-95 and
/// 96-255 72.4 / 75.1 ms, see Benchmarks/results/diary.md), so the middle cut is learnt: each shared
/// render times its strips (thread CPU) and moves the middle, as a fraction of the height shared
/// by every renderer of the process (`bandCutFraction`), to where the work above and below would
/// balance if each strip's work were spread evenly over its rows; halfway, against noise. Each
/// half is cut in two again (`sweepStripCuts`), so that a thread that finishes first can take
/// a quarter, not wait for a half.
///
/// Only when no other render runs in this process (`rendersRunning`): concurrent renders have the
/// cores already.
extension TileRenderer {
    /// Default `sweepBandsAbove`: rasters whose sweep estimate (`estimate`) reaches 2,000,000
    /// static markers around them (the z0 tile of a layer of that size; at 1M the one-thread z0
    /// sweep takes about 80 ms of CPU). See Benchmarks/results/diary.md for the measurements.
    public static let defaultSweepBandsAbove = 2_000_000

    /// Bands and strips smaller than this many rows are not worth a thread.
    static let minimumBandRows = 16

    /// Step 4 (the node sweep) for `view`: in strips shared with the band thread
    /// (`renderSweepStrips`, cut at `sweepStripCuts`) when `alone`, the raster is big enough and
    /// the grid counts at least `sweepBandsAbove` markers around it; else on this thread.
    func renderSweep(_ layer: MarkerLayer, _ view: RasterView, now: Int64, alone: Bool) throws(RenderError) -> RenderedRaster {
        if alone && view.height >= 2 * TileRenderer.minimumBandRows && sweepBandsAbove != .max,
           let root = layer.staticSweepRoot,
           TileRenderer.estimate(layer, root, view, atLeast: sweepBandsAbove) >= sweepBandsAbove {
            let middle = TileRenderer.bandCut(height: view.height)
            return try renderSweepStrips(layer, view, now: now, cuts: TileRenderer.sweepStripCuts(height: view.height, middle: middle),
                                         learnFrom: middle)
        }
        return try renderSweepBand(layer, view, now: now)
    }

    /// `view` through the node sweep in strips shared with the band thread (cut at the learnt
    /// `sweepStripCuts`, which this render then updates), whatever else runs: for benchmarks, the
    /// same raster as `render` within 1 per channel. Requires `.withinOne` culling and a raster
    /// at least `2 x minimumBandRows` rows high.
    public func renderSweepShared(_ layer: MarkerLayer, view: RasterView, now: Int64) throws(RenderError) -> RenderedRaster {
        precondition(culling == .withinOne && view.height >= 2 * TileRenderer.minimumBandRows,
                     "shared sweep strips need .withinOne culling and \(2 * TileRenderer.minimumBandRows) rows")
        let middle = TileRenderer.bandCut(height: view.height)
        return try renderSweepStrips(layer, view, now: now, cuts: TileRenderer.sweepStripCuts(height: view.height, middle: middle),
                                     learnFrom: middle)
    }

    /// The learnt middle cut of `height` rows (`bandCutFraction`), within `minimumBandRows` of
    /// either edge.
    static func bandCut(height: Int) -> Int {
        let f = Double(bandCutFraction.load(ordering: .relaxed)) / 65536
        return min(max(Int((f * Double(height)).rounded()), minimumBandRows), height - minimumBandRows)
    }

    /// The rows at which a shared sweep of `height` rows is cut: 0, `middle` (the learnt
    /// `bandCut`, `minimumBandRows...height - minimumBandRows`), `height`, and the middle of each
    /// half that has at least `2 x minimumBandRows` rows.
    static func sweepStripCuts(height: Int, middle m: Int) -> [Int] {
        var cuts = [0]
        if m >= 2 * minimumBandRows { cuts.append(m / 2) }
        cuts.append(m)
        if height - m >= 2 * minimumBandRows { cuts.append(m + (height - m) / 2) }
        cuts.append(height)
        return cuts
    }

    /// The middle-cut fraction after a render cut at `cuts` (ascending, from 0 to the height)
    /// whose strips took `seconds` (one per strip), the middle having been `middle`: the row where
    /// the work above and below would balance if each strip's time were spread evenly over its
    /// rows, halfway from `middle` (`middle` itself when no strip took any time); in 1/65536 of the
    /// height, within 5-95 %.
    static func learntCutFraction(cuts: [Int], seconds: [Double], middle: Int) -> UInt32 {
        let h = Double(cuts.last!)
        let total = seconds.reduce(0, +)
        guard total > 0, seconds.allSatisfy({ $0 >= 0 }) else { return UInt32(min(max(Double(middle) / h, 0.05), 0.95) * 65536) }
        var above = 0.0, balanced = h
        for (i, t) in seconds.enumerated() {
            if above + t >= total / 2 {
                balanced = Double(cuts[i]) + (total / 2 - above) / t * Double(cuts[i + 1] - cuts[i])
                break
            }
            above += t
        }
        let next = (Double(middle) + balanced) / 2
        return UInt32(min(max(next / h, 0.05), 0.95) * 65536)
    }

    /// The sweep and its draws for one raster on this thread.
    func renderSweepBand(_ layer: MarkerLayer, _ view: RasterView, now: Int64) throws(RenderError) -> RenderedRaster {
        let (kept, clips, sprites, markers, visited) = try sweep(layer, view, now: now)
        var canvas = TileCanvas(width: view.width, height: view.height)
        let draws = Self.draw(kept, clips, sprites, on: &canvas)
        return RenderedRaster(canvas: canvas, markers: markers, draws: draws, visited: visited)
    }

    /// The raster cut into strips at `cuts` (strictly ascending, from 0 to `view.height`), each
    /// swept by whichever thread claims it first: this thread from the top down, `BandThread`'s
    /// from the bottom up (this thread sweeps them all when the band thread is busy with another
    /// caller's job or starts only after every strip is claimed); the canvases stacked.
    /// `markers` is the sum of the strips' counts, at most the layer's marker count (a marker
    /// whose sprite straddles a cut counts in both: like the sweep's own count, an upper bound);
    /// `draws` and `visited` are the sums. `learnFrom`: the middle cut this render used (one of
    /// `cuts`), to move the learnt one (`bandCutFraction`) from the strips' thread CPU times
    /// (`learntCutFraction`); nil: learn nothing.
    func renderSweepStrips(_ layer: MarkerLayer, _ view: RasterView, now: Int64, cuts: [Int], learnFrom middle: Int? = nil) throws(RenderError) -> RenderedRaster {
        precondition(cuts.count >= 2 && cuts.first == 0 && cuts.last == view.height && zip(cuts, cuts.dropFirst()).allSatisfy { $0 < $1 },
                     "strip cuts \(cuts) are not ascending from 0 to \(view.height)")
        let strips = StripJob(count: cuts.count - 1)
        @Sendable func sweep(_ i: Int) {
            var v = view
            v.originY += Int64(cuts[i])
            v.height = cuts[i + 1] - cuts[i]
            let t0 = BandThread.threadCPUSeconds()
            strips.results[i] = Result { () throws(RenderError) in try renderSweepBand(layer, v, now: now) }
            strips.seconds[i] = BandThread.threadCPUSeconds() - t0
        }
        let n = strips.count
        BandThread.shared.run({
            for i in stride(from: n - 1, through: 0, by: -1) where strips.claim(i) { sweep(i) }
        }, alongside: {
            for i in 0..<n where strips.claim(i) { sweep(i) }
        })
        var stacked: RenderedRaster? = nil
        for i in 0..<n {
            let r = try strips.results[i]!.get()
            guard let above = stacked else { stacked = r; continue }
            stacked = RenderedRaster(canvas: TileCanvas(stacking: above.canvas, r.canvas), markers: above.markers + r.markers,
                                     draws: above.draws + r.draws, visited: above.visited + r.visited)
        }
        if let middle {
            bandCutFraction.store(Self.learntCutFraction(cuts: cuts, seconds: (0..<n).map { strips.seconds[$0] }, middle: middle),
                                  ordering: .relaxed)
        }
        var r = stacked!
        r.markers = min(r.markers, layer.count)
        return r
    }
}

/// The strips of one `renderSweepStrips` call: which are claimed, and each one's result and
/// thread CPU seconds, written only by the thread that claimed it and read after both threads
/// are done (`BandThread.run` returns after the band thread's job has finished).
private final class StripJob: @unchecked Sendable {
    let count: Int
    private let claims: [BandThread.Claim]
    let results: UnsafeMutablePointer<Result<RenderedRaster, RenderError>?>
    let seconds: UnsafeMutablePointer<Double>

    init(count: Int) {
        precondition(count >= 1, "\(count) strips")
        self.count = count
        claims = (0..<count).map { _ in BandThread.Claim() }
        results = .allocate(capacity: count)
        results.initialize(repeating: nil, count: count)
        seconds = .allocate(capacity: count)
        seconds.initialize(repeating: 0, count: count)
    }

    deinit {
        results.deinitialize(count: count)
        results.deallocate()
        seconds.deallocate()
    }

    /// Claims strip `i`: true for the first caller only.
    func claim(_ i: Int) -> Bool { claims[i].take() }
}

/// The learnt middle cut of shared sweeps (`TileRenderer.bandCut`), in 1/65536 of the raster's
/// height; starts at 3/8 (measured for default pins at z0, see above).
private let bandCutFraction = Atomic<UInt32>(3 * 65536 / 8)

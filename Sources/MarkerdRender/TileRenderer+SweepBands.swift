import MarkerdCore
private import Synchronization

/// The node sweep on two threads (`TileRenderer`, step 4 of its documentation, with
/// `sweepBandsAbove`).
///
/// The sweep's culling is pixel-local: whether a pixel is settled depends only on the draws that
/// cover it (`CoverageMask`), and whether a node, a position or a draw is left out depends only on
/// whether its pixels inside the raster are settled. So the raster is cut at a row into a top
/// and a bottom band, each swept exactly as `sweep` sweeps any `RasterView` (a band is the view of
/// that window of device pixels: it walks the nodes and markers whose sprites reach into it,
/// culls against its own mask and draws on its own canvas), the bottom band on `BandThread`'s
/// parked thread while the calling thread sweeps the top one, and the two canvases are stacked.
/// Each band is within 1 per channel of drawing every marker (the bound the sweep keeps for every
/// view), so the stacked raster is too. It can differ from the one-thread sweep by 1 where a draw
/// that straddles the cut is dropped in one band and two identical draws around it then fold into
/// one run there (`TileRenderer.draw`). Whether bands run depends on the machine (tasks runnable,
/// other renders) and the learnt cut moves, so two renders of the same tile version can differ in
/// such pixels (each within 1 of drawing every marker, so by at most 2) (the tile cache keeps the first; the gateway's ETags are weak for this reason).
///
/// Where to cut: the work is not even over the rows (at z0 over the synthetic 10M layer, rows
/// 0-127 took 97.6 ms and rows 128-255 45.9 ms of thread CPU, each swept alone; rows 0-95 and
/// 96-255 72.4 / 75.1 ms, see Benchmarks/README.md), so the cut is learnt: each two-band render
/// times its bands (thread CPU) and moves the cut, as a fraction of the height shared by every
/// renderer of the process (`bandCutFraction`), to where the two would have balanced if each
/// band's work were spread evenly over its rows; halfway, against noise.
///
/// Only when no other render runs in this process (`rendersRunning`) and fewer tasks are runnable
/// than there are cores (`idleCoreLikely`), as for the non-sweep bands (`TileRenderer+Bands.swift`).
extension TileRenderer {
    /// Default `sweepBandsAbove`: rasters whose sweep estimate (`estimate`) reaches 2,000,000
    /// static markers around them (the z0 tile of a layer of that size; at 1M the one-thread z0
    /// sweep takes about 80 ms of CPU). See Benchmarks/README.md for the measurements.
    public static let defaultSweepBandsAbove = 2_000_000

    /// Bands smaller than this many rows are not worth a thread.
    static let minimumBandRows = 16

    /// Step 4 (the node sweep) for `view`: on two threads (`renderSweepBands`, cut at the learnt
    /// `bandCut`) when `alone`, the raster is big enough, the grid counts at least
    /// `sweepBandsAbove` markers around it and a core is likely idle; else on this thread.
    func renderSweep(_ layer: MarkerLayer, _ view: RasterView, now: Int64, alone: Bool) throws(RenderError) -> RenderedRaster {
        if alone && view.height >= 2 * TileRenderer.minimumBandRows && sweepBandsAbove != .max,
           let root = layer.staticSweepRoot,
           TileRenderer.estimate(layer, root, view, atLeast: sweepBandsAbove) >= sweepBandsAbove,
           TileRenderer.idleCoreLikely() {
            return try renderSweepBands(layer, view, now: now, cut: TileRenderer.bandCut(height: view.height), learn: true)
        }
        return try renderSweepBand(layer, view, now: now)
    }

    /// `view` through the node sweep as two bands (cut at the learnt `bandCut`, which this render
    /// then updates), whatever else runs and whatever the machine's load: for benchmarks, the same
    /// raster as `render` within 1 per channel. Requires `.withinOne` culling and a raster at
    /// least `2 x minimumBandRows` rows high.
    public func renderSweepInTwoBands(_ layer: MarkerLayer, view: RasterView, now: Int64) throws(RenderError) -> RenderedRaster {
        precondition(culling == .withinOne && view.height >= 2 * TileRenderer.minimumBandRows,
                     "two sweep bands need .withinOne culling and \(2 * TileRenderer.minimumBandRows) rows")
        return try renderSweepBands(layer, view, now: now, cut: TileRenderer.bandCut(height: view.height), learn: true)
    }

    /// The row at which to cut `height` rows: the learnt fraction (`bandCutFraction`), within
    /// `minimumBandRows` of either edge.
    static func bandCut(height: Int) -> Int {
        let f = Double(bandCutFraction.load(ordering: .relaxed)) / 65536
        return min(max(Int((f * Double(height)).rounded()), minimumBandRows), height - minimumBandRows)
    }

    /// The cut fraction after a render cut at `cut` of `height` rows whose top band took `top`
    /// and bottom band `bottom` seconds: where the two would balance if each band's time were
    /// spread evenly over its rows, halfway from `cut`; in 1/65536 of the height.
    static func learntCutFraction(cut: Int, height: Int, top: Double, bottom: Double) -> UInt32 {
        let c = Double(cut), h = Double(height)
        guard top > 0 && bottom > 0 else { return UInt32(c / h * 65536) }
        // Time per row in each band; the balanced cut b has top' = b * rt, bottom' = total - top'
        // (rows moved across the cut take the rate of the band they leave).
        let total = top + bottom, half = total / 2
        let balanced = top > half ? half / (top / c) : h - half / (bottom / (h - c))
        let next = (c + balanced) / 2
        return UInt32(min(max(next / h, 0.05), 0.95) * 65536)
    }

    /// The sweep and its draws for one raster on this thread.
    func renderSweepBand(_ layer: MarkerLayer, _ view: RasterView, now: Int64) throws(RenderError) -> RenderedRaster {
        let (kept, clips, sprites, markers, visited) = try sweep(layer, view, now: now)
        var canvas = TileCanvas(width: view.width, height: view.height)
        let draws = Self.draw(kept, clips, sprites, on: &canvas)
        return RenderedRaster(canvas: canvas, markers: markers, draws: draws, visited: visited)
    }

    /// The raster as two bands, rows `0 ..< cut` swept on this thread and `cut ..< height` on
    /// `BandThread`'s (`0 < cut < view.height`), stacked. `markers` is the sum of both bands'
    /// counts, at most the layer's marker count (a marker whose sprite straddles the cut counts
    /// in both: like the sweep's own count, an upper bound); `draws` and `visited` are the sums.
    /// `learn`: update the learnt cut (`bandCutFraction`) from the bands' thread CPU times.
    func renderSweepBands(_ layer: MarkerLayer, _ view: RasterView, now: Int64, cut: Int, learn: Bool = false) throws(RenderError) -> RenderedRaster {
        precondition(cut > 0 && cut < view.height, "band cut \(cut) outside 1 ..< \(view.height)")
        var top = view, bottom = view
        top.height = cut
        bottom.originY += Int64(cut)
        bottom.height -= cut
        final class Lower: @unchecked Sendable {
            // Written by the worker thread only, read after `BandThread.run` returned.
            var result: Result<RenderedRaster, RenderError>? = nil
            var seconds = 0.0
        }
        let lower = Lower()
        var upper: Result<RenderedRaster, RenderError>? = nil
        var upperSeconds = 0.0
        BandThread.shared.run({ [self, bottom] in
            let t0 = BandThread.threadCPUSeconds()
            lower.result = Result { () throws(RenderError) in try renderSweepBand(layer, bottom, now: now) }
            lower.seconds = BandThread.threadCPUSeconds() - t0
        }, alongside: {
            let t0 = BandThread.threadCPUSeconds()
            upper = Result { () throws(RenderError) in try renderSweepBand(layer, top, now: now) }
            upperSeconds = BandThread.threadCPUSeconds() - t0
        })
        let a = try upper!.get(), b = try lower.result!.get()
        if learn {
            bandCutFraction.store(Self.learntCutFraction(cut: cut, height: view.height, top: upperSeconds, bottom: lower.seconds),
                                  ordering: .relaxed)
        }
        return RenderedRaster(canvas: TileCanvas(stacking: a.canvas, b.canvas), markers: min(a.markers + b.markers, layer.count),
                              draws: a.draws + b.draws, visited: a.visited + b.visited)
    }
}

/// The learnt cut of two-band sweeps (`TileRenderer.bandCut`), in 1/65536 of the raster's height;
/// starts at 3/8 (measured for default pins at z0, see above).
private let bandCutFraction = Atomic<UInt32>(3 * 65536 / 8)

import MarkerdCore
private import Glibc

/// The node sweep on two threads (`TileRenderer`, step 4 of its documentation, with
/// `sweepBandsAbove`).
///
/// The sweep's culling is pixel-local: whether a pixel is settled depends only on the draws that
/// cover it (`CoverageMask`), and whether a node, a position or a draw is left out depends only on
/// whether its pixels inside the raster are settled. So the raster is cut at a row into a top
/// and a bottom band, each swept exactly as `sweep` sweeps any `RasterView` (a band is the view of
/// that window of device pixels: it walks the nodes and markers whose sprites reach into it,
/// culls against its own mask and draws on its own canvas), the bottom band on `BandWorker`'s
/// parked thread while the calling thread sweeps the top one, and the two canvases are stacked.
/// Each band is within 1 per channel of drawing every marker (the bound the sweep keeps for every
/// view), so the stacked raster is too. It can differ from the one-thread sweep by 1 where a draw
/// that straddles the cut is dropped in one band and two identical draws around it then fold into
/// one run there (`TileRenderer.draw`).
///
/// Only when no other render runs in this process (`rendersRunning`) and the load average leaves
/// a core idle (`idleCoreLikely`), as for the non-sweep bands (`TileRenderer+Bands.swift`).
extension TileRenderer {
    /// Default `sweepBandsAbove`: rasters whose sweep estimate (`estimate`) reaches 2,000,000
    /// static markers around them (the z0 tile of a layer of that size; at 1M the one-thread z0
    /// sweep takes about 80 ms of CPU). See Benchmarks/README.md for the measurements.
    public static let defaultSweepBandsAbove = 2_000_000

    /// Bands smaller than this many rows are not worth a thread.
    static let minimumBandRows = 16

    /// Step 4 (the node sweep) for `view`: on two threads (`renderSweepBands`) when `alone`, the
    /// raster is big enough, the grid counts at least `sweepBandsAbove` markers around it and a
    /// core is likely idle; else on this thread.
    func renderSweep(_ layer: MarkerLayer, _ view: RasterView, now: Int64, alone: Bool) throws(RenderError) -> RenderedRaster {
        if alone && view.height >= 2 * TileRenderer.minimumBandRows && sweepBandsAbove != .max,
           let root = layer.staticSweepRoot,
           TileRenderer.estimate(layer, root, view, atLeast: sweepBandsAbove) >= sweepBandsAbove,
           TileRenderer.idleCoreLikely() {
            return try renderSweepBands(layer, view, now: now, cut: view.height / 2)
        }
        return try renderSweepBand(layer, view, now: now)
    }

    /// `view` through the node sweep as two bands cut at the middle row, whatever else runs and
    /// whatever the load average (for benchmarks: the same raster as `render` within 1 per
    /// channel). Requires `.withinOne` culling and a raster at least two rows high.
    public func renderSweepInTwoBands(_ layer: MarkerLayer, view: RasterView, now: Int64) throws(RenderError) -> RenderedRaster {
        precondition(culling == .withinOne && view.height >= 2, "two sweep bands need .withinOne culling and two rows")
        // TEMPORARY experiment
        let cut = getenv("Z0_CUT").flatMap { Int(String(cString: $0)) } ?? view.height / 2
        return try renderSweepBands(layer, view, now: now, cut: cut)
    }

    /// The sweep and its draws for one raster on this thread.
    func renderSweepBand(_ layer: MarkerLayer, _ view: RasterView, now: Int64) throws(RenderError) -> RenderedRaster {
        let (kept, clips, sprites, markers, visited) = try sweep(layer, view, now: now)
        var canvas = TileCanvas(width: view.width, height: view.height)
        let draws = Self.draw(kept, clips, sprites, on: &canvas)
        return RenderedRaster(canvas: canvas, markers: markers, draws: draws, visited: visited)
    }

    /// The raster as two bands, rows `0 ..< cut` swept on this thread and `cut ..< height` on
    /// `BandWorker`'s (`0 < cut < view.height`), stacked. `markers` is the sum of both bands'
    /// counts, at most the layer's marker count (a marker whose sprite straddles the cut counts
    /// in both: like the sweep's own count, an upper bound); `draws` and `visited` are the sums.
    func renderSweepBands(_ layer: MarkerLayer, _ view: RasterView, now: Int64, cut: Int) throws(RenderError) -> RenderedRaster {
        precondition(cut > 0 && cut < view.height, "band cut \(cut) outside 1 ..< \(view.height)")
        var top = view, bottom = view
        top.height = cut
        bottom.originY += Int64(cut)
        bottom.height -= cut
        final class Lower: @unchecked Sendable {
            // Written by the worker thread only, read after `BandWorker.run` returned.
            var result: Result<RenderedRaster, RenderError>? = nil
        }
        let lower = Lower()
        var upper: Result<RenderedRaster, RenderError>? = nil
        BandWorker.shared.run({ [self, bottom] in
            lower.result = Result { () throws(RenderError) in try renderSweepBand(layer, bottom, now: now) }
        }, alongside: {
            upper = Result { () throws(RenderError) in try renderSweepBand(layer, top, now: now) }
        })
        let a = try upper!.get(), b = try lower.result!.get()
        return RenderedRaster(canvas: TileCanvas(stacking: a.canvas, b.canvas), markers: min(a.markers + b.markers, layer.count),
                              draws: a.draws + b.draws, visited: a.visited + b.visited)
    }
}

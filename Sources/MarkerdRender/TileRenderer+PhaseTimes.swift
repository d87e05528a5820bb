import MarkerdCore

/// Thread CPU seconds of each step of one render on one thread (`TileRenderer.renderTimingPhases`).
public struct RenderPhaseTimes: Sendable, Equatable {
    /// Walking the grid and placing every marker's sprite (`collect`).
    public var collect: Double
    /// Sorting the collected draws in the draw order (step 1 of `TileRenderer`).
    public var sort: Double
    /// Walking the draws front to back over the coverage mask: which to keep, and each one's clip
    /// (step 2).
    public var cull: Double
    /// Compositing the kept draws onto the canvas (step 3).
    public var draw: Double

    public init(collect: Double, sort: Double, cull: Double, draw: Double) {
        self.collect = collect; self.sort = sort; self.cull = cull; self.draw = draw
    }
}

extension TileRenderer {
    /// Renders `view` on this thread the way `render` renders a raster that takes neither two
    /// bands nor the node sweep, and returns each step's thread CPU time with the raster (the
    /// same pixels and counts as that `render`). Rasters that `render` would sweep are not swept
    /// here. For benchmarks that look for where a tile's time goes (`marker-bench --only
    /// densetiles`). Throws when a pin sprite cannot be drawn.
    public func renderTimingPhases(_ layer: MarkerLayer, view: RasterView, now: Int64) throws(RenderError)
        -> (raster: RenderedRaster, phases: RenderPhaseTimes) {
        let t0 = BandThread.threadCPUSeconds()
        let (items, sprites, markers) = try collect(layer, view, now: now)
        let t1 = BandThread.threadCPUSeconds()
        let sorted = items.isEmpty ? [] : Self.inDrawOrder(layer, items)
        let t2 = BandThread.threadCPUSeconds()
        var mask = coverageMask(width: view.width, height: view.height)
        let (kept, clips) = sorted.isEmpty ? ([], []) : Self.cullExact(sorted, sprites, &mask)
        let t3 = BandThread.threadCPUSeconds()
        var canvas = TileCanvas(width: view.width, height: view.height)
        let draws = Self.draw(kept, clips, sprites, on: &canvas)
        let t4 = BandThread.threadCPUSeconds()
        return (RenderedRaster(canvas: canvas, markers: markers, draws: draws, visited: markers),
                RenderPhaseTimes(collect: t1 - t0, sort: t2 - t1, cull: t3 - t2, draw: t4 - t3))
    }
}

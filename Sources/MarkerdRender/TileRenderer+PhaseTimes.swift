import MarkerdCore
#if canImport(Glibc)
private import Glibc
#endif

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
    /// Renders `view` the way `render` renders a raster that does not take the node sweep, and returns each step's thread CPU time with the raster (the
    /// same pixels and counts as that `render`). Rasters that `render` would sweep are not swept
    /// here. For benchmarks that look for where a tile's time goes (`marker-bench --only
    /// densetiles`). Throws when a pin sprite cannot be drawn.
    public func renderTimingPhases(_ layer: MarkerLayer, view: RasterView, now: Int64) throws(RenderError)
        -> (raster: RenderedRaster, phases: RenderPhaseTimes) {
        let t0 = Self.threadCPUSeconds()
        let (items, sprites, markers) = try collect(layer, view, now: now)
        let t1 = Self.threadCPUSeconds()
        let sorted = items.isEmpty ? [] : Self.inDrawOrder(layer, items)
        let t2 = Self.threadCPUSeconds()
        var mask = coverageMask(width: view.width, height: view.height)
        let (kept, clips) = sorted.isEmpty ? ([], []) : Self.cullExact(sorted, sprites, &mask)
        let t3 = Self.threadCPUSeconds()
        var canvas = TileCanvas(width: view.width, height: view.height)
        let draws = Self.draw(kept, clips, sprites, on: &canvas)
        let t4 = Self.threadCPUSeconds()
        return (RenderedRaster(canvas: canvas, markers: markers, draws: draws, visited: markers),
                RenderPhaseTimes(collect: t1 - t0, sort: t2 - t1, cull: t3 - t2, draw: t4 - t3))
    }

    /// CPU time the calling thread has used, in seconds (0 when the clock cannot be read).
    static func threadCPUSeconds() -> Double {
        var ts = timespec()
        guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0 else { return 0 }
        return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
    }
}

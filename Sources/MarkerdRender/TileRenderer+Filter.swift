import MarkerdCore

extension TileRenderer {
    /// Renders `view` with only the markers whose slot `keep` accepts (a labelled layer whose
    /// icons without a placed label are hidden). On this thread, without the node sweep or bands:
    /// the markers are collected, filtered, culled and drawn as `render(_:view:now:)` does for a
    /// view below the sweep threshold, so the kept markers' pixels are the same as theirs.
    public func render(_ layer: MarkerLayer, view: RasterView, now: Int64,
                       keep: (Int32) -> Bool) throws(RenderError) -> RenderedRaster {
        var (items, sprites, _) = try collect(layer, view, now: now)
        items.removeAll { !keep($0.slot) }
        let markers = Set(items.lazy.map(\.slot)).count
        let (canvas, draws) = renderItems(layer, items, sprites, width: view.width, height: view.height)
        return RenderedRaster(canvas: canvas, markers: markers, draws: draws, visited: markers)
    }
}

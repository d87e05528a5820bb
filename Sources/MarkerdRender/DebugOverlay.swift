private import CCairo

/// The per-layer debug overlay of raster tiles (`TilingOptions.debug_overlay`, like MapConductor's
/// debugTileOverlay): a 1 px (times density) blue border along the tile's edges and a label such as
/// "12/2200/1343 entries=57" in the top-left corner (Noto Sans 12 px x density through Pango, black
/// with a white halo), drawn with Cairo onto a transparent image that is composited over the markers.
public enum DebugOverlay {
    /// The overlay as a premultiplied `width x height` image. Throws `.drawingFailed` if Cairo
    /// cannot allocate the surface.
    public static func image(width: Int, height: Int, density: Int, text: String) throws(RenderError) -> RGBAImage {
        return try CairoCanvas.drawImage(width: width, height: height, what: "the debug overlay") { cr in
            let d = Double(max(1, density))
            cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE)
            cairo_set_source_rgba(cr, 0, 0.4, 1, 1)
            cairo_set_line_width(cr, d)
            cairo_rectangle(cr, d / 2, d / 2, Double(width) - d, Double(height) - d)
            cairo_stroke(cr)

            cairo_set_antialias(cr, CAIRO_ANTIALIAS_GRAY)
            TextEngine.with { engine in
                let baseline = engine.setText(text, family: TextEngine.uiFamily, sizePx: 12 * d, bold: false).baseline
                engine.draw(on: cr, x: 4 * d, y: (4 * d + baseline).rounded() - baseline, color: 0xFF00_0000,
                            halo: 0xFFFF_FFFF, haloWidth: 3 * d)
            }
        }
    }
}

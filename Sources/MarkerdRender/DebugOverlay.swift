private import CCairo

/// The per-layer debug overlay of raster tiles (`TilingOptions.debug_overlay`, like MapConductor's
/// debugTileOverlay): a 1 px (times density) blue border along the tile's edges and a label such as
/// "12/2200/1343 entries=57" in the top-left corner (DejaVu Sans 12 px x density, black with a white
/// halo), drawn with Cairo onto a transparent image that is composited over the markers.
public enum DebugOverlay {
    /// The overlay as a premultiplied `width x height` image. Throws `.drawingFailed` if Cairo
    /// cannot allocate the surface.
    public static func image(width: Int, height: Int, density: Int, text: String) throws(RenderError) -> RGBAImage {
        guard let surface = cairo_image_surface_create(CAIRO_FORMAT_ARGB32, Int32(width), Int32(height)),
              cairo_surface_status(surface) == CAIRO_STATUS_SUCCESS
        else { throw RenderError(.drawingFailed, "cairo: cannot create a \(width)x\(height) surface") }
        defer { cairo_surface_destroy(surface) }
        guard let cr = cairo_create(surface) else { throw RenderError(.drawingFailed, "cairo: cannot create a context") }
        defer { cairo_destroy(cr) }
        let d = Double(max(1, density))
        cairo_set_antialias(cr, CAIRO_ANTIALIAS_NONE)
        cairo_set_source_rgba(cr, 0, 0.4, 1, 1)
        cairo_set_line_width(cr, d)
        cairo_rectangle(cr, d / 2, d / 2, Double(width) - d, Double(height) - d)
        cairo_stroke(cr)

        cairo_set_antialias(cr, CAIRO_ANTIALIAS_GRAY)
        cairo_select_font_face(cr, "DejaVu Sans", CAIRO_FONT_SLANT_NORMAL, CAIRO_FONT_WEIGHT_NORMAL)
        cairo_set_font_size(cr, 12 * d)
        if let options = cairo_font_options_create() {
            cairo_font_options_set_antialias(options, CAIRO_ANTIALIAS_GRAY)
            cairo_font_options_set_hint_style(options, CAIRO_HINT_STYLE_NONE)
            cairo_font_options_set_hint_metrics(options, CAIRO_HINT_METRICS_OFF)
            cairo_set_font_options(cr, options)
            cairo_font_options_destroy(options)
        }
        var fe = cairo_font_extents_t()
        cairo_font_extents(cr, &fe)
        cairo_move_to(cr, 4 * d, (4 * d + fe.ascent).rounded())
        cairo_text_path(cr, text)
        cairo_set_source_rgba(cr, 1, 1, 1, 1)
        cairo_set_line_width(cr, 3 * d)
        cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND)
        cairo_stroke_preserve(cr)
        cairo_set_source_rgba(cr, 0, 0, 0, 1)
        cairo_fill(cr)

        return try CairoCanvas.image(surface, cr, width: width, height: height, what: "the debug overlay")
    }
}

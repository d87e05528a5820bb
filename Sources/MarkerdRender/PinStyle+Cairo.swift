import MarkerdCore
private import CCairo
#if canImport(Glibc)
private import Glibc  // acos, sin, cos
#elseif canImport(Darwin)
private import Darwin
#endif

extension PinStyle {
    /// Draws the pin with Cairo (antialiased) at `density` device pixels per px (1 for 256 px
    /// tiles, 2 for 512 px tiles). Non-finite or non-positive densities count as 1.
    ///
    /// The sprite is `S = round(48 x scale x density)` px high (clamped to 4...1024) and S px
    /// wide, or wider (by an even number of px, so the tip stays at the centre) when the label
    /// needs the room, as MapConductor does. The tip is at (width / 2, S - 0.5 x S / 48) in
    /// device px: in the bottom row of pixels, between the two middle columns. The outline is at
    /// most S / 8 px wide.
    ///
    /// Shape (48-unit design space, scaled by S / 48): head circle of radius 15 centred at
    /// (24, 16.5), tip at (24, 47.5), joined by the two tangents from the tip to the circle
    /// (MapConductor's proportions); filled, then stroked (round joins) on the outline. When the
    /// outline is wider than S / 48 the shape shrinks around the centre so that the outline
    /// stays inside the sprite.
    /// The label (Noto Sans through Pango, `TextEngine`: any script, grayscale antialiasing, no
    /// hinting) is centred on the head: horizontally by its ink box, vertically by the font's
    /// ascent and descent, on whole pixels, with a white outline of `max(scale, 2) x density` px
    /// behind it (MapConductor's label stroke).
    ///
    /// - Returns: premultiplied RGBA8.
    /// - Throws: `.drawingFailed` if Cairo cannot allocate the surface.
    public func render(density: Float = 1) throws(RenderError) -> RGBAImage {
        try TextEngine.with { (engine) throws(RenderError) -> RGBAImage in try render(density: density, text: engine) }
    }

    private func render(density: Float, text engine: TextEngine) throws(RenderError) -> RGBAImage {
        let style = normalized
        let density = density.isFinite && density > 0 ? Double(density) : 1
        let scale = Double(style.scale)
        let size = Int(min(max((Double(PinStyle.baseSize) * scale * density).rounded(), 4), 1024))
        let s = Double(size)
        let strokeWidth = min(Double(style.strokeWidth) * scale * density, s / 8)
        let fontSize = min(Double(style.labelSize) * density, 1024)
        let haloWidth = max(scale, 2) * density

        // Width: S, or wide enough for the label plus 10% of S (MapConductor's padding).
        var width = size
        var text: TextEngine.Extents?
        if let label = style.label {
            let e = engine.setText(label, family: TextEngine.uiFamily, sizePx: fontSize, bold: false)
            let needed = e.logical.width + haloWidth * 2 + s * 0.1
            if needed > s {
                width = min(size + 2 * Int(((needed - s) / 2).rounded(.up)), 1024)
            }
            text = e
        }

        return try CairoCanvas.drawImage(width: width, height: size, what: "a pin") { cr in

            // Design space (48 units) -> device px around the sprite's centre, shrunk when the
            // outline is thicker than one unit so that the tip's round join stays inside.
            let f = min(s / 48, max(s / 2 - strokeWidth / 2, 1) / 23.5)
            let cx = Double(width) / 2
            func dy(_ y: Double) -> Double { s / 2 + (y - 24) * f }
            let headY = dy(16.5)
            let radius = 15 * f
            let tipY = dy(47.5)
            let dist = tipY - headY
            let phi = dist > radius ? (radius / dist).clampedAcos : 0
            let right = Double.pi / 2 - phi  // tangent points, as angles from the head's centre
            let left = Double.pi / 2 + phi
            // Two mirrored arcs meeting at the top, so that the path is symmetric about x = cx.
            cairo_move_to(cr, cx, tipY)
            cairo_line_to(cr, cx + radius * cos(right), headY + radius * sin(right))
            cairo_arc_negative(cr, cx, headY, radius, right, -Double.pi / 2)
            cairo_arc_negative(cr, cx, headY, radius, -Double.pi / 2, left - 2 * Double.pi)
            cairo_close_path(cr)

            CairoCanvas.setSource(cr, style.fillColor)
            cairo_fill_preserve(cr)
            if strokeWidth > 0 && style.strokeColor >> 24 != 0 {
                CairoCanvas.setSource(cr, style.strokeColor)
                cairo_set_line_width(cr, strokeWidth)
                cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND)
                cairo_set_line_cap(cr, CAIRO_LINE_CAP_ROUND)
                cairo_stroke(cr)
            } else {
                cairo_new_path(cr)
            }

            if let text {
                let ascent = text.baseline - text.logical.y
                let descent = text.logical.y + text.logical.height - text.baseline
                let baseline = (headY + (ascent - descent) / 2).rounded()
                engine.draw(on: cr, x: (cx - (text.ink.x + text.ink.width / 2)).rounded(), y: baseline - text.baseline,
                            color: style.labelColor, halo: 0xFFFF_FFFF, haloWidth: haloWidth)
            }
        }
    }

}

private extension Double {
    var clampedAcos: Double { acos(Swift.min(Swift.max(self, -1), 1)) }
}

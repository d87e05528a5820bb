private import CCairo
private import Synchronization

/// Glyphs' coverage masks (A8), each filled from its outline once per font, glyph, density and
/// quarter-pixel position, then added into label masks (`LabelText.sprite`): a label new to the
/// cache costs its layout and a few small copies instead of filling its whole outline. Thread-safe.
///
/// A glyph is drawn at its position rounded down to a quarter device pixel (at most 1/4 px off,
/// less than a stroke's antialiasing), and glyphs that overlap add up (saturating) where a fill of
/// their joint outline would take the union: only antialiased pixels where two glyphs touch can
/// differ, by little. Deterministic: a mask depends on its key alone, so a label gives the same
/// bytes whichever masks were cached before.
final class GlyphMasks: Sendable {
    private struct Key: Hashable, Sendable {
        let fontKey: String, glyph: UInt32, density: Int, phaseX: Int, phaseY: Int
    }
    /// `bytes` (`width x height`) placed with its top-left at (`left`, `top`) device px from the
    /// glyph's origin rounded down to whole px.
    private struct Mask: Sendable {
        let left: Int, top: Int, width: Int, height: Int
        let bytes: [UInt8]
    }
    private let masks: Mutex<TwoGenerations<Key, Mask>>

    /// `cacheBytes`: mask bytes kept at most (plus one mask), > 0.
    init(cacheBytes: Int) {
        masks = Mutex(TwoGenerations(limit: cacheBytes))
    }

    /// Adds the coverage of `glyphs` (`TextEngine.glyphs`, px at density 1) with the layout's origin
    /// at (`originX`, `originY`) px into `mask` (`width x height` device px at `density`,
    /// saturating at 255); parts outside it are cut off.
    ///
    /// - Throws: `.drawingFailed` if Cairo cannot allocate a glyph's surface.
    func add(_ glyphs: [TextEngine.PlacedGlyph], originX: Double, originY: Double, density: Int,
             into mask: inout [UInt8], width: Int, height: Int) throws(RenderError) {
        let d = Double(density)
        for g in glyphs {
            let qx = Int(((originX + g.x) * d * 4).rounded(.down)), qy = Int(((originY + g.y) * d * 4).rounded(.down))
            let key = Key(fontKey: g.fontKey, glyph: g.glyph, density: density, phaseX: qx & 3, phaseY: qy & 3)
            let m: Mask
            if let hit = masks.withLock({ $0.get(key) }) { m = hit } else {
                m = try Self.fill(g, key)
                masks.withLock { $0.insert(key, m, cost: m.bytes.count + 64) }
            }
            let x0 = (qx >> 2) + m.left, y0 = (qy >> 2) + m.top
            let u0 = max(0, -x0), u1 = min(m.width, width - x0), v0 = max(0, -y0), v1 = min(m.height, height - y0)
            if u0 >= u1 || v0 >= v1 { continue }
            m.bytes.withUnsafeBufferPointer { src in
                mask.withUnsafeMutableBufferPointer { dst in
                    for v in v0..<v1 {
                        let s = v * m.width, t = (y0 + v) * width + x0
                        for u in u0..<u1 {
                            let c = src[s + u]
                            if c != 0 { dst[t + u] = UInt8(truncatingIfNeeded: min(Int(dst[t + u]) + Int(c), 255)) }
                        }
                    }
                }
            }
        }
    }

    /// The glyph's outline filled (antialiased, like a label's) at its key's density, its origin
    /// at the key's quarter-pixel phase.
    private static func fill(_ g: TextEngine.PlacedGlyph, _ key: Key) throws(RenderError) -> Mask {
        var glyph = cairo_glyph_t(index: UInt(g.glyph), x: 0, y: 0)
        var ext = cairo_text_extents_t()
        cairo_scaled_font_glyph_extents(g.font, &glyph, 1, &ext)
        if ext.width <= 0 || ext.height <= 0 { return Mask(left: 0, top: 0, width: 0, height: 0, bytes: []) }
        let d = Double(key.density)
        // One pixel of margin beyond the ink on every side, and the phase's quarter pixels.
        let left = Int((ext.x_bearing * d).rounded(.down)) - 1, top = Int((ext.y_bearing * d).rounded(.down)) - 1
        let w = Int(((ext.x_bearing + ext.width) * d).rounded(.up)) - left + 2
        let h = Int(((ext.y_bearing + ext.height) * d).rounded(.up)) - top + 2
        let bytes = try CairoCanvas.drawMask(width: w, height: h, what: "a glyph") { cr in
            cairo_translate(cr, Double(-left) + Double(key.phaseX) / 4, Double(-top) + Double(key.phaseY) / 4)
            cairo_scale(cr, d, d)
            cairo_set_scaled_font(cr, g.font)
            cairo_glyph_path(cr, &glyph, 1)
            cairo_fill(cr)
        }
        return Mask(left: left, top: top, width: w, height: h, bytes: bytes)
    }
}

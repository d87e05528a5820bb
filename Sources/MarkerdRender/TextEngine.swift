private import CCairo
private import CPango
private import Synchronization

/// All text MarkerdRender draws (map labels, pin labels, cluster counts, the debug overlay) goes
/// through Pango: HarfBuzz shaping, bidi, line breaking and fontconfig font fallback, drawn as
/// outlines with Cairo.
///
/// An engine is one Pango font map, context and layout. Pango's objects are not thread-safe, so
/// an engine is used by one thread at a time: `TextEngine.with` lends an idle one from a pool
/// (making a new one when all are busy), so the pool grows to the peak number of threads drawing
/// text at once and is kept for the process's life.
///
/// Every engine lays out identically: no hinting (Cairo hint style NONE, hint metrics OFF) and
/// unrounded glyph positions, so text measured at one size scales linearly to any other, and a
/// fixed fallback chain (`fallbackFamilies`) after the requested family.
final class TextEngine: @unchecked Sendable {  // used by one thread at a time, see `with`
    /// Families tried, in order, after the requested one for characters it lacks (all in Debian's
    /// fonts-noto-core and fonts-noto-cjk): Latin, Greek and Cyrillic, then Arabic, Hebrew,
    /// Devanagari, Thai and CJK (Japanese forms for Han). Other scripts: fontconfig's choice.
    static let fallbackFamilies = "Noto Sans, Noto Sans Arabic, Noto Sans Hebrew, Noto Sans Devanagari, Noto Sans Thai, Noto Sans CJK JP"

    /// The family of pin labels, cluster counts and the debug overlay.
    static let uiFamily = "Noto Sans"

    private let fontMap: UnsafeMutablePointer<PangoFontMap>
    private let context: OpaquePointer
    private let layout: OpaquePointer

    private static let idle = Mutex<[TextEngine]>([])

    private init() {
        // GLib aborts the process on allocation failure, so these cannot return NULL.
        fontMap = pango_cairo_font_map_new()!
        context = pango_font_map_create_context(fontMap)!
        let options = cairo_font_options_create()!
        cairo_font_options_set_antialias(options, CAIRO_ANTIALIAS_GRAY)
        cairo_font_options_set_hint_style(options, CAIRO_HINT_STYLE_NONE)
        cairo_font_options_set_hint_metrics(options, CAIRO_HINT_METRICS_OFF)
        pango_cairo_context_set_font_options(context, options)
        cairo_font_options_destroy(options)
        pango_context_set_round_glyph_positions(context, 0)
        layout = pango_layout_new(context)!
    }

    /// Runs `body` with an engine no other thread uses meanwhile. Engines are reused: `body`
    /// must not keep it.
    static func with<R, E: Error>(_ body: (TextEngine) throws(E) -> R) throws(E) -> R {
        let engine = idle.withLock { $0.popLast() } ?? TextEngine()
        defer { idle.withLock { $0.append(engine) } }
        return try body(engine)
    }

    /// A rectangle in px of the layout's coordinate space (origin: the layout's top-left).
    struct Box: Hashable, Sendable {
        var x: Double, y: Double, width: Double, height: Double
    }

    /// The extents of the engine's current text, px: `logical` (advances, font ascent and
    /// descent; what lines are stacked and centred by), `ink` (the glyphs' outlines) and the
    /// first line's `baseline` below the layout's top.
    struct Extents: Hashable, Sendable {
        var logical: Box
        var ink: Box
        var baseline: Double
    }

    /// Lays out `text` in `family` (then `fallbackFamilies`) at `sizePx` px (absolute size).
    ///
    /// - `wrapWidth` nil: one line, as long as the text. Otherwise lines at most `wrapWidth` px
    ///   long, broken between words (inside a word when one word is too long), at most `maxLines`
    ///   of them, the last ending with an ellipsis when text remains; lines are centred.
    /// - The paragraph direction comes from the text's first strong character (Arabic and Hebrew
    ///   right to left). Line breaks in `text` count as spaces: lines come from wrapping only.
    @discardableResult
    func setText(_ text: String, family: String, sizePx: Double, bold: Bool,
                 wrapWidth: Double? = nil, maxLines: Int = 1) -> Extents {
        let desc = pango_font_description_new()!
        defer { pango_font_description_free(desc) }
        pango_font_description_set_family(desc, family + ", " + TextEngine.fallbackFamilies)
        pango_font_description_set_weight(desc, bold ? PANGO_WEIGHT_BOLD : PANGO_WEIGHT_NORMAL)
        pango_font_description_set_absolute_size(desc, sizePx * Double(PANGO_SCALE))
        pango_layout_set_font_description(layout, desc)
        if let wrapWidth {
            pango_layout_set_width(layout, Int32((wrapWidth * Double(PANGO_SCALE)).rounded()))
            pango_layout_set_wrap(layout, PANGO_WRAP_WORD_CHAR)
            pango_layout_set_ellipsize(layout, PANGO_ELLIPSIZE_END)
            pango_layout_set_height(layout, -Int32(max(1, maxLines)))  // negative: lines per paragraph
            pango_layout_set_alignment(layout, PANGO_ALIGN_CENTER)
        } else {
            pango_layout_set_width(layout, -1)
            pango_layout_set_ellipsize(layout, PANGO_ELLIPSIZE_NONE)
            pango_layout_set_height(layout, -1)
            pango_layout_set_alignment(layout, PANGO_ALIGN_LEFT)
        }
        let oneParagraph = text.contains(where: \.isNewline)
            ? String(text.map { $0.isNewline ? " " : $0 }) : text
        pango_layout_set_text(layout, oneParagraph, -1)

        var ink = PangoRectangle(), logical = PangoRectangle()
        pango_layout_get_extents(layout, &ink, &logical)
        return Extents(logical: TextEngine.box(logical), ink: TextEngine.box(ink),
                       baseline: Double(pango_layout_get_baseline(layout)) / Double(PANGO_SCALE))
    }

    /// Lines of the current layout.
    var lineCount: Int { Int(pango_layout_get_line_count(layout)) }

    /// Characters of the current layout drawn as "unknown glyph" boxes: no installed font has them.
    var unknownGlyphCount: Int { Int(pango_layout_get_unknown_glyphs_count(layout)) }

    /// The horizontal span (min, max) in px of the character at UTF-8 offset `index` of the text
    /// as laid out (line breaks replaced by spaces).
    func characterSpan(utf8Offset index: Int) -> (min: Double, max: Double) {
        var pos = PangoRectangle()
        pango_layout_index_to_pos(layout, Int32(index), &pos)
        let a = Double(pos.x) / Double(PANGO_SCALE), b = Double(pos.x + pos.width) / Double(PANGO_SCALE)
        return (min(a, b), max(a, b))
    }

    /// Draws the current layout on `cr` with its top-left at (`x`, `y`) in `cr`'s user space:
    /// first its outlines stroked `haloWidth` wide (round joins) in `halo` when both are visible,
    /// then filled in `color` (colours 0xAARRGGBB). Leaves `cr` without a path.
    func draw(on cr: OpaquePointer, x: Double, y: Double, color: UInt32, halo: UInt32 = 0, haloWidth: Double = 0) {
        cairo_new_path(cr)
        cairo_move_to(cr, x, y)
        pango_cairo_layout_path(cr, layout)
        if haloWidth > 0 && halo >> 24 != 0 {
            CairoCanvas.setSource(cr, halo)
            cairo_set_line_width(cr, haloWidth)
            cairo_set_line_join(cr, CAIRO_LINE_JOIN_ROUND)
            cairo_stroke_preserve(cr)
        }
        CairoCanvas.setSource(cr, color)
        cairo_fill(cr)
    }

    /// One glyph of the current layout: its font (`fontKey` names it: family, style, weight and
    /// absolute size; the same key is the same outlines in every engine), its index in the font
    /// and its origin in px in the layout's coordinate space (baseline, after Pango's offsets).
    struct PlacedGlyph {
        var font: OpaquePointer  // cairo_scaled_font_t, owned by the engine's font map
        var fontKey: String
        var glyph: UInt32
        var x: Double
        var y: Double
    }

    /// The glyphs of the current layout in drawing order, as `draw` draws them; nil when a
    /// character has no glyph in any font (Pango draws a box for it).
    func glyphs() -> [PlacedGlyph]? {
        guard let iter = pango_layout_get_iter(layout) else { return nil }
        defer { pango_layout_iter_free(iter) }
        let empty: UInt32 = 0x0FFF_FFFF, unknownFlag: UInt32 = 0x1000_0000  // PANGO_GLYPH_EMPTY, PANGO_GLYPH_UNKNOWN_FLAG
        var out: [PlacedGlyph] = []
        var keys: [UnsafeMutableRawPointer: String] = [:]
        repeat {
            guard let run = pango_layout_iter_get_run_readonly(iter) else { continue }
            guard let font = run.pointee.item.pointee.analysis.font,
                  let scaled = pango_cairo_font_get_scaled_font(OpaquePointer(font)) else { return nil }
            let fontKey: String
            if let known = keys[UnsafeMutableRawPointer(font)] { fontKey = known } else {
                let desc = pango_font_describe_with_absolute_size(font)!
                defer { pango_font_description_free(desc) }
                let text = pango_font_description_to_string(desc)!
                defer { g_free(text) }
                fontKey = String(cString: text)
                keys[UnsafeMutableRawPointer(font)] = fontKey
            }
            var logical = PangoRectangle()
            pango_layout_iter_get_run_extents(iter, nil, &logical)
            let baseline = pango_layout_iter_get_baseline(iter) - run.pointee.y_offset
            var x = logical.x + run.pointee.start_x_offset
            let glyphs = run.pointee.glyphs.pointee
            for i in 0..<Int(glyphs.num_glyphs) {
                let g = glyphs.glyphs[i]
                defer { x += g.geometry.width }
                if g.glyph == empty { continue }
                if g.glyph & unknownFlag != 0 { return nil }
                out.append(PlacedGlyph(font: scaled, fontKey: fontKey, glyph: g.glyph,
                                       x: Double(x + g.geometry.x_offset) / Double(PANGO_SCALE),
                                       y: Double(baseline + g.geometry.y_offset) / Double(PANGO_SCALE)))
            }
        } while pango_layout_iter_next_run(iter) != 0
        return out
    }

    private static func box(_ r: PangoRectangle) -> Box {
        let s = Double(PANGO_SCALE)
        return Box(x: Double(r.x) / s, y: Double(r.y) / s, width: Double(r.width) / s, height: Double(r.height) / s)
    }
}

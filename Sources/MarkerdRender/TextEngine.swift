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

    private static func box(_ r: PangoRectangle) -> Box {
        let s = Double(PANGO_SCALE)
        return Box(x: Double(r.x) / s, y: Double(r.y) / s, width: Double(r.width) / s, height: Double(r.height) / s)
    }
}

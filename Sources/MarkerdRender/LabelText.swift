import MarkerdCore
private import CCairo
private import Synchronization

/// Map labels' text through Pango (`TextEngine`): measured for placement (`LabelMeasurer`) and
/// drawn into premultiplied sprites for raster tiles. Thread-safe: any number of threads may
/// measure and draw at once.
///
/// Layout (px at density 1): `style.fontSize` px (absolute size) in `style.fontFamily`, then the
/// fallback chain `Noto Sans, Noto Sans Arabic, Noto Sans Hebrew, Noto Sans Devanagari,
/// Noto Sans Thai, Noto Sans CJK JP`, then any installed font fontconfig finds for a character;
/// shaped by HarfBuzz, the paragraph's direction from its first strong character (Arabic and
/// Hebrew right to left). Lines are at most `maxWidth` px long and centred; `.wrap` breaks them
/// between words (inside a word longer than a line) onto at most `maxLines` lines, `.ellipsis`
/// keeps one; either way the last line ends with "…" when text remains. Line breaks in the text
/// count as spaces. No hinting: a label laid out at density 1 is drawn scaled to density 2 or 3,
/// so it has the same lines and shape at every density.
///
/// Styles outside `LabelStyle.validate`'s ranges are clamped into them (non-finite numbers take
/// the defaults) rather than refused.
public final class LabelText: LabelMeasurer {
    /// The process-wide instance the tile renderer uses.
    public static let shared = LabelText()

    /// Measurements kept at most (default 65,536, each about 100-300 bytes with its key); those
    /// used within the last `measureCapacity / 2` new ones always stay.
    public let measureCapacity: Int
    /// Bytes of sprite pixels kept at most, plus one sprite (default 64 MiB: about 2,500
    /// ten-character labels at density 2); sprites used within the last half of that stay. Glyph
    /// masks (`GlyphMasks`) are kept besides, up to a quarter of it.
    public let spriteCacheBytes: Int

    private struct MeasureKey: Hashable, Sendable { let text: String; let style: LabelTextStyle }
    private struct SpriteKey: Hashable, Sendable {
        let text: String; let style: LabelTextStyle; let paint: LabelPaint; let density: Int
    }

    private let sizes: Mutex<TwoGenerations<MeasureKey, LabelSize>>
    private let sprites: Mutex<TwoGenerations<SpriteKey, RGBAImage>>
    private let glyphMasks: GlyphMasks
    private let layouts = Atomic<Int>(0)
    private let draws = Atomic<Int>(0)

    /// Both bounds must be positive.
    public init(measureCapacity: Int = 65_536, spriteCacheBytes: Int = 64 << 20) {
        precondition(measureCapacity > 0 && spriteCacheBytes > 0, "cache bounds must be positive")
        self.measureCapacity = measureCapacity
        self.spriteCacheBytes = spriteCacheBytes
        sizes = Mutex(TwoGenerations(limit: measureCapacity))
        sprites = Mutex(TwoGenerations(limit: spriteCacheBytes))
        glyphMasks = GlyphMasks(cacheBytes: max(1, spriteCacheBytes / 4))
    }

    /// The box `text` laid out in `style` occupies, in whole px at density 1: the text's logical
    /// extents (advances, and the fonts' ascent plus descent per line) plus `inset =
    /// ceil(haloWidth)` on every side, rounded up. The text's logical rectangle starts at
    /// (`inset`, `inset`). Empty text measures 0 x 0. Memoized (`measureCapacity`). Glyphs
    /// reaching beyond their logical rectangle by more than the inset (rare) are clipped in
    /// sprites.
    public func measure(_ text: String, style: LabelTextStyle) -> LabelSize {
        if text.isEmpty { return LabelSize(width: 0, height: 0) }
        let key = MeasureKey(text: text, style: style.clamped)
        if let size = sizes.withLock({ $0.get(key) }) { return size }
        let size = TextEngine.with { layOut(text, key.style, $0).size }
        sizes.withLock { $0.insert(key, size, cost: 1) }
        return size
    }

    /// `text` in `style` and `paint` at `density` device px per px: premultiplied RGBA8 of exactly
    /// `measure(text, style) x density` px (0 x 0 for empty text): the glyphs in the text colour
    /// (their outlines filled, each glyph at its position rounded down to a quarter device px,
    /// from masks cached per glyph: `GlyphMasks`) over a halo `haloWidth x density` px wide
    /// around them in the halo colour (the glyphs' coverage dilated by a disc, `LabelHalo`: as
    /// stroking the outlines twice that wide with round joins would); the text's logical
    /// rectangle starts at (`inset x density`, `inset x density`).
    /// Drawn once per (text, style, paint, density) and cached (`spriteCacheBytes`); two threads
    /// asking for a new sprite at once may both draw it (identical results). Deterministic: the
    /// same inputs give the same bytes.
    ///
    /// - Throws: `.invalidArgument` for a density other than 1, 2 or 3; `.drawingFailed` if Cairo
    ///   cannot allocate the surface.
    public func sprite(_ text: String, style: LabelTextStyle, paint: LabelPaint, density: Int) throws(RenderError) -> RGBAImage {
        guard (1...3).contains(density) else {
            throw RenderError(.invalidArgument, "label density \(density) is not 1, 2 or 3")
        }
        let key = SpriteKey(text: text, style: style.clamped, paint: paint, density: density)
        if let image = sprites.withLock({ $0.get(key) }) { return image }
        let image = try TextEngine.with { (engine) throws(RenderError) -> RGBAImage in
            let laid = self.layOut(text, key.style, engine)
            let w = Int(laid.size.width) * density, h = Int(laid.size.height) * density
            if w == 0 || h == 0 { return RGBAImage(width: 0, height: 0, pixels: []) }
            // The glyphs' coverage (from cached glyph masks; the outline filled whole when a
            // character has no glyph), then the halo dilated from it (`LabelHalo`).
            var mask: [UInt8]
            if let glyphs = engine.glyphs() {
                mask = [UInt8](repeating: 0, count: w * h)
                try self.glyphMasks.add(glyphs, originX: laid.originX, originY: laid.originY, density: density,
                                        into: &mask, width: w, height: h)
            } else {
                mask = try CairoCanvas.drawMask(width: w, height: h, what: "a label") { cr in
                    cairo_scale(cr, Double(density), Double(density))
                    engine.draw(on: cr, x: laid.originX, y: laid.originY, color: 0xFF00_0000)
                }
            }
            let radius = Double(key.style.haloWidth) * Double(density)
            let halo = radius > 0 && paint.haloColor >> 24 != 0 ? LabelHalo.dilate(mask, width: w, height: h, radius: radius) : []
            return LabelHalo.composite(mask: mask, halo: halo, width: w, height: h, color: paint.color, haloColor: paint.haloColor)
        }
        draws.wrappingAdd(1, ordering: .relaxed)
        sprites.withLock { $0.insert(key, image, cost: image.pixels.count) }
        return image
    }

    /// What Pango made of `text` in `style` (not cached; for tests and diagnostics).
    public func layoutInfo(_ text: String, style: LabelTextStyle) -> LabelLayoutInfo {
        TextEngine.with { engine in
            let laid = self.layOut(text, style.clamped, engine)
            let (x, y) = (laid.originX, laid.originY)
            let ink = laid.extents.ink
            let first = engine.characterSpan(utf8Offset: 0)
            return LabelLayoutInfo(
                size: laid.size, lineCount: engine.lineCount, unknownGlyphCount: engine.unknownGlyphCount,
                textWidth: Float(laid.extents.logical.width), textHeight: Float(laid.extents.logical.height),
                inkMinX: Float(x + ink.x), inkMinY: Float(y + ink.y),
                inkMaxX: Float(x + ink.x + ink.width), inkMaxY: Float(y + ink.y + ink.height),
                firstCharacterMinX: Float(x + first.min), firstCharacterMaxX: Float(x + first.max))
        }
    }

    /// Texts laid out by Pango since creation (measure misses, sprite draws, `layoutInfo`).
    public var layoutCount: Int { layouts.load(ordering: .relaxed) }
    /// Sprites drawn since creation (sprite cache misses that succeeded).
    public var drawCount: Int { draws.load(ordering: .relaxed) }

    /// A label laid out in `engine`: its box and where the layout's origin goes in it, px at
    /// density 1.
    private struct Laid {
        var size: LabelSize
        var originX: Double
        var originY: Double
        var extents: TextEngine.Extents
    }

    private func layOut(_ text: String, _ style: LabelTextStyle, _ engine: TextEngine) -> Laid {
        layouts.wrappingAdd(1, ordering: .relaxed)
        let e = engine.setText(text, family: style.fontFamily, sizePx: Double(style.fontSize), bold: style.bold,
                               wrapWidth: Double(style.maxWidth), maxLines: style.overflow == .ellipsis ? 1 : style.maxLines)
        if text.isEmpty { return Laid(size: LabelSize(width: 0, height: 0), originX: 0, originY: 0, extents: e) }
        let inset = Double(style.haloWidth).rounded(.up)
        let size = LabelSize(width: Float((e.logical.width + 2 * inset).rounded(.up)),
                             height: Float((e.logical.height + 2 * inset).rounded(.up)))
        return Laid(size: size, originX: inset - e.logical.x, originY: inset - e.logical.y, extents: e)
    }
}

/// What Pango made of a label (`LabelText.layoutInfo`), px at density 1 in the label's box
/// (origin at its top-left corner, halo included).
public struct LabelLayoutInfo: Hashable, Sendable {
    /// `LabelText.measure`'s result.
    public var size: LabelSize
    public var lineCount: Int
    /// Characters no installed font has (drawn as boxes).
    public var unknownGlyphCount: Int
    /// The text's logical width (longest line) and height (all lines), unrounded, halo excluded.
    public var textWidth: Float
    public var textHeight: Float
    /// The glyphs' ink rectangle (outlines without the halo).
    public var inkMinX: Float
    public var inkMinY: Float
    public var inkMaxX: Float
    public var inkMaxY: Float
    /// The horizontal span of the text's first character in logical (reading) order: at the
    /// right end of a right-to-left line.
    public var firstCharacterMinX: Float
    public var firstCharacterMaxX: Float
}

extension LabelTextStyle {
    /// Within `LabelStyle.validate`'s ranges; non-finite numbers take the defaults.
    var clamped: LabelTextStyle {
        func clamp(_ v: Float, _ lo: Float, _ hi: Float, _ fallback: Float) -> Float {
            v.isFinite ? min(max(v, lo), hi) : fallback
        }
        var s = self
        s.fontSize = clamp(fontSize, 6, 64, 13)
        s.maxWidth = clamp(maxWidth, 16, 1024, 160)
        s.haloWidth = clamp(haloWidth, 0, 8, 1.5)
        s.maxLines = min(max(maxLines, 1), 8)
        return s
    }
}

/// A cache bounded by a total cost (entries, bytes), at O(1) per operation: entries go into a
/// young generation; when it holds more than half the limit it becomes the old one (the previous
/// old one is dropped); a hit in the old generation moves the entry back to the young one. So
/// it holds at most `limit` plus one entry's cost, and what was used within the last
/// half-limit's worth of insertions stays.
struct TwoGenerations<Key: Hashable, Value> {
    let limit: Int
    private var young: [Key: (value: Value, cost: Int)] = [:]
    private var old: [Key: (value: Value, cost: Int)] = [:]
    private var youngCost = 0

    init(limit: Int) { self.limit = limit }

    mutating func get(_ key: Key) -> Value? {
        if let hit = young[key] { return hit.value }
        guard let hit = old.removeValue(forKey: key) else { return nil }
        insert(key, hit.value, cost: hit.cost)
        return hit.value
    }

    mutating func insert(_ key: Key, _ value: Value, cost: Int) {
        if young.updateValue((value, cost), forKey: key) == nil { youngCost += cost }
        if youngCost > limit / 2 {
            old = young
            young = [:]
            youngCost = 0
        }
    }
}

import Foundation
import MarkerdCore
import MarkerdRender
import MarkerdTestSupport
import Testing

/// Map labels' text through Pango: every script readable (glyphs, shaping, bidi), wrapping and
/// ellipsis within their limits, linear in density, cached, and seamless across tile edges.
@Suite struct LabelTextTests {
    /// The golden labels: Japanese, Arabic, Devanagari, Thai and Latin with diacritics.
    static let goldenTexts = ["東京", "大阪", "القاهرة", "नई दिल्ली", "กรุงเทพมหานคร", "Zürich", "Łódź", "São Paulo"]
    /// More scripts the fallback chain must cover.
    static let otherTexts = ["Москва", "Αθήνα", "ירושלים", "北京", "서울", "Kraków–Częstochowa"]
    static let noHalo = LabelTextStyle(haloWidth: 0)

    /// `labels_scripts_density1.png`, `labels_scripts_density2.png`: the golden labels (default
    /// style and paint: 13 px Noto Sans, near-black text, 1.5 px white halo) stacked 4 px apart,
    /// 4 px from the left edge, on a transparent canvas. Compared within 1/255 per channel like
    /// the other goldens (`Golden.check`): drawing is deterministic for given fonts, Pango,
    /// Cairo and pixman, and the 1/255 absorbs only the PNG's straight-alpha round trip; a changed
    /// font or shaping moves whole glyphs by far more. Regenerate with `MARKERD_UPDATE_GOLDEN=1`
    /// and look at the PNGs before committing them.
    @Test(arguments: [1, 2]) func goldenScripts(density: Int) throws {
        let text = LabelText()
        let sprites = try Self.goldenTexts.map { try text.sprite($0, style: LabelTextStyle(), paint: LabelPaint(), density: density) }
        let gap = 4 * density
        var canvas = TileCanvas(width: sprites.map(\.width).max()! + 2 * gap,
                                height: sprites.reduce(gap) { $0 + $1.height + gap })
        var y = gap
        for s in sprites {
            canvas.draw(sprite: s, atX: gap, y: y)
            y += s.height + gap
        }
        try Golden.check("labels_scripts_density\(density).png", canvas.encodePNG())
    }

    @Test func everyScriptHasGlyphs() {
        let text = LabelText()
        for s in Self.goldenTexts + Self.otherTexts {
            #expect(text.layoutInfo(s, style: LabelTextStyle()).unknownGlyphCount == 0, "\(s)")
            #expect(text.layoutInfo(s, style: LabelTextStyle(bold: true)).unknownGlyphCount == 0, "\(s) bold")
        }
        // The count works: a private-use character has no glyph in any font.
        #expect(text.layoutInfo("a\u{E000}b", style: LabelTextStyle()).unknownGlyphCount == 1)
    }

    @Test func glyphsAndHaloStayInsideTheBox() {
        let text = LabelText()
        for s in Self.goldenTexts + Self.otherTexts {
            let style = LabelTextStyle()
            let info = text.layoutInfo(s, style: style)
            let halo = style.haloWidth
            #expect(info.inkMinX - halo >= 0 && info.inkMinY - halo >= 0, "\(s): \(info)")
            #expect(info.inkMaxX + halo <= info.size.width && info.inkMaxY + halo <= info.size.height, "\(s): \(info)")
        }
    }

    /// Shaped: the joined word is narrower than its letters set apart (isolated forms are wider);
    /// right to left: the first letter in reading order is at the right end.
    @Test func arabicIsJoinedAndRightToLeft() {
        let text = LabelText()
        let word = "القاهرة"
        let joined = text.layoutInfo(word, style: Self.noHalo)
        let apart = word.map { text.layoutInfo(String($0), style: Self.noHalo).textWidth }.reduce(0, +)
        #expect(joined.textWidth < 0.9 * apart, "joined \(joined.textWidth) px, letters apart \(apart) px")
        #expect(joined.firstCharacterMinX > joined.size.width * 0.75, "\(joined)")
        // Hebrew too; Latin left to right.
        let hebrew = text.layoutInfo("ירושלים", style: Self.noHalo)
        #expect(hebrew.firstCharacterMinX > hebrew.size.width * 0.75, "\(hebrew)")
        let latin = text.layoutInfo("Zürich", style: Self.noHalo)
        #expect(latin.firstCharacterMaxX < latin.size.width * 0.3, "\(latin)")
    }

    /// Conjuncts: la + virama + la is one half-form plus one full letter, narrower than two
    /// letters, and the whole name is narrower than its code points laid out one by one.
    @Test func devanagariFormsConjuncts() {
        let text = LabelText()
        let la = text.layoutInfo("ल", style: Self.noHalo).textWidth
        let lla = text.layoutInfo("ल्ल", style: Self.noHalo).textWidth
        #expect(lla < 1.8 * la, "ल्ल \(lla) px, ल \(la) px")
        let name = "नई दिल्ली"
        let whole = text.layoutInfo(name, style: Self.noHalo).textWidth
        let apart = name.unicodeScalars.map { text.layoutInfo(String($0), style: Self.noHalo).textWidth }.reduce(0, +)
        #expect(whole < 0.9 * apart, "\(whole) px, code points apart \(apart) px")
    }

    @Test func wrapAndEllipsisKeepToMaxWidthAndLines() {
        let text = LabelText()
        let long = "Llanfairpwllgwyngyll gogerychwyrndrobwll llantysilio gogogoch railway station"
        let inset: Float = 2  // ceil(1.5)
        let unlimited = text.layoutInfo(long, style: LabelTextStyle(maxWidth: 1024))
        #expect(unlimited.lineCount == 1 && unlimited.textWidth > 400)
        let oneLine = text.layoutInfo("x", style: LabelTextStyle()).textHeight
        for lines in 1...3 {
            let style = LabelTextStyle(maxWidth: 120, maxLines: lines)
            let info = text.layoutInfo(long, style: style)
            #expect(info.lineCount == lines)
            #expect(info.textWidth <= 120 && info.size.width <= 120 + 2 * inset, "\(lines): \(info)")
            #expect(abs(info.textHeight - Float(lines) * oneLine) < 1, "\(lines): \(info)")
            #expect(text.measure(long, style: style) == info.size)
        }
        let cut = text.layoutInfo(long, style: LabelTextStyle(maxWidth: 120, overflow: .ellipsis, maxLines: 5))
        #expect(cut.lineCount == 1 && cut.textWidth <= 120 && cut.textWidth > 90, "\(cut)")
        // A word longer than a line breaks inside (no overflow); a short text is not widened.
        let word = text.layoutInfo("Llanfairpwllgwyngyllgogerychwyrndrobwll", style: LabelTextStyle(maxWidth: 60, maxLines: 8))
        #expect(word.lineCount > 2 && word.textWidth <= 60, "\(word)")
        let short = text.layoutInfo("Zürich", style: LabelTextStyle(maxWidth: 300))
        #expect(short.lineCount == 1 && short.textWidth < 60 && short.inkMinX < 6, "\(short)")
    }

    @Test func haloWidensTheBoxByTwiceItsInset() throws {
        let text = LabelText()
        for s in ["São Paulo", "東京"] {
            let bare = text.measure(s, style: Self.noHalo)
            for (halo, inset) in [(Float(0.5), Float(1)), (1.5, 2), (3, 3), (8, 8)] {
                let size = text.measure(s, style: LabelTextStyle(haloWidth: halo))
                #expect(size.width == bare.width + 2 * inset && size.height == bare.height + 2 * inset, "\(s) halo \(halo)")
            }
        }
        #expect(text.measure("", style: LabelTextStyle()) == LabelSize(width: 0, height: 0))
        #expect(try text.sprite("", style: LabelTextStyle(), paint: LabelPaint(), density: 2).width == 0)
    }

    /// A label measured at density 1 is drawn at density 2 and 3 exactly `size x density` px, and
    /// its pixels scale with it (no hinting): the covered box at density d is d times the one at
    /// density 1, within 2 device px.
    @Test func densityScalesLinearly() throws {
        let text = LabelText()
        for s in Self.goldenTexts {
            let size = text.measure(s, style: LabelTextStyle())
            let one = try text.sprite(s, style: LabelTextStyle(), paint: LabelPaint(), density: 1)
            let box1 = try #require(Self.coveredBox(one))
            for d in 2...3 {
                let sprite = try text.sprite(s, style: LabelTextStyle(), paint: LabelPaint(), density: d)
                #expect(Float(sprite.width) == size.width * Float(d) && Float(sprite.height) == size.height * Float(d), "\(s)")
                let box = try #require(Self.coveredBox(sprite))
                for (a, b) in zip(box, box1) { #expect(abs(a - b * d) <= 2, "\(s) at density \(d): \(box) vs \(box1)") }
            }
        }
        #expect(throws: RenderError(.invalidArgument, "label density 4 is not 1, 2 or 3")) {
            try text.sprite("x", style: LabelTextStyle(), paint: LabelPaint(), density: 4)
        }
    }

    /// The columns and rows (min x, min y, max x + 1, max y + 1) of pixels with alpha > 0.
    static func coveredBox(_ image: RGBAImage) -> [Int]? {
        var box = [Int.max, Int.max, Int.min, Int.min]
        for y in 0..<image.height {
            for x in 0..<image.width where image[x, y][3] > 0 {
                box = [min(box[0], x), min(box[1], y), max(box[2], x + 1), max(box[3], y + 1)]
            }
        }
        return box[0] == Int.max ? nil : box
    }

    @Test func paintColoursTextAndHalo() throws {
        let text = LabelText()
        let style = LabelTextStyle(fontSize: 64, bold: true, haloWidth: 3)
        let red = try text.sprite("l", style: style, paint: LabelPaint(color: 0xFFFF_0000, haloColor: 0xFF00_00FF), density: 1)
        let info = text.layoutInfo("l", style: style)
        // The middle of the stem ("l" is one stem) is text colour; just right of it, halo colour.
        let cy = Int((info.inkMinY + info.inkMaxY) / 2)
        let cx = Int((info.inkMinX + info.inkMaxX) / 2)
        #expect(red[cx, cy] == SIMD4(255, 0, 0, 255))
        #expect(red[Int(info.inkMaxX) + 1, cy] == SIMD4(0, 0, 255, 255))
        // No halo: transparent beside the stem.
        let bare = try text.sprite("l", style: style, paint: LabelPaint(color: 0xFFFF_0000, haloColor: 0), density: 1)
        #expect(bare[Int(info.inkMaxX) + 1, cy] == SIMD4(0, 0, 0, 0))
    }

    /// A label straddling the corner of four 256 px tiles, drawn on each at offsets differing by
    /// the tile size, gives exactly the pixels of one 512 px canvas it is drawn on once, over a
    /// background (random, the same on both) so that compositing is exercised.
    @Test func tileHalvesMeetPixelForPixel() throws {
        var rng = SplitMix64(seed: testSeed())
        let background = randomImage(width: 512, height: 512, using: &rng)
        let label = try LabelText().sprite("São Paulo 東京", style: LabelTextStyle(fontSize: 20), paint: LabelPaint(), density: 2)
        for _ in 0..<8 {
            let x = 256 - Int.random(in: 1..<label.width, using: &rng)
            let y = 256 - Int.random(in: 1..<label.height, using: &rng)
            var whole = TileCanvas(width: 512, height: 512)
            whole.draw(sprite: background, atX: 0, y: 0)
            whole.draw(sprite: label, atX: x, y: y)
            for (tx, ty) in [(0, 0), (256, 0), (0, 256), (256, 256)] {
                var tile = TileCanvas(width: 256, height: 256)
                tile.draw(sprite: background, atX: -tx, y: -ty)
                tile.draw(sprite: label, atX: x - tx, y: y - ty)
                var expected = [UInt8]()
                for row in ty..<(ty + 256) {
                    expected += whole.pixels[((row * 512 + tx) * 4)..<((row * 512 + tx + 256) * 4)]
                }
                #expect(byteMismatch(tile.pixels, expected) == nil, "tile (\(tx), \(ty)), label at (\(x), \(y))")
            }
        }
    }

    @Test func measuresAndSpritesAreCachedAndDeterministic() async throws {
        let text = LabelText()
        let style = LabelTextStyle(bold: true)
        let size = text.measure("Zürich", style: style)
        #expect(text.measure("Zürich", style: style) == size && text.layoutCount == 1)
        #expect(text.measure("Zürich", style: LabelTextStyle()) != size && text.layoutCount == 2)
        let a = try text.sprite("Zürich", style: style, paint: LabelPaint(), density: 2)
        _ = try text.sprite("Zürich", style: style, paint: LabelPaint(), density: 2)
        #expect(text.drawCount == 1)
        _ = try text.sprite("Zürich", style: style, paint: LabelPaint(color: 0xFF00_0080), density: 2)
        #expect(text.drawCount == 2)
        // Many threads at once, each with a fresh instance's worth of misses: the same sizes and bytes.
        let shared = LabelText()
        let texts = Self.goldenTexts + Self.otherTexts
        let expected = try texts.map { try LabelText().sprite($0, style: style, paint: LabelPaint(), density: 2) }
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<64 {
                group.addTask {
                    let t = texts[i % texts.count]
                    let sprite = try shared.sprite(t, style: style, paint: LabelPaint(), density: 2)
                    #expect(byteMismatch(sprite.pixels, expected[i % texts.count].pixels) == nil, "\(t)")
                    #expect(LabelText().measure(t, style: style) == shared.measure(t, style: style))
                }
            }
            try await group.waitForAll()
        }
        #expect(byteMismatch(a.pixels, try LabelText().sprite("Zürich", style: style, paint: LabelPaint(), density: 2).pixels) == nil)
    }

    /// Glyph masks are cached across labels (per font, glyph, density and quarter-pixel phase):
    /// a label drawn after others that share its glyphs at many positions has the same bytes as
    /// the same label drawn first by a fresh instance.
    @Test func spritesDoNotDependOnCachedGlyphs() throws {
        let texts = Self.goldenTexts + Self.otherTexts
        let warm = LabelText()
        for t in texts {
            for other in [String(t.reversed()), "· " + t + " " + t, t.uppercased(), "(" + t + ")"] {
                for d in 1...3 { _ = try warm.sprite(other, style: LabelTextStyle(), paint: LabelPaint(), density: d) }
            }
        }
        for d in 1...3 {
            for t in texts {
                let cached = try warm.sprite(t, style: LabelTextStyle(), paint: LabelPaint(), density: d)
                let fresh = try LabelText().sprite(t, style: LabelTextStyle(), paint: LabelPaint(), density: d)
                #expect(byteMismatch(cached.pixels, fresh.pixels) == nil, "\(t) at density \(d)")
            }
        }
    }

    /// A character no font has is drawn as Pango's box (its outline filled whole, not from glyph
    /// masks): ink between the letters around it, as wide as the label's box allows.
    @Test func unknownCharactersAreDrawnAsBoxes() throws {
        let text = LabelText()
        let plain = try #require(Self.coveredBox(try text.sprite("ab", style: LabelTextStyle(), paint: LabelPaint(), density: 1)))
        let sprite = try text.sprite("a\u{E000}b", style: LabelTextStyle(), paint: LabelPaint(), density: 1)
        let boxed = try #require(Self.coveredBox(sprite))
        #expect(boxed[2] - boxed[0] > plain[2] - plain[0] + 4, "\(boxed) vs \(plain)")
        // Dark text-coloured ink in the middle third, where the box is (not only white halo).
        let third = (boxed[2] - boxed[0]) / 3
        let dark = (boxed[1]..<boxed[3]).contains { y in
            (boxed[0] + third..<boxed[2] - third).contains { x in sprite[x, y][3] > 128 && sprite[x, y][0] < 128 }
        }
        #expect(dark, "\(sprite.width)x\(sprite.height)")
    }

    @Test func cachesAreBounded() throws {
        let text = LabelText(measureCapacity: 4, spriteCacheBytes: 1)
        for i in 0..<10 { _ = text.measure("label \(i)", style: LabelTextStyle()) }
        #expect(text.layoutCount == 10)
        _ = text.measure("label 9", style: LabelTextStyle())
        #expect(text.layoutCount == 10)  // the latest are kept
        _ = text.measure("label 0", style: LabelTextStyle())
        #expect(text.layoutCount == 11)  // the oldest were dropped
        for t in ["x", "y", "x"] { _ = try text.sprite(t, style: LabelTextStyle(), paint: LabelPaint(), density: 1) }
        #expect(text.drawCount == 3)  // one byte holds one sprite at most
    }
}

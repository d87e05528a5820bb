import Foundation
import MarkerdCore
import MarkerdRender
import Testing

@Suite struct PinSpriteTests {
    /// Bottom-most row with any coverage, and the alpha-weighted centre column of that row.
    static func tip(_ image: RGBAImage) -> (x: Double, y: Int) {
        for y in stride(from: image.height - 1, through: 0, by: -1) {
            var sum = 0.0
            var weighted = 0.0
            for x in 0..<image.width {
                let a = Double(image[x, y][3])
                sum += a
                weighted += a * (Double(x) + 0.5)
            }
            if sum > 0 { return (weighted / sum, y) }
        }
        return (-1, -1)
    }

    @Test func defaultPinGeometryAndColours() throws {
        let pin = try PinStyle().render()
        #expect(pin.width == 48 && pin.height == 48)
        let tip = Self.tip(pin)
        #expect(tip.y == 47, "tip row \(tip.y)")
        #expect(abs(tip.x - 24) < 0.5, "tip centre \(tip.x)")
        // Red inside: head centre and body.
        #expect(pin[24, 16] == SIMD4(255, 0, 0, 255))
        #expect(pin[23, 17] == SIMD4(255, 0, 0, 255))
        #expect(pin[24, 36] == SIMD4(255, 0, 0, 255))
        // White-ish at the outline: the top of the head, left and right of the head, the point.
        if ProcessInfo.processInfo.environment["MARKERD_DUMP_PIN"] == "1" {
            for y in 0..<48 { print((0..<48).map { x in String(pin[x, y][1] / 26) }.joined()) }
        }
        for (x, y) in [(23, 1), (24, 1), (8, 16), (39, 16), (23, 47)] {
            let p = pin[x, y]
            #expect(p[1] >= 100 && p[1] == p[2] && Int(p[1]) * 10 >= Int(p[3]) * 9, "(\(x), \(y)): \(p)")
        }
        // Transparent corners and sides of the point.
        for (x, y) in [(0, 0), (47, 0), (0, 47), (47, 47), (10, 44), (38, 44), (24, 0)] {
            #expect(pin[x, y] == SIMD4(0, 0, 0, 0), "(\(x), \(y))")
        }
        // Symmetric about the vertical centre line (x <-> 47 - x), up to the antialiasing
        // rasterizer (Cairo samples on a grid that is not mirror-symmetric; measured <= 5/255).
        var worstAsymmetry = 0
        for y in 0..<48 {
            for x in 0..<24 {
                let l = pin[x, y]
                let r = pin[47 - x, y]
                for c in 0..<4 { worstAsymmetry = max(worstAsymmetry, abs(Int(l[c]) - Int(r[c]))) }
            }
        }
        #expect(worstAsymmetry <= 8, "asymmetry \(worstAsymmetry)")
        // Valid premultiplied output.
        for i in stride(from: 0, to: pin.pixels.count, by: 4) {
            #expect(pin.pixels[i] <= pin.pixels[i + 3] && pin.pixels[i + 1] <= pin.pixels[i + 3] && pin.pixels[i + 2] <= pin.pixels[i + 3])
        }
    }

    @Test(arguments: [(Float(1), Float(2), 96), (2, 1, 96), (2, 2, 192), (0.5, 1, 24), (1.5, 1, 72)])
    func scaleAndDensity(scale: Float, density: Float, size: Int) throws {
        let pin = try PinStyle(scale: scale).render(density: density)
        #expect(pin.width == size && pin.height == size)
        let tip = Self.tip(pin)
        #expect(tip.y == size - 1)
        #expect(abs(tip.x - Double(size) / 2) < 0.5)
        #expect(pin[size / 2, size / 3] == SIMD4(255, 0, 0, 255))
    }

    @Test func coloursAndStroke() throws {
        let style = PinStyle(fillColor: 0xFF00_80FF, strokeColor: 0x8000_0000, strokeWidth: 3)
        let pin = try style.render()
        #expect(pin[24, 16] == SIMD4(0, 128, 255, 255))
        // No outline: nothing white anywhere, and still the same height.
        let bare = try PinStyle(strokeWidth: 0).render()
        #expect(bare.height == 48)
        for i in stride(from: 0, to: bare.pixels.count, by: 4) { #expect(bare.pixels[i + 1] == 0) }
        // Semi-transparent fill stays premultiplied.
        let ghost = try PinStyle(fillColor: 0x80FF_0000, strokeWidth: 0).render()
        #expect(ghost[24, 16] == SIMD4(128, 0, 0, 128))
    }

    @Test func fieldAliases() {
        var style = PinStyle(fillColor: 0xFF00_FF00, label: "B")
        #expect(style.fill == 0xFF00_FF00 && style.stroke == 0xFFFF_FFFF)
        style.fill = 1
        style.stroke = 2
        #expect(style.fillColor == 1 && style.strokeColor == 2)
        #expect(PinStyle.default == PinStyle() && PinStyle.anchor == (0.5, 1.0))
    }

    @Test func invalidNumbersDrawTheDefault() throws {
        let pin = try PinStyle().render()
        #expect(try PinStyle(strokeWidth: .nan, scale: -3, labelSize: .infinity).render() == pin)
        #expect(try PinStyle(label: "").render() == pin)
        #expect(try PinStyle().render(density: .nan) == pin)
        #expect(try PinStyle(scale: 1000).render().height == 1024)
    }

    @Test func wideLabelsWidenTheSprite() throws {
        let pin = try PinStyle(label: "Hauptbahnhof").render()
        #expect(pin.height == 48 && pin.width > 48 && (pin.width - 48) % 2 == 0)
        let tip = Self.tip(pin)
        #expect(abs(tip.x - Double(pin.width) / 2) < 0.5)
    }

    @Test func goldenPinWithLabel() throws {
        let pin = try PinStyle(label: "12").render(density: 2)
        let name = "pin_label_12_density2.png"
        if ProcessInfo.processInfo.environment["MARKERD_UPDATE_GOLDEN"] == "1" {
            try Data(PNGCodec.encode(pin, options: .smallest)).write(to: Fixtures.sourceDirectory.appendingPathComponent(name))
            print("wrote golden \(name)")
        }
        let golden = try PNGCodec.decode(try Fixtures.bytes(name))
        #expect(golden.width == pin.width && golden.height == pin.height)
        guard golden.width == pin.width && golden.height == pin.height else { return }
        var worst = 0
        for i in 0..<pin.pixels.count {
            worst = max(worst, abs(Int(pin.pixels[i]) - Int(golden.pixels[i])))
        }
        #expect(worst <= 1, "max channel difference \(worst)")
        // The label is there: dark pixels inside the head.
        var dark = 0
        for y in 12..<52 {
            for x in 24..<72 where pin[x, y][3] == 255 && pin[x, y][0] < 60 { dark += 1 }
        }
        #expect(dark > 50, "\(dark) dark label pixels")
    }

    @Test func spriteCacheDrawsEachKeyOnce() async throws {
        let cache = PinSpriteCache()
        let styles = [PinStyle(), PinStyle(fillColor: 0xFF00_00FF), PinStyle(label: "7")]
        try await withThrowingTaskGroup(of: Void.self) { group in
            for i in 0..<64 {
                group.addTask {
                    let style = styles[i % styles.count]
                    let sprite = try cache.sprite(for: style, density: i % 2 == 0 ? 1 : 2)
                    #expect(sprite.height == (i % 2 == 0 ? 48 : 96))
                }
            }
            try await group.waitForAll()
        }
        #expect(cache.drawCount == 6)
        #expect(cache.count == 6)
        #expect(try cache.sprite(for: PinStyle(strokeWidth: .nan)) == (try PinStyle().render()))
        #expect(cache.drawCount == 6)  // normalized to the default style: a hit
    }

    @Test func spriteCacheIsBounded() throws {
        let cache = PinSpriteCache(capacity: 2)
        for label in ["a", "b", "c", "d"] { _ = try cache.sprite(for: PinStyle(label: label)) }
        #expect(cache.count == 2)
        #expect(cache.drawCount == 4)
    }
}

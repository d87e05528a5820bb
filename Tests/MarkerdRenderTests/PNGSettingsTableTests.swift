import MarkerdTestSupport
import Foundation
import MarkerdCore
import MarkerdRender
import Testing

/// Prints time and size per PNG encoder setting for sparse marker tiles. Printing only: timings
/// depend on the machine and the build (run `swift test -c release --filter PNGSettingsTable`
/// for representative numbers). It does check that every setting round-trips losslessly.
@Suite struct PNGSettingsTableTests {
    /// A 256 px tile with `count` pins of a few styles at fixed pseudo-random positions,
    /// some crossing the tile edges.
    static func placements(pins count: Int, size: Int, density: Float, scale: Float) throws -> [(sprite: RGBAImage, x: Int, y: Int)] {
        let cache = SpriteCache()
        let styles = [
            PinStyle(scale: scale), PinStyle(fillColor: 0xFF1E_88E5, scale: scale), PinStyle(fillColor: 0xFF43_A047, scale: scale),
            PinStyle(scale: scale, label: "1", labelSize: 18 * scale), PinStyle(scale: scale, label: "2", labelSize: 18 * scale),
            PinStyle(fillColor: 0xFFFB_8C00, scale: scale, label: "A", labelSize: 18 * scale),
        ]
        var rng = SplitMix64(seed: 42)
        return try (0..<count).map { i in
            let sprite = try cache.sprite(for: styles[i % styles.count], density: density)
            let x = Int.random(in: -sprite.width / 2...(size - sprite.width / 2), using: &rng)
            let y = Int.random(in: -12...(size + 12), using: &rng) - sprite.height
            return (sprite, x, y)
        }
    }

    /// A continuous-tone icon (a 20 px disc with a colour gradient and an antialiased edge), like
    /// a registered photo-style icon, where filters behave differently from flat pins.
    static let gradientDisc: RGBAImage = {
        let n = 20
        var px = [UInt8]()
        for y in 0..<n {
            for x in 0..<n {
                let dx = Double(x) + 0.5 - Double(n) / 2
                let dy = Double(y) + 0.5 - Double(n) / 2
                let coverage = min(max(Double(n) / 2 - (dx * dx + dy * dy).squareRoot(), 0), 1)
                let a = UInt8((coverage * 255).rounded())
                let straight = [Double(x * 12 + 10), Double(200 - y * 8), Double((x * y) % 97 + 100)]
                px += straight.map { premultiplyOracle(UInt8($0), a) } + [a]
            }
        }
        return RGBAImage(width: n, height: n, pixels: px)
    }()

    static func compose(_ placements: [(sprite: RGBAImage, x: Int, y: Int)], size: Int) -> TileCanvas {
        var canvas = TileCanvas(width: size, height: size)
        for p in placements { canvas.draw(sprite: p.sprite, atX: p.x, y: p.y) }
        return canvas
    }

    #if DEBUG
    static let runs = 3  // debug builds only check that every setting works
    #else
    static let runs = 21
    #endif

    static let settings: [(String, PNGEncodeOptions)] = [
        ("level 1, no filter", PNGEncodeOptions(level: 1, filters: [])),
        ("level 3, no filter", PNGEncodeOptions(level: 3, filters: [])),
        ("level 6, no filter (default)", .default),
        ("level 9, no filter", PNGEncodeOptions(level: 9, filters: [])),
        ("level 1, up", PNGEncodeOptions(level: 1, filters: .up)),
        ("level 6, up", PNGEncodeOptions(level: 6, filters: .up)),
        ("level 6, sub", PNGEncodeOptions(level: 6, filters: .sub)),
        ("level 6, paeth", PNGEncodeOptions(level: 6, filters: .paeth)),
        ("level 1, adaptive", PNGEncodeOptions(level: 1, filters: .adaptive)),
        ("level 1, up, Z_RLE", PNGEncodeOptions(level: 1, filters: .up, strategy: .rle)),
        ("level 3, up", PNGEncodeOptions(level: 3, filters: .up)),
        ("level 9, up", PNGEncodeOptions(level: 9, filters: .up)),
        ("level 6, sub + up", PNGEncodeOptions(level: 6, filters: [.sub, .up])),
        ("level 6, adaptive (libpng default)", .libpng),
        ("level 9, adaptive", PNGEncodeOptions(level: 9, filters: .adaptive)),
        ("level 6, no filter, Z_RLE", PNGEncodeOptions(level: 6, filters: [], strategy: .rle)),
        ("level 6, up, Z_RLE", PNGEncodeOptions(level: 6, filters: .up, strategy: .rle)),
        ("level 6, no filter, Z_FILTERED", PNGEncodeOptions(level: 6, filters: [], strategy: .filtered)),
        ("level 6, no filter, Huffman only", PNGEncodeOptions(level: 6, filters: [], strategy: .huffmanOnly)),
    ]

    /// (tile size, pins, pin scale): sparse small pins, a few full-size pins, a crowded tile,
    /// and a 512 px (density 2) tile.
    /// Scale 0 stands for 50 gradient disc icons instead of pins.
    @Test(arguments: [(256, 50, Float(0.5)), (256, 10, 1), (256, 50, 1), (512, 50, 1), (256, 50, 0)])
    func printSettingsTable(size: Int, pins: Int, scale: Float) throws {
        var placed = try Self.placements(pins: pins, size: size, density: size == 512 ? 2 : 1, scale: scale == 0 ? 1 : scale)
        if scale == 0 { placed = placed.map { (Self.gradientDisc, $0.x, $0.y + 30) } }
        let clock = ContinuousClock()
        var composeTimes = [Double]()
        var canvas = Self.compose(placed, size: size)
        for _ in 0..<Self.runs {
            let start = clock.now
            canvas = Self.compose(placed, size: size)
            composeTimes.append(Self.ms(clock.now - start))
        }
        composeTimes.sort()
        let image = canvas.image
        let covered = stride(from: 3, to: image.pixels.count, by: 4).filter { image.pixels[$0] != 0 }.count
        var lines = ["PNG settings, \(size) px tile, \(pins) pins at scale \(scale), \(covered * 100 / (size * size))% of pixels covered (\(Self.runs) runs); compositing the pins: min \(String(format: "%.3f", composeTimes[0])) ms",
                     "| setting | min ms | median ms | bytes |", "| --- | ---: | ---: | ---: |"]
        for (name, options) in Self.settings {
            var png = [UInt8]()
            var times = [Double]()
            for _ in 0..<Self.runs {
                let start = clock.now
                png = canvas.encodePNG(options: options)
                let d = clock.now - start
                times.append(Self.ms(d))
            }
            times.sort()
            lines.append("| \(name) | \(String(format: "%.2f", times[0])) | \(String(format: "%.2f", times[times.count / 2])) | \(png.count) |")
            #expect(try PNGCodec.decode(png, maxWidth: size, maxHeight: size) == image, "\(name)")
        }
        print(lines.joined(separator: "\n"))
    }

    static func ms(_ d: Duration) -> Double {
        Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
    }
}

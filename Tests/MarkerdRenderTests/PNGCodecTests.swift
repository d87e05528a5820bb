import MarkerdTestSupport
import Foundation
@testable import MarkerdRender
import Testing

@Suite struct PNGCodecTests {
    static let fixtures = [
        "gray1", "gray4_trns", "gray8_alpha_interlaced", "gray16", "rgb8_interlaced", "rgb8_trns",
        "rgba8", "palette4_trns", "rgba16_interlaced",
    ]

    @Test(arguments: fixtures)
    func decodesColourTypes(_ name: String) throws {
        let image = try PNGCodec.decode(try Fixtures.bytes(name + ".png"))
        let straight = try Fixtures.bytes(name + ".rgba")
        #expect(image.width == 9 && image.height == 7)
        var expected = [UInt8](repeating: 0, count: straight.count)
        for i in stride(from: 0, to: straight.count, by: 4) {
            let a = straight[i + 3]
            for c in 0..<3 { expected[i + c] = premultiplyOracle(straight[i + c], a) }
            expected[i + 3] = a
        }
        #expect(image.pixels == expected)
        #expect(try PNGCodec.header(try Fixtures.bytes(name + ".png")) == (9, 7))
    }

    @Test func rejectsNonPNG() {
        for bytes: [UInt8] in [[], Array("GIF89a, not a png at all........".utf8), [0x89, 0x50, 0x4E, 0x48]] {
            #expect(throws: RenderError(.notPNG, "not a PNG")) { try PNGCodec.decode(bytes) }
        }
    }

    @Test func rejectsTruncatedPNGAtEveryLength() throws {
        let full = try Fixtures.bytes("rgba8.png")
        _ = try PNGCodec.decode(full)
        for length in 1..<full.count {
            do {
                _ = try PNGCodec.decode(Array(full[0..<length]))
                Issue.record("decoded a PNG truncated to \(length) of \(full.count) bytes")
            } catch {
                #expect(error.code == .truncated, "length \(length): \(error)")
            }
        }
    }

    @Test func rejectsCorruptPNG() throws {
        let full = try Fixtures.bytes("rgba8.png")
        var badIHDR = full
        badIHDR[18] ^= 0x01  // width, under the IHDR CRC
        #expect(throws: RenderError(.corrupt, "corrupt PNG: IHDR CRC mismatch")) { try PNGCodec.decode(badIHDR) }
        var badData = full
        badData[full.count - 20] ^= 0xFF  // inside IDAT
        #expect { try PNGCodec.decode(badData) } throws: { ($0 as? RenderError)?.code == .corrupt }
    }

    @Test func rejectsOversizeFromTheHeaderAlone() {
        // Only the header exists: if the decoder read on (or allocated 16 MiB and started
        // decoding), it would report a truncated PNG instead.
        #expect(throws: RenderError(.tooLarge, "PNG too large: 2048x2048 > 1024x1024")) {
            try PNGCodec.decode(headerOnlyPNG(width: 2048, height: 2048))
        }
        #expect(throws: RenderError(.tooLarge, "PNG too large: 100000x100000 > 1024x1024")) {
            try PNGCodec.decode(headerOnlyPNG(width: 100_000, height: 100_000))
        }
        #expect(throws: RenderError(.tooLarge, "PNG too large: 1025x1 > 1024x1024")) {
            try PNGCodec.decode(headerOnlyPNG(width: 1025, height: 1))
        }
        #expect(throws: RenderError(.tooLarge, "PNG too large: 64x65 > 64x64")) {
            try PNGCodec.decode(headerOnlyPNG(width: 64, height: 65), maxWidth: 64, maxHeight: 64)
        }
        #expect(throws: RenderError(.truncated, "truncated PNG")) {
            try PNGCodec.decode(headerOnlyPNG(width: 1024, height: 1024))
        }
        #expect(throws: RenderError(.corrupt, "corrupt PNG: invalid size 0x5")) {
            try PNGCodec.decode(headerOnlyPNG(width: 0, height: 5))
        }
    }

    @Test func rejectsOversizeRealPNG() throws {
        let big = PNGCodec.encode(RGBAImage.transparent(width: 2048, height: 2048))
        #expect(try PNGCodec.header(big) == (2048, 2048))
        #expect(throws: RenderError(.tooLarge, "PNG too large: 2048x2048 > 1024x1024")) { try PNGCodec.decode(big) }
        #expect(throws: Never.self) { try PNGCodec.decode(big, maxWidth: 2048, maxHeight: 2048) }
    }

    @Test func rejectsMoreThanOneMiB() throws {
        let bytes = try Fixtures.bytes("rgba8.png") + [UInt8](repeating: 0, count: 1 << 20)
        #expect(throws: RenderError(.tooLarge, "PNG too large: \(bytes.count) bytes > 1048576 bytes")) {
            try PNGCodec.decode(bytes)
        }
    }

    @Test func encodeDecodeRoundTripIsLossless() throws {
        var rng = SplitMix64(seed: testSeed("encodeDecodeRoundTripIsLossless"))
        let settings: [PNGEncodeOptions] = [.default, .tile, .smallest] + (0...12).map { PNGEncodeOptions(level: $0) }
        for options in settings {
            let image = randomImage(width: Int.random(in: 1...40, using: &rng), height: Int.random(in: 1...40, using: &rng), using: &rng)
            let png = PNGCodec.encode(image, options: options)
            #expect(try PNGCodec.decode(png) == image, "\(options)")
        }
        // Every (colour, alpha) pair that is valid premultiplied.
        var all = [UInt8]()
        for a in 0...255 {
            for c in 0...a { all += [UInt8(c), UInt8(a - c), UInt8(c / 2), UInt8(a)] }
        }
        let image = RGBAImage(width: all.count / 4 / 257, height: 257, pixels: Array(all[0..<((all.count / 4 / 257) * 257 * 4)]))
        #expect(try PNGCodec.decode(PNGCodec.encode(image)) == image)
    }

    /// The encoder keeps a compressor and a scratch buffer per thread: images of other sizes and
    /// levels encoded in between, and on other threads at the same time, leave each image's bytes
    /// unchanged (the bytes are a function of the pixels and the level alone).
    @Test func encodingIsAFunctionOfThePixelsAndLevel() async throws {
        var rng = SplitMix64(seed: testSeed("encodingIsAFunctionOfThePixelsAndLevel"))
        let images = (0..<6).map { _ in
            randomImage(width: Int.random(in: 1...300, using: &rng), height: Int.random(in: 1...300, using: &rng), using: &rng)
        }
        let levels = [1, 6, 12, 1, 0, 6]
        let first = zip(images, levels).map { PNGCodec.encode($0, options: PNGEncodeOptions(level: $1)) }
        let again = await withTaskGroup(of: (Int, [UInt8]).self) { group in
            for i in images.indices.reversed() {
                group.addTask { [images] in (i, PNGCodec.encode(images[i], options: PNGEncodeOptions(level: levels[i]))) }
            }
            var out = [[UInt8]](repeating: [], count: images.count)
            for await (i, png) in group { out[i] = png }
            return out
        }
        for i in images.indices {
            #expect(byteMismatch(again[i], first[i]) == nil, "image \(i)")
            #expect(try PNGCodec.decode(first[i], maxWidth: 300, maxHeight: 300) == images[i], "image \(i)")
        }
    }

    /// Images of at most 256 distinct colours are written as indexed colour (IHDR colour type 3),
    /// others as RGBA (6); both decode to exactly the image, at every level.
    @Test func fewColoursAreIndexed() throws {
        var rng = SplitMix64(seed: testSeed("fewColoursAreIndexed"))
        for colours in [1, 2, 255, 256, 257, 600] {
            let palette = randomImage(width: colours, height: 1, using: &rng).pixels
            let width = 37, height = 29
            var px = [UInt8](repeating: 0, count: width * height * 4)
            for i in 0..<(width * height) {
                // Every colour at least once, then random ones; some 16-byte transparent runs.
                let c = i < colours ? i : Int(rng.next() % UInt64(colours))
                for k in 0..<4 { px[4 * i + k] = i % 11 < 4 && i >= colours ? 0 : palette[4 * c + k] }
            }
            let image = RGBAImage(width: width, height: height, pixels: px)
            let distinct = Set((0..<(width * height)).map { Array(px[(4 * $0)..<(4 * $0 + 4)]) }).count
            for level in [0, 1, 6] {
                let png = PNGCodec.encode(image, options: PNGEncodeOptions(level: level))
                #expect(png[25] == (distinct <= 256 ? 3 : 6), "\(distinct) colours, level \(level): colour type \(png[25])")
                #expect(try PNGCodec.decode(png) == image, "\(distinct) colours, level \(level)")
            }
        }
    }

    @Test func sharedTransparentTiles() throws {
        for (png, size) in [(TransparentTile.png256, 256), (TransparentTile.png512, 512)] {
            let image = try PNGCodec.decode(png, maxWidth: size, maxHeight: size)
            #expect(image.width == size && image.height == size && image.isFullyTransparent)
            #expect(png.count < 200, "\(png.count) bytes")
        }
        #expect(TransparentTile.png(size: 256) == TransparentTile.png256)
        #expect(try PNGCodec.header(TransparentTile.png(size: 100)) == (100, 100))
    }
}

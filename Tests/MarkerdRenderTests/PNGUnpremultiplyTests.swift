import MarkerdTestSupport
import MarkerdRender
import Testing

/// The encoder's premultiplied -> straight conversion (a reciprocal table instead of divisions,
/// fully transparent rows written as they are) against the previous conversion, through the
/// decoder without premultiplying.
@Suite struct PNGUnpremultiplyTests {
    /// The previous conversion, the oracle: c = min(255, (c' * 255 + a / 2) / a), all 0 when
    /// a == 0 (also for invalid input with c' > a or c' > 0 at a == 0).
    static func straightOracle(_ px: [UInt8]) -> [UInt8] {
        var out = px
        for i in stride(from: 0, to: px.count, by: 4) {
            let a = Int(px[i + 3])
            for c in 0..<3 {
                out[i + c] = a == 0 ? 0 : UInt8(min(255, (Int(px[i + c]) * 255 + a / 2) / a))
            }
        }
        return out
    }

    static func roundTrip(_ image: RGBAImage, _ options: PNGEncodeOptions = .tile) throws -> [UInt8] {
        let png = PNGCodec.encode(image, options: options)
        return try PNGCodec.decode(png, maxWidth: 4096, maxHeight: 4096, maxBytes: 1 << 26, premultiplied: false).pixels
    }

    /// Every (colour, alpha) byte pair, including the invalid ones (colour > alpha), so every
    /// entry of the reciprocal table is checked against the division.
    @Test func everyColourAlphaPairMatchesTheDivision() throws {
        var px = [UInt8]()
        for a in 0...255 {
            for c in 0...255 { px += [UInt8(c), UInt8(255 - c), UInt8(c / 3), UInt8(a)] }
        }
        let image = RGBAImage(width: 256, height: 256, pixels: px)
        #expect(try Self.roundTrip(image) == Self.straightOracle(px))
    }

    /// Seeded random canvases like tiles: fully transparent rows, rows with a single non-zero
    /// byte anywhere (the zero-row check must not skip them), sprite-like runs of opaque and
    /// partly transparent pixels, and a few invalid premultiplied pixels.
    @Test func randomCanvasesMatchThePreviousConversion() throws {
        let seed = testSeed()
        print("PNGUnpremultiplyTests.randomCanvases: SEED=\(seed)")
        var rng = SplitMix64(seed: seed)
        for round in 0..<40 {
            let width = Int.random(in: 1...300, using: &rng), height = Int.random(in: 1...40, using: &rng)
            var px = [UInt8](repeating: 0, count: width * height * 4)
            for y in 0..<height {
                let row = y * width * 4
                switch Int.random(in: 0..<4, using: &rng) {
                case 0:
                    break  // fully transparent
                case 1:
                    px[row + Int.random(in: 0..<(width * 4), using: &rng)] = UInt8.random(in: 1...255, using: &rng)
                default:
                    var x = 0
                    while x < width {
                        let run = Int.random(in: 1...24, using: &rng)
                        let kind = Int.random(in: 0..<5, using: &rng)
                        for i in x..<min(width, x + run) {
                            let p = row + i * 4
                            let a: UInt8 = kind == 0 ? 0 : kind == 1 ? 255 : UInt8.random(in: 1...254, using: &rng)
                            px[p + 3] = a
                            let top: UInt8 = kind == 4 ? 255 : a  // kind 4: invalid (colour may exceed alpha)
                            for c in 0..<3 { px[p + c] = UInt8.random(in: 0...top, using: &rng) }
                        }
                        x += run
                    }
                }
            }
            let image = RGBAImage(width: width, height: height, pixels: px)
            let options = PNGEncodeOptions(level: round % 2 == 0 ? PNGEncodeOptions.tile.level : Int.random(in: 0...12, using: &rng))
            #expect(try Self.roundTrip(image, options) == Self.straightOracle(px), "round \(round) \(width)x\(height) \(options)")
        }
    }
}

import MarkerdTestSupport
import Foundation
import MarkerdRender

/// Fixture files, from the test bundle (resources: .copy("Fixtures")).
enum Fixtures {
    static var directory: URL {
        if let url = Bundle.module.url(forResource: "Fixtures", withExtension: nil) { return url }
        return sourceDirectory
    }

    /// The Fixtures directory in the source tree (for regenerating goldens).
    static var sourceDirectory: URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("Fixtures")
    }

    static func bytes(_ name: String) throws -> [UInt8] {
        [UInt8](try Data(contentsOf: directory.appendingPathComponent(name)))
    }
}

/// Exact round(c * a / 255) by floating point: the oracle for the integer formulas.
func premultiplyOracle(_ c: UInt8, _ a: UInt8) -> UInt8 {
    UInt8((Double(c) * Double(a) / 255).rounded())
}

/// Source-over oracle for one premultiplied pixel, in floating point.
func sourceOverOracle(_ s: SIMD4<UInt8>, _ d: SIMD4<UInt8>) -> SIMD4<UInt8> {
    let k = Double(255 - Int(s[3])) / 255
    var out = SIMD4<UInt8>()
    for i in 0..<4 {
        out[i] = UInt8(Int(s[i]) + Int((Double(d[i]) * k).rounded()))
    }
    return out
}



/// A random valid premultiplied image (colour <= alpha), with some fully transparent and
/// fully opaque pixels.
func randomImage(width: Int, height: Int, using rng: inout SplitMix64) -> RGBAImage {
    var px = [UInt8](repeating: 0, count: width * height * 4)
    for i in 0..<(width * height) {
        let kind = Int.random(in: 0..<4, using: &rng)
        let a: UInt8 = kind == 0 ? 0 : kind == 1 ? 255 : UInt8.random(in: 1...254, using: &rng)
        px[i * 4 + 3] = a
        for c in 0..<3 { px[i * 4 + c] = UInt8.random(in: 0...a, using: &rng) }
    }
    return RGBAImage(width: width, height: height, pixels: px)
}

/// CRC-32 (PNG, zlib) for building test chunks.
func crc32(_ bytes: [UInt8]) -> UInt32 {
    var crc: UInt32 = 0xFFFF_FFFF
    for b in bytes {
        crc ^= UInt32(b)
        for _ in 0..<8 { crc = (crc >> 1) ^ (crc & 1 == 1 ? 0xEDB8_8320 : 0) }
    }
    return ~crc
}

func be32(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8((v >> 16) & 0xFF), UInt8((v >> 8) & 0xFF), UInt8(v & 0xFF)] }

/// PNG signature + a valid IHDR (RGBA8) and nothing else.
func headerOnlyPNG(width: UInt32, height: UInt32) -> [UInt8] {
    let body: [UInt8] = Array("IHDR".utf8) + be32(width) + be32(height) + [8, 6, 0, 0, 0]
    return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + be32(13) + body + be32(crc32(body))
}

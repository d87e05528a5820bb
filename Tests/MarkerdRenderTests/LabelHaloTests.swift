@testable import MarkerdRender
import MarkerdTestSupport
import Testing

/// Label halos dilated from the glyphs' coverage (`LabelHalo`).
@Suite struct LabelHaloTests {
    /// `LabelHalo.dilate`'s definition, pixel by pixel: the most any covered pixel `q` (coverage
    /// `m`) gives pixel `p`, `round((radius - |p - q|) x 255) + m` clamped to 0...255.
    static func oracle(_ mask: [UInt8], width: Int, height: Int, radius: Double) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: width * height)
        for py in 0..<height {
            for px in 0..<width {
                var best = 0
                for qy in 0..<height {
                    for qx in 0..<width where mask[qy * width + qx] > 0 {
                        let d = Double((px - qx) * (px - qx) + (py - qy) * (py - qy)).squareRoot()
                        best = max(best, Int(((radius - d) * 255).rounded()) + Int(mask[qy * width + qx]))
                    }
                }
                out[py * width + px] = UInt8(min(best, 255))
            }
        }
        return out
    }

    /// Random glyph-like masks (solid blobs with antialiased edges, stray partial pixels, blobs
    /// touching the edges) at the radii of 1.5 px and 0.5 px halos at densities 1 to 3: the
    /// dilation (which skips fully covered pixels inside a blob) equals its definition exactly.
    @Test func dilationMatchesItsDefinition() {
        var rng = SplitMix64(seed: testSeed())
        for round in 0..<24 {
            let width = Int.random(in: 1...24, using: &rng), height = Int.random(in: 1...16, using: &rng)
            var mask = [UInt8](repeating: 0, count: width * height)
            for _ in 0..<Int.random(in: 0...4, using: &rng) {
                let (cx, cy) = (Double.random(in: -2...Double(width + 2), using: &rng), Double.random(in: -2...Double(height + 2), using: &rng))
                let r = Double.random(in: 0.3...6, using: &rng)
                for y in 0..<height {
                    for x in 0..<width {
                        // Coverage falling from 1 to 0 over one pixel across the blob's rim.
                        let d = ((Double(x) - cx) * (Double(x) - cx) + (Double(y) - cy) * (Double(y) - cy)).squareRoot()
                        let c = UInt8((min(max(r + 0.5 - d, 0), 1) * 255).rounded())
                        mask[y * width + x] = max(mask[y * width + x], c)
                    }
                }
            }
            for _ in 0..<Int.random(in: 0...3, using: &rng) {
                mask[Int.random(in: 0..<mask.count, using: &rng)] = UInt8.random(in: 1...255, using: &rng)
            }
            for radius in [0.5, 1, 1.5, 3, 4.5] {
                let got = LabelHalo.dilate(mask, width: width, height: height, radius: radius)
                #expect(mismatch(got, Self.oracle(mask, width: width, height: height, radius: radius)) == nil,
                        "round \(round), \(width)x\(height), radius \(radius)")
            }
        }
    }

    /// A straight edge: the halo is full within `radius` of it and fades to nothing over the next
    /// pixel, as a stroke `2 x radius` wide would; text over it keeps its colour.
    @Test func haloOfAnEdgeSpansItsRadius() {
        // Columns 0-3 covered, column 4 half covered: the edge runs through column 4's centre.
        let width = 12
        let mask: [UInt8] = [255, 255, 255, 255, 128, 0, 0, 0, 0, 0, 0, 0]
        let halo = LabelHalo.dilate(mask, width: width, height: 1, radius: 3)
        #expect(Array(halo[0...6]) == [255, 255, 255, 255, 255, 255, 255])
        #expect(halo[7] == 128)  // the halo's edge, 3 px further, through column 7's centre
        #expect(Array(halo[8...]) == [0, 0, 0, 0])
        let image = LabelHalo.composite(mask: mask, halo: halo, width: width, height: 1, color: 0xFFFF_0000, haloColor: 0x8000_00FF)
        #expect(image[0, 0] == SIMD4(255, 0, 0, 255))  // text
        #expect(image[6, 0] == SIMD4(0, 0, 128, 128))  // halo, premultiplied
        #expect(image[11, 0] == SIMD4(0, 0, 0, 0))
        // The half-covered edge pixel: half text, and half of the halo beneath.
        #expect(image[4, 0] == SIMD4(128, 0, 64, 192))
    }
}

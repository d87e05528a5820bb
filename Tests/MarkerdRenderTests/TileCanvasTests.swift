import MarkerdTestSupport
import Foundation
import MarkerdCore
import MarkerdRender
import Testing

@Suite struct TileCanvasTests {
    static func solid(_ width: Int, _ height: Int, _ px: SIMD4<UInt8>) -> RGBAImage {
        var bytes = [UInt8]()
        for _ in 0..<(width * height) { bytes += [px[0], px[1], px[2], px[3]] }
        return RGBAImage(width: width, height: height, pixels: bytes)
    }

    @Test func sourceOverExactValues() {
        let blue = SIMD4<UInt8>(0, 0, 255, 255)
        let halfRed = SIMD4<UInt8>(128, 0, 0, 128)  // 50% red, premultiplied
        let cases: [(src: SIMD4<UInt8>, dst: SIMD4<UInt8>, out: SIMD4<UInt8>)] = [
            (halfRed, blue, SIMD4(128, 0, 127, 255)),            // 50% red over opaque blue
            (halfRed, SIMD4(0, 0, 128, 128), SIMD4(128, 0, 64, 192)),  // 50% red over 50% blue
            (SIMD4(10, 20, 30, 255), blue, SIMD4(10, 20, 30, 255)),  // opaque: copied
            (SIMD4(0, 0, 0, 0), blue, blue),                     // transparent: unchanged
            (SIMD4(1, 1, 1, 1), SIMD4(255, 255, 255, 255), SIMD4(255, 255, 255, 255)),
            (SIMD4(0, 0, 0, 1), SIMD4(255, 255, 255, 255), SIMD4(254, 254, 254, 255)),
            (SIMD4(0, 0, 0, 254), SIMD4(255, 255, 255, 255), SIMD4(1, 1, 1, 255)),
            (halfRed, SIMD4(0, 0, 0, 0), halfRed),               // over transparent: itself
        ]
        for c in cases {
            var canvas = TileCanvas(width: 1, height: 1)
            canvas.draw(sprite: Self.solid(1, 1, c.dst), atX: 0, y: 0)
            canvas.draw(sprite: Self.solid(1, 1, c.src), atX: 0, y: 0)
            #expect(canvas.image[0, 0] == c.out, "\(c.src) over \(c.dst)")
            #expect(sourceOverOracle(c.src, c.dst) == c.out)
        }
    }

    @Test func sourceOverMatchesOracleForAllAlphas() {
        // Every source alpha against a spread of destination values, one pixel each.
        var src = [UInt8]()
        var dst = [UInt8]()
        for a in 0...255 {
            for d in stride(from: 0, through: 255, by: 15) {
                let c = UInt8(a / 3)
                src += [UInt8(a), c, 0, UInt8(a)]
                dst += [UInt8(d), UInt8(255 - d), UInt8(d / 2), 255]
            }
        }
        let width = src.count / 4
        var canvas = TileCanvas(width: width, height: 1)
        canvas.draw(sprite: RGBAImage(width: width, height: 1, pixels: dst), atX: 0, y: 0)
        canvas.draw(sprite: RGBAImage(width: width, height: 1, pixels: src), atX: 0, y: 0)
        let s = RGBAImage(width: width, height: 1, pixels: src)
        let d = RGBAImage(width: width, height: 1, pixels: dst)
        for x in 0..<width {
            #expect(canvas.image[x, 0] == sourceOverOracle(s[x, 0], d[x, 0]))
        }
    }

    /// Rows of every length from 0 to 13 px (four pixels at a time, then one by one), random
    /// premultiplied sources over random premultiplied destinations (transparent, opaque and in
    /// between), at every offset in a 16 px canvas row: each pixel is the oracle's source-over.
    @Test func rowsOfAnyLengthMatchTheOracle() {
        var rng = SplitMix64(seed: testSeed())
        func pixel() -> SIMD4<UInt8> {
            let a: UInt8 = [0, 255, UInt8(truncatingIfNeeded: rng.next())][Int(rng.next() % 3)]
            return SIMD4(UInt8(rng.next() % (UInt64(a) + 1)), UInt8(rng.next() % (UInt64(a) + 1)), UInt8(rng.next() % (UInt64(a) + 1)), a)
        }
        for round in 0..<3000 {
            let n = round % 14, x = Int(rng.next() % UInt64(16 - n + 1))
            let dst = (0..<16).map { _ in pixel() }, src = (0..<max(n, 1)).map { _ in pixel() }
            var canvas = TileCanvas(width: 16, height: 1)
            canvas.draw(sprite: RGBAImage(width: 16, height: 1, pixels: dst.flatMap { [$0[0], $0[1], $0[2], $0[3]] }), atX: 0, y: 0)
            let before = canvas.image
            if n > 0 {
                canvas.draw(sprite: RGBAImage(width: n, height: 1, pixels: src.flatMap { [$0[0], $0[1], $0[2], $0[3]] }), atX: x, y: 0)
            }
            for c in 0..<16 {
                let expected = c >= x && c < x + n ? sourceOverOracle(src[c - x], before[c, 0]) : before[c, 0]
                #expect(canvas.image[c, 0] == expected, "round \(round): \(n) px at \(x), column \(c)")
            }
        }
    }

    /// A 4x4 opaque sprite whose pixel (sx, sy) is (sx * 10 + 1, sy * 10 + 1, 7, 255).
    static let marked: RGBAImage = {
        var px = [UInt8]()
        for sy in 0..<4 {
            for sx in 0..<4 { px += [UInt8(sx * 10 + 1), UInt8(sy * 10 + 1), 7, 255] }
        }
        return RGBAImage(width: 4, height: 4, pixels: px)
    }()

    @Test(arguments: [
        (-2, 3), (6, 3), (3, -2), (3, 6),  // left, right, top, bottom edges
        (-3, -3), (7, -3), (-3, 7), (7, 7),  // corners, one pixel showing
        (-4, 0), (8, 0), (0, -4), (0, 8),  // just outside: nothing
        (2, 2), (Int.min, 0), (Int.max, Int.max), (0, Int.min + 1),
    ])
    func clipsAtEdges(x: Int, y: Int) {
        var canvas = TileCanvas(width: 8, height: 8)
        canvas.draw(sprite: Self.marked, atX: x, y: y)
        var visible = 0
        for cy in 0..<8 {
            for cx in 0..<8 {
                let (sx, sy) = (cx.subtractingReportingOverflow(x), cy.subtractingReportingOverflow(y))
                let inside = !sx.overflow && !sy.overflow && (0..<4).contains(sx.partialValue) && (0..<4).contains(sy.partialValue)
                let expected = inside ? Self.marked[sx.partialValue, sy.partialValue] : SIMD4<UInt8>(0, 0, 0, 0)
                #expect(canvas.image[cx, cy] == expected, "(\(cx), \(cy)) for sprite at (\(x), \(y))")
                if inside { visible += 1 }
            }
        }
        #expect(canvas.isEmpty == (visible == 0))
    }

    @Test func seamsMatchAcrossNeighbouringTiles() throws {
        let pin = try PinStyle().render()
        var wide = TileCanvas(width: 512, height: 256)
        var left = TileCanvas(width: 256, height: 256)
        var right = TileCanvas(width: 256, height: 256)
        for (x, y) in [(232, 100), (250, -20), (240, 230)] {  // crossing the shared edge
            wide.draw(sprite: pin, atX: x, y: y)
            left.draw(sprite: pin, atX: x, y: y)
            right.draw(sprite: pin, atX: x - 256, y: y)
        }
        for y in 0..<256 {
            for x in 0..<512 {
                let part = x < 256 ? left.image[x, y] : right.image[x - 256, y]
                #expect(part == wide.image[x, y])
            }
        }
        #expect(!left.isEmpty && !right.isEmpty)
    }

    @Test func isEmptyTracking() throws {
        var canvas = TileCanvas(width: 256, height: 256)
        #expect(canvas.isEmpty)
        #expect(canvas.encodePNG() == TransparentTile.png256)
        canvas.draw(sprite: RGBAImage.transparent(width: 30, height: 30), atX: 10, y: 10)
        canvas.draw(sprite: Self.solid(3, 3, SIMD4(9, 9, 9, 255)), atX: -3, y: 0)  // fully outside
        #expect(canvas.isEmpty)
        #expect(canvas.encodePNG() == TransparentTile.png256)
        canvas.draw(sprite: Self.solid(3, 3, SIMD4(0, 0, 0, 1)), atX: 255, y: 255)
        #expect(!canvas.isEmpty)
        let png = canvas.encodePNG()
        #expect(png != TransparentTile.png256)
        #expect(try PNGCodec.decode(png, maxWidth: 256, maxHeight: 256) == canvas.image)
        canvas.clear()
        #expect(canvas.isEmpty && canvas.image.isFullyTransparent)
        var big = TileCanvas(width: 512, height: 512)
        #expect(big.encodePNG() == TransparentTile.png512)
        big.draw(sprite: Self.marked, atX: 0, y: 0)
        #expect(big.encodePNG() != TransparentTile.png512)
    }

    /// Random sprites at random positions (many crossing the edges) against a brute-force,
    /// floating-point oracle.
    @Test func randomCompositingMatchesOracle() {
        var rng = SplitMix64(seed: testSeed("randomCompositingMatchesOracle"))
        let width = 37
        let height = 29
        var canvas = TileCanvas(width: width, height: height)
        var oracle = [SIMD4<UInt8>](repeating: .zero, count: width * height)
        for _ in 0..<60 {
            var sprite = randomImage(width: Int.random(in: 1...20, using: &rng), height: Int.random(in: 1...20, using: &rng), using: &rng)
            if Bool.random(using: &rng) {  // transparent rows and margins exercise the row spans
                var px = sprite.pixels
                for y in 0..<sprite.height where y % 3 == 0 || Bool.random(using: &rng) {
                    for x in 0..<sprite.width where y % 3 == 0 || x < 2 || x >= sprite.width - 2 {
                        for c in 0..<4 { px[(y * sprite.width + x) * 4 + c] = 0 }
                    }
                }
                sprite = RGBAImage(width: sprite.width, height: sprite.height, pixels: px)
            }
            let x = Int.random(in: -25...(width + 5), using: &rng)
            let y = Int.random(in: -25...(height + 5), using: &rng)
            canvas.draw(sprite: sprite, atX: x, y: y)
            for sy in 0..<sprite.height {
                for sx in 0..<sprite.width {
                    let cx = x + sx
                    let cy = y + sy
                    guard cx >= 0, cx < width, cy >= 0, cy < height else { continue }
                    oracle[cy * width + cx] = sourceOverOracle(sprite[sx, sy], oracle[cy * width + cx])
                }
            }
        }
        var mismatches = 0
        for y in 0..<height {
            for x in 0..<width where canvas.image[x, y] != oracle[y * width + x] {
                mismatches += 1
            }
        }
        #expect(mismatches == 0)
        #expect(canvas.isEmpty == oracle.allSatisfy { $0[3] == 0 })
    }
}

import Foundation
import MarkerdCore
@testable import MarkerdRender
import MarkerdTestSupport
import Testing

/// The 1/255 bound behind `TileRenderer.Culling.withinOne` (see `CoverageMask`): once a pixel is
/// settled, whatever was drawn there before changes its final value by at most 1 per channel.
/// Checked with `TileCanvas`'s real compositing, over every start value at once.
@Suite struct CullingBoundTests {
    /// A 256 x 1 canvas whose pixel i has alpha i and random colour channels <= i: every
    /// possible earlier history of one pixel, as far as a channel value goes.
    static func everyStart(_ rng: inout SplitMix64) -> TileCanvas {
        var px = [UInt8](repeating: 0, count: 256 * 4)
        for i in 0..<256 {
            for c in 0..<3 { px[4 * i + c] = UInt8(rng.next() % UInt64(i + 1)) }
            px[4 * i + 3] = UInt8(i)
        }
        var canvas = TileCanvas(width: 256, height: 1)
        canvas.draw(sprite: RGBAImage(width: 256, height: 1, pixels: px), atX: 0, y: 0)
        return canvas
    }

    /// A 256 x 1 sprite of one premultiplied pixel with alpha `a` and random colours <= a.
    static func uniform(alpha a: UInt8, _ rng: inout SplitMix64) -> RGBAImage {
        let c = (0..<3).map { _ in UInt8(rng.next() % (UInt64(a) + 1)) }
        var px = [UInt8](repeating: 0, count: 256 * 4)
        for i in 0..<256 { px[4 * i] = c[0]; px[4 * i + 1] = c[1]; px[4 * i + 2] = c[2]; px[4 * i + 3] = a }
        return RGBAImage(width: 256, height: 1, pixels: px)
    }

    /// Largest spread (max - min) of any channel over the canvas's pixels.
    static func spread(_ canvas: TileCanvas) -> Int {
        var worst = 0
        for c in 0..<4 {
            var lo = 255, hi = 0
            for i in 0..<canvas.width { let v = Int(canvas.pixels[4 * i + c]); lo = min(lo, v); hi = max(hi, v) }
            worst = max(worst, hi - lo)
        }
        return worst
    }

    /// The mask's rule for one pixel: `T` after the draws `alphas` (in draw order), walked backwards.
    static func level(_ alphas: [UInt8]) -> Int {
        var t = 1
        for a in alphas.reversed() {
            let k = 255 - Int(a)
            t = k == 0 ? 255 : min(255, 255 * t / k)
        }
        return t
    }

    /// The brief's case: two draws with alpha >= 240 and arbitrary draws between and after them
    /// leave any two histories within 1.
    @Test func twoStrongDrawsBoundEveryHistory() {
        var rng = SplitMix64(seed: testSeed())
        var worst = 0
        for _ in 0..<3000 {
            var canvas = Self.everyStart(&rng)
            var alphas: [UInt8] = [UInt8(240 + rng.next() % 16)]
            for _ in 0..<Int(rng.next() % 4) { alphas.append(UInt8(rng.next() % 256)) }
            alphas.append(UInt8(240 + rng.next() % 16))
            for _ in 0..<Int(rng.next() % 4) { alphas.append(UInt8(rng.next() % 256)) }
            for a in alphas { canvas.draw(sprite: Self.uniform(alpha: a, &rng), atX: 0, y: 0) }
            #expect(Self.level(alphas) == 255, "alphas \(alphas)")
            let s = Self.spread(canvas)
            worst = max(worst, s)
            #expect(s <= 1, "alphas \(alphas): histories differ by \(s)")
        }
        print("two strong draws: worst spread \(worst)")
    }

    /// Random alpha sequences: whenever the mask's rule settles the pixel (`T` = 255), every start
    /// ends within 1; the rule is not vacuous (many sequences settle, and sequences that do not
    /// settle can spread by more than 1).
    @Test func settledPixelsDifferByAtMostOne() {
        var rng = SplitMix64(seed: testSeed())
        var settled = 0, unsettledWide = 0
        for round in 0..<6000 {
            var canvas = Self.everyStart(&rng)
            let n = 1 + Int(rng.next() % 10)
            let alphas: [UInt8] = (0..<n).map { _ in
                switch rng.next() % 4 {
                case 0: UInt8(rng.next() % 256)
                case 1: UInt8(200 + rng.next() % 56)
                case 2: UInt8(100 + rng.next() % 60)
                default: UInt8(235 + rng.next() % 21)
                }
            }
            for a in alphas { canvas.draw(sprite: Self.uniform(alpha: a, &rng), atX: 0, y: 0) }
            let s = Self.spread(canvas)
            if Self.level(alphas) == 255 {
                settled += 1
                #expect(s <= 1, "round \(round) alphas \(alphas): settled, but histories differ by \(s)")
            } else if s > 1 {
                unsettledWide += 1
            }
        }
        print("settled \(settled) of 6000 sequences; \(unsettledWide) unsettled ones spread by more than 1")
        #expect(settled > 1000 && unsettledWide > 100)
    }

    /// `CoverageMask.add` against the rule pixel by pixel: random sprites at random places; a bit
    /// is set exactly where the draws at that pixel settle it (`T` = 255), and `levels` holds `T`.
    @Test func maskFollowsTheRule() throws {
        var rng = SplitMix64(seed: testSeed())
        for round in 0..<150 {
            let width = [1, 63, 64, 65, 130][round % 5], height = 1 + Int(rng.next() % 50)
            var mask = CoverageMask(width: width, height: height)
            let sprites = (0..<3).map { _ in ClippedDrawTests.randomSprite(&rng) }
            let shapes = CoverageMask.Shapes(sprites)
            // Draws in reverse draw order (as the renderer adds them), per pixel the alphas.
            var alphas = [[UInt8]](repeating: [], count: width * height)
            do {
                do {
                    for _ in 0..<Int(rng.next() % 30) {
                        let k = Int(rng.next() % 3), s = sprites[k]
                        let x = Int(rng.next() % UInt64(width + 60)) - 50, y = Int(rng.next() % UInt64(height + 30)) - 20
                        mask.add(shapes.shapes[k], x: x, y: y)
                        for r in 0..<s.height where y + r >= 0 && y + r < height {
                            for c in 0..<s.width where x + c >= 0 && x + c < width {
                                alphas[(y + r) * width + x + c].insert(s.image.pixels[(r * s.width + c) * 4 + 3], at: 0)
                            }
                        }
                    }
                }
            }
            for py in 0..<height {
                for px in 0..<width {
                    let t = Self.level(alphas[py * width + px])
                    let bit = mask.isSettled(x: px, y: py)
                    #expect(bit == (t == 255), "round \(round) pixel (\(px), \(py)): T \(t), bit \(bit)")
                    if !bit { #expect(mask.level(x: px, y: py) == t, "round \(round) pixel (\(px), \(py))") }
                }
            }
            Self.expectRowCounts(mask, "round \(round)")
        }
    }

    /// `freeInRow` counts the clear bits of each row, and `blockBits` marks exactly the blocks
    /// (`CoverageMask.blockSize` px square, clipped to the canvas) whose bits are all set.
    /// Returns how many blocks are settled whole.
    @discardableResult
    static func expectRowCounts(_ mask: CoverageMask, _ context: String) -> Int {
        func bit(_ px: Int, _ py: Int) -> Bool { mask.isSettled(x: px, y: py) }
        for py in 0..<mask.height {
            var clear = 0
            for px in 0..<mask.width where !bit(px, py) { clear += 1 }
            #expect(mask.freeInRow(py) == clear, "\(context) row \(py): \(mask.freeInRow(py)) counted, \(clear) clear")
        }
        let size = CoverageMask.blockSize
        var whole = 0
        for by in 0..<((mask.height + size - 1) / size) {
            for bx in 0..<((mask.width + size - 1) / size) {
                var all = true
                for py in (by * size)..<min(mask.height, (by + 1) * size) {
                    for px in (bx * size)..<min(mask.width, (bx + 1) * size) where !bit(px, py) { all = false }
                }
                let marked = mask.blockSettled(bx: bx, by: by)
                #expect(marked == all, "\(context) block (\(bx), \(by)): marked \(marked), settled whole \(all)")
                if all { whole += 1 }
            }
        }
        return whole
    }

    /// `add` limited to the clip `uncovered` just gave (what the renderer does) leaves the same
    /// mask as `add` over the whole sprite (every pixel outside the clip is settled already),
    /// draw after draw, and no draw is found uncovered that the whole add would change; in both
    /// modes (`exact` masks keep bits and row counts only).
    @Test(arguments: [false, true])
    func clippedAddEqualsWholeAdd(exact: Bool) {
        var rng = SplitMix64(seed: testSeed())
        for round in 0..<150 {
            let width = [1, 63, 64, 65, 130, 256][round % 6], height = 1 + Int(rng.next() % 50)
            var whole = CoverageMask(width: width, height: height, exact: exact), clipped = whole
            let sprites = (0..<3).map { _ in ClippedDrawTests.randomSprite(&rng) }
            let shapes = CoverageMask.Shapes(sprites)
            var clips: [UInt64] = []
            do {
                do {
                    for step in 0..<Int(rng.next() % 60) {
                        let k = Int(rng.next() % 3)
                        let x = Int(rng.next() % UInt64(width + 60)) - 50, y = Int(rng.next() % UInt64(height + 30)) - 20
                        whole.add(shapes.shapes[k], x: x, y: y)
                        let at = clips.count
                        if clipped.uncovered(shapes.shapes[k], x: x, y: y, into: &clips) {
                            clips.withUnsafeBufferPointer { c in
                                clipped.add(shapes.shapes[k], x: x, y: y, clip: UnsafeBufferPointer(rebasing: c[at...]))
                            }
                        }
                        #expect(whole.state == clipped.state,
                                "round \(round) draw \(step) at (\(x), \(y))")
                    }
                }
            }
            Self.expectRowCounts(clipped, "round \(round)")
        }
    }
}

import Foundation
import MarkerdCore
@testable import MarkerdRender
import MarkerdTestSupport
import Testing

/// The renderer's clipped draws (`CoverageMask.uncovered` + `TileCanvas.draw(...clips:)`): each
/// draw paints exactly the pixels of each sprite row that later draws have not settled. Checked against brute force: the mask test pixel by pixel, and whole tiles.
@Suite struct ClippedDrawTests {
    let now: Int64 = 1_700_000_000_000

    /// A random sprite: transparent, semi-transparent and opaque pixels, ragged rows.
    static func randomSprite(_ rng: inout SplitMix64) -> TileSprite {
        let w = 1 + Int(rng.next() % 90), h = 1 + Int(rng.next() % 40)
        var px = [UInt8](repeating: 0, count: w * h * 4)
        for i in 0..<(w * h) {
            let a: UInt8 = switch rng.next() % 4 { case 0: 0; case 1: 255; default: UInt8(1 + rng.next() % 254) }
            px[4 * i + 3] = a
            px[4 * i] = UInt8(rng.next() % (UInt64(a) + 1))
        }
        return TileSprite(image: RGBAImage(width: w, height: h, pixels: px), anchorX: 0, anchorY: 0)
    }

    /// `uncovered` against the definition, pixel by pixel: per sprite row, the clip's masks hold
    /// exactly the pixels with alpha > 0 inside the canvas whose mask bit is clear.
    @Test func uncoveredMatchesPixelByPixel() throws {
        var rng = SplitMix64(seed: testSeed())
        var clipped = 0, wholeBlocks = 0
        for round in 0..<400 {
            let width = [1, 63, 64, 65, 130, 256][round % 6], height = 1 + Int(rng.next() % 80)
            var mask = CoverageMask(width: width, height: height)
            let sprites = (0..<4).map { _ in Self.randomSprite(&rng) }
            let shapes = CoverageMask.Shapes(sprites)
            func clear(_ cx: Int, _ cy: Int) -> Bool { !mask.isSettled(x: cx, y: cy) }
            do {
                // Cover random parts with the sprites' opaque pixels (every other round densely,
                // so that many blocks are settled whole: `uncovered` passes over them).
                for _ in 0..<Int(rng.next() % (round % 2 == 0 ? 12 : 400)) {
                    let k = Int(rng.next() % 4)
                    mask.add(shapes.shapes[k], x: Int(rng.next() % UInt64(width + 80)) - 60, y: Int(rng.next() % UInt64(height + 40)) - 30)
                }
                wholeBlocks += CullingBoundTests.expectRowCounts(mask, "round \(round)")
                let k = Int(rng.next() % 4)
                let s = sprites[k]
                let x = Int(rng.next() % UInt64(width + 100)) - 90, y = Int(rng.next() % UInt64(height + 100)) - 60
                var clips: [UInt64] = [7]
                let any = mask.uncovered(shapes.shapes[k], x: x, y: y, into: &clips)
                // Brute force: per row, the uncovered non-transparent pixels.
                var needed: [(Int, Int)?] = []
                for r in 0..<s.height {
                    var first: Int? = nil, last = 0
                    for c in 0..<s.width where s.image.pixels[(r * s.width + c) * 4 + 3] > 0 {
                        let cx = x + c, cy = y + r
                        guard cx >= 0, cx < width, cy >= 0, cy < height, clear(cx, cy) else { continue }
                        if first == nil { first = c }
                        last = c
                    }
                    needed.append(first.map { ($0, last + 1) })
                }
                let rows = needed.indices.filter { needed[$0] != nil }
                if !rows.isEmpty { #expect(any, "round \(round): an uncovered pixel, but no clip") }
                guard any else {
                    #expect(clips == [7], "round \(round): appended without an uncovered pixel")
                    continue
                }
                clipped += 1
                let r0 = Int(clips[1]), r1 = Int(clips[2]), words = (s.width + 63) / 64
                try #require(r0 < r1 && clips.count == 3 + words * (r1 - r0), "round \(round)")
                for r in 0..<s.height {
                    var want = [UInt64](repeating: 0, count: words)
                    if let n = needed[r] {
                        for c in n.0..<n.1 where s.image.pixels[(r * s.width + c) * 4 + 3] > 0 {
                            let cx = x + c, cy = y + r
                            if cx >= 0, cx < width, cy >= 0, cy < height, clear(cx, cy) { want[c / 64] |= 1 << UInt64(c % 64) }
                        }
                    }
                    let got = r >= r0 && r < r1 ? Array(clips[(3 + words * (r - r0))..<(3 + words * (r - r0 + 1))]) : [UInt64](repeating: 0, count: words)
                    #expect(got == want, "round \(round) row \(r): clip \(got), uncovered pixels \(want)")
                }
            }
        }
        #expect(clipped > 50, "only \(clipped) rounds had something to draw")
        #expect(wholeBlocks > 1000, "only \(wholeBlocks) blocks settled whole")
    }

    /// `uncoveredThenAdd` (the cull's one pass) against `uncovered` then `add` with the clip it
    /// appended: the same clip, and the same mask after (bits, levels, row counts, block bits), on
    /// masks settled at random, exact and not, with the tested rows cut short as the row memo does.
    @Test func uncoveredThenAddMatchesTwoPasses() throws {
        var rng = SplitMix64(seed: testSeed())
        var kept = 0, dropped = 0
        for round in 0..<300 {
            let width = [1, 63, 64, 65, 130, 256][round % 6], height = 1 + Int(rng.next() % 80)
            var a = CoverageMask(width: width, height: height, exact: round % 5 == 0)
            let shapes = CoverageMask.Shapes((0..<4).map { _ in Self.randomSprite(&rng) })
            for _ in 0..<Int(rng.next() % (round % 2 == 0 ? 12 : 300)) {
                a.add(shapes.shapes[Int(rng.next() % 4)], x: Int(rng.next() % UInt64(width + 80)) - 60,
                      y: Int(rng.next() % UInt64(height + 40)) - 30)
            }
            var b = a
            // A few draws in a row, each on the mask the previous ones left.
            for step in 0..<4 {
                let drawn = shapes.shapes[Int(rng.next() % 4)]
                var tested = drawn
                if rng.next() % 3 == 0 { tested.height = Int(rng.next() % UInt64(drawn.height + 1)) }
                let x = Int(rng.next() % UInt64(width + 100)) - 90, y = Int(rng.next() % UInt64(height + 100)) - 60
                var clipsA: [UInt64] = [7], clipsB = ClipBuffer(capacity: 1)
                clipsB.reserve(1)[0] = 7
                clipsB.commit(1)
                let anyA = a.uncovered(tested, x: x, y: y, into: &clipsA)
                if anyA { clipsA.withUnsafeBufferPointer { a.add(drawn, x: x, y: y, clip: UnsafeBufferPointer(rebasing: $0[1...])) } }
                let anyB = b.uncoveredThenAdd(tested, drawn, x: x, y: y, into: &clipsB)
                if anyA { kept += 1 } else { dropped += 1 }
                #expect(anyA == anyB && clipsA == clipsB.array, "round \(round) step \(step): clips \(clipsA) against \(clipsB.array)")
                let sa = a.state, sb = b.state
                #expect(sa.bits == sb.bits && sa.levels == sb.levels && sa.free == sb.free, "round \(round) step \(step): masks differ")
                let blocks = (0..<a.blockRows).allSatisfy { by in
                    (0..<a.blockColumns).allSatisfy { bx in a.blockSettled(bx: bx, by: by) == b.blockSettled(bx: bx, by: by) }
                }
                #expect(blocks, "round \(round) step \(step): block bits differ")
            }
        }
        #expect(kept > 100 && dropped > 100, "kept \(kept), dropped \(dropped): both kinds of draw not tried enough")
    }

    /// Dense layers where most draws are clipped: pins of several sizes and colours (opaque and
    /// semi-transparent), labels, image icons with off-centre anchors, three z-indexes, near the
    /// antimeridian too; tiles from z0 to z12 at every density and both sizes equal brute force
    /// (exact culling) or are within 1 per channel of it (`.withinOne`, with and without the node
    /// sweep).
    @Test(arguments: [(TileRenderer.Culling.exact, Int.max), (.withinOne, .max), (.withinOne, 0)])
    func clippedTilesMatchBruteForce(culling: TileRenderer.Culling, sweepAbove: Int) throws {
        var rng = SplitMix64(seed: testSeed())
        let r = makeRenderer(culling, sweepAbove: sweepAbove)
        var worst = 0, markers = 0, draws = 0
        for round in 0..<8 {
            let center = LatLng(latitude: (rng.unit() - 0.5) * 140, longitude: round % 3 == 0 ? -179.995 : (rng.unit() - 0.5) * 340)
            let spread = [0.005, 0.05, 0.5, 8][round % 4]
            let layer = try randomLayer(count: 600 + Int(rng.next() % 600), center: center, spreadDegrees: spread, rng: &rng, now: now)
            for _ in 0..<4 {
                let z = Int(rng.next() % 13)
                let tile = TileID.containing(center, zoom: z)
                let size = rng.next() % 3 == 0 ? 512 : 256
                let density = 1 + Int(rng.next() % 3)
                let view = RasterView.tile(tile, tileSize: size, density: density)
                let fast = try r.render(layer, view: view, now: now)
                let slow = try bruteForce(layer, view, now: now, sprites: r.sprites)
                let diff = maxDifference(fast.canvas.pixels, slow.pixels)
                worst = max(worst, diff)
                #expect(diff <= tolerance(r), "\(culling) round \(round) tile \(tile) size \(size) density \(density): differs by \(diff)")
                markers += fast.markers; draws += fast.draws
            }
        }
        print("clipped tiles (\(culling), sweep above \(sweepAbove)): \(markers) markers, \(draws) draws, worst difference \(worst)")
    }

    /// `ClipBuffer` keeps what was committed across growth, in order, and leaves out what was
    /// reserved and written but not committed.
    @Test func clipBufferGrowsAndCommits() {
        var rng = SplitMix64(seed: testSeed())
        var buffer = ClipBuffer(capacity: 0)
        var expected: [UInt64] = []
        for _ in 0..<500 {
            let n = 1 + Int(rng.next() % 90)
            let out = buffer.reserve(n)
            for i in 0..<n { out[i] = rng.next() }
            if rng.next() % 4 != 0 {
                buffer.commit(n)
                expected += (0..<n).map { out[$0] }
            }
        }
        #expect(buffer.count == expected.count && buffer.array == expected)
        #expect(expected.count > 64 * 100, "only \(expected.count) values: the buffer never grew far")
    }
}

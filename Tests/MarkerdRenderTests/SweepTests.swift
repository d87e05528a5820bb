import Foundation
import MarkerdCore
@testable import MarkerdRender
import MarkerdTestSupport
import Testing

/// The node sweep leaves out whole grid nodes whose every possible pixel is settled by later
/// draws: it looks at far fewer markers than the raster holds, and the picture stays within 1 per
/// channel of drawing every marker.
@Suite struct SweepTests {
    let now: Int64 = 1_700_000_000_000

    /// Markers around `center` (uniform in a square of `spread` degrees) with `style` and `zIndex`.
    static func cluster(_ prefix: String, _ n: Int, center: LatLng, spread: Double, style: IconStyle, zIndex: Int32,
                        _ rng: inout SplitMix64) -> [MarkerRecord] {
        (0..<n).map { i in
            MarkerRecord(id: "\(prefix)\(i)", position: LatLng(latitude: center.latitude + (rng.unit() - 0.5) * spread,
                                                               longitude: center.longitude + (rng.unit() - 0.5) * spread),
                         style: style, zIndex: zIndex)
        }
    }

    func check(_ layer: MarkerLayer, _ tile: TileID, density: Int, total: Int, atMost fraction: Double) throws {
        let r = makeRenderer(sweepAbove: 0)
        let view = RasterView.tile(tile, tileSize: 256, density: density)
        #expect(r.usesSweep(layer, view))
        let fast = try r.render(layer, view: view, now: now)
        let slow = try bruteForce(layer, view, now: now, sprites: r.sprites)
        let diff = maxDifference(fast.canvas.pixels, slow.pixels)
        print("sweep \(tile) d\(density): \(total) markers, \(fast.markers) counted, \(fast.visited) visited, \(fast.draws) draws, difference \(diff)")
        #expect(diff <= 1, "\(tile) density \(density): differs by \(diff)")
        #expect(Double(fast.visited) <= fraction * Double(total), "visited \(fast.visited) of \(total)")
        // Without the sweep every marker is visited; the sweep counts skipped nodes whole.
        let plain = try makeRenderer().render(layer, view: view, now: now)
        #expect(plain.visited == plain.markers && fast.markers >= plain.markers && fast.markers <= total,
                "plain \(plain.markers) counted, \(plain.visited) visited; sweep \(fast.markers) counted of \(total)")
    }

    /// Dense stacks of an opaque icon (z0: each cluster lands on a pixel or two): later markers in
    /// the same device row settle the nodes of earlier ones.
    @Test func stacksOfOpaqueIconsAreSkippedByNode() throws {
        var rng = SplitMix64(seed: testSeed())
        var records: [MarkerRecord] = []
        let square = IconStyle(source: .image(id: "square", width: 12, height: 12))
        for c in 0..<6 {
            let center = LatLng(latitude: (rng.unit() - 0.5) * 120, longitude: (rng.unit() - 0.5) * 340)
            records += Self.cluster("c\(c)-", 2000, center: center, spread: 0.05, style: square, zIndex: 0, &rng)
        }
        var layer = try MarkerLayer()
        _ = try layer.upsert(records, now: now)
        for d in [1, 2] { try check(layer, TileID(z: 0, x: 0, y: 0)!, density: d, total: records.count, atMost: 0.25) }
    }

    /// Semi-transparent pins under opaque icons of a higher z-index that hide them: the pins'
    /// nodes are skipped (a z-index above all of a node's markers counts as later).
    @Test func pinsUnderHigherZIndexAreSkippedByNode() throws {
        var rng = SplitMix64(seed: testSeed())
        let center = LatLng(latitude: 40, longitude: 10)
        let tile = TileID.containing(center, zoom: 9)
        let rect = tile.worldRect
        var records = Self.cluster("p", 3000, center: center, spread: 0.02,
                                   style: IconStyle(source: .pin(PinStyle(fillColor: 0x80_2040C0, scale: 0.5))), zIndex: 0, &rng)
        // A lattice of opaque squares (12 px, every 4 px) over the cluster, at z-index 1.
        let square = IconStyle(source: .image(id: "square", width: 12, height: 12))
        let step = 4 * tile.worldSpan / 256
        let c = LatLng(latitude: center.latitude, longitude: center.longitude)
        let cx = Mercator.worldX(longitude: c.longitude), cy = Mercator.worldY(latitude: c.latitude)
        var i = 0
        for gy in -16...24 {
            for gx in -16...16 {
                let x = cx + Double(gx) * step, y = cy + Double(gy) * step
                guard x > rect.minX - 40 * step, y > rect.minY - 40 * step else { continue }
                records.append(MarkerRecord(id: "q\(i)", position: LatLng(latitude: Mercator.latitude(worldY: y), longitude: Mercator.longitude(worldX: x)),
                                            style: square, zIndex: 1))
                i += 1
            }
        }
        var layer = try MarkerLayer()
        _ = try layer.upsert(records, now: now)
        let total = records.count
        try check(layer, tile, density: 1, total: total, atMost: 0.5)
    }

    /// More styles than `TileRenderer.footprintStyles`: the sweep's footprint is the box of the
    /// layer's largest icon extents instead of the sprites' union; still within 1 of brute force.
    @Test func manyStylesUseTheExtentsBox() throws {
        var rng = SplitMix64(seed: testSeed())
        var records: [MarkerRecord] = []
        let center = LatLng(latitude: -20, longitude: 60)
        for i in 0..<(TileRenderer.footprintStyles + 10) {
            let style = IconStyle(source: .pin(PinStyle(fillColor: 0xFF00_0000 | UInt32(i * 3001 % 0xFFFFFF), scale: 0.5 + Float(i % 3) * 0.25, label: "\(i)")))
            records += Self.cluster("s\(i)-", 30, center: center, spread: 0.3, style: style, zIndex: Int32(i % 2), &rng)
        }
        records += Self.cluster("q", 3000, center: center, spread: 0.01, style: IconStyle(source: .image(id: "square", width: 12, height: 12)), zIndex: 0, &rng)
        var layer = try MarkerLayer()
        _ = try layer.upsert(records, now: now)
        for (z, d) in [(0, 1), (6, 2)] { try check(layer, TileID.containing(center, zoom: z), density: d, total: records.count, atMost: 1) }
    }

    /// Default pins spread evenly over a region (many per device pixel at z0-z2, grid leaves
    /// straddling device rows, which the sweep walks one row at a time) and stacked on a few
    /// pixels: most markers are left out, the picture stays within 1 of brute force.
    @Test func densePinsAreLeftOutByRowParts() throws {
        var rng = SplitMix64(seed: testSeed())
        var records = Self.cluster("u", 40_000, center: LatLng(latitude: 10, longitude: 20), spread: 40,
                                   style: .defaultPin, zIndex: 0, &rng)
        for c in 0..<4 {
            let center = LatLng(latitude: (rng.unit() - 0.5) * 60 + 10, longitude: (rng.unit() - 0.5) * 60 + 20)
            records += Self.cluster("c\(c)-", 3000, center: center, spread: 0.05, style: .defaultPin, zIndex: 0, &rng)
        }
        var layer = try MarkerLayer()
        _ = try layer.upsert(records, now: now)
        try check(layer, TileID(z: 0, x: 0, y: 0)!, density: 1, total: records.count, atMost: 0.4)
        try check(layer, TileID(z: 0, x: 0, y: 0)!, density: 2, total: records.count, atMost: 0.4)
        try check(layer, TileID.containing(LatLng(latitude: 10, longitude: 20), zoom: 2), density: 1, total: records.count, atMost: 1)
    }

    /// One-row parts of at most two device positions (the cursors that keep only their highest
    /// key first and drop a settled position's markers together): a few markers per pixel over a
    /// region, with equal world y (equal keys across both columns of a part and across parts),
    /// two z-indexes and a faint pin interleaved, at densities 1 and 3; within 1 of brute force.
    @Test func selectingCursorsWithEqualKeysAndFaintPins() throws {
        var rng = SplitMix64(seed: testSeed())
        let faint = IconStyle(source: .pin(PinStyle(fillColor: 0x50_C03070, scale: 0.8)))
        var records = Self.cluster("u", 30_000, center: LatLng(latitude: -20, longitude: -60), spread: 30,
                                   style: .defaultPin, zIndex: 0, &rng)
        for i in records.indices {
            if pick(&rng, 4) == 0 { records[i].style = faint }
            if pick(&rng, 8) == 0 { records[i].zIndex = 1 }
            // Every third marker shares its latitude with the one before (equal keys).
            if i % 3 == 2 { records[i].position.latitude = records[i - 1].position.latitude }
        }
        var layer = try MarkerLayer()
        _ = try layer.upsert(records, now: now)
        for d in [1, 3] { try check(layer, TileID(z: 0, x: 0, y: 0)!, density: d, total: records.count, atMost: 1) }
        try check(layer, TileID.containing(LatLng(latitude: -20, longitude: -60), zoom: 1), density: 1, total: records.count, atMost: 1)
    }

    /// Adversarial stacks for the skips by position and by row part: many copies of the same
    /// pixel with different styles and z-indexes interleaved in draw order, faint pins
    /// (antialiased edges and fills of low alpha that never settle alone), exact duplicates, and
    /// an opaque icon at a lower z-index under them; every channel within 1 of brute force.
    @Test func interleavedStylesAndFaintPinsOnTheSamePixels() throws {
        var rng = SplitMix64(seed: testSeed())
        let styles: [IconStyle] = [
            .defaultPin,
            IconStyle(source: .pin(PinStyle(fillColor: 0x20_30C040, strokeColor: 0x10_FFFFFF, scale: 0.75))),
            IconStyle(source: .pin(PinStyle(fillColor: 0x90_C03030, scale: 1.25, label: "7"))),
            IconStyle(source: .image(id: "square", width: 12, height: 12)),
            IconStyle(source: .image(id: "dot", width: 12, height: 12)),
        ]
        var records: [MarkerRecord] = []
        let spots = (0..<12).map { _ in LatLng(latitude: (rng.unit() - 0.5) * 100, longitude: (rng.unit() - 0.5) * 300) }
        for i in 0..<12_000 {
            let spot = spots[pick(&rng, spots.count)]
            // Most on one of a few points (the same device pixel at low zooms), some exact duplicates.
            let jitter = i % 5 == 0 ? 0 : 0.02
            let p = LatLng(latitude: spot.latitude + (rng.unit() - 0.5) * jitter, longitude: spot.longitude + (rng.unit() - 0.5) * jitter)
            let s = pick(&rng, styles.count)
            records.append(MarkerRecord(id: "m\(i)", position: p, style: styles[s], zIndex: Int32(pick(&rng, 3)) - (s == 3 ? 1 : 0)))
        }
        records += Self.cluster("f", 8000, center: LatLng(latitude: 0, longitude: 0), spread: 60, style: styles[1], zIndex: 0, &rng)
        var layer = try MarkerLayer()
        _ = try layer.upsert(records, now: now)
        for (z, d) in [(0, 1), (0, 3), (1, 2), (3, 1)] {
            try check(layer, TileID.containing(spots[0], zoom: z), density: d, total: records.count, atMost: 1)
        }
    }

    /// z22 at density 3 (a world 3 x 2^30 device px wide: pixels relative to the canvas beyond
    /// Int32) on both sides of the antimeridian, with sparse markers all over the world (big
    /// leaves opened around the tile): markers on the far side draw through their world copy;
    /// every channel within 1 of brute force.
    @Test func highZoomAcrossTheAntimeridian() throws {
        var rng = SplitMix64(seed: testSeed())
        var records = Self.cluster("w", 3000, center: LatLng(latitude: 0, longitude: 0), spread: 170,
                                   style: .defaultPin, zIndex: 0, &rng)
        // Within 0.000023 degrees (about 2.6 m, 180 device px here) of the antimeridian.
        for (i, lon) in [-179.999988, 179.999988].enumerated() {
            records += Self.cluster("e\(i)-", 300, center: LatLng(latitude: 20, longitude: lon), spread: 0.000022,
                                    style: .defaultPin, zIndex: Int32(i), &rng)
        }
        var layer = try MarkerLayer()
        _ = try layer.upsert(records, now: now)
        for lon in [-180.0, 179.999999] {
            try check(layer, TileID.containing(LatLng(latitude: 20, longitude: lon), zoom: 22), density: 3,
                      total: records.count, atMost: 1)
        }
    }

    /// Dense pins on both sides of the antimeridian at z0-z1: opened leaf rows next to the
    /// world's edges take the per-marker path (world copies), the others the one-row path that
    /// places a part's markers by comparing x with one boundary; parts with equal keys are taken
    /// together. Two z-indexes and a faint second style interleave, with exact duplicates;
    /// every channel within 1 of brute force.
    @Test func denseRowsAtTheWorldEdgesWithInterleavedZIndexes() throws {
        var rng = SplitMix64(seed: testSeed())
        let faint = IconStyle(source: .pin(PinStyle(fillColor: 0x60_3070C0, scale: 0.75)))
        var records: [MarkerRecord] = []
        for i in 0..<30_000 {
            let lon = 165 + rng.unit() * 30
            let p = LatLng(latitude: (rng.unit() - 0.5) * 30, longitude: lon >= 180 ? lon - 360 : lon)
            records.append(MarkerRecord(id: "e\(i)", position: p, style: i % 7 == 0 ? faint : .defaultPin, zIndex: i % 11 == 0 ? 1 : 0))
        }
        for i in 0..<2000 {
            let r = records[pick(&rng, 30_000)]
            records.append(MarkerRecord(id: "d\(i)", position: r.position, style: r.style, zIndex: r.zIndex))
        }
        var layer = try MarkerLayer()
        _ = try layer.upsert(records, now: now)
        try check(layer, TileID(z: 0, x: 0, y: 0)!, density: 1, total: records.count, atMost: 0.5)
        try check(layer, TileID(z: 0, x: 0, y: 0)!, density: 2, total: records.count, atMost: 1)
        for lon in [179.9, -179.9] {
            try check(layer, TileID.containing(LatLng(latitude: 5, longitude: lon), zoom: 1), density: 1, total: records.count, atMost: 1)
        }
    }

    /// `CoverageMask.footprintSettled` (one pass over the mask) gives the answer of
    /// `settled(row:_:_:)` for every footprint row, on a mask settling under random pin draws
    /// (footprints partly off the canvas, across 64-bit words, with empty rows).
    @Test func footprintSettledMatchesRowByRowTests() throws {
        var rng = SplitMix64(seed: testSeed())
        let sprite = try makeRenderer().sprites.sprite(.defaultPin, density: 1)
        let shapes = CoverageMask.Shapes([sprite])
        var mask = CoverageMask(width: 150, height: 90)
        var settled = 0, open = 0
        for i in 0..<2000 {
            // A pin every tenth footprint: the mask settles gradually.
            if i % 10 == 0 {
                mask.add(shapes.shapes[0], x: pick(&rng, 190) - 40, y: pick(&rng, 150) - 60)
            }
            let rows = 1 + pick(&rng, 40), top = pick(&rng, 160) - 60, x = pick(&rng, 230) - 40
            var lo: [Int] = [], hi: [Int] = []
            for _ in 0..<rows {
                let a = pick(&rng, 30) - 15
                lo.append(a); hi.append(pick(&rng, 6) == 0 ? a - pick(&rng, 3) : a + 1 + pick(&rng, 20))
            }
            let expected = (0..<rows).allSatisfy { j in lo[j] >= hi[j] || mask.settled(row: top + j, x + lo[j], x + hi[j]) }
            #expect(mask.footprintSettled(top: top, x: x, lo: lo, hi: hi) == expected, "top \(top) x \(x) lo \(lo) hi \(hi)")
            if expected { settled += 1 } else { open += 1 }
        }
        print("footprintSettled: \(settled) settled, \(open) not")
        #expect(settled > 50 && open > 50)
    }

    /// `firstX` and `firstY` find the first world x of a device column and y of a device row,
    /// as `RasterView.pixelX` (world copy 0) and `pixelY` round.
    @Test func firstXAndFirstYMatchPixelRounding() {
        var rng = SplitMix64(seed: testSeed())
        for _ in 0..<2000 {
            let z = pick(&rng, 20), d = 1 + pick(&rng, 3)
            let tile = TileID(z: z, x: UInt32(pick(&rng, 1 << z)), y: UInt32(pick(&rng, 1 << z)))!
            let view = RasterView.tile(tile, tileSize: [256, 512][pick(&rng, 2)], density: d)
            let lo = UInt32(truncatingIfNeeded: rng.next()), span = UInt32(truncatingIfNeeded: rng.next()) >> UInt32(pick(&rng, 32))
            let hi = lo &+ span < lo ? UInt32.max : lo + span
            let p0 = view.pixelY(lo), p1 = view.pixelY(hi)
            guard p1 > p0 else { continue }
            let row = Int(p0) + 1 + pick(&rng, Int(min(p1 - p0, 1000)))
            let b = TileRenderer.firstY(row: row, view, lo, hi)
            #expect(view.pixelY(b) >= row && view.pixelY(b - 1) < row, "row \(row) in \(lo)...\(hi): \(b)")
            let q0 = view.pixelX(lo, copy: 0), q1 = view.pixelX(hi, copy: 0)
            let column = Int(q0) + 1 + pick(&rng, Int(min(q1 - q0, 1000)))
            let a = TileRenderer.firstX(column: column, view, lo, hi)
            #expect(view.pixelX(a, copy: 0) >= column && view.pixelX(a - 1, copy: 0) < column, "column \(column) in \(lo)...\(hi): \(a)")
        }
    }
}

/// A random integer in `0 ..< n`.
private func pick(_ rng: inout SplitMix64, _ n: Int) -> Int { Int(rng.next() % UInt64(n)) }

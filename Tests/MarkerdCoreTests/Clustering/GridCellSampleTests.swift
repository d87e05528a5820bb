import Foundation
import MarkerdTestSupport
import Testing
@testable import MarkerdCore

/// `GridClusterIndex.count(in:atMost:)` and `cellSamples(in:zoom:limit:)` (the point tiles'
/// budget and thinning) against brute force over random points and boxes. Fixed seed by
/// default; `SEED=<n>` replays another.
@Suite struct GridCellSampleTests {
    typealias T = GridClusterIndexTests

    static func seed(_ name: String = #function) -> UInt64 { testSeed("GridCellSampleTests." + name, fixed: 35) }

    /// Random points around a few hotspots, the index built in bulk and the same points upserted
    /// one by one in another order.
    static func indexes(_ options: GridClusterOptions, _ rng: inout SplitMix64) -> (points: [Int32: ClusterPoint], bulk: GridClusterIndex, upserted: GridClusterIndex) {
        let hotspots: [(UInt32, UInt32)] = (0..<5).map { _ in (UInt32(truncatingIfNeeded: rng.next()), UInt32(truncatingIfNeeded: rng.next())) }
        var points: [Int32: ClusterPoint] = [:]
        for id in 0..<Int32(3000) { points[id] = T.randomPoint(id, &rng, hotspots: hotspots) }
        let bulk = GridClusterIndex(options: options, points: points.values.sorted { $0.id < $1.id })
        var upserted = GridClusterIndex(options: options)
        for p in points.values.sorted(by: { $0.id > $1.id }) { upserted.upsert(p) }
        return (points, bulk, upserted)
    }

    /// A box of 2^8 to 2^31 world units a side around `p` (wrapped in x, clamped in y).
    static func box(around p: ClusterPoint, _ rng: inout SplitMix64) -> ClusterBox {
        let half = UInt32(1) << UInt32(7 + rng.next() % 24)
        let minY = p.y > half ? p.y - half : 0, maxY = UInt32.max - p.y > half ? p.y + half : .max
        return ClusterBox(minX: p.x &- half, minY: minY, maxX: p.x &+ half, maxY: maxY)
    }

    @Test(arguments: [GridClusterOptions(), GridClusterOptions(radius: 40, minPoints: 3, maxZoom: 5, extent: 256)])
    func countsAndSamplesMatchBruteForce(options: GridClusterOptions) throws {
        var rng = SplitMix64(seed: Self.seed())
        let (points, index, upserted) = Self.indexes(options, &rng)
        let k = options.cellsPerTileLog2
        var sampled = 0, overLimit = 0
        let all = points.values.sorted { $0.id < $1.id }
        for round in 0..<300 {
            let box = round == 0 ? ClusterBox.world : round % 2 == 0 ? T.randomBox(&rng) : Self.box(around: all[Int(rng.next() % 3000)], &rng)
            let inside = points.values.filter { box.contains(x: $0.x, y: $0.y) }.count
            let limit = Int(rng.next() % 3000)
            let counted = index.count(in: box, atMost: limit)
            if inside <= limit { #expect(counted == inside, "box \(box) limit \(limit)") } else { #expect(counted > limit, "box \(box) limit \(limit)") }

            // Brute force: the members of every cell of `zoom` that intersects the box.
            let zoom = Int(rng.next() % UInt64(min(29 - k, options.maxZoom + 4) + 1))
            let shift = UInt64(32 - zoom - k)
            var cells: [GridClusterID: [ClusterPoint]] = [:]
            for p in points.values {
                let cx = UInt32(UInt64(p.x) >> shift), cy = UInt32(UInt64(p.y) >> shift)
                let x0 = UInt32(truncatingIfNeeded: UInt64(cx) << shift), y0 = UInt32(truncatingIfNeeded: UInt64(cy) << shift)
                let x1 = UInt32(truncatingIfNeeded: ((UInt64(cx) + 1) << shift) - 1), y1 = UInt32(truncatingIfNeeded: ((UInt64(cy) + 1) << shift) - 1)
                if box.intersects(x0: x0, y0: y0, x1: x1, y1: y1) { cells[GridClusterID(zoom: zoom, cellX: cx, cellY: cy), default: []].append(p) }
            }
            let sampleLimit = round % 3 == 0 ? max(1, cells.count - 1) : cells.count + Int(rng.next() % 10)
            let samples = index.cellSamples(in: box, zoom: zoom, limit: sampleLimit)
            #expect(samples == upserted.cellSamples(in: box, zoom: zoom, limit: sampleLimit), "depends only on the set of points")
            guard cells.count <= sampleLimit else {
                #expect(samples == nil, "\(cells.count) cells over the limit \(sampleLimit)")
                overLimit += 1
                continue
            }
            let got = try #require(samples)
            #expect(got.count == cells.count && Set(got.map(\.cell)) == Set(cells.keys), "zoom \(zoom) box \(box)")
            for s in got {
                let members = try #require(cells[s.cell])
                #expect(s.count == members.count)
                #expect(members.contains(s.point), "the sample's point is a member of its cell")
                if zoom >= options.maxZoom {
                    // A max-zoom cell's member list, or a group of one: the member nearest the centroid.
                    let mx = Double(members.reduce(UInt64(0)) { $0 + UInt64($1.x) } / UInt64(members.count))
                    let my = Double(members.reduce(UInt64(0)) { $0 + UInt64($1.y) } / UInt64(members.count))
                    func d(_ p: ClusterPoint) -> Double { (Double(p.x) - mx) * (Double(p.x) - mx) + (Double(p.y) - my) * (Double(p.y) - my) }
                    let best = members.min { (d($0), $0.id) < (d($1), $1.id) }!
                    #expect(s.point == best)
                }
            }
            sampled += got.count
        }
        #expect(sampled > 500 && overLimit > 10, "\(sampled) samples, \(overLimit) boxes over the limit")
    }
}

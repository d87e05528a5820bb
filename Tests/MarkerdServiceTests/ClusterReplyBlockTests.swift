import MarkerdAPI
import MarkerdCore
@testable import MarkerdService
import MarkerdTestSupport
import Testing

/// `ClusterReplyWriter` with memo blocks (`blockLevels` 1-3: the memo keeps the output of 2x2, 4x4
/// or 8x8 target cells per entry, and a box that covers part of a block takes the children it
/// intersects from the entry) against the regular response (`getClusters`, no memo) on a seeded
/// random layer changed between queries: every payload must be the same bytes.
@Suite struct ClusterReplyBlockTests {
    typealias S = ClusterTestService

    /// Dense random markers around a few centres (one by the antimeridian) plus some spread over
    /// the world; random boxes of many sizes around the centres at zooms 0-17 (some crossing the
    /// antimeridian, some the whole world), each asked twice, with moves, upserts and removals
    /// every few queries. Each query is written by two writers with `levels`, each with its own
    /// memo (one of them small, so that it is emptied along the way). Block hits, whole and
    /// partial, must happen. `minPoints` 1 (single points are clusters) and 3 (cells of two
    /// points give their points) as well as the default 2.
    @Test(arguments: [(1, 2), (2, 2), (3, 2), (2, 1), (2, 3), (3, 3)])
    func blocksGiveTheSameBytes(levels: Int, minPoints: UInt32) throws {
        let seed = testSeed("ClusterReplyBlockTests.blocksGiveTheSameBytes.\(levels).\(minPoints)")
        var rng = SplitMix64(seed: seed)
        let s = S()
        var clustering = V1.ClusteringOptions(enabled: true)
        clustering.minPoints = minPoints
        try s.createLayer("c", clustering: clustering)
        let centres: [(Double, Double)] = [(48.85, 2.35), (-33.9, 151.2), (64.1, 179.97), (0.01, -0.01), (35.7, 139.7)]
        func randomPosition(_ rng: inout SplitMix64) -> (Double, Double) {
            if rng.next() % 5 == 0 { return ((rng.unit() - 0.5) * 140, (rng.unit() - 0.5) * 360) }
            let c = centres[Int(rng.next() % UInt64(centres.count))], spread = [0.02, 0.2, 1.0][Int(rng.next() % 3)]
            var lng = c.1 + (rng.unit() - 0.5) * spread
            if lng > 180 { lng -= 360 }
            return (c.0 + (rng.unit() - 0.5) * spread, lng)
        }
        var next = 0
        var live: [String] = []
        try s.upsert("c", (0..<5000).map { _ in
            let (lat, lng) = randomPosition(&rng)
            next += 1
            live.append("m\(next)")
            return S.marker("m\(next)", lat: lat, lng: lng)
        })
        let memos = [GridClusterMemo(budgetBytes: 8 << 20), GridClusterMemo(budgetBytes: 24 << 10)]
        var whole = 0, partial = 0, replies = 0
        for q in 0..<300 {
            if q % 7 == 6 {
                // Change the layer: moves (small and far), new markers, removals.
                var picked = Set<Int>()
                while picked.count < 20 { picked.insert(Int(rng.next() % UInt64(live.count))) }
                let moves = picked.sorted().map { i in
                    let (lat, lng) = randomPosition(&rng)
                    return (live[i], lat, lng)
                }
                try s.move("c", moves)
                let added = (0..<10).map { _ in
                    let (lat, lng) = randomPosition(&rng)
                    next += 1
                    live.append("m\(next)")
                    return S.marker("m\(next)", lat: lat, lng: lng)
                }
                try s.upsert("c", added)
                var gone: [String] = []
                for _ in 0..<10 { gone.append(live.remove(at: Int(rng.next() % UInt64(live.count)))) }
                try s.remove("c", gone)
            }
            let zoom = Int(rng.next() % 18)
            let bounds: V1.Bounds
            if rng.next() % 10 == 0 {
                bounds = S.world
            } else {
                let c = centres[Int(rng.next() % UInt64(centres.count))]
                let span = 360 / Double(1 << max(0, zoom - 2)) * (0.2 + rng.unit() * 2)
                let lat = c.0 + (rng.unit() - 0.5) * span, lng = c.1 + (rng.unit() - 0.5) * span
                var east = lng + span
                if east > 180 { east -= 360 }  // crosses the antimeridian
                bounds = V1.Bounds(west: lng, south: max(-85, lat - span / 3), east: east, north: min(85, lat + span / 3))
            }
            let request = V1.GetClustersRequest(layerID: "c", bounds: bounds, zoom: Double(zoom))
            let expected = try s.service.getClusters(request).serializedBytes()
            let h = try s.service.handle("c")
            for memo in memos {
                for pass in 0..<2 {
                    let payload = try #require(h.lock.withReadLockIfFree { () -> [UInt8]? in
                        guard let generation = h.layer.gridClusterGeneration else { return nil }
                        memo.prepare(generation: generation)
                        let writer = ClusterReplyWriter(memo: memo, blockLevels: levels)
                        var visitor = writer
                        h.layer.visitGridClusters(in: ClusterBox(west: bounds.west, south: bounds.south, east: bounds.east, north: bounds.north),
                                                  zoom: zoom, &visitor)
                        whole += writer.wholeBlockHits
                        partial += writer.partialBlockHits
                        replies += 1
                        return writer.payload(of: h.layer, algorithm: .grid)
                    } ?? nil)
                    let same = payload == expected
                    #expect(same, "query \(q) pass \(pass) bounds \(bounds) zoom \(zoom) levels \(levels) minPoints \(minPoints) seed \(seed)")
                }
            }
        }
        #expect(whole > 50 && partial > 50, "\(whole) whole and \(partial) partial block hits over \(replies) replies (seed \(seed))")
    }
}

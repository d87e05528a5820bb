import MarkerdAPI
import MarkerdCore
@testable import MarkerdService
import MarkerdTestSupport
import Testing

/// `ClusterReplyWriter` with a `GridClusterMemo` too small for what the queries fill it with:
/// replies point into the memo's arena, so a full memo keeps nothing more during a reply and is
/// emptied by the next `prepare`. Every payload must still equal the regular response's bytes.
@Suite struct ClusterReplyMemoTests {
    typealias S = ClusterTestService

    /// Seeded random queries (world and small boxes, zooms 0-12, each asked twice) on a random
    /// layer, each written by a writer sharing one 16 KB memo: the same bytes as `getClusters`,
    /// and the memo is both emptied and reused along the way.
    @Test func smallMemoKeepsRepliesRight() throws {
        let seed = testSeed("ClusterReplyMemoTests.smallMemoKeepsRepliesRight")
        var rng = SplitMix64(seed: seed)
        let s = S()
        try s.createLayer("c", clustering: V1.ClusteringOptions(enabled: true))
        try s.upsert("c", (0..<4000).map { i in
            S.marker("m\(i)", lat: (rng.unit() - 0.5) * 140, lng: (rng.unit() - 0.5) * 360)
        })
        let memo = GridClusterMemo(budgetBytes: 16 << 10)
        var emptied = 0, hits = 0, previousHeld = 0
        for i in 0..<120 {
            let bounds: V1.Bounds
            if rng.next() % 3 == 0 {
                bounds = S.world
            } else {
                let lat = (rng.unit() - 0.5) * 120, lng = (rng.unit() - 0.5) * 340, span = [1.0, 10, 60][Int(rng.next() % 3)]
                bounds = V1.Bounds(west: lng, south: lat, east: lng + span, north: lat + span / 2)
            }
            let request = V1.GetClustersRequest(layerID: "c", bounds: bounds, zoom: Double(rng.next() % 13))
            let expected = try s.service.getClusters(request).serializedBytes()
            let h = try s.service.handle("c")
            for pass in 0..<2 {
                let payload = try #require(h.lock.withReadLockIfFree { () -> [UInt8]? in
                    guard let generation = h.layer.gridClusterGeneration else { return nil }
                    memo.prepare(generation: generation)
                    if memo.heldBytes < previousHeld { emptied += 1 }
                    var writer = ClusterReplyWriter(memo: memo)
                    h.layer.visitGridClusters(in: ClusterBox(west: bounds.west, south: bounds.south, east: bounds.east, north: bounds.north),
                                              zoom: Int(request.zoom), &writer)
                    if writer.pieces.contains(where: \.inMemo) { hits += 1 }
                    previousHeld = memo.heldBytes
                    return writer.payload(of: h.layer, algorithm: .grid)
                } ?? nil)
                let same = payload == expected
                #expect(same, "query \(i) pass \(pass) bounds \(bounds) zoom \(request.zoom) seed \(seed)")
            }
        }
        #expect(emptied > 0 && hits > 0, "emptied \(emptied) times, \(hits) replies used the memo (seed \(seed))")
    }
}

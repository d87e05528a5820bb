import MarkerdAPI
@testable import MarkerdCore
@testable import MarkerdService
import MarkerdTestSupport
import Testing

/// `ClusterReplyWriter.appendGridCluster` (a fresh cluster written through a pointer) against
/// `ClusterReplyWriter.append(MarkerService.apiCluster(_:expansionZoom:), field: 1)` (the
/// `V1.Cluster` the regular GetClusters answer holds) on seeded random grid clusters, byte for
/// byte: every zoom, counts of 0 to 2^32 - 1, positions and bounds anywhere including the world's
/// edges and the coordinates whose latitude or longitude is exactly 0 (fields left out), and
/// expansion zooms 0 to 25.
@Suite struct ClusterEncodingTests {
    /// The reply's tail written by hand equals the protobuf-c encoding of the same
    /// `GetClustersResponse` (layer version and algorithm only) for versions around every varint
    /// length and every algorithm.
    @Test func responseTailIsTheMessageEncoding() {
        let versions: [UInt64] = [0, 1, 127, 128, 16_383, 16_384, 1 << 35, .max - 1, .max]
        for v in versions {
            for algorithm in V1.ClusterAlgorithm.allCases {
                let expected = V1.GetClustersResponse(layerVersion: v, algorithm: algorithm).serializedBytes()
                #expect(ClusterReplyWriter.responseTail(layerVersion: v, algorithm: algorithm) == expected, "version \(v) algorithm \(algorithm)")
            }
        }
    }

    @Test func pointerEncodingIsTheMessageEncoding() {
        let seed = testSeed("ClusterEncodingTests.pointerEncodingIsTheMessageEncoding")
        var rng = SplitMix64(seed: seed)
        // World coordinates at the edges and at latitude / longitude 0 (x or y = 2^31).
        let special: [UInt32] = [0, 1, 1 << 31, (1 << 31) - 1, (1 << 31) + 1, .max - 1, .max]
        func coordinate() -> UInt32 {
            rng.next() % 4 == 0 ? special[Int(rng.next() % UInt64(special.count))] : UInt32(truncatingIfNeeded: rng.next())
        }
        var zeroFields = 0
        for i in 0..<50_000 {
            let zoom = Int(rng.next() % 30)
            let id = GridClusterID(zoom: zoom, cellX: UInt32(rng.next() & 0x1FFF_FFFF), cellY: UInt32(rng.next() & 0x1FFF_FFFF))
            let counts: [Int] = [0, 1, 2, 127, 128, 16_383, 16_384, Int(UInt32.max)]
            let count = rng.next() % 3 == 0 ? counts[Int(rng.next() % UInt64(counts.count))] : Int(rng.next() % 100_000)
            let (x0, x1) = (coordinate(), coordinate()), (y0, y1) = (coordinate(), coordinate())
            let c = GridCluster(id: id, count: count, x: coordinate(), y: coordinate(),
                                bounds: ClusterBox(minX: min(x0, x1), minY: min(y0, y1), maxX: max(x0, x1), maxY: max(y0, y1)))
            let expansionZoom = Int(rng.next() % 26)
            var expected: [UInt8] = [], got: [UInt8] = [7]  // after other bytes, as in a reply
            let message = MarkerService.apiCluster(c, expansionZoom: expansionZoom)
            ClusterReplyWriter.append(message, field: 1, to: &expected)
            ClusterReplyWriter.appendGridCluster(c, expansionZoom: expansionZoom, to: &got)
            if message.position?.latitude == 0 || message.position?.longitude == 0 || message.bounds?.west == 0 { zeroFields += 1 }
            let same = Array(got.dropFirst()) == expected && got.first == 7
            #expect(same, "cluster \(i): \(c) expansion zoom \(expansionZoom) (seed \(seed))")
            if !same { break }
        }
        #expect(zeroFields > 1000, "only \(zeroFields) clusters with a zero coordinate (seed \(seed))")
    }
}

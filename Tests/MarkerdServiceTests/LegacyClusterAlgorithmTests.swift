import MarkerdAPI
@testable import MarkerdService
import Testing

/// `ClusteringOptions.algorithm` was a string in field 6 before it became the enum in field 8.
/// Journals and snapshots written before hold CreateLayer requests with the string: they restore
/// with the algorithm they named, and a live request that still sets field 6 is refused (it would
/// be ignored live and honoured on replay).
@Suite struct LegacyClusterAlgorithmTests {
    /// A CreateLayerRequest for layer `id` as markerd wrote it before: clustering enabled, and
    /// the algorithm named in the string field 6.
    static func legacyRequest(_ id: String, algorithm: String) -> [UInt8] {
        let clustering: [UInt8] = [0x08, 0x01, 6 << 3 | 2, UInt8(algorithm.utf8.count)] + Array(algorithm.utf8)
        let options: [UInt8] = [2 << 3 | 2, UInt8(clustering.count)] + clustering  // LayerOptions.clustering
        return [1 << 3 | 2, UInt8(id.utf8.count)] + Array(id.utf8) + [2 << 3 | 2, UInt8(options.count)] + options
    }

    static func algorithm(_ s: MarkerService, _ id: String) throws -> V1.ClusterAlgorithm? {
        try s.getLayer(V1.GetLayerRequest(layerID: id)).layer?.options?.clustering?.algorithm
    }

    @Test func journaledCreateLayerWithTheStringAlgorithmReplaysWithIt() throws {
        let s = MarkerService()
        for (id, name, expected) in [("old-super", "supercluster", V1.ClusterAlgorithm.supercluster), ("old-grid", "grid", .grid)] {
            var record = V1.JournalRecord()
            record.sequence = 1
            record.method = MutationKind.createLayer.methodName
            record.payload = Self.legacyRequest(id, algorithm: name)
            record.appliedAtUnixMs = 1
            #expect(s.replayJournalRecord(record.serializedBytes()))
            #expect(try Self.algorithm(s, id) == expected, "\(name)")
        }
    }

    @Test func snapshotLayerWithTheStringAlgorithmRestoresWithIt() throws {
        let s = MarkerService()
        let request = Self.legacyRequest("old", algorithm: "supercluster")
        try s.restoreSnapshotSection([2 << 3 | 2, UInt8(request.count)] + request)
        #expect(try Self.algorithm(s, "old") == .supercluster)
    }

    @Test func liveRequestWithTheStringAlgorithmIsInvalid() throws {
        let s = MarkerService()
        #expect {
            try mutate(s, .createLayer, payload: Self.legacyRequest("new", algorithm: "supercluster"), as: V1.CreateLayerResponse.self)
        } throws: { ($0 as? RPCError)?.code == .invalidArgument }
        #expect(throws: RPCError.self) { try s.getLayer(V1.GetLayerRequest(layerID: "new")) }
    }

    @Test func unsetAlgorithmIsReportedAsGrid() throws {
        let s = MarkerService()
        var r = V1.CreateLayerRequest()
        r.layerID = "plain"
        r.options = V1.LayerOptions(clustering: V1.ClusteringOptions(enabled: true))
        let created = try mutate(s, .createLayer, r, as: V1.CreateLayerResponse.self)
        #expect(created.layer?.options?.clustering?.algorithm == .grid)
    }
}

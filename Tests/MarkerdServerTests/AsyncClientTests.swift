import MarkerdAPI
import MarkerdClient
import MarkerdTestSupport
import Testing

@Suite("MarkerdClient's async methods against a real server")
struct AsyncClientTests {
    @Test("concurrent async upserts over one client over tcp://; idempotent resends; typed statuses")
    func asyncCalls() async throws {
        let server = try TestServer(.tcp)
        defer { server.stop() }
        let api = try server.client().async
        var create = V1.CreateLayerRequest()
        create.layerID = "async"
        #expect(try await api.createLayer(create).layer?.id == "async")

        // 32 calls in flight at once on one client: each reply answers its own request.
        let created = try await withThrowingTaskGroup(of: UInt64.self) { group in
            for i in 0..<32 {
                group.addTask {
                    let request = V1.UpsertMarkersRequest(layerID: "async", markers: [marker("m\(i)", 35 + Double(i) * 0.01, 139)])
                    return try await api.upsertMarkers(request).createdCount
                }
            }
            return try await group.reduce(into: [UInt64]()) { $0.append($1) }
        }
        #expect(created == Array(repeating: 1, count: 32))
        var stats = V1.GetLayerStatsRequest()
        stats.layerID = "async"
        #expect(try await api.getLayerStats(stats).stats?.markerCount == 32)

        // A resend with the same key returns the first reply and applies nothing; a fresh key applies again.
        let again = V1.UpsertMarkersRequest(layerID: "async", markers: [marker("m0", 40, 140)])
        let first = try await api.upsertMarkers(again, idempotencyKey: "async-1")
        let resent = try await api.upsertMarkers(again, idempotencyKey: "async-1")
        #expect(first.createdCount == 0 && first.updatedCount == 1 && resent == first)
        #expect(try await api.getLayerStats(stats).stats?.markerCount == 32)

        var get = V1.GetMarkersRequest()
        get.layerID = "async"
        get.ids = ["m0", "nope"]
        let got = try await api.getMarkers(get)
        try #require(got.markers.count == 1)
        #expect(got.markers[0].position?.latitude == 40 && got.missingIDs == ["nope"])

        var missing = V1.GetLayerRequest()
        missing.layerID = "no-such-layer"
        await #expect(throws: ClientError.self) { try await api.getLayer(missing) }
        do {
            _ = try await api.getLayer(missing)
        } catch {
            #expect(error.code == .notFound)
        }
    }
}

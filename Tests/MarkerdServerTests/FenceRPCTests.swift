import Foundation
import MarkerdAPI
import MarkerdAuth
import MarkerdClient
import MarkerdServer
import MarkerdTestSupport
import MarkerdTransport
import Testing

/// Fences over the wire (CreateFence, ListFences, DeleteFence through a real socket) and their
/// webhooks: the event POSTed as JSON with an HMAC-SHA256 signature, retried after a failed
/// attempt, counted on /metrics.
@Suite struct FenceRPCTests {
    @Test func webhookGetsTheSignedEventAndIsRetriedAfterAFailure() throws {
        let receiver = try RawHTTPReceiver(statuses: [500])
        defer { receiver.stop() }
        let dir = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let secretsPath = dir + "/webhook-secrets"
        let secret = "s3cr3t-0123456789abcdef"
        try "# test secrets\nhooks \(secret)\n".write(toFile: secretsPath, atomically: true, encoding: .utf8)
        let server = try TestServer(.tcp) { $0.webhookSecretsFile = secretsPath }
        defer { server.stop() }
        let client = try server.client()
        _ = try createLayer(client, "fleet")

        var fence = V1.Fence()
        fence.fenceID = "depot"
        fence.shape = .circle(V1.FenceCircle(center: V1.LatLng(latitude: 48.85, longitude: 2.35), radiusMeters: 2_000))
        fence.detect = [.enter, .exit]
        fence.webhook = V1.FenceWebhook(url: "http://127.0.0.1:\(receiver.port)/hooks/fleet?x=1", secretName: "hooks")
        let created: V1.CreateFenceResponse = try client.call("CreateFence", V1.CreateFenceRequest(layerID: "fleet", fence: fence),
                                                              idempotencyKey: MarkerdClient.newIdempotencyKey())
        #expect(created.fence?.fenceID == "depot" && created.fence?.insideCount == 0)
        let listed: V1.ListFencesResponse = try client.call("ListFences", V1.ListFencesRequest(layerID: "fleet"))
        #expect(listed.fences.map(\.fenceID) == ["depot"] && listed.fences.first?.webhook == fence.webhook)

        var m = V1.Marker()
        m.id = "van 7 \"ß\""
        m.position = V1.LatLng(latitude: 48.851, longitude: 2.351)
        let upserted = try client.upsertMarkers("fleet", [m])

        // The first attempt gets 500; the retry (0.25 s later) 200.
        try waitUntil("the webhook was retried") { receiver.requests.count >= 2 && server.server.dispatcher.metrics.webhooks.delivered.load(ordering: .relaxed) == 1 }
        let requests = receiver.requests
        #expect(requests.count == 2)
        let first = try #require(requests.first)
        #expect(first.requestLine == "POST /hooks/fleet?x=1 HTTP/1.1")
        #expect(first.headers["content-type"] == "application/json")
        #expect(byteMismatch(requests[1].body, first.body) == nil)
        let expectedSignature = "sha256=" + Crypto.hex(Crypto.hmacSHA256(key: Array(secret.utf8), message: first.body))
        #expect(first.headers["x-markerd-signature"] == expectedSignature)
        let json = try #require(try JSONSerialization.jsonObject(with: Data(first.body)) as? [String: Any])
        #expect(json["fence_id"] as? String == "depot" && json["layer_id"] as? String == "fleet" && json["kind"] as? String == "ENTER")
        #expect(json["marker_id"] as? String == m.id)
        #expect((json["layer_version"] as? NSNumber)?.uint64Value == upserted.layerVersion)
        let position = try #require(json["position"] as? [String: Any])
        #expect(abs((position["latitude"] as? Double ?? 0) - 48.851) < 1e-6)
        let counters = server.server.dispatcher.metrics.webhooks
        #expect(counters.retried.load(ordering: .relaxed) == 1 && counters.failed.load(ordering: .relaxed) == 0)
        #expect(server.server.dispatcher.metrics.prometheusText().contains("markerd_fence_webhooks_total{outcome=\"delivered\"} 1\n"))

        // Deleted: no more events, and ListFences is empty.
        let _: V1.DeleteFenceResponse = try client.call("DeleteFence", V1.DeleteFenceRequest(layerID: "fleet", fenceID: "depot"),
                                                         idempotencyKey: MarkerdClient.newIdempotencyKey())
        _ = try client.moveMarkers("fleet", [V1.MarkerMove(id: m.id, position: V1.LatLng(latitude: 10, longitude: 10))])
        let after: V1.ListFencesResponse = try client.call("ListFences", V1.ListFencesRequest(layerID: "fleet"))
        #expect(after.fences.isEmpty)
        #expect(counters.delivered.load(ordering: .relaxed) == 1 && receiver.requests.count == 2)
    }

    @Test func invalidFencesAreRefusedWithFieldViolationsOverTheWire() throws {
        let server = try TestServer(.tcp)
        defer { server.stop() }
        let client = try NNGRequestClient(configuration: ClientConfiguration(url: server.url))
        _ = try createLayer(try server.client(), "L")
        var fence = V1.Fence()
        fence.fenceID = "f"
        fence.shape = .circle(V1.FenceCircle(center: V1.LatLng(latitude: 0, longitude: 0), radiusMeters: 1e308))
        fence.detect = [.enter]
        let r = try rawCall(client, "CreateFence", token: "", payload: V1.CreateFenceRequest(layerID: "L", fence: fence).serializedBytes(),
                            key: MarkerdClient.newIdempotencyKey())
        #expect(r.code == .invalidArgument && r.fieldViolations.map(\.field) == ["fence.circle.radius_meters"], "\(r.code) \(r.message)")
    }
}

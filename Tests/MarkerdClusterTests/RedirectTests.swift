import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdServer
import MarkerdTestSupport
import MarkerdTransport
import Synchronization
import Testing

/// One markerd replica in cluster mode, in-process (real NNG and HTTP listeners on loopback, a
/// real NATS server), keeping its layers in memory: these tests are about placement and
/// redirects, not the replicated log.
final class RedirectReplica {
    let node: MarkerdNode

    init(nats: PlacementNatsServer, group: String, name: String, signingKeyFile: String? = nil) throws {
        var config = MarkerdConfiguration()
        config.listenURLs = ["tcp://127.0.0.1:0"]
        config.httpAddress = "127.0.0.1:0"
        config.ephemeral = true
        config.contexts = 8
        config.drainSeconds = 1
        config.clusterServers = [nats.url]
        config.clusterGroup = group
        config.nodeID = name
        config.tileSigningKeyFile = signingKeyFile
        node = try MarkerdNode(configuration: config)
        try node.start()
    }

    var url: String { node.boundURLs[0] }
    var httpURL: String { node.httpURL ?? "" }
    var httpPort: Int { node.gateway?.boundPort ?? 0 }

    func client(timeout: Duration = .seconds(20)) throws -> MarkerdClient { try MarkerdClient(url: url, timeout: timeout) }

    /// The layers this replica holds itself (ListLayers is answered locally, never redirected).
    func localLayers() throws -> [String] { try client().listLayers().map(\.id) }

    func stop() { node.stop() }

    /// Replica a1 of group a and b1 of group b, each seeing the other among the live members.
    static func pair(_ nats: PlacementNatsServer, signingKeyFile: String? = nil) throws -> (RedirectReplica, RedirectReplica) {
        let a = try RedirectReplica(nats: nats, group: "a", name: "a1", signingKeyFile: signingKeyFile)
        let b = try RedirectReplica(nats: nats, group: "b", name: "b1", signingKeyFile: signingKeyFile)
        try a.waitUntilSeeing(b)
        try b.waitUntilSeeing(a)
        return (a, b)
    }

    /// Waits until this replica sees `other` among the live members.
    func waitUntilSeeing(_ other: RedirectReplica) throws {
        try waitUntil("\(url) sees \(other.url)") {
            node.shards?.liveMembers(of: other.node.configuration.clusterGroup).contains { $0.endpoints == [other.url] } == true
        }
    }
}

/// One request sent as is, its reply envelope returned (no redirect followed).
func rawCall<R: ProtoMessage>(_ url: String, _ method: String, _ request: R, idempotencyKey: String = "") throws -> V1.Response {
    let transport = try NNGRequestClient(configuration: ClientConfiguration(url: url))
    defer { transport.close() }
    var envelope = V1.Request()
    envelope.method = "/markerd.v1.MarkerService/" + method
    envelope.requestID = 7
    envelope.idempotencyKey = idempotencyKey
    envelope.payload = request.serializedBytes()
    return try V1.Response(serializedBytes: transport.call(envelope.serializedBytes(), timeout: .seconds(20)))
}

@Suite(.serialized) struct RedirectTests {
    @Test func aLayerPlacedElsewhereIsAnsweredMovedWithItsGroupsMembers() throws {
        let nats = try PlacementNatsServer()
        defer { nats.stop() }
        let (a, b) = try RedirectReplica.pair(nats)
        defer { a.stop(); b.stop() }
        _ = try a.client().createLayer(V1.CreateLayerRequest(layerID: "shops.tokyo"))
        try waitUntil("b sees the placement") { b.node.shards?.redirect(for: "shops.tokyo") != nil }

        // Every method that names a layer, reads and writes alike: MOVED, nothing done.
        let moved = try rawCall(b.url, "UpsertMarkers",
                                V1.UpsertMarkersRequest(layerID: "shops.tokyo", markers: [V1.Marker(id: "m", position: V1.LatLng(latitude: 1, longitude: 2))]),
                                idempotencyKey: "k1")
        #expect(moved.code == .moved)
        let redirect = try #require(moved.redirect)
        #expect(redirect.layerID == "shops.tokyo")
        #expect(redirect.group == "a")
        #expect(redirect.endpoints == [a.url])
        #expect(redirect.httpEndpoints == [a.httpURL])
        #expect(moved.message.contains("replica group a"))
        for (method, request) in [("GetLayer", V1.GetLayerRequest(layerID: "shops.tokyo").serializedBytes()),
                                  ("HitTest", V1.HitTestRequest(layerID: "shops.tokyo").serializedBytes()),
                                  ("DeleteLayer", V1.DeleteLayerRequest(layerID: "shops.tokyo").serializedBytes())] {
            var envelope = V1.Request()
            envelope.method = "/markerd.v1.MarkerService/" + method
            envelope.idempotencyKey = "k-\(method)"
            envelope.payload = request
            let transport = try NNGRequestClient(configuration: ClientConfiguration(url: b.url))
            defer { transport.close() }
            let reply = try V1.Response(serializedBytes: transport.call(envelope.serializedBytes(), timeout: .seconds(20)))
            #expect(reply.code == .moved, "\(method)")
            #expect(reply.redirect?.endpoints == [a.url], "\(method)")
        }
        #expect(try a.client().layerStats("shops.tokyo").markerCount == 0, "nothing was applied")
        #expect(try b.localLayers().isEmpty)
        #expect(try a.localLayers() == ["shops.tokyo"])

        // A layer with no placement is NOT_FOUND as on a single node; methods without a layer are served.
        #expect(try rawCall(b.url, "GetLayer", V1.GetLayerRequest(layerID: "nowhere")).code == .notFound)
        #expect(try rawCall(b.url, "GetServerInfo", V1.GetServerInfoRequest()).code == .ok)
    }

    @Test func theSwiftClientFollowsMovedAndCachesTheEndpoint() async throws {
        let nats = try PlacementNatsServer()
        defer { nats.stop() }
        let (a, b) = try RedirectReplica.pair(nats)
        defer { a.stop(); b.stop() }
        let client = try b.client()  // configured with b only
        // CreateLayer naming group a, sent to b: placed on a, MOVED, followed, created on a.
        var create = V1.CreateLayerRequest(layerID: "parks")
        create.group = "a"
        #expect(try client.createLayer(create).id == "parks")
        #expect(client.cachedEndpoint(forLayer: "parks") == a.url)
        #expect(try a.localLayers() == ["parks"])
        #expect(try b.localLayers().isEmpty)
        let m = V1.Marker(id: "p1", position: V1.LatLng(latitude: 35, longitude: 139))
        #expect(try client.upsertMarkers("parks", [m]).createdCount == 1)
        #expect(try client.getMarkers("parks", ids: ["p1"]).markers.map(\.id) == ["p1"])
        #expect(try await client.async.getLayerStats(V1.GetLayerStatsRequest(layerID: "parks")).stats?.markerCount == 1)

        // A fresh client: the async path follows and caches too.
        let fresh = try b.client()
        #expect(try await fresh.async.getLayer(V1.GetLayerRequest(layerID: "parks")).layer?.markerCount == 1)
        #expect(fresh.cachedEndpoint(forLayer: "parks") == a.url)
        // b's own layers stay uncached.
        _ = try fresh.createLayer(V1.CreateLayerRequest(layerID: "lakes"))
        #expect(fresh.cachedEndpoint(forLayer: "lakes") == nil)
        #expect(try b.localLayers() == ["lakes"])
    }

    @Test func aCachedEndpointThatGivesNoReplyFallsBackToTheConfiguredOne() throws {
        let nats = try PlacementNatsServer()
        defer { nats.stop() }
        let (a, b) = try RedirectReplica.pair(nats)
        defer { b.stop() }
        let client = try b.client(timeout: .seconds(2))
        var create = V1.CreateLayerRequest(layerID: "moving")
        create.group = "a"
        _ = try client.createLayer(create)
        #expect(client.cachedEndpoint(forLayer: "moving") == a.url)
        // a goes away (its listener stays bound but answers nothing) and a2 of group a takes over.
        a.stop()
        let a2 = try RedirectReplica(nats: nats, group: "a", name: "a2")
        defer { a2.stop() }
        // a2 applies group a's log from its start: it holds the layer without being asked.
        #expect(try a2.client().layerStats("moving").layerID == "moving")
        try waitUntil("b names only a2 for group a") { b.node.shards?.redirect(for: "moving")?.endpoints == [a2.url] }
        #expect(try client.layerStats("moving").layerID == "moving")
        #expect(client.cachedEndpoint(forLayer: "moving") == a2.url)
    }

    @Test func concurrentCreatesOfOneIDOnTwoGroupsHaveExactlyOneWinner() throws {
        let nats = try PlacementNatsServer()
        defer { nats.stop() }
        let (a, b) = try RedirectReplica.pair(nats)
        defer { a.stop(); b.stop() }
        let clients = [try a.client(), try b.client()]
        for i in 0..<10 {
            let id = "race-\(i)"
            let codes = Mutex([V1.Code](repeating: .unknown, count: 2))
            DispatchQueue.concurrentPerform(iterations: 2) { n in
                let code: V1.Code
                do throws(ClientError) {
                    _ = try clients[n].createLayer(V1.CreateLayerRequest(layerID: id))
                    code = .ok
                } catch {
                    code = error.code
                }
                codes.withLock { $0[n] = code }
            }
            #expect(codes.withLock { $0 }.sorted { $0.rawValue < $1.rawValue } == [.ok, .alreadyExists], "\(id)")
        }
        let held = (try a.localLayers(), try b.localLayers())
        #expect(held.0.count + held.1.count == 10)
        #expect(Set(held.0).isDisjoint(with: held.1))
        for id in held.0 { #expect(a.node.shards?.placements.group(of: id) == "a") }
        for id in held.1 { #expect(b.node.shards?.placements.group(of: id) == "b") }
    }

    @Test func deleteLayerRemovesThePlacement() throws {
        let nats = try PlacementNatsServer()
        defer { nats.stop() }
        let (a, b) = try RedirectReplica.pair(nats)
        defer { a.stop(); b.stop() }
        _ = try a.client().createLayer(V1.CreateLayerRequest(layerID: "temp"))
        try waitUntil("b sees temp on a") { b.node.shards?.redirect(for: "temp") != nil }
        _ = try b.client().deleteLayer("temp")  // followed to a
        try waitUntil("b sees temp released") { b.node.shards?.placements.group(of: "temp") == nil }
        #expect(try rawCall(b.url, "GetLayer", V1.GetLayerRequest(layerID: "temp")).code == .notFound)
        // Free again: b may create it now, for its own group.
        _ = try b.client().createLayer(V1.CreateLayerRequest(layerID: "temp"))
        #expect(try b.localLayers() == ["temp"])
        // A create that fails after placing gives the placement back.
        var bad = V1.CreateLayerRequest(layerID: "bad")
        bad.options = V1.LayerOptions(tiling: V1.TilingOptions(tileSize: 300))
        #expect(try rawCall(a.url, "CreateLayer", bad, idempotencyKey: "bad").code == .invalidArgument)
        #expect(a.node.shards?.placements.group(of: "bad") == nil)
    }

    @Test func theGatewayRedirectsToTheOwnersGatewayKeepingSignedPrefixes() throws {
        let nats = try PlacementNatsServer()
        defer { nats.stop() }
        let keyFile = NSTemporaryDirectory() + "markerd-shared-key-\(UInt64.random(in: 0...UInt64.max))"
        defer { try? FileManager.default.removeItem(atPath: keyFile) }
        let (a, b) = try RedirectReplica.pair(nats, signingKeyFile: keyFile)
        defer { b.stop() }
        let client = try a.client()
        _ = try client.createLayer(V1.CreateLayerRequest(layerID: "cafes"))
        _ = try client.upsertMarkers("cafes", [V1.Marker(id: "c", position: V1.LatLng(latitude: 0, longitude: 0))])
        try waitUntil("b sees cafes on a") { b.node.shards?.redirect(for: "cafes") != nil }

        let target = "/tiles/cafes/256/0/0/0.png?x=1"
        let r = try RawHTTP.request(port: b.httpPort, "GET", target)
        #expect(r.status == 307)
        #expect(r.reason == "Temporary Redirect")
        #expect(r.header("Location") == a.httpURL + target)
        #expect(r.header("Cache-Control") == "no-store")
        let direct = try RawHTTP.request(port: a.httpPort, "GET", target)
        #expect(direct.status == 200)
        #expect(direct.header("Content-Type") == "image/png")

        // A URL signed on a: b redirects with the prefix kept, and a accepts it (the same key).
        let signed = try client.signTileURL("cafes")
        let signedPath = signed.pathPrefix + "/tiles/cafes/256/0/0/0.png"
        let viaB = try RawHTTP.request(port: b.httpPort, "GET", signedPath)
        #expect(viaB.status == 307)
        let location = try #require(viaB.header("Location"))
        #expect(location == a.httpURL + signedPath)
        #expect(try RawHTTP.request(port: a.httpPort, "GET", String(location.dropFirst(a.httpURL.count))).status == 200)

        // b's own paths and layers without placement are served as before.
        #expect(try RawHTTP.request(port: b.httpPort, "GET", "/healthz").status == 200)
        #expect(try RawHTTP.request(port: b.httpPort, "GET", "/tiles/nowhere/256/0/0/0.png").status == 404)

        // No live gateway in group a: 503 with Retry-After.
        a.stop()
        try waitUntil("b sees no member of a") { b.node.shards?.redirect(for: "cafes")?.httpEndpoints.isEmpty == true }
        let unavailable = try RawHTTP.request(port: b.httpPort, "GET", target)
        #expect(unavailable.status == 503)
        #expect(unavailable.header("Retry-After") == "1")
        // And RPCs: MOVED without endpoints, which the client reports as MOVED.
        #expect(throws: ClientError.self) { _ = try b.client().getLayer("cafes") }
        #expect((try? b.client().getLayer("cafes")) == nil)
    }

    @Test func withoutClusterNothingOfThisRuns() throws {
        var config = MarkerdConfiguration()
        config.listenURLs = ["tcp://127.0.0.1:0"]
        config.httpAddress = "127.0.0.1:0"
        config.ephemeral = true
        let node = try MarkerdNode(configuration: config)
        try node.start()
        defer { node.stop() }
        #expect(node.shards == nil)
        #expect(node.dispatcher.shards == nil)
        #expect(node.gateway?.shards == nil)
        let client = try MarkerdClient(url: node.boundURLs[0])
        var create = V1.CreateLayerRequest(layerID: "solo")
        create.group = "elsewhere"  // ignored on a single node
        #expect(try client.createLayer(create).id == "solo")
        #expect(client.cachedEndpoint(forLayer: "solo") == nil)
    }
}

@Suite struct RedirectFlagTests {
    func parse(_ args: [String]) -> Result<MarkerdConfiguration, MarkerdConfiguration.ParseError> {
        Result { () throws(MarkerdConfiguration.ParseError) in try MarkerdConfiguration.parse(args) }
    }

    func error(_ args: [String]) -> String? {
        if case .failure(let e) = parse(args) { e.description } else { nil }
    }

    @Test func advertisedURLsAreValidatedWithClearErrors() throws {
        let cluster = ["--cluster", "nats://127.0.0.1:4222"]
        let ok = try parse(cluster + ["--advertise", "tcp://10.0.0.5:7450", "--advertise-http", "https://tiles.example:8443"]).get()
        #expect(ok.advertiseURL == "tcp://10.0.0.5:7450")
        #expect(ok.advertiseHTTPURL == "https://tiles.example:8443")
        #expect(try parse(cluster).get().advertiseURL == nil, "default: the first --listen URL as bound")
        #expect(error(cluster + ["--listen", "tcp://0.0.0.0:7450"])?.contains("give --advertise URL") == true)
        #expect(error(cluster + ["--listen", "tcp://0.0.0.0:7450", "--advertise", "tcp://10.0.0.5:7450"]) == nil)
        #expect(error(cluster + ["--listen", "inproc://x"])?.contains("give --advertise URL") == true)
        #expect(error(cluster + ["--http", "0.0.0.0:8080"])?.contains("give --advertise-http URL") == true)
        #expect(error(cluster + ["--http", "0.0.0.0:8080", "--advertise-http", "http://10.0.0.5:8080"]) == nil)
        #expect(error(cluster + ["--advertise", "tcp://0.0.0.0:7450"])?.contains("--advertise takes") == true)
        #expect(error(cluster + ["--advertise", "http://10.0.0.5:7450"])?.contains("--advertise takes") == true)
        #expect(error(cluster + ["--advertise-http", "ftp://10.0.0.5:21"])?.contains("--advertise-http takes") == true)
        #expect(error(cluster + ["--advertise-http", "http://10.0.0.5"])?.contains("--advertise-http takes") == true)
        #expect(error(["--advertise", "tcp://10.0.0.5:7450"]) == "--advertise and --advertise-http need --cluster")
        #expect(error(["--listen", "tcp://0.0.0.0:7450", "--allow-anonymous"]) == nil, "no cluster: nothing changes")
    }
}

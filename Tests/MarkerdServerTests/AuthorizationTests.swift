import Foundation
import MarkerdAPI
import MarkerdAuth
import MarkerdClient
@testable import MarkerdServer
import MarkerdService
import MarkerdTestSupport
import MarkerdTransport
import Testing

/// An auth file in a fresh directory with four tokens (made by `TokenTool.add`, as
/// `markerd token add` does) and a `public demo-*` line.
struct AuthFixture {
    let directory: String
    let path: String
    /// read on fleet-*; write on fleet-*; admin on fleet-*; everything on every layer.
    let reader: String, writer: String, admin: String, root: String

    init() throws {
        directory = TestServer.temporaryDirectory()
        path = directory + "/tokens"
        reader = try TokenTool.add(name: "reader", scopes: "read", layers: "fleet-*", path: path)
        writer = try TokenTool.add(name: "writer", scopes: "write", layers: "fleet-*", path: path)
        admin = try TokenTool.add(name: "admin", scopes: "admin", layers: "fleet-*", path: path)
        root = try TokenTool.add(name: "root", scopes: "read,write,admin", layers: "*", path: path)
        let text = try String(contentsOfFile: path, encoding: .utf8)
        try (text + "public demo-*\n").write(toFile: path, atomically: true, encoding: .utf8)
    }

    /// The token with exactly `scope` on fleet-*.
    func token(_ scope: Scopes) -> String { scope == .read ? reader : scope == .write ? writer : admin }

    func remove() { try? FileManager.default.removeItem(atPath: directory) }
}

/// The status of one raw call (envelope built here: method, token, idempotency key, payload).
func rawCall(_ client: NNGRequestClient, _ method: String, token: String, payload: [UInt8], key: String = "") throws -> V1.Response {
    var env = V1.Request()
    env.method = RPCDispatcher.servicePrefix + method
    env.requestID = UInt64.random(in: 1...UInt64.max)
    env.authToken = token
    env.idempotencyKey = key
    env.payload = payload
    return try V1.Response(serializedBytes: client.call(env.serializedBytes(), timeout: .seconds(20)))
}

/// A request payload naming `layer` in field 1 (`layer_id`), nothing else.
func layerPayload(_ layer: String) -> [UInt8] { [0x0A, UInt8(layer.utf8.count)] + Array(layer.utf8) }

/// What every rpc needs, stated here independently of `MethodAccess`.
let expectedScopes: [String: Scopes] = [
    "CreateLayer": .admin, "GetLayer": .read, "ListLayers": .read, "DeleteLayer": .admin, "GetLayerStats": .read,
    "RegisterIcon": .write, "UpsertMarkers": .write, "UpdateMarkers": .write, "RemoveMarkers": .write, "GetMarkers": .read, "ListMarkers": .read, "ClearLayer": .write,
    "MoveMarkers": .write, "QueryViewport": .read, "HitTest": .read, "BeginDrag": .write, "DragTo": .write,
    "EndDrag": .write, "CancelDrag": .write, "GetTile": .read, "RenderSnapshot": .read, "GetClusters": .read,
    "GetClusterLeaves": .read, "GetClusterChildren": .read, "GetClusterExpansionZoom": .read, "GetPointTile": .read,
    "CreateSnapshot": .admin, "GetServerInfo": .read, "SignTileURL": .read, "GetChanges": .read,
    "CreateFence": .write, "DeleteFence": .write, "ListFences": .read,
]
/// The rpcs whose request names no layer.
let layerFreeMethods: Set<String> = ["ListLayers", "RegisterIcon", "CreateSnapshot", "GetServerInfo"]

@Suite struct MethodAccessTests {
    /// Every rpc of the .proto has an access rule, the one stated above; and every request that
    /// names a layer names it in field 1 (which is what the check reads).
    @Test func everyMethodHasTheStatedRule() {
        let methods = ProtoSchema.methods
        #expect(Set(methods.map(\.name)) == Set(expectedScopes.keys))
        for m in methods {
            let access = MethodAccess.table[m.path]
            #expect(access?.scope == expectedScopes[m.name], "\(m.name)")
            #expect(access?.layerScoped == !layerFreeMethods.contains(m.name), "\(m.name)")
            let layerField = m.request.fields.first { $0.name == "layer_id" }
            #expect(layerField == nil || layerField?.number == 1, "\(m.name): layer_id is not field 1")
        }
    }
}

@Suite(.serialized) struct AuthorizationTests {
    /// Every method: no token and an unknown one UNAUTHENTICATED; a token without the method's
    /// scope, or with it but not on the layer, PERMISSION_DENIED; the right token gets past the
    /// check (whatever the service then answers), over a real tcp socket.
    @Test func everyMethodChecksTokenScopeAndLayer() throws {
        let fixture = try AuthFixture()
        defer { fixture.remove() }
        let server = try TestServer(.tcp) { $0.authFile = fixture.path }
        defer { server.stop() }
        let client = try NNGRequestClient(configuration: ClientConfiguration(url: server.url))
        let refused: Set<V1.Code> = [.unauthenticated, .permissionDenied]
        for method in ProtoSchema.methods.map(\.name) {
            let scope = try #require(expectedScopes[method])
            let layered = !layerFreeMethods.contains(method)
            let mine = layered ? layerPayload("fleet-1") : []
            let key = scope == .read ? "" : MarkerdClient.newIdempotencyKey()
            #expect(try rawCall(client, method, token: "", payload: mine, key: key).code == .unauthenticated, "\(method)")
            #expect(try rawCall(client, method, token: "mkd_not-a-token", payload: mine, key: key).code == .unauthenticated, "\(method)")
            for other in [Scopes.read, .write, .admin] where other != scope {
                let r = try rawCall(client, method, token: fixture.token(other), payload: mine, key: key)
                #expect(r.code == .permissionDenied, "\(method) with a \(other) token: \(r.code) \(r.message)")
            }
            if layered {
                let r = try rawCall(client, method, token: fixture.token(scope), payload: layerPayload("other-1"), key: key)
                #expect(r.code == .permissionDenied && r.message.contains("other-1"), "\(method) on another layer: \(r.code) \(r.message)")
            }
            let allowed = try rawCall(client, method, token: fixture.token(scope), payload: mine, key: MarkerdClient.newIdempotencyKey())
            #expect(!refused.contains(allowed.code), "\(method) with its token: \(allowed.code) \(allowed.message)")
        }
    }

    /// ListLayers lists only the layers the token may read; the right token's calls work end to end.
    @Test func listLayersShowsOnlyReadableLayers() throws {
        let fixture = try AuthFixture()
        defer { fixture.remove() }
        let server = try TestServer(.tcp) { $0.authFile = fixture.path }
        defer { server.stop() }
        let root = try MarkerdClient(url: server.url, authToken: fixture.root)
        for id in ["fleet-1", "fleet-2", "other-1"] { _ = try createLayer(root, id) }
        let reader = try MarkerdClient(url: server.url, authToken: fixture.reader)
        #expect(try reader.listLayers().map(\.id) == ["fleet-1", "fleet-2"])
        #expect(try root.listLayers().map(\.id) == ["fleet-1", "fleet-2", "other-1"])
        let writer = try MarkerdClient(url: server.url, authToken: fixture.writer)
        #expect(try writer.upsertMarkers("fleet-1", [marker("a", 48.85, 2.35)]).createdCount == 1)
        #expect(statusCode { _ = try writer.upsertMarkers("other-1", [marker("a", 48.85, 2.35)]) } == .permissionDenied)
        #expect(try reader.getMarkers("fleet-1", ids: ["a"]).markers.count == 1)
        // A layer id with a NUL: protobuf-c would read "fleet-1", the check refuses it whole.
        let raw = try NNGRequestClient(configuration: ClientConfiguration(url: server.url))
        let nul = try rawCall(raw, "UpsertMarkers", token: fixture.writer, payload: layerPayload("other-1\u{0}fleet-1"),
                              key: MarkerdClient.newIdempotencyKey())
        #expect(nul.code == .invalidArgument)
    }

    /// The network-thread path (`answerInline`) checks the token too: a cached tile is answered
    /// there for its reader and declined (then refused by `handle`) for anyone else.
    @Test func inlineAnswersCheckTheToken() throws {
        let fixture = try AuthFixture()
        defer { fixture.remove() }
        var config = MarkerdConfiguration()
        config.authFile = fixture.path
        let service = MarkerService()
        let d = RPCDispatcher(service: service, access: try AccessControl(configuration: config))
        func envelope(_ method: String, _ payload: [UInt8], token: String, key: String = "") -> [UInt8] {
            var env = V1.Request()
            env.method = RPCDispatcher.servicePrefix + method
            env.requestID = 9
            env.authToken = token
            env.idempotencyKey = key
            env.payload = payload
            return env.serializedBytes()
        }
        func handled(_ bytes: [UInt8]) -> V1.Response {
            let box = ResponseBox()
            bytes.withUnsafeBytes { raw in d.handle(body: raw, receivedAt: .now) { box.set($0) } }
            return box.wait()
        }
        func inline(_ bytes: [UInt8]) -> Bool {
            bytes.withUnsafeBytes { body in d.answerInline(body: body, receivedAt: .now) { _, _ in } }
        }
        for id in ["fleet-1", "other-1"] {
            #expect(handled(envelope("CreateLayer", V1.CreateLayerRequest(layerID: id).serializedBytes(), token: fixture.root, key: id)).code == .ok)
            var up = V1.UpsertMarkersRequest()
            up.layerID = id
            up.markers = [marker("a", 48.8566, 2.3522)]
            #expect(handled(envelope("UpsertMarkers", up.serializedBytes(), token: fixture.root, key: id + "u")).code == .ok)
            let tile = V1.GetTileRequest(layerID: id, z: 14, x: 8298, y: 5636).serializedBytes()
            #expect(handled(envelope("GetTile", tile, token: fixture.root)).code == .ok)
            #expect(inline(envelope("GetTile", tile, token: fixture.root)), "\(id): cached, answered inline")
        }
        let fleetTile = V1.GetTileRequest(layerID: "fleet-1", z: 14, x: 8298, y: 5636).serializedBytes()
        let otherTile = V1.GetTileRequest(layerID: "other-1", z: 14, x: 8298, y: 5636).serializedBytes()
        #expect(inline(envelope("GetTile", fleetTile, token: fixture.reader)))
        for (bytes, code) in [(envelope("GetTile", fleetTile, token: ""), V1.Code.unauthenticated),
                              (envelope("GetTile", fleetTile, token: "mkd_nope"), .unauthenticated),
                              (envelope("GetTile", fleetTile, token: fixture.writer), .permissionDenied),
                              (envelope("GetTile", otherTile, token: fixture.reader), .permissionDenied)] {
            #expect(!inline(bytes))
            #expect(handled(bytes).code == code)
        }
    }

    /// Protected mode: no auth file and a non-loopback address refuses to start, naming the flag.
    @Test func protectedModeRefusesOpenAddresses() throws {
        for (listen, http) in [("tcp://0.0.0.0:7450", nil), ("tcp://*:7450", nil), ("tcp://:7450", nil),
                               ("tcp://10.1.2.3:7450", nil), ("tcp://example.com:7450", nil),
                               ("tcp://127.0.0.1:0", "0.0.0.0:8080"), ("tcp://127.0.0.1:0", ":8080")] as [(String, String?)] {
            var config = MarkerdConfiguration()
            config.ephemeral = true
            config.listenURLs = [listen]
            config.httpAddress = http
            let message = try #require(config.protectedModeViolation(), "\(listen) \(http ?? "")")
            #expect(message.contains("--allow-anonymous") && message.contains("--auth-file"), "\(message)")
            #expect(throws: MarkerdNode.StartupError.self) { _ = try MarkerdNode(configuration: config) }
            config.allowAnonymous = true
            #expect(config.protectedModeViolation() == nil)
            config.allowAnonymous = false
            config.authFile = "/nonexistent"
            #expect(config.protectedModeViolation() == nil)
        }
        for listen in ["tcp://127.0.0.1:7450", "tcp://127.8.9.10:1", "tcp://localhost:7450", "tcp://[::1]:7450",
                       "ipc:///tmp/markerd.sock", "inproc://x", "tls+tcp://127.0.0.1:7450"] {
            var config = MarkerdConfiguration()
            config.listenURLs = [listen]
            config.httpAddress = "127.0.0.1:8080"
            #expect(config.protectedModeViolation() == nil, "\(listen)")
        }
        // The operators' gateway never asks for a token: loopback even with an auth file.
        var ops = MarkerdConfiguration()
        ops.authFile = "/nonexistent"
        ops.opsHTTPAddress = "0.0.0.0:9090"
        #expect(ops.protectedModeViolation()?.contains("--ops-http") == true)
    }

    /// The binary: refuses to start open, exit status 1 and the reason on stderr, before binding.
    @Test func markerdRefusesToStartOpen() throws {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: MarkerdProcess.binary)
        process.arguments = ["--listen", "tcp://0.0.0.0:\(MarkerdProcess.freePort())", "--ephemeral"]
        let stderr = Pipe()
        process.standardError = stderr
        process.standardOutput = FileHandle.nullDevice
        try process.run()
        let text = String(decoding: stderr.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        #expect(process.terminationStatus == 1)
        #expect(text.contains("refusing to serve tcp://0.0.0.0") && text.contains("--allow-anonymous"), "\(text)")
    }

    /// A reload that fails keeps the tokens; a good one revokes at once (in process; the
    /// SIGHUP path is `SighupReloadTests`).
    @Test func brokenReloadKeepsTheOldTokens() throws {
        let fixture = try AuthFixture()
        defer { fixture.remove() }
        let server = try TestServer(.tcp) { $0.authFile = fixture.path }
        defer { server.stop() }
        let reader = try MarkerdClient(url: server.url, authToken: fixture.reader)
        #expect(try reader.serverInfo().version.isEmpty == false)
        let good = try String(contentsOfFile: fixture.path, encoding: .utf8)
        try (good + "token broken-line\n").write(toFile: fixture.path, atomically: true, encoding: .utf8)
        let errors = server.server.reload()
        #expect(errors.count == 1 && errors[0].contains("line") && errors[0].contains("keeping the tokens"), "\(errors)")
        #expect(try reader.serverInfo().version.isEmpty == false)
        try good.write(toFile: fixture.path, atomically: true, encoding: .utf8)
        try TokenTool.revoke(name: "reader", path: fixture.path)
        #expect(server.server.reload().isEmpty)
        #expect(statusCode { _ = try reader.serverInfo() } == .unauthenticated)
    }

    /// The audit log: write and admin calls (accepted and refused) and refused reads, as JSON
    /// lines with the token's name; never a token or a marker's data.
    @Test func auditLogRecordsWritesAndRefusals() throws {
        let fixture = try AuthFixture()
        defer { fixture.remove() }
        let auditPath = fixture.directory + "/audit.log"
        let server = try TestServer(.tcp) { $0.authFile = fixture.path; $0.auditLog = auditPath }
        defer { server.stop() }
        let admin = try MarkerdClient(url: server.url, authToken: fixture.admin)
        let writer = try MarkerdClient(url: server.url, authToken: fixture.writer)
        let reader = try MarkerdClient(url: server.url, authToken: fixture.reader)
        let anonymous = try MarkerdClient(url: server.url)
        _ = try createLayer(admin, "fleet-1")
        let secret = marker("secret-marker-id", 48.85, 2.35) { $0.attributes = ["driver": "secret-driver-name"] }
        _ = try writer.upsertMarkers("fleet-1", [secret])
        #expect(statusCode { _ = try reader.upsertMarkers("fleet-1", [secret]) } == .permissionDenied)
        #expect(statusCode { _ = try anonymous.upsertMarkers("fleet-1", [secret]) } == .unauthenticated)
        #expect(statusCode { _ = try writer.upsertMarkers("other-9", [secret]) } == .permissionDenied)
        _ = try reader.getLayer("fleet-1")  // an accepted read: not audited
        #expect(statusCode { _ = try anonymous.getLayer("fleet-1") } == .unauthenticated)
        let text = try String(contentsOfFile: auditPath, encoding: .utf8)
        let lines = text.split(separator: "\n").map(String.init)
        let records = try lines.map { try #require(JSONSerialization.jsonObject(with: Data($0.utf8)) as? [String: Any]) }
        func summary(_ r: [String: Any]) -> String {
            "\(r["token"] as? String ?? "null") \(r["method"] as? String ?? "") \(r["layer"] as? String ?? "-") \(r["status"] as? String ?? "")"
        }
        #expect(records.map(summary) == [
            "admin CreateLayer fleet-1 OK",
            "writer UpsertMarkers fleet-1 OK",
            "reader UpsertMarkers fleet-1 PERMISSION_DENIED",
            "null UpsertMarkers fleet-1 UNAUTHENTICATED",
            "writer UpsertMarkers other-9 PERMISSION_DENIED",
            "null GetLayer fleet-1 UNAUTHENTICATED",
        ])
        #expect(records.allSatisfy { ($0["time"] as? String)?.hasSuffix("Z") == true && $0["request_id"] is NSNumber })
        for forbidden in [fixture.admin, fixture.writer, fixture.reader, "secret-marker-id", "secret-driver-name"] {
            #expect(!text.contains(forbidden))
        }
    }

    /// SignTileURL: read scope on the layer; ttl defaults to an hour and is cut at 7 days; no
    /// key without an auth file or key file.
    @Test func signTileURL() throws {
        let fixture = try AuthFixture()
        defer { fixture.remove() }
        let server = try TestServer(.tcp) { $0.authFile = fixture.path }
        defer { server.stop() }
        _ = try createLayer(try MarkerdClient(url: server.url, authToken: fixture.root), "fleet-1")
        let reader = try MarkerdClient(url: server.url, authToken: fixture.reader)
        let now = Int64(Date().timeIntervalSince1970)
        let hour = try reader.signTileURL("fleet-1")
        #expect((now + 3600...now + 3660).contains(hour.expiresUnix))
        #expect(hour.pathPrefix.hasPrefix("/t/\(hour.expiresUnix).") && hour.urlTemplate == hour.pathPrefix + "/tiles/fleet-1/256/{z}/{x}/{y}.png")
        let long = try reader.signTileURL("fleet-1", ttlSeconds: .max)
        #expect((now + 604_800...now + 604_860).contains(long.expiresUnix))
        #expect(statusCode { _ = try reader.signTileURL("fleet-404") } == .notFound)
        #expect(statusCode { _ = try reader.signTileURL("other-1") } == .permissionDenied)

        let open = try TestServer(.tcp)
        defer { open.stop() }
        let client = try open.client()
        _ = try createLayer(client, "fleet-1")
        #expect(statusCode { _ = try client.signTileURL("fleet-1") } == .failedPrecondition)
    }
}

/// `markerd token add|list|revoke` and SIGHUP on a real markerd process: a revoked token is
/// refused for every method after the reload, while the other tokens' connections go on.
@Suite(.serialized) struct SighupReloadTests {
    func tool(_ arguments: [String]) throws -> (status: Int32, out: String, err: String) {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: MarkerdProcess.binary)
        process.arguments = ["token"] + arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        try process.run()
        let o = String(decoding: out.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        let e = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        process.waitUntilExit()
        return (process.terminationStatus, o, e)
    }

    @Test func revokedTokensAreRefusedAfterSighup() throws {
        let dir = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let path = dir + "/tokens"
        let added = try tool(["add", "reader", "--scopes", "read", "--layers", "fleet-*", "--auth-file", path])
        #expect(added.status == 0, "\(added.err)")
        let readerToken = added.out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(readerToken.hasPrefix("mkd_") && readerToken.count == 47)
        let rootToken = try tool(["add", "root", "--scopes", "read,write,admin", "--layers", "*", "--auth-file", path])
            .out.trimmingCharacters(in: .whitespacesAndNewlines)
        #expect(try tool(["add", "root", "--scopes", "read", "--layers", "*", "--auth-file", path]).status == 1, "names are unique")
        #expect(try tool(["add", "x", "--scopes", "root", "--layers", "*", "--auth-file", path]).status == 1)
        let listed = try tool(["list", "--auth-file", path])
        #expect(listed.out == "reader\tread\tfleet-*\nroot\tread,write,admin\t*\n")
        #expect(!(try String(contentsOfFile: path, encoding: .utf8)).contains(readerToken), "only the hash is stored")
        let mode = try FileManager.default.attributesOfItem(atPath: path)[.posixPermissions] as? Int
        #expect(mode == 0o600)

        let process = try MarkerdProcess(arguments: ["--ephemeral", "--auth-file", path])
        defer { process.kill(SIGKILL); _ = process.waitForExit(timeout: 10) }
        let root = try process.waitUntilReady(authToken: rootToken)
        let reader = try MarkerdClient(url: process.url, timeout: .seconds(10), authToken: readerToken)
        _ = try createLayer(root, "fleet-1")
        #expect(try reader.getLayer("fleet-1").id == "fleet-1")

        #expect(try tool(["revoke", "reader", "--auth-file", path]).status == 0)
        #expect(try tool(["revoke", "reader", "--auth-file", path]).status == 1, "already gone")
        process.kill(SIGHUP)
        let deadline = ContinuousClock.now + .seconds(20)
        while statusCode({ _ = try reader.getLayer("fleet-1") }) != .unauthenticated {
            try #require(ContinuousClock.now < deadline, "the revoked token still works 20 s after SIGHUP")
            Thread.sleep(forTimeInterval: 0.02)
        }
        let raw = try NNGRequestClient(configuration: ClientConfiguration(url: process.url))
        for method in ProtoSchema.methods.map(\.name) {
            let payload = layerFreeMethods.contains(method) ? [] : layerPayload("fleet-1")
            let r = try rawCall(raw, method, token: readerToken, payload: payload, key: MarkerdClient.newIdempotencyKey())
            #expect(r.code == .unauthenticated, "\(method) with a revoked token: \(r.code)")
        }
        // The process kept running and the other token's client (same connection) still works.
        #expect(try root.upsertMarkers("fleet-1", [marker("a", 1, 2)]).createdCount == 1)
        #expect(process.process.isRunning)
    }
}

/// Per-token quotas over real sockets: RESOURCE_EXHAUSTED with retry_after_ms on the worker and
/// the network-thread paths, expensive slots given back, HTTP 429 with Retry-After.
@Suite(.serialized) struct QuotaTests {
    @Test func rpcAndHTTPQuotas() throws {
        let fixture = try AuthFixture()
        defer { fixture.remove() }
        // One request per 1000 s: the second call is refused whatever the machine's speed.
        let slow = try TokenTool.add(name: "slow", scopes: "read", layers: "*", limits: Limits(requestsPerSecond: 0.001), path: fixture.path)
        let slowTiles = try TokenTool.add(name: "slow-tiles", scopes: "read", layers: "*", limits: Limits(requestsPerSecond: 0.001), path: fixture.path)
        let slowHTTP = try TokenTool.add(name: "slow-http", scopes: "read", layers: "*", limits: Limits(requestsPerSecond: 0.001), path: fixture.path)
        let one = try TokenTool.add(name: "one", scopes: "read", layers: "*", limits: Limits(concurrentExpensive: 1), path: fixture.path)
        let server = try TestServer(.tcp) { $0.authFile = fixture.path; $0.httpAddress = "127.0.0.1:0" }
        defer { server.stop() }
        let root = try MarkerdClient(url: server.url, authToken: fixture.root)
        _ = try createLayer(root, "fleet-1")
        _ = try root.upsertMarkers("fleet-1", [marker("a", 48.8566, 2.3522)])
        let raw = try NNGRequestClient(configuration: ClientConfiguration(url: server.url))

        // Worker path (GetLayer).
        #expect(try rawCall(raw, "GetLayer", token: slow, payload: layerPayload("fleet-1")).code == .ok)
        let refused = try rawCall(raw, "GetLayer", token: slow, payload: layerPayload("fleet-1"))
        #expect(refused.code == .resourceExhausted && refused.retryAfterMs > 990_000 && refused.message.contains("retry after"),
                "\(refused.code) \(refused.retryAfterMs) \(refused.message)")

        // Network-thread path: a cached tile.
        let tile = V1.GetTileRequest(layerID: "fleet-1", z: 14, x: 8298, y: 5636).serializedBytes()
        for _ in 0..<2 { #expect(try rawCall(raw, "GetTile", token: fixture.root, payload: tile).code == .ok) }
        #expect(try rawCall(raw, "GetTile", token: slowTiles, payload: tile).code == .ok)
        #expect(try rawCall(raw, "GetTile", token: slowTiles, payload: tile).code == .resourceExhausted)

        // expensive=1, one call at a time: each call gives its slot back.
        for z in 0..<4 {
            let r = try rawCall(raw, "GetTile", token: one, payload: V1.GetTileRequest(layerID: "fleet-1", z: UInt32(z)).serializedBytes())
            #expect(r.code == .ok, "call \(z): \(r.code) \(r.message)")
        }

        // HTTP: 429 with Retry-After in seconds.
        let port = try #require(server.server.gateway?.boundPort)
        let path = "/tiles/fleet-1/256/14/8298/5636.png"
        #expect(try RawHTTP.request(port: port, "GET", path, headers: [("Authorization", "Bearer \(slowHTTP)")]).status == 200)
        let limited = try RawHTTP.request(port: port, "GET", path, headers: [("Authorization", "Bearer \(slowHTTP)")])
        #expect(limited.status == 429 && (Int(limited.header("Retry-After") ?? "") ?? 0) > 990)
    }
}

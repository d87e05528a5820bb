import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdServer
import MarkerdService
import MarkerdTransport
import MarkerdTestSupport
import Testing

@Suite("RPC over real NNG sockets")
struct RPCIntegrationTests {
    @Test("create, upsert, get, remove over inproc://, ipc:// and tcp://", arguments: [TestServer.Transport.inproc, .ipc, .tcp])
    func basicFlow(transport: TestServer.Transport) throws {
        let s = try TestServer(transport)
        defer { s.stop() }
        let c = try s.client()
        let layer = try createLayer(c, "cities")
        #expect(layer.id == "cities")
        #expect(layer.options?.tiling?.minMarkerCount == 2000)
        #expect(layer.options?.tiling?.tileSize == 256)
        #expect(layer.mode == .native)

        let markers = (0..<50).map { i in
            marker("m\(i)", 35 + Double(i) * 0.01, 139 + Double(i) * 0.01) { m in
                if i == 1 { m.attributes = ["name": "Tokyo", "kind": "city"] }
                if i == 2 { var p = V1.DefaultPin(); p.label = "B"; p.fillColor = 0xFF00_FF00; m.icon = .pin(p) }
                if i == 3 { m.draggable = true; m.zIndex = 7; m.extra = [1, 2, 3] }
            }
        }
        let up = try c.upsertMarkers("cities", markers)
        #expect(up.createdCount == 50 && up.updatedCount == 0)
        #expect(up.layerVersion > 0)

        let got = try c.getMarkers("cities", ids: ["m1", "m2", "m3", "nope"])
        try #require(got.markers.map(\.id) == ["m1", "m2", "m3"])
        #expect(got.missingIDs == ["nope"])
        let m1 = got.markers[0]
        #expect(m1.attributes == ["name": "Tokyo", "kind": "city"])
        #expect(abs((m1.position?.latitude ?? 0) - 35.01) < 1e-6)
        #expect(m1.clickable == true && m1.visible == true && m1.draggable == false)
        guard case .pin(let defaultPin)? = m1.icon else { Issue.record("m1 has no pin"); return }
        #expect(defaultPin.fillColor == 0xFFFF_0000 && defaultPin.strokeColor == 0xFFFF_FFFF && defaultPin.scale == 1)
        #expect(m1.anchor?.x == 0.5 && m1.anchor?.y == 1.0)
        guard case .pin(let pin)? = got.markers[1].icon else { Issue.record("m2 has no pin"); return }
        #expect(pin.label == "B" && pin.fillColor == 0xFF00_FF00 && pin.labelSize == 18)
        #expect(got.markers[2].draggable == true && got.markers[2].zIndex == 7 && got.markers[2].extra == [1, 2, 3])

        let stats = try c.layerStats("cities")
        #expect(stats.markerCount == 50 && stats.liveMarkerCount == 1 && stats.staticMarkerCount == 49)

        let rm = try c.removeMarkers("cities", ids: ["m1", "m2", "nope"])
        #expect(rm.removedCount == 2 && rm.notFoundCount == 1)
        #expect(try c.layerStats("cities").markerCount == 48)

        #expect(try c.listLayers().map(\.id) == ["cities"])
        #expect(try c.clearLayer("cities").removedCount == 48)
        #expect(try c.deleteLayer("cities").removedCount == 0)
        #expect(statusCode { _ = try c.getLayer("cities") } == .notFound)
    }

    @Test("layers: duplicates, bad ids, bad options")
    func layerErrors() throws {
        let s = try TestServer()
        defer { s.stop() }
        let c = try s.client()
        _ = try createLayer(c, "a")
        #expect(statusCode { _ = try createLayer(c, "a") } == .alreadyExists)
        #expect(statusCode { _ = try createLayer(c, "") } == .invalidArgument)
        #expect(statusCode { _ = try createLayer(c, "bad id/with slash") } == .invalidArgument)
        var req = V1.CreateLayerRequest()
        req.layerID = "b"
        var t = V1.TilingOptions()
        t.tileSize = 300
        var o = V1.LayerOptions()
        o.tiling = t
        req.options = o
        #expect(statusCode { _ = try c.createLayer(req) } == .invalidArgument)
        #expect(statusCode { _ = try c.upsertMarkers("missing", [marker("x", 1, 1)]) } == .notFound)
        #expect(statusCode { _ = try c.deleteLayer("missing") } == .notFound)
    }

    @Test("UpdateMarkers over TCP: one label changes, the rest of the marker stays; a resend with the key applies nothing")
    func updateMarkers() throws {
        let s = try TestServer(.tcp)
        defer { s.stop() }
        let c = try s.client()
        _ = try createLayer(c, "l")
        _ = try c.upsertMarkers("l", [marker("a", 10, 20) { $0.attributes = ["name": "A"]; $0.zIndex = 4 }, marker("b", 11, 21)])
        let before = try c.getMarkers("l", ids: ["a", "b"]).markers
        let relabel = [V1.MarkerUpdate(id: "a", marker: V1.Marker(label: V1.MarkerLabel(text: "Alpha")), paths: ["label.text"])]
        let r = try c.updateMarkers("l", relabel, idempotencyKey: "relabel-a")
        #expect(r.updatedCount == 1)
        let after = try c.getMarkers("l", ids: ["a", "b"]).markers
        var expected = before[0]
        expected.label = V1.MarkerLabel(text: "Alpha")
        #expect(after[0] == expected && after[1] == before[1])
        #expect(try c.updateMarkers("l", relabel, idempotencyKey: "relabel-a") == r)
        #expect(try c.getLayer("l").version == r.layerVersion)
        let e = clientError { _ = try c.updateMarkers("l", [V1.MarkerUpdate(id: "a", marker: V1.Marker(), paths: ["label.font"])]) }
        #expect(e?.code == .invalidArgument && e?.fieldViolations.map(\.field) == ["updates[0].paths[0]"])
        #expect(statusCode { _ = try c.updateMarkers("l", [V1.MarkerUpdate(id: "zz", marker: V1.Marker(), paths: ["z_index"])]) } == .notFound)
    }

    @Test("bad markers reject the whole batch, leave the layer unchanged and name the field at fault")
    func badMarkers() throws {
        let s = try TestServer()
        defer { s.stop() }
        let c = try s.client()
        _ = try createLayer(c, "l")
        _ = try c.upsertMarkers("l", [marker("keep", 10, 10)])
        let before = try c.layerStats("l")

        func rejected(_ markers: [V1.Marker], mentions: [String], field: String) throws {
            if let e = clientError({ _ = try c.upsertMarkers("l", markers) }) {
                #expect(e.code == .invalidArgument)
                for word in mentions { #expect(e.description.contains(word), "\(e) should mention \(word)") }
                #expect(e.fieldViolations.map(\.field) == [field], "\(e)")
                #expect(e.fieldViolations.first?.description == e.description.dropFirst("INVALID_ARGUMENT: ".count).description)
            } else {
                Issue.record("batch was accepted: \(markers.map(\.id))")
            }
            let after = try c.layerStats("l")
            #expect(after.markerCount == before.markerCount && after.version == before.version)
        }
        try rejected([marker("ok", 1, 1), marker("nan", .nan, 1)], mentions: ["nan", "latitude"], field: "markers[1].position.latitude")
        try rejected([marker("ok", 1, 1), marker("ok2", 2, 2), marker("north", 85.1, 1)], mentions: ["north", "latitude"],
                     field: "markers[2].position.latitude")
        try rejected([marker("ok", 1, 1), marker("east", 1, 180.5)], mentions: ["east", "longitude"], field: "markers[1].position.longitude")
        try rejected([marker("ok", 1, 1), marker("inf", 1, .infinity)], mentions: ["inf", "longitude"], field: "markers[1].position.longitude")
        try rejected([marker("dup", 1, 1), marker("dup", 2, 2)], mentions: ["dup", "more than once"], field: "markers[1].id")
        try rejected([marker("", 1, 1)], mentions: ["id"], field: "markers[0].id")
        try rejected([marker(String(repeating: "x", count: 257), 1, 1)], mentions: ["id"], field: "markers[0].id")
        try rejected([marker("icon", 1, 1) { $0.icon = .iconID("nope") }], mentions: ["icon", "nope", "not registered"], field: "markers[0].icon_id")
        try rejected([marker("nopos", 1, 1) { $0.position = nil }], mentions: ["nopos", "position"], field: "markers[0].position")
        try rejected([marker("scale", 1, 1) { var p = V1.DefaultPin(); p.scale = -1; $0.icon = .pin(p) }], mentions: ["scale"],
                     field: "markers[0].pin.scale")
        try rejected([marker("a\")\".position", 91, 1)], mentions: ["latitude"], field: "markers[0].position.latitude")
        // Every field checked: nothing of "ok" was applied by the rejected batches.
        #expect(try c.getMarkers("l", ids: ["ok"]).missingIDs == ["ok"])
    }

    @Test("icons: PNG validated, size kept, ids immutable, markers may use them")
    func icons() throws {
        let s = try TestServer()
        defer { s.stop() }
        let c = try s.client()
        var req = V1.RegisterIconRequest()
        req.iconID = "dot"
        req.png = onePixelPNG
        let r = try c.registerIcon(req)
        #expect(r.width == 1 && r.height == 1)
        #expect(try c.registerIcon(req).iconID == "dot")  // same bytes again: fine
        var other = req
        other.png = onePixelPNG + [0]
        #expect(statusCode { _ = try c.registerIcon(other) } == .alreadyExists)
        var notPNG = V1.RegisterIconRequest()
        notPNG.iconID = "junk"
        notPNG.png = Array("GIF89a not a png".utf8)
        #expect(statusCode { _ = try c.registerIcon(notPNG) } == .invalidArgument)
        var truncated = V1.RegisterIconRequest()
        truncated.iconID = "half"
        truncated.png = Array(onePixelPNG.prefix(40))
        #expect(statusCode { _ = try c.registerIcon(truncated) } == .invalidArgument)
        var huge = V1.RegisterIconRequest()
        huge.iconID = "huge"
        huge.png = [UInt8](repeating: 0, count: (1 << 20) + 1)
        #expect(statusCode { _ = try c.registerIcon(huge) } == .invalidArgument)

        _ = try createLayer(c, "l")
        _ = try c.upsertMarkers("l", [marker("a", 1, 1) { $0.icon = .iconID("dot") }])
        let a = try #require(try c.getMarkers("l", ids: ["a"]).markers.first)
        #expect(a.icon == .iconID("dot"))
        #expect(a.anchor?.x == 0.5 && a.anchor?.y == 0.5)
    }

    @Test("malformed envelopes and payloads, unknown methods: error replies, no crash")
    func malformedInput() throws {
        let s = try TestServer(.tcp)
        defer { s.stop() }
        let raw = try NNGRequestClient(url: s.url)
        defer { raw.close() }
        func send(_ bytes: [UInt8]) throws -> V1.Response {
            try V1.Response(serializedBytes: try raw.call(bytes, timeout: .seconds(10)))
        }
        // Truncated protobuf envelope.
        var env = V1.Request()
        env.method = "/markerd.v1.MarkerService/ListLayers"
        env.requestID = 9
        let good = env.serializedBytes()
        #expect(try send(Array(good.prefix(good.count - 3))).code == .invalidArgument)
        #expect(try send([0xFF, 0xFF, 0xFF]).code == .invalidArgument)
        // Unknown method.
        env.method = "/markerd.v1.MarkerService/Nope"
        let unknown = try send(env.serializedBytes())
        #expect(unknown.code == .unimplemented && unknown.requestID == 9)
        // Truncated payload inside a good envelope.
        var up = V1.UpsertMarkersRequest()
        up.layerID = "l"
        up.markers = [marker("a", 1, 1)]
        env.method = "/markerd.v1.MarkerService/UpsertMarkers"
        env.idempotencyKey = "k1"
        env.payload = Array(up.serializedBytes().dropLast(4))
        let bad = try send(env.serializedBytes())
        #expect(bad.code == .invalidArgument, "\(bad.message)")
        // Seeded random junk never crashes the server.
        var rng = SplitMix64(seed: testSeed("malformedInput"))
        for _ in 0..<300 {
            var bytes = good
            for _ in 0..<Int(rng.next() % 4 + 1) {
                bytes[Int(rng.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: rng.next())
            }
            if rng.next() % 3 == 0 { bytes = bytes.prefix(Int(rng.next() % UInt64(bytes.count))).map { $0 } }
            _ = try raw.call(bytes, timeout: .seconds(10))  // any reply is fine; a crash or hang is not
        }
        let c = try s.client()
        #expect(try c.listLayers().isEmpty)
    }

    @Test("a request over --max-message-bytes drops that connection; the server keeps serving")
    func oversize() throws {
        let s = try TestServer(.tcp) { $0.maxMessageBytes = 64 << 10 }
        defer { s.stop() }
        let big = try MarkerdClient(url: s.url, timeout: .seconds(2))
        _ = try createLayer(big, "l")
        let markers = (0..<5_000).map { marker("m\($0)-padding-padding-padding", 1, 1) }
        #expect(statusCode { _ = try big.upsertMarkers("l", markers) } == .unavailable)
        let other = try s.client()
        #expect(try other.layerStats("l").markerCount == 0)
        _ = try other.upsertMarkers("l", [marker("small", 1, 1)])
        #expect(try other.layerStats("l").markerCount == 1)
    }

    @Test("idempotency keys: a repeat returns the first reply and applies nothing")
    func idempotency() throws {
        let s = try TestServer()
        defer { s.stop() }
        let c = try s.client()
        _ = try createLayer(c, "l", minMarkerCount: 10)
        let first = try c.upsertMarkers("l", [marker("a", 1, 1)], idempotencyKey: "key-1")
        _ = try c.moveMarkers("l", [move("a", 2, 2)])
        let again = try c.upsertMarkers("l", [marker("a", 1, 1)], idempotencyKey: "key-1")
        #expect(again == first)
        #expect(try c.getMarkers("l", ids: ["a"]).markers.first?.position?.latitude == 2)  // not moved back
        #expect(statusCode { _ = try c.upsertMarkers("l", [marker("b", 1, 1)], idempotencyKey: "key-1") } == .invalidArgument)
        #expect(statusCode { _ = try c.upsertMarkers("l", [marker("b", 1, 1)], idempotencyKey: "") } == .invalidArgument)
        // A failed mutation forgets its key: a corrected retry with the same key applies.
        #expect(statusCode { _ = try c.upsertMarkers("nope", [marker("b", 1, 1)], idempotencyKey: "key-2") } == .notFound)
        _ = try createLayer(c, "nope")
        #expect(try c.upsertMarkers("nope", [marker("b", 1, 1)], idempotencyKey: "key-2").createdCount == 1)
    }

    @Test("an expired timeout_ms is DEADLINE_EXCEEDED and applies nothing")
    func deadline() throws {
        let service = MarkerService()
        let dispatcher = RPCDispatcher(service: service)
        func call(_ method: String, _ payload: [UInt8], key: String = "", timeoutMs: UInt32, receivedAgo: Duration) -> V1.Response {
            var env = V1.Request()
            env.method = "/markerd.v1.MarkerService/" + method
            env.idempotencyKey = key
            env.timeoutMs = timeoutMs
            env.payload = payload
            let bytes = env.serializedBytes()
            let box = ResponseBox()
            bytes.withUnsafeBytes { raw in
                dispatcher.handle(body: raw, receivedAt: .now - receivedAgo) { box.set($0) }
            }
            return box.wait()
        }
        var create = V1.CreateLayerRequest()
        create.layerID = "l"
        #expect(call("CreateLayer", create.serializedBytes(), key: "c1", timeoutMs: 50, receivedAgo: .milliseconds(200)).code == .deadlineExceeded)
        #expect(try V1.ListLayersResponse(serializedBytes: call("ListLayers", V1.ListLayersRequest().serializedBytes(), timeoutMs: 0, receivedAgo: .seconds(5)).payload).layers.isEmpty)
        #expect(call("CreateLayer", create.serializedBytes(), key: "c1", timeoutMs: 5_000, receivedAgo: .milliseconds(200)).code == .ok)
    }

    @Test("concurrent readers and writers on many layers")
    func concurrency() throws {
        let s = try TestServer(.tcp) { $0.contexts = 16 }
        defer { s.stop() }
        let c = try s.client()
        let layers = 4, writersPerLayer = 3, batches = 10, batchSize = 200
        for l in 0..<layers { _ = try createLayer(c, "layer\(l)") }
        let errors = ErrorBox()
        DispatchQueue.concurrentPerform(iterations: layers * writersPerLayer + 4) { worker in
            do {
                if worker < layers * writersPerLayer {
                    let layer = "layer\(worker % layers)"
                    for b in 0..<batches {
                        let ms = (0..<batchSize).map { i in marker("w\(worker)-b\(b)-\(i)", Double(i % 80), Double(b)) }
                        _ = try c.upsertMarkers(layer, ms)
                    }
                } else {
                    for _ in 0..<50 {
                        for l in 0..<layers { _ = try c.layerStats("layer\(l)") }
                    }
                }
            } catch {
                errors.add("\(error)")
            }
        }
        #expect(errors.all.isEmpty, "\(errors.all)")
        for l in 0..<layers {
            #expect(try c.layerStats("layer\(l)").markerCount == UInt64(writersPerLayer * batches * batchSize))
        }
    }
}


final class ResponseBox: @unchecked Sendable {
    private let cond = NSCondition()
    private var value: V1.Response?
    func set(_ r: V1.Response) { cond.lock(); value = r; cond.broadcast(); cond.unlock() }
    func wait() -> V1.Response {
        cond.lock()
        defer { cond.unlock() }
        while value == nil { cond.wait() }
        return value!
    }
}

final class ErrorBox: @unchecked Sendable {
    private let lock = NSLock()
    private var errors: [String] = []
    func add(_ e: String) { lock.lock(); errors.append(e); lock.unlock() }
    var all: [String] { lock.lock(); defer { lock.unlock() }; return errors }
}


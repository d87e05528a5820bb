import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdService
import MarkerdTestSupport
import MarkerdTransport
import Testing

/// A structure-aware fuzz test of every RPC method against a real markerd process over TCP.
///
/// Requests are generated from the API's own schema (`ProtoSchema`, read from the descriptors
/// protobuf-c generated from Protos/), so every method and every field is covered, new ones
/// included. Values come from edge sets (NaN, infinities, +-1e308, subnormals, max integers,
/// empty and huge strings, bad UTF-8, unknown enum values), mixed with valid ones and with the
/// ids of real layers, markers, drags and clusters so that requests reach past the first check;
/// some payloads and envelopes are then damaged byte by byte.
///
/// Asserted for every request: a reply comes (the server is alive), it is a decodable Response
/// for this request with a documented status (never INTERNAL, UNKNOWN, UNAVAILABLE, DATA_LOSS),
/// and a failed mutation changes no layer's version or marker count.
///
/// `FUZZ_REQUESTS` sets the count (default 12,000); `SEED=N` replays, `SEED=random` explores
/// (`scripts/fuzz-nightly.sh` runs long random rounds). A crash found is kept as a test of its own.
@Suite(.serialized) struct RPCFuzzTests {
    @Test func everyMethodAnswersEveryRequestWithADocumentedStatus() throws {
        let count = ProcessInfo.processInfo.environment["FUZZ_REQUESTS"].flatMap { Int($0) } ?? 12_000
        let run = try Self.fuzz(seed: testSeed(), count: count)
        #expect(run.failures.isEmpty, "\(run.failures.joined(separator: "\n"))")
        // The fuzzer must reach past the first checks: many calls succeed, and most methods do.
        #expect(run.codes[.ok, default: 0] > count / 10, "statuses: \(run.codes.map { "\($0.key.name) \($0.value)" })")
        let unanswered = Set(ProtoSchema.methods.map(\.name)).subtracting(run.methodsAnsweredOK)
        #expect(unanswered.count <= ProtoSchema.methods.count / 4, "methods never answered OK: \(unanswered.sorted())")
    }

    /// Replays every seed in fuzz-regressions.txt (beside this file): runs that once found a defect
    /// (`scripts/fuzz-nightly.sh` adds the seeds it fails at).
    @Test func savedFailingSeedsPass() throws {
        let file = URL(fileURLWithPath: #filePath).deletingLastPathComponent().appendingPathComponent("fuzz-regressions.txt")
        let lines = try String(contentsOf: file, encoding: .utf8).split(separator: "\n")
        let runs = lines.compactMap { line -> (UInt64, Int)? in
            let words = line.split(separator: " ")
            guard words.count >= 2, let seed = UInt64(words[0]), let count = Int(words[1]) else { return nil }
            return (seed, count)
        }
        for (seed, count) in runs {
            let run = try Self.fuzz(seed: seed, count: count)
            #expect(run.failures.isEmpty, "SEED=\(seed) FUZZ_REQUESTS=\(count): \(run.failures.joined(separator: "\n"))")
        }
    }

    struct Run {
        var failures: [String] = []
        var codes: [V1.Code: Int] = [:]
        var methodsAnsweredOK: Set<String> = []
    }

    /// `count` calls of the fuzzer at `seed` against a fresh markerd process; stops at 5 failures.
    static func fuzz(seed: UInt64, count: Int) throws -> Run {
        var fuzz = RPCFuzzer(seed: seed)
        let dir = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let server = try MarkerdProcess(arguments: ["--data-dir", dir, "--fsync", "everysec",
                                                    "--snapshot-every-bytes", "262144", "--contexts", "4"])
        defer { server.kill(SIGKILL); _ = server.waitForExit(timeout: 10) }
        let client = try server.waitUntilReady()
        let raw = try NNGRequestClient(configuration: ClientConfiguration(url: server.url, maxMessageBytes: 256 << 20))
        defer { raw.close() }
        for layer in RPCFuzzer.Fixture.allCases { try layer.create(client) }

        var run = Run()
        for i in 0..<count where run.failures.count < 5 {
            let call = fuzz.nextCall()
            let before = call.isMutation ? try RPCFuzzer.fingerprint(client, layer: call.layerID) : nil
            let replyBytes: [UInt8]
            do {
                replyBytes = try raw.call(call.envelope, timeout: .seconds(20))
            } catch {
                let alive = server.process.isRunning ? "still running" : "exited: \(server.stderrText().suffix(2000))"
                run.failures.append("#\(i) \(call.summary): no reply (\(error)); markerd \(alive)")
                break
            }
            guard let reply = try? V1.Response(serializedBytes: replyBytes) else {
                run.failures.append("#\(i) \(call.summary): undecodable reply of \(replyBytes.count) bytes"); continue
            }
            run.codes[reply.code, default: 0] += 1
            if let id = call.requestID, reply.requestID != id {
                run.failures.append("#\(i) \(call.summary): reply to request \(reply.requestID)")
            }
            if !RPCFuzzer.documented.contains(reply.code) {
                run.failures.append("#\(i) \(call.summary): \(reply.code.name) \(reply.message.prefix(300))")
            }
            if reply.code == .ok {
                fuzz.learn(from: reply.payload, of: call)
                if call.method == "DeleteLayer" || call.method == "ClearLayer" { try RPCFuzzer.Fixture.restore(client) }
            } else if let before {
                let after = try RPCFuzzer.fingerprint(client, layer: call.layerID)
                if after != before {
                    run.failures.append("#\(i) \(call.summary): failed with \(reply.code.name) yet changed the layers")
                }
            }
        }
        if !server.process.isRunning { run.failures.append("markerd exited: \(server.stderrText().suffix(2000))") }
        run.methodsAnsweredOK = fuzz.methodsAnsweredOK
        return run
    }
}

/// Generates the fuzz test's calls from the API schema; deterministic for a seed.
struct RPCFuzzer {
    /// The statuses the API documents for a bad or unlucky request. A reply with any other
    /// (INTERNAL, UNKNOWN, UNAVAILABLE, DATA_LOSS, ...) is a defect.
    static let documented: Set<V1.Code> = [.ok, .invalidArgument, .notFound, .alreadyExists, .failedPrecondition,
                                          .outOfRange, .unimplemented, .deadlineExceeded, .resourceExhausted, .aborted]

    /// The layers the calls aim at, re-created whenever a call deletes or clears one.
    enum Fixture: String, CaseIterable {
        case grid = "fz-grid", supercluster = "fz-super", native = "fz-native", empty = "fz-empty"

        func create(_ client: MarkerdClient) throws {
            var req = V1.CreateLayerRequest()
            req.layerID = rawValue
            var options = V1.LayerOptions()
            var tiling = V1.TilingOptions()
            tiling.minMarkerCount = self == .native ? 2000 : 50
            options.tiling = tiling
            if self == .grid || self == .supercluster {
                var c = V1.ClusteringOptions()
                c.enabled = true
                c.raster = self == .grid
                c.algorithm = self == .grid ? .grid : .supercluster
                options.clustering = c
            }
            req.options = options
            _ = try client.createLayer(req)
            try fill(client)
        }

        /// Re-creates deleted fixtures and refills emptied ones.
        static func restore(_ client: MarkerdClient) throws {
            let layers = Dictionary(try client.listLayers().map { ($0.id, $0.markerCount) }, uniquingKeysWith: { a, _ in a })
            for f in allCases {
                if let n = layers[f.rawValue] { if n == 0 { try f.fill(client) } } else { try f.create(client) }
            }
        }

        func fill(_ client: MarkerdClient) throws {
            guard self != .empty else { return }
            var rng = SplitMix64(seed: UInt64(rawValue.utf8.count))
            let markers = (0..<RPCFuzzer.markerIDs.count).map { i in
                marker(RPCFuzzer.markerIDs[i], rng.unit() * 170 - 85, rng.unit() * 360 - 180) { m in
                    m.draggable = i % 7 == 0
                    m.zIndex = Int32(i % 3)
                    if i % 11 == 0 { m.attributes = ["name": "名前 \(i)", "kind": "fixture"] }
                }
            }
            _ = try client.upsertMarkers(rawValue, markers)
        }
    }

    static let markerIDs = (0..<150).map { "m\($0)" }

    /// Every layer's marker count, and the positions and z-indexes of the fixture markers of the
    /// layer a call names, to check that a failed call changed nothing. (Not the version: a query
    /// may raise it when animations end.)
    static func fingerprint(_ client: MarkerdClient, layer: String?) throws -> [String: [Double]] {
        var out: [String: [Double]] = [:]
        for l in try client.listLayers() {
            out[l.id] = [Double(l.markerCount)]
            if l.id == layer {
                out[l.id]! += try client.getMarkers(l.id, ids: markerIDs).markers.flatMap {
                    [$0.position?.latitude ?? -999, $0.position?.longitude ?? -999, Double($0.zIndex)]
                }
            }
        }
        return out
    }

    struct Call {
        var method: String
        var envelope: [UInt8]
        var requestID: UInt64?
        var layerID: String?
        var isMutation: Bool
        var summary: String
    }

    var rng: SplitMix64
    let methods = ProtoSchema.methods
    var dragIDs: [String] = []
    var clusterIDs: [UInt64] = [1, 2]
    var pageTokens: [String] = []
    var usedKeys: [String] = []
    var methodsAnsweredOK: Set<String> = []
    static let mutations: Set<String> = ["CreateLayer", "DeleteLayer", "RegisterIcon", "UpsertMarkers", "RemoveMarkers",
                                         "ClearLayer", "MoveMarkers", "BeginDrag", "EndDrag", "CancelDrag"]

    init(seed: UInt64) { rng = SplitMix64(seed: seed) }

    mutating func chance(_ p: Double) -> Bool { rng.unit() < p }
    mutating func pick<T>(_ a: [T]) -> T { a[Int(rng.next() % UInt64(a.count))] }

    mutating func nextCall() -> Call {
        let m = pick(methods)
        var w = ProtoWriter()
        let layerID = message(m.request, depth: 0, into: &w)
        var payload = w.bytes
        if chance(0.08) { damage(&payload) }
        var env = ProtoWriter()
        var requestID: UInt64? = rng.next()
        var method = m.path
        if chance(0.02) { method = pick(["", "/markerd.v1.MarkerService/", m.name, m.path + "X", "/markerd.v2.MarkerService/\(m.name)"]) }
        env.string(1, method)
        env.varint(2, requestID!)
        let isMutation = Self.mutations.contains(m.name)
        if isMutation || chance(0.05) {
            var key = String(rng.next(), radix: 36)
            if chance(0.05) { key = String(repeating: "k", count: pick([128, 129, 4096])) }
            if chance(0.05), !usedKeys.isEmpty { key = pick(usedKeys) }  // a resend, or a conflict
            if !chance(0.03) { env.string(3, key) }
            usedKeys.append(key)
            if usedKeys.count > 64 { usedKeys.removeFirst() }
        }
        if chance(0.05) { env.varint(4, pick([1, 1000, UInt64(UInt32.max)])) }
        if chance(0.05) { env.string(5, pick(["", "token", String(repeating: "t", count: 10_000)])) }
        env.bytes(6, payload)
        var envelope = env.bytes
        if chance(0.01) {
            damage(&envelope)
            requestID = nil
        }
        return Call(method: m.name, envelope: envelope, requestID: requestID, layerID: layerID, isMutation: isMutation,
                    summary: "\(m.name) payload \(Self.hex(payload.prefix(96)))")
    }

    /// Remembers the ids an OK reply hands out (drags, clusters, page tokens).
    mutating func learn(from payload: [UInt8], of call: Call) {
        methodsAnsweredOK.insert(call.method)
        switch call.method {
        case "BeginDrag":
            if let r = try? V1.BeginDragResponse(serializedBytes: payload) { dragIDs.append(r.dragID) }
        case "GetClusters":
            if let r = try? V1.GetClustersResponse(serializedBytes: payload) { clusterIDs += r.clusters.prefix(4).map(\.id) }
        case "QueryViewport":
            if let r = try? V1.QueryViewportResponse(serializedBytes: payload), !r.nextPageToken.isEmpty {
                pageTokens.append(r.nextPageToken)
            }
        default: break
        }
        if dragIDs.count > 32 { dragIDs.removeFirst(dragIDs.count - 32) }
        if clusterIDs.count > 64 { clusterIDs.removeFirst(clusterIDs.count - 64) }
        if pageTokens.count > 16 { pageTokens.removeFirst() }
    }

    /// Writes a random instance of `message`; returns its `layer_id` if it set one.
    @discardableResult
    mutating func message(_ message: ProtoSchema.Message, depth: Int, into w: inout ProtoWriter) -> String? {
        var layerID: String?
        for f in message.fields {
            guard chance(f.isRepeated ? 0.6 : 0.8) else { continue }
            let n = f.isRepeated ? pick([1, 1, 2, 3, 8, depth == 0 ? 200 : 2]) : 1
            for _ in 0..<n {
                switch f.type {
                case .double: w.fixed64(f.number, double(f.name).bitPattern)
                case .float: w.fixed32(f.number, Float(double(f.name)).bitPattern)
                case .bool: w.varint(f.number, chance(0.1) ? pick([2, UInt64.max]) : rng.next() & 1)
                case .uint32, .fixed32:
                    let v = UInt64(truncatingIfNeeded: unsigned(f.name)) & 0xFFFF_FFFF
                    if f.type == .fixed32 { w.fixed32(f.number, UInt32(v)) } else { w.varint(f.number, v) }
                case .uint64, .fixed64:
                    let v = f.name.hasSuffix("cluster_id") && chance(0.7) ? pick(clusterIDs) : unsigned(f.name)
                    if f.type == .fixed64 { w.fixed64(f.number, v) } else { w.varint(f.number, v) }
                case .int32, .int64, .sint32, .sint64, .sfixed32, .sfixed64:
                    let v: Int64 = chance(0.5) ? Int64(rng.next() % 2000) - 1000
                        : pick([0, -1, Int64(Int32.min), Int64(Int32.max), Int64.min, Int64.max])
                    switch f.type {
                    case .sint32, .sint64: w.varint(f.number, UInt64(bitPattern: (v << 1) ^ (v >> 63)))
                    case .sfixed32: w.fixed32(f.number, UInt32(truncatingIfNeeded: v))
                    case .sfixed64: w.fixed64(f.number, UInt64(bitPattern: v))
                    default: w.varint(f.number, UInt64(bitPattern: f.type == .int32 ? Int64(Int32(truncatingIfNeeded: v)) : v))
                    }
                case .enumeration(let values):
                    let v = chance(0.9) ? Int64(pick(values)) : pick([-1, 99, Int64(Int32.max)])
                    w.varint(f.number, UInt64(bitPattern: v))
                case .string:
                    let s = string(f.name)
                    if f.name == "layer_id" { layerID = s }
                    if chance(0.03) { w.bytes(f.number, pick([[0xFF, 0xFE], [0xC3], [0x61, 0xED, 0xA0, 0x80], [0]])) }
                    else { w.string(f.number, s) }
                case .bytes:
                    var b = chance(0.6) ? onePixelPNG : Array((0..<Int(rng.next() % 64)).map { _ in UInt8(truncatingIfNeeded: rng.next()) })
                    if chance(0.3) { damage(&b) }
                    w.bytes(f.number, b)
                case .message(let nested):
                    guard depth < 4 else { continue }
                    var inner = ProtoWriter()
                    self.message(nested, depth: depth + 1, into: &inner)
                    w.bytes(f.number, inner.bytes)
                }
            }
        }
        return layerID
    }

    static let edgeDoubles: [Double] = [.nan, -.nan, .infinity, -.infinity, 1e308, -1e308, .greatestFiniteMagnitude,
                                        .leastNonzeroMagnitude, -.leastNonzeroMagnitude, 0, -0.0, 1e-300,
                                        90, -90, 90.000001, 180, -180, 180.000001, 85.05112878, -85.06, 360, -540,
                                        22, 22.5, 23, 4096, 4_294_967_296, -1, 0.5, 1e19, -1e19]

    mutating func double(_ name: String) -> Double {
        if chance(0.35) { return pick(Self.edgeDoubles) }
        switch name {
        case "latitude", "south", "north": return rng.unit() * 170 - 85
        case "longitude", "west", "east": return rng.unit() * 360 - 180
        case "zoom": return Double(rng.next() % 23) + (chance(0.5) ? 0 : rng.unit())
        case "x", "y": return rng.unit()
        default: return rng.unit() * 100
        }
    }

    mutating func unsigned(_ name: String) -> UInt64 {
        if chance(0.3) {
            return pick([0, 1, 2, 3, 255, 256, 511, 512, 513, 4096, 4097, 100_000, 100_001, UInt64(Int32.max),
                         UInt64(UInt32.max), UInt64(Int64.max), UInt64.max])
        }
        switch name {
        case "z", "zoom", "max_zoom": return rng.next() % 24
        case "x", "y": return rng.next() % 64
        case "tile_size": return pick([0, 256, 512])
        case "density": return rng.next() % 4
        case "width", "height": return rng.next() % 600
        default: return rng.next() % 1000
        }
    }

    mutating func string(_ name: String) -> String {
        let edge = ["", " ", "a", "東京", "القاهرة", "\u{0}", "%00", "../x", String(repeating: "x", count: 129),
                    String(repeating: "é", count: 20_000)]
        if chance(0.15) { return pick(edge) }
        switch name {
        case "layer_id": return chance(0.9) ? pick(Fixture.allCases).rawValue : "fz-new-\(rng.next() % 4)"
        case "id", "ids", "marker_id", "missing_ids": return chance(0.9) ? pick(Self.markerIDs) : "new-\(rng.next() % 50)"
        case "drag_id": return dragIDs.isEmpty || chance(0.1) ? "drag-\(rng.next() % 9)" : pick(dragIDs)
        case "paths": return chance(0.9) ? pick(MarkerService.updatablePaths) : "label.font"
        case "page_token": return pageTokens.isEmpty || chance(0.3) ? "tok\(rng.next() % 9)" : pick(pageTokens)
        case "icon_id": return pick(["pin", "icon-a", "icon-b"])
        case "key": return pick(["name", "kind", "population"])
        default: return "v\(rng.next() % 100)"
        }
    }

    /// Flips bits, truncates or splices random bytes.
    mutating func damage(_ b: inout [UInt8]) {
        for _ in 0..<(1 + Int(rng.next() % 4)) {
            switch rng.next() % 4 {
            case 0 where !b.isEmpty: b[Int(rng.next() % UInt64(b.count))] ^= UInt8(1 << (rng.next() % 8))
            case 1 where !b.isEmpty: b.removeLast(Int(rng.next() % UInt64(b.count)))
            case 2: b.insert(contentsOf: (0..<Int(1 + rng.next() % 8)).map { _ in UInt8(truncatingIfNeeded: rng.next()) },
                             at: b.isEmpty ? 0 : Int(rng.next() % UInt64(b.count)))
            default: b += [0xFF, 0xFF, 0xFF, 0xFF, 0x0F]  // an over-long varint field
            }
        }
    }

    static func hex<C: Collection>(_ b: C) -> String where C.Element == UInt8 {
        b.map { String($0, radix: 16) }.joined(separator: " ")
    }
}

/// Writes protobuf fields, valid or not, for the fuzzer.
struct ProtoWriter {
    var bytes: [UInt8] = []

    mutating func rawVarint(_ v: UInt64) {
        var v = v
        while v >= 0x80 { bytes.append(UInt8(v & 0x7F) | 0x80); v >>= 7 }
        bytes.append(UInt8(v))
    }
    mutating func tag(_ number: UInt32, _ wireType: UInt64) { rawVarint(UInt64(number) << 3 | wireType) }
    mutating func varint(_ number: UInt32, _ v: UInt64) { tag(number, 0); rawVarint(v) }
    mutating func fixed64(_ number: UInt32, _ v: UInt64) {
        tag(number, 1)
        for i in 0..<8 { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * UInt64(i)))) }
    }
    mutating func fixed32(_ number: UInt32, _ v: UInt32) {
        tag(number, 5)
        for i in 0..<4 { bytes.append(UInt8(truncatingIfNeeded: v >> (8 * UInt32(i)))) }
    }
    mutating func bytes(_ number: UInt32, _ b: [UInt8]) { tag(number, 2); rawVarint(UInt64(b.count)); bytes += b }
    mutating func string(_ number: UInt32, _ s: String) { bytes(number, Array(s.utf8)) }
}

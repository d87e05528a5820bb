import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdServer
import MarkerdTestSupport
import MarkerdTransport
import Synchronization
import Testing

/// Receives a feed topic on a background thread (a real SUB socket over tcp).
final class FeedCollector: Sendable {
    let socket: NNGSubscriber
    let events = Mutex<[V1.ChangeEvent]>([])

    init(url: String, topics: [String]) throws {
        socket = try NNGSubscriber(url: url, topics: topics.map { Array($0.utf8) }, receiveTimeout: .seconds(30))
        let thread = Thread { [self] in
            while let bytes = try? socket.receive() {
                guard let slash = bytes.indices.dropFirst(6).first(where: { bytes[$0] == UInt8(ascii: "/") }),
                      let feed = try? V1.FeedEvent(serializedBytes: Array(bytes[(slash + 1)...])),
                      case .change(let event) = feed.event else { continue }
                events.withLock { $0.append(event) }
            }
        }
        thread.start()
    }

    var received: [V1.ChangeEvent] { events.withLock { $0 } }

    /// Upserts a probe marker into `layer` until an event of it arrives (a SUB socket connects
    /// in the background; events before it connects are not delivered): returns the probe's version.
    func awaitConnected(_ client: MarkerdClient, layer: String) throws -> UInt64 {
        var version: UInt64 = 0
        try waitUntil("the subscriber receives events") {
            version = try client.upsertMarkers(layer, [marker("probe", 0, 0)]).layerVersion
            Thread.sleep(forTimeInterval: 0.02)
            return received.contains { $0.version == version && $0.layerID == layer }
        }
        return version
    }

    func close() { socket.close() }
}

func marker(_ id: String, _ lat: Double, _ lon: Double) -> V1.Marker {
    var m = V1.Marker()
    m.id = id
    m.position = V1.LatLng(latitude: lat, longitude: lon)
    return m
}

/// What an event says, to compare with what the replies say.
struct ChangeSummary: Equatable, CustomStringConvertible {
    var layer: String, version: UInt64, kind: V1.ChangeKind, ids: [String]
    init(_ e: V1.ChangeEvent) {
        layer = e.layerID; version = e.version; kind = e.kind
        ids = e.kind == .remove ? e.removedIDs : e.markers.map(\.id)
    }
    init(_ layer: String, _ version: UInt64, _ kind: V1.ChangeKind, _ ids: [String]) {
        self.layer = layer; self.version = version; self.kind = kind; self.ids = ids
    }
    var description: String { "\(layer)@\(version) \(kind) \(ids)" }
}

@Suite(.serialized) struct ChangeFeedTests {
    static func server(durable: Bool, historyCount: Int = 10_000) throws -> TestServer {
        try TestServer(.tcp, dataDirectory: durable ? TestServer.temporaryDirectory() : nil) {
            $0.publishURLs = ["tcp://127.0.0.1:0"]
            $0.changeHistoryCount = historyCount
        }
    }

    /// Random mutations on layers "a" and "ab" (failed ones among them); the events of topic
    /// "layer/a/" must be exactly the successful changes of "a", in order, as the replies say
    /// (the oracle), and replaying them onto a model must give the layer's markers.
    @Test(arguments: [false, true])
    func eventsFollowTheAppliedChangesInOrder(durable: Bool) throws {
        let server = try Self.server(durable: durable)
        defer { server.stop() }
        let client = try server.client()
        _ = try createLayer(client, "a")
        _ = try createLayer(client, "ab")
        let feed = try FeedCollector(url: try #require(server.server.publishURLs.first), topics: ["layer/a/"])
        defer { feed.close() }
        let start = try feed.awaitConnected(client, layer: "a")

        let seed = testSeed("ChangeFeedTests.eventsFollowTheAppliedChangesInOrder")
        var rng = SplitMix64(seed: seed)
        var model: [String: V1.LatLng] = ["probe": V1.LatLng(latitude: 0, longitude: 0)]
        var expected: [ChangeSummary] = []
        // Whole 1e-6 degrees: the server stores positions to 7 decimals, so these come back exactly.
        func randomPosition() -> (Double, Double) {
            (Double(Int(rng.unit() * 160e6) - 80_000_000) / 1e6, Double(Int(rng.unit() * 360e6) - 180_000_000) / 1e6)
        }
        for step in 0..<300 {
            let layer = rng.next() % 4 == 0 ? "ab" : "a"
            let ids = (0..<Int(1 + rng.next() % 4)).map { _ in "m\(rng.next() % 20)" }
            var unique: [String] = []
            for id in ids where !unique.contains(id) { unique.append(id) }
            switch rng.next() % 7 {
            case 0, 1:
                let markers = unique.map { id in let (la, lo) = randomPosition(); return marker(id, la, lo) }
                let r = try client.upsertMarkers(layer, markers)
                if layer == "a" {
                    for m in markers { model[m.id] = m.position }
                    expected.append(ChangeSummary("a", r.layerVersion, .upsert, unique))
                }
            case 2, 3:
                let moves = unique.map { id in
                    let (la, lo) = randomPosition()
                    return V1.MarkerMove(id: id, position: V1.LatLng(latitude: la, longitude: lo))
                }
                let r = try client.moveMarkers(layer, moves)
                let moved = moves.filter { !r.notFoundIDs.contains($0.id) }
                if layer == "a", !moved.isEmpty {
                    for m in moved { model[m.id] = m.position }
                    expected.append(ChangeSummary("a", r.layerVersion, .move, moved.map(\.id)))
                }
            case 4:
                let r = try client.removeMarkers(layer, ids: unique)
                if layer == "a", r.removedCount > 0 {
                    let removed = unique.filter { model[$0] != nil }
                    for id in removed { model[id] = nil }
                    expected.append(ChangeSummary("a", r.layerVersion, .remove, removed))
                }
            case 5:
                // Failed writes: an invalid position (nothing applied) and an unknown layer.
                #expect(statusCode { _ = try client.upsertMarkers(layer, [marker("bad\(step)", 91, 0)]) } == .invalidArgument)
                #expect(statusCode { _ = try client.moveMarkers("nope", [V1.MarkerMove(id: "m1", position: V1.LatLng(latitude: 1, longitude: 1))]) } == .notFound)
            default:
                if rng.next() % 8 == 0 {
                    let r = try client.clearLayer(layer)
                    if layer == "a" {
                        model.removeAll()
                        expected.append(ChangeSummary("a", r.layerVersion, .clear, []))
                    }
                }
            }
        }
        try waitUntil("every event arrived") { feed.received.last.map { $0.version >= (expected.last?.version ?? 0) } ?? false }
        let got = feed.received.filter { $0.version > start }
        #expect(mismatch(got.map(ChangeSummary.init), expected) == nil, "seed \(seed)")
        // previous_version chains the events (no gap for a subscriber that kept up).
        #expect(mismatch(got.dropFirst().map(\.previousVersion), got.dropLast().map(\.version)) == nil)

        // The events alone rebuild the layer.
        var rebuilt: [String: V1.LatLng] = ["probe": V1.LatLng(latitude: 0, longitude: 0)]
        for e in got {
            switch e.kind {
            case .clear: rebuilt.removeAll()
            case .remove: for id in e.removedIDs { rebuilt[id] = nil }
            default: for m in e.markers { rebuilt[m.id] = m.position }
            }
        }
        #expect(rebuilt == model)
        let listed = try client.listMarkers(V1.ListMarkersRequest(layerID: "a", pageSize: 1000, pageToken: ""))
        #expect(Dictionary(uniqueKeysWithValues: listed.markers.map { ($0.id, $0.position!) }) == model)
    }

    /// GetChanges pages through the changes after a version and answers FAILED_PRECONDITION,
    /// naming the oldest version held, once the history no longer reaches back to it.
    /// Fence events go out on the feed on their own topic, `fence/<layer>/<fence>/`.
    @Test func fenceEventsGoOutOnTheirOwnTopic() throws {
        let server = try Self.server(durable: true)
        defer { server.stop() }
        let client = try server.client()
        _ = try createLayer(client, "a")
        var fence = V1.Fence()
        fence.fenceID = "zone"
        fence.shape = .bounds(V1.Bounds(west: 0, south: 0, east: 1, north: 1))
        fence.detect = [.enter, .exit]
        let _: V1.CreateFenceResponse = try client.call("CreateFence", V1.CreateFenceRequest(layerID: "a", fence: fence),
                                                        idempotencyKey: MarkerdClient.newIdempotencyKey())
        let url = try #require(server.server.publishURLs.first)
        let socket = try NNGSubscriber(url: url, topics: [Array("fence/a/".utf8)], receiveTimeout: .milliseconds(100))
        defer { socket.close() }
        // The SUB socket connects in the background: the marker goes in and out until an event arrives.
        var message: [UInt8] = []
        var inside = false
        try waitUntil("a fence event arrives on fence/a/") {
            inside.toggle()
            _ = try client.upsertMarkers("a", [marker("m", inside ? 0.5 : 5, inside ? 0.5 : 5)])
            message = (try? socket.receive()) ?? []
            return !message.isEmpty
        }
        let topic = Array("fence/a/zone/".utf8)
        #expect(Array(message.prefix(topic.count)) == topic)
        let feed = try V1.FeedEvent(serializedBytes: Array(message.dropFirst(topic.count)))
        guard case .fence(let event) = feed.event else { Issue.record("not a fence event: \(feed)"); return }
        #expect(event.layerID == "a" && event.fenceID == "zone" && event.markerID == "m")
        let position = try #require(event.position)
        switch event.kind {
        case .enter: #expect(position.latitude == 0.5 && position.longitude == 0.5)
        case .exit: #expect(position.latitude == 5 && position.longitude == 5)
        default: Issue.record("unexpected kind \(event.kind)")
        }
    }

    @Test func getChangesPagesAndRefusesVersionsOlderThanItsHistory() throws {
        let server = try Self.server(durable: false, historyCount: 6)
        defer { server.stop() }
        let client = try server.client()
        let loaded = try createLayer(client, "g").version
        var versions: [UInt64] = []
        for i in 0..<4 { versions.append(try client.upsertMarkers("g", [marker("m\(i)", Double(i), 0)]).layerVersion) }
        versions.append(try client.moveMarkers("g", [V1.MarkerMove(id: "m0", position: V1.LatLng(latitude: 5, longitude: 5))]).layerVersion)
        versions.append(try client.removeMarkers("g", ids: ["m1"]).layerVersion)

        // Page size 1: one change per page, each complete up to its change.
        var request = V1.GetChangesRequest(layerID: "g", sinceVersion: loaded, pageSize: 1)
        var pages: [V1.GetChangesResponse] = []
        repeat {
            let page: V1.GetChangesResponse = try client.call("GetChanges", request)
            pages.append(page)
            request.pageToken = page.nextPageToken
        } while !request.pageToken.isEmpty
        let current = try client.getLayer("g").version
        #expect(pages.map(\.version) == Array(versions.dropLast()) + [current])
        #expect(pages.map { $0.markers.map(\.id) } == [["m0"], [], ["m2"], ["m3"], ["m0"], []])
        #expect(pages.map(\.removedIDs) == [[], ["m1"], [], [], [], ["m1"]])
        #expect(pages[0].markers.first?.position?.latitude == 5)  // the current state, not the first

        // One page: each id once; bounds move the markers outside them to removed_ids.
        let all: V1.GetChangesResponse = try client.call("GetChanges", V1.GetChangesRequest(
            layerID: "g", sinceVersion: versions[1], bounds: V1.Bounds(west: -1, south: -1, east: 1, north: 2.5)))
        #expect(all.markers.map(\.id) == ["m2"] && all.removedIDs == ["m3", "m0", "m1"])
        #expect(all.nextPageToken.isEmpty && all.version == current)

        // Two more changes push the first two out of a history of 6.
        versions.append(try client.moveMarkers("g", [V1.MarkerMove(id: "m2", position: V1.LatLng(latitude: 1, longitude: 1))]).layerVersion)
        versions.append(try client.clearLayer("g").layerVersion)
        let oldest = versions[1]
        let ok: V1.GetChangesResponse = try client.call("GetChanges", V1.GetChangesRequest(layerID: "g", sinceVersion: oldest))
        #expect(ok.cleared && ok.markers.isEmpty && ok.removedIDs.isEmpty)
        let error = clientError { let _: V1.GetChangesResponse = try client.call("GetChanges", V1.GetChangesRequest(layerID: "g", sinceVersion: oldest - 1)) }
        #expect(error?.code == .failedPrecondition)
        #expect(error?.fieldViolations.map(\.field) == ["since_version"])
        #expect(error?.fieldViolations.first?.description == "oldest version available: \(oldest)")
        // A token from an earlier page that the history has since passed is refused the same way.
        let stale = clientError { let _: V1.GetChangesResponse = try client.call("GetChanges", V1.GetChangesRequest(layerID: "g", sinceVersion: loaded, pageToken: "c1.\(String(loaded, radix: 16))")) }
        #expect(stale?.code == .failedPrecondition)
    }

    /// After a restart the history is empty: a version from before it answers FAILED_PRECONDITION.
    @Test func aVersionFromBeforeARestartMustReload() throws {
        let dir = TestServer.temporaryDirectory()
        var server = try TestServer(.tcp, dataDirectory: dir)
        _ = try createLayer(try server.client(), "r")
        let before = try server.client().upsertMarkers("r", [marker("x", 1, 1)]).layerVersion
        let fresh: V1.GetChangesResponse = try server.client().call("GetChanges", V1.GetChangesRequest(layerID: "r", sinceVersion: before))
        #expect(fresh.version == before && fresh.markers.isEmpty)
        server.stop()
        server = try TestServer(.tcp, dataDirectory: dir)
        defer { server.stop() }
        let error = clientError { let _: V1.GetChangesResponse = try server.client().call("GetChanges", V1.GetChangesRequest(layerID: "r", sinceVersion: before)) }
        #expect(error?.code == .failedPrecondition)
    }

    /// A subscriber whose socket is killed misses the events meanwhile; a new one from the version
    /// it held catches up (GetChanges) and then follows the feed: together they saw every change.
    @Test func aSubscriberThatDisconnectsCatchesUpWithoutMissingAChange() throws {
        let server = try Self.server(durable: true)
        defer { server.stop() }
        let client = try server.client()
        let loaded = try createLayer(client, "s").version
        let url = try #require(server.server.publishURLs.first)
        let model = Mutex<[String: V1.LatLng]>([:])
        let apply: @Sendable (LayerChange) -> Void = { change in
            model.withLock { m in
                switch change {
                case .changes(let page):
                    if page.cleared { m.removeAll() }
                    for marker in page.markers { m[marker.id] = marker.position }
                    for id in page.removedIDs { m[id] = nil }
                case .event(let e):
                    switch e.kind {
                    case .clear: m.removeAll()
                    case .remove: for id in e.removedIDs { m[id] = nil }
                    default: for marker in e.markers { m[marker.id] = marker.position }
                    }
                }
            }
        }
        func follow(since: UInt64) throws -> (ChangeSubscriber, Thread) {
            let s = try ChangeSubscriber(client: client, feedURL: url, layerID: "s", since: since, pollEvery: .milliseconds(50))
            let t = Thread { try? s.run(apply) }
            t.start()
            return (s, t)
        }
        var rng = SplitMix64(seed: testSeed("ChangeFeedTests.aSubscriberThatDisconnectsCatchesUp"))
        func writeSome(_ n: Int) throws -> UInt64 {
            var v: UInt64 = 0
            for _ in 0..<n {
                let id = "m\(rng.next() % 30)"
                if rng.next() % 5 == 0 {
                    v = max(v, try client.removeMarkers("s", ids: [id]).layerVersion)
                } else {
                    v = try client.upsertMarkers("s", [marker(id, rng.unit() * 80, rng.unit() * 170)]).layerVersion
                }
            }
            return v
        }
        func current() throws -> [String: V1.LatLng] {
            let listed = try client.listMarkers(V1.ListMarkersRequest(layerID: "s", pageSize: 1000, pageToken: ""))
            return Dictionary(uniqueKeysWithValues: listed.markers.map { ($0.id, $0.position!) })
        }
        /// Writes until `s` holds the last write (it may connect after the first ones).
        func writeUntilFollowed(_ s: ChangeSubscriber, _ what: String) throws {
            try waitUntil(what) {
                let last = try writeSome(4)
                Thread.sleep(forTimeInterval: 0.02)
                return s.version >= last
            }
        }
        let (first, _) = try follow(since: loaded)
        _ = try writeSome(20)
        try writeUntilFollowed(first, "the first subscriber follows")
        first.stop()  // the socket is closed: events from now on are lost to it
        let last = try writeSome(40)
        let held = first.version
        #expect(held < last)
        let (second, _) = try follow(since: held)
        defer { second.stop() }
        _ = try writeSome(20)
        try writeUntilFollowed(second, "the second subscriber caught up and follows")
        let listed = try current()
        #expect(model.withLock { $0 } == listed)
    }
}

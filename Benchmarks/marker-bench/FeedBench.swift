import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdTransport
import Synchronization

/// The change feed (issue 41; `--only feed`, never part of a full run): two `markerd
/// --ephemeral` children, one with `--publish` and a subscriber in this process that keeps up,
/// one without, each with the same 10,000-marker layer, take MoveMarkers of 1 marker per call
/// in turns (so host load falls on both alike). Rows: the latency with publishing over the
/// latency without (p50 ratio, target <= 1.10x), and the time from sending the MoveMarkers to
/// the subscriber holding its event, against the bare NNG round trip of the same bytes measured
/// in turn with it (target p99 <= 2x); the note gives reply -> event too (negative: the event
/// arrived before the reply, as the server publishes before it answers).
struct FeedBench {
    static let layerID = "feed"
    let options: Options
    let floor: Floor.Client
    let table: Table

    func run() throws {
        let publishURL = "ipc://\(NSTemporaryDirectory())marker-bench-feed-\(getpid()).sock"
        let on = try MarkerdProcess(path: options.markerdPath, arguments: ["--ephemeral", "--publish", publishURL], echo: options.verbose)
        defer { on.stop() }
        let off = try MarkerdProcess(path: options.markerdPath, arguments: ["--ephemeral"], echo: options.verbose)
        defer { off.stop() }
        var rng = SeededRNG(seed: options.seed)
        let markers = (0..<10_000).map { i in
            V1.Marker(id: "m\(i)", position: V1.LatLng(latitude: rng.unit() * 160 - 80, longitude: rng.unit() * 360 - 180))
        }
        for server in [on, off] {
            _ = try server.client.createLayer(V1.CreateLayerRequest(layerID: Self.layerID, options: nil))
            _ = try server.client.upsertMarkers(Self.layerID, markers)
        }
        // The subscriber: receipt time per event version.
        let subscriber = try NNGSubscriber(url: publishURL, topics: [Array("layer/\(Self.layerID)/".utf8)], receiveTimeout: .seconds(5))
        defer { subscriber.close() }
        let received = Mutex<[UInt64: ContinuousClock.Instant]>([:])
        let topic = "layer/\(Self.layerID)/".utf8.count
        let thread = Thread {
            while let bytes = try? subscriber.receive() {
                let at = ContinuousClock.now
                guard let feed = try? V1.FeedEvent(serializedBytes: Array(bytes[topic...])), case .change(let e) = feed.event else { continue }
                received.withLock { $0[e.version] = at }
            }
        }
        thread.start()
        // Until the subscriber is connected (events before that are not delivered).
        let deadline = ContinuousClock.now + .seconds(30)
        while true {
            let v = try on.client.moveMarkers(Self.layerID, [V1.MarkerMove(id: "m0", position: V1.LatLng(latitude: 1, longitude: 1))]).layerVersion
            usleep(20_000)
            if received.withLock({ $0[v] != nil }) { break }
            guard ContinuousClock.now < deadline else { throw BenchError("the feed subscriber never received an event") }
        }

        let calls = options.queries
        func move() -> [V1.MarkerMove] {
            [V1.MarkerMove(id: "m\(rng.next() % 10_000)", position: V1.LatLng(latitude: rng.unit() * 160 - 80, longitude: rng.unit() * 360 - 180))]
        }
        for _ in 0..<200 { _ = try on.client.moveMarkers(Self.layerID, move()); _ = try off.client.moveMarkers(Self.layerID, move()) }
        Progress.log("feed: MoveMarkers x1 with and without --publish, \(calls) calls each, in turns")
        var withFeed: [Double] = [], without: [Double] = [], sent: [(version: UInt64, at: ContinuousClock.Instant, reply: ContinuousClock.Instant)] = []
        var floorMicros: [Double] = []
        let sizes = Floor.Sizes(request: RPCTiming.requestEnvelopeSize(method: "MoveMarkers", payload: V1.MoveMarkersRequest(layerID: Self.layerID, moves: move()), mutation: true),
                                reply: RPCTiming.replyEnvelopeSize(payload: V1.MoveMarkersResponse(movedCount: 1, notFoundIDs: [], layerVersion: 1 << 40)))
        _ = try floor.measure(sizes, iterations: 1, warmup: 50)
        for i in 0..<calls {
            let order = i % 2 == 0 ? [on, off] : [off, on]
            for server in order {
                let m = move()
                let start = ContinuousClock.now
                let r = try server.client.moveMarkers(Self.layerID, m)
                let end = ContinuousClock.now
                if server === on { withFeed.append((end - start).micros); sent.append((r.layerVersion, start, end)) } else { without.append((end - start).micros) }
            }
            floorMicros.append(try floor.roundTrip(sizes).micros)
        }
        // Every event of a subscriber that keeps up arrives (none may be missing).
        let last = sent.last!.version
        while received.withLock({ $0[last] == nil }) {
            guard ContinuousClock.now < deadline + .seconds(600) else { throw BenchError("the last event never arrived") }
            usleep(1000)
        }
        let arrivals = received.withLock { $0 }
        let missing = sent.filter { arrivals[$0.version] == nil }.count
        let delivery = sent.compactMap { s in arrivals[s.version].map { ($0 - s.at).micros } }
        let afterReply = LatencySummary(samplesMicros: sent.compactMap { s in arrivals[s.version].map { ($0 - s.reply).micros } })
        let a = LatencySummary(samplesMicros: withFeed), b = LatencySummary(samplesMicros: without)
        let ratio = a.p50 / b.p50
        table.add(Row(size: "10k", measure: "MoveMarkers, 1 marker per call, with --publish (1 subscriber keeping up) over without",
                      value: "\(Table.micros(a.p50)) / \(Table.micros(a.p99))", unit: "µs p50 / p99",
                      ratio: String(format: "%.2fx / %.2fx", ratio, a.p99 / b.p99),
                      target: Target(text: "p50 <= 1.10x without --publish", met: ratio <= 1.10),
                      note: "without --publish \(Table.micros(b.p50)) / \(Table.micros(b.p99)) µs; \(calls) calls each, in turns, ephemeral servers; client encode/decode included on both sides"))
        table.addLatency(size: "10k", measure: "MoveMarkers sent -> its feed event at the subscriber (--publish, ipc://)",
                         LatencySummary(samplesMicros: delivery), floor: LatencySummary(samplesMicros: floorMicros), floorSizes: sizes,
                         target: { Target(text: "p99 <= 2x the floor", met: $0 <= 2) },
                         note: "floor: the bare NNG round trip of the MoveMarkers bytes (tcp), in turn with the calls; reply -> event \(Table.micros(afterReply.p50)) / \(Table.micros(afterReply.p99)) µs p50 / p99 (negative: the event came first); events missing \(missing) of \(sent.count)")
    }
}

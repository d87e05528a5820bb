import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdTransport
import Synchronization

/// The change feed under load (issue 41; `--only feed`, after `FeedBench`): one `markerd
/// --ephemeral --publish ipc://...` holding a 1M-marker layer (100k with `--quick`),
/// `writers` threads sending MoveMarkers of 1,000 small moves each (so `writers` calls in
/// flight) for `seconds` s, and `subscriberCount` subscribers in this process, each a thread
/// with its own NNG SUB socket on the layer's topic that decodes every event, counts its moves
/// and checks the `previous_version` chain (an event whose previous_version is not the version
/// of the event received before it means events were lost). The subscribers are connected
/// before the timing starts (each has received a probe move's event). Rows: the sustained rate
/// in moves/s (markers moved; target >= 100,000) with the calls' latency and both sides' CPU
/// per move in the note, and the events each subscriber lost (target 0).
struct FeedLoadBench {
    static let layerID = "feedload"
    static let subscriberCount = 8
    static let batch = 1000
    static let writers = 4
    /// The subscription topic of the layer's changes, as markerd publishes them.
    static let topic = Array("layer/\(layerID)/".utf8)
    let options: Options
    let table: Table

    var count: Int { options.quick ? 100_000 : 1_000_000 }
    var seconds: Double { options.quick ? 3 : 10 }

    /// One subscriber: its socket and what it has received (guarded by `state`).
    final class Subscriber: @unchecked Sendable {
        struct State {
            /// The version of the last change event received (0: none yet).
            var last: UInt64 = 0
            var events = 0
            var moves = 0
            /// Events whose previous_version was not `last`.
            var gaps = 0
            /// This subscriber thread's CPU time when it handled its last event, in seconds.
            var cpuSeconds = 0.0
        }
        let socket: NNGSubscriber
        let state = Mutex(State())
        let finished = DispatchSemaphore(value: 0)

        init(url: String) throws {
            socket = try NNGSubscriber(url: url, topics: [FeedLoadBench.topic])
        }

        /// Receives until the socket is closed.
        func run() {
            let topic = FeedLoadBench.topic.count
            while let bytes = try? socket.receive() {
                guard let feed = try? V1.FeedEvent(serializedBytes: Array(bytes[topic...])), case .change(let e) = feed.event else { continue }
                let cpu = Machine.threadCPUSeconds
                state.withLock { s in
                    if s.last != 0 && e.previousVersion != s.last { s.gaps += 1 }
                    s.last = e.version
                    s.events += 1
                    s.moves += e.markers.count
                    s.cpuSeconds = cpu
                }
            }
            finished.signal()
        }
    }

    func run() throws {
        let host = HostReference.measure()
        table.add(host.row(when: "before the feed load"))
        let publishURL = "ipc://\(NSTemporaryDirectory())marker-bench-feedload-\(getpid()).sock"
        let server = try MarkerdProcess(path: options.markerdPath, arguments: ["--ephemeral", "--publish", publishURL], echo: options.verbose)
        defer { server.stop() }
        var rng = SeededRNG(seed: options.seed &+ 41)
        // Away from the antimeridian by more than a move (0.01°).
        let origins = (0..<count).map { i in (id: "m\(i)", latitude: rng.unit() * 160 - 80, longitude: rng.unit() * 359.9 - 179.95) }
        let markers = origins.map { V1.Marker(id: $0.id, position: V1.LatLng(latitude: $0.latitude, longitude: $0.longitude)) }
        _ = try server.client.createLayer(V1.CreateLayerRequest(layerID: Self.layerID, options: nil))
        _ = try Loading.load(server.client, serverPID: server.pid, markers, into: Self.layerID, label: "feed load [\(Table.count(count))]")

        let subscribers = try (0..<Self.subscriberCount).map { _ in try Subscriber(url: publishURL) }
        defer { for s in subscribers { s.socket.close() } }
        for s in subscribers { Thread { s.run() }.start() }
        // Until every subscriber is connected: each has received the last probe's event (later
        // events all reach a subscriber that keeps up).
        let connectDeadline = ContinuousClock.now + .seconds(30)
        probing: for probe in 1... {
            let position = V1.LatLng(latitude: origins[0].latitude, longitude: origins[0].longitude + Double(probe) * 1e-6)
            let v = try server.client.moveMarkers(Self.layerID, [V1.MarkerMove(id: origins[0].id, position: position)]).layerVersion
            let probeDeadline = ContinuousClock.now + .milliseconds(200)
            while ContinuousClock.now < probeDeadline {
                if subscribers.allSatisfy({ s in s.state.withLock { $0.last >= v } }) { break probing }
                usleep(1000)
            }
            guard ContinuousClock.now < connectDeadline else { throw BenchError("the feed subscribers were not all connected within 30 s") }
        }
        let before = subscribers.map { s in s.state.withLock { $0 } }

        Progress.log("feed load: MoveMarkers x\(Self.batch), \(Self.writers) in flight, for \(Int(seconds)) s, \(Self.subscriberCount) subscribers")
        let nextBatch = Atomic<Int>(0)
        let outcome = Mutex<(latencies: [Double], moved: Int, calls: Int, lastVersion: UInt64, error: Error?)>(([], 0, 0, 0, nil))
        let serverCPU0 = Machine.cpuSeconds(pid: server.pid) ?? 0, clientCPU0 = Machine.processCPUSeconds
        let start = ContinuousClock.now, end = start + .seconds(seconds)
        let seed = options.seed, n = count
        DispatchQueue.concurrentPerform(iterations: Self.writers) { w in
            var rng = SeededRNG(seed: seed &+ 4100 &+ UInt64(w))
            var latencies: [Double] = [], moved = 0, calls = 0, last: UInt64 = 0
            do {
                while ContinuousClock.now < end {
                    // Distinct markers within a batch, each moved up to ~1 km from where it was loaded.
                    let first = nextBatch.add(1, ordering: .relaxed).oldValue * Self.batch
                    let moves = (0..<Self.batch).map { j in
                        let o = origins[(first + j) % n]
                        return V1.MarkerMove(id: o.id, position: V1.LatLng(latitude: o.latitude + (rng.unit() - 0.5) * 0.02,
                                                                            longitude: o.longitude + (rng.unit() - 0.5) * 0.02))
                    }
                    let t0 = ContinuousClock.now
                    let r = try server.client.moveMarkers(Self.layerID, moves)
                    latencies.append((ContinuousClock.now - t0).micros)
                    guard r.movedCount == Self.batch else { throw BenchError("moved \(r.movedCount) of \(Self.batch)") }
                    moved += Int(r.movedCount)
                    calls += 1
                    last = max(last, r.layerVersion)
                }
            } catch {
                outcome.withLock { $0.error = error }
            }
            outcome.withLock { o in
                o.latencies += latencies; o.moved += moved; o.calls += calls; o.lastVersion = max(o.lastVersion, last)
            }
        }
        let elapsed = (ContinuousClock.now - start).seconds
        let result = outcome.withLock { $0 }
        if let error = result.error { throw error }

        // Every subscriber that kept up holds the last write's event; wait for it (bounded).
        let drainDeadline = ContinuousClock.now + .seconds(30)
        while !subscribers.allSatisfy({ s in s.state.withLock { $0.last >= result.lastVersion } }) && ContinuousClock.now < drainDeadline {
            usleep(1000)
        }
        // Including the subscribers' work on the last events.
        let serverCPU = (Machine.cpuSeconds(pid: server.pid) ?? 0) - serverCPU0, clientCPU = Machine.processCPUSeconds - clientCPU0
        for s in subscribers { s.socket.close() }
        for s in subscribers { s.finished.wait() }
        let after = subscribers.map { s in s.state.withLock { $0 } }
        // Per subscriber, over the timed writes only (the probes are behind `before`).
        let received = zip(before, after).map { (b, a) in (events: a.events - b.events, moves: a.moves - b.moves, gaps: a.gaps - b.gaps, cpu: a.cpuSeconds - b.cpuSeconds) }

        let rate = Double(result.moved) / elapsed
        let latency = LatencySummary(samplesMicros: result.latencies)
        let moved = Double(max(1, result.moved))
        let subscriberCPU = received.reduce(0) { $0 + $1.cpu }
        let perSubscriber = received.map { r in "\(r.events) / \(Table.rate(Double(r.moves))) / \(r.gaps)" }.joined(separator: ", ")
        // One event per call: the events a subscriber did not receive.
        let lost = received.map { result.calls - $0.events }
        table.add(Row(size: Table.count(count), measure: "MoveMarkers, batches of \(Table.count(Self.batch)) small moves, \(Self.writers) in flight, for \(Int(seconds)) s, with --publish (ipc://) and \(Self.subscriberCount) subscribers decoding every event",
                      value: Table.rate(rate), unit: "moves/s",
                      target: Target(text: ">= 100,000 moves/s", met: rate >= 100_000),
                      note: "\(result.calls) calls, \(Table.rate(Double(result.moved))) moves in \(Table.fixed(elapsed, 2)) s; call latency \(Table.micros(latency.p50)) / \(Table.micros(latency.p99)) µs p50 / p99 (\(Self.writers) in flight); "
                        + String(format: "CPU per move: markerd %.2f µs, marker-bench %.2f µs (of which the %d subscriber threads %.2f µs, the rest the writers, their encoding and NNG); ",
                                 serverCPU * 1e6 / moved, clientCPU * 1e6 / moved, Self.subscriberCount, subscriberCPU * 1e6 / moved)
                        + "ephemeral server; host factor \(String(format: "%.2fx", host.factor)); loadavg \(Table.fixed(Machine.loadAverage ?? 0, 1))",
                      samplesMicros: result.latencies))
        table.add(Row(size: Table.count(count), measure: "events lost by \(Self.subscriberCount) subscribers keeping up during that load (previous_version chain breaks)",
                      value: lost.map(String.init).joined(separator: " / "), unit: "per subscriber",
                      target: Target(text: "0 lost", met: lost.allSatisfy { $0 == 0 } && received.allSatisfy { $0.gaps == 0 && $0.moves == result.moved }),
                      note: "events / moves / previous_version gaps received per subscriber, of \(result.calls) events / \(Table.rate(Double(result.moved))) moves sent: \(perSubscriber); "
                        + "lost = events sent - events received (the target also needs 0 gaps and every move)"))
    }
}

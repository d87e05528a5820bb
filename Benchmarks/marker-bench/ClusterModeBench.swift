import Dispatch
import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdTestSupport

/// Cluster mode (`--only cluster`, issue 39): three `nats-server -js` clustered over routes on
/// loopback (Debian's nats-server, default max_payload 1 MiB, stores under `--data-root`) and
/// three markerd replicas of group "default" on them, measured against a single-node
/// `markerd --fsync always` in the same run:
/// 1. the N markers loaded through replica r0 (batches that fit max_payload);
/// 2. write latency: MoveMarkers of 1 marker and UpsertMarkers of `upsertBatch` markers, each
///    call to r0 alternating with the same call to the single node (which goes first alternates);
/// 3. catch-up: a fresh fourth replica, from launch until its `/readyz` answers 200 (it replays
///    the whole stream: cluster mode keeps no snapshots yet);
/// 4. read throughput: HitTest from `readers` client threads for `readSeconds` against r0 alone,
///    then spread over r0-r2, twice in turn; CPU per request from the replicas' /proc/PID/stat;
/// 5. failover: a reader with the three endpoints; kill -9 of the replica it reads from, twice;
///    the time to its next successful read from another replica. MarkerdClient takes one URL, so
///    the bench does the failover: a call that fails with a transport error (UNAVAILABLE) or
///    times out after `failoverTimeout` moves to the next endpoint.
/// Skipped with a row saying so when nats-server is not installed.
struct ClusterModeBench {
    static let layerID = "cluster"
    /// Markers per UpsertMarkers call of the write-latency rows.
    static let upsertBatch = 10
    /// The failover reader's per-call timeout: a call to a killed replica fails by then at the
    /// latest (NNG resends a request whose connection closed only once it redials), so the
    /// failover time is about this plus one call.
    static let failoverTimeout: Duration = .milliseconds(500)
    /// NATS's default max_payload (nats-server started without a config file): the largest log
    /// record, so the largest UpsertMarkers batch the cluster takes.
    static let maxPayload = 1 << 20

    let options: Options
    let layer: SyntheticLayer
    let markers: [V1.Marker]
    let table: Table

    private var n: Int { layer.count }
    private var label: String { Table.count(n) }
    /// Timed calls per write-latency series (and per mode).
    private var writeCalls: Int { options.queries }
    /// Seconds of each of the four throughput rounds (1, 3, 1, 3 replicas). 4 s; 1.5 s with --quick.
    private var readSeconds: Double { options.quick ? 1.5 : 4 }
    /// Client threads of the throughput rounds, each calling HitTest back to back.
    private var readers: Int { 6 }

    func run() throws {
        guard let nats = natsServerBinary() else {
            table.add(Row(size: label, measure: "cluster mode (3 nats-server + 3 replicas): skipped", value: "-", unit: "",
                          note: "nats-server is not on PATH (apt-get install nats-server, or scripts/install-deps.sh --test)"))
            return
        }
        let root = URL(fileURLWithPath: options.dataRoot).appendingPathComponent("marker-bench-cluster-\(getpid())-\(n)").path
        try? FileManager.default.removeItem(atPath: root)
        try FileManager.default.createDirectory(atPath: root, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(atPath: root) }
        let host = HostReference.measure()
        table.add(host.row(when: "before the cluster section"))

        let cluster = try NatsCluster(binary: nats, root: root)
        defer { cluster.stop() }
        var replicas: [Replica] = []
        defer { for r in replicas { r.stop() } }
        for i in 0..<3 { replicas.append(try Replica(index: i, nats: cluster.urls, root: root, options: options)) }
        Progress.log("[\(label)] cluster: nats \(cluster.urls); replicas \(replicas.map(\.server.url))")

        // 1. The load, through r0.
        let writer = replicas[0].server
        _ = try writer.client.createLayer(V1.CreateLayerRequest(layerID: Self.layerID, options: nil))
        let bytesPerMarker = markers.last.map { $0.serializedSize + 4 } ?? 64  // the longest id, with the field's framing
        let batch = min(50_000, (Self.maxPayload - 64 * 1024) / bytesPerMarker)
        let replicaPIDs = replicas.map(\.server.pid)
        let cpu0 = replicaPIDs.map { Machine.cpuSeconds(pid: $0) ?? 0 }
        let load = try Loading.load(writer.client, serverPID: writer.pid, markers, into: Self.layerID, batchSize: batch,
                                    concurrency: 4, label: "[\(label)] cluster load via r0")
        try replicas.forEach { try $0.waitUntilHolds(n, layerID: Self.layerID) }
        let allReplicasCPU = zip(replicaPIDs, cpu0).reduce(0.0) { $0 + ((Machine.cpuSeconds(pid: $1.0) ?? 0) - $1.1) }

        // 2. The single node's load, then write latency, alternating.
        let single = try MarkerdProcess(path: options.markerdPath,
                                        arguments: ["--data-dir", root + "/single", "--fsync", "always", "--snapshot-every-bytes", "0"],
                                        name: "fsync always", echo: options.verbose)
        do {
            defer { single.stop() }
            _ = try single.client.createLayer(V1.CreateLayerRequest(layerID: Self.layerID, options: nil))
            let singleLoad = try Loading.load(single.client, serverPID: single.pid, markers, into: Self.layerID,
                                          label: "[\(label)] single node --fsync always")
            table.add(Row(size: label, measure: "cluster: load via r0 (3 NATS, 3 replicas applying)", value: Table.rate(load.markersPerSecond),
                          unit: "markers/s", ratio: String(format: "%.2fx single node --fsync always", load.markersPerSecond / singleLoad.markersPerSecond),
                          note: String(format: "BulkLoader %@ x 4 (records under NATS's default max_payload 1 MiB); %.2f s; three replicas' CPU %.2f µs/marker; single node (50k x 4) %@ markers/s; %@",
                                       Table.count(batch), load.seconds, allReplicasCPU * 1e6 / Double(n), Table.rate(singleLoad.markersPerSecond), load.cpuNote)))
            try writeLatency(cluster: writer.client, single: single.client)
        }

        // 3. Catch-up of a fresh replica.
        let lastSequence = writer.client.lastSequence
        let fresh = try Replica(index: 3, nats: cluster.urls, root: root, options: options)
        let (ready, cpu) = try fresh.waitUntilReady()
        let held = try fresh.server.client.layerStats(Self.layerID).markerCount
        fresh.stop()
        guard held == UInt64(n) else { throw BenchError("the fresh replica holds \(held) markers of \(n)") }
        table.add(Row(size: label, measure: "cluster: catch-up of a fresh replica (whole stream replayed, no snapshots yet)",
                      value: Table.fixed(ready, 2), unit: "s",
                      target: Target(text: "< 10 s at 1M", met: ready < 10, atTargetSize: n >= 1_000_000),
                      note: String(format: "launch until /readyz 200 (polled every 5 ms); %llu log records (the load's %d batches and the write rows' calls); markerd CPU %.2f s; loadavg %.1f",
                                   lastSequence, (n + batch - 1) / batch, cpu, Machine.loadAverage ?? 0)))

        // 4. Read throughput on 1 and 3 replicas.
        try readThroughput(replicas)

        // 5. Failover.
        try failover(replicas)
    }

    // MARK: Write latency

    private func writeLatency(cluster: MarkerdClient, single: MarkerdClient) throws {
        var rng = SeededRNG(seed: options.seed &+ 39)
        let warmup = 50, calls = writeCalls
        let moves = (0..<(warmup + calls)).map { _ in layer.randomAPIMoves(1, &rng) }
        let upserts = (0..<(warmup + calls)).map { _ in
            layer.randomAPIMoves(Self.upsertBatch, &rng).map { move -> V1.Marker in
                var m = V1.Marker()
                m.id = move.id
                m.position = move.position
                return m
            }
        }
        let series: [(name: String, call: (MarkerdClient, Int) throws -> Void)] = [
            ("MoveMarkers, 1 marker per call", { client, i in
                let r = try client.moveMarkers(Self.layerID, moves[i])
                guard r.movedCount == 1 else { throw BenchError("MoveMarkers moved \(r.movedCount) of 1") }
            }),
            ("UpsertMarkers, \(Self.upsertBatch) markers per call (existing ids)", { client, i in
                let r = try client.upsertMarkers(Self.layerID, upserts[i])
                guard r.updatedCount == UInt64(Self.upsertBatch) else { throw BenchError("UpsertMarkers updated \(r.updatedCount) of \(Self.upsertBatch)") }
            }),
        ]
        for s in series {
            Progress.log("[\(label)] cluster vs single node: \(s.name), \(calls) calls each, alternating")
            for i in 0..<warmup { try s.call(cluster, i); try s.call(single, i) }
            var clusterMicros: [Double] = [], singleMicros: [Double] = []
            for i in warmup..<(warmup + calls) {
                // Which side goes first alternates, so each follows the other's call equally often.
                for clusterSide in (i % 2 == 0 ? [true, false] : [false, true]) {
                    let (_, t) = try timed { try s.call(clusterSide ? cluster : single, i) }
                    if clusterSide { clusterMicros.append(t.micros) } else { singleMicros.append(t.micros) }
                }
            }
            let c = LatencySummary(samplesMicros: clusterMicros), f = LatencySummary(samplesMicros: singleMicros)
            let r50 = c.p50 / f.p50
            var row = Row(size: label, measure: "cluster: \(s.name), via r0 vs single node --fsync always",
                          value: "\(Table.micros(c.p50)) / \(Table.micros(c.p99))", unit: "µs p50 / p99",
                          floor: "", ratio: String(format: "%.2fx / %.2fx", r50, c.p99 / f.p99),
                          target: Target(text: "p50 <= 3x single-node --fsync always", met: r50 <= 3),
                          note: "single node --fsync always \(Table.micros(f.p50)) / \(Table.micros(f.p99)) µs p50 / p99 (Ratio: cluster / it); \(calls) calls each, one in flight, alternating; whole client calls (encode, round trip, decode); cluster: JetStream publish acked by 2 of 3 servers, then r0's apply; calls >= 1 ms: cluster \(c.stalls), single \(f.stalls); loadavg \(Table.fixed(Machine.loadAverage ?? 0, 1))",
                          samplesMicros: c.sortedMicros)
            row.floorSamplesMicros = f.sortedMicros
            table.add(row)
        }
    }

    // MARK: Read throughput

    private func readThroughput(_ replicas: [Replica]) throws {
        var rng = SeededRNG(seed: options.seed &+ 40)
        let requests = (0..<10_000).map { _ in
            let p = layer.randomHitPoint(&rng)
            return V1.HitTestRequest(layerID: Self.layerID, point: p.point, zoom: p.zoom)
        }
        let clients = try replicas.map { try MarkerdClient(url: $0.server.url, timeout: .seconds(60)) }
        // What the replicas burn with no request (NATS heartbeats, timers), to tell it from the calls' CPU.
        let pids = replicas.map(\.server.pid)
        let idle0 = pids.map { Machine.cpuSeconds(pid: $0) ?? 0 }, idleStart = ContinuousClock.now
        usleep(1_000_000)
        let idleCPU = zip(pids, idle0).reduce(0.0) { $0 + ((Machine.cpuSeconds(pid: $1.0) ?? 0) - $1.1) }
            / (ContinuousClock.now - idleStart).seconds / Double(pids.count)
        var results: [Int: (requests: Int, seconds: Double, serverCPU: Double, clientCPU: Double)] = [:]
        for spread in [1, 3, 1, 3] {
            Progress.log("[\(label)] cluster: HitTest from \(readers) threads on \(spread) replica(s) for \(readSeconds) s")
            let pids = replicas.prefix(spread).map(\.server.pid)
            let cpu0 = pids.map { Machine.cpuSeconds(pid: $0) ?? 0 }, client0 = Machine.processCPUSeconds
            let (count, elapsed) = try Self.hammer(threads: readers, seconds: readSeconds) { thread, k in
                _ = try clients[thread % spread].hitTest(requests[(thread * 7919 + k) % requests.count])
            }
            let serverCPU = zip(pids, cpu0).reduce(0.0) { $0 + ((Machine.cpuSeconds(pid: $1.0) ?? 0) - $1.1) }
            let old = results[spread] ?? (0, 0, 0, 0)
            results[spread] = (old.requests + count, old.seconds + elapsed, old.serverCPU + serverCPU,
                               old.clientCPU + Machine.processCPUSeconds - client0)
        }
        let one = results[1]!, three = results[3]!
        for (spread, r) in [(1, one), (3, three)] {
            let rate = Double(r.requests) / r.seconds
            table.add(Row(size: label, measure: "cluster: HitTest throughput, \(readers) client threads on \(spread) replica(s)",
                          value: Table.rate(rate), unit: "calls/s",
                          ratio: spread == 1 ? "1.00x" : String(format: "%.2fx 1 replica", rate / (Double(one.requests) / one.seconds)),
                          note: String(format: "%d calls in %.1f s (two %.1f s rounds, alternating 1 and 3 replicas); markerd CPU %.1f µs/call (the replicas read from, /proc/PID/stat; an idle replica uses %.1f ms/s), marker-bench CPU %.1f µs/call; %d cores: the clients and replicas share them, so 3 replicas cannot scale here; loadavg %.1f",
                                       r.requests, r.seconds, readSeconds, r.serverCPU * 1e6 / Double(r.requests), idleCPU * 1000,
                                       r.clientCPU * 1e6 / Double(r.requests), Machine.processors, Machine.loadAverage ?? 0)))
        }
    }

    /// Runs `call(thread, k)` in a loop on `threads` threads for `seconds`; returns the calls made
    /// and the elapsed seconds. The first error stops every thread and is thrown.
    static func hammer(threads: Int, seconds: Double, _ call: @escaping @Sendable (Int, Int) throws -> Void) throws -> (Int, Double) {
        final class Shared: @unchecked Sendable {
            let lock = NSLock()
            var count = 0             // guarded by lock
            var error: Error?         // guarded by lock
        }
        let shared = Shared()
        let start = ContinuousClock.now, end = start + .milliseconds(Int(seconds * 1000))
        DispatchQueue.concurrentPerform(iterations: threads) { thread in
            var k = 0
            while ContinuousClock.now < end && shared.lock.withLock({ shared.error == nil }) {
                do { try call(thread, k) } catch { shared.lock.withLock { shared.error = error }; return }
                k += 1
            }
            shared.lock.withLock { shared.count += k }
        }
        if let error = shared.error { throw error }
        return (shared.count, (ContinuousClock.now - start).seconds)
    }

    // MARK: Failover

    private func failover(_ replicas: [Replica]) throws {
        var rng = SeededRNG(seed: options.seed &+ 41)
        let requests = (0..<1000).map { _ in
            let p = layer.randomHitPoint(&rng)
            return V1.HitTestRequest(layerID: Self.layerID, point: p.point, zoom: p.zoom)
        }
        let reader = try FailoverReader(urls: replicas.map(\.server.url), timeout: Self.failoverTimeout, requests: requests)
        reader.start()
        defer { reader.finish() }
        var times: [Double] = []
        for cycle in 0..<2 {
            try waitUntil("the failover reader's reads", timeout: .seconds(60)) { reader.successes(after: ContinuousClock.now - .milliseconds(500)) >= 20 }
            let victim = reader.current
            Progress.log("[\(label)] cluster failover \(cycle + 1): kill -9 of r\(victim), the replica the reader reads from")
            kill(replicas[victim].server.pid, SIGKILL)
            let killed = ContinuousClock.now
            replicas[victim].reap()
            var next: ContinuousClock.Instant?
            try waitUntil("a read from another replica after the kill", timeout: .seconds(60)) {
                next = reader.firstSuccess(after: killed, notFrom: victim)
                return next != nil
            }
            times.append((next! - killed).seconds)
            Progress.log(String(format: "[%@] cluster failover %d: next successful read after %.3f s", label, cycle + 1, times.last!))
        }
        let worst = times.max()!
        table.add(Row(size: label, measure: "cluster: failover, kill -9 of the replica a reader uses until its next successful read",
                      value: times.map { Table.fixed($0, 3) }.joined(separator: " / "), unit: "s",
                      target: Target(text: "< 2 s", met: worst < 2),
                      note: "two kills in turn (r0 then the next endpoint); the reader (one thread, HitTest back to back, the three endpoints) tries the next endpoint on a transport error or after its per-call timeout of \(Table.fixed(Self.failoverTimeout.seconds, 1)) s, which dominates the time (NNG does not fail a call when its connection closes: it waits to resend it); \(reader.failures) failed calls in all"))
    }

    // MARK: Processes

}

/// Three `nats-server -js` on free loopback ports, clustered over routes (as the cluster tests'
/// ClusterHarness starts them), stores under `root`.
final class NatsCluster {
    let urls: String
    private var processes: [Process] = []

    init(binary: String, root: String) throws {
        let clientPorts = (0..<3).map { _ in MarkerdTestSupport.MarkerdProcess.freePort() }
        let routePorts = (0..<3).map { _ in MarkerdTestSupport.MarkerdProcess.freePort() }
        urls = clientPorts.map { "nats://127.0.0.1:\($0)" }.joined(separator: ",")
        for i in 0..<3 {
            let p = Process()
            p.executableURL = URL(fileURLWithPath: binary)
            let routes = routePorts.enumerated().filter { $0.offset != i }.map { "nats://127.0.0.1:\($0.element)" }.joined(separator: ",")
            p.arguments = ["-js", "-sd", root + "/nats\(i)", "-a", "127.0.0.1", "-p", "\(clientPorts[i])", "-n", "n\(i)",
                           "--cluster_name", "marker-bench", "--cluster", "nats://127.0.0.1:\(routePorts[i])", "--routes", routes]
            p.standardOutput = FileHandle.nullDevice
            p.standardError = FileHandle.nullDevice
            try p.run()
            ChildProcess.track(p)
            processes.append(p)
        }
    }

    /// SIGTERM to every server, waiting for each. Idempotent.
    func stop() {
        for p in processes where p.isRunning { p.terminate() }
        for p in processes { p.waitUntilExit(); ChildProcess.forget(p) }
        processes = []
    }
}

/// One markerd replica in cluster mode (`--node-id rI`, its data directory, an HTTP gateway on a
/// free loopback port for `/readyz`).
final class Replica {
    let server: MarkerdProcess
    let httpPort: Int
    private var gone = false

    init(index: Int, nats: String, root: String, options: Options) throws {
        httpPort = MarkerdTestSupport.MarkerdProcess.freePort()
        server = try MarkerdProcess(path: options.markerdPath,
                                    arguments: ["--cluster", nats, "--node-id", "r\(index)", "--data-dir", root + "/r\(index)",
                                                "--http", "127.0.0.1:\(httpPort)"],
                                    name: "r\(index)", echo: options.verbose)
    }

    /// Polls `/readyz` (every 5 ms, `waitUntil`) until 200; returns the seconds since launch and markerd's CPU
    /// seconds by then.
    func waitUntilReady(timeout: Duration = .seconds(120)) throws -> (seconds: Double, cpuSeconds: Double) {
        try waitUntil("\(server.child.name) /readyz 200", timeout: timeout) {
            (try? RawHTTP.request(port: httpPort, "GET", "/readyz", timeoutSeconds: 5).status) == 200
        }
        return ((ContinuousClock.now - server.child.launchedAt).seconds, Machine.cpuSeconds(pid: server.pid) ?? 0)
    }

    /// Waits until this replica's layer `layerID` holds `count` markers (it applied the load).
    func waitUntilHolds(_ count: Int, layerID: String) throws {
        try waitUntil("\(server.child.name) holds \(count) markers", timeout: .seconds(120)) {
            (try? server.client.layerStats(layerID).markerCount) == UInt64(count)
        }
    }

    /// Collects the process after a kill -9.
    func reap() {
        server.child.process.waitUntilExit()
        ChildProcess.forget(server.child.process)
        gone = true
    }

    func stop() { if !gone { gone = true; server.stop() } }
}

/// A reader with several endpoints: HitTest back to back on one thread against the current one;
/// a failed call (transport error or UNAVAILABLE, e.g. its per-call timeout) moves it to the next.
final class FailoverReader: @unchecked Sendable {
    private let clients: [MarkerdClient]
    private let requests: [V1.HitTestRequest]
    private let lock = NSLock()
    private var index = 0                                               // guarded by lock
    private var log: [(at: ContinuousClock.Instant, endpoint: Int)] = []  // guarded by lock: successes
    private var failed = 0                                              // guarded by lock
    private var stopping = false                                        // guarded by lock
    private let done = DispatchSemaphore(value: 0)

    init(urls: [String], timeout: Duration, requests: [V1.HitTestRequest]) throws {
        clients = try urls.map { try MarkerdClient(url: $0, timeout: timeout) }
        self.requests = requests
    }

    var current: Int { lock.withLock { index } }
    var failures: Int { lock.withLock { failed } }

    func start() {
        Thread.detachNewThread { [self] in
            var k = 0
            while !lock.withLock({ stopping }) {
                let endpoint = current
                do {
                    _ = try clients[endpoint].hitTest(requests[k % requests.count])
                    let now = ContinuousClock.now
                    lock.withLock { log.append((at: now, endpoint: endpoint)) }
                } catch {
                    lock.withLock { failed += 1; if index == endpoint { index = (endpoint + 1) % clients.count } }
                }
                k += 1
            }
            done.signal()
        }
    }

    /// Successful reads that completed after `instant`.
    func successes(after instant: ContinuousClock.Instant) -> Int {
        lock.withLock { log.reversed().prefix { $0.at > instant }.count }
    }

    /// When the first read after `instant` from another endpoint than `victim` completed.
    func firstSuccess(after instant: ContinuousClock.Instant, notFrom victim: Int) -> ContinuousClock.Instant? {
        lock.withLock { log.first { $0.at > instant && $0.endpoint != victim }?.at }
    }

    func finish() {
        lock.withLock { stopping = true }
        done.wait()
    }
}

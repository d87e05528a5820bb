import Dispatch
import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdTransport

/// The RPC measurements for one marker count N against a fresh `markerd --ephemeral`:
/// load rate, resident bytes per marker, QueryViewport and HitTest latency against the NNG
/// floor of the same sizes, MoveMarkers rates and latency, and (optionally) other BulkLoader
/// settings.
struct RPCBench {
    static let tiledLayer = "tiled"
    static let nativeLayer = "native"

    let options: Options
    let layer: SyntheticLayer
    /// `layer` as API markers (built once per size; also used by the durability runs).
    let markers: [V1.Marker]
    let floor: Floor.Client
    let table: Table

    private var n: Int { layer.count }
    private var label: String { Table.count(n) }
    /// Calls per latency figure.
    private var timedCalls: Int { options.queries }
    /// Untimed warm-up calls before them, with different requests of the same distribution:
    /// their median sizes are the floor's sizes, so there are as many.
    private var warmupCalls: Int { max(20, options.queries) }
    /// Round trips of the stand-alone 100 B floor figure.
    private var floorCalls: Int { max(1000, options.queries) }

    func run() throws {
        let server = try MarkerdProcess(path: options.markerdPath, arguments: ["--ephemeral"], echo: options.verbose)
        defer { server.stop() }
        let client = server.client
        Progress.log("[\(label)] markerd pid \(server.pid) at \(server.url)")

        var native = V1.LayerOptions()
        native.tiling = V1.TilingOptions()
        native.tiling?.enabled = false
        _ = try client.createLayer(V1.CreateLayerRequest(layerID: Self.tiledLayer, options: nil))
        _ = try client.createLayer(V1.CreateLayerRequest(layerID: Self.nativeLayer, options: native))
        usleep(200_000)
        let rssEmpty = server.residentBytes

        // Load rate and memory (first layer only).
        let load = try Loading.load(client, serverPID: server.pid, markers, into: Self.tiledLayer, label: "[\(label)] load tiled")
        usleep(500_000)
        let rssLoaded = server.residentBytes
        table.add(Row(size: label, measure: "load via RPC (BulkLoader 50k x 4, fresh server, ephemeral)",
                      value: Table.rate(load.markersPerSecond), unit: "markers/s",
                      target: Target(text: ">= 1,000,000 markers/s", met: load.markersPerSecond >= 1_000_000),
                      note: String(format: "%.2f s for %@; %@", load.seconds, label, load.cpuNote)))
        let perMarker = (Double(rssLoaded) - Double(rssEmpty)) / Double(n)
        let idBytes = layer.averageIDBytes
        table.add(Row(size: label, measure: "markerd resident bytes per marker (VmRSS delta / N)",
                      value: Table.fixed(perMarker), unit: "B/marker",
                      note: "VmRSS \(Table.bytes(Int(rssEmpty))) empty -> \(Table.bytes(Int(rssLoaded))) loaded, "
                        + "of which AnonHugePages \(Table.bytes(Int(Machine.anonHugePagesBytes(pid: server.pid) ?? 0)))"))
        let stats = try client.layerStats(Self.tiledLayer)
        table.add(Row(size: label, measure: "... minus id bytes",
                      value: Table.fixed(perMarker - idBytes), unit: "B/marker",
                      target: Target(text: "< 80 B/marker + ids at 10M", met: perMarker - idBytes < 80, atTargetSize: n >= 10_000_000),
                      note: String(format: "ids average %.2f B; layer approximate_bytes %.1f B/marker", idBytes,
                                   Double(stats.approximateBytes) / Double(n))))
        guard stats.mode == .tiled, stats.markerCount == UInt64(n) else {
            throw BenchError("tiled layer: mode \(stats.mode), \(stats.markerCount) markers")
        }

        let nativeLoad = try Loading.load(client, serverPID: server.pid, markers, into: Self.nativeLayer, label: "[\(label)] load native")
        table.add(Row(size: label, measure: "load 2nd layer (native, same markers)", value: Table.rate(nativeLoad.markersPerSecond),
                      unit: "markers/s", note: String(format: "%.2f s; server already holds N markers; %@", nativeLoad.seconds, nativeLoad.cpuNote)))
        let nativeStats = try client.layerStats(Self.nativeLayer)
        guard nativeStats.mode == .native else { throw BenchError("native layer is in mode \(nativeStats.mode)") }

        try queries(client)
        try moves(client)
        if options.tuneLoad { try tuneLoad(client, serverPID: server.pid) }
        Progress.log("[\(label)] markerd VmRSS at the end: \(Table.bytes(Int(server.residentBytes)))")
    }

    // MARK: Queries

    private func queries(_ client: MarkerdClient) throws {
        let floor100 = try floor.measure(Floor.Sizes(request: 100, reply: 100), iterations: floorCalls)
        table.addLatency(size: label, measure: "floor: bare NNG REQ/REP round trip, loopback TCP, 2 processes",
                         floor100, floor: floor100, floorSizes: Floor.Sizes(request: 100, reply: 100),
                         note: "\(floorCalls) calls; echo server replies inline on the nng thread")
        let overTLS = try floor.measureTLSAndTCP(Floor.Sizes(request: 100, reply: 100), iterations: floorCalls)
        table.addLatency(size: label, measure: "floor over tls+tcp:// (TLS 1.2, nng's mbedTLS 2.28, P-256 certificate): per-call overhead vs tcp://",
                         overTLS.tls, floor: overTLS.tcp, floorSizes: Floor.Sizes(request: 100, reply: 100),
                         note: String(format: "\(floorCalls) calls each, alternating with tcp:// calls to the same echo server (the floor here); +%.1f µs p50, +%.1f µs p99",
                                      overTLS.tls.p50 - overTLS.tcp.p50, overTLS.tls.p99 - overTLS.tcp.p99))
        let tlsConnect = try floor.measureTLSConnect(iterations: 50)
        table.addLatency(size: label, measure: "TLS connect: a new tls+tcp:// client's connect + handshake + first 100 B call",
                         tlsConnect, floor: floor100, floorSizes: Floor.Sizes(request: 100, reply: 100),
                         note: "50 new clients one after another (each dials synchronously, then calls once); ratio against the tcp:// floor's one call")
        let inProcess = try NNGRoundTrip.measure(payloadBytes: 100, iterations: floorCalls, warmup: 500)
        table.add(Row(size: label, measure: "floor for reference: NNGRoundTrip.measure (client and echo server in one process)",
                      value: "\(Table.micros(inProcess.p50Microseconds)) / \(Table.micros(inProcess.p99Microseconds))",
                      unit: "µs p50 / p99", note: "100 B each way; not used for the ratios"))

        var rng = SeededRNG(seed: options.seed &+ 1)
        let viewports = (0..<(warmupCalls + timedCalls)).map { _ in layer.randomViewport(&rng) }
        func viewportRequests(_ layerID: String) -> [V1.QueryViewportRequest] {
            viewports.map { V1.QueryViewportRequest(layerID: layerID, bounds: $0.bounds, zoom: $0.zoom) }
        }
        for (layerID, mode) in [(Self.tiledLayer, "TILED"), (Self.nativeLayer, "NATIVE, limit 1000")] {
            let requests = viewportRequests(layerID)
            var returned = 0, inView = 0
            Progress.log("[\(label)] QueryViewport \(layerID): \(timedCalls) calls")
            let s = try RPCTiming.measure(client, "QueryViewport", as: V1.QueryViewportResponse.self, floor: floor,
                                          warmup: Array(requests.prefix(warmupCalls)), timed: Array(requests.dropFirst(warmupCalls))) { r in
                returned += r.markers.count
                inView += Int(r.staticInViewCount + r.liveInViewCount)
            }
            table.addLatency(size: label, measure: "QueryViewport 1080x1920 px z12-16 near cities (\(mode))", s,
                             target: { Target(text: "p99 <= 2x floor at 10M", met: $0 <= 2, atTargetSize: n >= 10_000_000) },
                             note: String(format: "%d calls; avg %.0f markers in view, %.0f returned", timedCalls,
                                          Double(inView) / Double(timedCalls), Double(returned) / Double(timedCalls)))
        }

        let points = (0..<(warmupCalls + timedCalls)).map { _ in layer.randomHitPoint(&rng) }
        let hitRequests = points.map { V1.HitTestRequest(layerID: Self.tiledLayer, point: $0.point, zoom: $0.zoom) }
        var hits = 0, withHit = 0
        Progress.log("[\(label)] HitTest: \(timedCalls) calls")
        let h = try RPCTiming.measure(client, "HitTest", as: V1.HitTestResponse.self, floor: floor,
                                      warmup: Array(hitRequests.prefix(warmupCalls)), timed: Array(hitRequests.dropFirst(warmupCalls))) { r in
            hits += r.hits.count
            if !r.hits.isEmpty { withHit += 1 }
        }
        table.addLatency(size: label, measure: "HitTest near a random marker, z12-16 (tiled layer)", h,
                         target: { Target(text: "p99 <= 2x floor at 10M", met: $0 <= 2, atTargetSize: n >= 10_000_000) },
                         note: String(format: "%d calls; %.0f%% found a marker, avg %.1f hits", timedCalls,
                                      100 * Double(withHit) / Double(timedCalls), Double(hits) / Double(timedCalls)))
    }

    // MARK: Moves

    private func moves(_ client: MarkerdClient) throws {
        var rng = SeededRNG(seed: options.seed &+ 2)
        let singles = (0..<(warmupCalls + timedCalls)).map { _ in
            V1.MoveMarkersRequest(layerID: Self.tiledLayer, moves: layer.randomAPIMoves(1, &rng))
        }
        Progress.log("[\(label)] MoveMarkers x1: \(timedCalls) calls")
        let s = try RPCTiming.measure(client, "MoveMarkers", as: V1.MoveMarkersResponse.self, mutation: true, floor: floor,
                                      warmup: Array(singles.prefix(warmupCalls)), timed: Array(singles.dropFirst(warmupCalls))) { r in
            precondition(r.movedCount == 1, "a single move did not move")
        }
        table.addLatency(size: label, measure: "MoveMarkers, 1 marker per call (tiled layer)", s,
                         note: "\(timedCalls) calls, one in flight")

        let batches = (0..<options.moveBatches).map { _ in layer.randomAPIMoves(1000, &rng) }
        for inFlight in [1, 4] {
            Progress.log("[\(label)] MoveMarkers x1000: \(batches.count) batches, \(inFlight) in flight")
            final class Cursor: @unchecked Sendable {
                let lock = NSLock()
                var next = 0            // guarded by lock
                var error: Error?       // guarded by lock
            }
            let cursor = Cursor()
            let (_, elapsed) = timed {
                DispatchQueue.concurrentPerform(iterations: inFlight) { _ in
                    while true {
                        let i: Int? = cursor.lock.withLock {
                            guard cursor.error == nil, cursor.next < batches.count else { return nil }
                            defer { cursor.next += 1 }
                            return cursor.next
                        }
                        guard let i else { return }
                        do {
                            let r = try client.moveMarkers(Self.tiledLayer, batches[i])
                            if r.movedCount != 1000 { throw BenchError("moved \(r.movedCount) of 1000") }
                        } catch {
                            cursor.lock.withLock { cursor.error = error }
                        }
                    }
                }
            }
            if let error = cursor.error { throw error }
            let rate = Double(batches.count * 1000) / elapsed.seconds
            table.add(Row(size: label, measure: "MoveMarkers, batches of 1,000 small moves, \(inFlight) in flight",
                          value: Table.rate(rate), unit: "moves/s",
                          note: String(format: "%d batches in %.2f s (%.2f ms per batch)", batches.count, elapsed.seconds,
                                       elapsed.seconds * 1000 / Double(batches.count) * Double(inFlight))))
        }
    }

    // MARK: Load settings

    /// Loads min(N, 1M) markers into scratch layers with a few BulkLoader settings (each layer
    /// deleted afterwards) and reports the best.
    private func tuneLoad(_ client: MarkerdClient, serverPID: Int32) throws {
        let subset = n > 1_000_000 ? Array(markers.prefix(1_000_000)) : markers
        let settings = [(50_000, 4), (10_000, 4), (25_000, 2), (50_000, 2), (100_000, 2), (100_000, 4)]
        var results: [(batch: Int, inFlight: Int, rate: Double, cpu: String)] = []
        for (k, (batch, inFlight)) in settings.enumerated() {
            let id = "scratch-\(k)"
            _ = try client.createLayer(V1.CreateLayerRequest(layerID: id, options: nil))
            let s = try Loading.load(client, serverPID: serverPID, subset, into: id, batchSize: batch, concurrency: inFlight,
                                     label: "[\(label)] tune \(Table.count(batch)) x \(inFlight)")
            _ = try client.deleteLayer(id)
            results.append((batch, inFlight, s.markersPerSecond, s.cpuNote))
        }
        let best = results.max { $0.rate < $1.rate }!
        let all = results.map { "\(Table.count($0.batch))x\($0.inFlight): \(Table.rate($0.rate / 1000))k/s" }.joined(separator: ", ")
        table.add(Row(size: label, measure: "load via RPC, best BulkLoader setting (\(Table.count(best.batch)) x \(best.inFlight) in flight)",
                      value: Table.rate(best.rate), unit: "markers/s",
                      target: Target(text: ">= 1,000,000 markers/s", met: best.rate >= 1_000_000),
                      note: "\(Table.count(subset.count)) markers into a scratch layer of a server holding 2N; \(all); best: \(best.cpu)"))
    }
}

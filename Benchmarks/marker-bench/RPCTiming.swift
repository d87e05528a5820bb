import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdTransport

/// Timing of individual RPCs the way the floor is timed: from handing the encoded `Request`
/// envelope to NNG until the reply's bytes are back in the client's nng message (NNG round trip,
/// markerd's decode, dispatch, work and encode), interleaved with floor round trips of the same
/// sizes, whose clock stops at the same point. The client's own work is timed too, outside that
/// region: copying the reply out of the nng message into an array (`Series.latencyWithCopy`
/// includes it: up to 2026-11-30 it was inside the latency, which charged markerd with a client
/// copy of 76-300 KB that the floor never made), and its protobuf work (encoding the request,
/// decoding the reply), printed next to the row: it is the client's cost, not markerd's, and a
/// bare round trip has none.
///
/// The warm-up calls (other requests of the same distribution, through ``MarkerdClient``) give
/// the median request/reply sizes; then every timed RPC is paired with one timed floor round
/// trip of those sizes, so both series see the same machine noise. The floor goes first in every
/// other pair: the client decodes each reply after its pair, and whichever round trip comes
/// next runs with the caches that decoding left (up to 2026-11-30 that was always the RPC). Every timed reply is decoded
/// and checked (request id, status OK) and passed to `inspect`.
enum RPCTiming {
    /// Latencies of one series of calls and of its floor.
    struct Series {
        /// Request bytes in, reply bytes out (what `floor` measures for a bare round trip).
        var latency: LatencySummary
        /// `latency` plus the client's copy of the reply out of the nng message into an array
        /// (the latency as timed up to 2026-11-30).
        var latencyWithCopy: LatencySummary
        var floor: LatencySummary
        /// The client's encode + decode of each timed call (not part of `latency`).
        var clientCodec: LatencySummary
        /// Median request and reply sizes in bytes of the warm-up calls (the floor's sizes),
        /// whole NNG message bodies (the `Request` and `Response` envelopes with the payloads).
        var sizes: Floor.Sizes
        /// Median sizes of the timed calls (for the record: should be close to `sizes`).
        var timedSizes: Floor.Sizes
    }

    /// Calls `method` once per request (after `warmup.count` untimed calls) and times each call.
    /// `inspect` sees every timed response (outside the timed region). Mutations get a fresh
    /// idempotency key per call, like any client.
    static func measure<Request: ProtoMessage, Response: ProtoMessage>(
        _ client: MarkerdClient, _ method: String, as _: Response.Type, mutation: Bool = false,
        floor: Floor.Client, warmup: [Request], timed: [Request], inspect: (Response) -> Void = { _ in }
    ) throws -> Series {
        func call(_ r: Request) throws -> Response {
            mutation ? try client.mutate(method, r, as: Response.self) : try client.call(method, r, as: Response.self)
        }
        var requestSizes: [Int] = [], replySizes: [Int] = []
        for r in warmup {
            let response = try call(r)
            requestSizes.append(requestEnvelopeSize(method: method, payload: r, mutation: mutation))
            replySizes.append(replyEnvelopeSize(payload: response))
        }
        let sizes = Floor.Sizes(request: Stats.median(requestSizes), reply: Stats.median(replySizes))
        _ = try floor.measure(sizes, iterations: 1, warmup: 50)
        let raw = try NNGRequestClient(configuration: ClientConfiguration(url: client.url, maxMessageBytes: 256 << 20))
        defer { raw.close() }
        func encoded(_ r: Request) -> (id: UInt64, bytes: [UInt8]) {
            var envelope = V1.Request()
            envelope.method = "/markerd.v1.MarkerService/" + method
            envelope.requestID = UInt64.random(in: 1...UInt64.max)
            if mutation { envelope.idempotencyKey = MarkerdClient.newIdempotencyKey() }
            envelope.payload = r.serializedBytes()
            return (envelope.requestID, envelope.serializedBytes())
        }
        for r in warmup.prefix(20) { _ = try raw.call(encoded(r).bytes, timeout: .seconds(60)) }  // dial, warm up
        var micros: [Double] = [], copyMicros: [Double] = [], floorMicros: [Double] = [], codecMicros: [Double] = []
        micros.reserveCapacity(timed.count)
        copyMicros.reserveCapacity(timed.count)
        floorMicros.reserveCapacity(timed.count)
        codecMicros.reserveCapacity(timed.count)
        requestSizes.removeAll(keepingCapacity: true)
        replySizes.removeAll(keepingCapacity: true)
        let alternate = ProcessInfo.processInfo.environment["RPC_FLOOR_AFTER"] == nil
        func floorRoundTrip() throws { floorMicros.append(try floor.roundTrip(sizes).micros) }
        for r in timed {
            let encodeStart = ContinuousClock.now
            let (requestID, requestBytes) = encoded(r)
            let encode = ContinuousClock.now - encodeStart

            // Which of the two goes first alternates (`RPC_FLOOR_AFTER=1`: the RPC always first,
            // as before 2026-11-30), so that each follows the previous call's client work
            // (decoding the reply: for 4,096 clusters ~0.9 ms that leaves the client's caches
            // cold) equally often.
            let floorFirst = alternate && micros.count % 2 == 1
            if floorFirst { try floorRoundTrip() }
            let start = ContinuousClock.now
            var arrived = start
            let replyBytes = try raw.call(requestSize: requestBytes.count, timeout: .seconds(60),
                                          write: { out in requestBytes.withUnsafeBytes { out.copyMemory(from: $0) } },
                                          read: { reply in
                                              arrived = ContinuousClock.now
                                              return Array(reply.bindMemory(to: UInt8.self))
                                          })
            copyMicros.append((ContinuousClock.now - start).micros)
            micros.append((arrived - start).micros)
            if !floorFirst { try floorRoundTrip() }

            let decodeStart = ContinuousClock.now
            let reply = try V1.Response(serializedBytes: replyBytes)
            guard reply.requestID == requestID, reply.code == .ok else {
                throw BenchError("\(method): reply \(reply.requestID) code \(reply.code) \(reply.message)")
            }
            let response = try Response(serializedBytes: reply.payload)
            codecMicros.append((encode + (ContinuousClock.now - decodeStart)).micros)

            requestSizes.append(requestBytes.count)
            replySizes.append(replyBytes.count)
            inspect(response)
        }
        return Series(latency: LatencySummary(samplesMicros: micros), latencyWithCopy: LatencySummary(samplesMicros: copyMicros),
                      floor: LatencySummary(samplesMicros: floorMicros),
                      clientCodec: LatencySummary(samplesMicros: codecMicros),
                      sizes: sizes, timedSizes: Floor.Sizes(request: Stats.median(requestSizes), reply: Stats.median(replySizes)))
    }

    /// Bytes of the `Request` envelope ``MarkerdClient`` sends for `payload` (a random 64-bit
    /// request id, a 32-character idempotency key for mutations).
    static func requestEnvelopeSize<P: ProtoMessage>(method: String, payload: P, mutation: Bool) -> Int {
        var envelope = V1.Request()
        envelope.method = "/markerd.v1.MarkerService/" + method
        envelope.requestID = UInt64.max  // 10-byte varint, like most random ids
        if mutation { envelope.idempotencyKey = String(repeating: "0", count: 32) }
        envelope.payload = payload.serializedBytes()
        return envelope.serializedSize
    }

    /// Bytes of the OK `Response` envelope carrying `payload`.
    static func replyEnvelopeSize<P: ProtoMessage>(payload: P) -> Int {
        var envelope = V1.Response()
        envelope.requestID = UInt64.max
        envelope.code = .ok
        envelope.payload = payload.serializedBytes()
        return envelope.serializedSize
    }
}

/// Bulk loads through ``BulkLoader`` with progress lines.
enum Loading {
    /// One load: wall-clock rate and the CPU time each side used (CPU time is far less
    /// disturbed by other work on a shared machine than wall-clock time).
    struct Result {
        var summary: BulkLoader.Summary
        /// markerd's CPU time (user + system) during the load, in seconds.
        var serverCPUSeconds: Double
        /// marker-bench's CPU time during the load (encoding, NNG), in seconds.
        var clientCPUSeconds: Double
        /// The 1-minute load average at the end of the load.
        var loadAverage: Double

        var markersPerSecond: Double { summary.markersPerSecond }
        var seconds: Double { summary.seconds }

        /// "markerd CPU 2.1 µs/marker, client 0.9 µs/marker, loadavg 3.2"
        var cpuNote: String {
            let n = Double(max(1, summary.markers))
            return String(format: "markerd CPU %.2f µs/marker, client CPU %.2f µs/marker, loadavg %.1f",
                          serverCPUSeconds * 1e6 / n, clientCPUSeconds * 1e6 / n, loadAverage)
        }
    }

    /// Loads `markers` into `layerID` of the markerd with process id `serverPID` with
    /// `batchSize` markers per UpsertMarkers and `concurrency` calls in flight; logs progress
    /// about every 10 %.
    static func load(_ client: MarkerdClient, serverPID: Int32, _ markers: [V1.Marker], attributes: AttributeColumns? = nil, into layerID: String,
                     batchSize: Int = 50_000, concurrency: Int = 4, label: String) throws -> Result {
        let serverCPU0 = Machine.cpuSeconds(pid: serverPID) ?? 0, clientCPU0 = Machine.cpuSeconds(pid: getpid()) ?? 0
        let loader = BulkLoader(client: client, batchSize: batchSize, concurrency: concurrency)
        final class Threshold: @unchecked Sendable {
            let lock = NSLock()
            var next: Int  // guarded by lock: the next progress line is due at this many markers
            init(_ next: Int) { self.next = next }
        }
        let step = max(markers.count / 10, batchSize)
        let threshold = Threshold(step)
        Progress.log("\(label): loading \(Table.count(markers.count)) markers (batches of \(Table.count(batchSize)), \(concurrency) in flight)")
        let summary = try loader.load(markers, attributes: attributes, into: layerID) { p in
            threshold.lock.lock()
            defer { threshold.lock.unlock() }
            guard p.sent >= threshold.next, p.sent < p.total else { return }
            threshold.next += step
            Progress.log(String(format: "%@: %@ of %@ markers, %@ markers/s", label, Table.count(p.sent),
                                Table.count(p.total), Table.rate(p.markersPerSecond)))
        }
        let result = Result(summary: summary,
                            serverCPUSeconds: (Machine.cpuSeconds(pid: serverPID) ?? 0) - serverCPU0,
                            clientCPUSeconds: (Machine.cpuSeconds(pid: getpid()) ?? 0) - clientCPU0,
                            loadAverage: Machine.loadAverage ?? 0)
        Progress.log(String(format: "%@: %@ markers in %.2f s = %@ markers/s; %@", label, Table.count(summary.markers),
                            summary.seconds, Table.rate(summary.markersPerSecond), result.cpuNote))
        guard summary.created + summary.updated == markers.count else {
            throw BenchError("\(label): server reported \(summary.created) created + \(summary.updated) updated of \(markers.count)")
        }
        return result
    }
}

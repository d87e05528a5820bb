/// Bare NNG request/reply latency: an echo server (replying inline on the nng thread) and one
/// client calling it back to back. The floor every markerd query is compared to.
public enum NNGRoundTrip {
    public struct Result: Sendable, Equatable {
        public var payloadBytes: Int
        public var iterations: Int
        public var p50Microseconds: Double
        public var p99Microseconds: Double
        public var meanMicroseconds: Double
    }

    struct Echo: RequestHandler {
        func handle(_ request: IncomingRequest) {
            let body = request.body
            request.respond(size: body.count) { out in out.copyMemory(from: body) }
        }
    }

    /// Measures `iterations` sequential round trips of `payloadBytes` each way (after `warmup`
    /// unmeasured ones) over `url` (default tcp loopback on a free port). Throws ``NNGError`` if
    /// the server cannot start or a call fails.
    public static func measure(payloadBytes: Int, iterations: Int = 10_000, warmup: Int = 1_000,
                               url: String = "tcp://127.0.0.1:0",
                               timeout: Duration = .seconds(5)) throws(NNGError) -> Result {
        let server = NNGReplyServer(
            configuration: ServerConfiguration(listenURLs: [url], contexts: 4,
                                               maxMessageBytes: max(64 << 20, payloadBytes + 1024)),
            handler: Echo())
        try server.start()
        defer { server.stop(drainTimeout: .seconds(1)) }
        let client = try NNGRequestClient(
            configuration: ClientConfiguration(url: server.boundURLs[0],
                                               maxMessageBytes: max(64 << 20, payloadBytes + 1024)))
        defer { client.close() }
        let payload = (0..<payloadBytes).map { UInt8(truncatingIfNeeded: $0) }
        let clock = ContinuousClock()
        var samples: [Duration] = []
        samples.reserveCapacity(max(0, iterations))
        for i in 0..<(max(0, warmup) + max(1, iterations)) {
            let start = clock.now
            let size = try client.call(requestSize: payload.count, timeout: timeout,
                                       write: { out in payload.withUnsafeBytes { out.copyMemory(from: $0) } },
                                       read: { $0.count })
            let elapsed = clock.now - start
            guard size == payloadBytes else { throw NNGError(code: NNGError.protocolError.code, operation: "echo size") }
            if i >= warmup { samples.append(elapsed) }
        }
        let micros = samples.map { Double($0.components.seconds) * 1e6 + Double($0.components.attoseconds) / 1e12 }
            .sorted()
        func percentile(_ p: Double) -> Double {
            micros[min(micros.count - 1, Int((p * Double(micros.count)).rounded(.up)) - 1)]
        }
        return Result(payloadBytes: payloadBytes, iterations: micros.count,
                      p50Microseconds: percentile(0.50), p99Microseconds: percentile(0.99),
                      meanMicroseconds: micros.reduce(0, +) / Double(micros.count))
    }
}

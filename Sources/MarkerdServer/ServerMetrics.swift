import MarkerdAPI
import Synchronization

/// Per-method call counts by status code and latency histograms, and per-method histograms of
/// the stages of a call (``Stage``), in Prometheus text format.
///
/// Latency buckets are in microseconds (upper bounds): 50, 100, 250, 500, 1000, 2500, 5000,
/// 10000, 25000, 100000, 1000000, +Inf; stage buckets start finer: 5, 10, 25, 50, 100, 250,
/// 500, 1000, 2500, 5000, 10000, 100000, +Inf. Each record is one short mutex section (a call
/// records its latency and two stages: three; an inline call all three in one).
public final class ServerMetrics: Sendable {
    static let bucketsMicros: [Double] = [50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 100_000, 1_000_000]
    static let stageBucketsMicros: [Double] = [5, 10, 25, 50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 100_000]

    /// A stage of one call, timed on the server (`markerd_rpc_stage_microseconds`).
    public enum Stage: String, Sendable, CaseIterable {
        /// Receipt to the start of the handler on a worker thread: the hop from the nng thread
        /// (calls answered inline have none).
        case queued
        /// Receipt to the reply handed to nng, for calls answered on the nng thread
        /// (`RPCDispatcher.answerInline`). Its count is the number of calls answered inline.
        case inline
        /// The reply's hand-off to nng: message allocation, writing the envelope into it and
        /// `nng_ctx_send` (which writes to the socket when the connection is idle).
        case reply
    }

    private struct Histogram {
        var buckets: [UInt64]
        var sumMicros: Double = 0
        var count: UInt64 = 0

        init(bounds: [Double]) { buckets = Array(repeating: 0, count: bounds.count + 1) }

        mutating func add(_ micros: Double, bounds: [Double]) {
            var i = 0
            while i < bounds.count && micros > bounds[i] { i += 1 }
            buckets[i] += 1
            sumMicros += micros
            count += 1
        }

        /// Prometheus lines of the histogram `name` with `labels` (`key="value",...`).
        func text(_ name: String, labels: String, bounds: [Double]) -> String {
            var out = ""
            var cumulative: UInt64 = 0
            for (i, bound) in bounds.enumerated() {
                cumulative += buckets[i]
                out += "\(name)_bucket{\(labels),le=\"\(Int(bound))\"} \(cumulative)\n"
            }
            cumulative += buckets[bounds.count]
            out += "\(name)_bucket{\(labels),le=\"+Inf\"} \(cumulative)\n"
            out += "\(name)_sum{\(labels)} \(sumMicros)\n"
            out += "\(name)_count{\(labels)} \(count)\n"
            return out
        }
    }

    private struct MethodStats {
        var codes: [Int32: UInt64] = [:]
        var latency = Histogram(bounds: ServerMetrics.bucketsMicros)
        var stages: [Stage: Histogram] = [:]

        /// One finished call.
        mutating func record(code: V1.Code, micros: Double) {
            codes[code.rawValue, default: 0] += 1
            latency.add(micros, bounds: ServerMetrics.bucketsMicros)
        }

        /// One stage of a call.
        mutating func record(stage: Stage, micros: Double) {
            stages[stage, default: Histogram(bounds: ServerMetrics.stageBucketsMicros)].add(micros, bounds: ServerMetrics.stageBucketsMicros)
        }
    }

    private let stats = Mutex<[String: MethodStats]>([:])

    public init() {}

    /// Records one finished call. `method` is the short name ("UpsertMarkers") or "invalid".
    public func record(method: Substring, code: V1.Code, micros: Double) {
        let key = String(method)
        stats.withLock { all in all[key, default: MethodStats()].record(code: code, micros: micros) }
    }

    /// Records one call answered inline (`RPCDispatcher.answerInline`): OK in `micros` µs from
    /// receipt, its `inline` stage (the same `micros`) and its `reply` stage (`replyMicros`), in
    /// one mutex section (three `record` calls would take the lock three times).
    public func recordInline(method: String, micros: Double, replyMicros: Double) {
        stats.withLock { all in
            all[method, default: MethodStats()].record(code: .ok, micros: micros)
            all[method, default: MethodStats()].record(stage: .inline, micros: micros)
            all[method, default: MethodStats()].record(stage: .reply, micros: replyMicros)
        }
    }

    /// Records one `stage` of a call of `method` (short name) that took `micros` µs.
    public func record(stage: Stage, method: Substring, micros: Double) {
        let key = String(method)
        stats.withLock { all in all[key, default: MethodStats()].record(stage: stage, micros: micros) }
    }

    /// Calls of `method` (short name) whose `stage` was recorded so far.
    public func count(stage: Stage, method: String) -> UInt64 {
        stats.withLock { $0[method]?.stages[stage]?.count ?? 0 }
    }

    /// Microseconds from `start` to now.
    static func micros(since start: ContinuousClock.Instant) -> Double { micros(ContinuousClock.now - start) }

    /// `d` in microseconds.
    static func micros(_ d: Duration) -> Double {
        Double(d.components.seconds) * 1e6 + Double(d.components.attoseconds) / 1e12
    }

    /// Calls answered with `code` so far, over all methods.
    public func count(code: V1.Code) -> UInt64 {
        stats.withLock { all in all.values.reduce(0) { $0 + ($1.codes[code.rawValue] ?? 0) } }
    }

    /// Fence webhook deliveries (``FenceWebhooks``).
    public let webhooks = WebhookCounters()

    /// Prometheus text exposition format (version 0.0.4).
    public func prometheusText() -> String {
        let snapshot = stats.withLock { $0 }
        var out = webhooks.prometheusText()
        out += "# HELP markerd_rpc_calls_total RPC calls by method and status code.\n"
        out += "# TYPE markerd_rpc_calls_total counter\n"
        for (method, s) in snapshot.sorted(by: { $0.key < $1.key }) {
            for (code, n) in s.codes.sorted(by: { $0.key < $1.key }) {
                let name = V1.Code(rawValue: code)?.name ?? String(code)
                out += "markerd_rpc_calls_total{method=\"\(method)\",code=\"\(name)\"} \(n)\n"
            }
        }
        out += "# HELP markerd_rpc_latency_microseconds RPC latency from receipt to reply.\n"
        out += "# TYPE markerd_rpc_latency_microseconds histogram\n"
        let methods = snapshot.sorted(by: { $0.key < $1.key })
        for (method, s) in methods where s.latency.count > 0 {
            out += s.latency.text("markerd_rpc_latency_microseconds", labels: "method=\"\(method)\"", bounds: Self.bucketsMicros)
        }
        out += "# HELP markerd_rpc_stage_microseconds Stages of an RPC on the server: queued (receipt to worker start), "
            + "inline (receipt to reply handed to nng, answered on the nng thread), reply (reply written and handed to nng).\n"
        out += "# TYPE markerd_rpc_stage_microseconds histogram\n"
        for (method, s) in methods {
            for stage in Stage.allCases {
                guard let h = s.stages[stage] else { continue }
                out += h.text("markerd_rpc_stage_microseconds", labels: "method=\"\(method)\",stage=\"\(stage.rawValue)\"",
                              bounds: Self.stageBucketsMicros)
            }
        }
        return out
    }
}

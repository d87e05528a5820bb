import MarkerdAPI
import Synchronization

/// Per-method call counts by status code and latency histograms, in Prometheus text format.
///
/// Latency buckets are in microseconds (upper bounds): 50, 100, 250, 500, 1000, 2500, 5000,
/// 10000, 25000, 100000, 1000000, +Inf. Recording is one short mutex section.
public final class ServerMetrics: Sendable {
    static let bucketsMicros: [Double] = [50, 100, 250, 500, 1_000, 2_500, 5_000, 10_000, 25_000, 100_000, 1_000_000]

    private struct MethodStats {
        var codes: [Int32: UInt64] = [:]
        var buckets: [UInt64] = Array(repeating: 0, count: ServerMetrics.bucketsMicros.count + 1)
        var sumMicros: Double = 0
        var count: UInt64 = 0
    }

    private let stats = Mutex<[String: MethodStats]>([:])

    public init() {}

    /// Records one finished call. `method` is the short name ("UpsertMarkers") or "invalid".
    public func record(method: Substring, code: V1.Code, micros: Double) {
        stats.withLock { all in
            var s = all[String(method)] ?? MethodStats()
            s.codes[code.rawValue, default: 0] += 1
            var i = 0
            while i < Self.bucketsMicros.count && micros > Self.bucketsMicros[i] { i += 1 }
            s.buckets[i] += 1
            s.sumMicros += micros
            s.count += 1
            all[String(method)] = s
        }
    }

    /// Calls answered with `code` so far, over all methods.
    public func count(code: V1.Code) -> UInt64 {
        stats.withLock { all in all.values.reduce(0) { $0 + ($1.codes[code.rawValue] ?? 0) } }
    }

    /// Prometheus text exposition format (version 0.0.4).
    public func prometheusText() -> String {
        let snapshot = stats.withLock { $0 }
        var out = "# HELP markerd_rpc_calls_total RPC calls by method and status code.\n"
        out += "# TYPE markerd_rpc_calls_total counter\n"
        for (method, s) in snapshot.sorted(by: { $0.key < $1.key }) {
            for (code, n) in s.codes.sorted(by: { $0.key < $1.key }) {
                let name = V1.Code(rawValue: code)?.name ?? String(code)
                out += "markerd_rpc_calls_total{method=\"\(method)\",code=\"\(name)\"} \(n)\n"
            }
        }
        out += "# HELP markerd_rpc_latency_microseconds RPC latency from receipt to reply.\n"
        out += "# TYPE markerd_rpc_latency_microseconds histogram\n"
        for (method, s) in snapshot.sorted(by: { $0.key < $1.key }) {
            var cumulative: UInt64 = 0
            for (i, bound) in Self.bucketsMicros.enumerated() {
                cumulative += s.buckets[i]
                out += "markerd_rpc_latency_microseconds_bucket{method=\"\(method)\",le=\"\(Int(bound))\"} \(cumulative)\n"
            }
            cumulative += s.buckets[Self.bucketsMicros.count]
            out += "markerd_rpc_latency_microseconds_bucket{method=\"\(method)\",le=\"+Inf\"} \(cumulative)\n"
            out += "markerd_rpc_latency_microseconds_sum{method=\"\(method)\"} \(s.sumMicros)\n"
            out += "markerd_rpc_latency_microseconds_count{method=\"\(method)\"} \(s.count)\n"
        }
        return out
    }
}

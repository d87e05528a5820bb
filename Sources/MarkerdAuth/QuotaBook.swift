import Synchronization

/// Per-token quotas (``Limits``) at run time, by token name: a token bucket of requests (holding
/// `max(1, rps)`, refilled at `rps` per second), one of bytes (holding `bps`, refilled at `bps`
/// per second; a request is let in while it is not in debt, and its bytes and its reply's are
/// then taken, so one big reply is allowed and paid for after), and a count of expensive requests
/// in flight. Buckets start full; a reload that changes a token's limits keeps its bucket
/// (clamped to the new size). Thread-safe.
public final class QuotaBook: Sendable {
    /// Why a request was not let in, and when to try again.
    public struct Refusal: Error, Sendable, Equatable {
        public let retryAfter: Duration
        public let reason: String

        /// `retryAfter` in whole milliseconds, at least 1.
        public var retryAfterMilliseconds: UInt32 {
            let ms = (Double(retryAfter.components.seconds) * 1000 + Double(retryAfter.components.attoseconds) / 1e15).rounded(.up)
            return UInt32(min(max(ms, 1), Double(UInt32.max)))
        }
    }

    private struct Bucket {
        var requests: Double
        var bytes: Double
        var at: ContinuousClock.Instant
        var expensive = 0
    }
    private let buckets = Mutex<[String: Bucket]>([:])
    private let now: @Sendable () -> ContinuousClock.Instant

    /// Retry hint for a refused expensive request (no way to know when one in flight ends).
    public static let expensiveRetry: Duration = .milliseconds(50)

    /// `now`: the clock (tests pass their own).
    public init(now: @escaping @Sendable () -> ContinuousClock.Instant = { .now }) {
        self.now = now
    }

    /// Lets one request of `bytes` in for `grant` (taking one request and its bytes, and one
    /// expensive slot when `expensive`), or says when to retry. Always nil for a token without limits.
    public func admit(_ grant: Grant, bytes: Int, expensive: Bool) -> Refusal? {
        let limits = grant.limits
        guard !limits.isUnlimited else { return nil }
        let t = now()
        return buckets.withLock { all -> Refusal? in
            var b = refilled(all[grant.name], limits, t)
            defer { all[grant.name] = b }
            if let rps = limits.requestsPerSecond, b.requests < 1 {
                return Refusal(retryAfter: .seconds((1 - b.requests) / rps),
                               reason: "token \(grant.name) is over its \(Limits(requestsPerSecond: rps).fields.dropFirst()) request rate")
            }
            if let bps = limits.bytesPerSecond, b.bytes <= 0 {
                return Refusal(retryAfter: .seconds((1 - b.bytes) / bps),
                               reason: "token \(grant.name) is over its \(Limits(bytesPerSecond: bps).fields.dropFirst()) byte rate")
            }
            if expensive, let n = limits.concurrentExpensive, b.expensive >= n {
                return Refusal(retryAfter: Self.expensiveRetry,
                               reason: "token \(grant.name) has \(b.expensive) expensive requests in flight (expensive=\(n))")
            }
            if limits.requestsPerSecond != nil { b.requests -= 1 }
            if limits.bytesPerSecond != nil { b.bytes -= Double(bytes) }
            if expensive { b.expensive += 1 }
            return nil
        }
    }

    /// After a request let in by ``admit(_:bytes:expensive:)``: takes its reply's `bytes` and
    /// frees its expensive slot.
    public func finish(_ grant: Grant, replyBytes bytes: Int, expensive: Bool) {
        guard !grant.limits.isUnlimited else { return }
        buckets.withLock { all in
            guard var b = all[grant.name] else { return }
            if grant.limits.bytesPerSecond != nil { b.bytes -= Double(bytes) }
            if expensive { b.expensive = max(0, b.expensive - 1) }
            all[grant.name] = b
        }
    }

    /// Gives back what ``admit(_:bytes:expensive:)`` took for a request that did no work (the
    /// network-thread path declined it and a worker will admit it again).
    public func refund(_ grant: Grant, bytes: Int, expensive: Bool) {
        guard !grant.limits.isUnlimited else { return }
        buckets.withLock { all in
            guard var b = all[grant.name] else { return }
            if grant.limits.requestsPerSecond != nil { b.requests += 1 }
            if grant.limits.bytesPerSecond != nil { b.bytes += Double(bytes) }
            if expensive { b.expensive = max(0, b.expensive - 1) }
            all[grant.name] = b
        }
    }

    private func refilled(_ bucket: Bucket?, _ limits: Limits, _ t: ContinuousClock.Instant) -> Bucket {
        let requestCap = max(1, limits.requestsPerSecond ?? 1), byteCap = limits.bytesPerSecond ?? 0
        guard var b = bucket else { return Bucket(requests: requestCap, bytes: byteCap, at: t) }
        let elapsed = t > b.at ? Double((t - b.at).components.seconds) + Double((t - b.at).components.attoseconds) / 1e18 : 0
        b.requests = min(requestCap, b.requests + elapsed * (limits.requestsPerSecond ?? 0))
        b.bytes = min(byteCap, b.bytes + elapsed * (limits.bytesPerSecond ?? 0))
        b.at = max(b.at, t)
        return b
    }
}

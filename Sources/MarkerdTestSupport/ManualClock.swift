import Glibc
import Synchronization

/// A wall clock the test moves by hand, Unix ms: `start` (or, without one, the system's real-time
/// clock) plus what the test added with `advance`. Pass `read` as `ServiceConfiguration.clock`
/// (or `MarkerdNode`'s `clock:`) so that animations end and idempotency keys age when the test says,
/// not when the host gets round to it.
public final class ManualClock: Sendable {
    private let start: Int64?
    private let added = Atomic<Int64>(0)

    public init(_ start: Int64? = nil) { self.start = start }

    /// The clock's time, Unix ms.
    public var now: Int64 { (start ?? Self.systemUnixMs()) + added.load(ordering: .relaxed) }

    /// Moves the clock `ms` milliseconds ahead.
    public func advance(_ ms: Int64) { added.add(ms, ordering: .relaxed) }

    /// The clock as the closure the service takes.
    public var read: @Sendable () -> Int64 { { self.now } }

    private static func systemUnixMs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }
}

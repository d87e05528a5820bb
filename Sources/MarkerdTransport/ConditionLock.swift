#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// A pthread mutex with a condition variable (monotonic clock for timed waits).
/// Not recursive: never call into code that may take the same lock while holding it.
final class ConditionLock: @unchecked Sendable {
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)

    init() {
        pthread_mutex_init(mutex, nil)
        var attr = pthread_condattr_t()
        pthread_condattr_init(&attr)
        #if !canImport(Darwin)
        pthread_condattr_setclock(&attr, CLOCK_MONOTONIC)
        #endif
        pthread_cond_init(cond, &attr)
        pthread_condattr_destroy(&attr)
    }

    deinit {
        pthread_cond_destroy(cond)
        pthread_mutex_destroy(mutex)
        cond.deallocate()
        mutex.deallocate()
    }

    @inline(__always) func lock() { pthread_mutex_lock(mutex) }
    @inline(__always) func unlock() { pthread_mutex_unlock(mutex) }

    @inline(__always)
    func withLock<R, E: Error>(_ body: () throws(E) -> R) throws(E) -> R {
        lock()
        defer { unlock() }
        return try body()
    }

    /// Wakes every waiter. Call with or without the lock held.
    func broadcast() { pthread_cond_broadcast(cond) }

    /// Waits (lock held) until woken. Spurious wakeups happen: loop on the predicate.
    func wait() { pthread_cond_wait(cond, mutex) }

    /// Waits (lock held) at most `timeout`. Returns false once the time is up.
    func wait(timeout: Duration) -> Bool {
        let (secs, attos) = timeout.components
        if secs < 0 || (secs == 0 && attos <= 0) { return false }
        var now = timespec()
        clock_gettime(CLOCK_MONOTONIC, &now)
        let nanos = Int64(now.tv_nsec) + attos / 1_000_000_000
        var deadline = timespec()
        deadline.tv_sec = now.tv_sec + Int(min(secs, 1 << 40)) + Int(nanos / 1_000_000_000)
        deadline.tv_nsec = Int(nanos % 1_000_000_000)
        return pthread_cond_timedwait(cond, mutex, &deadline) == 0
    }
}

#if canImport(Glibc)
private import Glibc
#elseif canImport(Musl)
private import Musl
#elseif canImport(Darwin)
private import Darwin
#endif

/// One long-lived thread, parked on a condition variable between jobs, that runs the second half
/// of a two-band render (`TileRenderer.renderSweepBands`) while the calling thread runs the
/// first: no Dispatch worker pool (the non-sweep bands' extra CPU in markerd was blamed on its
/// threads running on after the bands, see `TileRenderer+Bands.swift`), one wake-up per render,
/// and the thread sleeps in `pthread_cond_wait` between renders.
///
/// One job at a time: a caller that finds the worker busy (another band render started between
/// `rendersRunning` checks) runs both halves itself, one after the other (`run` never waits
/// for another caller's job).
final class BandWorker: @unchecked Sendable {
    /// The process's worker, its thread started on first use.
    static let shared = BandWorker()

    /// Guards `job`, `busy` and `done`; `signal` is broadcast when a job is posted or finished.
    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let signal = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    private var job: (@Sendable () -> Void)? = nil
    /// A caller owns the worker (from posting its job until it has seen it done).
    private var busy = false
    private var done = false
    private var started = false

    private init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(signal, nil)
    }

    /// Runs `other` on the worker thread and `here` on the calling thread, and returns when both
    /// have finished. Both run on this thread, `here` first, when the worker is busy or its thread
    /// cannot be started.
    func run(_ other: @escaping @Sendable () -> Void, alongside here: () -> Void) {
        pthread_mutex_lock(mutex)
        let posted = !busy && startIfNeeded()
        if posted {
            busy = true
            done = false
            job = other
            pthread_cond_broadcast(signal)
        }
        pthread_mutex_unlock(mutex)
        here()
        guard posted else { other(); return }
        pthread_mutex_lock(mutex)
        while !done { pthread_cond_wait(signal, mutex) }
        busy = false
        pthread_mutex_unlock(mutex)
    }

    /// Starts the thread once (called with `mutex` held); false when it cannot be created.
    private func startIfNeeded() -> Bool {
        if started { return true }
        var thread = pthread_t()
        let context = Unmanaged.passRetained(self).toOpaque()
        let rc = pthread_create(&thread, nil, { context in
            Unmanaged<BandWorker>.fromOpaque(context!).takeUnretainedValue().loop()
            return nil
        }, context)
        guard rc == 0 else {
            Unmanaged<BandWorker>.fromOpaque(context).release()
            return false
        }
        pthread_detach(thread)
        started = true
        return true
    }

    /// The thread's body: waits for a job, runs it outside the lock, reports it done; forever.
    private func loop() {
        pthread_mutex_lock(mutex)
        while true {
            while job == nil { pthread_cond_wait(signal, mutex) }
            let work = job!
            job = nil
            pthread_mutex_unlock(mutex)
            work()
            pthread_mutex_lock(mutex)
            done = true
            pthread_cond_broadcast(signal)
        }
    }
}

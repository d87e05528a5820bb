#if canImport(Glibc)
private import Glibc
#elseif canImport(Darwin)
private import Darwin
#endif
private import Synchronization

/// One extra thread for the second band of `TileRenderer`'s two-band renders, parked on a
/// condition variable between jobs, instead of Dispatch's worker pool (with
/// `concurrentPerform`, markerd's CPU time per call grew for every tile, also the ones rendered
/// on one thread; see `defaultBandsAbove`). Runs one job at a time:
/// `start` hands over a job when the thread is idle (else returns false and the caller does the
/// work itself), `wait` blocks until that job has finished. The thread is started on first use
/// and lives as long as the process.
///
/// Small API on purpose: `start(job)` then, on the same thread, exactly one `wait()` (or `run`,
/// which does both around the caller's own half). What a job
/// computes goes back through a `Result` box (written by the job, read after `wait`).
final class BandThread: @unchecked Sendable {
    /// The process's band thread.
    static let shared = BandThread()

    /// A value handed from a job back to the thread that waits for it: written by the job only,
    /// read only after `wait()` returned (the condition variable's mutex orders the two).
    final class Result<T>: @unchecked Sendable {
        var value: T?
        init() {}
    }

    /// A job that either of two threads may do, whichever takes it first: the band thread when it
    /// starts, or the caller when it finds the band thread has not started yet (so a caller never
    /// waits for a band thread that got no core).
    final class Claim: Sendable {
        private let taken = Atomic<Bool>(false)
        init() {}
        /// True for the first caller only.
        func take() -> Bool { !taken.exchange(true, ordering: .acquiringAndReleasing) }
    }

    /// This thread's CPU time in seconds (CLOCK_THREAD_CPUTIME_ID; 0 if it cannot be read).
    static func threadCPUSeconds() -> Double {
        var ts = timespec()
        guard clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts) == 0 else { return 0 }
        return Double(ts.tv_sec) + Double(ts.tv_nsec) * 1e-9
    }

    private let mutex = UnsafeMutablePointer<pthread_mutex_t>.allocate(capacity: 1)
    private let cond = UnsafeMutablePointer<pthread_cond_t>.allocate(capacity: 1)
    // Guarded by `mutex`.
    private var job: (@Sendable () -> Void)? = nil
    private var busy = false
    private var finished = false
    private var thread: pthread_t? = nil

    private init() {
        pthread_mutex_init(mutex, nil)
        pthread_cond_init(cond, nil)
    }

    /// Hands `job` to the band thread and returns true, or returns false at once (job not run)
    /// when the thread is running another caller's job or cannot be started.
    func start(_ job: @escaping @Sendable () -> Void) -> Bool {
        pthread_mutex_lock(mutex)
        defer { pthread_mutex_unlock(mutex) }
        if busy { return false }
        if thread == nil {
            var t = pthread_t()
            let me = Unmanaged.passRetained(self).toOpaque()
            guard pthread_create(&t, nil, { arg in
                Unmanaged<BandThread>.fromOpaque(arg!).takeUnretainedValue().loop()
                return nil
            }, me) == 0 else {
                Unmanaged<BandThread>.fromOpaque(me).release()
                return false
            }
            thread = t
        }
        self.job = job
        busy = true
        finished = false
        pthread_cond_broadcast(cond)
        return true
    }

    /// `start` for a job that either thread may do (`claim`): the band thread runs `job` only if
    /// it takes the claim first, and then puts its thread CPU seconds in `seconds`.
    func start(claimed claim: Claim, seconds: Result<Double>, _ job: @escaping @Sendable () -> Void) -> Bool {
        start {
            guard claim.take() else { return }
            let t0 = BandThread.threadCPUSeconds()
            job()
            seconds.value = BandThread.threadCPUSeconds() - t0
        }
    }

    /// Runs `other` on the band thread and `here` on the calling thread, and returns when both
    /// have finished; both on this thread, `here` first, when the band thread is busy or cannot be
    /// started (never waits for another caller's job).
    func run(_ other: @escaping @Sendable () -> Void, alongside here: () -> Void) {
        let started = start(other)
        here()
        if started { wait() } else { other() }
    }

    /// Blocks until the job handed over by this caller's last successful `start` has finished.
    func wait() {
        pthread_mutex_lock(mutex)
        while !finished { pthread_cond_wait(cond, mutex) }
        busy = false
        pthread_mutex_unlock(mutex)
    }

    private func loop() {
        pthread_mutex_lock(mutex)
        while true {
            while job == nil { pthread_cond_wait(cond, mutex) }
            let run = job!
            job = nil
            pthread_mutex_unlock(mutex)
            run()
            pthread_mutex_lock(mutex)
            finished = true
            pthread_cond_broadcast(cond)
        }
    }
}

import Glibc

/// A reader/writer lock (pthread_rwlock, writer-preferring) guarding one layer: queries run
/// concurrently under the read lock; mutations of the layer are serialized under the write lock.
final class ReadWriteLock: @unchecked Sendable {
    private let lock: UnsafeMutablePointer<pthread_rwlock_t>

    init() {
        lock = .allocate(capacity: 1)
        var attr = pthread_rwlockattr_t()
        pthread_rwlockattr_init(&attr)
        // Writers first: a stream of readers must not starve 60 Hz drags and loads.
        pthread_rwlockattr_setkind_np(&attr, Int32(PTHREAD_RWLOCK_PREFER_WRITER_NONRECURSIVE_NP))
        pthread_rwlock_init(lock, &attr)
        pthread_rwlockattr_destroy(&attr)
    }

    deinit {
        pthread_rwlock_destroy(lock)
        lock.deallocate()
    }

    func withReadLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pthread_rwlock_rdlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }

    /// Runs `body` under the read lock if it can be taken without waiting; nil otherwise.
    func withReadLockIfFree<T>(_ body: () -> T) -> T? {
        guard pthread_rwlock_tryrdlock(lock) == 0 else { return nil }
        defer { pthread_rwlock_unlock(lock) }
        return body()
    }

    func withWriteLock<T, E: Error>(_ body: () throws(E) -> T) throws(E) -> T {
        pthread_rwlock_wrlock(lock)
        defer { pthread_rwlock_unlock(lock) }
        return try body()
    }
}

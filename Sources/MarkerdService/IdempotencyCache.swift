import Foundation
import Synchronization

/// Remembers the replies of recent mutations by idempotency key, so that a resent request
/// (NNG REQ resends after 60 s without a reply, and on reconnect) returns the first reply and
/// applies nothing.
///
/// - A key whose first call is still in flight (applied, waiting for its fsync) attaches the
///   repeat as a waiter: both get the same reply when the journal confirms.
/// - A key reused with a different method or payload (different digest) is a conflict.
/// - Only successful mutations are kept (their reply payload; the code is OK): a failed one
///   changed nothing and may be retried.
/// - Bounded by age and bytes: an entry older than `ttlMs` is forgotten (its key is new again),
///   and the oldest entries go first while the entries take more than `maxBytes`
///   (`IdempotencyStore` says what an entry counts for).
final class IdempotencyCache: Sendable {
    typealias Waiter = @Sendable (Result<[UInt8], RPCError>) -> Void

    enum Begin {
        /// The caller owns the key now: apply, then `complete` or `abandon`.
        case proceed
        /// Answered before: send this reply payload (code OK), apply nothing.
        case replay([UInt8])
        /// The first call is in flight; the waiter is called with its reply.
        case attached
        /// The key was used for another request.
        case conflict
    }

    private struct Pending {
        var digest: UInt64
        var waiters: [Waiter]
        /// Keys begin in this order (`inFlightMark`).
        var serial: UInt64
    }

    private struct State {
        var pending: [String: Pending] = [:]
        var nextSerial: UInt64 = 0
        var store = IdempotencyStore()
    }

    private let state = Mutex(State())
    /// Broadcast whenever a key in flight completes or fails (`waitForInFlight`).
    private let settled = NSCondition()
    /// How long a completed key is remembered, ms.
    let ttlMs: Int64
    /// The most bytes the completed entries may take (see `IdempotencyStore.overheadPerEntry`).
    let maxBytes: Int
    /// Unix ms now (`MarkerService.nowUnixMs` but in tests).
    let clock: @Sendable () -> Int64

    init(ttlMs: Int64, maxBytes: Int, clock: @escaping @Sendable () -> Int64) {
        self.ttlMs = ttlMs
        self.maxBytes = maxBytes
        self.clock = clock
    }

    /// Whether an entry from `atUnixMs` is still remembered at `now`.
    private func isLive(_ atUnixMs: Int64, now: Int64) -> Bool {
        let (age, overflow) = now.subtractingReportingOverflow(atUnixMs)
        return overflow ? atUnixMs > now : age < ttlMs
    }

    func begin(key: String, digest: UInt64, waiter: @escaping Waiter) -> Begin {
        let now = clock()
        return state.withLock { s in
            if var p = s.pending[key] {
                guard p.digest == digest else { return .conflict }
                p.waiters.append(waiter)
                s.pending[key] = p
                return .attached
            }
            if let done = liveEntry(key, in: &s.store, now: now) {
                return done.digest == digest ? .replay(done.payload) : .conflict
            }
            s.pending[key] = Pending(digest: digest, waiters: [], serial: s.nextSerial)
            s.nextSerial += 1
            return .proceed
        }
    }

    /// The remembered reply of `key` (its request's digest and reply payload), nil when the key
    /// is new (never completed, or expired). Cluster mode's apply of a logged record answers a key
    /// that is already applied from it (`MarkerService.applyLogged`), on every replica alike.
    func completed(key: String) -> (digest: UInt64, payload: [UInt8])? {
        let now = clock()
        return state.withLock { s in liveEntry(key, in: &s.store, now: now).map { ($0.digest, $0.payload) } }
    }

    /// The completed entry of `key` in `store` unless expired at `now`. Caller holds `state`.
    private func liveEntry(_ key: String, in store: inout IdempotencyStore, now: Int64) -> (digest: UInt64, atUnixMs: Int64, payload: [UInt8])? {
        var k = key
        guard let done = k.withUTF8({ store.find(UnsafeRawBufferPointer($0)) }), isLive(done.atUnixMs, now: now) else { return nil }
        return done
    }

    /// Records the reply payload of a successful first call and returns the waiters to answer.
    func complete(key: String, payload: [UInt8], atUnixMs: Int64) -> [Waiter] {
        let now = clock()
        defer { settled.broadcastLocked() }
        return state.withLock { s in
            guard let p = s.pending.removeValue(forKey: key) else { return [] }
            add(key, digest: p.digest, atUnixMs: atUnixMs, payload: payload, to: &s.store, now: now)
            return p.waiters
        }
    }

    /// The first call failed: forget the key (a retry applies afresh) and return the waiters.
    func abandon(key: String) -> [Waiter] {
        defer { settled.broadcastLocked() }
        return state.withLock { s in s.pending.removeValue(forKey: key)?.waiters ?? [] }
    }

    /// Marks the keys in flight now, for `waitForInFlight`.
    func inFlightMark() -> UInt64 {
        state.withLock { $0.nextSerial }
    }

    /// Waits until every key in flight at `mark` has completed (its reply is in the cache) or
    /// failed, or `stop()` is true (checked at least every 100 ms). A snapshot calls it before
    /// packing the keys: a mutation journaled before the snapshot's rotation is only in the
    /// journal segments that the snapshot lets go, so its key must be in the snapshot.
    func waitForInFlight(before mark: UInt64, stop: () -> Bool) {
        settled.lock()
        defer { settled.unlock() }
        while state.withLock({ $0.pending.values.contains { $0.serial < mark } }) && !stop() {
            _ = settled.wait(until: Date(timeIntervalSinceNow: 0.1))
        }
    }

    /// Restores a completed entry (journal replay, snapshots of format 1) unless it has expired.
    func restore(key: String, digest: UInt64, payload: [UInt8], atUnixMs: Int64) {
        let now = clock()
        guard isLive(atUnixMs, now: now) else { return }
        state.withLock { s in add(key, digest: digest, atUnixMs: atUnixMs, payload: payload, to: &s.store, now: now) }
    }

    /// Restores a chunk of `packed(from:maxBytes:)` (a snapshot section), skipping expired entries.
    func restore(packed: ArraySlice<UInt8>) throws(IdempotencyStore.DamagedChunk) {
        let now = clock()
        try state.withLock { (s) throws(IdempotencyStore.DamagedChunk) in
            try s.store.append(packed: packed) { isLive($0, now: now) }
            evict(&s.store, now: now)
        }
    }

    /// Forgets expired entries, then packs the entries numbered `from` onwards for a snapshot
    /// section (see `IdempotencyStore.packed`). Start at 0; nil when done.
    func packed(from: UInt64, maxBytes: Int) -> (bytes: [UInt8], next: UInt64)? {
        let now = clock()
        return state.withLock { s in
            evict(&s.store, now: now)
            return s.store.packed(from: from, maxBytes: maxBytes)
        }
    }

    /// Indexes the entries restored from a snapshot (else the next `begin` does): recovery
    /// calls it on another thread once the service is up.
    func indexRestoredEntries() {
        state.withLock { $0.store.indexPending() }
    }

    /// Takes over every completed entry of `other` (which is left empty).
    func adopt(_ other: IdempotencyCache) {
        let store = other.state.withLock { s in
            defer { s.store = IdempotencyStore() }
            return s.store
        }
        state.withLock { $0.store = store }
    }

    /// Completed entries remembered, and the bytes they count for.
    var usage: (count: Int, bytes: Int) { state.withLock { ($0.store.count, $0.store.bytes) } }

    private func add(_ key: String, digest: UInt64, atUnixMs: Int64, payload: [UInt8], to store: inout IdempotencyStore, now: Int64) {
        var k = key
        k.withUTF8 { key in
            guard (1...IdempotencyStore.maxKeyBytes).contains(key.count) else { return }
            payload.withUnsafeBytes { store.append(key: UnsafeRawBufferPointer(key), digest: digest, atUnixMs: atUnixMs, payload: $0) }
        }
        evict(&store, now: now)
    }

    /// Removes the oldest entries while they are expired or the entries take more than `maxBytes`.
    private func evict(_ store: inout IdempotencyStore, now: Int64) {
        while let at = store.oldestAtUnixMs, !isLive(at, now: now) || store.bytes > maxBytes {
            store.removeOldest()
        }
    }
}

extension NSCondition {
    /// Broadcasts under the lock (so that a waiter between its check and its wait is not missed).
    fileprivate func broadcastLocked() {
        lock()
        broadcast()
        unlock()
    }
}

import MarkerdAPI
import Synchronization

/// A reply kept for an idempotency key: what the first call answered.
public struct StoredReply: Sendable, Equatable {
    public var code: V1.Code
    public var message: String
    public var payload: [UInt8]

    public init(code: V1.Code, message: String, payload: [UInt8]) {
        self.code = code
        self.message = message
        self.payload = payload
    }
}

/// Remembers the replies of recent mutations by idempotency key, so that a resent request
/// (NNG REQ resends after 60 s without a reply, and on reconnect) returns the first reply and
/// applies nothing.
///
/// - A key whose first call is still in flight (applied, waiting for its fsync) attaches the
///   repeat as a waiter: both get the same reply when the journal confirms.
/// - A key reused with a different method or payload (different digest) is a conflict.
/// - Only successful mutations are kept: a failed one changed nothing and may be retried.
/// - Bounded: at most `capacity` keys (default 200,000), oldest first out.
final class IdempotencyCache: Sendable {
    typealias Waiter = @Sendable (StoredReply) -> Void

    enum Begin {
        /// The caller owns the key now: apply, then `complete` or `abandon`.
        case proceed
        /// Answered before: send this reply, apply nothing.
        case replay(StoredReply)
        /// The first call is in flight; the waiter is called with its reply.
        case attached
        /// The key was used for another request.
        case conflict
    }

    private enum Slot {
        case pending(digest: UInt64, waiters: [Waiter])
        case done(digest: UInt64, reply: StoredReply, atUnixMs: Int64)
    }

    private struct State {
        var slots: [String: Slot] = [:]
        var order: [String] = []   // insertion order of completed keys, for eviction
        var orderHead = 0
    }

    private let state = Mutex(State())
    let capacity: Int

    init(capacity: Int = 200_000) {
        self.capacity = capacity
    }

    func begin(key: String, digest: UInt64, waiter: @escaping Waiter) -> Begin {
        state.withLock { s in
            switch s.slots[key] {
            case nil:
                s.slots[key] = .pending(digest: digest, waiters: [])
                return .proceed
            case .pending(let d, var waiters):
                guard d == digest else { return .conflict }
                waiters.append(waiter)
                s.slots[key] = .pending(digest: d, waiters: waiters)
                return .attached
            case .done(let d, let reply, _):
                return d == digest ? .replay(reply) : .conflict
            }
        }
    }

    /// Records the reply of a successful first call and returns the waiters to answer.
    func complete(key: String, reply: StoredReply, atUnixMs: Int64) -> [Waiter] {
        state.withLock { s in
            guard case .pending(let digest, let waiters) = s.slots[key] else { return [] }
            s.slots[key] = .done(digest: digest, reply: reply, atUnixMs: atUnixMs)
            Self.remember(key, in: &s, capacity: capacity)
            return waiters
        }
    }

    /// The first call failed: forget the key (a retry applies afresh) and return the waiters.
    func abandon(key: String) -> [Waiter] {
        state.withLock { s in
            guard case .pending(_, let waiters) = s.slots[key] else { return [] }
            s.slots[key] = nil
            return waiters
        }
    }

    /// Restores a completed entry (journal replay, snapshot load).
    func restore(key: String, digest: UInt64, reply: StoredReply, atUnixMs: Int64) {
        state.withLock { s in
            if s.slots[key] == nil { Self.remember(key, in: &s, capacity: capacity) }
            s.slots[key] = .done(digest: digest, reply: reply, atUnixMs: atUnixMs)
        }
    }

    /// Completed entries, oldest first (for snapshots).
    func completedEntries() -> [(key: String, digest: UInt64, reply: StoredReply, atUnixMs: Int64)] {
        state.withLock { s in
            var out: [(key: String, digest: UInt64, reply: StoredReply, atUnixMs: Int64)] = []
            out.reserveCapacity(s.order.count - s.orderHead)
            for key in s.order[s.orderHead...] {
                if case .done(let d, let r, let at) = s.slots[key] { out.append((key, d, r, at)) }
            }
            return out
        }
    }

    var count: Int { state.withLock { $0.slots.count } }

    private static func remember(_ key: String, in s: inout State, capacity: Int) {
        s.order.append(key)
        while s.order.count - s.orderHead > capacity {
            let old = s.order[s.orderHead]
            s.orderHead += 1
            if case .done = s.slots[old] { s.slots[old] = nil }
        }
        if s.orderHead > 4096 && s.orderHead * 2 > s.order.count {
            s.order.removeFirst(s.orderHead)
            s.orderHead = 0
        }
    }
}

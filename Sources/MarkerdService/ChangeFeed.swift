import Foundation
import MarkerdAPI
import Synchronization

/// Hands every applied, durable mutation's `V1.ChangeEvent` to the feed's sinks (the NNG
/// publisher of `--publish`, the gateway's Server-Sent Events), in apply order, after the write
/// has been answered: a write pays for building its event and a short lock before its reply.
///
/// A mutation takes a ticket under its layer's write lock (so tickets follow the apply order)
/// and releases it once its reply is settled: with its event when the write is durable and
/// acknowledged, without one when it failed. Events go out in ticket order; a ticket released
/// early waits for the ones before it. The thread whose release makes events ready passes them
/// to the sinks (no lock held meanwhile; one such thread at a time, so the order holds; events
/// that become ready meanwhile are passed on by it too). No thread of its own: no wake-up
/// between a reply and its event. Every ticket taken must be released (`MarkerService.mutate`
/// does so on every path). With no sink, no ticket is taken and no event built.
public final class ChangeFeed: @unchecked Sendable {
    /// Called on a writing thread after its reply, one event at a time, in apply order. Must not block.
    public typealias Sink = @Sendable (V1.ChangeEvent) -> Void

    private let lock = NSLock()
    private var sinks: [Sink] = []              // guarded by lock
    private var nextTicket: UInt64 = 0          // guarded by lock: tickets handed out
    private var nextRelease: UInt64 = 0         // guarded by lock: first ticket not yet passed on
    private var settled: [UInt64: V1.ChangeEvent?] = [:]  // guarded by lock: released early
    private var ready: [V1.ChangeEvent] = []     // guarded by lock: to hand to the sinks
    private var passing = false                 // guarded by lock: a thread is passing `ready` on
    /// Whether any sink is attached (read without the lock on every write).
    private let active = Atomic<Bool>(false)

    public init() {}

    /// Adds a sink. Events applied before it was added are not passed to it.
    public func addSink(_ sink: @escaping Sink) {
        lock.lock()
        sinks.append(sink)
        lock.unlock()
        active.store(true, ordering: .releasing)
    }

    /// Whether events are wanted: when false, writes build none.
    var isActive: Bool { active.load(ordering: .acquiring) }

    /// A ticket, taken under the layer's write lock. Release it with `release`.
    func ticket() -> UInt64 {
        lock.lock()
        defer { lock.unlock() }
        nextTicket += 1
        return nextTicket - 1
    }

    /// Settles `ticket`: `event` is published once every earlier ticket is settled; nil publishes
    /// nothing. May pass events to the sinks on the calling thread before it returns.
    func release(_ ticket: UInt64, _ event: V1.ChangeEvent?) {
        lock.lock()
        if ticket != nextRelease {
            settled[ticket] = .some(event)
            lock.unlock()
            return
        }
        if let event { ready.append(event) }
        nextRelease += 1
        while let next = settled.removeValue(forKey: nextRelease) {
            if let next { ready.append(next) }
            nextRelease += 1
        }
        guard !passing else {  // the thread passing events on takes these too
            lock.unlock()
            return
        }
        passing = true
        while !ready.isEmpty {
            let batch = ready, current = sinks
            ready = []
            lock.unlock()
            for event in batch { for sink in current { sink(event) } }
            lock.lock()
        }
        passing = false
        lock.unlock()
    }
}

/// The change a mutation made, held between its apply (under the layer's write lock) and its
/// reply (`MarkerService.mutate`), where it is released to the feed.
final class PendingChange: @unchecked Sendable {
    /// Set under the layer's write lock; read after the reply is settled.
    var ticket: UInt64?
    var event: V1.ChangeEvent?
}

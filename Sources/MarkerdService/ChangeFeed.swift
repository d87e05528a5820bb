import Foundation
import MarkerdAPI
import Synchronization

/// Hands every applied, durable mutation's `V1.ChangeEvent` to the feed's sinks (the NNG
/// publisher of `--publish`, the gateway's Server-Sent Events), in apply order, on the feed's
/// own thread, so that a write pays only for building its event and a short lock.
///
/// A mutation takes a ticket under its layer's write lock (so tickets follow the apply order)
/// and releases it once its reply is settled: with its event when the write is durable and
/// acknowledged, without one when it failed. Events go out in ticket order; a ticket released
/// early waits for the ones before it. Every ticket taken must be released (`MarkerService.mutate`
/// does so on every path). With no sink, no ticket is taken and no event built.
public final class ChangeFeed: @unchecked Sendable {
    /// Called on the feed's thread, one event at a time, in apply order. Must not block.
    public typealias Sink = @Sendable (V1.ChangeEvent) -> Void

    private let condition = NSCondition()
    private var sinks: [Sink] = []              // guarded by condition
    private var nextTicket: UInt64 = 0          // guarded by condition: tickets handed out
    private var nextRelease: UInt64 = 0         // guarded by condition: first ticket not yet passed on
    private var settled: [UInt64: V1.ChangeEvent?] = [:]  // guarded by condition: released early
    private var ready: [V1.ChangeEvent] = []     // guarded by condition: to hand to the sinks
    private var started = false                 // guarded by condition
    /// Whether any sink is attached (read without the lock on every write).
    private let active = Atomic<Bool>(false)

    public init() {}

    /// Adds a sink (and starts the feed's thread with the first). Events applied before it was
    /// added are not passed to it.
    public func addSink(_ sink: @escaping Sink) {
        condition.lock()
        sinks.append(sink)
        let start = !started
        started = true
        condition.unlock()
        active.store(true, ordering: .releasing)
        if start {
            let t = Thread { [self] in run() }
            t.name = "markerd.feed"
            t.start()
        }
    }

    /// Whether events are wanted: when false, writes build none.
    var isActive: Bool { active.load(ordering: .acquiring) }

    /// A ticket, taken under the layer's write lock. Release it with `release`.
    func ticket() -> UInt64 {
        condition.lock()
        defer { condition.unlock() }
        nextTicket += 1
        return nextTicket - 1
    }

    /// Settles `ticket`: `event` is published once every earlier ticket is settled; nil publishes nothing.
    func release(_ ticket: UInt64, _ event: V1.ChangeEvent?) {
        condition.lock()
        defer { condition.unlock() }
        if ticket != nextRelease {
            settled[ticket] = .some(event)
            return
        }
        if let event { ready.append(event) }
        nextRelease += 1
        while let next = settled.removeValue(forKey: nextRelease) {
            if let next { ready.append(next) }
            nextRelease += 1
        }
        condition.signal()
    }

    private func run() {
        while true {
            condition.lock()
            while ready.isEmpty { condition.wait() }
            let batch = ready
            ready.removeAll(keepingCapacity: true)
            let current = sinks
            condition.unlock()
            for event in batch { for sink in current { sink(event) } }
        }
    }
}

/// The change a mutation made, held between its apply (under the layer's write lock) and its
/// reply (`MarkerService.mutate`), where it is released to the feed.
final class PendingChange: @unchecked Sendable {
    /// Set under the layer's write lock; read after the reply is settled.
    var ticket: UInt64?
    var event: V1.ChangeEvent?
}

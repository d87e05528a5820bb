import Dispatch
import MarkerdCore
import Synchronization

/// The second thread of bulk upserts (`MarkerLayer.upsert(_:now:spatialSlots:alongside:)`).
///
/// A load through RPC is serialized on the layer's write lock: measured during a 10M load,
/// the lock was held 98.9 % of the load's wall time while 13-27 % of the two cores sat idle. With this, a batch of new markers has its grid inserts made on this thread
/// while the lock holder files the ids and columns, so the lock is held for about the longer of
/// the two instead of their sum.
///
/// `run` never waits for a thread that has not started: the job is claimed once, by the helper
/// thread when it gets there first, else by the caller when it is done with its own part (then
/// the caller runs both in turn, as without a helper).
public final class BulkUpsertThread: ConcurrentWork {
    private let queue = DispatchQueue(label: "markerd.write-helper", qos: .userInitiated)

    /// One hand-over: `body` is claimed once (`state` 0 -> 1), by the helper thread (which then
    /// signals `done`) or by the caller (which then runs it itself).
    private final class Job: @unchecked Sendable {
        let state = Atomic<Int>(0)
        let done = DispatchSemaphore(value: 0)
        /// Set before the hand-over; cleared by whoever ran it, before `run` returns (so that
        /// the non-escaping closure it holds does not outlive `run`).
        var body: (() -> Void)?

        init(_ body: @escaping () -> Void) { self.body = body }

        func claim() -> Bool { state.compareExchange(expected: 0, desired: 1, ordering: .acquiringAndReleasing).exchanged }
    }

    public init() {}

    public func run(_ here: () -> Void, alongside there: () -> Void) {
        withoutActuallyEscaping(there) { there in
            let job = Job(there)
            queue.async {
                guard job.claim() else { return }
                job.body!()
                job.body = nil
                job.done.signal()
            }
            here()
            if job.claim() {
                job.body!()
                job.body = nil
            } else {
                job.done.wait()
            }
        }
    }
}

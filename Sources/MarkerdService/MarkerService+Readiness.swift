import Foundation
import MarkerdJournal

/// Whether markerd should get traffic (the gateway's `/readyz`) and whether it takes writes
/// (`markerd_writes_refused` in /metrics). A service exists only once recovery has finished
/// (`MarkerService.open` returns after it), so recovery needs no state of its own here: the
/// listeners are not open before.
public struct Readiness: Sendable, Equatable {
    /// Why writes are refused, nil while they are accepted: the journal's last failed write or
    /// fdatasync (e.g. disk full) while its writer retries. Writes are accepted again, without a
    /// restart, once a retry succeeds.
    public var writesRefused: String?
    /// Set once a graceful stop began (`MarkerService.beginDraining`).
    public var draining: Bool
    /// Cluster mode: set while the replica has not yet applied the replicated log up to its last
    /// sequence at start (`MarkerService.expectCatchUp(to:)`), with the sequences.
    public var catchingUp: String?

    public init(writesRefused: String? = nil, draining: Bool = false, catchingUp: String? = nil) {
        self.writesRefused = writesRefused
        self.draining = draining
        self.catchingUp = catchingUp
    }

    /// The one-line reason `/readyz` answers 503 with; nil when ready.
    public var notReadyReason: String? {
        if draining { return "draining: markerd is shutting down" }
        if let catchingUp { return catchingUp }
        return writesRefused.map { "writes refused: " + $0 }
    }
}

extension MarkerService {
    /// Readiness now (cheap: two loads under short locks).
    public var readiness: Readiness {
        Readiness(writesRefused: journal?.retryingAfter.map { "\($0)".replacingOccurrences(of: "\n", with: " ") },
                  draining: draining.load(ordering: .relaxed), catchingUp: replication?.catchingUp)
    }

    /// Marks the service as shutting down (readiness reports it); `close()` does too. Idempotent.
    public func beginDraining() {
        draining.store(true, ordering: .relaxed)
    }
}

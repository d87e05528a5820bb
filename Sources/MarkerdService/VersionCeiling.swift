import Foundation
import MarkerdAPI
import MarkerdJournal

/// The durable high-water mark of layer versions: no version is ever revealed for two different
/// states of a layer, across restarts, crashes, snapshots and re-created layers included.
///
/// Layer versions also rise with changes that are not journaled (DragTo, CancelDrag, animations
/// ending), and a mutation's new version can be read before its record is durable, so replaying
/// the journal cannot give a layer back the versions it had. Instead, as PostgreSQL's sequences
/// log values ahead, a version may only be revealed (in a reply, a tile version, an ETag, a
/// versioned URL) once a reservation at or above it is durable: every raise calls `cover(_:)`
/// under the layer's write lock first, and a version above the durable ceiling journals a
/// reservation record (`JournalRecord.version_ceiling`: the version plus `block`) and waits until
/// the journal reports it durable (per the fsync policy). Once half of a block is used, the next
/// one is journaled ahead without waiting, so a steady stream of changes does not wait.
///
/// Recovery `restore`s the highest reservation (snapshot header and journal records) and starts
/// every layer at a `fresh` version above it, so versions revealed before a crash are never
/// used again; a new layer also starts at a `fresh` version, above every version any layer has
/// had, so a layer deleted and created again does not repeat its predecessor's versions. Each
/// restart skips at most `block` + the number of layers versions. Drag ids are numbered from the
/// same sequence (`MarkerLayer.start(at:)`, BeginDrag covers the id it hands out), so a client's
/// drag id from before a restart never names another client's drag. Thread-safe.
final class VersionCeiling: @unchecked Sendable {
    /// Versions one reservation record covers beyond the version that needed it.
    static let block: UInt64 = 4096

    /// Where reservations go; nil when there is nothing to reserve in (ephemeral, or a service
    /// that is being recovered and only collects the reservations it reads).
    private let journal: Journal?
    private let cond = NSCondition()
    /// The highest version covered so far (the highest any layer has had). Guarded by `cond`.
    private var highest: UInt64 = 0
    /// Every version up to this one may be revealed: a reservation this high is durable.
    /// Guarded by `cond`.
    private var durable: UInt64 = 0
    /// The highest reservation journaled, durable or not. Guarded by `cond`.
    private var reserved: UInt64 = 0
    /// A reservation is journaled and not yet reported durable or failed. Guarded by `cond`.
    private var inFlight = false

    init(journal: Journal?) { self.journal = journal }

    /// The highest reservation journaled so far (or restored): what a snapshot records in its
    /// header. Read it after rotating the journal: it then covers every reservation the
    /// snapshot's journal segments hold.
    var reservedCeiling: UInt64 { cond.withLock { reserved } }

    /// Makes `version` revealable: returns at once when a durable reservation covers it, else
    /// journals one and waits until it is durable. Call under the layer's write lock, before
    /// raising the layer's version to `version` (so nothing changes when it fails).
    /// - Throws: UNAVAILABLE when the journal refuses the reservation or retries after a failed
    ///   write while the reservation waits (nothing is changed then).
    func cover(_ version: UInt64) throws(RPCError) {
        cond.lock()
        defer { cond.unlock() }
        try coverLocked(version)
    }

    /// A version above `minimum` and above every version covered so far, covered (`cover`):
    /// where a new or recovered layer's version starts.
    /// - Throws: as `cover`.
    func fresh(above minimum: UInt64 = 0) throws(RPCError) -> UInt64 {
        cond.lock()
        defer { cond.unlock() }
        let version = max(highest, minimum) + 1
        try coverLocked(version)
        return version
    }

    /// Recovery: a reservation read from a snapshot header or a journal record, durable by
    /// definition. Later `fresh` versions are above it.
    func restore(_ ceiling: UInt64) {
        cond.withLock {
            reserved = max(reserved, ceiling)
            durable = max(durable, ceiling)
            highest = max(highest, ceiling)
        }
    }

    /// Caller holds `cond`.
    private func coverLocked(_ version: UInt64) throws(RPCError) {
        highest = max(highest, version)
        guard let journal else { return }
        while version > durable {
            if !inFlight { try reserve(version + Self.block, in: journal) }
            // A reservation that meets a failing disk stays queued in the journal, which retries it
            // until it is written (`Journal.retryingAfter`): refuse rather than wait that long.
            if let failure = journal.retryingAfter {
                throw .unavailable("a version reservation waits for the journal, which retries after \(failure); "
                                   + "markerd cannot change layers until it takes writes again")
            }
            _ = cond.wait(until: Date(timeIntervalSinceNow: 0.01))
        }
        if !inFlight && highest + Self.block / 2 > durable {
            // Ahead of need; a failure here shows again at the reservation that is needed.
            try? reserve(highest + Self.block, in: journal)
        }
    }

    /// Journals a reservation of `ceiling`; its completion makes it durable and wakes waiters.
    /// Caller holds `cond` and no reservation is in flight.
    private func reserve(_ ceiling: UInt64, in journal: Journal) throws(RPCError) {
        var record = V1.JournalRecord()
        record.versionCeiling = ceiling
        do {
            try journal.append(building: { sequence in
                record.sequence = sequence
                return record.serializedBytes()
            }, completion: { [self] result in
                cond.withLock {
                    if case .success = result { durable = max(durable, ceiling) }
                    inFlight = false
                    cond.broadcast()
                }
            })
        } catch {
            throw .unavailable("the journal refused a version reservation (\(error)); markerd cannot change layers until it takes writes again")
        }
        inFlight = true
        reserved = max(reserved, ceiling)
    }
}

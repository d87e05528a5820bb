import Foundation
import MarkerdAPI
import MarkerdCore
import Synchronization

/// Cluster mode's replicated log as the service sees it: an ordered, replicated, acknowledged
/// sequence of records (MarkerdCluster's JetStream stream, one per replica group). The service
/// appends a mutation's record here instead of journaling it; every replica, the writer too, is
/// handed each record in log order (`MarkerService.applyLogged`) and applies it with the same
/// code the journal replay uses, so all replicas hold the same layers, markers and versions.
public protocol ReplicatedLog: AnyObject, Sendable {
    /// The largest record `append` takes, bytes (NATS's max_payload; 1 MiB by default).
    var maxRecordBytes: Int { get }

    /// Appends `record` and calls `completion` once: with its sequence (from 1) when the log
    /// acknowledged it (stored by a quorum of the group's servers), or with an error when it did
    /// not in time. A record that was not acknowledged may still be in the log (the ack was
    /// lost): it is then applied like any other. May block the calling thread until then.
    func append(_ record: [UInt8], completion: @escaping @Sendable (Result<UInt64, any Error>) -> Void)

    /// Publishes a snapshot exact at log sequence `sequence` (`bytes`: `ClusterSnapshot`'s
    /// encoding) to the group, replacing the one published before, and only then drops the
    /// log's records up to `sequence`. Does nothing when a snapshot covering `sequence` or more
    /// is published already. Blocks the calling thread.
    /// - Returns: where the snapshot lives, for CreateSnapshot's `path`.
    /// - Throws: when the snapshot is not published (the log is then left whole).
    func publishSnapshot(_ bytes: [UInt8], covering sequence: UInt64) throws -> String
}

/// The cluster-mode state of a service: the sequence applied so far, the writes of this replica
/// waiting for their record's apply, and the catch-up target `/readyz` waits for. Thread-safe.
final class Replication: @unchecked Sendable {
    typealias Waiter = @Sendable (Result<[UInt8], RPCError>) -> Void

    let log: any ReplicatedLog
    /// How long a write whose record was acknowledged waits for this replica to apply it when
    /// the call has no deadline, before it answers UNAVAILABLE (it is applied later all the
    /// same; a retry with its idempotency key gets its reply). 10 s.
    static let applyWait: Duration = .seconds(10)

    private struct Pending {
        let token: UInt64
        let digest: UInt64
        let finish: Waiter
    }

    private let cond = NSCondition()
    /// The last sequence applied. Guarded by `cond`.
    private var applied: UInt64 = 0
    /// This replica's writes by idempotency key (one per key: `IdempotencyCache.begin` lets one
    /// call of a key proceed at a time). Guarded by `cond`.
    private var pending: [String: Pending] = [:]
    private var nextToken: UInt64 = 0
    /// The log's last sequence when the replica started; nil once applied (see `catchingUp`).
    private var catchUpTarget: UInt64?
    /// Set when a record arrived after a gap (the log was purged below a sequence this replica
    /// had not applied): it applies nothing more. Guarded by `cond`.
    private var gap: String?
    /// Held by `applyLogged` for each record and by a cluster snapshot for its whole encoding,
    /// so that a snapshot is exact at the sequence applied.
    let applyLock = NSLock()
    /// Appends `record` and waits for the log's acknowledgement (for records no caller waits
    /// to see applied: DragTo).
    /// - Throws: RESOURCE_EXHAUSTED when it is larger than the log takes; UNAVAILABLE when the
    ///   log does not acknowledge it.
    func appendAndWait(_ record: [UInt8]) throws(RPCError) {
        guard record.count <= log.maxRecordBytes else {
            throw .resourceExhausted("the log record of \(record.count) bytes exceeds the \(log.maxRecordBytes) bytes the cluster's NATS servers take (max_payload)")
        }
        let done = DispatchSemaphore(value: 0)
        let outcome = Mutex<(any Error)?>(nil)
        log.append(record) { result in
            if case .failure(let error) = result { outcome.withLock { $0 = error } }
            done.signal()
        }
        done.wait()
        if let error = outcome.withLock({ $0 }) {
            throw .unavailable("the replicated log did not acknowledge the record (\(error)): retry")
        }
    }

    /// Layers whose animation expiry record this replica appended and has not applied yet (so
    /// that reads append one per layer at a time). Guarded by `cond`.
    private var expiring: Set<String> = []

    /// Appends an animation expiry record for `layerID` at `nowUnixMs`, on another thread,
    /// unless one of this replica's is pending for the layer.
    func requestExpiry(of layerID: String, nowUnixMs: Int64) {
        guard cond.withLock({ expiring.insert(layerID).inserted }) else { return }
        var record = V1.JournalRecord()
        record.method = MarkerService.expireAnimationsMethod
        record.payload = Array(layerID.utf8)
        record.appliedAtUnixMs = nowUnixMs
        let bytes = record.serializedBytes()
        DispatchQueue.global().async { [self] in
            log.append(bytes) { [self] result in
                if case .failure = result { expiryApplied(layerID) }  // a later read tries again
            }
        }
    }

    /// An expiry record of `layerID` was applied (or not appended): reads may append another.
    func expiryApplied(_ layerID: String) {
        _ = cond.withLock { expiring.remove(layerID) }
    }

    /// Called once when a gap stops the apply (see `MarkerService.onLogGap`). Set before the
    /// first record is applied.
    var gapHandler: (@Sendable (String) -> Void)?
    /// Log bytes applied since this replica last took a snapshot (for `--snapshot-every-bytes`).
    /// Guarded by `applyLock`.
    var bytesSinceSnapshot = 0

    init(log: any ReplicatedLog) { self.log = log }

    /// The last sequence this replica applied (0 before the first).
    var appliedSequence: UInt64 { cond.withLock { applied } }

    /// Why `/readyz` says not ready yet: the replica has not applied the log up to its last
    /// sequence at start (`expectCatchUp`); nil once it has.
    var catchingUp: String? {
        cond.withLock {
            gap ?? catchUpTarget.map { "catching up with the replicated log: applied sequence \(applied) of \($0)" }
        }
    }

    /// Starts the replica at a snapshot's sequence (before any record is applied).
    func restored(at sequence: UInt64) {
        cond.withLock { applied = sequence; cond.broadcast() }
    }

    /// Whether `sequence` follows the applied one; else records the gap (see `gap`) and returns
    /// its description, once.
    func checkContiguous(_ sequence: UInt64) -> (ok: Bool, gap: String?) {
        cond.withLock {
            if gap != nil { return (false, nil) }
            if sequence == applied + 1 { return (true, nil) }
            gap = "the replicated log continues at sequence \(sequence) but this replica applied only up to \(applied) (the records between were purged after a snapshot): restart it to restore the snapshot"
            return (false, gap)
        }
    }

    /// Sets the sequence the replica must have applied before it is ready.
    func expectCatchUp(to sequence: UInt64) {
        cond.withLock { catchUpTarget = sequence > applied ? sequence : nil }
    }

    /// Appends a write's record and registers `finish` to be answered by this replica's apply of
    /// it. Answers UNAVAILABLE through `finish` when the log does not acknowledge it, or when it
    /// is not applied here by `deadline` (else `applyWait`) after its acknowledgement.
    /// - Throws: RESOURCE_EXHAUSTED when the record is larger than the log takes (nothing sent).
    func submit(_ record: [UInt8], key: String, digest: UInt64, deadline: ContinuousClock.Instant?,
                finish: @escaping Waiter) throws(RPCError) {
        guard record.count <= log.maxRecordBytes else {
            throw .resourceExhausted("the write's log record of \(record.count) bytes exceeds the \(log.maxRecordBytes) bytes the cluster's NATS servers take (max_payload): send smaller batches")
        }
        let token = cond.withLock {
            nextToken += 1
            pending[key] = Pending(token: nextToken, digest: digest, finish: finish)
            return nextToken
        }
        log.append(record) { [self] result in
            switch result {
            case .failure(let error):
                take(key, token)?(.failure(.unavailable("the replicated log did not acknowledge the write (\(error)); it applies only if it reached the log after all: retry with the same idempotency key")))
            case .success(let sequence):
                let wait = deadline.map { $0 - .now } ?? Self.applyWait
                let ns = max(0, Int(MarkerService.milliseconds(wait))) * 1_000_000
                DispatchQueue.global().asyncAfter(deadline: .now() + .nanoseconds(ns)) { [self] in
                    let applied = appliedSequence
                    take(key, token)?(.failure(.unavailable("the write is in the replicated log as sequence \(sequence), but this replica has applied only up to \(applied): retry with the same idempotency key for its reply")))
                }
            }
        }
    }

    /// Removes and returns the waiter of `key` if it is still the submission `token`.
    private func take(_ key: String, _ token: UInt64) -> Waiter? {
        cond.withLock {
            guard let p = pending[key], p.token == token else { return nil }
            pending[key] = nil
            return p.finish
        }
    }

    /// Records that `sequence` is applied and returns this replica's waiter for the record's key
    /// (when its request has the record's digest: a different one waits for its own record).
    func applied(_ sequence: UInt64, key: String, digest: UInt64) -> Waiter? {
        cond.withLock {
            applied = sequence
            if let target = catchUpTarget, sequence >= target { catchUpTarget = nil }
            cond.broadcast()
            guard !key.isEmpty, let p = pending[key], p.digest == digest else { return nil }
            pending[key] = nil
            return p.finish
        }
    }

    /// Waits until `sequence` is applied, at most `timeout`.
    /// - Throws: UNAVAILABLE naming the sequence applied when it is not by then.
    func waitUntilApplied(_ sequence: UInt64, timeout: Duration) throws(RPCError) {
        let until = Date(timeIntervalSinceNow: Double(MarkerService.milliseconds(timeout)) / 1000)
        let reached = cond.withLock {
            while applied < sequence { if !cond.wait(until: until) { break } }
            return applied >= sequence
        }
        if !reached {
            throw .unavailable("this replica has applied the replicated log up to sequence \(appliedSequence), not yet min_sequence \(sequence): retry, or read from another replica")
        }
    }
}

extension MarkerService {
    /// Longest a read waits for `min_sequence` (`waitUntilApplied`): 2 s.
    public static let maxSequenceWait: Duration = .seconds(2)

    /// A cluster-mode service: no journal; every mutation goes through `log`, and the node hands
    /// each of the log's records, in order, to `applyLogged`. Not ready (`readiness`) until
    /// `expectCatchUp(to:)`'s sequence is applied.
    public convenience init(configuration: ServiceConfiguration, replicatedLog log: any ReplicatedLog) {
        var c = configuration
        c.dataDirectory = nil
        self.init(configuration: c, journal: nil, replication: Replication(log: log))
    }

    /// Whether the service runs in cluster mode (writes go through a replicated log).
    public var isReplicated: Bool { replication != nil }

    /// Cluster mode: the last sequence of the replicated log this replica applied; 0 on a
    /// single node.
    public var appliedSequence: UInt64 { replication?.appliedSequence ?? 0 }

    /// Cluster mode: `/readyz` answers 503 until the log is applied up to `sequence` (its last
    /// sequence when the replica started). No effect on a single node.
    public func expectCatchUp(to sequence: UInt64) {
        replication?.expectCatchUp(to: sequence)
    }

    /// Waits until this replica applied the log up to `sequence` (a read's `min_sequence`), at
    /// most `timeout` (capped at `maxSequenceWait`). Returns at once on a single node (which
    /// applies every write before it answers) and for 0.
    /// - Throws: UNAVAILABLE naming the applied sequence when it is not reached in time.
    public func waitUntilApplied(_ sequence: UInt64, timeout: Duration?) throws(RPCError) {
        guard let replication, sequence > 0 else { return }
        try replication.waitUntilApplied(sequence, timeout: min(timeout ?? Self.maxSequenceWait, Self.maxSequenceWait))
    }

    /// The log record of a mutation: a journal record (`V1.JournalRecord`) with the method,
    /// request payload, idempotency key, request digest and the time the apply uses, so that
    /// every replica's apply gives the same result.
    static func logRecord(kind: MutationKind, payload: [UInt8], key: String, digest: UInt64, nowUnixMs: Int64) -> [UInt8] {
        var record = V1.JournalRecord()
        record.method = kind.methodName
        record.idempotencyKey = key
        record.payload = payload
        record.appliedAtUnixMs = nowUnixMs
        record.requestDigest = digest
        return record.serializedBytes()
    }

    /// Applies the replicated log's record `sequence` (cluster mode; call in log order from one
    /// thread). A key already applied (a retry that reached the log through another replica) is
    /// a no-op answering the first reply, or INVALID_ARGUMENT for a different request, on every
    /// replica alike; otherwise the mutation applies as `mutate` would apply it live (its errors
    /// too: a failed one changes nothing). This replica's caller of the write gets the result.
    /// A sequence at or below the applied one (redelivered) is ignored.
    /// A record after a gap (purged records this replica missed) stops the apply: the replica
    /// answers not ready with the reason, and `onLogGap` is called once with it.
    public func applyLogged(sequence: UInt64, record bytes: [UInt8]) {
        guard let replication, sequence > replication.appliedSequence else { return }
        let contiguous = replication.checkContiguous(sequence)
        guard contiguous.ok else {
            if let gap = contiguous.gap { replication.gapHandler?(gap) }
            return
        }
        replication.applyLock.withLock {
            applyInOrder(sequence: sequence, record: bytes, replication)
            replication.bytesSinceSnapshot += bytes.count
        }
        maybeSnapshotClusterInBackground(replication)
    }

    /// The method of an animation expiry record (cluster mode's log only; payload: the layer id).
    static let expireAnimationsMethod = "markerd.ExpireAnimations"
    /// The method of a DragTo record (cluster mode's log only; payload: the DragToRequest).
    static let dragToMethod = "markerd.DragTo"

    /// Cluster mode's read-side expiry: markers whose animation ended are static for every read
    /// already (the core takes `now`), but turning them static for good raises the layer's
    /// version, which must happen at the same log position on every replica: a read that finds
    /// due animations appends an expiry record (at most one per layer in flight), and every
    /// replica expires the layer's animations ended by the record's time when it applies it.
    /// A single node expires them here.
    /// - Throws: UNAVAILABLE on a single node when the new version cannot be covered.
    func expireDueAnimations(_ h: LayerHandle, now: Int64) throws(RPCError) {
        guard let replication else {
            try h.expireAnimationsIfDue(nowUnixMs: now, versions, measurer: labelText)
            return
        }
        if h.lock.withReadLock({ h.layer.nextAnimationEnd.map { $0 <= now } ?? false }) {
            replication.requestExpiry(of: h.id, nowUnixMs: now)
        }
    }

    private func applyInOrder(sequence: UInt64, record bytes: [UInt8], _ replication: Replication) {
        var key = "", digest: UInt64 = 0
        let result: Result<[UInt8], RPCError>
        var repeated = false  // the key was applied before: nothing to remember anew
        let record = try? V1.JournalRecord(serializedBytes: bytes)
        if let record, record.method == Self.expireAnimationsMethod {
            let layerID = String(decoding: record.payload, as: UTF8.self)
            if let h = layers.withLock({ $0[layerID] }) {
                try? h.expireAnimationsIfDue(nowUnixMs: record.appliedAtUnixMs, versions, measurer: labelText)
            }
            replication.expiryApplied(layerID)
            _ = replication.applied(sequence, key: "", digest: 0)
        } else if let record, record.method == Self.dragToMethod {
            // A drag that ended or a layer deleted before this record: a no-op on every replica.
            if let r = try? V1.DragToRequest(serializedBytes: record.payload), let drag = DragID(r.dragID),
               let p = MarkerConversion.latLng(r.position), let h = layers.withLock({ $0[r.layerID] }) {
                h.lock.withWriteLock {
                    if !h.deleted { try? h.layer.dragTo(drag, p) }
                }
            }
            _ = replication.applied(sequence, key: "", digest: 0)
        } else if let record, let kind = MutationKind(methodName: record.method) {
            key = record.idempotencyKey
            digest = record.requestDigest
            if !key.isEmpty, let done = idempotency.completed(key: key) {
                repeated = true
                result = done.digest == digest ? .success(done.payload)
                    : .failure(.invalidArgument("idempotency_key \"\(key)\" was already used for a different request"))
            } else {
                let commit = MutationCommit(kind: kind, payload: record.payload, key: key, digest: digest,
                                            nowUnixMs: record.appliedAtUnixMs, context: nil, onDurable: nil, logSequence: sequence)
                // The record is durable (in the stream): every replica records the change in its
                // history and publishes it on its own feed, in log order.
                let pending = PendingChange()
                commit.pending = pending
                do throws(RPCError) {
                    result = .success(try apply(commit))
                } catch {
                    result = .failure(error)
                }
                if let ticket = pending.ticket {
                    if case .success = result { changeFeed.release(ticket, pending.event) } else { changeFeed.release(ticket, nil) }
                }
            }
            let waiter = replication.applied(sequence, key: key, digest: digest)
            if let waiter {
                waiter(result)  // `mutate`'s finish: remembers the key (or forgets it) and answers
            } else if case .success(let payload) = result, !key.isEmpty, !repeated {
                idempotency.restore(key: key, digest: digest, payload: payload, atUnixMs: record.appliedAtUnixMs)
            }
        } else {
            // Not a record this version writes: skipped alike on every replica of this version.
            _ = replication.applied(sequence, key: "", digest: 0)
        }
    }
}

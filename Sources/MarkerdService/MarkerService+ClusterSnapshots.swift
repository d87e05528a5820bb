import Foundation
import MarkerdAPI

/// A cluster-mode snapshot's bytes: the sections of a snapshot file (`SnapshotSection`, the
/// same as `writeSnapshotSections` writes to disk), each preceded by its length (4 bytes,
/// little-endian). The header's `covers_sequence` is the log sequence it is exact at; each
/// layer's `LayerState` restores its version, next drag id and open drag sessions exactly.
public enum ClusterSnapshot {
    /// Appends one encoded section to `out`.
    static func append(_ section: [UInt8], to out: inout [UInt8]) {
        withUnsafeBytes(of: UInt32(section.count).littleEndian) { out.append(contentsOf: $0) }
        out.append(contentsOf: section)
    }

    /// Calls `body` with each section of `bytes`, in order.
    /// - Throws: FAILED_PRECONDITION when a length runs past the end (truncated bytes);
    ///   `body`'s errors.
    static func forEachSection(_ bytes: [UInt8], _ body: ([UInt8]) throws -> Void) throws {
        var at = 0
        while at < bytes.count {
            guard bytes.count - at >= 4 else { throw RPCError.failedPrecondition("cluster snapshot truncated at byte \(at) of \(bytes.count)") }
            let n = Int(UInt32(bytes[at]) | UInt32(bytes[at + 1]) << 8 | UInt32(bytes[at + 2]) << 16 | UInt32(bytes[at + 3]) << 24)
            at += 4
            guard bytes.count - at >= n else { throw RPCError.failedPrecondition("cluster snapshot truncated in a section of \(n) bytes at byte \(at) of \(bytes.count)") }
            try body(Array(bytes[at..<at + n]))
            at += n
        }
    }
}

extension MarkerService {
    /// Cluster mode: the snapshot of this replica exact at the sequence it applied, with that
    /// sequence and its marker count. Holds the apply (`Replication.applyLock`) while it encodes,
    /// so the replica applies no record meanwhile (reads go on).
    /// - Throws: FAILED_PRECONDITION on a single node or before the first record is applied.
    public func encodeClusterSnapshot() throws -> (sequence: UInt64, bytes: [UInt8], markers: UInt64) {
        guard let replication else { throw RPCError.failedPrecondition("not in cluster mode") }
        return try replication.applyLock.withLock {
            let sequence = replication.appliedSequence
            guard sequence > 0 else {
                throw RPCError.failedPrecondition("this replica has applied no record of the replicated log yet: there is nothing to snapshot")
            }
            var out: [UInt8] = []
            let markers = try writeSnapshotSections(covering: sequence, versionCeiling: 0, openDrags: true, beforeKeys: {},
                                                    put: { ClusterSnapshot.append($0, to: &out) })
            replication.bytesSinceSnapshot = 0
            return (sequence, out, markers)
        }
    }

    /// Cluster mode, before the first record is applied: restores a snapshot
    /// (`encodeClusterSnapshot`'s bytes) exact at `sequence`; the replica then applies the log
    /// from `sequence + 1`.
    /// - Throws: when `bytes` are damaged (the replica is then unusable: start it over).
    public func restoreClusterSnapshot(_ bytes: [UInt8], sequence: UInt64) throws {
        guard let replication else { throw RPCError.failedPrecondition("not in cluster mode") }
        let pipeline = RecoveryPipeline()
        do {
            try ClusterSnapshot.forEachSection(bytes) { section in
                try pipeline.submit(exclusive: !Self.isMarkersSection(section) && !Self.isIdempotencySection(section)) {
                    try self.prepareSnapshotSection(section)
                }
            }
        } catch {
            try? pipeline.finish()
            throw error
        }
        try pipeline.finish()
        _ = finishRestores()
        idempotency.indexRestoredEntries()
        replication.restored(at: sequence)
    }

    /// Cluster mode: `handler` is called once, on the apply thread, when the log continues past
    /// records this replica never applied (they were purged after a snapshot while it lagged);
    /// it applies nothing more and answers not ready. markerd exits then, so that it restarts
    /// from the snapshot. Set before the log is followed.
    public func onLogGap(_ handler: @escaping @Sendable (String) -> Void) {
        replication?.gapHandler = handler
    }

    /// Cluster mode's CreateSnapshot (and the background one): encodes the snapshot exact at
    /// the applied sequence, publishes it to the group, which then drops the log up to it.
    func takeClusterSnapshot(_ replication: Replication) throws(RPCError) -> V1.CreateSnapshotResponse {
        let start = ContinuousClock.now
        do {
            let (sequence, bytes, markers) = try encodeClusterSnapshot()
            var response = V1.CreateSnapshotResponse()
            response.path = try replication.log.publishSnapshot(bytes, covering: sequence)
            response.markerCount = markers
            response.sizeBytes = UInt64(bytes.count)
            response.durationMs = UInt64(Self.milliseconds(ContinuousClock.now - start))
            return response
        } catch let e as RPCError {
            throw e
        } catch {
            throw .unavailable("the snapshot was not published to the cluster (the log is kept whole): \(error)")
        }
    }

    /// Cluster mode, on the apply thread: starts a snapshot on another thread once
    /// `snapshotEveryBytes` of log records were applied since this replica's last one (each
    /// replica does; `publishSnapshot` skips one covered by a snapshot already published).
    func maybeSnapshotClusterInBackground(_ replication: Replication) {
        let every = configuration.snapshotEveryBytes
        guard every > 0, replication.applyLock.withLock({ replication.bytesSinceSnapshot >= every }),
              snapshots.begin(wait: false) else { return }
        Thread.detachNewThread { [self] in
            do {
                let r = try takeClusterSnapshot(replication)
                FileHandle.standardError.write("markerd: cluster snapshot \(r.path): \(r.markerCount) markers, \(r.sizeBytes) bytes, \(r.durationMs) ms\n".data(using: .utf8)!)
            } catch {
                FileHandle.standardError.write("markerd: cluster snapshot failed: \(error)\n".data(using: .utf8)!)
            }
            snapshots.end(journalBytes: nil)
        }
    }
}

internal import Glibc

/// Progress of `Journal.open`, for start-up logging of large data sets.
public struct RecoveryProgress: Sendable {
    /// Bytes read so far (snapshot bytes count twice: one validation pass, one replay pass).
    public var bytesRead: Int64
    /// Estimated total (bytesRead may end slightly off if a damaged snapshot was skipped).
    public var totalBytes: Int64
    /// The file being read.
    public var file: String
}

/// What `Journal.open` recovered.
public struct RecoveryReport: Sendable, CustomStringConvertible {
    /// The snapshot replayed first (file name), nil if recovery started from empty state.
    public var snapshot: String?
    /// The sequence the snapshot covers (0 without a snapshot).
    public var coveredSequence: UInt64 = 0
    public var snapshotSections = 0
    /// Journal records replayed (those with sequence > coveredSequence).
    public var recordsReplayed = 0
    /// Segments read.
    public var segmentsRead = 0
    /// The sequence the next append gets.
    public var nextSequence: UInt64 = 1
    /// Things cut off or skipped: a torn tail, a damaged snapshot replaced by an older one,
    /// leftover temporary snapshots deleted.
    public var warnings: [String] = []

    public var description: String {
        var s = "recovered "
        s += snapshot.map { "snapshot \($0) (\(snapshotSections) sections, covers sequence \(coveredSequence)) + " } ?? "no snapshot + "
        s += "\(recordsReplayed) journal records from \(segmentsRead) segment(s); next sequence \(nextSequence)"
        for w in warnings { s += "\nwarning: " + w }
        return s
    }
}

extension Journal {
    /// Opens (creating if needed) the data directory, takes its `LOCK`, recovers, and returns a
    /// journal that appends from the next sequence.
    ///
    /// Recovery: deletes leftover `*.snap.tmp` and `journal.manifest.tmp` files; refuses
    /// (`.inconsistent`, naming the file) when the segment the manifest names as the newest is
    /// missing; picks the newest snapshot that validates
    /// (all section CRCs and the trailer; without `options.validateSnapshotFirst`, the newest
    /// one, validated while it is delivered: see `SnapshotDamagedWhileDelivered`) and that the
    /// journal continues from (a damaged newest
    /// snapshot is skipped with a warning if an older valid one - or a journal complete from
    /// sequence 1 - can take its place, and renamed `*.snap.corrupt`; otherwise its damage is
    /// the error); calls
    /// `snapshotSection` for each section in order; then calls `record` for every journal record
    /// with sequence > the covered sequence, in order, across segments, checking framing, CRCs
    /// and that sequences are contiguous (a gap is damage, except one wholly covered by the
    /// snapshot). A torn tail - damage in the last segment after which nothing valid follows - is
    /// truncated away with a warning in the report. Any other damage throws
    /// `JournalError.damaged(file:offset:reason:)` naming the file and byte offset (see
    /// `JournalCheck.repair`); a gap throws `.inconsistent`. Errors thrown by the callbacks abort
    /// recovery and are rethrown. Finally names the segment it appends to in the manifest. On
    /// any error the LOCK is released.
    ///
    /// Replay is fuzzy-snapshot safe: the snapshot may reflect state beyond its covered sequence,
    /// so the service's records must set state rather than adjust it (see the module docs).
    ///
    /// - Parameters:
    ///   - progress: called every ~1 MiB read and at the end of each file.
    ///   - snapshotSection: one snapshot section's bytes.
    ///   - record: a journal record's sequence and bytes.
    public static func open(
        directory: String,
        options: JournalOptions = JournalOptions(),
        progress: ((RecoveryProgress) -> Void)? = nil,
        snapshotSection: ([UInt8]) throws -> Void,
        record: (_ sequence: UInt64, _ payload: [UInt8]) throws -> Void
    ) throws -> (journal: Journal, report: RecoveryReport) {
        try FileIO.makeDirectory(directory)
        let lock = try DirectoryLock(directory: directory)
        do {
            var report = RecoveryReport()
            var listing = try DirectoryListing(directory: directory)
            for tmp in listing.temporaries {
                try FileIO.unlink(FileIO.join(directory, tmp))
                report.warnings.append("deleted unfinished \(tmp)")
            }
            if !listing.temporaries.isEmpty {
                try FileIO.fsyncDirectory(directory)
                listing.temporaries = []
            }

            if let missing = try listing.missingNewestSegment(directory: directory) {
                throw DirectoryListing.missingSegmentError(directory: directory, name: missing)
            }

            // Progress: estimate from the newest snapshot and the segments it leads to.
            var total: Int64 = 0
            var done: Int64 = 0
            if let newest = listing.snapshots.last {
                total += (options.validateSnapshotFirst ? 2 : 1) * ((try? FileIO.size(path: FileIO.join(directory, newest.name))) ?? 0)
            }
            let covers = listing.snapshots.last?.covered ?? 0
            let firstIndex = listing.segments.lastIndex { $0.first <= covers + 1 } ?? 0
            for s in listing.segments[firstIndex...] {
                total += (try? FileIO.size(path: FileIO.join(directory, s.name))) ?? 0
            }
            func reporter(_ file: String) -> ((Int64) -> Void)? {
                guard let progress else { return nil }
                let base = done
                return { at in progress(RecoveryProgress(bytesRead: base + at, totalBytes: max(total, base + at), file: file)) }
            }

            let trusted = options.validateSnapshotFirst ? nil : RecoveryPlan.trustingNewest(directory: directory, listing: listing)
            let plan = try trusted ?? RecoveryPlan.make(directory: directory, listing: listing, progress: reporter("snapshots"))
            report.warnings += plan.warnings
            for damaged in plan.rejected {
                // Out of the way, so that the next snapshot's fallback is a valid one.
                try FileIO.rename(FileIO.join(directory, damaged.name), FileIO.join(directory, damaged.name + ".corrupt"))
                report.warnings.append("renamed the damaged snapshot \(damaged.name) to \(damaged.name).corrupt")
            }
            if !plan.rejected.isEmpty { try FileIO.fsyncDirectory(directory) }
            if trusted == nil { done += plan.rejected.reduce(0) { $0 + $1.fileSize } + (plan.snapshot?.fileSize ?? 0) }
            let covered = plan.covered

            if let snap = plan.snapshot {
                let again = try Scanner.scanSnapshot(directory: directory, name: snap.name, covered: snap.covered,
                                                     progress: reporter(snap.name), onSection: snapshotSection)
                if let damage = again.damage {
                    if trusted != nil {
                        throw SnapshotDamagedWhileDelivered(damage: .damaged(file: FileIO.join(directory, snap.name),
                                                                             offset: damage.offset, reason: damage.reason))
                    }
                    throw JournalError.damaged(file: FileIO.join(directory, snap.name), offset: damage.offset,
                                               reason: damage.reason + " (the file changed during recovery)")
                }
                done += snap.fileSize
                report.snapshot = snap.name
                report.coveredSequence = covered
                report.snapshotSections = again.sections
            }

            var lastScan: SegmentScan?
            if let start = plan.startIndex {
                let segments = listing.segments
                var expected = segments[start].first
                for i in start..<segments.count {
                    let seg = segments[i]
                    let path = FileIO.join(directory, seg.name)
                    if seg.first != expected {
                        if seg.first > expected && seg.first <= covered + 1 {
                            report.warnings.append("records \(expected)...\(seg.first - 1) are missing before \(seg.name), but the snapshot covers them")
                        } else {
                            throw JournalError.inconsistent(
                                directory: directory,
                                reason: "journal segment \(JournalFormat.segmentName(firstSequence: expected)) is missing (sequence gap: \(i > start ? segments[i - 1].name : "the journal") ends before \(expected) but \(seg.name) starts at \(seg.first))")
                        }
                    }
                    var scan = try Scanner.scanSegment(directory: directory, name: seg.name, first: seg.first,
                                                       progress: reporter(seg.name), wantPayloads: true) { sequence, payload in
                        if sequence > covered {
                            try record(sequence, payload)
                            report.recordsReplayed += 1
                        }
                    }
                    done += scan.fileSize
                    report.segmentsRead += 1
                    if let damage = scan.damage {
                        if i == segments.count - 1 && damage.nothingValidFollows {
                            try FileIO.truncate(path, to: damage.offset)
                            report.warnings.append("torn tail cut off: \(seg.name) at offset \(damage.offset) (\(damage.reason)); removed \(damage.bytesFromOffset) bytes")
                            scan.fileSize = damage.offset
                        } else {
                            throw JournalError.damaged(file: path, offset: damage.offset,
                                                       reason: damage.reason + "; " + damage.followDescription + " - `markerd repair` keeps the records before it")
                        }
                    }
                    expected = scan.nextSequence
                    lastScan = scan
                }
            }

            let lastSequence = max(covered, (lastScan?.nextSequence ?? 1) - 1)
            let next = lastSequence + 1
            report.nextSequence = next
            let fd: Int32
            let activeFirst: UInt64
            let activeSize: Int64
            if let lastScan, lastScan.nextSequence == next {
                let path = FileIO.join(directory, lastScan.name)
                fd = try FileIO.open(path, O_WRONLY | O_APPEND)
                do { try FileIO.fsync(fd, path: path) } catch { FileIO.close(fd); throw error }
                activeFirst = lastScan.first
                activeSize = lastScan.fileSize
            } else {
                let path = FileIO.join(directory, JournalFormat.segmentName(firstSequence: next))
                fd = try FileIO.open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND)
                do { try FileIO.fsyncDirectory(directory) } catch { FileIO.close(fd); throw error }
                activeFirst = next
                activeSize = 0
            }
            do {
                if try JournalFormat.readManifest(directory: directory) != activeFirst {
                    try JournalFormat.writeManifest(directory: directory, newest: activeFirst, durable: true)
                }
            } catch {
                FileIO.close(fd)
                throw error
            }
            let journal = Journal(directory: directory, policy: options.policy, lock: lock, fd: fd,
                                  activeFirst: activeFirst, activeSize: activeSize, nextSequence: next, log: options.log)
            return (journal, report)
        } catch {
            lock.release()
            throw error
        }
    }
}

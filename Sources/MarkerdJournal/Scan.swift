/// Damage found in a segment: where, why, and what intact frames lie after it.
struct SegmentDamage {
    var offset: Int64
    var reason: String
    /// Bytes from `offset` to the end of the file.
    var bytesFromOffset: Int64
    /// Intact frames found after the damage (resynchronising byte by byte).
    var intactAfter: Int
    var intactFirst: UInt64?
    var intactLast: UInt64?
    /// The damage is a torn tail when nothing valid follows it (only acceptable in the last segment).
    var nothingValidFollows: Bool { intactAfter == 0 }

    var followDescription: String {
        guard intactAfter > 0 else { return "nothing valid follows" }
        return "\(intactAfter) intact record(s) follow (sequence \(intactFirst!)...\(intactLast!))"
    }
}

/// The result of reading one journal segment from its start.
struct SegmentScan {
    var name: String
    var first: UInt64
    var fileSize: Int64 = 0
    var records = 0
    var firstSequence: UInt64?
    var lastSequence: UInt64?
    /// End of the last good frame: the length the file is cut to if the damage is a torn tail.
    var validEnd: Int64 = 0
    var damage: SegmentDamage?
    /// The sequence the next record after this segment's valid part would have.
    var nextSequence: UInt64 { lastSequence.map { $0 + 1 } ?? first }
}

/// The result of reading one snapshot.
struct SnapshotScan {
    var name: String
    var covered: UInt64
    var fileSize: Int64 = 0
    var sections = 0
    var damage: (offset: Int64, reason: String)?
    var isValid: Bool { damage == nil }
}

enum Scanner {
    static let progressStep: Int64 = 1 << 20

    /// Reads a segment, checking framing, CRCs, and that sequences run contiguously from the
    /// segment's name. Stops at the first damage. `progress` gets absolute file offsets.
    static func scanSegment(
        directory: String, name: String, first: UInt64,
        progress: ((Int64) -> Void)? = nil,
        wantPayloads: Bool = false,
        onRecord: (UInt64, [UInt8]) throws -> Void = { _, _ in }
    ) throws -> SegmentScan {
        let reader = try FrameReader(path: FileIO.join(directory, name))
        var scan = SegmentScan(name: name, first: first)
        scan.fileSize = reader.fileSize
        var expected = first
        var lastReported: Int64 = 0
        loop: while true {
            switch try reader.next(copyPayload: wantPayloads) {
            case .end:
                break loop
            case let .frame(offset, sequence, payload):
                if sequence != expected {
                    let lo = min(sequence, expected)
                    let intact = try reader.intactFrames(after: offset, inclusive: true, window: lo...(lo &+ (1 << 32)))
                    scan.damage = SegmentDamage(
                        offset: offset, reason: "record has sequence \(sequence) where \(expected) was expected",
                        bytesFromOffset: reader.fileSize - offset,
                        intactAfter: intact.count, intactFirst: intact.first, intactLast: intact.last)
                    break loop
                }
                try onRecord(sequence, payload)
                scan.records += 1
                if scan.firstSequence == nil { scan.firstSequence = sequence }
                scan.lastSequence = sequence
                scan.validEnd = reader.offset
                expected += 1
                if let progress, reader.offset - lastReported >= progressStep {
                    lastReported = reader.offset
                    progress(reader.offset)
                }
            case let .damaged(offset, reason):
                let intact = try reader.intactFrames(after: offset, inclusive: false, window: expected...(expected &+ (1 << 32)))
                scan.damage = SegmentDamage(
                    offset: offset, reason: reason, bytesFromOffset: reader.fileSize - offset,
                    intactAfter: intact.count, intactFirst: intact.first, intactLast: intact.last)
                break loop
            }
        }
        progress?(reader.fileSize)
        return scan
    }

    /// Reads a snapshot: sections 1...n, the trailer (sequence 0) naming `covered` and n, then EOF.
    /// Without `wantPayloads`, `onSection` gets empty arrays (validation only: no copies).
    static func scanSnapshot(
        directory: String, name: String, covered: UInt64,
        progress: ((Int64) -> Void)? = nil,
        wantPayloads: Bool = true,
        onSection: ([UInt8]) throws -> Void = { _ in }
    ) throws -> SnapshotScan {
        let reader = try FrameReader(path: FileIO.join(directory, name))
        var scan = SnapshotScan(name: name, covered: covered)
        scan.fileSize = reader.fileSize
        var lastReported: Int64 = 0
        while true {
            switch try reader.next(copyPayload: wantPayloads) {
            case .end:
                scan.damage = (reader.fileSize, "no trailer: the snapshot is incomplete (\(scan.sections) sections read)")
                progress?(reader.fileSize)
                return scan
            case let .damaged(offset, reason):
                scan.damage = (offset, reason)
                progress?(reader.fileSize)
                return scan
            case let .frame(offset, sequence, payload):
                if sequence == 0 {
                    let magic = JournalFormat.snapshotTrailerMagic
                    guard payload.count == 24, Array(payload[0..<8]) == magic else {
                        scan.damage = (offset, "malformed trailer (\(payload.count) bytes)")
                        return scan
                    }
                    let c = payload[8..<16].withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
                    let n = payload[16..<24].withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
                    if c != covered {
                        scan.damage = (offset, "trailer says it covers sequence \(c), the file name says \(covered)")
                    } else if n != UInt64(scan.sections) {
                        scan.damage = (offset, "trailer counts \(n) sections, \(scan.sections) were read")
                    } else if reader.offset != reader.fileSize {
                        scan.damage = (reader.offset, "\(reader.fileSize - reader.offset) bytes after the trailer")
                    }
                    progress?(reader.fileSize)
                    return scan
                }
                if sequence != UInt64(scan.sections + 1) {
                    scan.damage = (offset, "section number \(sequence) where \(scan.sections + 1) was expected")
                    return scan
                }
                try onSection(payload)
                scan.sections += 1
                if let progress, reader.offset - lastReported >= progressStep {
                    lastReported = reader.offset
                    progress(reader.offset)
                }
            }
        }
    }
}

/// What recovery (and check/repair, which mirror it) will use: the newest usable snapshot and
/// the first segment to read.
struct RecoveryPlan {
    /// The snapshot replayed first, nil when recovery starts from empty state.
    var snapshot: SnapshotScan?
    var covered: UInt64 { snapshot?.covered ?? 0 }
    /// Snapshots newer than the chosen one that failed validation.
    var rejected: [SnapshotScan] = []
    /// Index in `listing.segments` of the first segment to read (the newest with first <= covered+1).
    var startIndex: Int?
    var warnings: [String] = []

    /// The newest snapshot, unvalidated, if the journal continues from it (nil: no snapshot,
    /// or a gap; `make` then explains). Its damage, if any, shows while it is replayed.
    static func trustingNewest(directory: String, listing: DirectoryListing) -> RecoveryPlan? {
        guard let newest = listing.snapshots.last,
              let size = try? FileIO.size(path: FileIO.join(directory, newest.name)) else { return nil }
        let start = listing.segments.lastIndex { $0.first <= newest.covered + 1 }
        guard listing.segments.isEmpty || start != nil else { return nil }
        var plan = RecoveryPlan()
        plan.snapshot = SnapshotScan(name: newest.name, covered: newest.covered, fileSize: size)
        plan.startIndex = start
        return plan
    }

    /// Validates snapshots newest first and picks the newest one the journal continues from.
    /// A damaged snapshot is skipped (with a warning) if an older valid snapshot, or a complete
    /// journal from sequence 1, can take its place; otherwise its damage is the error.
    static func make(directory: String, listing: DirectoryListing, progress: ((Int64) -> Void)? = nil) throws -> RecoveryPlan {
        var plan = RecoveryPlan()
        let segments = listing.segments
        func start(for covered: UInt64) -> Int? {
            segments.lastIndex { $0.first <= covered + 1 }
        }
        var base = 0 as Int64
        for snap in listing.snapshots.reversed() {
            let scan = try Scanner.scanSnapshot(directory: directory, name: snap.name, covered: snap.covered,
                                                progress: progress.map { p in { p(base + $0) } }, wantPayloads: false)
            base += scan.fileSize
            guard scan.isValid else {
                plan.rejected.append(scan)
                continue
            }
            if segments.isEmpty || start(for: scan.covered) != nil {
                plan.snapshot = scan
                plan.startIndex = start(for: scan.covered)
                break
            }
            if let newest = plan.rejected.first {
                throw JournalError.damaged(file: FileIO.join(directory, newest.name), offset: newest.damage!.offset,
                                           reason: newest.damage!.reason + "; the older snapshot \(scan.name) cannot replace it because the journal starts at sequence \(segments[0].first), after \(scan.covered + 1)")
            }
            throw JournalError.inconsistent(
                directory: directory,
                reason: "journal segment \(JournalFormat.segmentName(firstSequence: scan.covered + 1)) is missing (sequence gap: snapshot \(scan.name) covers up to \(scan.covered) but the oldest journal segment \(segments[0].name) starts at \(segments[0].first))")
        }
        if plan.snapshot == nil {
            if let newest = plan.rejected.first {
                // Every snapshot is damaged: only a journal complete from sequence 1 can stand in.
                guard let s = start(for: 0) else {
                    throw JournalError.damaged(file: FileIO.join(directory, newest.name), offset: newest.damage!.offset,
                                               reason: newest.damage!.reason + "; no older valid snapshot and the journal does not start at sequence 1")
                }
                plan.startIndex = s
            } else if let first = segments.first {
                guard first.first <= 1 else {
                    throw JournalError.inconsistent(
                        directory: directory,
                        reason: "journal segment \(JournalFormat.segmentName(firstSequence: 1)) is missing (sequence gap: no snapshot, and the oldest journal segment \(first.name) starts at \(first.first), not 1)")
                }
                plan.startIndex = 0
            }
        }
        for r in plan.rejected {
            plan.warnings.append("snapshot \(r.name) is damaged at offset \(r.damage!.offset) (\(r.damage!.reason)); using "
                + (plan.snapshot.map { "the older snapshot \($0.name)" } ?? "the journal from sequence 1") + " instead")
        }
        return plan
    }
}

/// The result of `JournalCheck.check` / `.repair`, printable for `markerd check DIR` /
/// `markerd repair DIR`.
public struct JournalCheckReport: Sendable, CustomStringConvertible {
    public enum Severity: String, Sendable, Comparable {
        case info, warning, error
        public static func < (a: Severity, b: Severity) -> Bool {
            let order: [Severity] = [.info, .warning, .error]
            return order.firstIndex(of: a)! < order.firstIndex(of: b)!
        }
    }

    /// One finding. `offset` is the byte offset in `file` when it concerns a place in it.
    public struct Problem: Sendable, CustomStringConvertible {
        public var severity: Severity
        public var file: String
        public var offset: Int64?
        public var message: String
        public var description: String {
            "\(severity.rawValue): \(file)" + (offset.map { " at offset \($0)" } ?? "") + ": " + message
        }
    }

    /// One file of the data directory.
    public struct FileSummary: Sendable, CustomStringConvertible {
        public enum Kind: String, Sendable { case segment, snapshot, manifest, temporary, other }
        public var name: String
        public var kind: Kind
        public var bytes: Int64
        /// Records (segment) or sections (snapshot) before any damage.
        public var records: Int
        public var firstSequence: UInt64?
        public var lastSequence: UInt64?
        /// Snapshot: the sequence it covers.
        public var coveredSequence: UInt64?
        /// "ok", "torn tail", "damaged", "covered by snapshot", ...
        public var status: String
        public var description: String {
            var s = "\(name): \(kind.rawValue), \(bytes) bytes"
            switch kind {
            case .segment:
                s += ", \(records) records"
                if let f = firstSequence, let l = lastSequence { s += " (sequence \(f)...\(l))" }
            case .snapshot:
                s += ", \(records) sections, covers sequence \(coveredSequence ?? 0)"
            default: break
            }
            return s + ", " + status
        }
    }

    public var directory: String
    public var files: [FileSummary] = []
    public var problems: [Problem] = []
    /// `repair` only: what it changed, in order, with exactly what was dropped.
    public var actions: [String] = []
    /// `repair` only: journal records (intact or damaged) and bytes removed.
    public var droppedRecords = 0
    public var droppedBytes: Int64 = 0
    /// The snapshot recovery would start from, its covered sequence, and the last journal sequence.
    public var recoverySnapshot: String?
    public var coveredSequence: UInt64 = 0
    public var lastSequence: UInt64 = 0
    /// Whether `Journal.open` would succeed on the directory as it now is (a torn tail is fine:
    /// open cuts it off).
    public var recoverable: Bool { !problems.contains { $0.severity == .error } }

    public var description: String {
        var lines = ["data directory \(directory)"]
        lines += files.map { "  " + $0.description }
        if !actions.isEmpty {
            lines.append("repair actions:")
            lines += actions.map { "  " + $0 }
            lines.append("  dropped \(droppedRecords) journal record(s), \(droppedBytes) bytes")
        }
        lines += problems.map { "  " + $0.description }
        lines.append(recoverable
            ? "recoverable: " + (recoverySnapshot.map { "snapshot \($0) (covers \(coveredSequence))" } ?? "no snapshot")
                + ", journal through sequence \(lastSequence)"
            : "NOT recoverable as is" + (actions.isEmpty ? "; `markerd repair` keeps the valid prefix" : ""))
        return lines.joined(separator: "\n")
    }
}

/// Offline verification and repair of a data directory (backs `markerd check` / `markerd repair`).
public enum JournalCheck {
    /// Reads every snapshot and segment in `directory` fully and reports files, record counts,
    /// sequence ranges and problems (file + byte offset). Changes nothing. Works while another
    /// process holds the LOCK (reported as info: a live writer's tail may look torn).
    public static func check(directory: String) throws -> JournalCheckReport {
        var lock: DirectoryLock?
        var lockedBy: JournalError?
        do { lock = try DirectoryLock(directory: directory) } catch let e as JournalError { lockedBy = e }
        defer { lock?.release() }
        var report = try analyse(directory: directory)
        if let lockedBy {
            report.problems.insert(.init(severity: .info, file: "LOCK", offset: nil,
                                         message: lockedBy.description + "; a live writer's last record may look torn"), at: 0)
        }
        return report
    }

    /// Takes the LOCK (throws `.directoryLocked` if in use) and makes the directory recoverable
    /// by keeping the valid prefix: deletes leftover `*.snap.tmp` / `journal.manifest.tmp`; renames damaged snapshots to
    /// `*.snap.corrupt` (kept for inspection, ignored by recovery); then, from the segment
    /// recovery starts at, truncates the first damaged segment at its first damaged record and
    /// deletes every later segment, or, at a sequence gap between segments, deletes the segment
    /// after the gap and all later ones. Every dropped record and byte is listed in `actions`.
    /// Segments wholly covered by the snapshot are not touched. Finally, when the segment the
    /// manifest names is missing (deleted, or dropped here), the manifest is made to name the
    /// newest remaining segment (or removed when none remains), accepting the loss of the
    /// records the missing segment held; a damaged manifest is rewritten the same way. The
    /// returned report is a check of the repaired directory plus the actions.
    public static func repair(directory: String) throws -> JournalCheckReport {
        let lock = try DirectoryLock(directory: directory)
        defer { lock.release() }
        var actions: [String] = []
        var droppedRecords = 0
        var droppedBytes: Int64 = 0
        var listing = try DirectoryListing(directory: directory)
        for tmp in listing.temporaries {
            try FileIO.unlink(FileIO.join(directory, tmp))
            actions.append("deleted unfinished \(tmp)")
        }
        for snap in listing.snapshots {
            let scan = try Scanner.scanSnapshot(directory: directory, name: snap.name, covered: snap.covered, wantPayloads: false)
            if let d = scan.damage {
                try FileIO.rename(FileIO.join(directory, snap.name), FileIO.join(directory, snap.name + ".corrupt"))
                actions.append("renamed damaged snapshot \(snap.name) to \(snap.name).corrupt (damage at offset \(d.offset): \(d.reason))")
            }
        }
        listing = try DirectoryListing(directory: directory)
        if let plan = try? RecoveryPlan.make(directory: directory, listing: listing), let start = plan.startIndex {
            let segments = listing.segments
            var expected = segments[start].first
            func drop(from index: Int) throws {
                for seg in segments[index...] {
                    let scan = try Scanner.scanSegment(directory: directory, name: seg.name, first: seg.first)
                    let records = scan.records + (scan.damage?.intactAfter ?? 0)
                    var what = "deleted \(seg.name): \(scan.fileSize) bytes, \(records) intact record(s)"
                    if let f = scan.firstSequence ?? scan.damage?.intactFirst {
                        what += " (sequence \(f)...\(scan.damage?.intactLast ?? scan.lastSequence ?? f))"
                    }
                    if let d = scan.damage { what += " plus damage at offset \(d.offset)" }
                    try FileIO.unlink(FileIO.join(directory, seg.name))
                    actions.append(what)
                    droppedRecords += records
                    droppedBytes += scan.fileSize
                }
            }
            for i in start..<segments.count {
                let seg = segments[i]
                if seg.first != expected && !(seg.first > expected && seg.first <= plan.covered + 1) {
                    actions.append("sequence gap: expected \(expected), \(seg.name) starts at \(seg.first); dropping it and every later segment")
                    try drop(from: i)
                    break
                }
                let scan = try Scanner.scanSegment(directory: directory, name: seg.name, first: seg.first)
                if let d = scan.damage {
                    try FileIO.truncate(FileIO.join(directory, seg.name), to: d.offset)
                    var what = "truncated \(seg.name) at offset \(d.offset) (\(d.reason)): dropped \(d.bytesFromOffset) bytes"
                    what += d.intactAfter > 0
                        ? " holding the damaged record and \(d.intactAfter) intact record(s) after it (sequence \(d.intactFirst!)...\(d.intactLast!))"
                        : " (the damaged record; nothing valid followed)"
                    actions.append(what)
                    droppedRecords += 1 + d.intactAfter
                    droppedBytes += d.bytesFromOffset
                    if i + 1 < segments.count { try drop(from: i + 1) }
                    break
                }
                expected = scan.nextSequence
            }
        }
        listing = try DirectoryListing(directory: directory)
        let missing: String?
        /// Points the manifest at the newest segment there is (or removes it when none is left), saying why.
        func resetManifest(_ why: String) throws {
            if let newest = listing.segments.last {
                try JournalFormat.writeManifest(directory: directory, newest: newest.first, durable: true)
                actions.append("\(why); \(JournalFormat.manifestName) now names \(newest.name)")
            } else {
                try FileIO.unlink(FileIO.join(directory, JournalFormat.manifestName))
                actions.append("\(why); removed \(JournalFormat.manifestName) (no segment remains)")
            }
        }
        do {
            missing = try listing.missingNewestSegment(directory: directory)
        } catch JournalError.damaged(_, _, let reason) {
            // Unreadable: name the newest segment there is (a missing newer one goes unnoticed).
            missing = nil
            try resetManifest("\(JournalFormat.manifestName) was damaged (\(reason))")
        }
        if let missing { try resetManifest("\(missing) is missing: the records it held are lost") }
        if !actions.isEmpty { try FileIO.fsyncDirectory(directory) }
        var report = try analyse(directory: directory)
        report.actions = actions.isEmpty ? ["nothing to repair"] : actions
        report.droppedRecords = droppedRecords
        report.droppedBytes = droppedBytes
        return report
    }

    static func analyse(directory: String) throws -> JournalCheckReport {
        var report = JournalCheckReport(directory: directory)
        let listing = try DirectoryListing(directory: directory)
        var plan: RecoveryPlan?
        do {
            if let missing = try listing.missingNewestSegment(directory: directory) {
                report.problems.append(.init(severity: .error, file: missing, offset: nil,
                                             message: "missing: \(JournalFormat.manifestName) names it as the newest journal segment; the records in it are lost unless it is restored (`markerd repair` accepts the loss)"))
            }
            plan = try RecoveryPlan.make(directory: directory, listing: listing)
        } catch let e as JournalError {
            var p = JournalCheckReport.Problem(severity: .error, file: directory, offset: nil, message: "recovery would fail: \(e)")
            if case let .damaged(file, offset, reason) = e { p = .init(severity: .error, file: file, offset: offset, message: reason) }
            report.problems.append(p)
        }
        for w in plan?.warnings ?? [] {
            report.problems.append(.init(severity: .warning, file: directory, offset: nil, message: w))
        }
        report.recoverySnapshot = plan?.snapshot?.name
        report.coveredSequence = plan?.covered ?? 0
        report.lastSequence = report.coveredSequence
        for tmp in listing.temporaries {
            let size = (try? FileIO.size(path: FileIO.join(directory, tmp))) ?? 0
            report.files.append(.init(name: tmp, kind: .temporary, bytes: size, records: 0, status: "unfinished, deleted by the next open"))
        }
        if let newest = try? JournalFormat.readManifest(directory: directory) {
            report.files.append(.init(name: JournalFormat.manifestName, kind: .manifest, bytes: 20, records: 0,
                                      status: "names \(JournalFormat.segmentName(firstSequence: newest)) as the newest segment"))
        }
        for other in listing.others {
            let size = (try? FileIO.size(path: FileIO.join(directory, other))) ?? 0
            report.files.append(.init(name: other, kind: .other, bytes: size, records: 0, status: "ignored"))
        }
        for snap in listing.snapshots {
            let scan = try Scanner.scanSnapshot(directory: directory, name: snap.name, covered: snap.covered, wantPayloads: false)
            var status = "ok"
            if let d = scan.damage {
                status = "DAMAGED"
                if plan != nil {
                    report.problems.append(.init(severity: .warning, file: snap.name, offset: d.offset,
                                                 message: d.reason + "; recovery skips this snapshot"))
                } else if !report.problems.contains(where: { $0.file.hasSuffix("/" + snap.name) }) {
                    report.problems.append(.init(severity: .error, file: snap.name, offset: d.offset, message: d.reason))
                }
            } else if plan?.snapshot?.name == snap.name {
                status = "ok, used by recovery"
            } else if let c = plan?.snapshot?.covered, snap.covered < c {
                status = "ok, superseded (the fallback should the newer one be damaged)"
                if !listing.segments.contains(where: { $0.first <= snap.covered + 1 }) {
                    status = "ok, superseded (no fallback: its journal is gone)"
                    report.problems.append(.init(severity: .warning, file: snap.name, offset: nil,
                                                 message: "kept as the fallback for a damaged newer snapshot, but the journal after it is missing (\(JournalFormat.segmentName(firstSequence: snap.covered + 1)) or an older segment); recovery does not need it"))
                }
            }
            report.files.append(.init(name: snap.name, kind: .snapshot, bytes: scan.fileSize, records: scan.sections,
                                      coveredSequence: snap.covered, status: status))
        }
        let start = plan?.startIndex ?? 0
        let covered = plan?.covered ?? 0
        var previous: SegmentScan?
        var scans: [SegmentScan] = []
        for (i, seg) in listing.segments.enumerated() {
            let scan = try Scanner.scanSegment(directory: directory, name: seg.name, first: seg.first)
            scans.append(scan)
            var status = "ok"
            let last = i == listing.segments.count - 1
            if i < start {
                status = "covered by snapshot (kept for the fallback; recovery does not read it)"
                if i > 0, seg.first != scans[i - 1].nextSequence, scans[i - 1].damage == nil {
                    let p = scans[i - 1]
                    report.problems.append(.init(severity: .warning, file: seg.name, offset: 0,
                                                 message: "records \(p.nextSequence)...\(seg.first - 1) are missing before this segment (the segment starting at \(p.nextSequence) was deleted?): recovery does not need them, but could not fall back to an older snapshot"))
                }
            } else if let p = previous, p.damage == nil, seg.first != p.nextSequence {
                if seg.first > p.nextSequence && seg.first <= covered + 1 {
                    report.problems.append(.init(severity: .warning, file: seg.name, offset: 0,
                                                 message: "records \(p.nextSequence)...\(seg.first - 1) missing before this segment, but covered by the snapshot"))
                } else {
                    report.problems.append(.init(severity: .error, file: seg.name, offset: 0,
                                                 message: "sequence gap: the previous segment \(p.name) ends before \(p.nextSequence), this one starts at \(seg.first): \(JournalFormat.segmentName(firstSequence: p.nextSequence)) is missing"))
                }
            }
            if let d = scan.damage {
                if i < start {
                    status = "damaged, but covered by snapshot"
                    report.problems.append(.init(severity: .warning, file: seg.name, offset: d.offset,
                                                 message: d.reason + "; covered by the snapshot, not read by recovery"))
                } else if last && d.nothingValidFollows {
                    status = "torn tail"
                    report.problems.append(.init(severity: .warning, file: seg.name, offset: d.offset,
                                                 message: "torn last record (\(d.reason)); recovery cuts off \(d.bytesFromOffset) bytes"))
                } else {
                    status = "DAMAGED"
                    report.problems.append(.init(severity: .error, file: seg.name, offset: d.offset,
                                                 message: d.reason + "; " + d.followDescription))
                }
            }
            if i >= start, scan.damage == nil || last { report.lastSequence = max(report.lastSequence, scan.nextSequence - 1) }
            report.files.append(.init(name: seg.name, kind: .segment, bytes: scan.fileSize, records: scan.records,
                                      firstSequence: scan.firstSequence, lastSequence: scan.lastSequence, status: status))
            if i >= start { previous = scan }
        }
        return report
    }
}

import Foundation
import MarkerdTestSupport
import Testing
@testable import MarkerdJournal

@Suite struct RecoveryTests {
    /// Offsets of each frame in a segment file.
    func frameOffsets(_ path: String) -> [Int] {
        let bytes = readFile(path)
        var offsets: [Int] = []
        var at = 0
        while at + 16 <= bytes.count {
            offsets.append(at)
            let len = Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24
            at += 16 + len
        }
        return offsets
    }

    /// Truncate the last record at every byte offset: recovery cuts it off with a warning and
    /// keeps everything before it; the journal then continues at the cut record's sequence.
    @Test func tornTailAtEveryOffset() throws {
        let base = makeTempDirectory()
        defer { removeDirectory(base) }
        try writeJournal(base, count: 6, rotateEvery: 4, size: 40)
        let segs = segmentFiles(base)
        let last = segs.last!
        let lastStart = frameOffsets(FileIO.join(base, last)).last!
        let end = Int(fileSize(FileIO.join(base, last)))
        let work = base + "-work"
        defer { removeDirectory(work) }
        for cut in lastStart..<end {
            copyDirectory(base, work)
            let path = FileIO.join(work, last)
            writeFile(path, Array(readFile(path)[..<cut]))
            let r = try recover(work)
            #expect(r.records.map(\.0) == Array(1...5), "cut at \(cut)")
            #expect(r.records.map(\.1) == (1...5).map { payload(UInt64($0), size: 40) })
            #expect(r.report.warnings.contains { $0.contains("torn tail") } == (cut > lastStart), "cut at \(cut)")
            #expect(fileSize(path) == Int64(lastStart))
            #expect(try appendAndWait(r.journal, payload(6)) == 6)
            try r.journal.close()
            let again = try recover(work)
            #expect(again.records.count == 6)
            try again.journal.close()
        }
        // A full-length last record with a bad CRC (and zero-filled tails) is torn too.
        for mutation in ["flip", "zero"] {
            copyDirectory(base, work)
            let path = FileIO.join(work, last)
            var bytes = readFile(path)
            if mutation == "flip" { bytes[end - 1] ^= 0x40 } else { for i in (lastStart + 4)..<end { bytes[i] = 0 } }
            writeFile(path, bytes)
            let check = try JournalCheck.check(directory: work)
            #expect(check.recoverable)
            #expect(check.problems.contains { $0.severity == .warning && $0.offset == Int64(lastStart) })
            let r = try recover(work)
            #expect(r.records.count == 5)
            #expect(r.report.warnings.contains { $0.contains("offset \(lastStart)") })
            try r.journal.close()
        }
    }

    /// A flipped byte in a middle record: recovery fails naming file and offset; check reports
    /// it; repair keeps the prefix, drops the later segment, and says what it dropped.
    @Test func corruptedMiddleRecord() throws {
        let dir = makeTempDirectory()
        defer { removeDirectory(dir) }
        try writeJournal(dir, count: 15, rotateEvery: 10, size: 100)
        let first = try #require(segmentFiles(dir).first)
        let path = FileIO.join(dir, first)
        let offsets = frameOffsets(path)
        try #require(offsets.count == 10)
        var bytes = readFile(path)
        bytes[offsets[4] + 16 + 50] ^= 0x01     // payload of record 5
        writeFile(path, bytes)

        do {
            _ = try recover(dir)
            Issue.record("recovery accepted a damaged middle record")
        } catch let JournalError.damaged(file, offset, reason) {
            #expect(file == path)
            #expect(offset == Int64(offsets[4]))
            #expect(reason.contains("CRC"))
            #expect(reason.contains("5 intact record(s) follow"))
        }
        let check = try JournalCheck.check(directory: dir)
        #expect(!check.recoverable, "\(check)")
        #expect(check.problems.contains { $0.severity == .error && $0.file == first && $0.offset == Int64(offsets[4]) })

        let repaired = try JournalCheck.repair(directory: dir)
        #expect(repaired.recoverable, "\(repaired)")
        #expect(repaired.droppedRecords == 11)   // 5...10 in the first segment (1 damaged + 5 intact), 11...15 in the second
        #expect(repaired.actions.contains { $0.contains("truncated \(first) at offset \(offsets[4])") })
        #expect(repaired.actions.contains { $0.contains("deleted journal-000000000000000b.log") && $0.contains("5 intact record(s)") })
        #expect(segmentFiles(dir) == [first])
        let r = try recover(dir)
        #expect(r.records.map(\.0) == Array(1...4))
        #expect(r.report.nextSequence == 5)
        try r.journal.close()
    }

    @Test func sequenceGapBetweenSegmentsIsDamage() throws {
        let dir = makeTempDirectory()
        defer { removeDirectory(dir) }
        try writeJournal(dir, count: 9, rotateEvery: 3)
        try FileManager.default.removeItem(atPath: FileIO.join(dir, JournalFormat.segmentName(firstSequence: 4)))
        #expect(throws: JournalError.self) { _ = try recover(dir) }
        let check = try JournalCheck.check(directory: dir)
        #expect(check.problems.contains { $0.severity == .error && $0.message.contains("gap") })
        let repaired = try JournalCheck.repair(directory: dir)
        #expect(repaired.recoverable)
        #expect(repaired.droppedRecords == 3)
        let r = try recover(dir)
        #expect(r.records.map(\.0) == [1, 2, 3])
        try r.journal.close()
    }

    func writeSnapshot(_ j: Journal, covered: UInt64, sections: [[UInt8]]) throws {
        let w = try j.makeSnapshotWriter(coveredSequence: covered)
        for s in sections { try w.append(s) }
        try w.commit()
    }

    @Test func snapshotWithoutJournal() throws {
        let dir = makeTempDirectory()
        defer { removeDirectory(dir) }
        let r = try recover(dir)
        for n in 1...10 { try appendAndWait(r.journal, payload(UInt64(n))) }
        let s = try r.journal.rotate()
        #expect(s == 10)
        let sections = (0..<5).map { payload(UInt64(100 + $0), size: 3000) }
        try writeSnapshot(r.journal, covered: s, sections: sections)
        let dropped = try r.journal.dropSegments(coveredBy: s)
        #expect(dropped.isEmpty)   // the first snapshot's fallback is the journal from sequence 1
        try r.journal.close()
        for seg in segmentFiles(dir) { try FileManager.default.removeItem(atPath: FileIO.join(dir, seg)) }
        // The manifest names the segment after the snapshot: its deletion is noticed.
        #expect(throws: DirectoryListing.missingSegmentError(directory: dir, name: "journal-000000000000000b.log")) {
            _ = try recover(dir)
        }
        // A directory from before the manifest cannot tell; the snapshot alone is recovered.
        try FileManager.default.removeItem(atPath: FileIO.join(dir, JournalFormat.manifestName))
        let again = try recover(dir)
        #expect(mismatch(again.sections, sections) == nil)
        #expect(again.records.isEmpty)
        #expect(again.report.nextSequence == 11)
        #expect(try appendAndWait(again.journal, payload(11)) == 11)
        try again.journal.close()
        let third = try recover(dir)
        #expect(third.records.map(\.0) == [11])
        try third.journal.close()
    }

    /// A snapshot may cover a sequence in the middle of a segment (the service's snapshots cover
    /// what was applied, not a rotation point): recovery replays exactly the records after it,
    /// from that segment on, validating the snapshot first or not.
    @Test(arguments: [true, false])
    func snapshotCoveringTheMiddleOfASegment(validateSnapshotFirst: Bool) throws {
        let dir = makeTempDirectory()
        defer { removeDirectory(dir) }
        try writeJournal(dir, count: 13, rotateEvery: 4)   // segments 1...4, 5...8, 9...12, 13
        #expect(segmentFiles(dir).count == 4)
        // Covers 6 (in the second segment), then 13 (in the last, active one) after two more records.
        for (covered, appended) in [(UInt64(6), UInt64(0)), (13, 2)] {
            let r = try recover(dir, validateSnapshotFirst: validateSnapshotFirst)
            let next = r.journal.nextSequenceNumber
            for n in next..<(next + appended) { try appendAndWait(r.journal, payload(n)) }
            let sections = [payload(1000 + covered, size: 100)]
            try writeSnapshot(r.journal, covered: covered, sections: sections)
            try r.journal.close()
            let last = next + appended - 1
            let again = try recover(dir, validateSnapshotFirst: validateSnapshotFirst)
            #expect(again.sections == sections)
            #expect(again.report.coveredSequence == covered)
            #expect(again.records.map(\.0) == Array((covered + 1)...last))
            #expect(again.records.allSatisfy { $0.1 == payload($0.0) })
            #expect(again.report.recordsReplayed == Int(last - covered))
            #expect(again.report.nextSequence == last + 1)
            try again.journal.close()
        }
    }

    /// Snapshot written while another thread keeps appending: recovery gives the sections and
    /// exactly the records after the covered sequence; dropSegments keeps the segments, which
    /// are the first snapshot's fallback.
    @Test func snapshotWithConcurrentAppendsRotationAndDrop() throws {
        let dir = makeTempDirectory()
        defer { removeDirectory(dir) }
        let r = try recover(dir)
        let j = r.journal
        for n in 1...50 { try appendAndWait(j, payload(UInt64(n))) }
        _ = try j.rotate()
        for n in 51...60 { try appendAndWait(j, payload(UInt64(n))) }
        let stop = DispatchSemaphore(value: 0)
        let finished = DispatchSemaphore(value: 0)
        let writer = Thread {
            var n: UInt64 = 61
            while stop.wait(timeout: .now()) == .timedOut {
                _ = try! j.append(payload(n)) { _ in }
                n += 1
                if n % 64 == 0 { usleep(100) }
            }
            finished.signal()
        }
        writer.start()
        let s = try j.rotate()
        #expect(s >= 60)
        let sections = (0..<200).map { payload(UInt64(10_000 + $0), size: 500) }
        try writeSnapshot(j, covered: s, sections: sections)
        let dropped = try j.dropSegments(coveredBy: s)
        #expect(dropped.isEmpty)
        stop.signal()
        finished.wait()
        try j.close()
        let total = j.nextSequenceNumber - 1
        let again = try recover(dir)
        #expect(mismatch(again.sections, sections) == nil)
        #expect(again.report.coveredSequence == s)
        // Half-open: empty when the writer appended nothing after the rotation (seen on a loaded machine).
        #expect(again.records.map(\.0) == Array((s + 1)..<(total + 1)))
        #expect(again.records.allSatisfy { $0.1 == payload($0.0) })
        try again.journal.close()
        #expect(try JournalCheck.check(directory: dir).recoverable)
    }

    @Test func leftoverTemporarySnapshotIsIgnoredAndDeleted() throws {
        let dir = makeTempDirectory()
        defer { removeDirectory(dir) }
        try writeJournal(dir, count: 5)
        let tmp = FileIO.join(dir, JournalFormat.snapshotName(coveredSequence: 5) + ".tmp")
        writeFile(tmp, Array(repeating: 0xAB, count: 1000))
        let check = try JournalCheck.check(directory: dir)
        #expect(check.recoverable)
        #expect(check.files.contains { $0.kind == .temporary })
        let r = try recover(dir)
        #expect(r.sections.isEmpty)
        #expect(r.records.count == 5)
        #expect(r.report.warnings.contains { $0.contains("unfinished snapshot") })
        #expect(!FileManager.default.fileExists(atPath: tmp))
        try r.journal.close()
    }

    @Test func corruptNewestSnapshotFallsBackOrFails() throws {
        let dir = makeTempDirectory()
        defer { removeDirectory(dir) }
        let r = try recover(dir)
        for n in 1...10 { try appendAndWait(r.journal, payload(UInt64(n))) }
        let s1 = try r.journal.rotate()
        try writeSnapshot(r.journal, covered: s1, sections: [Array("old".utf8)])
        try r.journal.dropSegments(coveredBy: s1)
        for n in 11...20 { try appendAndWait(r.journal, payload(UInt64(n))) }
        let s2 = try r.journal.rotate()
        try writeSnapshot(r.journal, covered: s2, sections: [Array("new".utf8), Array("new2".utf8)])
        // (crash before dropSegments(coveredBy: s2))
        for n in 21...25 { try appendAndWait(r.journal, payload(UInt64(n))) }
        try r.journal.close()

        let newest = FileIO.join(dir, JournalFormat.snapshotName(coveredSequence: s2))
        var bytes = readFile(newest)
        bytes[20] ^= 0xFF
        writeFile(newest, bytes)
        let bare = dir + "-bare"
        defer { removeDirectory(bare) }
        copyDirectory(dir, bare)
        let fallback = try recover(dir)
        #expect(fallback.sections == [Array("old".utf8)])
        #expect(fallback.records.map(\.0) == Array(11...25))
        #expect(fallback.report.warnings.contains { $0.contains("damaged") && $0.contains("snapshot-0000000000000014.snap") })
        try fallback.journal.close()

        // Without the older snapshot and its segments there is nothing to fall back to.
        let bareNewest = FileIO.join(bare, JournalFormat.snapshotName(coveredSequence: s2))
        try FileManager.default.removeItem(atPath: FileIO.join(bare, JournalFormat.snapshotName(coveredSequence: s1)))
        try FileManager.default.removeItem(atPath: FileIO.join(bare, JournalFormat.segmentName(firstSequence: 1)))
        try FileManager.default.removeItem(atPath: FileIO.join(bare, JournalFormat.segmentName(firstSequence: 11)))
        do {
            _ = try recover(bare)
            Issue.record("recovered without a usable snapshot")
        } catch let JournalError.damaged(file, offset, _) {
            #expect(file == bareNewest)
            #expect(offset == 19)   // the second section's frame (the first is 16 + 3 bytes)
        }
        let check = try JournalCheck.check(directory: bare)
        #expect(!check.recoverable)
        // A truncated snapshot (no trailer) is incomplete, hence damaged.
        writeFile(bareNewest, Array(JournalFormat.encodeFrame(sequence: 1, payload: [1, 2, 3])))
        #expect(throws: JournalError.self) { _ = try recover(bare) }
    }

    /// Without validation first, the newest snapshot is delivered while it is read; damage in
    /// it throws `SnapshotDamagedWhileDelivered` (after the sections before it), and a second
    /// open with validation falls back as usual.
    @Test func unvalidatedNewestSnapshot() throws {
        let dir = makeTempDirectory()
        defer { removeDirectory(dir) }
        let r = try recover(dir)
        for n in 1...10 { try appendAndWait(r.journal, payload(UInt64(n))) }
        let s1 = try r.journal.rotate()
        try writeSnapshot(r.journal, covered: s1, sections: [Array("old".utf8)])
        for n in 11...20 { try appendAndWait(r.journal, payload(UInt64(n))) }
        let s2 = try r.journal.rotate()
        try writeSnapshot(r.journal, covered: s2, sections: [Array("new".utf8), Array("new2".utf8)])
        for n in 21...25 { try appendAndWait(r.journal, payload(UInt64(n))) }
        try r.journal.close()

        let trusting = try recover(dir, validateSnapshotFirst: false)
        let validating = try { try trusting.journal.close(); return try recover(dir) }()
        #expect(trusting.sections == [Array("new".utf8), Array("new2".utf8)] && trusting.sections == validating.sections)
        #expect(trusting.records.map(\.0) == Array(21...25) && validating.records.map(\.0) == Array(21...25))
        #expect(trusting.report.nextSequence == validating.report.nextSequence)
        try validating.journal.close()

        let newest = FileIO.join(dir, JournalFormat.snapshotName(coveredSequence: s2))
        let intact = readFile(newest)
        var bytes = intact
        bytes[20] ^= 0xFF
        writeFile(newest, bytes)
        var delivered: [[UInt8]] = []
        do {
            _ = try recover(dir, validateSnapshotFirst: false, sectionsSeen: { delivered.append($0) })
            Issue.record("a damaged snapshot recovered")
        } catch let e as SnapshotDamagedWhileDelivered {
            guard case let .damaged(file, offset, _) = e.damage else { Issue.record("\(e)"); return }
            #expect(file == newest && offset == 19)
        }
        #expect(delivered == [Array("new".utf8)])
        let fallback = try recover(dir)
        #expect(fallback.sections == [Array("old".utf8)] && fallback.records.map(\.0) == Array(11...25))
        try fallback.journal.close()

        // A snapshot cut short (no trailer) is damage too, found at its end.
        writeFile(newest, Array(intact.prefix(intact.count - 10)))
        #expect(throws: SnapshotDamagedWhileDelivered.self) { _ = try recover(dir, validateSnapshotFirst: false) }
        // The directory LOCK was released: opening again works.
        try recover(dir).journal.close()
    }

    @Test func progressIsReported() throws {
        let dir = makeTempDirectory()
        defer { removeDirectory(dir) }
        try writeJournal(dir, count: 300, rotateEvery: 100, size: 10_000)
        var last = RecoveryProgress(bytesRead: 0, totalBytes: 0, file: "")
        var calls = 0
        let (j, _) = try Journal.open(directory: dir, progress: { last = $0; calls += 1 },
                                      snapshotSection: { _ in }, record: { _, _ in })
        try j.close()
        #expect(calls >= 3)
        #expect(last.bytesRead == last.totalBytes)
        #expect(last.totalBytes >= 300 * 10_016)
    }
}

import Foundation
import Glibc
import Testing
@testable import MarkerdJournal

/// Damage to a data directory that recovery and `markerd check` must catch: a deleted journal
/// segment anywhere (the newest one too, which leaves no gap), a damaged newest snapshot (with
/// the previous snapshot and its journal kept to fall back to), and the files' permissions.
@Suite struct DataDirectoryDamageTests {
    /// Appends `range` (waiting for each), then rotates and commits a snapshot covering
    /// everything so far with one section naming it, and drops what the journal no longer needs.
    @discardableResult
    func snapshot(_ j: Journal, after range: ClosedRange<UInt64>) throws -> (covered: UInt64, dropped: [String]) {
        for n in range { try appendAndWait(j, payload(n)) }
        let covered = try j.rotate()
        let w = try j.makeSnapshotWriter(coveredSequence: covered)
        try w.append(Array("state through \(covered)".utf8))
        try w.commit()
        return (covered, try j.dropSegments(coveredBy: covered))
    }

    func path(_ dir: String, _ name: String) -> String { FileIO.join(dir, name) }

    /// The message of the error `body` throws, or nil if it succeeds.
    func failure(_ body: () throws -> Void) -> String? {
        do { try body(); return nil } catch { return "\(error)" }
    }

    @Test func secondSnapshotKeepsThePreviousOneAndItsJournal() throws {
        let dir = makeTempDirectory()
        defer { removeDirectory(dir) }
        let j = try recover(dir).journal
        let s1 = try snapshot(j, after: 1...10)
        #expect(s1.dropped.isEmpty)   // the fallback of the first snapshot is the journal from sequence 1
        let s2 = try snapshot(j, after: 11...20)
        #expect(s2.dropped == [JournalFormat.segmentName(firstSequence: 1)])
        let s3 = try snapshot(j, after: 21...30)
        #expect(s3.dropped == [JournalFormat.segmentName(firstSequence: 11), JournalFormat.snapshotName(coveredSequence: 10)])
        try j.close()
        let names = try FileIO.list(dir)
        #expect(names.filter { $0.hasPrefix("snapshot-") } == [JournalFormat.snapshotName(coveredSequence: 20), JournalFormat.snapshotName(coveredSequence: 30)])
        #expect(names.filter { $0.hasPrefix("journal-") } == [JournalFormat.segmentName(firstSequence: 21), JournalFormat.segmentName(firstSequence: 31)])
    }

    /// One flipped byte in the newest snapshot: `check` calls it recoverable (naming the damaged
    /// file), and recovery replays the previous snapshot plus the journal, with a warning that
    /// names the damaged file, which it renames `.corrupt`.
    @Test func damagedNewestSnapshotFallsBackToThePreviousOne() throws {
        let dir = makeTempDirectory()
        defer { removeDirectory(dir) }
        let j = try recover(dir).journal
        try snapshot(j, after: 1...10)
        try snapshot(j, after: 11...20)
        let s3 = try snapshot(j, after: 21...30)
        for n in UInt64(31)...35 { try appendAndWait(j, payload(n)) }
        try j.close()
        let newest = JournalFormat.snapshotName(coveredSequence: s3.covered)
        var bytes = readFile(path(dir, newest))
        bytes[20] ^= 0x01
        writeFile(path(dir, newest), bytes)

        let check = try JournalCheck.check(directory: dir)
        #expect(check.recoverable)
        #expect(check.recoverySnapshot == JournalFormat.snapshotName(coveredSequence: 20))
        #expect(check.problems.contains { $0.severity == .warning && $0.file == newest })
        let r = try recover(dir)
        #expect(r.sections == [Array("state through 20".utf8)])
        #expect(r.records.map(\.0) == Array(21...35))
        #expect(r.records.allSatisfy { $0.1 == payload($0.0) })
        #expect(r.report.warnings.contains { $0.contains(newest) && $0.contains("damaged") })
        #expect(FileManager.default.fileExists(atPath: path(dir, newest + ".corrupt")))
        #expect(!FileManager.default.fileExists(atPath: path(dir, newest)))
        try r.journal.close()
    }

    /// Deleting the newest segment after a snapshot leaves no gap between the segments that
    /// remain (none remain here): the manifest names it, so open and check refuse naming it;
    /// `repair` accepts the loss.
    @Test func deletedNewestSegmentAfterASnapshotIsDetected() throws {
        let dir = makeTempDirectory()
        defer { removeDirectory(dir) }
        let j = try recover(dir).journal
        try snapshot(j, after: 1...10)
        try snapshot(j, after: 11...20)
        for n in UInt64(21)...26 { try appendAndWait(j, payload(n)) }
        try j.close()
        let newest = JournalFormat.segmentName(firstSequence: 21)
        #expect(try FileIO.list(dir).last { $0.hasPrefix("journal-") } == newest)
        try FileIO.unlink(path(dir, newest))

        let refusal = failure { _ = try recover(dir) }
        #expect(refusal?.contains(newest) == true)
        let check = try JournalCheck.check(directory: dir)
        #expect(!check.recoverable)
        #expect(check.problems.contains { $0.severity == .error && $0.file == newest })
        #expect(check.description.contains("NOT recoverable"))

        let repaired = try JournalCheck.repair(directory: dir)
        #expect(repaired.recoverable)
        #expect(repaired.actions.contains { $0.contains(newest) && $0.contains("lost") })
        let r = try recover(dir)
        #expect(r.sections == [Array("state through 20".utf8)])
        #expect(r.records.isEmpty && r.report.nextSequence == 21)
        try r.journal.close()
    }

    /// The newest of several segments (no snapshot), and a middle one: each refused, named.
    @Test(arguments: [UInt64(16), 6])
    func deletedSegmentWithoutSnapshotIsDetected(first: UInt64) throws {
        let dir = makeTempDirectory()
        defer { removeDirectory(dir) }
        let r = try recover(dir)
        for n in UInt64(1)...20 {
            try appendAndWait(r.journal, payload(n))
            if n % 5 == 0 && n < 20 { _ = try r.journal.rotate() }
        }
        try r.journal.close()
        let victim = JournalFormat.segmentName(firstSequence: first)
        #expect(segmentFiles(dir).contains(victim) && segmentFiles(dir).count == 4)
        try FileIO.unlink(path(dir, victim))
        let refusal = failure { _ = try recover(dir) }
        #expect(refusal?.contains(victim) == true, "\(refusal ?? "opened")")
        let check = try JournalCheck.check(directory: dir)
        #expect(!check.recoverable)
        #expect(check.problems.contains { $0.severity == .error && ($0.file == victim || $0.message.contains(victim)) })
    }

    /// A deleted middle segment after a snapshot, between segments that recovery reads.
    @Test func deletedMiddleSegmentAfterASnapshotIsDetected() throws {
        let dir = makeTempDirectory()
        defer { removeDirectory(dir) }
        let j = try recover(dir).journal
        try snapshot(j, after: 1...10)
        for n in UInt64(11)...15 { try appendAndWait(j, payload(n)) }
        _ = try j.rotate()
        for n in UInt64(16)...20 { try appendAndWait(j, payload(n)) }
        try j.close()
        let victim = JournalFormat.segmentName(firstSequence: 11)
        try FileIO.unlink(path(dir, victim))
        let refusal = failure { _ = try recover(dir) }
        #expect(refusal?.contains(victim) == true, "\(refusal ?? "opened")")
        let check = try JournalCheck.check(directory: dir)
        #expect(!check.recoverable)
        #expect(check.description.contains(victim))
    }

    /// A damaged manifest: open and check refuse naming it; repair rewrites it.
    @Test func damagedManifestIsRefusedAndRepaired() throws {
        let dir = makeTempDirectory()
        defer { removeDirectory(dir) }
        try writeJournal(dir, count: 9, rotateEvery: 3)
        let manifest = path(dir, JournalFormat.manifestName)
        var bytes = readFile(manifest)
        bytes[9] ^= 0x01
        writeFile(manifest, bytes)
        #expect(throws: JournalError.damaged(file: manifest, offset: 0, reason: "journal manifest CRC mismatch")) { _ = try recover(dir) }
        #expect(!(try JournalCheck.check(directory: dir).recoverable))
        let repaired = try JournalCheck.repair(directory: dir)
        #expect(repaired.recoverable)
        #expect(repaired.actions.contains { $0.contains(JournalFormat.manifestName) && $0.contains(JournalFormat.segmentName(firstSequence: 10)) })
        let r = try recover(dir)
        #expect(r.records.map(\.0) == Array(1...9))
        try r.journal.close()
    }

    /// A segment only the fallback snapshot needs goes missing: recovery does not need it and
    /// starts; check stays recoverable but warns that the fallback is gone, naming the snapshot.
    @Test func missingFallbackJournalIsAWarning() throws {
        let dir = makeTempDirectory()
        defer { removeDirectory(dir) }
        let j = try recover(dir).journal
        let s1 = try snapshot(j, after: 1...10)
        try snapshot(j, after: 11...20)
        try j.close()
        try FileIO.unlink(path(dir, JournalFormat.segmentName(firstSequence: 11)))
        let check = try JournalCheck.check(directory: dir)
        #expect(check.recoverable)
        #expect(check.problems.contains { $0.severity == .warning && $0.file == JournalFormat.snapshotName(coveredSequence: s1.covered) })
        let r = try recover(dir)
        #expect(r.sections == [Array("state through 20".utf8)] && r.records.isEmpty)
        try r.journal.close()
    }

    /// Data files 0600, the data directory 0700 (when the journal creates it).
    @Test func dataFilesArePrivate() throws {
        let parent = makeTempDirectory()
        defer { removeDirectory(parent) }
        let dir = path(parent, "data")
        let j = try recover(dir).journal
        for n in UInt64(1)...3 { try appendAndWait(j, payload(n)) }
        let covered = try j.rotate()
        let w = try j.makeSnapshotWriter(coveredSequence: covered)
        try w.append([1, 2, 3])
        func mode(_ p: String) -> mode_t {
            var st = stat()
            return stat(p, &st) == 0 ? st.st_mode & 0o777 : 0o7777
        }
        let temporary = path(dir, JournalFormat.snapshotName(coveredSequence: covered) + ".tmp")
        #expect(mode(temporary) == 0o600)
        try w.commit()
        try j.close()
        #expect(mode(dir) == 0o700)
        let names = try FileIO.list(dir)
        #expect(names.contains("LOCK") && names.contains(JournalFormat.manifestName) && names.count == 5)
        for name in names { #expect(mode(path(dir, name)) == 0o600, "\(name)") }
    }
}

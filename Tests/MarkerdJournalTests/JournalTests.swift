import MarkerdTestSupport
import Foundation
import Synchronization
import Testing
@testable import MarkerdJournal

@Suite struct JournalTests {
    @Test func formatNames() {
        #expect(JournalFormat.segmentName(firstSequence: 1) == "journal-0000000000000001.log")
        #expect(JournalFormat.snapshotName(coveredSequence: 0xABC) == "snapshot-0000000000000abc.snap")
        #expect(JournalFormat.parse("journal-00000000000000ff.log", prefix: "journal-", suffix: ".log") == 255)
        #expect(JournalFormat.parse("journal-00000000000000FF.log", prefix: "journal-", suffix: ".log") == nil)
        #expect(JournalFormat.parse("journal-ff.log", prefix: "journal-", suffix: ".log") == nil)
        let frame = JournalFormat.encodeFrame(sequence: 7, payload: Array("hi".utf8))
        #expect(frame.count == 18)
        #expect(Array(frame[0..<4]) == [2, 0, 0, 0])
        #expect(Array(frame[8..<16]) == [7, 0, 0, 0, 0, 0, 0, 0])
    }

    /// Randomised round trip: random sizes, random rotations, several reopenings; recovery
    /// must return exactly the appended records in order (oracle: the list of appended payloads).
    @Test func roundTripAcrossSegmentsAndReopens() throws {
        var rng = SplitMix64(seed: testSeed())
        let dir = makeTempDirectory()
        defer { removeDirectory(dir) }
        var oracle: [[UInt8]] = []
        for round in 0..<4 {
            let r = try recover(dir, policy: [.always, .everySecond, .off, .always][round])
            #expect(r.records.count == oracle.count)
            for (i, rec) in r.records.enumerated() {
                #expect(rec.0 == UInt64(i + 1))
                #expect(byteMismatch(rec.1, oracle[i]) == nil, "record \(i + 1)")
            }
            #expect(r.report.nextSequence == UInt64(oracle.count + 1))
            let n = Int.random(in: 20...80, using: &rng)
            let group = DispatchGroup()
            for _ in 0..<n {
                let p = payload(UInt64(oracle.count + 1), size: Int.random(in: 0...3000, using: &rng))
                group.enter()
                let seq = try r.journal.append(p) { result in
                    #expect((try? result.get()) != nil)
                    group.leave()
                }
                #expect(seq == UInt64(oracle.count + 1))
                oracle.append(p)
                if Int.random(in: 0..<15, using: &rng) == 0 { _ = try r.journal.rotate() }
            }
            group.wait()
            try r.journal.close()
        }
        #expect(segmentFiles(dir).count >= 2)
        let check = try JournalCheck.check(directory: dir)
        #expect(check.recoverable, "\(check)")
        #expect(check.lastSequence == UInt64(oracle.count))
    }

    @Test func appendBuildingSeesItsSequenceAndAsyncAppend() async throws {
        let dir = makeTempDirectory()
        defer { removeDirectory(dir) }
        let r = try recover(dir)
        let s1 = try await r.journal.append(Array("a".utf8))
        #expect(s1 == 1)
        let done = DispatchSemaphore(value: 0)
        let s2 = try r.journal.append(building: { Array("seq=\($0)".utf8) }) { _ in done.signal() }
        done.wait()
        #expect(s2 == 2)
        try r.journal.close()
        #expect(throws: JournalError.closed) { try r.journal.append([1]) { _ in } }
        let again = try recover(dir)
        #expect(again.records.map { String(decoding: $0.1, as: UTF8.self) } == ["a", "seq=2"])
        try again.journal.close()
    }

    /// 8 threads append concurrently under `.always`: every completion is called, in sequence
    /// order per thread, only once its record is durable; groups of > 1 records share an fsync.
    @Test func groupCommitFromManyThreads() throws {
        let dir = makeTempDirectory()
        defer { removeDirectory(dir) }
        let r = try recover(dir)
        let j = r.journal
        j.faults.syncDelayMicroseconds.store(500, ordering: .relaxed)   // make fsyncs slow-ish
        let threads = 8, perThread = 150
        let completed = Mutex<[[UInt64]]>(Array(repeating: [], count: threads))
        let violations = Atomic<Int>(0)
        let group = DispatchGroup()
        for t in 0..<threads {
            group.enter()
            let thread = Thread {
                for i in 0..<perThread {
                    _ = try! j.append(payload(UInt64(t * 1000 + i))) { result in
                        let seq = try! result.get()
                        if j.stats.durableThrough < seq { violations.add(1, ordering: .relaxed) }
                        completed.withLock { $0[t].append(seq) }
                        if i == perThread - 1 { group.leave() }
                    }
                }
            }
            thread.start()
        }
        group.wait()
        let stats = j.stats
        let all = completed.withLock { $0 }
        #expect(all.allSatisfy { $0.count == perThread })
        #expect(all.allSatisfy { zip($0, $0.dropFirst()).allSatisfy { $0 < $1 } })
        #expect(Set(all.flatMap { $0 }) == Set(1...UInt64(threads * perThread)))
        #expect(violations.load(ordering: .relaxed) == 0)
        #expect(stats.syncs < stats.records && stats.largestGroup > 1,
                "\(stats.records) records, \(stats.writes) writes, \(stats.syncs) fsyncs, largest group \(stats.largestGroup)")
        try j.close()
        let again = try recover(dir)
        #expect(again.records.count == threads * perThread)
        try again.journal.close()
    }

    /// A failed write (half written, then ENOSPC) or fdatasync (EIO) is retried until it
    /// succeeds: the waiting completions then succeed, `retryingAfter` names the error only
    /// meanwhile, and recovery finds every record exactly once, in order (the retry cut off the
    /// half-written frame and wrote again what a failed fdatasync may have lost). The journal
    /// logs one line when writing starts failing and one when it works again.
    @Test(arguments: [(SyncPolicy.always, false), (.always, true), (.everySecond, false), (.everySecond, true), (.off, false)])
    func failedWriteOrSyncIsRetriedUntilItSucceeds(policy: SyncPolicy, failSync: Bool) throws {
        let dir = makeTempDirectory()
        defer { removeDirectory(dir) }
        let lines = Mutex<[String]>([])
        let r = try recover(dir, policy: policy, log: { line in lines.withLock { $0.append(line) } })
        try appendAndWait(r.journal, payload(1))
        func fault(_ on: Bool) {
            if failSync { r.journal.faults.failSyncs.store(on, ordering: .relaxed) } else { r.journal.faults.failWrites.store(on, ordering: .relaxed) }
        }
        fault(true)
        let results = Mutex<[UInt64: Result<UInt64, JournalError>]>([:])
        let done = DispatchSemaphore(value: 0)
        for n in UInt64(2)...3 {
            try r.journal.append(payload(n, size: 4000)) { result in results.withLock { $0[n] = result }; done.signal() }
        }
        // `.everySecond` acknowledges after write(); its failing fdatasync comes within ~1 s.
        try waitUntil("the writer retries") { r.journal.retryingAfter != nil }
        if case .io(let operation, _, let e)? = r.journal.retryingAfter {
            #expect(operation == (failSync ? "fdatasync" : "write") && e == (failSync ? EIO : ENOSPC))
        } else {
            Issue.record("retryingAfter: \(String(describing: r.journal.retryingAfter))")
        }
        if policy == .always { #expect(results.withLock { $0.isEmpty }) }   // nothing is acknowledged before it is durable
        #expect(throws: JournalError.self) { _ = try r.journal.rotate() }
        fault(false)
        for _ in 2...3 { done.wait() }
        #expect(results.withLock { $0 }.mapValues { try? $0.get() } == [2: 2, 3: 3])
        try r.journal.flush()
        #expect(r.journal.retryingAfter == nil)
        #expect(r.journal.stats.failedAttempts >= 1)
        let logged = lines.withLock { $0 }
        #expect(logged.count == 2 && logged.first?.hasPrefix("journal warning: ") == true && logged.last?.hasPrefix("journal writes again") == true,
                "\(logged)")
        #expect(r.journal.stats.durableThrough == 3)
        try appendAndWait(r.journal, payload(4))
        #expect(try r.journal.rotate() == 4)
        try appendAndWait(r.journal, payload(5))
        try r.journal.close()
        let again = try recover(dir)
        #expect(again.report.warnings.isEmpty)
        #expect(again.records.map(\.0) == [1, 2, 3, 4, 5])
        #expect(again.records.allSatisfy { $0.1 == payload($0.0, size: (2...3).contains($0.0) ? 4000 : 24) })
        try again.journal.close()
    }

    /// A rotation whose new segment cannot be created (disk full): `rotate()` throws while the
    /// writer retries; the rotation completes once the disk has room, and every record lands in
    /// its segment.
    @Test func rotationCaughtByAFailureCompletesOnceWritingWorks() throws {
        let dir = makeTempDirectory()
        defer { removeDirectory(dir) }
        let r = try recover(dir)
        try appendAndWait(r.journal, payload(1))
        r.journal.faults.failRotations.store(true, ordering: .relaxed)
        #expect(throws: JournalError.self) { _ = try r.journal.rotate() }
        #expect(r.journal.retryingAfter != nil)
        let done = DispatchSemaphore(value: 0)
        try r.journal.append(payload(2)) { _ in done.signal() }
        r.journal.faults.failRotations.store(false, ordering: .relaxed)
        done.wait()
        try r.journal.close()
        #expect(segmentFiles(dir) == [JournalFormat.segmentName(firstSequence: 1), JournalFormat.segmentName(firstSequence: 2)])
        let again = try recover(dir)
        #expect(again.records.map(\.0) == [1, 2] && again.report.warnings.isEmpty)
        try again.journal.close()
    }

    /// `close()` while the disk keeps failing gives up after one more attempt: the waiting
    /// completion fails, the half-written record is cut off again, so a restart does not bring
    /// back a write its caller was told failed.
    @Test func closeGivesUpOnAFailingDiskAndLeavesNoFailedRecord() throws {
        let dir = makeTempDirectory()
        defer { removeDirectory(dir) }
        let r = try recover(dir)
        try appendAndWait(r.journal, payload(1))
        r.journal.faults.failWrites.store(true, ordering: .relaxed)
        let result = Mutex<Result<UInt64, JournalError>?>(nil)
        try r.journal.append(payload(2, size: 4000)) { r in result.withLock { $0 = r } }
        try waitUntil("the writer retries") { r.journal.retryingAfter != nil }
        #expect(throws: JournalError.self) { try r.journal.close() }
        guard case .failure? = result.withLock({ $0 }) else {
            Issue.record("completion: \(String(describing: result.withLock { $0 }))")
            return
        }
        #expect(r.journal.failedWith != nil)
        #expect(throws: JournalError.self) { try r.journal.append(payload(3)) { _ in } }
        let again = try recover(dir)
        #expect(again.records.map(\.0) == [1])
        #expect(again.report.warnings.isEmpty)
        try again.journal.close()
    }

    @Test func flushAndPoliciesMakeDataDurable() throws {
        for policy in [SyncPolicy.off, .everySecond] {
            let dir = makeTempDirectory()
            defer { removeDirectory(dir) }
            let r = try recover(dir, policy: policy)
            for n in 1...10 { try appendAndWait(r.journal, payload(UInt64(n))) }
            #expect(r.journal.stats.writtenThrough == 10)
            try r.journal.flush()
            #expect(r.journal.stats.durableThrough == 10)
            if policy == .everySecond {
                try appendAndWait(r.journal, payload(11))
                // Synced within about a second, with no flush.
                try waitUntil("the every-second fdatasync covers record 11") { r.journal.stats.durableThrough == 11 }
            }
            try r.journal.close()
        }
    }

    /// `rotate()` returns only once the old segment's records are fdatasynced, unless the policy
    /// is `.off` (which syncs nothing until `flush()` or `close()`); appends sync per policy.
    @Test(arguments: [SyncPolicy.always, .everySecond, .off])
    func whatEachPolicySyncs(policy: SyncPolicy) throws {
        let dir = makeTempDirectory()
        defer { removeDirectory(dir) }
        let r = try recover(dir, policy: policy)
        let synced = Mutex<[String]>([])
        r.journal.faults.onSync.withLock { $0 = { path in synced.withLock { $0.append(path) } } }
        let old = FileIO.join(dir, JournalFormat.segmentName(firstSequence: 1))
        let new = FileIO.join(dir, JournalFormat.segmentName(firstSequence: 4))
        for n in 1...3 { try appendAndWait(r.journal, payload(UInt64(n))) }
        let appended = synced.withLock { $0 }
        #expect(try r.journal.rotate() == 3)
        let rotated = synced.withLock { $0 }
        switch policy {
        case .always:
            // One fdatasync per record (each waited for); nothing is left for the rotation.
            #expect(appended == [old, old, old])
            #expect(rotated == appended)
        case .everySecond:
            // Appends sync at most once a second (none, unless this host paused for a second).
            #expect(appended.allSatisfy { $0 == old } && appended.count <= 1, "\(appended)")
            #expect(rotated.last == old, "\(rotated)")
            #expect(r.journal.stats.durableThrough == 3)
        case .off:
            // Appends never sync; the rotation syncs the old segment (flush() relies on it).
            #expect(appended.isEmpty, "\(appended)")
            #expect(rotated == [old], "\(rotated)")
            #expect(r.journal.stats.durableThrough == 3)
        }
        try appendAndWait(r.journal, payload(4))
        try r.journal.flush()
        #expect(synced.withLock { $0 }.last == new)
        try r.journal.close()
    }

    @Test func directoryLock() throws {
        let dir = makeTempDirectory()
        defer { removeDirectory(dir) }
        let r = try recover(dir)
        do {
            _ = try recover(dir)
            Issue.record("second open succeeded")
        } catch let JournalError.directoryLocked(d, holder) {
            #expect(d == dir)
            #expect(holder == "\(getpid())")
            #expect(JournalError.directoryLocked(directory: d, holder: holder).description.contains(dir))
        }
        #expect(throws: JournalError.self) { try JournalCheck.repair(directory: dir) }
        let report = try JournalCheck.check(directory: dir)
        #expect(report.problems.contains { $0.file == "LOCK" && $0.severity == .info })
        try r.journal.close()
        let again = try recover(dir)
        try again.journal.close()
    }
}

import Dispatch
import Foundation
import Synchronization
internal import Glibc

/// When the journal reports an append as done, and what a crash can lose.
public enum SyncPolicy: Sendable, Equatable {
    /// Default. The completion runs after the `fdatasync` covering the record returned: an
    /// acknowledged record survives a process crash, a kernel crash and a power loss.
    /// Records are group-committed: one write() and one fdatasync per group.
    case always
    /// The completion runs after `write()` (the record is in the OS page cache); the writer
    /// fdatasyncs at most ~1 s after the first unsynced write. A process crash loses nothing
    /// acknowledged; a power loss or kernel crash can lose up to ~1 s of acknowledged records.
    case everySecond
    /// The completion runs after `write()`; the journal fsyncs only when a segment rotates (the
    /// old segment, once per snapshot, so that `durableThrough` and `flush()` stay true), on
    /// `flush()` and on `close()`. A process crash loses nothing acknowledged; a power loss or
    /// kernel crash can lose any recent records (whatever the kernel had not written back,
    /// typically up to ~30 s) and, because the manifest and new segments are not fsynced, can
    /// leave damage that needs `markerd repair`.
    case off

    /// The policy a `--fsync` flag value names: `always`, `everysec` (Redis's `appendfsync` name for
    /// `.everySecond`) or `off`; nil for anything else.
    public init?(flag: String) {
        switch flag {
        case "always": self = .always
        case "everysec": self = .everySecond
        case "off": self = .off
        default: return nil
        }
    }

    /// The `--fsync` flag value naming this policy (see `init?(flag:)`).
    public var flag: String {
        switch self {
        case .always: "always"
        case .everySecond: "everysec"
        case .off: "off"
        }
    }
}

public struct JournalOptions: Sendable {
    /// Default `.always`.
    public var policy: SyncPolicy
    /// Recovery validates snapshots (a full read) before delivering any section, so a damaged
    /// one can be skipped for an older one. Default true. When false, the newest snapshot is
    /// delivered while it is read, saving that read; should it turn out damaged, `Journal.open`
    /// throws `SnapshotDamagedWhileDelivered` and the caller discards what it got and opens
    /// again with validation.
    public var validateSnapshotFirst: Bool
    /// Told (on the writer thread, one line each) when writing starts failing, as
    /// `"journal warning: ..."`, and when it works again. Default nil.
    public var log: (@Sendable (String) -> Void)?
    public init(policy: SyncPolicy = .always, validateSnapshotFirst: Bool = true, log: (@Sendable (String) -> Void)? = nil) {
        self.policy = policy
        self.validateSnapshotFirst = validateSnapshotFirst
        self.log = log
    }
}

/// Thrown by `Journal.open` without `validateSnapshotFirst` when the newest snapshot, already
/// partly delivered, turns out damaged: open again with validation (which picks an older
/// snapshot with a warning, or names the damage).
public struct SnapshotDamagedWhileDelivered: Error, Sendable, CustomStringConvertible {
    /// The damage, as validation would report it.
    public var damage: JournalError
    public var description: String { "\(damage) (found while replaying it)" }
}

/// Counters since `open` (for metrics and tests).
public struct JournalStats: Sendable, Equatable {
    /// Records appended.
    public var records: UInt64 = 0
    /// Framed bytes appended (payloads + 16-byte headers).
    public var bytes: UInt64 = 0
    /// write() batches (groups) issued by the writer thread.
    public var writes: UInt64 = 0
    /// fdatasync calls on journal segments.
    public var syncs: UInt64 = 0
    /// The most records one write() batch carried.
    public var largestGroup = 0
    /// Every record with a sequence <= this has been written (is in the page cache or on disk).
    public var writtenThrough: UInt64 = 0
    /// Every record with a sequence <= this is on stable storage (fdatasync returned).
    public var durableThrough: UInt64 = 0
    /// Failed write()/fdatasync/rotation attempts (each retried; see `Journal.retryingAfter`).
    public var failedAttempts: UInt64 = 0
}

/// Called exactly once per successful `append` call, with the record's sequence or the error
/// that prevented it from becoming durable. An error comes only from `close()` giving up on a
/// disk that keeps failing; the record is then cut off the segment again (best effort), so a
/// restart does not bring it back.
public typealias JournalCompletion = @Sendable (Result<UInt64, JournalError>) -> Void

/// Test hooks: while set, the writer's writes fail as on a full disk (the first half of the
/// bytes is written, then ENOSPC), its fdatasyncs fail with EIO (without syncing), and a
/// rotation's new segment cannot be created (ENOSPC).
final class FaultInjection: Sendable {
    let failWrites = Atomic<Bool>(false)
    let failSyncs = Atomic<Bool>(false)
    let failRotations = Atomic<Bool>(false)
    /// Extra sleep before each fdatasync (to make group commit observable in tests).
    let syncDelayMicroseconds = Atomic<Int>(0)
    /// Called on the writer thread with the segment's path after each fdatasync of a segment
    /// that returned (to test what each `SyncPolicy` syncs); nil (the default) calls nothing.
    let onSync = Mutex<(@Sendable (String) -> Void)?>(nil)
}

/// The append side of the durability engine: a sequence of framed records in segment files,
/// written and fsynced by one writer thread in groups. Obtain one with `Journal.open` (which
/// recovers first); call `close()` before dropping it.
///
/// Threading: every method is thread-safe. `append` never blocks on I/O: it frames the payload
/// into an in-memory buffer under a short lock and returns the sequence. The writer thread takes
/// everything appended since its last write, issues one write() and (per policy) one fdatasync,
/// then hands the group's completions to a serial completion queue, so completions run in
/// sequence order, never on the caller's or writer's thread, and a slow completion delays later
/// completions but not writing. Do not call `close()`, `flush()` or `rotate()` from a completion
/// (they wait for the writer and can deadlock).
///
/// There is no back-pressure: if appends outrun the disk, the buffer grows. The service should
/// bound its in-flight requests.
///
/// Failures (disk full, I/O errors): if a write() or fdatasync fails, the writer keeps the
/// group and retries it with backoff (`retryDelays`) until it succeeds; meanwhile
/// `retryingAfter` names the error (the service refuses new writes while it is set) and the
/// group's completions wait. A retry first cuts the segment back to what is known complete
/// (the end of the last successful fdatasync; for `.off`, of the last written group) and
/// writes everything after it again from memory, because a failed write can leave part of a
/// frame and after a failed fdatasync Linux may have dropped the dirty pages while later
/// fdatasyncs report success (so `.everySecond` keeps the written but unsynced bytes in memory
/// until they are synced). Nothing is lost, duplicated or reordered: sequences are assigned
/// in `append` and the bytes go to the file in that order. Only `close()` gives up: after one
/// more failed attempt it cuts the unfinished group off the segment, fails its completions
/// and puts the journal in the failed state (further `append`, `rotate` and `flush` throw
/// `JournalError.failed`).
public final class Journal: @unchecked Sendable {
    public let directory: String
    public let policy: SyncPolicy
    let faults = FaultInjection()
    private let log: (@Sendable (String) -> Void)?
    private let directoryLock: DirectoryLock
    private let completionQueue = DispatchQueue(label: "markerd.journal.completions")

    private struct Waiter {
        var sequence: UInt64
        var completion: JournalCompletion
    }

    // MARK: State guarded by `cond`
    private let cond = NSCondition()
    private var nextSequence: UInt64
    /// Frames appended since the writer last took them.
    private var buffer: [UInt8] = []
    private var waiters: [Waiter] = []
    /// A rotate() not yet taken by the writer: frames before `byteOffset` in `buffer` go to the
    /// old segment, the rest to the new segment `newFirst`.
    private var pendingRotation: (byteOffset: Int, newFirst: UInt64)?
    /// First sequence of the segment that new appends land in.
    private var appendSegmentFirst: UInt64
    /// First sequence of the segment the writer has open.
    private var activeFirst: UInt64
    private var syncRequestedThrough: UInt64 = 0
    /// The error of the writer's last failed attempt while it retries; nil when writing works.
    private var retryError: JournalError?
    private var closing = false
    private var writerExited = false
    private var filesClosed = false
    private var failure: JournalError?
    private var counters = JournalStats()

    // MARK: Writer-thread state (also touched by `close()` after the writer exited)
    private var fd: Int32
    private var activePath: String
    /// Bytes in the active segment as written.
    private var fileEnd: Int64
    /// What a retry cuts the active segment back to before writing `unsynced` and the group
    /// again: the end of the last successful fdatasync, or for `.off` (which promises nothing
    /// after a crash of the machine) of the last fully written group.
    private var rewindOffset: Int64
    /// `.everySecond` only: the bytes between `rewindOffset` and the end of the last group
    /// (written, acknowledged, not yet fdatasynced).
    private var unsynced: [UInt8] = []

    /// Waits between the writer's attempts after a failure, in seconds; the last repeats.
    static let retryDelays: [Double] = [0.01, 0.05, 0.25, 1]

    init(directory: String, policy: SyncPolicy, lock: DirectoryLock, fd: Int32, activeFirst: UInt64,
         activeSize: Int64, nextSequence: UInt64, log: (@Sendable (String) -> Void)?) {
        self.directory = directory
        self.policy = policy
        self.log = log
        self.directoryLock = lock
        self.fd = fd
        self.activeFirst = activeFirst
        self.appendSegmentFirst = activeFirst
        self.activePath = FileIO.join(directory, JournalFormat.segmentName(firstSequence: activeFirst))
        self.fileEnd = activeSize
        self.rewindOffset = activeSize
        self.nextSequence = nextSequence
        counters.writtenThrough = nextSequence - 1
        counters.durableThrough = nextSequence - 1
        buffer.reserveCapacity(1 << 20)
        let thread = Thread { [self] in self.writerLoop() }
        thread.name = "markerd.journal.writer"
        thread.qualityOfService = .userInitiated
        thread.start()
    }

    // MARK: Appending

    /// Appends one record and returns its sequence number (assigned in call order, contiguous,
    /// from 1). The payload is copied; the call does not block on I/O. `completion` is called
    /// exactly once, off this thread, when the record is durable per `policy`
    /// (`.always`: fdatasync returned) or with the error that prevented it.
    /// - Throws: `JournalError.failed` / `.closed` / `.recordTooLarge`; then `completion` is
    ///   never called and no sequence is consumed.
    @discardableResult
    public func append(_ payload: [UInt8], completion: @escaping JournalCompletion) throws -> UInt64 {
        try payload.withUnsafeBytes { try append(bytes: $0, completion: completion) }
    }

    /// `append(_:completion:)` for bytes the caller already holds in memory.
    @discardableResult
    public func append(bytes payload: UnsafeRawBufferPointer, completion: @escaping JournalCompletion) throws -> UInt64 {
        guard payload.count <= JournalFormat.maxPayloadSize else {
            throw JournalError.recordTooLarge(size: payload.count, limit: JournalFormat.maxPayloadSize)
        }
        let payloadCRC = CRC32C.checksum(payload)
        cond.lock()
        defer { cond.unlock() }
        try checkUsable()
        return enqueue(payload: payload, payloadCRC: payloadCRC, completion: completion)
    }

    /// Appends a record whose bytes depend on its own sequence number (e.g. a `JournalRecord`
    /// protobuf with `sequence` set). `build` runs under the journal lock with the sequence the
    /// record will get: keep it fast, and do not call the journal from it. If it throws, nothing
    /// is appended and the error is rethrown. Otherwise as `append(_:completion:)`.
    @discardableResult
    public func append(building build: (UInt64) throws -> [UInt8], completion: @escaping JournalCompletion) throws -> UInt64 {
        cond.lock()
        defer { cond.unlock() }
        try checkUsable()
        let payload = try build(nextSequence)
        guard payload.count <= JournalFormat.maxPayloadSize else {
            throw JournalError.recordTooLarge(size: payload.count, limit: JournalFormat.maxPayloadSize)
        }
        return payload.withUnsafeBytes { enqueue(payload: $0, payloadCRC: CRC32C.checksum($0), completion: completion) }
    }

    /// Appends and suspends until the record is durable per `policy`; returns its sequence.
    public func append(_ payload: [UInt8]) async throws -> UInt64 {
        try await withCheckedThrowingContinuation { (c: CheckedContinuation<UInt64, any Error>) in
            do {
                try append(payload) { c.resume(with: $0) }
            } catch {
                c.resume(throwing: error)
            }
        }
    }

    /// Caller holds `cond`.
    private func enqueue(payload: UnsafeRawBufferPointer, payloadCRC: UInt32, completion: @escaping JournalCompletion) -> UInt64 {
        let sequence = nextSequence
        nextSequence += 1
        let wasEmpty = buffer.isEmpty
        JournalFormat.appendFrame(to: &buffer, sequence: sequence, payload: payload, payloadCRC: payloadCRC)
        waiters.append(Waiter(sequence: sequence, completion: completion))
        counters.records += 1
        counters.bytes += UInt64(JournalFormat.frameHeaderSize + payload.count)
        if wasEmpty { cond.signal() }
        return sequence
    }

    /// Caller holds `cond`.
    private func checkUsable() throws {
        if let failure { throw JournalError.failed(cause: failure.description) }
        if closing { throw JournalError.closed }
    }

    // MARK: Observing

    /// Counters, and how far writing and syncing have got.
    public var stats: JournalStats {
        cond.lock()
        defer { cond.unlock() }
        return counters
    }

    /// The sequence the next append will get.
    public var nextSequenceNumber: UInt64 {
        cond.lock()
        defer { cond.unlock() }
        return nextSequence
    }

    /// The error that put the journal into the failed state, if any.
    public var failedWith: JournalError? {
        cond.lock()
        defer { cond.unlock() }
        return failure
    }

    /// Why the journal cannot make writes durable right now: the error of the writer's last
    /// failed attempt while it retries (cleared by the next attempt that succeeds), or the
    /// failure after `close()` gave up. nil while writing works.
    public var retryingAfter: JournalError? {
        cond.lock()
        defer { cond.unlock() }
        return failure ?? retryError
    }

    // MARK: Flush, rotate, drop, close

    /// Blocks until every record appended before the call is written and fdatasynced, whatever
    /// the policy (also while the writer retries after a failure). Throws if the journal failed
    /// (or fails meanwhile).
    public func flush() throws {
        cond.lock()
        defer { cond.unlock() }
        if let failure { throw JournalError.failed(cause: failure.description) }
        let target = nextSequence - 1
        syncRequestedThrough = max(syncRequestedThrough, target)
        cond.broadcast()
        while counters.durableThrough < target && failure == nil && !writerExited { cond.wait() }
        if let failure { throw JournalError.failed(cause: failure.description) }
    }

    /// Starts a new segment and returns S such that every record with sequence <= S is in older
    /// segments (and every later one in the new segment or after). Blocks until the writer has
    /// written the old segment's records (fdatasynced, whatever the policy), created the new segment
    /// and named it in the manifest; appends continue meanwhile. If the current segment holds
    /// no records yet, nothing changes. Call it before writing a snapshot that will cover S.
    /// - Throws: `.failed` while the writer retries after a failure (`retryingAfter`; the
    ///   rotation, if already queued, still happens once writing works again) or after it gave up.
    public func rotate() throws -> UInt64 {
        cond.lock()
        defer { cond.unlock() }
        func checkWriting() throws {
            try checkUsable()
            if let retryError { throw JournalError.failed(cause: "the journal cannot write now (retrying): \(retryError)") }
        }
        while pendingRotation != nil && failure == nil && retryError == nil { cond.wait() }
        try checkWriting()
        let covered = nextSequence - 1
        if nextSequence != appendSegmentFirst {
            pendingRotation = (buffer.count, nextSequence)
            appendSegmentFirst = nextSequence
            cond.broadcast()
        }
        while activeFirst != appendSegmentFirst && failure == nil && retryError == nil { cond.wait() }
        if activeFirst != appendSegmentFirst { try checkWriting() }
        return covered
    }

    /// Starts writing a snapshot that covers every record with sequence <= `coveredSequence`
    /// (normally the value `rotate()` returned). Use it from any one thread; appends continue.
    public func makeSnapshotWriter(coveredSequence: UInt64) throws -> SnapshotWriter {
        let next = nextSequenceNumber
        guard coveredSequence < next else {
            throw JournalError.invalidArgument("snapshot covers sequence \(coveredSequence) but only \(next - 1) records exist")
        }
        return try SnapshotWriter(directory: directory, coveredSequence: coveredSequence)
    }

    /// After a snapshot covering `covered` was committed: keeps it and the fallback, the newest
    /// snapshot covering less (none: the journal from sequence 1), with every segment that
    /// recovery from the fallback reads, so that a damaged newest snapshot can be replaced by the
    /// fallback plus the journal. Deletes every older snapshot and every segment whose records
    /// are all <= the fallback's covered sequence (a segment is deleted when the next segment
    /// starts at or before that + 1; the active segment never is), then fsyncs the directory.
    /// The data directory thus holds two snapshots and the journal since the older one.
    /// Returns the names of the deleted files.
    /// - Throws: `.invalidArgument` if no committed snapshot covers at least `covered`.
    @discardableResult
    public func dropSegments(coveredBy covered: UInt64) throws -> [String] {
        let active: UInt64 = {
            cond.lock()
            defer { cond.unlock() }
            return activeFirst
        }()
        let listing = try DirectoryListing(directory: directory)
        guard listing.snapshots.contains(where: { $0.covered >= covered }) else {
            throw JournalError.invalidArgument("dropSegments(coveredBy: \(covered)): no committed snapshot covers sequence \(covered)")
        }
        let fallback = listing.snapshots.last { $0.covered < covered }?.covered ?? 0
        var removed: [String] = []
        for (i, segment) in listing.segments.enumerated() where i + 1 < listing.segments.count {
            if listing.segments[i + 1].first <= fallback + 1 && segment.first < active {
                try FileIO.unlink(FileIO.join(directory, segment.name))
                removed.append(segment.name)
            }
        }
        for snapshot in listing.snapshots where snapshot.covered < fallback {
            try FileIO.unlink(FileIO.join(directory, snapshot.name))
            removed.append(snapshot.name)
        }
        if !removed.isEmpty { try FileIO.fsyncDirectory(directory) }
        return removed
    }

    /// Graceful shutdown: rejects new appends, writes and fdatasyncs everything pending (whatever
    /// the policy), runs all completions, closes the segment and releases the directory LOCK.
    /// Idempotent. Throws the failure if the journal had failed.
    public func close() throws {
        cond.lock()
        if !closing {
            closing = true
            cond.broadcast()
        }
        while !writerExited { cond.wait() }
        let failure = self.failure
        let closeFiles = !filesClosed
        filesClosed = true
        cond.unlock()
        completionQueue.sync {}
        if closeFiles {
            FileIO.close(fd)
            directoryLock.release()
        }
        if let failure { throw failure }
    }

    // MARK: The writer thread

    private func writerLoop() {
        var batch: [UInt8] = []
        batch.reserveCapacity(1 << 20)
        var dirty = false                 // bytes written since the last fdatasync
        var lastSync = ContinuousClock.now
        var durable: UInt64 = 0
        var written: UInt64 = 0
        cond.lock()
        durable = counters.durableThrough
        written = counters.writtenThrough
        cond.unlock()

        while true {
            cond.lock()
            while true {
                if !buffer.isEmpty || pendingRotation != nil || closing { break }
                if dirty && syncRequestedThrough > durable { break }
                if dirty && policy == .everySecond {
                    let due = lastSync + .seconds(1)
                    let now = ContinuousClock.now
                    if now >= due { break }
                    let c = (due - now).components
                    _ = cond.wait(until: Date(timeIntervalSinceNow: Double(c.seconds) + Double(c.attoseconds) * 1e-18))
                } else {
                    cond.wait()
                }
            }
            swap(&buffer, &batch)
            let group = waiters
            waiters = []
            let rotation = pendingRotation
            pendingRotation = nil
            let lastSequence = nextSequence - 1
            let syncTarget = syncRequestedThrough
            let isClosing = closing
            let earlierFailure = failure
            cond.unlock()

            var error: JournalError? = earlierFailure.map { JournalError.failed(cause: $0.description) }
            var syncs: UInt64 = 0
            var newActive: UInt64?
            if error == nil {
                // Progress of this group, kept across retries: the rotation's old part written
                // (and synced), its new segment created and named in the manifest.
                var oldPartDone = false
                var created: (fd: Int32, path: String)?
                var named = false
                var retrying = false
                var attempt = 0
                while true {
                    do {
                        func sync() throws {
                            if faults.failSyncs.load(ordering: .relaxed) {
                                throw JournalError.io(operation: "fdatasync", path: activePath, errno: EIO)
                            }
                            let delay = faults.syncDelayMicroseconds.load(ordering: .relaxed)
                            if delay > 0 { usleep(UInt32(delay)) }
                            try FileIO.fdatasync(fd, path: activePath)
                            faults.onSync.withLock { $0 }?(activePath)
                            syncs += 1
                            dirty = false
                            lastSync = .now
                            rewindOffset = fileEnd
                            unsynced.removeAll(keepingCapacity: true)
                        }
                        func writeBytes(_ bytes: UnsafeRawBufferPointer) throws {
                            guard !bytes.isEmpty else { return }
                            if faults.failWrites.load(ordering: .relaxed) {
                                try FileIO.writeAll(fd, UnsafeRawBufferPointer(rebasing: bytes[..<(bytes.count / 2)]), path: activePath)
                                throw JournalError.io(operation: "write", path: activePath, errno: ENOSPC)
                            }
                            try FileIO.writeAll(fd, bytes, path: activePath)
                            fileEnd += Int64(bytes.count)
                            dirty = true
                        }
                        func write(_ range: Range<Int>) throws {
                            try batch.withUnsafeBytes { try writeBytes(UnsafeRawBufferPointer(rebasing: $0[range])) }
                        }
                        if retrying {
                            // A failed write can leave part of a frame; after a failed fdatasync
                            // the dirty pages may be gone. Cut back to what is known complete
                            // and write the rest again from memory.
                            try FileIO.truncate(fd, to: rewindOffset, path: activePath)
                            fileEnd = rewindOffset
                            dirty = false
                            try unsynced.withUnsafeBytes { try writeBytes($0) }
                        }
                        var rest = 0..<batch.count
                        if let rotation {
                            rest = rotation.byteOffset..<batch.count
                            if newActive == nil {
                                if !oldPartDone {
                                    try write(0..<rotation.byteOffset)
                                    if dirty {
                                        try sync()
                                        durable = rotation.newFirst - 1
                                    }
                                    rewindOffset = fileEnd
                                    written = rotation.newFirst - 1
                                    oldPartDone = true
                                }
                                let path = FileIO.join(directory, JournalFormat.segmentName(firstSequence: rotation.newFirst))
                                if faults.failRotations.load(ordering: .relaxed) {
                                    throw JournalError.io(operation: "open", path: path, errno: ENOSPC)
                                }
                                if created == nil { created = (try FileIO.open(path, O_WRONLY | O_CREAT | O_EXCL | O_APPEND), path) }
                                if !named {
                                    // Its fsync of the directory also makes the new segment's creation durable.
                                    try JournalFormat.writeManifest(directory: directory, newest: rotation.newFirst, durable: policy != .off)
                                    named = true
                                }
                                FileIO.close(fd)
                                fd = created!.fd
                                activePath = path
                                fileEnd = 0
                                rewindOffset = 0
                                dirty = false
                                newActive = rotation.newFirst
                            }
                        }
                        try write(rest)
                        written = lastSequence
                        if !dirty {
                            durable = written
                        } else if policy == .always || isClosing || syncTarget > durable || (retrying && policy != .off)
                            || (policy == .everySecond && ContinuousClock.now - lastSync >= .seconds(1))
                        {
                            try sync()
                            durable = written
                        } else if policy == .everySecond {
                            batch.withUnsafeBytes { unsynced.append(contentsOf: $0[rest]) }
                        } else {
                            rewindOffset = fileEnd
                        }
                        break
                    } catch let thrown {
                        let e = (thrown as? JournalError) ?? .failed(cause: "\(thrown)")
                        if attempt == 0 {
                            log?("journal warning: \(e); retrying with backoff, and refusing writes until a write and fdatasync succeed")
                        }
                        cond.lock()
                        retryError = e
                        counters.failedAttempts += 1
                        cond.broadcast()
                        let giveUp = closing && attempt > 0
                        if !giveUp && !closing {
                            let delay = Self.retryDelays[min(attempt, Self.retryDelays.count - 1)]
                            _ = cond.wait(until: Date(timeIntervalSinceNow: delay))
                        }
                        cond.unlock()
                        if giveUp {
                            // Cut the group off again so that a restart does not bring back
                            // records whose callers are told they failed.
                            try? FileIO.truncate(fd, to: rewindOffset, path: activePath)
                            try? unsynced.withUnsafeBytes { try FileIO.writeAll(fd, $0, path: activePath) }
                            error = e
                            break
                        }
                        attempt += 1
                        retrying = true
                    }
                }
                if error != nil, newActive == nil, let created { FileIO.close(created.fd) }
                if error == nil && attempt > 0 {
                    log?("journal writes again after \(attempt) failed attempt(s); writes are accepted")
                }
            }

            cond.lock()
            if let error, failure == nil { failure = error }
            if error == nil { retryError = nil }
            if !batch.isEmpty {
                counters.writes += 1
                counters.largestGroup = max(counters.largestGroup, group.count)
            }
            counters.syncs += syncs
            if error == nil {
                counters.writtenThrough = written
                counters.durableThrough = durable
            }
            if let newActive { activeFirst = newActive }
            let exit = isClosing && buffer.isEmpty && pendingRotation == nil
            if exit { writerExited = true }
            cond.broadcast()
            cond.unlock()

            if !group.isEmpty {
                let error = error
                completionQueue.async {
                    if let error {
                        for w in group { w.completion(.failure(error)) }
                    } else {
                        for w in group { w.completion(.success(w.sequence)) }
                    }
                }
            }
            batch.removeAll(keepingCapacity: true)
            if exit { return }
        }
    }
}

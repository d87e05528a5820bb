internal import Glibc

/// Streams one snapshot to `snapshot-<covered>.snap.tmp`; `commit()` makes it
/// `snapshot-<covered>.snap` durably. Not thread-safe: use from one thread at a time. Holds no
/// journal lock, so appends continue while it writes. Obtain it from
/// `Journal.makeSnapshotWriter(coveredSequence:)`.
///
/// Snapshots are always fsynced, whatever the journal's policy: a committed snapshot lets
/// `dropSegments` delete journal segments.
public final class SnapshotWriter {
    public let directory: String
    /// Every journal record with a sequence <= this is reflected in the snapshot.
    public let coveredSequence: UInt64
    /// Sections appended so far.
    public private(set) var sections = 0
    /// Bytes written so far (including frame headers).
    public private(set) var bytesWritten: Int64 = 0
    private var fd: Int32
    private let tempPath: String
    private let finalPath: String
    private var buffer: [UInt8] = []
    private var finished = false
    private static let flushThreshold = 1 << 20

    init(directory: String, coveredSequence: UInt64) throws {
        self.directory = directory
        self.coveredSequence = coveredSequence
        finalPath = FileIO.join(directory, JournalFormat.snapshotName(coveredSequence: coveredSequence))
        tempPath = finalPath + ".tmp"
        fd = try FileIO.open(tempPath, O_WRONLY | O_CREAT | O_TRUNC)
        buffer.reserveCapacity(Self.flushThreshold + 4096)
    }

    deinit {
        if !finished { abort() }
    }

    /// Appends one section (e.g. an encoded `SnapshotSection`). Sections are numbered 1, 2, ...
    /// and come back from recovery in this order.
    public func append(_ section: [UInt8]) throws {
        guard !finished else { throw JournalError.invalidArgument("snapshot \(finalPath) already committed or aborted") }
        guard section.count <= JournalFormat.maxPayloadSize else {
            throw JournalError.recordTooLarge(size: section.count, limit: JournalFormat.maxPayloadSize)
        }
        sections += 1
        section.withUnsafeBytes {
            JournalFormat.appendFrame(to: &buffer, sequence: UInt64(sections), payload: $0, payloadCRC: CRC32C.checksum($0))
        }
        if buffer.count >= Self.flushThreshold { try flushBuffer() }
    }

    private func flushBuffer() throws {
        try buffer.withUnsafeBytes { try FileIO.writeAll(fd, $0, path: tempPath) }
        bytesWritten += Int64(buffer.count)
        buffer.removeAll(keepingCapacity: true)
    }

    /// Writes the trailer, fsyncs the file, reads it back and checks every frame's CRC and the
    /// trailer, renames it to `snapshot-<covered>.snap` and fsyncs the directory. After it
    /// returns the snapshot survives a power loss. On error (`.damaged` naming the temporary file
    /// when the read-back finds damage) the temporary file is removed and the snapshot does not
    /// exist.
    /// - Returns: the committed file's path.
    @discardableResult
    public func commit() throws -> String {
        guard !finished else { throw JournalError.invalidArgument("snapshot \(finalPath) already committed or aborted") }
        do {
            var trailer = JournalFormat.snapshotTrailerMagic
            withUnsafeBytes(of: coveredSequence.littleEndian) { trailer.append(contentsOf: $0) }
            withUnsafeBytes(of: UInt64(sections).littleEndian) { trailer.append(contentsOf: $0) }
            trailer.withUnsafeBytes {
                JournalFormat.appendFrame(to: &buffer, sequence: 0, payload: $0, payloadCRC: CRC32C.checksum($0))
            }
            try flushBuffer()
            try FileIO.fsync(fd, path: tempPath)
            FileIO.close(fd)
            fd = -1
            let readBack = try Scanner.scanSnapshot(directory: directory, name: JournalFormat.snapshotName(coveredSequence: coveredSequence) + ".tmp",
                                                    covered: coveredSequence, wantPayloads: false)
            if let damage = readBack.damage {
                throw JournalError.damaged(file: tempPath, offset: damage.offset, reason: "read back after writing: " + damage.reason)
            }
            try FileIO.rename(tempPath, finalPath)
            finished = true
            try FileIO.fsyncDirectory(directory)
            return finalPath
        } catch {
            if !finished { abort() }
            throw error
        }
    }

    /// Abandons the snapshot and removes the temporary file. Idempotent.
    public func abort() {
        if fd >= 0 { FileIO.close(fd); fd = -1 }
        if !finished { try? FileIO.unlink(tempPath) }
        finished = true
    }
}

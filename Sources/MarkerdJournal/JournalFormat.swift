internal import Glibc

/// The on-disk formats. All integers are little-endian.
///
/// **Frame** (journal records and snapshot sections alike), 16-byte header then payload:
/// ```
/// offset 0   UInt32  length    payload length in bytes (0 ... maxPayloadSize)
/// offset 4   UInt32  crc       CRC-32C over the payload bytes FOLLOWED BY the 8 sequence bytes
///                              (i.e. CRC32C.update(CRC32C.checksum(payload), littleEndian: sequence))
/// offset 8   UInt64  sequence  journal: the record's sequence number (1, 2, 3, ...);
///                              snapshot: the section's ordinal (1, 2, 3, ...), 0 for the trailer
/// offset 16  payload
/// ```
/// The CRC covers the payload first so that it can be computed before the sequence is
/// assigned (outside the append lock); only the 8 sequence bytes are folded in under the lock.
///
/// **Journal segment** `journal-<16 lowercase hex digits>.log`, named after the sequence of its
/// first record: frames back to back, no file header. Sequences are contiguous within a segment
/// and continue from one segment to the next; the active (newest) segment may be empty.
///
/// **Snapshot** `snapshot-<16 lowercase hex digits>.snap`, named after the sequence it covers
/// (every record <= it is reflected): section frames with ordinals 1...n, then one trailer frame
/// (sequence 0) whose 24-byte payload is `"MKSNAP01"`, UInt64 covered sequence, UInt64 n, then
/// end of file. A snapshot being written is `snapshot-<hex>.snap.tmp`; only `commit()` renames it.
///
/// **Manifest** `journal.manifest` (20 bytes): `"MKJMAN01"`, UInt64 first sequence of the newest
/// journal segment, UInt32 CRC-32C of the 16 bytes before it. Replaced atomically
/// (`journal.manifest.tmp`, fsync, rename, fsync of the directory) each time a segment is
/// created, after the segment itself. It lets recovery and `markerd check` notice a deleted
/// newest segment, which leaves no gap between the segments that remain: the segment it names
/// must exist (newer segments may too: a crash can come between creating one and naming it).
/// Directories written before the manifest existed get one at their next open.
///
/// **LOCK**: holds an exclusive `flock` while a process uses the directory; contains its pid.
public enum JournalFormat {
    public static let frameHeaderSize = 16
    /// The largest payload accepted by `append` and by readers (a larger length is damage): 64 MiB.
    public static let maxPayloadSize = 64 << 20
    static let snapshotTrailerMagic: [UInt8] = Array("MKSNAP01".utf8)

    public static func segmentName(firstSequence: UInt64) -> String {
        "journal-" + hex16(firstSequence) + ".log"
    }

    public static func snapshotName(coveredSequence: UInt64) -> String {
        "snapshot-" + hex16(coveredSequence) + ".snap"
    }

    public static let manifestName = "journal.manifest"
    static let manifestMagic: [UInt8] = Array("MKJMAN01".utf8)

    /// Atomically replaces the manifest with one naming the segment that starts at `newest`.
    /// `durable`: fsync the file before the rename and the directory after it (else a crash of
    /// the machine may keep the old manifest, which names an existing, older segment).
    static func writeManifest(directory: String, newest: UInt64, durable: Bool) throws {
        var bytes = manifestMagic
        withUnsafeBytes(of: newest.littleEndian) { bytes.append(contentsOf: $0) }
        let crc = bytes.withUnsafeBytes { CRC32C.checksum($0) }
        withUnsafeBytes(of: crc.littleEndian) { bytes.append(contentsOf: $0) }
        let path = FileIO.join(directory, manifestName)
        let temp = path + ".tmp"
        let fd = try FileIO.open(temp, O_WRONLY | O_CREAT | O_TRUNC)
        do {
            try bytes.withUnsafeBytes { try FileIO.writeAll(fd, $0, path: temp) }
            if durable { try FileIO.fsync(fd, path: temp) }
        } catch {
            FileIO.close(fd)
            try? FileIO.unlink(temp)
            throw error
        }
        FileIO.close(fd)
        try FileIO.rename(temp, path)
        if durable { try FileIO.fsyncDirectory(directory) }
    }

    /// The first sequence of the newest segment, as the manifest names it; nil when there is no
    /// manifest. Throws `.damaged` naming the manifest when it is unreadable or malformed.
    static func readManifest(directory: String) throws -> UInt64? {
        let path = FileIO.join(directory, manifestName)
        let fd: Int32
        do {
            fd = try FileIO.open(path, O_RDONLY)
        } catch JournalError.io(_, _, ENOENT) {
            return nil
        }
        defer { FileIO.close(fd) }
        var bytes = [UInt8](repeating: 0, count: 21)
        let n = try bytes.withUnsafeMutableBytes { try FileIO.pread(fd, $0.baseAddress!, count: 21, offset: 0, path: path) }
        guard n == 20, Array(bytes[0..<8]) == manifestMagic else {
            throw JournalError.damaged(file: path, offset: 0, reason: "malformed journal manifest (\(n) bytes)")
        }
        let stored = bytes[16..<20].withUnsafeBytes { UInt32(littleEndian: $0.loadUnaligned(as: UInt32.self)) }
        guard bytes[0..<16].withUnsafeBytes({ CRC32C.checksum($0) }) == stored else {
            throw JournalError.damaged(file: path, offset: 0, reason: "journal manifest CRC mismatch")
        }
        return bytes[8..<16].withUnsafeBytes { UInt64(littleEndian: $0.loadUnaligned(as: UInt64.self)) }
    }

    static func hex16(_ v: UInt64) -> String {
        let s = String(v, radix: 16)
        return String(repeating: "0", count: 16 - s.count) + s
    }

    /// Parses `prefix<16 hex>suffix`.
    static func parse(_ name: String, prefix: String, suffix: String) -> UInt64? {
        guard name.hasPrefix(prefix), name.hasSuffix(suffix),
              name.utf8.count == prefix.utf8.count + 16 + suffix.utf8.count else { return nil }
        let hex = name.dropFirst(prefix.count).dropLast(suffix.count)
        guard hex.allSatisfy({ $0.isHexDigit && !$0.isUppercase }) else { return nil }
        return UInt64(hex, radix: 16)
    }

    static func frameCRC(payloadCRC: UInt32, sequence: UInt64) -> UInt32 {
        CRC32C.update(payloadCRC, littleEndian: sequence)
    }

    /// Appends one frame to `buffer`.
    static func appendFrame(to buffer: inout [UInt8], sequence: UInt64, payload: UnsafeRawBufferPointer, payloadCRC: UInt32) {
        let crc = frameCRC(payloadCRC: payloadCRC, sequence: sequence)
        withUnsafeBytes(of: UInt32(payload.count).littleEndian) { buffer.append(contentsOf: $0) }
        withUnsafeBytes(of: crc.littleEndian) { buffer.append(contentsOf: $0) }
        withUnsafeBytes(of: sequence.littleEndian) { buffer.append(contentsOf: $0) }
        buffer.append(contentsOf: payload)
    }

    static func encodeFrame(sequence: UInt64, payload: [UInt8]) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(frameHeaderSize + payload.count)
        payload.withUnsafeBytes { appendFrame(to: &out, sequence: sequence, payload: $0, payloadCRC: CRC32C.checksum($0)) }
        return out
    }
}

/// Directory listing, classified by file name.
struct DirectoryListing {
    /// (first sequence, file name), ascending.
    var segments: [(first: UInt64, name: String)] = []
    /// (covered sequence, file name), ascending.
    var snapshots: [(covered: UInt64, name: String)] = []
    /// Unfinished snapshots and manifests (`*.snap.tmp`, `journal.manifest.tmp`).
    var temporaries: [String] = []
    var others: [String] = []

    init(directory: String) throws {
        for name in try FileIO.list(directory) {
            if let f = JournalFormat.parse(name, prefix: "journal-", suffix: ".log") {
                segments.append((f, name))
            } else if let s = JournalFormat.parse(name, prefix: "snapshot-", suffix: ".snap") {
                snapshots.append((s, name))
            } else if JournalFormat.parse(name, prefix: "snapshot-", suffix: ".snap.tmp") != nil
                        || name == JournalFormat.manifestName + ".tmp" {
                temporaries.append(name)
            } else if name != "LOCK" && name != JournalFormat.manifestName {
                others.append(name)
            }
        }
        segments.sort { $0.first < $1.first }
        snapshots.sort { $0.covered < $1.covered }
    }

    /// The segment the manifest names when it is missing from the directory (nil: present, or
    /// no manifest). Throws the manifest's damage.
    func missingNewestSegment(directory: String) throws -> String? {
        guard let newest = try JournalFormat.readManifest(directory: directory),
              !segments.contains(where: { $0.first == newest }) else { return nil }
        return JournalFormat.segmentName(firstSequence: newest)
    }

    /// The error recovery refuses with when the segment the manifest names is missing.
    static func missingSegmentError(directory: String, name: String) -> JournalError {
        .inconsistent(directory: directory, reason: "journal segment \(name) is missing: \(JournalFormat.manifestName) names it as the newest segment, so the records in it would be lost (restore the file, or run `markerd repair` to accept the loss)")
    }
}

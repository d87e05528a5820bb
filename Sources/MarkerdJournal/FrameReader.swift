internal import Glibc

/// Sequential, buffered reader of frames from one file (journal segment or snapshot).
/// Not thread-safe; owns its file descriptor.
final class FrameReader {
    enum Step {
        case frame(offset: Int64, sequence: UInt64, payload: [UInt8])
        case end
        case damaged(offset: Int64, reason: String)
    }

    let path: String
    let fileSize: Int64
    private let fd: Int32
    /// File offset of the next frame.
    private(set) var offset: Int64 = 0
    private var buffer: [UInt8]
    private var bufferStart: Int64 = 0
    private var bufferCount = 0
    private static let chunk = 1 << 20

    init(path: String) throws {
        self.path = path
        fd = try FileIO.open(path, O_RDONLY)
        do { fileSize = try FileIO.size(fd, path: path) } catch { FileIO.close(fd); throw error }
        buffer = [UInt8](repeating: 0, count: Self.chunk)
    }

    deinit { FileIO.close(fd) }

    /// Makes bytes [at, at+count) available in `buffer`; false if the file ends before.
    private func ensure(_ count: Int, at: Int64) throws -> Bool {
        if at >= bufferStart && at + Int64(count) <= bufferStart + Int64(bufferCount) { return true }
        if at + Int64(count) > fileSize { return false }
        let want = Int(min(Int64(max(count, Self.chunk)), fileSize - at))
        if buffer.count < want { buffer = [UInt8](repeating: 0, count: want) }
        let got = try buffer.withUnsafeMutableBytes {
            try FileIO.pread(fd, $0.baseAddress!, count: want, offset: at, path: path)
        }
        bufferStart = at
        bufferCount = got
        return got >= count
    }

    private func withBytes<R>(at: Int64, count: Int, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        let start = Int(at - bufferStart)
        return buffer.withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[start..<start + count])) }
    }

    /// Reads the next frame. A damaged frame is reported at its offset and not consumed.
    /// Without `copyPayload` the payload comes back empty, except a snapshot trailer's
    /// (sequence 0), which is always copied.
    func next(copyPayload: Bool = true) throws -> Step {
        let at = offset
        if at == fileSize { return .end }
        let h = JournalFormat.frameHeaderSize
        guard try ensure(h, at: at) else {
            return .damaged(offset: at, reason: "truncated frame header (\(fileSize - at) of \(h) bytes present)")
        }
        let (length, storedCRC, sequence) = header(at: at)
        if length > JournalFormat.maxPayloadSize {
            return .damaged(offset: at, reason: "implausible record length \(length) (limit \(JournalFormat.maxPayloadSize))")
        }
        guard try ensure(h + length, at: at) else {
            return .damaged(offset: at, reason: "truncated record: length \(length) needs \(h + length) bytes, \(fileSize - at) present")
        }
        let crc = withBytes(at: at + Int64(h), count: length) {
            JournalFormat.frameCRC(payloadCRC: CRC32C.checksum($0), sequence: sequence)
        }
        if crc != storedCRC {
            return .damaged(offset: at, reason: "CRC mismatch (stored 0x\(String(storedCRC, radix: 16)), computed 0x\(String(crc, radix: 16)), length \(length), sequence field \(sequence))")
        }
        let payload = copyPayload || sequence == 0 ? withBytes(at: at + Int64(h), count: length) { Array($0) } : []
        offset = at + Int64(h + length)
        return .frame(offset: at, sequence: sequence, payload: payload)
    }

    private func header(at: Int64) -> (Int, UInt32, UInt64) {
        withBytes(at: at, count: JournalFormat.frameHeaderSize) { b in
            (Int(UInt32(littleEndian: b.loadUnaligned(fromByteOffset: 0, as: UInt32.self))),
             UInt32(littleEndian: b.loadUnaligned(fromByteOffset: 4, as: UInt32.self)),
             UInt64(littleEndian: b.loadUnaligned(fromByteOffset: 8, as: UInt64.self)))
        }
    }

    /// Whether a valid frame with a sequence in `window` starts at `at`.
    private func validFrame(at: Int64, window: ClosedRange<UInt64>) throws -> Int? {
        let h = JournalFormat.frameHeaderSize
        guard try ensure(h, at: at) else { return nil }
        let (length, storedCRC, sequence) = header(at: at)
        guard window.contains(sequence), length <= JournalFormat.maxPayloadSize,
              at + Int64(h + length) <= fileSize, try ensure(h + length, at: at) else { return nil }
        let crc = withBytes(at: at + Int64(h), count: length) {
            JournalFormat.frameCRC(payloadCRC: CRC32C.checksum($0), sequence: sequence)
        }
        return crc == storedCRC ? length : nil
    }

    /// Intact frames found after damage at `from` (exclusive unless `inclusive`): resynchronises
    /// byte by byte on frames whose sequence lies in `window`, then follows frame chains.
    /// Returns their count, the lowest and highest sequence seen.
    func intactFrames(after from: Int64, inclusive: Bool, window: ClosedRange<UInt64>) throws
        -> (count: Int, first: UInt64?, last: UInt64?)
    {
        var at = inclusive ? from : from + 1
        var count = 0
        var first: UInt64?
        var last: UInt64?
        let h = Int64(JournalFormat.frameHeaderSize)
        while at + h <= fileSize {
            if let length = try validFrame(at: at, window: window) {
                let s = header(at: at).2
                count += 1
                first = min(first ?? s, s)
                last = max(last ?? s, s)
                at += h + Int64(length)
            } else {
                at += 1
            }
        }
        return (count, first, last)
    }
}

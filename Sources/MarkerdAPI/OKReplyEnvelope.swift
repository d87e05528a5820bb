/// An OK `Response` envelope without a message, written straight into the reply buffer: the
/// payload is copied once, where `serializedBytes()` packs it into an array that is then copied
/// into the nng message (two copies of a 300 KB GetClusters answer). `write(requestID:payloadCount:into:payload:)`
/// writes one around a payload that is written in place (inline GetClusters: no array at all).
/// The bytes equal what protobuf-c packs for the same message (`OKReplyEnvelopeTests`).
///
///     Response: request_id = 1 (varint, left out when 0), code = 2 (OK = 0: left out),
///               message = 3 (empty: left out), payload = 4 (bytes, left out when empty)
public struct OKReplyEnvelope: Sendable {
    let requestID: UInt64
    let payload: [UInt8]

    /// An OK reply carrying `payload`.
    public init(requestID: UInt64, payload: [UInt8]) {
        self.requestID = requestID
        self.payload = payload
    }

    /// Nil unless `response` is OK with an empty message and no `sequence` (cluster mode; other
    /// replies are small: protobuf-c).
    public init?(_ response: V1.Response) {
        guard response.code == .ok, response.message.isEmpty, response.sequence == 0 else { return nil }
        requestID = response.requestID
        payload = response.payload
    }

    /// Bytes of the envelope.
    public var size: Int { Self.headerSize(requestID: requestID, payloadCount: payload.count) + payload.count }

    /// Writes the envelope into `out` (`size` bytes).
    public func write(into out: UnsafeMutableRawBufferPointer) {
        Self.write(requestID: requestID, payloadCount: payload.count, into: out) { p in
            payload.withUnsafeBytes { if let b = $0.baseAddress { p.baseAddress!.copyMemory(from: b, byteCount: $0.count) } }
        }
    }

    /// Bytes of an OK envelope's fields before its payload of `payloadCount` bytes.
    public static func headerSize(requestID: UInt64, payloadCount: Int) -> Int {
        (requestID != 0 ? 1 + ProtoWriter.varintSize(requestID) : 0)
            + (payloadCount == 0 ? 0 : 1 + ProtoWriter.varintSize(UInt64(payloadCount)))
    }

    /// Writes an OK envelope with a payload of `payloadCount` bytes into `out` (exactly
    /// `headerSize + payloadCount` bytes): the fields up to the payload's length, then
    /// `writePayload` fills the last `payloadCount` bytes in place (not called when 0), so a
    /// payload that is never gathered in an array is still copied once.
    public static func write(requestID: UInt64, payloadCount: Int, into out: UnsafeMutableRawBufferPointer,
                             payload writePayload: (UnsafeMutableRawBufferPointer) -> Void) {
        precondition(out.count == headerSize(requestID: requestID, payloadCount: payloadCount) + payloadCount,
                     "OKReplyEnvelope buffer is \(out.count) bytes for a payload of \(payloadCount)")
        let start = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
        var w = ProtoWriter(start)
        if requestID != 0 { w.byte(0x08); w.varint(requestID) }
        if payloadCount != 0 {
            w.byte(0x22)
            w.varint(UInt64(payloadCount))
            writePayload(UnsafeMutableRawBufferPointer(rebasing: out[w.written(from: start)...]))
        }
    }

    /// The envelope as an array (tests).
    public var bytes: [UInt8] {
        [UInt8](unsafeUninitializedCapacity: size) { b, n in
            write(into: UnsafeMutableRawBufferPointer(b))
            n = b.count
        }
    }
}

import MarkerdAPI

/// An OK `Response` envelope without a message, written straight into the reply buffer: the
/// payload is copied once, where `serializedBytes()` packs it into an array that is then copied
/// into the nng message (two copies of a 300 KB GetClusters answer). The bytes equal what
/// protobuf-c packs for the same message (`OKReplyEnvelopeTests`).
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

    /// Nil unless `response` is OK with an empty message (other replies are small: protobuf-c).
    public init?(_ response: V1.Response) {
        guard response.code == .ok, response.message.isEmpty else { return nil }
        requestID = response.requestID
        payload = response.payload
    }

    /// Bytes of the envelope.
    public var size: Int {
        (requestID != 0 ? 1 + InlineTileReply.varintSize(requestID) : 0)
            + (payload.isEmpty ? 0 : 1 + InlineTileReply.varintSize(UInt64(payload.count)) + payload.count)
    }

    /// Writes the envelope into `out` (`size` bytes).
    public func write(into out: UnsafeMutableRawBufferPointer) {
        var at = 0
        func varint(_ v: UInt64) {
            var v = v
            while v >= 0x80 { out[at] = UInt8(truncatingIfNeeded: v) | 0x80; at += 1; v >>= 7 }
            out[at] = UInt8(v)
            at += 1
        }
        if requestID != 0 { out[at] = 0x08; at += 1; varint(requestID) }
        if !payload.isEmpty {
            out[at] = 0x22
            at += 1
            varint(UInt64(payload.count))
            payload.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[at ..< at + $0.count]).copyMemory(from: $0) }
            at += payload.count
        }
        precondition(at == out.count, "OKReplyEnvelope wrote \(at) of \(out.count) bytes")
    }

    /// The envelope as an array (tests).
    public var bytes: [UInt8] {
        [UInt8](unsafeUninitializedCapacity: size) { b, n in
            write(into: UnsafeMutableRawBufferPointer(b))
            n = b.count
        }
    }
}

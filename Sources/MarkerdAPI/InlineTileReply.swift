/// An OK `Response` envelope carrying a `GetTileResponse`, encoded straight into the reply
/// buffer: the PNG is copied once (the generic path copies it into the payload, the envelope
/// and the message). The bytes equal what protobuf-c packs for the same messages (fields in
/// number order, zero values left out), which `InlineReplyTests` checks.
///
///     Response:        request_id = 1 (varint), code = 2 (OK = 0: left out), payload = 4 (bytes)
///     GetTileResponse: png = 1 (bytes), version = 2 (varint), not_modified = 3, empty = 4 (bool)
public struct InlineTileReply: Sendable {
    let requestID: UInt64
    let response: V1.GetTileResponse

    public init(requestID: UInt64, response: V1.GetTileResponse) {
        self.requestID = requestID
        self.response = response
    }

    /// Bytes of the GetTileResponse.
    private var payloadSize: Int {
        var n = 0
        if !response.png.isEmpty { n += 1 + Self.varintSize(UInt64(response.png.count)) + response.png.count }
        if response.version != 0 { n += 1 + Self.varintSize(response.version) }
        if response.notModified { n += 2 }
        if response.empty { n += 2 }
        return n
    }

    /// Bytes of the whole envelope.
    public var size: Int {
        let p = payloadSize
        return OKReplyEnvelope.headerSize(requestID: requestID, payloadCount: p) + p
    }

    /// Writes the envelope into `out` (`size` bytes): `OKReplyEnvelope`'s fields around the
    /// GetTileResponse written in place.
    public func write(into out: UnsafeMutableRawBufferPointer) {
        OKReplyEnvelope.write(requestID: requestID, payloadCount: payloadSize, into: out) { out in
            var at = 0
            func byte(_ b: UInt8) { out[at] = b; at += 1 }
            func varint(_ v: UInt64) {
                var v = v
                while v >= 0x80 { byte(UInt8(truncatingIfNeeded: v) | 0x80); v >>= 7 }
                byte(UInt8(v))
            }
            if !response.png.isEmpty {
                byte(0x0A); varint(UInt64(response.png.count))
                response.png.withUnsafeBytes { UnsafeMutableRawBufferPointer(rebasing: out[at ..< at + $0.count]).copyMemory(from: $0) }
                at += response.png.count
            }
            if response.version != 0 { byte(0x10); varint(response.version) }
            if response.notModified { byte(0x18); byte(1) }
            if response.empty { byte(0x20); byte(1) }
            precondition(at == out.count, "InlineTileReply wrote \(at) of \(out.count) payload bytes")
        }
    }

    static func varintSize(_ v: UInt64) -> Int { max(1, (64 - v.leadingZeroBitCount + 6) / 7) }
}

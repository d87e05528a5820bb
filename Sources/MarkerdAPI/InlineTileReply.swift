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
        if !response.png.isEmpty { n += 1 + ProtoWriter.varintSize(UInt64(response.png.count)) + response.png.count }
        if response.version != 0 { n += 1 + ProtoWriter.varintSize(response.version) }
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
            let start = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
            var w = ProtoWriter(start)
            if !response.png.isEmpty {
                w.byte(0x0A); w.varint(UInt64(response.png.count))
                w.bytes(response.png)
            }
            if response.version != 0 { w.byte(0x10); w.varint(response.version) }
            if response.notModified { w.byte(0x18); w.byte(1) }
            if response.empty { w.byte(0x20); w.byte(1) }
            precondition(w.written(from: start) == out.count, "InlineTileReply wrote \(w.written(from: start)) of \(out.count) payload bytes")
        }
    }

}

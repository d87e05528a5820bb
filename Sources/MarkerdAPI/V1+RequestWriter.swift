extension V1.Request {
    /// Bytes of this envelope with a payload of `payloadCount` bytes in place of `payload`
    /// (which is ignored): what `write(payloadCount:into:payload:)` fills.
    public func serializedSize(payloadCount: Int) -> Int {
        func string(_ s: String) -> Int {
            s.isEmpty ? 0 : 1 + ProtoWriter.varintSize(UInt64(Self.cLength(s))) + Self.cLength(s)
        }
        return string(method) + (requestID != 0 ? 1 + ProtoWriter.varintSize(requestID) : 0) + string(idempotencyKey)
            + (timeoutMs != 0 ? 1 + ProtoWriter.varintSize(UInt64(timeoutMs)) : 0) + string(authToken)
            + (payloadCount == 0 ? 0 : 1 + ProtoWriter.varintSize(UInt64(payloadCount)) + payloadCount)
            + (minSequence != 0 ? 1 + ProtoWriter.varintSize(minSequence) : 0)
    }

    /// Writes this envelope into `out` (exactly `serializedSize(payloadCount:)` bytes) with a
    /// payload of `payloadCount` bytes that `writePayload` fills in place (exactly those bytes,
    /// before `min_sequence`; not called when 0), so that a client's request is written once,
    /// straight into the transport's message, rather than encoded into an array that protobuf-c
    /// copies into its own and packs into a third. `payload` is ignored. The bytes equal what
    /// `serializedBytes()` packs for the same envelope with that payload (protobuf-c's: fields in
    /// number order, zeros and empty strings left out, a string cut at its first NUL byte).
    public func write(payloadCount: Int, into out: UnsafeMutableRawBufferPointer,
                      payload writePayload: (UnsafeMutableRawBufferPointer) -> Void) {
        precondition(out.count == serializedSize(payloadCount: payloadCount),
                     "Request buffer is \(out.count) bytes, expected \(serializedSize(payloadCount: payloadCount))")
        let start = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
        var w = ProtoWriter(start)
        func string(_ field: UInt8, _ s: String) {
            guard !s.isEmpty else { return }
            let n = Self.cLength(s)
            w.key(field, 2)
            w.varint(UInt64(n))
            var s = s
            s.withUTF8 { w.bytes(UnsafeBufferPointer(rebasing: $0.prefix(n))) }
        }
        string(1, method)
        if requestID != 0 { w.key(2, 0); w.varint(requestID) }
        string(3, idempotencyKey)
        if timeoutMs != 0 { w.key(4, 0); w.varint(UInt64(timeoutMs)) }
        string(5, authToken)
        if payloadCount != 0 {
            w.key(6, 2)
            w.varint(UInt64(payloadCount))
            let at = w.written(from: start)
            writePayload(UnsafeMutableRawBufferPointer(rebasing: out[at ..< at + payloadCount]))
            w.at += payloadCount
        }
        if minSequence != 0 { w.key(7, 0); w.varint(minSequence) }
    }

    /// Bytes of `s` that protobuf-c encodes: up to its first NUL (it takes a C string).
    private static func cLength(_ s: String) -> Int { s.utf8.firstIndex(of: 0).map { s.utf8.distance(from: s.utf8.startIndex, to: $0) } ?? s.utf8.count }

}

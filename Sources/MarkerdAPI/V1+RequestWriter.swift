extension V1.Request {
    /// Bytes of this envelope with a payload of `payloadCount` bytes in place of `payload`
    /// (which is ignored): what `write(payloadCount:into:payload:)` fills.
    public func serializedSize(payloadCount: Int) -> Int {
        func string(_ s: String) -> Int {
            s.isEmpty ? 0 : 1 + Self.varintSize(UInt64(Self.cLength(s))) + Self.cLength(s)
        }
        return string(method) + (requestID != 0 ? 1 + Self.varintSize(requestID) : 0) + string(idempotencyKey)
            + (timeoutMs != 0 ? 1 + Self.varintSize(UInt64(timeoutMs)) : 0) + string(authToken)
            + (payloadCount == 0 ? 0 : 1 + Self.varintSize(UInt64(payloadCount)) + payloadCount)
    }

    /// Writes this envelope into `out` (exactly `serializedSize(payloadCount:)` bytes) with a
    /// payload of `payloadCount` bytes that `writePayload` fills in place (the last
    /// `payloadCount` bytes; not called when 0), so that a client's request is written once,
    /// straight into the transport's message, rather than encoded into an array that protobuf-c
    /// copies into its own and packs into a third. `payload` is ignored. The bytes equal what
    /// `serializedBytes()` packs for the same envelope with that payload (protobuf-c's: fields in
    /// number order, zeros and empty strings left out, a string cut at its first NUL byte).
    public func write(payloadCount: Int, into out: UnsafeMutableRawBufferPointer,
                      payload writePayload: (UnsafeMutableRawBufferPointer) -> Void) {
        precondition(out.count == serializedSize(payloadCount: payloadCount),
                     "Request buffer is \(out.count) bytes, expected \(serializedSize(payloadCount: payloadCount))")
        var at = 0
        func byte(_ b: UInt8) { out[at] = b; at += 1 }
        func varint(_ v: UInt64) {
            var v = v
            while v >= 0x80 { byte(UInt8(truncatingIfNeeded: v) | 0x80); v >>= 7 }
            byte(UInt8(v))
        }
        func string(_ key: UInt8, _ s: String) {
            guard !s.isEmpty else { return }
            let n = Self.cLength(s)
            byte(key)
            varint(UInt64(n))
            for b in s.utf8.prefix(n) { byte(b) }
        }
        string(1 << 3 | 2, method)
        if requestID != 0 { byte(2 << 3 | 0); varint(requestID) }
        string(3 << 3 | 2, idempotencyKey)
        if timeoutMs != 0 { byte(4 << 3 | 0); varint(UInt64(timeoutMs)) }
        string(5 << 3 | 2, authToken)
        if payloadCount != 0 {
            byte(6 << 3 | 2)
            varint(UInt64(payloadCount))
            writePayload(UnsafeMutableRawBufferPointer(rebasing: out[at...]))
        }
    }

    /// Bytes of `s` that protobuf-c encodes: up to its first NUL (it takes a C string).
    private static func cLength(_ s: String) -> Int { s.utf8.firstIndex(of: 0).map { s.utf8.distance(from: s.utf8.startIndex, to: $0) } ?? s.utf8.count }

    private static func varintSize(_ v: UInt64) -> Int { max(1, (64 - v.leadingZeroBitCount + 6) / 7) }
}

extension V1 {
    /// The fields of a `Request` envelope that a query needs, read in place from the wire bytes:
    /// no protobuf-c unpack, no arena, no `String` for the method and no copy of the payload
    /// (`V1.Request(serializedBytes:)` does all four: about 3-4 µs p50 of an inline call).
    ///
    /// Only for the plain envelope of a query: `init` returns nil (and the caller decodes with
    /// `V1.Request(serializedBytes:)`, which gives the answer or the error) for anything else:
    /// malformed bytes, an unknown field number, a field with an unexpected wire type, a field
    /// that occurs twice, a `timeout_ms` beyond `UInt32`, a method name that is not printable ASCII (a NUL would cut the full decode's C string short), or a non-empty `idempotency_key` or
    /// `auth_token` (strings whose UTF-8 the full decode checks). Whenever it returns a head,
    /// the full decode succeeds with the same method bytes, request id, timeout and payload
    /// (`RequestHeadTests` compares them on seeded random envelopes).
    public struct RequestHead: Sendable, Equatable {
        /// Byte range of the method name (`Request.method`) within the envelope's bytes.
        public var method: Range<Int>
        /// `Request.request_id`; 0 when absent.
        public var requestID: UInt64
        /// `Request.timeout_ms`; 0 (no deadline) when absent.
        public var timeoutMs: UInt32
        /// Byte range of `Request.payload` within the envelope's bytes (empty when absent).
        public var payload: Range<Int>

        /// Reads the head of the envelope `bytes`, or nil (see the type's notes).
        public init?(_ bytes: UnsafeRawBufferPointer) {
            var reader = WireReader(bytes)
            var method = 0..<0, payload = 0..<0
            var requestID: UInt64 = 0, timeout: UInt64 = 0
            var seen: UInt8 = 0
            while !reader.atEnd {
                guard let key = reader.key() else { return nil }
                let field = key >> 3, wireType = key & 7
                guard field >= 1, field <= 6 else { return nil }
                let bit = UInt8(1) << UInt8(field)
                guard seen & bit == 0 else { return nil }
                seen |= bit
                switch field {
                case 2, 4:
                    guard wireType == 0, let v = reader.varint() else { return nil }
                    if field == 2 { requestID = v } else { timeout = v }
                default:
                    guard wireType == 2, let r = reader.lengthDelimited() else { return nil }
                    switch field {
                    case 1:
                        // Method names are printable ASCII; other bytes take the full decode: bytes
                        // from 0x80 may be invalid UTF-8, and protobuf-c hands the string over as a C
                        // string, so a NUL would cut it short there (control bytes: no method has them).
                        for i in r where bytes[i] < 0x20 || bytes[i] >= 0x7F { return nil }
                        method = r
                    case 6: payload = r
                    default: guard r.isEmpty else { return nil }  // idempotency_key, auth_token
                    }
                }
            }
            guard timeout <= UInt64(UInt32.max) else { return nil }
            self.method = method
            self.requestID = requestID
            self.timeoutMs = UInt32(timeout)
            self.payload = payload
        }
    }
}

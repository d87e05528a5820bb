extension V1 {
    /// The fields of a `Request` envelope that a query needs, read in place from the wire bytes:
    /// no protobuf-c unpack, no arena, no `String` for the method and no copy of the payload
    /// (`V1.Request(serializedBytes:)` does all four: about 3-4 µs p50 of an inline call).
    ///
    /// Only for the plain envelope of a query: `init` returns nil (and the caller decodes with
    /// `V1.Request(serializedBytes:)`, which gives the answer or the error) for anything else:
    /// malformed bytes, an unknown field number, a field with an unexpected wire type, a field
    /// that occurs twice, a `timeout_ms` beyond `UInt32`, a method name or `auth_token` that is
    /// not printable ASCII (a NUL would cut the full decode's C string short; other bytes may be
    /// invalid UTF-8, which the full decode checks), or a non-empty `idempotency_key`. Whenever it
    /// returns a head, the full decode succeeds with the same method bytes, request id, timeout,
    /// auth token and payload (`RequestHeadTests` compares them on seeded random envelopes).
    public struct RequestHead: Sendable, Equatable {
        /// Byte range of the method name (`Request.method`) within the envelope's bytes.
        public var method: Range<Int>
        /// `Request.request_id`; 0 when absent.
        public var requestID: UInt64
        /// `Request.timeout_ms`; 0 (no deadline) when absent.
        public var timeoutMs: UInt32
        /// Byte range of `Request.auth_token` within the envelope's bytes (empty when absent).
        public var authToken: Range<Int>
        /// Byte range of `Request.payload` within the envelope's bytes (empty when absent).
        public var payload: Range<Int>

        /// Reads the head of the envelope `bytes`, or nil (see the type's notes).
        public init?(_ bytes: UnsafeRawBufferPointer) {
            var reader = WireReader(bytes)
            var method = 0..<0, payload = 0..<0, authToken = 0..<0
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
                    case 1, 5:
                        // Method names and tokens are printable ASCII; other bytes take the full
                        // decode: bytes from 0x80 may be invalid UTF-8, and protobuf-c hands the
                        // string over as a C string, so a NUL would cut it short there (control
                        // bytes: no method or token has them).
                        for i in r where bytes[i] < 0x20 || bytes[i] >= 0x7F { return nil }
                        if field == 1 { method = r } else { authToken = r }
                    case 6: payload = r
                    default: guard r.isEmpty else { return nil }  // idempotency_key
                    }
                }
            }
            guard timeout <= UInt64(UInt32.max) else { return nil }
            self.method = method
            self.requestID = requestID
            self.timeoutMs = UInt32(timeout)
            self.authToken = authToken
            self.payload = payload
        }
    }

    /// Where field 1 of a request message is, read in place from its wire bytes: `layer_id` in
    /// every request that names a layer (`MethodAccess` checks that against the descriptors).
    /// `.some(range)` of the last occurrence (protobuf keeps the last), an empty range when the
    /// field is absent; nil when the bytes are not a well-formed message, field 1 is not
    /// length-delimited (then the full decode fails too), or the id has a byte outside printable
    /// ASCII: no layer id has one, and the service would not see these bytes (protobuf-c cuts
    /// the string at a NUL, Swift repairs invalid UTF-8), so an access check of them would
    /// judge another name than the one served.
    public static func layerIDRange(inPayload bytes: UnsafeRawBufferPointer) -> Range<Int>? {
        var reader = WireReader(bytes)
        var found = 0..<0
        while !reader.atEnd {
            guard let key = reader.key() else { return nil }
            switch key & 7 {
            case 2:
                guard let r = reader.lengthDelimited() else { return nil }
                if key >> 3 == 1 { found = r }
            default: guard reader.skipScalar(wireType: key & 7) else { return nil }
            }
            if key >> 3 == 1 && key & 7 != 2 { return nil }
        }
        for i in found where bytes[i] < 0x20 || bytes[i] >= 0x7F { return nil }
        return found
    }
}

extension V1 {
    /// A `Request` envelope's fields read in place from the wire bytes: no protobuf-c unpack, no
    /// arena, no `String` for the method and no copy of the payload (`V1.Request(serializedBytes:)`
    /// does all four: about 3-4 µs p50 of an inline call, and for a bulk upsert two copies of its
    /// megabytes, each into fresh pages). The inline path answers from it; `V1.Request(head:in:)`
    /// builds the whole envelope from it with one copy of the payload.
    ///
    /// Only for the plain envelope clients write: `init` returns nil (and the caller decodes with
    /// `V1.Request(serializedBytes:)`, which gives the answer or the error) for anything else:
    /// malformed bytes, an unknown field number, a field with an unexpected wire type, a field
    /// that occurs twice, a `timeout_ms` beyond `UInt32`, or a method name, `auth_token` or
    /// `idempotency_key` that is not printable ASCII (a NUL would cut the full decode's C string
    /// short; other bytes may be invalid UTF-8, which the full decode checks). Whenever it returns
    /// a head, the full decode succeeds with the same method bytes, request id, timeout, auth
    /// token, idempotency key, minimum sequence and payload (`RequestHeadTests` compares them on
    /// seeded random envelopes).
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
        /// Byte range of `Request.idempotency_key` within the envelope's bytes (empty when absent).
        public var idempotencyKey: Range<Int>
        /// `Request.min_sequence`; 0 when absent.
        public var minSequence: UInt64

        /// Reads the head of the envelope `bytes`, or nil (see the type's notes).
        public init?(_ bytes: UnsafeRawBufferPointer) {
            var reader = WireReader(bytes)
            var method = 0..<0, payload = 0..<0, authToken = 0..<0, key = 0..<0
            var requestID: UInt64 = 0, timeout: UInt64 = 0, minSequence: UInt64 = 0
            var seen: UInt8 = 0
            while !reader.atEnd {
                guard let tag = reader.key() else { return nil }
                let field = tag >> 3, wireType = tag & 7
                guard field >= 1, field <= 7 else { return nil }
                let bit = UInt8(1) << UInt8(field)
                guard seen & bit == 0 else { return nil }
                seen |= bit
                switch field {
                case 2, 4, 7:
                    guard wireType == 0, let v = reader.varint() else { return nil }
                    switch field {
                    case 2: requestID = v
                    case 4: timeout = v
                    default: minSequence = v
                    }
                default:
                    guard wireType == 2, let r = reader.lengthDelimited() else { return nil }
                    switch field {
                    case 6: payload = r
                    default:
                        // Method names, tokens and keys are printable ASCII; other bytes take the
                        // full decode: bytes from 0x80 may be invalid UTF-8, and protobuf-c hands
                        // the string over as a C string, so a NUL would cut it short there
                        // (control bytes: clients write none).
                        for i in r where bytes[i] < 0x20 || bytes[i] >= 0x7F { return nil }
                        switch field {
                        case 1: method = r
                        case 5: authToken = r
                        default: key = r  // 3
                        }
                    }
                }
            }
            guard timeout <= UInt64(UInt32.max) else { return nil }
            self.method = method
            self.requestID = requestID
            self.timeoutMs = UInt32(timeout)
            self.authToken = authToken
            self.payload = payload
            self.idempotencyKey = key
            self.minSequence = minSequence
        }
    }

    /// The envelope `bytes` decoded: from its head when `RequestHead` reads it (one copy of the
    /// payload, no protobuf-c unpack), else by protobuf-c, which gives the same fields or the
    /// error (`RequestHeadTests`). Throws `ProtoDecodingError` for bytes that are no `Request`.
    public static func request(_ bytes: UnsafeRawBufferPointer) throws(ProtoDecodingError) -> Request {
        guard let head = RequestHead(bytes) else { return try Request(serializedBytes: bytes) }
        func text(_ r: Range<Int>) -> String { String(decoding: UnsafeRawBufferPointer(rebasing: bytes[r]), as: UTF8.self) }
        var request = Request()
        request.method = text(head.method)
        request.requestID = head.requestID
        request.idempotencyKey = text(head.idempotencyKey)
        request.timeoutMs = head.timeoutMs
        request.authToken = text(head.authToken)
        request.payload = Array(UnsafeRawBufferPointer(rebasing: bytes[head.payload]))
        request.minSequence = head.minSequence
        return request
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

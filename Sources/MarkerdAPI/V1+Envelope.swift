// V1+Envelope.swift: The RPC envelope (`Request`, `Response`) and status codes.
// Types mirror Protos/markerd/v1/markerd.proto; see `V1` for the field conventions.
private import CMarkerdProto
private import CProtobufC

extension V1 {
    /// The gRPC canonical status codes (same numbers as google.rpc.Code). The one enum without an
    /// `_UNSPECIFIED` value: gRPC's convention makes 0 mean OK, which is what an unset code means.
    public enum Code: Int32, Sendable, CaseIterable {
        case ok = 0
        case cancelled = 1
        case unknown = 2
        case invalidArgument = 3
        case deadlineExceeded = 4
        case notFound = 5
        case alreadyExists = 6
        case permissionDenied = 7
        case resourceExhausted = 8
        case failedPrecondition = 9
        case aborted = 10
        case outOfRange = 11
        case unimplemented = 12
        case `internal` = 13
        case unavailable = 14
        case dataLoss = 15
        case unauthenticated = 16

        /// The canonical proto name, e.g. "INVALID_ARGUMENT".
        public var name: String {
            switch self {
            case .ok: "OK"
            case .cancelled: "CANCELLED"
            case .unknown: "UNKNOWN"
            case .invalidArgument: "INVALID_ARGUMENT"
            case .deadlineExceeded: "DEADLINE_EXCEEDED"
            case .notFound: "NOT_FOUND"
            case .alreadyExists: "ALREADY_EXISTS"
            case .permissionDenied: "PERMISSION_DENIED"
            case .resourceExhausted: "RESOURCE_EXHAUSTED"
            case .failedPrecondition: "FAILED_PRECONDITION"
            case .aborted: "ABORTED"
            case .outOfRange: "OUT_OF_RANGE"
            case .unimplemented: "UNIMPLEMENTED"
            case .internal: "INTERNAL"
            case .unavailable: "UNAVAILABLE"
            case .dataLoss: "DATA_LOSS"
            case .unauthenticated: "UNAUTHENTICATED"
            }
        }
    }

    /// The proto message `Request`.
    public struct Request: ProtoMessage {
        /// Full method name, e.g. "/markerd.v1.MarkerService/UpsertMarkers".
        /// Proto field `method` = 1; absent decodes to "", which is not encoded.
        public var method: String = ""
        /// Chosen by the client, echoed in the Response. Not interpreted by the server.
        /// Proto field `request_id` = 2; absent decodes to 0, which is not encoded.
        public var requestID: UInt64 = 0
        /// Required for every mutating method except DragTo. A repeat of a key (NNG REQ resends
        /// unanswered requests) returns the first reply and applies nothing. Reusing a key with a
        /// different method or payload is INVALID_ARGUMENT. At most 128 bytes.
        /// Proto field `idempotency_key` = 3; absent decodes to "", which is not encoded.
        public var idempotencyKey: String = ""
        /// Relative deadline, measured from the moment the server receives the request. 0 = none.
        /// A request that is still queued when it expires gets DEADLINE_EXCEEDED and is not applied.
        /// Proto field `timeout_ms` = 4; absent decodes to 0, which is not encoded.
        public var timeoutMs: UInt32 = 0
        /// A token of the server's auth file (`--auth-file`). Without one the server answers
        /// UNAUTHENTICATED; outside the token's scopes or layers PERMISSION_DENIED, before any work.
        /// Ignored when the server runs without an auth file.
        /// Proto field `auth_token` = 5; absent decodes to "", which is not encoded.
        public var authToken: String = ""
        /// The serialized request message of `method`.
        /// Proto field `payload` = 6; absent decodes to [], which is not encoded.
        public var payload: [UInt8] = []

        public init() {}

        public init(
            method: String = "",
            requestID: UInt64 = 0,
            idempotencyKey: String = "",
            timeoutMs: UInt32 = 0,
            authToken: String = "",
            payload: [UInt8] = []
        ) {
            self.method = method
            self.requestID = requestID
            self.idempotencyKey = idempotencyKey
            self.timeoutMs = timeoutMs
            self.authToken = authToken
            self.payload = payload
        }
    }

    /// The proto message `Response`.
    public struct Response: ProtoMessage {
        /// Proto field `request_id` = 1; absent decodes to 0, which is not encoded.
        public var requestID: UInt64 = 0
        /// Proto field `code` = 2; absent decodes to .ok, which is not encoded.
        public var code: Code = .ok
        /// Human-readable error detail; empty on OK.
        /// Proto field `message` = 3; absent decodes to "", which is not encoded.
        public var message: String = ""
        /// The serialized response message of the method; empty unless code == OK.
        /// Proto field `payload` = 4; absent decodes to [], which is not encoded.
        public var payload: [UInt8] = []
        /// With RESOURCE_EXHAUSTED from a token's quota (the auth file's rps=, bps=, expensive=): how
        /// long to wait before trying again, in milliseconds. 0 otherwise.
        /// Proto field `retry_after_ms` = 5; absent decodes to 0, which is not encoded.
        public var retryAfterMs: UInt32 = 0
        /// With INVALID_ARGUMENT, the request fields at fault when the error names them (`message`
        /// names them too), like google.rpc.BadRequest's field violations; else empty.
        /// Proto field `field_violations` = 6.
        public var fieldViolations: [FieldViolation] = []

        public init() {}

        public init(
            requestID: UInt64 = 0,
            code: Code = .ok,
            message: String = "",
            payload: [UInt8] = [],
            retryAfterMs: UInt32 = 0,
            fieldViolations: [FieldViolation] = []
        ) {
            self.requestID = requestID
            self.code = code
            self.message = message
            self.payload = payload
            self.retryAfterMs = retryAfterMs
            self.fieldViolations = fieldViolations
        }
    }

    /// One invalid field of a request.
    public struct FieldViolation: ProtoMessage {
        /// The field's path in the method's request message: proto field names joined by ".", with
        /// "[i]" after a repeated field's name, e.g. "markers[2].position.latitude",
        /// "options.clustering.radius_px", "page_size".
        /// Proto field `field` = 1; absent decodes to "", which is not encoded.
        public var field: String = ""
        /// Why it is invalid, in words: the reply's `message` (which names the field too).
        /// Proto field `description` = 2; absent decodes to "", which is not encoded.
        public var description: String = ""

        public init() {}

        public init(
            field: String = "",
            description: String = ""
        ) {
            self.field = field
            self.description = description
        }
    }
}

// MARK: - protobuf-c bridging

extension V1.Code: ProtoEnum {
    /// Unknown numbers on the wire decode to `.unknown`.
    static var fallback: Self { .unknown }
}

extension V1.Request: CBridged {
    static var protoName: String { "Request" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__Request.self)
        self.init(
            method: try swiftString(c.method, "Request.method"),
            requestID: c.request_id,
            idempotencyKey: try swiftString(c.idempotency_key, "Request.idempotency_key"),
            timeoutMs: c.timeout_ms,
            authToken: try swiftString(c.auth_token, "Request.auth_token"),
            payload: swiftBytes(c.payload.data, c.payload.len)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__Request()
        markerd__v1__request__init(&c)
        c.method = arena.cString(self.method)
        setPlain(self.requestID, &c.has_request_id, &c.request_id)
        c.idempotency_key = arena.cString(self.idempotencyKey)
        setPlain(self.timeoutMs, &c.has_timeout_ms, &c.timeout_ms)
        c.auth_token = arena.cString(self.authToken)
        if !self.payload.isEmpty {
            c.has_payload = 1
            c.payload = ProtobufCBinaryData(len: self.payload.count, data: arena.bytes(self.payload))
        }
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.Response: CBridged {
    static var protoName: String { "Response" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__Response.self)
        self.init(
            requestID: c.request_id,
            code: swiftEnum(c.code),
            message: try swiftString(c.message, "Response.message"),
            payload: swiftBytes(c.payload.data, c.payload.len),
            retryAfterMs: c.retry_after_ms,
            fieldViolations: try swiftMessages(c.n_field_violations, c.field_violations)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__Response()
        markerd__v1__response__init(&c)
        setPlain(self.requestID, &c.has_request_id, &c.request_id)
        setPlain(self.code, &c.has_code, &c.code)
        c.message = arena.cString(self.message)
        if !self.payload.isEmpty {
            c.has_payload = 1
            c.payload = ProtobufCBinaryData(len: self.payload.count, data: arena.bytes(self.payload))
        }
        setPlain(self.retryAfterMs, &c.has_retry_after_ms, &c.retry_after_ms)
        (c.n_field_violations, c.field_violations) = arena.messages(self.fieldViolations)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.FieldViolation: CBridged {
    static var protoName: String { "FieldViolation" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__field_violation__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__FieldViolation.self)
        self.init(
            field: try swiftString(c.field, "FieldViolation.field"),
            description: try swiftString(c.description, "FieldViolation.description")
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__FieldViolation()
        markerd__v1__field_violation__init(&c)
        c.field = arena.cString(self.field)
        c.description = arena.cString(self.description)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

// V1+Admin.swift: Administration: snapshots and server info.
// Types mirror Protos/markerd/v1/markerd.proto; see `V1` for the field conventions.
private import CMarkerdProto
private import CProtobufC

extension V1 {
    /// The proto message `CreateSnapshotRequest`.
    public struct CreateSnapshotRequest: ProtoMessage {

        public init() {}
    }

    /// The proto message `CreateSnapshotResponse`.
    public struct CreateSnapshotResponse: ProtoMessage {
        /// Proto field `path` = 1; absent decodes to "", which is not encoded.
        public var path: String = ""
        /// Proto field `markers` = 2; absent decodes to 0, which is not encoded.
        public var markers: UInt64 = 0
        /// Proto field `bytes` = 3; absent decodes to 0, which is not encoded.
        public var bytes: UInt64 = 0
        /// Proto field `seconds` = 4; absent decodes to 0, which is not encoded.
        public var seconds: Double = 0

        public init() {}

        public init(
            path: String = "",
            markers: UInt64 = 0,
            bytes: UInt64 = 0,
            seconds: Double = 0
        ) {
            self.path = path
            self.markers = markers
            self.bytes = bytes
            self.seconds = seconds
        }
    }

    /// The proto message `GetServerInfoRequest`.
    public struct GetServerInfoRequest: ProtoMessage {

        public init() {}
    }

    /// The proto message `GetServerInfoResponse`.
    public struct GetServerInfoResponse: ProtoMessage {
        /// Proto field `version` = 1; absent decodes to "", which is not encoded.
        public var version: String = ""
        /// Proto field `uptime_seconds` = 2; absent decodes to 0, which is not encoded.
        public var uptimeSeconds: Double = 0
        /// Proto field `layers` = 3; absent decodes to 0, which is not encoded.
        public var layers: UInt32 = 0
        /// Proto field `markers` = 4; absent decodes to 0, which is not encoded.
        public var markers: UInt64 = 0
        /// Proto field `durable` = 5; absent decodes to false, which is not encoded.
        public var durable: Bool = false

        public init() {}

        public init(
            version: String = "",
            uptimeSeconds: Double = 0,
            layers: UInt32 = 0,
            markers: UInt64 = 0,
            durable: Bool = false
        ) {
            self.version = version
            self.uptimeSeconds = uptimeSeconds
            self.layers = layers
            self.markers = markers
            self.durable = durable
        }
    }
}

// MARK: - protobuf-c bridging

extension V1.CreateSnapshotRequest: CBridged {
    static var protoName: String { "CreateSnapshotRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__create_snapshot_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        self.init()
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__CreateSnapshotRequest()
        markerd__v1__create_snapshot_request__init(&c)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.CreateSnapshotResponse: CBridged {
    static var protoName: String { "CreateSnapshotResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__create_snapshot_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__CreateSnapshotResponse.self)
        self.init(
            path: try swiftString(c.path, "CreateSnapshotResponse.path"),
            markers: c.markers,
            bytes: c.bytes,
            seconds: c.seconds
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__CreateSnapshotResponse()
        markerd__v1__create_snapshot_response__init(&c)
        c.path = arena.cString(self.path)
        setPlain(self.markers, &c.has_markers, &c.markers)
        setPlain(self.bytes, &c.has_bytes, &c.bytes)
        setPlain(self.seconds, &c.has_seconds, &c.seconds)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.GetServerInfoRequest: CBridged {
    static var protoName: String { "GetServerInfoRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__get_server_info_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        self.init()
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__GetServerInfoRequest()
        markerd__v1__get_server_info_request__init(&c)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.GetServerInfoResponse: CBridged {
    static var protoName: String { "GetServerInfoResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__get_server_info_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__GetServerInfoResponse.self)
        self.init(
            version: try swiftString(c.version, "GetServerInfoResponse.version"),
            uptimeSeconds: c.uptime_seconds,
            layers: c.layers,
            markers: c.markers,
            durable: c.durable != 0
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__GetServerInfoResponse()
        markerd__v1__get_server_info_response__init(&c)
        c.version = arena.cString(self.version)
        setPlain(self.uptimeSeconds, &c.has_uptime_seconds, &c.uptime_seconds)
        setPlain(self.layers, &c.has_layers, &c.layers)
        setPlain(self.markers, &c.has_markers, &c.markers)
        setPlain(self.durable, &c.has_durable, &c.durable)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

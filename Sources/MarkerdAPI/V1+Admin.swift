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
        /// Proto field `marker_count` = 2; absent decodes to 0, which is not encoded.
        public var markerCount: UInt64 = 0
        /// The snapshot file's size.
        /// Proto field `size_bytes` = 3; absent decodes to 0, which is not encoded.
        public var sizeBytes: UInt64 = 0
        /// How long writing it took. (Field 4 was `double seconds`.)
        /// Proto field `duration_ms` = 5; absent decodes to 0, which is not encoded.
        public var durationMs: UInt64 = 0

        public init() {}

        public init(
            path: String = "",
            markerCount: UInt64 = 0,
            sizeBytes: UInt64 = 0,
            durationMs: UInt64 = 0
        ) {
            self.path = path
            self.markerCount = markerCount
            self.sizeBytes = sizeBytes
            self.durationMs = durationMs
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
        /// Since the process started. (Field 2 was `double uptime_seconds`.)
        /// Proto field `uptime_ms` = 6; absent decodes to 0, which is not encoded.
        public var uptimeMs: UInt64 = 0
        /// Proto field `layer_count` = 3; absent decodes to 0, which is not encoded.
        public var layerCount: UInt64 = 0
        /// Proto field `marker_count` = 4; absent decodes to 0, which is not encoded.
        public var markerCount: UInt64 = 0
        /// Proto field `durable` = 5; absent decodes to false, which is not encoded.
        public var durable: Bool = false

        public init() {}

        public init(
            version: String = "",
            uptimeMs: UInt64 = 0,
            layerCount: UInt64 = 0,
            markerCount: UInt64 = 0,
            durable: Bool = false
        ) {
            self.version = version
            self.uptimeMs = uptimeMs
            self.layerCount = layerCount
            self.markerCount = markerCount
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
            markerCount: c.marker_count,
            sizeBytes: c.size_bytes,
            durationMs: c.duration_ms
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__CreateSnapshotResponse()
        markerd__v1__create_snapshot_response__init(&c)
        c.path = arena.cString(self.path)
        setPlain(self.markerCount, &c.has_marker_count, &c.marker_count)
        setPlain(self.sizeBytes, &c.has_size_bytes, &c.size_bytes)
        setPlain(self.durationMs, &c.has_duration_ms, &c.duration_ms)
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
            uptimeMs: c.uptime_ms,
            layerCount: c.layer_count,
            markerCount: c.marker_count,
            durable: c.durable != 0
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__GetServerInfoResponse()
        markerd__v1__get_server_info_response__init(&c)
        c.version = arena.cString(self.version)
        setPlain(self.uptimeMs, &c.has_uptime_ms, &c.uptime_ms)
        setPlain(self.layerCount, &c.has_layer_count, &c.layer_count)
        setPlain(self.markerCount, &c.has_marker_count, &c.marker_count)
        setPlain(self.durable, &c.has_durable, &c.durable)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

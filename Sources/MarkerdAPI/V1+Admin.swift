// V1+Admin.swift: Administration: snapshots, server info and signed tile URLs.
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

    /// A signed path prefix for a layer's HTTP gateway paths (tiles, point tiles, TileJSON, viewport,
    /// hit-test), for a backend to hand to an app whose map SDK takes a URL template and cannot add
    /// headers: `{prefix}/tiles/{layer}/256/{z}/{x}/{y}.png` reads the layer without a token until it
    /// expires (then 403). Needs the read scope on the layer.
    public struct SignTileURLRequest: ProtoMessage {
        /// Proto field `layer_id` = 1; absent decodes to "", which is not encoded.
        public var layerID: String = ""
        /// How long the URL stays valid, in seconds. 0 means 3600; longer than 604800 (7 days) is cut to it.
        /// Proto field `ttl_seconds` = 2; absent decodes to 0, which is not encoded.
        public var ttlSeconds: UInt32 = 0

        public init() {}

        public init(
            layerID: String = "",
            ttlSeconds: UInt32 = 0
        ) {
            self.layerID = layerID
            self.ttlSeconds = ttlSeconds
        }
    }

    /// The proto message `SignTileURLResponse`.
    public struct SignTileURLResponse: ProtoMessage {
        /// "/t/{expiry}.{signature}": goes before any of the layer's gateway paths.
        /// Proto field `path_prefix` = 1; absent decodes to "", which is not encoded.
        public var pathPrefix: String = ""
        /// The raster tile template: path_prefix + "/tiles/{layer}/{size}/{z}/{x}/{y}.png" (layer and
        /// size filled in; {z}, {x}, {y} left for the SDK).
        /// Proto field `url_template` = 2; absent decodes to "", which is not encoded.
        public var urlTemplate: String = ""
        /// When the prefix stops working, Unix seconds.
        /// Proto field `expires_unix` = 3; absent decodes to 0, which is not encoded.
        public var expiresUnix: Int64 = 0

        public init() {}

        public init(
            pathPrefix: String = "",
            urlTemplate: String = "",
            expiresUnix: Int64 = 0
        ) {
            self.pathPrefix = pathPrefix
            self.urlTemplate = urlTemplate
            self.expiresUnix = expiresUnix
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

extension V1.SignTileURLRequest: CBridged {
    static var protoName: String { "SignTileURLRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__sign_tile_urlrequest__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__SignTileURLRequest.self)
        self.init(
            layerID: try swiftString(c.layer_id, "SignTileURLRequest.layer_id"),
            ttlSeconds: c.ttl_seconds
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__SignTileURLRequest()
        markerd__v1__sign_tile_urlrequest__init(&c)
        c.layer_id = arena.cString(self.layerID)
        setPlain(self.ttlSeconds, &c.has_ttl_seconds, &c.ttl_seconds)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.SignTileURLResponse: CBridged {
    static var protoName: String { "SignTileURLResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__sign_tile_urlresponse__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__SignTileURLResponse.self)
        self.init(
            pathPrefix: try swiftString(c.path_prefix, "SignTileURLResponse.path_prefix"),
            urlTemplate: try swiftString(c.url_template, "SignTileURLResponse.url_template"),
            expiresUnix: c.expires_unix
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__SignTileURLResponse()
        markerd__v1__sign_tile_urlresponse__init(&c)
        c.path_prefix = arena.cString(self.pathPrefix)
        c.url_template = arena.cString(self.urlTemplate)
        setPlain(self.expiresUnix, &c.has_expires_unix, &c.expires_unix)
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

// V1+PointTiles.swift: Point-data (Mapbox Vector) tiles.
// Types mirror Protos/markerd/v1/markerd.proto; see `V1` for the field conventions.
private import CMarkerdProto
private import CProtobufC

extension V1 {
    /// The proto message `GetPointTileRequest`.
    public struct GetPointTileRequest: ProtoMessage {
        /// The proto default of `extent`.
        public static let defaultExtent: UInt32 = 4096

        /// Proto field `layer_id` = 1; absent decodes to "", which is not encoded.
        public var layerID: String = ""
        /// Proto field `z` = 2; absent decodes to 0, which is not encoded.
        public var z: UInt32 = 0
        /// Proto field `x` = 3; absent decodes to 0, which is not encoded.
        public var x: UInt32 = 0
        /// Proto field `y` = 4; absent decodes to 0, which is not encoded.
        public var y: UInt32 = 0
        /// Tile extent in MVT units. Default 4096.
        /// nil: absent, meaning the default 4096 (`defaultExtent`).
        /// Proto field `extent` = 5.
        public var extent: UInt32? = nil
        /// Clusters instead of every marker. Either way the tile keeps to the layer's
        /// `options.point_tile` budget (see PointTileOptions).
        /// Proto field `clustered` = 6; absent decodes to false, which is not encoded.
        public var clustered: Bool = false
        /// Proto field `known_version` = 7; absent decodes to 0, which is not encoded.
        public var knownVersion: UInt64 = 0

        public init() {}

        public init(
            layerID: String = "",
            z: UInt32 = 0,
            x: UInt32 = 0,
            y: UInt32 = 0,
            extent: UInt32? = nil,
            clustered: Bool = false,
            knownVersion: UInt64 = 0
        ) {
            self.layerID = layerID
            self.z = z
            self.x = x
            self.y = y
            self.extent = extent
            self.clustered = clustered
            self.knownVersion = knownVersion
        }
    }

    /// The proto message `GetPointTileResponse`.
    public struct GetPointTileResponse: ProtoMessage {
        /// A Mapbox Vector Tile (spec 2.1) with one layer "markers"; empty when not_modified. Its bytes
        /// depend only on the layer's content and options and on the request.
        /// Proto field `mvt` = 1; absent decodes to [], which is not encoded.
        public var mvt: [UInt8] = []
        /// The layer version the tile shows (supercluster clusters: their snapshot's); only rises.
        /// Proto field `version` = 2; absent decodes to 0, which is not encoded.
        public var version: UInt64 = 0
        /// Proto field `not_modified` = 3; absent decodes to false, which is not encoded.
        public var notModified: Bool = false

        public init() {}

        public init(
            mvt: [UInt8] = [],
            version: UInt64 = 0,
            notModified: Bool = false
        ) {
            self.mvt = mvt
            self.version = version
            self.notModified = notModified
        }
    }
}

// MARK: - protobuf-c bridging

extension V1.GetPointTileRequest: CBridged {
    static var protoName: String { "GetPointTileRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__get_point_tile_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__GetPointTileRequest.self)
        self.init(
            layerID: try swiftString(c.layer_id, "GetPointTileRequest.layer_id"),
            z: c.z,
            x: c.x,
            y: c.y,
            extent: present(c.has_extent, c.extent),
            clustered: c.clustered != 0,
            knownVersion: c.known_version
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__GetPointTileRequest()
        markerd__v1__get_point_tile_request__init(&c)
        c.layer_id = arena.cString(self.layerID)
        setPlain(self.z, &c.has_z, &c.z)
        setPlain(self.x, &c.has_x, &c.x)
        setPlain(self.y, &c.has_y, &c.y)
        setOptional(self.extent, &c.has_extent, &c.extent)
        setPlain(self.clustered, &c.has_clustered, &c.clustered)
        setPlain(self.knownVersion, &c.has_known_version, &c.known_version)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.GetPointTileResponse: CBridged {
    static var protoName: String { "GetPointTileResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__get_point_tile_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__GetPointTileResponse.self)
        self.init(
            mvt: swiftBytes(c.mvt.data, c.mvt.len),
            version: c.version,
            notModified: c.not_modified != 0
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__GetPointTileResponse()
        markerd__v1__get_point_tile_response__init(&c)
        if !self.mvt.isEmpty {
            c.has_mvt = 1
            c.mvt = ProtobufCBinaryData(len: self.mvt.count, data: arena.bytes(self.mvt))
        }
        setPlain(self.version, &c.has_version, &c.version)
        setPlain(self.notModified, &c.has_not_modified, &c.not_modified)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

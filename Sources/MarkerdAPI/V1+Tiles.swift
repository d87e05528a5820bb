// V1+Tiles.swift: Raster tiles and map snapshots.
// Types mirror Protos/markerd/v1/markerd.proto; see `V1` for the field conventions.
private import CMarkerdProto
private import CProtobufC

extension V1 {
    /// The proto message `GetTileRequest`.
    public struct GetTileRequest: ProtoMessage {
        /// Proto field `layer_id` = 1; absent decodes to "", which is not encoded.
        public var layerID: String = ""
        /// Proto field `z` = 2; absent decodes to 0, which is not encoded.
        public var z: UInt32 = 0
        /// Proto field `x` = 3; absent decodes to 0, which is not encoded.
        public var x: UInt32 = 0
        /// Proto field `y` = 4; absent decodes to 0, which is not encoded.
        public var y: UInt32 = 0
        /// 256 or 512; 0 means the layer's tile size.
        /// Proto field `tile_size` = 5; absent decodes to 0, which is not encoded.
        public var tileSize: UInt32 = 0
        /// Device pixel ratio 1, 2 or 3 (a 256 px tile at density 2 is 512x512 pixels); 0 means 1.
        /// Proto field `density` = 6; absent decodes to 0, which is not encoded.
        public var density: UInt32 = 0
        /// The version the client has; when it is still current the reply has not_modified set and no PNG.
        /// Proto field `known_version` = 7; absent decodes to 0, which is not encoded.
        public var knownVersion: UInt64 = 0

        public init() {}

        public init(
            layerID: String = "",
            z: UInt32 = 0,
            x: UInt32 = 0,
            y: UInt32 = 0,
            tileSize: UInt32 = 0,
            density: UInt32 = 0,
            knownVersion: UInt64 = 0
        ) {
            self.layerID = layerID
            self.z = z
            self.x = x
            self.y = y
            self.tileSize = tileSize
            self.density = density
            self.knownVersion = knownVersion
        }
    }

    /// The proto message `GetTileResponse`.
    public struct GetTileResponse: ProtoMessage {
        /// PNG bytes (empty when not_modified).
        /// Proto field `png` = 1; absent decodes to [], which is not encoded.
        public var png: [UInt8] = []
        /// Changes if and only if something that can change this tile's pixels changed. A layer
        /// version (that of the last change to the tile), so it only rises, also across restarts.
        /// Proto field `version` = 2; absent decodes to 0, which is not encoded.
        public var version: UInt64 = 0
        /// Proto field `not_modified` = 3; absent decodes to false, which is not encoded.
        public var notModified: Bool = false
        /// No marker touches the tile: `png` is the shared transparent tile.
        /// Proto field `empty` = 4; absent decodes to false, which is not encoded.
        public var empty: Bool = false

        public init() {}

        public init(
            png: [UInt8] = [],
            version: UInt64 = 0,
            notModified: Bool = false,
            empty: Bool = false
        ) {
            self.png = png
            self.version = version
            self.notModified = notModified
            self.empty = empty
        }
    }

    /// The proto message `RenderSnapshotRequest`.
    public struct RenderSnapshotRequest: ProtoMessage {
        /// Proto field `layer_id` = 1; absent decodes to "", which is not encoded.
        public var layerID: String = ""
        /// Proto field `center` = 2.
        public var center: LatLng? = nil
        /// 0-22, fractional allowed (labels are drawn at whole zooms only: a label placement belongs
        /// to one zoom).
        /// Proto field `zoom` = 3; absent decodes to 0, which is not encoded.
        public var zoom: Double = 0
        /// Image size in px at density 1 (at most 4096 each).
        /// Proto field `width` = 4; absent decodes to 0, which is not encoded.
        public var width: UInt32 = 0
        /// Proto field `height` = 5; absent decodes to 0, which is not encoded.
        public var height: UInt32 = 0
        /// Proto field `density` = 6; absent decodes to 0, which is not encoded.
        public var density: UInt32 = 0

        public init() {}

        public init(
            layerID: String = "",
            center: LatLng? = nil,
            zoom: Double = 0,
            width: UInt32 = 0,
            height: UInt32 = 0,
            density: UInt32 = 0
        ) {
            self.layerID = layerID
            self.center = center
            self.zoom = zoom
            self.width = width
            self.height = height
            self.density = density
        }
    }

    /// The proto message `RenderSnapshotResponse`.
    public struct RenderSnapshotResponse: ProtoMessage {
        /// Proto field `png` = 1; absent decodes to [], which is not encoded.
        public var png: [UInt8] = []
        /// Proto field `layer_version` = 2; absent decodes to 0, which is not encoded.
        public var layerVersion: UInt64 = 0
        /// Proto field `drawn_count` = 3; absent decodes to 0, which is not encoded.
        public var drawnCount: UInt64 = 0

        public init() {}

        public init(
            png: [UInt8] = [],
            layerVersion: UInt64 = 0,
            drawnCount: UInt64 = 0
        ) {
            self.png = png
            self.layerVersion = layerVersion
            self.drawnCount = drawnCount
        }
    }
}

// MARK: - protobuf-c bridging

extension V1.GetTileRequest: CBridged {
    static var protoName: String { "GetTileRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__get_tile_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__GetTileRequest.self)
        self.init(
            layerID: try swiftString(c.layer_id, "GetTileRequest.layer_id"),
            z: c.z,
            x: c.x,
            y: c.y,
            tileSize: c.tile_size,
            density: c.density,
            knownVersion: c.known_version
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__GetTileRequest()
        markerd__v1__get_tile_request__init(&c)
        c.layer_id = arena.cString(self.layerID)
        setPlain(self.z, &c.has_z, &c.z)
        setPlain(self.x, &c.has_x, &c.x)
        setPlain(self.y, &c.has_y, &c.y)
        setPlain(self.tileSize, &c.has_tile_size, &c.tile_size)
        setPlain(self.density, &c.has_density, &c.density)
        setPlain(self.knownVersion, &c.has_known_version, &c.known_version)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.GetTileResponse: CBridged {
    static var protoName: String { "GetTileResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__get_tile_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__GetTileResponse.self)
        self.init(
            png: swiftBytes(c.png.data, c.png.len),
            version: c.version,
            notModified: c.not_modified != 0,
            empty: c.empty != 0
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__GetTileResponse()
        markerd__v1__get_tile_response__init(&c)
        if !self.png.isEmpty {
            c.has_png = 1
            c.png = ProtobufCBinaryData(len: self.png.count, data: arena.bytes(self.png))
        }
        setPlain(self.version, &c.has_version, &c.version)
        setPlain(self.notModified, &c.has_not_modified, &c.not_modified)
        setPlain(self.empty, &c.has_empty, &c.empty)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.RenderSnapshotRequest: CBridged {
    static var protoName: String { "RenderSnapshotRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__render_snapshot_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__RenderSnapshotRequest.self)
        self.init(
            layerID: try swiftString(c.layer_id, "RenderSnapshotRequest.layer_id"),
            center: try swiftMessage(c.center),
            zoom: c.zoom,
            width: c.width,
            height: c.height,
            density: c.density
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__RenderSnapshotRequest()
        markerd__v1__render_snapshot_request__init(&c)
        c.layer_id = arena.cString(self.layerID)
        c.center = arena.message(self.center)
        setPlain(self.zoom, &c.has_zoom, &c.zoom)
        setPlain(self.width, &c.has_width, &c.width)
        setPlain(self.height, &c.has_height, &c.height)
        setPlain(self.density, &c.has_density, &c.density)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.RenderSnapshotResponse: CBridged {
    static var protoName: String { "RenderSnapshotResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__render_snapshot_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__RenderSnapshotResponse.self)
        self.init(
            png: swiftBytes(c.png.data, c.png.len),
            layerVersion: c.layer_version,
            drawnCount: c.drawn_count
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__RenderSnapshotResponse()
        markerd__v1__render_snapshot_response__init(&c)
        if !self.png.isEmpty {
            c.has_png = 1
            c.png = ProtobufCBinaryData(len: self.png.count, data: arena.bytes(self.png))
        }
        setPlain(self.layerVersion, &c.has_layer_version, &c.layer_version)
        setPlain(self.drawnCount, &c.has_drawn_count, &c.drawn_count)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

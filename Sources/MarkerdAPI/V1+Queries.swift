// V1+Queries.swift: Spatial queries: viewport and hit-test.
// Types mirror Protos/markerd/v1/markerd.proto; see `V1` for the field conventions.
private import CMarkerdProto
private import CProtobufC

extension V1 {
    /// The proto message `TileDescriptor`.
    public struct TileDescriptor: ProtoMessage {
        /// XYZ template, e.g. "/tiles/{layer}/256/{z}/{x}/{y}.png" (relative to the HTTP gateway).
        /// Proto field `url_template` = 1; absent decodes to "", which is not encoded.
        public var urlTemplate: String = ""
        /// Proto field `tile_size` = 2; absent decodes to 0, which is not encoded.
        public var tileSize: UInt32 = 0
        /// The layer's version when the query ran.
        /// Proto field `version` = 3; absent decodes to 0, which is not encoded.
        public var version: UInt64 = 0

        public init() {}

        public init(
            urlTemplate: String = "",
            tileSize: UInt32 = 0,
            version: UInt64 = 0
        ) {
            self.urlTemplate = urlTemplate
            self.tileSize = tileSize
            self.version = version
        }
    }

    /// The proto message `QueryViewportRequest`.
    public struct QueryViewportRequest: ProtoMessage {
        /// Proto field `layer_id` = 1; absent decodes to "", which is not encoded.
        public var layerID: String = ""
        /// Proto field `bounds` = 2.
        public var bounds: Bounds? = nil
        /// 0-22, fractional allowed.
        /// Proto field `zoom` = 3; absent decodes to 0, which is not encoded.
        public var zoom: Double = 0
        /// Device pixel ratio: 1, 2 or 3. 0 means 1.
        /// Proto field `density` = 4; absent decodes to 0, which is not encoded.
        public var density: UInt32 = 0
        /// Markers per page, 0-100,000; 0 means 1000.
        /// Proto field `page_size` = 5; absent decodes to 0, which is not encoded.
        public var pageSize: UInt32 = 0
        /// From a previous response's next_page_token (opaque, stateless). The next page holds the
        /// markers in view that come after the previous page's last one in the page order (see
        /// QueryViewportResponse.markers), as the layer is when it is asked for: markers that do not
        /// change while a client pages come exactly once; one that moves meanwhile may come twice or
        /// not at all. A malformed token is INVALID_ARGUMENT.
        /// Proto field `page_token` = 6; absent decodes to "", which is not encoded.
        public var pageToken: String = ""

        public init() {}

        public init(
            layerID: String = "",
            bounds: Bounds? = nil,
            zoom: Double = 0,
            density: UInt32 = 0,
            pageSize: UInt32 = 0,
            pageToken: String = ""
        ) {
            self.layerID = layerID
            self.bounds = bounds
            self.zoom = zoom
            self.density = density
            self.pageSize = pageSize
            self.pageToken = pageToken
        }
    }

    /// The proto message `QueryViewportResponse`.
    public struct QueryViewportResponse: ProtoMessage {
        /// Proto field `mode` = 1; absent decodes to .unspecified, which is not encoded.
        public var mode: TilingMode = .unspecified
        /// NATIVE: every visible marker whose icon overlaps the viewport. TILED: only live markers.
        /// In a spatial page order (Morton/Z-order of the marker's position, then id), not draw order:
        /// a page is found without looking at the rest of the viewport. Sort by
        /// (z_index, latitude descending, id) to draw.
        /// Proto field `markers` = 2.
        public var markers: [Marker] = []
        /// Set in TILED mode.
        /// Proto field `tiles` = 3.
        public var tiles: TileDescriptor? = nil
        /// Proto field `static_in_view_count` = 4; absent decodes to 0, which is not encoded.
        public var staticInViewCount: UInt64 = 0
        /// Proto field `live_in_view_count` = 5; absent decodes to 0, which is not encoded.
        public var liveInViewCount: UInt64 = 0
        /// Empty when there are no more markers.
        /// Proto field `next_page_token` = 6; absent decodes to "", which is not encoded.
        public var nextPageToken: String = ""
        /// Proto field `layer_version` = 7; absent decodes to 0, which is not encoded.
        public var layerVersion: UInt64 = 0

        public init() {}

        public init(
            mode: TilingMode = .unspecified,
            markers: [Marker] = [],
            tiles: TileDescriptor? = nil,
            staticInViewCount: UInt64 = 0,
            liveInViewCount: UInt64 = 0,
            nextPageToken: String = "",
            layerVersion: UInt64 = 0
        ) {
            self.mode = mode
            self.markers = markers
            self.tiles = tiles
            self.staticInViewCount = staticInViewCount
            self.liveInViewCount = liveInViewCount
            self.nextPageToken = nextPageToken
            self.layerVersion = layerVersion
        }
    }

    /// The proto message `HitTestRequest`.
    public struct HitTestRequest: ProtoMessage {
        /// The proto default of `tolerancePx`.
        public static let defaultTolerancePx: Float = 14
        /// The proto default of `maxResults`.
        public static let defaultMaxResults: UInt32 = 10

        /// Proto field `layer_id` = 1; absent decodes to "", which is not encoded.
        public var layerID: String = ""
        /// Proto field `point` = 2.
        public var point: LatLng? = nil
        /// Proto field `zoom` = 3; absent decodes to 0, which is not encoded.
        public var zoom: Double = 0
        /// 0 means 1
        /// Proto field `density` = 4; absent decodes to 0, which is not encoded.
        public var density: UInt32 = 0
        /// nil: absent, meaning the default 14 (`defaultTolerancePx`).
        /// Proto field `tolerance_px` = 5.
        public var tolerancePx: Float? = nil
        /// nil: absent, meaning the default 10 (`defaultMaxResults`).
        /// Proto field `max_results` = 6.
        public var maxResults: UInt32? = nil

        public init() {}

        public init(
            layerID: String = "",
            point: LatLng? = nil,
            zoom: Double = 0,
            density: UInt32 = 0,
            tolerancePx: Float? = nil,
            maxResults: UInt32? = nil
        ) {
            self.layerID = layerID
            self.point = point
            self.zoom = zoom
            self.density = density
            self.tolerancePx = tolerancePx
            self.maxResults = maxResults
        }
    }

    /// The proto message `MarkerHit`.
    public struct MarkerHit: ProtoMessage {
        /// Proto field `marker` = 1.
        public var marker: Marker? = nil
        /// True when the marker is drawn into raster tiles (static marker of a TILED layer).
        /// Proto field `tiled` = 2; absent decodes to false, which is not encoded.
        public var tiled: Bool = false
        /// True when the point is on the marker's label (placed at the request's zoom) rather than its icon.
        /// Proto field `on_label` = 3; absent decodes to false, which is not encoded.
        public var onLabel: Bool = false

        public init() {}

        public init(
            marker: Marker? = nil,
            tiled: Bool = false,
            onLabel: Bool = false
        ) {
            self.marker = marker
            self.tiled = tiled
            self.onLabel = onLabel
        }
    }

    /// The proto message `HitTestResponse`.
    public struct HitTestResponse: ProtoMessage {
        /// Topmost first.
        /// Proto field `hits` = 1.
        public var hits: [MarkerHit] = []

        public init() {}

        public init(
            hits: [MarkerHit] = []
        ) {
            self.hits = hits
        }
    }
}

// MARK: - protobuf-c bridging

extension V1.TileDescriptor: CBridged {
    static var protoName: String { "TileDescriptor" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__tile_descriptor__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__TileDescriptor.self)
        self.init(
            urlTemplate: try swiftString(c.url_template, "TileDescriptor.url_template"),
            tileSize: c.tile_size,
            version: c.version
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__TileDescriptor()
        markerd__v1__tile_descriptor__init(&c)
        c.url_template = arena.cString(self.urlTemplate)
        setPlain(self.tileSize, &c.has_tile_size, &c.tile_size)
        setPlain(self.version, &c.has_version, &c.version)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.QueryViewportRequest: CBridged {
    static var protoName: String { "QueryViewportRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__query_viewport_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__QueryViewportRequest.self)
        self.init(
            layerID: try swiftString(c.layer_id, "QueryViewportRequest.layer_id"),
            bounds: try swiftMessage(c.bounds),
            zoom: c.zoom,
            density: c.density,
            pageSize: c.page_size,
            pageToken: try swiftString(c.page_token, "QueryViewportRequest.page_token")
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__QueryViewportRequest()
        markerd__v1__query_viewport_request__init(&c)
        c.layer_id = arena.cString(self.layerID)
        c.bounds = arena.message(self.bounds)
        setPlain(self.zoom, &c.has_zoom, &c.zoom)
        setPlain(self.density, &c.has_density, &c.density)
        setPlain(self.pageSize, &c.has_page_size, &c.page_size)
        c.page_token = arena.cString(self.pageToken)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.QueryViewportResponse: CBridged {
    static var protoName: String { "QueryViewportResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__query_viewport_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__QueryViewportResponse.self)
        self.init(
            mode: swiftEnum(c.mode),
            markers: try swiftMessages(c.n_markers, c.markers),
            tiles: try swiftMessage(c.tiles),
            staticInViewCount: c.static_in_view_count,
            liveInViewCount: c.live_in_view_count,
            nextPageToken: try swiftString(c.next_page_token, "QueryViewportResponse.next_page_token"),
            layerVersion: c.layer_version
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__QueryViewportResponse()
        markerd__v1__query_viewport_response__init(&c)
        setPlain(self.mode, &c.has_mode, &c.mode)
        (c.n_markers, c.markers) = arena.messages(self.markers)
        c.tiles = arena.message(self.tiles)
        setPlain(self.staticInViewCount, &c.has_static_in_view_count, &c.static_in_view_count)
        setPlain(self.liveInViewCount, &c.has_live_in_view_count, &c.live_in_view_count)
        c.next_page_token = arena.cString(self.nextPageToken)
        setPlain(self.layerVersion, &c.has_layer_version, &c.layer_version)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.HitTestRequest: CBridged {
    static var protoName: String { "HitTestRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__hit_test_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__HitTestRequest.self)
        self.init(
            layerID: try swiftString(c.layer_id, "HitTestRequest.layer_id"),
            point: try swiftMessage(c.point),
            zoom: c.zoom,
            density: c.density,
            tolerancePx: present(c.has_tolerance_px, c.tolerance_px),
            maxResults: present(c.has_max_results, c.max_results)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__HitTestRequest()
        markerd__v1__hit_test_request__init(&c)
        c.layer_id = arena.cString(self.layerID)
        c.point = arena.message(self.point)
        setPlain(self.zoom, &c.has_zoom, &c.zoom)
        setPlain(self.density, &c.has_density, &c.density)
        setOptional(self.tolerancePx, &c.has_tolerance_px, &c.tolerance_px)
        setOptional(self.maxResults, &c.has_max_results, &c.max_results)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.MarkerHit: CBridged {
    static var protoName: String { "MarkerHit" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__marker_hit__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__MarkerHit.self)
        self.init(
            marker: try swiftMessage(c.marker),
            tiled: c.tiled != 0,
            onLabel: c.on_label != 0
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__MarkerHit()
        markerd__v1__marker_hit__init(&c)
        c.marker = arena.message(self.marker)
        setPlain(self.tiled, &c.has_tiled, &c.tiled)
        setPlain(self.onLabel, &c.has_on_label, &c.on_label)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.HitTestResponse: CBridged {
    static var protoName: String { "HitTestResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__hit_test_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__HitTestResponse.self)
        self.init(
            hits: try swiftMessages(c.n_hits, c.hits)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__HitTestResponse()
        markerd__v1__hit_test_response__init(&c)
        (c.n_hits, c.hits) = arena.messages(self.hits)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

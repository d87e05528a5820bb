// V1+Layers.swift: Layers: options, tiling mode, stats and the layer RPCs.
// Types mirror Protos/markerd/v1/markerd.proto; see `V1` for the field conventions.
private import CMarkerdProto
private import CProtobufC

extension V1 {
    /// The proto message `TilingOptions`.
    public struct TilingOptions: ProtoMessage {
        /// The proto default of `enabled`.
        public static let defaultEnabled: Bool = true
        /// The proto default of `minMarkerCount`.
        public static let defaultMinMarkerCount: UInt32 = 2000
        /// The proto default of `tileSize`.
        public static let defaultTileSize: UInt32 = 256
        /// The proto default of `debugOverlay`.
        public static let defaultDebugOverlay: Bool = false

        /// nil: absent, meaning the default true (`defaultEnabled`).
        /// Proto field `enabled` = 1.
        public var enabled: Bool? = nil
        /// The layer is TILED while at least this many static markers are in it. Default 2000.
        /// nil: absent, meaning the default 2000 (`defaultMinMarkerCount`).
        /// Proto field `min_marker_count` = 2.
        public var minMarkerCount: UInt32? = nil
        /// Raster tile size in px: 256 (default) or 512.
        /// nil: absent, meaning the default 256 (`defaultTileSize`).
        /// Proto field `tile_size` = 3.
        public var tileSize: UInt32? = nil
        /// Draw each tile's border and "z/x/y entries=N" over it (like MapConductor's debugTileOverlay).
        /// nil: absent, meaning the default false (`defaultDebugOverlay`).
        /// Proto field `debug_overlay` = 4.
        public var debugOverlay: Bool? = nil

        public init() {}

        public init(
            enabled: Bool? = nil,
            minMarkerCount: UInt32? = nil,
            tileSize: UInt32? = nil,
            debugOverlay: Bool? = nil
        ) {
            self.enabled = enabled
            self.minMarkerCount = minMarkerCount
            self.tileSize = tileSize
            self.debugOverlay = debugOverlay
        }
    }

    /// How a layer clusters its markers (GetClusters, clustered point tiles, cluster raster tiles).
    public struct ClusteringOptions: ProtoMessage {
        /// The proto default of `enabled`.
        public static let defaultEnabled: Bool = false
        /// The proto default of `radiusPx`.
        public static let defaultRadiusPx: Float = 60
        /// The proto default of `minPoints`.
        public static let defaultMinPoints: UInt32 = 2
        /// The proto default of `maxZoom`.
        public static let defaultMaxZoom: UInt32 = 16
        /// The proto default of `extent`.
        public static let defaultExtent: UInt32 = 512
        /// The proto default of `raster`.
        public static let defaultRaster: Bool = false

        /// Default false: GetClusters still answers; `raster` needs it.
        /// nil: absent, meaning the default false (`defaultEnabled`).
        /// Proto field `enabled` = 1.
        public var enabled: Bool? = nil
        /// Cluster radius in px at each zoom. Default 60.
        /// nil: absent, meaning the default 60 (`defaultRadiusPx`).
        /// Proto field `radius_px` = 2.
        public var radiusPx: Float? = nil
        /// Smallest group shown as a cluster; smaller groups come back as markers. Default 2.
        /// nil: absent, meaning the default 2 (`defaultMinPoints`).
        /// Proto field `min_points` = 3.
        public var minPoints: UInt32? = nil
        /// Above this zoom nothing is clustered. Default 16.
        /// nil: absent, meaning the default 16 (`defaultMaxZoom`).
        /// Proto field `max_zoom` = 4.
        public var maxZoom: UInt32? = nil
        /// Tile extent the radius is measured in (as supercluster's `extent`). Default 512.
        /// nil: absent, meaning the default 512 (`defaultExtent`).
        /// Proto field `extent` = 5.
        public var extent: UInt32? = nil
        /// Unspecified: GRID. (Field 6 was the algorithm's name as a string.)
        /// Proto field `algorithm` = 8.
        public var algorithm: ClusterAlgorithm? = nil
        /// Draw clusters into the raster tiles as count bubbles instead of every marker.
        /// nil: absent, meaning the default false (`defaultRaster`).
        /// Proto field `raster` = 7.
        public var raster: Bool? = nil

        public init() {}

        public init(
            enabled: Bool? = nil,
            radiusPx: Float? = nil,
            minPoints: UInt32? = nil,
            maxZoom: UInt32? = nil,
            extent: UInt32? = nil,
            algorithm: ClusterAlgorithm? = nil,
            raster: Bool? = nil
        ) {
            self.enabled = enabled
            self.radiusPx = radiusPx
            self.minPoints = minPoints
            self.maxZoom = maxZoom
            self.extent = extent
            self.algorithm = algorithm
            self.raster = raster
        }
    }

    /// The proto enum `ClusterAlgorithm`.
    public enum ClusterAlgorithm: Int32, Sendable, CaseIterable {
        /// The default: GRID.
        case unspecified = 0
        /// Grid clusters, updated incrementally with every change.
        case grid = 1
        /// Exactly supercluster v8's clusters, rebuilt in the background after changes.
        case supercluster = 2

        /// The canonical proto name, e.g. "CLUSTER_ALGORITHM_SUPERCLUSTER".
        public var name: String {
            switch self {
            case .unspecified: "CLUSTER_ALGORITHM_UNSPECIFIED"
            case .grid: "CLUSTER_ALGORITHM_GRID"
            case .supercluster: "CLUSTER_ALGORITHM_SUPERCLUSTER"
            }
        }
    }

    /// What a point tile (GetPointTile, /tiles/{layer}/{z}/{x}/{y}.mvt) holds when all of its markers
    /// would exceed the budget. Unknown numbers on the wire mean the default.
    public enum PointTileMode: Int32, Sendable, CaseIterable {
        /// The default: THIN.
        case unspecified = 0
        /// One marker per grid cell (the cells of the layer's grid clustering at the finest zoom whose
        /// non-empty cells fit the budget), each with `point_count`: the markers of its cell.
        case thin = 1
        /// The layer's clusters at the tile's zoom (as `GetPointTile.clustered`); thinned as THIN when
        /// the clusters alone still exceed the budget.
        case cluster = 2
        /// Every marker, never reduced: a tile over the budget is RESOURCE_EXHAUSTED (HTTP 503).
        case none = 3

        /// The canonical proto name, e.g. "POINT_TILE_MODE_NONE".
        public var name: String {
            switch self {
            case .unspecified: "POINT_TILE_MODE_UNSPECIFIED"
            case .thin: "POINT_TILE_MODE_THIN"
            case .cluster: "POINT_TILE_MODE_CLUSTER"
            case .none: "POINT_TILE_MODE_NONE"
            }
        }
    }

    /// The budget of a point tile. A tile whose every visible static marker fits it holds them all
    /// (whatever the mode); a tile that would not is reduced as `mode` says.
    public struct PointTileOptions: ProtoMessage {
        /// The proto default of `maxFeatures`.
        public static let defaultMaxFeatures: UInt32 = 4096
        /// The proto default of `maxBytes`.
        public static let defaultMaxBytes: UInt32 = 500000

        /// Default THIN.
        /// Proto field `mode` = 1; absent decodes to .unspecified, which is not encoded.
        public var mode: PointTileMode = .unspecified
        /// Most features in one tile, 256-1000000. Default 4096 (about 200 KB of MVT for markers with
        /// short ids and no attributes).
        /// nil: absent, meaning the default 4096 (`defaultMaxFeatures`).
        /// Proto field `max_features` = 2.
        public var maxFeatures: UInt32? = nil
        /// Most bytes of one encoded tile, 4096-67108864. Default 500000 (Mapbox's guideline of 500 KB).
        /// A tile over it is thinned with coarser cells (NONE: RESOURCE_EXHAUSTED).
        /// nil: absent, meaning the default 500000 (`defaultMaxBytes`).
        /// Proto field `max_bytes` = 3.
        public var maxBytes: UInt32? = nil

        public init() {}

        public init(
            mode: PointTileMode = .unspecified,
            maxFeatures: UInt32? = nil,
            maxBytes: UInt32? = nil
        ) {
            self.mode = mode
            self.maxFeatures = maxFeatures
            self.maxBytes = maxBytes
        }
    }

    /// Labels: text beside each marker's icon, drawn into the layer's raster tiles like a map's labels:
    /// placed once per zoom in world pixels (the same on every tile, also across tile edges), never
    /// overlapping each other; where labels compete, the higher-ranked one wins: higher z_index, then
    /// higher priority (Marker.label.priority, else the attribute `priority_attribute`), then the marker
    /// drawn on top. Text is shaped with Pango/HarfBuzz (every script, bidi, font fallback). Sizes are
    /// px at density 1.
    public struct LabelOptions: ProtoMessage {
        /// The proto default of `fontSize`.
        public static let defaultFontSize: Float = 13
        /// The proto default of `fontFamily`.
        public static let defaultFontFamily: String = "Noto Sans"
        /// The proto default of `bold`.
        public static let defaultBold: Bool = false
        /// The proto default of `maxWidth`.
        public static let defaultMaxWidth: Float = 160
        /// The proto default of `maxLines`.
        public static let defaultMaxLines: UInt32 = 2
        /// The proto default of `haloWidth`.
        public static let defaultHaloWidth: Float = 1.5
        /// The proto default of `color`.
        public static let defaultColor: UInt32 = 0xFF202020
        /// The proto default of `haloColor`.
        public static let defaultHaloColor: UInt32 = 0xFFFFFFFF
        /// The proto default of `gap`.
        public static let defaultGap: Float = 2
        /// The proto default of `padding`.
        public static let defaultPadding: Float = 2
        /// The proto default of `showIconWithoutLabel`.
        public static let defaultShowIconWithoutLabel: Bool = true

        /// Default false.
        /// Proto field `enabled` = 1.
        public var enabled: Bool? = nil
        /// The attribute whose value labels a marker that has no label.text of its own (e.g. "name").
        /// Unset: only markers with their own label.text are labelled.
        /// Proto field `text_attribute` = 2.
        public var textAttribute: String? = nil
        /// px, 6-64
        /// nil: absent, meaning the default 13 (`defaultFontSize`).
        /// Proto field `font_size` = 3.
        public var fontSize: Float? = nil
        /// a fontconfig family list
        /// nil: absent, meaning the default "Noto Sans" (`defaultFontFamily`).
        /// Proto field `font_family` = 4.
        public var fontFamily: String? = nil
        /// nil: absent, meaning the default false (`defaultBold`).
        /// Proto field `bold` = 5.
        public var bold: Bool? = nil
        /// px, 16-1024; longer text wraps or is cut
        /// nil: absent, meaning the default 160 (`defaultMaxWidth`).
        /// Proto field `max_width` = 6.
        public var maxWidth: Float? = nil
        /// default WRAP
        /// Proto field `overflow` = 7.
        public var overflow: LabelOverflow? = nil
        /// 1-8, when wrapping
        /// nil: absent, meaning the default 2 (`defaultMaxLines`).
        /// Proto field `max_lines` = 8.
        public var maxLines: UInt32? = nil
        /// px, 0-8
        /// nil: absent, meaning the default 1.5 (`defaultHaloWidth`).
        /// Proto field `halo_width` = 9.
        public var haloWidth: Float? = nil
        /// 0xAARRGGBB
        /// nil: absent, meaning the default 0xFF202020 (`defaultColor`).
        /// Proto field `color` = 10.
        public var color: UInt32? = nil
        /// nil: absent, meaning the default 0xFFFFFFFF (`defaultHaloColor`).
        /// Proto field `halo_color` = 11.
        public var haloColor: UInt32? = nil
        /// Text colour by attribute value: markers whose attribute `color_attribute` has a value listed
        /// in `colors` take that colour; others take `color`. At most 1024 entries, values distinct.
        /// Proto field `color_attribute` = 12.
        public var colorAttribute: String? = nil
        /// Proto field `colors` = 13.
        public var colors: [LabelColor] = []
        /// Candidate positions beside the icon, tried in order (1-4 distinct). Default RIGHT, LEFT,
        /// BELOW, ABOVE.
        /// Proto field `positions` = 14.
        public var positions: [LabelPosition] = []
        /// px between icon and label, 0-64
        /// nil: absent, meaning the default 2 (`defaultGap`).
        /// Proto field `gap` = 15.
        public var gap: Float? = nil
        /// px kept free around a label, 0-64
        /// nil: absent, meaning the default 2 (`defaultPadding`).
        /// Proto field `padding` = 16.
        public var padding: Float? = nil
        /// A numeric attribute (e.g. "population") ranking markers without label.priority; higher first.
        /// Proto field `priority_attribute` = 17.
        public var priorityAttribute: String? = nil
        /// False: a marker whose label could not be placed is not drawn either. Default true.
        /// nil: absent, meaning the default true (`defaultShowIconWithoutLabel`).
        /// Proto field `show_icon_without_label` = 18.
        public var showIconWithoutLabel: Bool? = nil
        /// Labels appear on tiles from this zoom on, 0-22. Default 0.
        /// Proto field `min_zoom` = 19.
        public var minZoom: UInt32? = nil

        public init() {}

        public init(
            enabled: Bool? = nil,
            textAttribute: String? = nil,
            fontSize: Float? = nil,
            fontFamily: String? = nil,
            bold: Bool? = nil,
            maxWidth: Float? = nil,
            overflow: LabelOverflow? = nil,
            maxLines: UInt32? = nil,
            haloWidth: Float? = nil,
            color: UInt32? = nil,
            haloColor: UInt32? = nil,
            colorAttribute: String? = nil,
            colors: [LabelColor] = [],
            positions: [LabelPosition] = [],
            gap: Float? = nil,
            padding: Float? = nil,
            priorityAttribute: String? = nil,
            showIconWithoutLabel: Bool? = nil,
            minZoom: UInt32? = nil
        ) {
            self.enabled = enabled
            self.textAttribute = textAttribute
            self.fontSize = fontSize
            self.fontFamily = fontFamily
            self.bold = bold
            self.maxWidth = maxWidth
            self.overflow = overflow
            self.maxLines = maxLines
            self.haloWidth = haloWidth
            self.color = color
            self.haloColor = haloColor
            self.colorAttribute = colorAttribute
            self.colors = colors
            self.positions = positions
            self.gap = gap
            self.padding = padding
            self.priorityAttribute = priorityAttribute
            self.showIconWithoutLabel = showIconWithoutLabel
            self.minZoom = minZoom
        }
    }

    /// The proto message `LabelColor`.
    public struct LabelColor: ProtoMessage {
        /// an attribute value
        /// Proto field `value` = 1; absent decodes to "", which is not encoded.
        public var value: String = ""
        /// 0xAARRGGBB
        /// Proto field `color` = 2; absent decodes to 0, which is not encoded.
        public var color: UInt32 = 0

        public init() {}

        public init(
            value: String = "",
            color: UInt32 = 0
        ) {
            self.value = value
            self.color = color
        }
    }

    /// The proto enum `LabelOverflow`.
    public enum LabelOverflow: Int32, Sendable, CaseIterable {
        case unspecified = 0
        /// Breaks between words onto at most max_lines lines (the last ends with an ellipsis when cut).
        case wrap = 1
        /// One line, cut with an ellipsis.
        case ellipsis = 2

        /// The canonical proto name, e.g. "LABEL_OVERFLOW_ELLIPSIS".
        public var name: String {
            switch self {
            case .unspecified: "LABEL_OVERFLOW_UNSPECIFIED"
            case .wrap: "LABEL_OVERFLOW_WRAP"
            case .ellipsis: "LABEL_OVERFLOW_ELLIPSIS"
            }
        }
    }

    /// The proto enum `LabelPosition`.
    public enum LabelPosition: Int32, Sendable, CaseIterable {
        case unspecified = 0
        case right = 1
        /// gap px right of the icon, centred on it vertically
        case left = 2
        case below = 3
        /// gap px below the icon, centred on it horizontally
        case above = 4

        /// The canonical proto name, e.g. "LABEL_POSITION_BELOW".
        public var name: String {
            switch self {
            case .unspecified: "LABEL_POSITION_UNSPECIFIED"
            case .right: "LABEL_POSITION_RIGHT"
            case .left: "LABEL_POSITION_LEFT"
            case .below: "LABEL_POSITION_BELOW"
            case .above: "LABEL_POSITION_ABOVE"
            }
        }
    }

    /// The proto message `LayerOptions`.
    public struct LayerOptions: ProtoMessage {
        /// Proto field `tiling` = 1.
        public var tiling: TilingOptions? = nil
        /// Proto field `clustering` = 2.
        public var clustering: ClusteringOptions? = nil
        /// Proto field `point_tile` = 3.
        public var pointTile: PointTileOptions? = nil
        /// Proto field `labels` = 4.
        public var labels: LabelOptions? = nil

        public init() {}

        public init(
            tiling: TilingOptions? = nil,
            clustering: ClusteringOptions? = nil,
            pointTile: PointTileOptions? = nil,
            labels: LabelOptions? = nil
        ) {
            self.tiling = tiling
            self.clustering = clustering
            self.pointTile = pointTile
            self.labels = labels
        }
    }

    /// The proto enum `TilingMode`.
    public enum TilingMode: Int32, Sendable, CaseIterable {
        case unspecified = 0
        /// Every marker is a live (native) object.
        case native = 1
        /// Static markers come as raster tiles; draggable and animating markers stay live objects.
        case tiled = 2

        /// The canonical proto name, e.g. "TILING_MODE_TILED".
        public var name: String {
            switch self {
            case .unspecified: "TILING_MODE_UNSPECIFIED"
            case .native: "TILING_MODE_NATIVE"
            case .tiled: "TILING_MODE_TILED"
            }
        }
    }

    /// The proto message `Layer`.
    public struct Layer: ProtoMessage {
        /// Proto field `id` = 1; absent decodes to "", which is not encoded.
        public var id: String = ""
        /// Options with every default filled in.
        /// Proto field `options` = 2.
        public var options: LayerOptions? = nil
        /// Changes whenever any marker or option of the layer changes. Only rises, also across
        /// restarts, crashes and a layer deleted and created again (which skip ahead, by up to a few
        /// thousand), so one version never names two different states of a layer.
        /// Proto field `version` = 3; absent decodes to 0, which is not encoded.
        public var version: UInt64 = 0
        /// Proto field `mode` = 4; absent decodes to .unspecified, which is not encoded.
        public var mode: TilingMode = .unspecified
        /// Proto field `marker_count` = 5; absent decodes to 0, which is not encoded.
        public var markerCount: UInt64 = 0

        public init() {}

        public init(
            id: String = "",
            options: LayerOptions? = nil,
            version: UInt64 = 0,
            mode: TilingMode = .unspecified,
            markerCount: UInt64 = 0
        ) {
            self.id = id
            self.options = options
            self.version = version
            self.mode = mode
            self.markerCount = markerCount
        }
    }

    /// The proto message `LayerStats`.
    public struct LayerStats: ProtoMessage {
        /// Proto field `layer_id` = 1; absent decodes to "", which is not encoded.
        public var layerID: String = ""
        /// Proto field `marker_count` = 2; absent decodes to 0, which is not encoded.
        public var markerCount: UInt64 = 0
        /// Visible, not draggable, not animating.
        /// Proto field `static_marker_count` = 3; absent decodes to 0, which is not encoded.
        public var staticMarkerCount: UInt64 = 0
        /// Draggable or animating (visible or not).
        /// Proto field `live_marker_count` = 4; absent decodes to 0, which is not encoded.
        public var liveMarkerCount: UInt64 = 0
        /// Proto field `hidden_marker_count` = 5; absent decodes to 0, which is not encoded.
        public var hiddenMarkerCount: UInt64 = 0
        /// Approximate memory held by the layer, in bytes.
        /// Proto field `approximate_bytes` = 6; absent decodes to 0, which is not encoded.
        public var approximateBytes: UInt64 = 0
        /// Proto field `mode` = 7; absent decodes to .unspecified, which is not encoded.
        public var mode: TilingMode = .unspecified
        /// Proto field `version` = 8; absent decodes to 0, which is not encoded.
        public var version: UInt64 = 0

        public init() {}

        public init(
            layerID: String = "",
            markerCount: UInt64 = 0,
            staticMarkerCount: UInt64 = 0,
            liveMarkerCount: UInt64 = 0,
            hiddenMarkerCount: UInt64 = 0,
            approximateBytes: UInt64 = 0,
            mode: TilingMode = .unspecified,
            version: UInt64 = 0
        ) {
            self.layerID = layerID
            self.markerCount = markerCount
            self.staticMarkerCount = staticMarkerCount
            self.liveMarkerCount = liveMarkerCount
            self.hiddenMarkerCount = hiddenMarkerCount
            self.approximateBytes = approximateBytes
            self.mode = mode
            self.version = version
        }
    }

    /// The proto message `CreateLayerRequest`.
    public struct CreateLayerRequest: ProtoMessage {
        /// 1-128 bytes of [A-Za-z0-9._-].
        /// Proto field `layer_id` = 1; absent decodes to "", which is not encoded.
        public var layerID: String = ""
        /// Proto field `options` = 2.
        public var options: LayerOptions? = nil

        public init() {}

        public init(
            layerID: String = "",
            options: LayerOptions? = nil
        ) {
            self.layerID = layerID
            self.options = options
        }
    }

    /// The proto message `CreateLayerResponse`.
    public struct CreateLayerResponse: ProtoMessage {
        /// Proto field `layer` = 1.
        public var layer: Layer? = nil

        public init() {}

        public init(
            layer: Layer? = nil
        ) {
            self.layer = layer
        }
    }

    /// The proto message `GetLayerRequest`.
    public struct GetLayerRequest: ProtoMessage {
        /// Proto field `layer_id` = 1; absent decodes to "", which is not encoded.
        public var layerID: String = ""

        public init() {}

        public init(
            layerID: String = ""
        ) {
            self.layerID = layerID
        }
    }

    /// The proto message `GetLayerResponse`.
    public struct GetLayerResponse: ProtoMessage {
        /// Proto field `layer` = 1.
        public var layer: Layer? = nil

        public init() {}

        public init(
            layer: Layer? = nil
        ) {
            self.layer = layer
        }
    }

    /// The proto message `ListLayersRequest`.
    public struct ListLayersRequest: ProtoMessage {
        /// Layers per page, 0-1000; 0 means 100.
        /// Proto field `page_size` = 1; absent decodes to 0, which is not encoded.
        public var pageSize: UInt32 = 0
        /// See the paging rule in the header.
        /// Proto field `page_token` = 2; absent decodes to "", which is not encoded.
        public var pageToken: String = ""

        public init() {}

        public init(
            pageSize: UInt32 = 0,
            pageToken: String = ""
        ) {
            self.pageSize = pageSize
            self.pageToken = pageToken
        }
    }

    /// The proto message `ListLayersResponse`.
    public struct ListLayersResponse: ProtoMessage {
        /// Ordered by layer id (bytewise); a page holds the layers after the previous page's last id,
        /// as they are when it is asked for.
        /// Proto field `layers` = 1.
        public var layers: [Layer] = []
        /// Proto field `next_page_token` = 2; absent decodes to "", which is not encoded.
        public var nextPageToken: String = ""

        public init() {}

        public init(
            layers: [Layer] = [],
            nextPageToken: String = ""
        ) {
            self.layers = layers
            self.nextPageToken = nextPageToken
        }
    }

    /// The proto message `DeleteLayerRequest`.
    public struct DeleteLayerRequest: ProtoMessage {
        /// Proto field `layer_id` = 1; absent decodes to "", which is not encoded.
        public var layerID: String = ""

        public init() {}

        public init(
            layerID: String = ""
        ) {
            self.layerID = layerID
        }
    }

    /// The proto message `DeleteLayerResponse`.
    public struct DeleteLayerResponse: ProtoMessage {
        /// Proto field `removed_count` = 1; absent decodes to 0, which is not encoded.
        public var removedCount: UInt64 = 0

        public init() {}

        public init(
            removedCount: UInt64 = 0
        ) {
            self.removedCount = removedCount
        }
    }

    /// The proto message `GetLayerStatsRequest`.
    public struct GetLayerStatsRequest: ProtoMessage {
        /// Proto field `layer_id` = 1; absent decodes to "", which is not encoded.
        public var layerID: String = ""

        public init() {}

        public init(
            layerID: String = ""
        ) {
            self.layerID = layerID
        }
    }

    /// The proto message `GetLayerStatsResponse`.
    public struct GetLayerStatsResponse: ProtoMessage {
        /// Proto field `stats` = 1.
        public var stats: LayerStats? = nil

        public init() {}

        public init(
            stats: LayerStats? = nil
        ) {
            self.stats = stats
        }
    }
}

// MARK: - protobuf-c bridging

extension V1.TilingOptions: CBridged {
    static var protoName: String { "TilingOptions" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__tiling_options__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__TilingOptions.self)
        self.init(
            enabled: present(c.has_enabled, c.enabled),
            minMarkerCount: present(c.has_min_marker_count, c.min_marker_count),
            tileSize: present(c.has_tile_size, c.tile_size),
            debugOverlay: present(c.has_debug_overlay, c.debug_overlay)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__TilingOptions()
        markerd__v1__tiling_options__init(&c)
        setOptional(self.enabled, &c.has_enabled, &c.enabled)
        setOptional(self.minMarkerCount, &c.has_min_marker_count, &c.min_marker_count)
        setOptional(self.tileSize, &c.has_tile_size, &c.tile_size)
        setOptional(self.debugOverlay, &c.has_debug_overlay, &c.debug_overlay)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.ClusteringOptions: CBridged {
    static var protoName: String { "ClusteringOptions" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__clustering_options__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__ClusteringOptions.self)
        self.init(
            enabled: present(c.has_enabled, c.enabled),
            radiusPx: present(c.has_radius_px, c.radius_px),
            minPoints: present(c.has_min_points, c.min_points),
            maxZoom: present(c.has_max_zoom, c.max_zoom),
            extent: present(c.has_extent, c.extent),
            algorithm: swiftOptionalEnum(c.has_algorithm, c.algorithm),
            raster: present(c.has_raster, c.raster)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__ClusteringOptions()
        markerd__v1__clustering_options__init(&c)
        setOptional(self.enabled, &c.has_enabled, &c.enabled)
        setOptional(self.radiusPx, &c.has_radius_px, &c.radius_px)
        setOptional(self.minPoints, &c.has_min_points, &c.min_points)
        setOptional(self.maxZoom, &c.has_max_zoom, &c.max_zoom)
        setOptional(self.extent, &c.has_extent, &c.extent)
        setOptional(self.algorithm, &c.has_algorithm, &c.algorithm)
        setOptional(self.raster, &c.has_raster, &c.raster)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.ClusterAlgorithm: ProtoEnum {
    /// Unknown numbers on the wire decode to `.unspecified`.
    static var fallback: Self { .unspecified }
}

extension V1.PointTileMode: ProtoEnum {
    /// Unknown numbers on the wire decode to `.unspecified`.
    static var fallback: Self { .unspecified }
}

extension V1.PointTileOptions: CBridged {
    static var protoName: String { "PointTileOptions" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__point_tile_options__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__PointTileOptions.self)
        self.init(
            mode: swiftEnum(c.mode),
            maxFeatures: present(c.has_max_features, c.max_features),
            maxBytes: present(c.has_max_bytes, c.max_bytes)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__PointTileOptions()
        markerd__v1__point_tile_options__init(&c)
        setPlain(self.mode, &c.has_mode, &c.mode)
        setOptional(self.maxFeatures, &c.has_max_features, &c.max_features)
        setOptional(self.maxBytes, &c.has_max_bytes, &c.max_bytes)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.LabelOptions: CBridged {
    static var protoName: String { "LabelOptions" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__label_options__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__LabelOptions.self)
        self.init(
            enabled: present(c.has_enabled, c.enabled),
            textAttribute: try swiftOptionalString(c.text_attribute, "LabelOptions.text_attribute"),
            fontSize: present(c.has_font_size, c.font_size),
            fontFamily: try swiftOptionalString(c.font_family, "LabelOptions.font_family"),
            bold: present(c.has_bold, c.bold),
            maxWidth: present(c.has_max_width, c.max_width),
            overflow: swiftOptionalEnum(c.has_overflow, c.overflow),
            maxLines: present(c.has_max_lines, c.max_lines),
            haloWidth: present(c.has_halo_width, c.halo_width),
            color: present(c.has_color, c.color),
            haloColor: present(c.has_halo_color, c.halo_color),
            colorAttribute: try swiftOptionalString(c.color_attribute, "LabelOptions.color_attribute"),
            colors: try swiftMessages(c.n_colors, c.colors),
            positions: swiftEnums(c.n_positions, c.positions),
            gap: present(c.has_gap, c.gap),
            padding: present(c.has_padding, c.padding),
            priorityAttribute: try swiftOptionalString(c.priority_attribute, "LabelOptions.priority_attribute"),
            showIconWithoutLabel: present(c.has_show_icon_without_label, c.show_icon_without_label),
            minZoom: present(c.has_min_zoom, c.min_zoom)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__LabelOptions()
        markerd__v1__label_options__init(&c)
        setOptional(self.enabled, &c.has_enabled, &c.enabled)
        c.text_attribute = arena.cString(self.textAttribute)
        setOptional(self.fontSize, &c.has_font_size, &c.font_size)
        c.font_family = arena.cString(self.fontFamily)
        setOptional(self.bold, &c.has_bold, &c.bold)
        setOptional(self.maxWidth, &c.has_max_width, &c.max_width)
        setOptional(self.overflow, &c.has_overflow, &c.overflow)
        setOptional(self.maxLines, &c.has_max_lines, &c.max_lines)
        setOptional(self.haloWidth, &c.has_halo_width, &c.halo_width)
        setOptional(self.color, &c.has_color, &c.color)
        setOptional(self.haloColor, &c.has_halo_color, &c.halo_color)
        c.color_attribute = arena.cString(self.colorAttribute)
        (c.n_colors, c.colors) = arena.messages(self.colors)
        (c.n_positions, c.positions) = arena.enums(self.positions)
        setOptional(self.gap, &c.has_gap, &c.gap)
        setOptional(self.padding, &c.has_padding, &c.padding)
        c.priority_attribute = arena.cString(self.priorityAttribute)
        setOptional(self.showIconWithoutLabel, &c.has_show_icon_without_label, &c.show_icon_without_label)
        setOptional(self.minZoom, &c.has_min_zoom, &c.min_zoom)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.LabelColor: CBridged {
    static var protoName: String { "LabelColor" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__label_color__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__LabelColor.self)
        self.init(
            value: try swiftString(c.value, "LabelColor.value"),
            color: c.color
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__LabelColor()
        markerd__v1__label_color__init(&c)
        c.value = arena.cString(self.value)
        setPlain(self.color, &c.has_color, &c.color)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.LabelOverflow: ProtoEnum {
    /// Unknown numbers on the wire decode to `.unspecified`.
    static var fallback: Self { .unspecified }
}

extension V1.LabelPosition: ProtoEnum {
    /// Unknown numbers on the wire decode to `.unspecified`.
    static var fallback: Self { .unspecified }
}

extension V1.LayerOptions: CBridged {
    static var protoName: String { "LayerOptions" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__layer_options__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__LayerOptions.self)
        self.init(
            tiling: try swiftMessage(c.tiling),
            clustering: try swiftMessage(c.clustering),
            pointTile: try swiftMessage(c.point_tile),
            labels: try swiftMessage(c.labels)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__LayerOptions()
        markerd__v1__layer_options__init(&c)
        c.tiling = arena.message(self.tiling)
        c.clustering = arena.message(self.clustering)
        c.point_tile = arena.message(self.pointTile)
        c.labels = arena.message(self.labels)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.TilingMode: ProtoEnum {
    /// Unknown numbers on the wire decode to `.unspecified`.
    static var fallback: Self { .unspecified }
}

extension V1.Layer: CBridged {
    static var protoName: String { "Layer" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__layer__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__Layer.self)
        self.init(
            id: try swiftString(c.id, "Layer.id"),
            options: try swiftMessage(c.options),
            version: c.version,
            mode: swiftEnum(c.mode),
            markerCount: c.marker_count
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__Layer()
        markerd__v1__layer__init(&c)
        c.id = arena.cString(self.id)
        c.options = arena.message(self.options)
        setPlain(self.version, &c.has_version, &c.version)
        setPlain(self.mode, &c.has_mode, &c.mode)
        setPlain(self.markerCount, &c.has_marker_count, &c.marker_count)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.LayerStats: CBridged {
    static var protoName: String { "LayerStats" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__layer_stats__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__LayerStats.self)
        self.init(
            layerID: try swiftString(c.layer_id, "LayerStats.layer_id"),
            markerCount: c.marker_count,
            staticMarkerCount: c.static_marker_count,
            liveMarkerCount: c.live_marker_count,
            hiddenMarkerCount: c.hidden_marker_count,
            approximateBytes: c.approximate_bytes,
            mode: swiftEnum(c.mode),
            version: c.version
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__LayerStats()
        markerd__v1__layer_stats__init(&c)
        c.layer_id = arena.cString(self.layerID)
        setPlain(self.markerCount, &c.has_marker_count, &c.marker_count)
        setPlain(self.staticMarkerCount, &c.has_static_marker_count, &c.static_marker_count)
        setPlain(self.liveMarkerCount, &c.has_live_marker_count, &c.live_marker_count)
        setPlain(self.hiddenMarkerCount, &c.has_hidden_marker_count, &c.hidden_marker_count)
        setPlain(self.approximateBytes, &c.has_approximate_bytes, &c.approximate_bytes)
        setPlain(self.mode, &c.has_mode, &c.mode)
        setPlain(self.version, &c.has_version, &c.version)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.CreateLayerRequest: CBridged {
    static var protoName: String { "CreateLayerRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__create_layer_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__CreateLayerRequest.self)
        self.init(
            layerID: try swiftString(c.layer_id, "CreateLayerRequest.layer_id"),
            options: try swiftMessage(c.options)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__CreateLayerRequest()
        markerd__v1__create_layer_request__init(&c)
        c.layer_id = arena.cString(self.layerID)
        c.options = arena.message(self.options)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.CreateLayerResponse: CBridged {
    static var protoName: String { "CreateLayerResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__create_layer_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__CreateLayerResponse.self)
        self.init(
            layer: try swiftMessage(c.layer)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__CreateLayerResponse()
        markerd__v1__create_layer_response__init(&c)
        c.layer = arena.message(self.layer)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.GetLayerRequest: CBridged {
    static var protoName: String { "GetLayerRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__get_layer_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__GetLayerRequest.self)
        self.init(
            layerID: try swiftString(c.layer_id, "GetLayerRequest.layer_id")
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__GetLayerRequest()
        markerd__v1__get_layer_request__init(&c)
        c.layer_id = arena.cString(self.layerID)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.GetLayerResponse: CBridged {
    static var protoName: String { "GetLayerResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__get_layer_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__GetLayerResponse.self)
        self.init(
            layer: try swiftMessage(c.layer)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__GetLayerResponse()
        markerd__v1__get_layer_response__init(&c)
        c.layer = arena.message(self.layer)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.ListLayersRequest: CBridged {
    static var protoName: String { "ListLayersRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__list_layers_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__ListLayersRequest.self)
        self.init(
            pageSize: c.page_size,
            pageToken: try swiftString(c.page_token, "ListLayersRequest.page_token")
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__ListLayersRequest()
        markerd__v1__list_layers_request__init(&c)
        setPlain(self.pageSize, &c.has_page_size, &c.page_size)
        c.page_token = arena.cString(self.pageToken)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.ListLayersResponse: CBridged {
    static var protoName: String { "ListLayersResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__list_layers_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__ListLayersResponse.self)
        self.init(
            layers: try swiftMessages(c.n_layers, c.layers),
            nextPageToken: try swiftString(c.next_page_token, "ListLayersResponse.next_page_token")
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__ListLayersResponse()
        markerd__v1__list_layers_response__init(&c)
        (c.n_layers, c.layers) = arena.messages(self.layers)
        c.next_page_token = arena.cString(self.nextPageToken)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.DeleteLayerRequest: CBridged {
    static var protoName: String { "DeleteLayerRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__delete_layer_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__DeleteLayerRequest.self)
        self.init(
            layerID: try swiftString(c.layer_id, "DeleteLayerRequest.layer_id")
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__DeleteLayerRequest()
        markerd__v1__delete_layer_request__init(&c)
        c.layer_id = arena.cString(self.layerID)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.DeleteLayerResponse: CBridged {
    static var protoName: String { "DeleteLayerResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__delete_layer_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__DeleteLayerResponse.self)
        self.init(
            removedCount: c.removed_count
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__DeleteLayerResponse()
        markerd__v1__delete_layer_response__init(&c)
        setPlain(self.removedCount, &c.has_removed_count, &c.removed_count)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.GetLayerStatsRequest: CBridged {
    static var protoName: String { "GetLayerStatsRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__get_layer_stats_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__GetLayerStatsRequest.self)
        self.init(
            layerID: try swiftString(c.layer_id, "GetLayerStatsRequest.layer_id")
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__GetLayerStatsRequest()
        markerd__v1__get_layer_stats_request__init(&c)
        c.layer_id = arena.cString(self.layerID)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.GetLayerStatsResponse: CBridged {
    static var protoName: String { "GetLayerStatsResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__get_layer_stats_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__GetLayerStatsResponse.self)
        self.init(
            stats: try swiftMessage(c.stats)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__GetLayerStatsResponse()
        markerd__v1__get_layer_stats_response__init(&c)
        c.stats = arena.message(self.stats)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

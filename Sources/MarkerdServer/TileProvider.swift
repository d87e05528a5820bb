import MarkerdAPI
import MarkerdService
import MarkerdTransport

/// What the HTTP gateway (``TileGateway``) needs from the service. Every method is synchronous,
/// is called on the gateway's handler queue (never on an nng thread), and throws only
/// ``RPCError``, which the gateway maps to an HTTP status (NOT_FOUND -> 404, INVALID_ARGUMENT
/// and OUT_OF_RANGE -> 400, UNIMPLEMENTED -> 501, UNAVAILABLE, RESOURCE_EXHAUSTED,
/// DEADLINE_EXCEEDED and ABORTED -> 503, anything else -> 500).
///
/// ``ServiceTileProvider`` adapts ``MarkerService``; tests supply their own.
public protocol TileProvider: Sendable {
    /// One raster tile as PNG. `size` is the tile's edge in CSS px (256 or 512), `density` the
    /// device pixel ratio (1, 2, 3: the PNG is size x density pixels square). `knownVersion` is
    /// the version the client has (from `If-None-Match`); when it is still current the result
    /// has `notModified` set and `png` may be empty. `version` changes whenever the tile's
    /// pixels can have changed.
    func tile(layer: String, z: Int, x: Int, y: Int, size: Int, density: Int,
              knownVersion: UInt64?) throws(RPCError) -> (png: [UInt8], version: UInt64, notModified: Bool)

    /// One point-data tile (Mapbox Vector Tile 2.1, layer "markers"), with the same version rules.
    func pointTile(layer: String, z: Int, x: Int, y: Int,
                   knownVersion: UInt64?) throws(RPCError) -> (mvt: [UInt8], version: UInt64, notModified: Bool)

    /// The layer's raster tile size (256 or 512) and its current version (changes with any
    /// change to the layer). NOT_FOUND for an unknown layer.
    func layerInfo(_ layer: String) throws(RPCError) -> (tileSize: Int, version: UInt64)

    /// Every layer, sorted by id (the viewer's picker and the per-layer metrics).
    func layers() -> [LayerSummary]

    /// The markers to draw live in a viewport (QueryViewport).
    func viewport(_ query: ViewportQuery) throws(RPCError) -> ViewportResult

    /// The markers under a point, topmost first (HitTest).
    func hitTest(_ query: HitTestQuery) throws(RPCError) -> HitTestResult

    /// How tiles were rendered so far (/metrics); nil when the provider does not count them.
    func tileRenderCounts() -> TileRenderCounts?

    /// Whether the server takes traffic and writes (`/readyz`, `markerd_ready`,
    /// `markerd_writes_refused`). Default: ready.
    func readiness() -> Readiness

    func events(layer: String, bounds: V1.Bounds?, since: UInt64?, keepAliveEvery: Duration) throws(RPCError) -> HTTPBodyStream
}

extension TileProvider {
    /// A stream of `layer`'s changes as Server-Sent Events (`/layers/{layer}/events`): see
    /// `LayerEventStreams`. Default: NOT_FOUND (a provider without a change feed).
    public func events(layer: String, bounds: V1.Bounds?, since: UInt64?, keepAliveEvery: Duration) throws(RPCError) -> HTTPBodyStream {
        throw .notFound("no change events for layer \"\(layer)\" here")
    }

    public func tileRenderCounts() -> TileRenderCounts? { nil }
    public func readiness() -> Readiness { Readiness() }
}

/// One layer in ``TileProvider/layers()``.
public struct LayerSummary: Sendable, Equatable, Codable {
    public var id: String
    public var version: UInt64
    /// "tiled" or "native".
    public var mode: String
    public var markerCount: UInt64
    public var tileSize: Int
    /// The raster tiles draw clusters as count bubbles (`clustering.enabled` and `clustering.raster`).
    public var clusters: Bool
    /// The raster tiles label the pins (`labels.enabled`).
    public var labels: Bool
    /// The attribute labels take their text from (`labels.text_attribute`); nil: the markers' own
    /// `label.text` only, or no labels.
    public var labelAttribute: String?

    public init(id: String, version: UInt64, mode: String, markerCount: UInt64, tileSize: Int, clusters: Bool = false,
                labels: Bool = false, labelAttribute: String? = nil) {
        self.id = id
        self.version = version
        self.mode = mode
        self.markerCount = markerCount
        self.tileSize = tileSize
        self.clusters = clusters
        self.labels = labels
        self.labelAttribute = labelAttribute
    }
}

/// A viewport: degrees (west > east crosses the antimeridian), zoom 0-22 (fractional), density
/// 1-3, at most `limit` markers.
public struct ViewportQuery: Sendable, Equatable {
    public var layer: String
    public var west: Double, south: Double, east: Double, north: Double
    public var zoom: Double
    public var density: Int
    public var limit: Int

    public init(layer: String, west: Double, south: Double, east: Double, north: Double,
                zoom: Double, density: Int = 1, limit: Int = 1000) {
        self.layer = layer
        self.west = west
        self.south = south
        self.east = east
        self.north = north
        self.zoom = zoom
        self.density = density
        self.limit = limit
    }
}

/// A marker as the gateway's JSON shows it.
public struct GatewayMarker: Sendable, Equatable, Codable {
    public var id: String
    public var lat: Double
    public var lon: Double
    public var zIndex: Int32
    public var draggable: Bool
    public var clickable: Bool
    /// 0xAARRGGBB of the default pin, when the marker uses one.
    public var fillColor: UInt32?
    public var label: String?
    public var iconID: String?
    public var attributes: [String: String]

    public init(id: String, lat: Double, lon: Double, zIndex: Int32 = 0, draggable: Bool = false,
                clickable: Bool = true, fillColor: UInt32? = nil, label: String? = nil, iconID: String? = nil,
                attributes: [String: String] = [:]) {
        self.id = id
        self.lat = lat
        self.lon = lon
        self.zIndex = zIndex
        self.draggable = draggable
        self.clickable = clickable
        self.fillColor = fillColor
        self.label = label
        self.iconID = iconID
        self.attributes = attributes
    }
}

/// The answer of ``TileProvider/viewport(_:)``.
public struct ViewportResult: Sendable, Equatable, Codable {
    /// "tiled" (static markers come as raster tiles; `markers` holds only live ones) or "native".
    public var mode: String
    public var markers: [GatewayMarker]
    /// Set in tiled mode: the live XYZ template (relative to the gateway), tile size, version.
    public var tileURLTemplate: String?
    public var tileSize: Int?
    public var tileVersion: UInt64?
    public var staticInView: UInt64
    public var liveInView: UInt64
    public var layerVersion: UInt64
    /// Non-empty when more markers are in view than `limit`.
    public var nextPageToken: String

    public init(mode: String, markers: [GatewayMarker], tileURLTemplate: String? = nil, tileSize: Int? = nil,
                tileVersion: UInt64? = nil, staticInView: UInt64 = 0, liveInView: UInt64 = 0,
                layerVersion: UInt64 = 0, nextPageToken: String = "") {
        self.mode = mode
        self.markers = markers
        self.tileURLTemplate = tileURLTemplate
        self.tileSize = tileSize
        self.tileVersion = tileVersion
        self.staticInView = staticInView
        self.liveInView = liveInView
        self.layerVersion = layerVersion
        self.nextPageToken = nextPageToken
    }
}

/// A hit-test: a point in degrees, the map zoom and density, a tolerance in CSS px.
public struct HitTestQuery: Sendable, Equatable {
    public var layer: String
    public var lat: Double
    public var lon: Double
    public var zoom: Double
    public var density: Int
    public var tolerancePx: Double
    public var maxResults: Int

    public init(layer: String, lat: Double, lon: Double, zoom: Double, density: Int = 1,
                tolerancePx: Double = 14, maxResults: Int = 10) {
        self.layer = layer
        self.lat = lat
        self.lon = lon
        self.zoom = zoom
        self.density = density
        self.tolerancePx = tolerancePx
        self.maxResults = maxResults
    }
}

/// The answer of ``TileProvider/hitTest(_:)``.
public struct HitTestResult: Sendable, Equatable, Codable {
    public struct Hit: Sendable, Equatable, Codable {
        public var marker: GatewayMarker
        /// Drawn into raster tiles (a static marker of a tiled layer).
        public var tiled: Bool
        /// The point is on the marker's label rather than its icon.
        public var onLabel: Bool
        public init(marker: GatewayMarker, tiled: Bool, onLabel: Bool = false) {
            self.marker = marker
            self.tiled = tiled
            self.onLabel = onLabel
        }
    }
    /// Topmost first.
    public var hits: [Hit]
    public init(hits: [Hit]) { self.hits = hits }
}

/// Animation kinds (same numbers as the API's AnimationKind).
public enum AnimationKind: UInt8, Sendable, Hashable {
    case none = 0, drop = 1, bounce = 2
}

/// A marker's animation: it counts as live until `endsAtUnixMs` (server clock, Unix ms).
public struct MarkerAnimation: Hashable, Sendable {
    public var kind: AnimationKind
    public var endsAtUnixMs: Int64
    public init(kind: AnimationKind, endsAtUnixMs: Int64) { self.kind = kind; self.endsAtUnixMs = endsAtUnixMs }
}

/// One marker, as given to `upsert` and as returned by `marker(id:)` and queries.
/// Positions come back quantized to world units and rounded to 7 decimals (see `WorldPoint`).
public struct MarkerRecord: Hashable, Sendable {
    /// 1-256 bytes of UTF-8.
    public var id: String
    public var position: LatLng
    public var style: IconStyle
    public var zIndex: Int32
    public var visible: Bool
    public var clickable: Bool
    public var draggable: Bool
    /// Nil, `.none` or an end <= now: not animating.
    public var animation: MarkerAnimation?
    public var attributes: [String: String]
    /// Opaque bytes stored for the caller.
    public var extra: [UInt8]
    /// The marker's own label settings (see `MarkerLabel`); nil (default) or empty: the layer's.
    public var label: MarkerLabel?

    public init(id: String, position: LatLng, style: IconStyle = .defaultPin, zIndex: Int32 = 0,
                visible: Bool = true, clickable: Bool = true, draggable: Bool = false,
                animation: MarkerAnimation? = nil, attributes: [String: String] = [:], extra: [UInt8] = [],
                label: MarkerLabel? = nil) {
        self.id = id; self.position = position; self.style = style; self.zIndex = zIndex
        self.visible = visible; self.clickable = clickable; self.draggable = draggable
        self.animation = animation; self.attributes = attributes; self.extra = extra; self.label = label
    }
}

/// Tiling options of a layer (API `TilingOptions`).
public struct TilingOptions: Hashable, Sendable {
    /// Default true.
    public var enabled: Bool
    /// The layer is TILED while it holds at least this many static markers. Default 2000.
    public var minMarkerCount: UInt32
    /// Raster tile size in px: 256 (default) or 512.
    public var tileSize: Int

    public init(enabled: Bool = true, minMarkerCount: UInt32 = 2000, tileSize: Int = 256) {
        self.enabled = enabled; self.minMarkerCount = minMarkerCount; self.tileSize = tileSize
    }

    public func validate() throws(MarkerdCoreError) {
        if tileSize != 256 && tileSize != 512 {
            throw .invalidArgument(field: "tiling.tile_size", reason: "\(tileSize) is not 256 or 512")
        }
    }
}

/// How a layer's markers reach clients.
public enum TilingMode: Sendable, Hashable {
    /// Every visible marker is a live (native) object.
    case native
    /// Static markers come as raster tiles; draggable and animating markers stay live objects.
    case tiled
}

/// Counters of a layer (API `LayerStats`).
public struct LayerStats: Hashable, Sendable {
    public var markers: Int
    /// Visible, not draggable, not animating (at `now`).
    public var staticMarkers: Int
    /// Draggable or animating (visible or not).
    public var liveMarkers: Int
    /// Not visible.
    public var hiddenMarkers: Int
    /// Approximate memory held by the layer, in bytes.
    public var approximateBytes: Int
    public var mode: TilingMode
    public var version: UInt64
}

/// Result of `upsert`.
public struct UpsertResult: Hashable, Sendable {
    public var created: Int
    public var updated: Int
}

/// Result of `remove(ids:)`.
public struct RemoveResult: Hashable, Sendable {
    public var removed: Int
    public var notFound: Int
    public var notFoundIDs: [String]
}

/// Result of `move(_:)`.
public struct MoveResult: Hashable, Sendable {
    public var moved: Int
    public var notFoundIDs: [String]
}

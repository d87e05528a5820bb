// Options and value types of GridClusterIndex (markerd's default, dynamic clustering).

/// Options of `GridClusterIndex` (mirrors `markerd.v1.ClusteringOptions`).
///
/// Cells are aligned to tiles: each tile of `extent` pixels is split into `cellsPerTile` x `cellsPerTile`
/// cells, `cellsPerTile` being the power of two that makes the cell size closest to `radius`
/// (in log scale): radius 60 with extent 512 gives 8 cells of 64 px. So the cells of zoom z+1 nest
/// 2 x 2 in the cells of zoom z, and no cell straddles two tiles.
public struct GridClusterOptions: Sendable, Equatable {
    /// Target cell size in tile pixels. Default 60. Must be > 0.
    public var radius: Double
    /// A cell with fewer members returns them unclustered. Default 2. Must be >= 1.
    public var minPoints: Int
    /// Highest zoom that is clustered; above it every point is returned alone. Default 16.
    /// `maxZoom + cellsPerTileLog2` must be <= 29.
    public var maxZoom: Int
    /// Tile extent in pixels. Default 512. Must be > 0.
    public var extent: Double

    public init(radius: Double = 60, minPoints: Int = 2, maxZoom: Int = 16, extent: Double = 512) {
        self.radius = radius
        self.minPoints = minPoints
        self.maxZoom = maxZoom
        self.extent = extent
    }

    /// log2 of the number of cells per tile side: `max(0, round(log2(extent / radius)))`.
    public var cellsPerTileLog2: Int {
        guard radius > 0, extent > 0 else { return 0 }
        return max(0, Int(CoreMath.log2(extent / radius).rounded()))
    }

    /// The effective cell size in tile pixels: `extent / 2^cellsPerTileLog2`.
    public var cellSize: Double { extent / Double(1 << cellsPerTileLog2) }

    /// Whether the options can be used (see the field documentation).
    public var isValid: Bool {
        radius > 0 && extent > 0 && minPoints >= 1 && maxZoom >= 0 && maxZoom + cellsPerTileLog2 <= 29
    }
}

/// A point of `GridClusterIndex`: a caller handle plus world coordinates.
///
/// World coordinates are fixed-point Web Mercator: `x = floor(lngX * 2^32)`, `y = floor(latY * 2^32)`
/// where lngX, latY in [0, 1) are supercluster's projection (x east from -180 degrees, y south from
/// the north edge at about 85.05 degrees). At zoom z a tile is `2^(32 - z)` units wide. Integer
/// coordinates make the per-cell sums exact, so incremental updates never drift.
public struct ClusterPoint: Sendable, Hashable {
    /// The caller's handle (e.g. a marker-table slot). Must be >= 0; memory is O(largest id).
    public var id: Int32
    public var x: UInt32
    public var y: UInt32

    public init(id: Int32, x: UInt32, y: UInt32) {
        self.id = id
        self.x = x
        self.y = y
    }

    /// A point at a longitude/latitude in degrees (latitude clamped to the Web Mercator range).
    public init(id: Int32, longitude: Double, latitude: Double) {
        self.init(id: id, x: Self.worldX(longitude: longitude), y: Self.worldY(latitude: latitude))
    }

    /// World x of a longitude in degrees (wrapped into [-180, 180)).
    public static func worldX(longitude: Double) -> UInt32 {
        var lng = ClusterMath.jsRem(longitude + 180, 360)
        if lng < 0 { lng += 360 }
        return fixed(lng / 360)
    }

    /// World y of a latitude in degrees (clamped).
    public static func worldY(latitude: Double) -> UInt32 { fixed(ClusterMath.latY(latitude)) }

    /// Longitude in degrees of a world x.
    public static func longitude(worldX x: UInt32) -> Double { ClusterMath.xLng(Double(x) / 4_294_967_296) }

    /// Latitude in degrees of a world y.
    public static func latitude(worldY y: UInt32) -> Double { ClusterMath.yLat(Double(y) / 4_294_967_296) }

    /// A unit coordinate in 32-bit fixed point, clamped; NaN maps to 0 (never a trapping conversion).
    private static func fixed(_ unit: Double) -> UInt32 {
        let v = (unit * 4_294_967_296).rounded(.down)
        guard v > 0 else { return 0 }
        return v >= 4_294_967_295 ? UInt32.max : UInt32(v)
    }
}

/// A rectangle in world coordinates, bounds inclusive. `minX > maxX` means the box crosses the
/// antimeridian: it covers x >= minX and x <= maxX. Requires `minY <= maxY`.
public struct ClusterBox: Sendable, Hashable {
    public var minX: UInt32
    public var minY: UInt32
    public var maxX: UInt32
    public var maxY: UInt32

    public init(minX: UInt32, minY: UInt32, maxX: UInt32, maxY: UInt32) {
        self.minX = minX
        self.minY = minY
        self.maxX = maxX
        self.maxY = maxY
    }

    /// The whole world.
    public static let world = ClusterBox(minX: 0, minY: 0, maxX: .max, maxY: .max)

    /// A box from degrees. Longitudes are wrapped; `west > east` after wrapping crosses the antimeridian;
    /// a box 360 degrees wide or more covers all longitudes. Latitudes are clamped and may come in either order.
    public init(west: Double, south: Double, east: Double, north: Double) {
        let ys = (ClusterPoint.worldY(latitude: north), ClusterPoint.worldY(latitude: south))
        minY = min(ys.0, ys.1)
        maxY = max(ys.0, ys.1)
        if east - west >= 360 {
            minX = 0
            maxX = .max
        } else {
            minX = ClusterPoint.worldX(longitude: west)
            maxX = east == 180 ? .max : ClusterPoint.worldX(longitude: east)
        }
    }

    /// The box of tile z/x/y (0 <= z <= 32).
    public init(tileZ z: Int, x: Int, y: Int) {
        let shift = UInt64(32 - z)
        minX = UInt32(truncatingIfNeeded: UInt64(x) << shift)
        maxX = UInt32(truncatingIfNeeded: ((UInt64(x) + 1) << shift) - 1)
        minY = UInt32(truncatingIfNeeded: UInt64(y) << shift)
        maxY = UInt32(truncatingIfNeeded: ((UInt64(y) + 1) << shift) - 1)
    }

    /// Whether the box contains a world point.
    @inline(__always)
    public func contains(x: UInt32, y: UInt32) -> Bool {
        guard y >= minY && y <= maxY else { return false }
        return minX <= maxX ? (x >= minX && x <= maxX) : (x >= minX || x <= maxX)
    }

    /// Whether the box intersects the rectangle [x0, x1] x [y0, y1] (inclusive).
    @inline(__always)
    func intersects(x0: UInt32, y0: UInt32, x1: UInt32, y1: UInt32) -> Bool {
        guard y1 >= minY && y0 <= maxY else { return false }
        if minX <= maxX { return x1 >= minX && x0 <= maxX }
        return x1 >= minX || x0 <= maxX
    }
}

/// Identifies a cell of a `GridClusterIndex`: (zoom, cell x, cell y), packed as
/// `zoom << 58 | cellY << 29 | cellX`. Stable while the cell is non-empty; the same for the same
/// points whatever the order of updates.
public struct GridClusterID: Sendable, Hashable, Comparable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    public init(zoom: Int, cellX: UInt32, cellY: UInt32) {
        rawValue = UInt64(zoom) << 58 | UInt64(cellY) << 29 | UInt64(cellX)
    }
    public var zoom: Int { Int(rawValue >> 58) }
    public var cellX: UInt32 { UInt32(rawValue & 0x1FFF_FFFF) }
    public var cellY: UInt32 { UInt32((rawValue >> 29) & 0x1FFF_FFFF) }
    public static func < (a: Self, b: Self) -> Bool { a.rawValue < b.rawValue }
    public var description: String { "z\(zoom)/\(cellX)/\(cellY)" }
}

/// A cluster of `GridClusterIndex`: one cell with at least `minPoints` members.
public struct GridCluster: Sendable, Hashable {
    public var id: GridClusterID
    /// Number of member points.
    public var count: Int
    /// Centroid: the mean of member coordinates, rounded down (exact integer arithmetic).
    public var x: UInt32
    public var y: UInt32
    /// Member bounds (inclusive); never crosses the antimeridian.
    public var bounds: ClusterBox
    public var zoom: Int { id.zoom }
}

/// An item of a clustered view: a cluster, or a point left unclustered.
public enum GridClusterItem: Sendable, Hashable {
    case cluster(GridCluster)
    case point(ClusterPoint)

    /// Points represented: the cluster's count, or 1.
    public var count: Int {
        switch self {
        case .cluster(let c): c.count
        case .point: 1
        }
    }
}

/// Errors of `GridClusterIndex`.
public enum GridClusterError: Error, Equatable, Sendable {
    /// The id names no cluster now (empty cell, fewer than minPoints members, or zoom > maxZoom).
    case noCluster(GridClusterID)
}

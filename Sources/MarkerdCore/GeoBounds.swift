/// A closed rectangle in continuous world units (Double, 0...2^32), minX <= maxX, minY <= maxY.
public struct WorldRect: Hashable, Sendable {
    public var minX: Double, minY: Double, maxX: Double, maxY: Double
    public init(minX: Double, minY: Double, maxX: Double, maxY: Double) {
        self.minX = minX; self.minY = minY; self.maxX = maxX; self.maxY = maxY
    }
}

/// A geographic rectangle in degrees. `west > east` means it crosses the antimeridian.
/// `west == -180 && east == 180` is the whole world's width.
public struct GeoBounds: Hashable, Sendable, CustomStringConvertible {
    public var west: Double, south: Double, east: Double, north: Double

    public init(west: Double, south: Double, east: Double, north: Double) {
        self.west = west; self.south = south; self.east = east; self.north = north
    }

    public var crossesAntimeridian: Bool { west > east }

    /// Checks finiteness, longitudes in [-180, 180], latitudes in [-90, 90] and south <= north.
    /// Latitudes beyond the Mercator limit are allowed here and clamped by the conversions.
    public func validate(field: String = "bounds") throws(MarkerdCoreError) {
        for (name, v, limit) in [("west", west, 180.0), ("east", east, 180.0), ("south", south, 90.0), ("north", north, 90.0)] {
            if !v.isFinite || v < -limit || v > limit {
                throw .invalidArgument(field: "\(field).\(name)", reason: "\(v) is not finite within +-\(limit)")
            }
        }
        if south > north {
            throw .invalidArgument(field: field, reason: "south \(south) is north of north \(north)")
        }
    }

    /// The one or two continuous world x-ranges (within [0, 2^32]) covered by these bounds.
    public var worldXRanges: [ClosedRange<Double>] {
        let w = Mercator.worldX(longitude: west), e = Mercator.worldX(longitude: east)
        if west <= east { return [w...e] }
        return [w...Mercator.worldSize, 0...e]
    }

    /// The continuous world y-range (north edge first; latitudes clamped to the Mercator limit).
    public var worldYRange: ClosedRange<Double> {
        Mercator.worldY(latitude: north)...Mercator.worldY(latitude: south)
    }

    /// One or two world rectangles covering these bounds.
    public var worldRects: [WorldRect] {
        let y = worldYRange
        return worldXRanges.map { WorldRect(minX: $0.lowerBound, minY: y.lowerBound, maxX: $0.upperBound, maxY: y.upperBound) }
    }

    public var description: String { "bounds(w \(west), s \(south), e \(east), n \(north))" }
}

/// A slippy-map tile (XYZ scheme, y grows southward), zoom 0...30.
public struct TileID: Hashable, Sendable, CustomStringConvertible {
    public let z: Int
    public let x: UInt32
    public let y: UInt32

    /// Nil when z is outside 0...30 or x/y outside 0..<2^z.
    public init?(z: Int, x: UInt32, y: UInt32) {
        guard z >= 0 && z <= 30 else { return nil }
        let n = UInt64(1) << UInt64(z)
        guard UInt64(x) < n && UInt64(y) < n else { return nil }
        self.z = z; self.x = x; self.y = y
    }

    private init(unchecked z: Int, x: UInt32, y: UInt32) { self.z = z; self.x = x; self.y = y }

    /// The tile at zoom z (0...30) that contains a world point.
    public static func containing(_ p: WorldPoint, zoom z: Int) -> TileID {
        precondition(z >= 0 && z <= 30, "tile zoom \(z)")
        let s = UInt32(32 - z)
        return TileID(unchecked: z, x: z == 0 ? 0 : p.x >> s, y: z == 0 ? 0 : p.y >> s)
    }

    /// The tile at zoom z (0...30) that contains a position (longitude 180 is in the last column).
    public static func containing(_ p: LatLng, zoom z: Int) -> TileID {
        containing(WorldPoint(p), zoom: z)
    }

    /// Side of a tile in world units: 2^(32 - z).
    public var worldSpan: Double { CoreMath.pow2(32 - z) }

    /// The tile's world rectangle (closed; maxX/maxY are the next tile's minX/minY).
    public var worldRect: WorldRect {
        let s = worldSpan
        return WorldRect(minX: Double(x) * s, minY: Double(y) * s, maxX: Double(x + 1) * s, maxY: Double(y + 1) * s)
    }

    /// The tile's geographic bounds.
    public var bounds: GeoBounds {
        let r = worldRect
        return GeoBounds(west: Mercator.longitude(worldX: r.minX), south: Mercator.latitude(worldY: r.maxY),
                         east: Mercator.longitude(worldX: r.maxX), north: Mercator.latitude(worldY: r.minY))
    }

    /// Tiles at zoom z that intersect a world rectangle (touching an edge does not count,
    /// except for a degenerate rectangle, which gets the tile containing it).
    public static func covering(_ rect: WorldRect, zoom z: Int) -> [TileID] {
        precondition(z >= 0 && z <= 30, "tile zoom \(z)")
        let span = CoreMath.pow2(32 - z)
        let n = Double(UInt64(1) << UInt64(z))
        func range(_ lo: Double, _ hi: Double) -> ClosedRange<UInt32> {
            let a = Swift.min(Swift.max(CoreMath.floor(lo / span), 0), n - 1)
            var b = Swift.min(Swift.max(CoreMath.ceil(hi / span) - 1, 0), n - 1)
            if b < a { b = a }
            return UInt32(a)...UInt32(b)
        }
        let xs = range(rect.minX, rect.maxX), ys = range(rect.minY, rect.maxY)
        var out: [TileID] = []
        out.reserveCapacity(xs.count * ys.count)
        for ty in ys { for tx in xs { out.append(TileID(unchecked: z, x: tx, y: ty)) } }
        return out
    }

    /// Tiles at zoom z that intersect geographic bounds (both sides of the antimeridian).
    public static func covering(_ bounds: GeoBounds, zoom z: Int) -> [TileID] {
        var seen = Set<TileID>()
        var out: [TileID] = []
        for r in bounds.worldRects { for t in covering(r, zoom: z) where seen.insert(t).inserted { out.append(t) } }
        return out
    }

    public var description: String { "\(z)/\(x)/\(y)" }
}

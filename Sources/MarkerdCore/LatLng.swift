/// A WGS84 position in degrees. Valid positions are finite, latitude within
/// +-`Mercator.maxLatitude`, longitude within [-180, 180].
public struct LatLng: Hashable, Sendable, CustomStringConvertible {
    public var latitude: Double
    public var longitude: Double

    public init(latitude: Double, longitude: Double) {
        self.latitude = latitude
        self.longitude = longitude
    }

    /// Finite and inside the Web Mercator limits.
    public var isValid: Bool {
        latitude.isFinite && longitude.isFinite
            && latitude >= -Mercator.maxLatitude && latitude <= Mercator.maxLatitude
            && longitude >= -180 && longitude <= 180
    }

    /// Throws `.invalidArgument` naming `field` (e.g. `"markers[2] (id \"a\").position"`).
    public func validate(field: String) throws(MarkerdCoreError) {
        if !latitude.isFinite || latitude < -Mercator.maxLatitude || latitude > Mercator.maxLatitude {
            throw .invalidArgument(field: field + ".latitude",
                                   reason: "\(latitude) is not a finite latitude within +-\(Mercator.maxLatitude)")
        }
        if !longitude.isFinite || longitude < -180 || longitude > 180 {
            throw .invalidArgument(field: field + ".longitude",
                                   reason: "\(longitude) is not a finite longitude within [-180, 180]")
        }
    }

    public var description: String { "(\(latitude), \(longitude))" }
}

/// Web Mercator (EPSG:3857) on a 2^32 x 2^32 world square. x grows eastward from longitude -180,
/// y grows southward from latitude +`maxLatitude`.
public enum Mercator {
    /// The latitude limit of Web Mercator, in degrees.
    public static let maxLatitude: Double = 85.05112878
    /// The world's side in world units: 2^32.
    public static let worldSize: Double = 4_294_967_296

    /// Continuous world x in [0, 2^32] for a longitude in [-180, 180] (not rounded or clamped).
    @inlinable public static func worldX(longitude: Double) -> Double {
        (longitude + 180) / 360 * worldSize
    }

    /// Continuous world y in [0, 2^32] for a latitude (clamped to +-maxLatitude first).
    public static func worldY(latitude: Double) -> Double {
        let lat = Swift.min(Swift.max(latitude, -maxLatitude), maxLatitude)
        let s = CoreMath.sin(lat * (Double.pi / 180))
        let y = (0.5 - CoreMath.log((1 + s) / (1 - s)) / (4 * Double.pi)) * worldSize
        return Swift.min(Swift.max(y, 0), worldSize)
    }

    /// Longitude in degrees for a continuous world x.
    @inlinable public static func longitude(worldX: Double) -> Double {
        worldX / worldSize * 360 - 180
    }

    /// Latitude in degrees for a continuous world y.
    /// gd(t) = 2 atan(e^t) - pi/2 = 2 atan(tanh(t/2)), t = pi (1 - 2 y / 2^32), in the second
    /// form (no cancellation near the equator).
    public static func latitude(worldY: Double) -> Double {
        let t = Double.pi * (1 - 2 * worldY / worldSize)
        let v = CoreMath.exp(t)
        return 2 * CoreMath.atan((v - 1) / (v + 1)) * (180 / Double.pi)
    }

    /// World units per CSS pixel (density 1) at a fractional zoom, for 256 px tiles:
    /// 2^32 / (256 * 2^zoom) = 2^(24 - zoom). Device pixels: divide again by the density.
    public static func worldUnitsPerPixel(zoom: Double) -> Double {
        CoreMath.exp2(24 - zoom)
    }

    /// Checks a zoom (0...22, finite) and density (finite, 0 < d <= 4).
    public static func validate(zoom: Double, density: Double) throws(MarkerdCoreError) {
        if !zoom.isFinite || zoom < 0 || zoom > 22 {
            throw .invalidArgument(field: "zoom", reason: "\(zoom) is not within 0...22")
        }
        if !density.isFinite || density <= 0 || density > 4 {
            throw .invalidArgument(field: "density", reason: "\(density) is not within (0, 4]")
        }
    }
}

/// A point in 32-bit world coordinates (see `Mercator`). Positions are stored this way: the
/// quantum is 2^-32 of the world (8.4e-8 degrees of longitude, at most 9.3 mm).
public struct WorldPoint: Hashable, Sendable, CustomStringConvertible {
    public var x: UInt32
    public var y: UInt32

    public init(x: UInt32, y: UInt32) {
        self.x = x
        self.y = y
    }

    /// Rounds to the nearest world unit, clamped to [0, 2^32 - 1]; longitude 180 maps to the
    /// east edge (x = 2^32 - 1) and latitude +-maxLatitude to y = 0 / 2^32 - 1.
    public init(_ p: LatLng) {
        self.x = WorldPoint.clampRound(Mercator.worldX(longitude: p.longitude))
        self.y = WorldPoint.clampRound(Mercator.worldY(latitude: p.latitude))
    }

    @inlinable static func clampRound(_ v: Double) -> UInt32 {
        let r = CoreMath.round(v)
        if !(r >= 0) { return 0 }
        if r >= 4_294_967_295 { return .max }
        return UInt32(r)
    }

    /// Back to degrees, rounded to 7 decimals (so an input with at most 7 decimals comes back
    /// exactly: the quantum is finer than 1e-7 degrees). x = 2^32 - 1 maps to 180.
    public var latLng: LatLng {
        let lng = x == .max ? 180 : WorldPoint.round7(Mercator.longitude(worldX: Double(x)))
        var lat = WorldPoint.round7(Mercator.latitude(worldY: Double(y)))
        lat = Swift.min(Swift.max(lat, -Mercator.maxLatitude), Mercator.maxLatitude)
        return LatLng(latitude: lat, longitude: lng)
    }

    @inlinable static func round7(_ v: Double) -> Double { CoreMath.round(v * 1e7) / 1e7 }

    /// Pixel coordinates of this point at a fractional zoom for 256 px tiles and a device pixel
    /// ratio: the world is 256 * 2^zoom * density device px wide.
    public func pixel(zoom: Double, density: Double = 1) -> (x: Double, y: Double) {
        let scale = 256 * CoreMath.exp2(zoom) * density / Mercator.worldSize
        return (Double(x) * scale, Double(y) * scale)
    }

    public var description: String { "world(\(x), \(y))" }
}

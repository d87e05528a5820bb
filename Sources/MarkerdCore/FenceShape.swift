/// The area of a geofence, in WGS84 degrees.
///
/// - `bounds`: a rectangle in latitude/longitude; `west > east` crosses the antimeridian,
///   `west == -180 && east == 180` spans every longitude. Edges belong to it.
/// - `circle`: the points whose great-circle distance (haversine, on a sphere of
///   `FenceShape.earthRadiusMeters`) from `center` is at most `radiusMeters`; correct across the
///   antimeridian and over a pole (a circle that reaches a pole spans every longitude there).
/// - `polygon`: an outer ring and holes. Edges are straight lines in latitude/longitude (as in
///   GeoJSON). **Antimeridian rule:** each vertex's longitude is taken, plus or minus 360, within
///   180 degrees of the vertex before it (so every edge runs the shorter way round, and an edge
///   from 170 to -170 crosses the antimeridian); an edge spanning exactly 180 degrees is
///   ambiguous and rejected, and so is a ring that winds around a pole (its closing edge would not
///   come back to its first vertex). A hole's first vertex is taken within the 360 degrees east of
///   the outer ring's westernmost longitude. A point is inside when it is inside the outer ring and
///   in no hole (even-odd rule per ring). A closing vertex equal to the first may be given or not.
public enum FenceShape: Hashable, Sendable {
    case bounds(GeoBounds)
    case circle(center: LatLng, radiusMeters: Double)
    /// `rings[0]` is the outer ring, the rest are holes.
    case polygon(rings: [[LatLng]])

    /// The sphere's radius for circles: the IUGG mean Earth radius, metres.
    public static let earthRadiusMeters = 6_371_008.8
    /// Largest circle radius, metres (10,000 km: a quarter of the way round the Earth).
    public static let maxRadiusMeters = 10_000_000.0
    /// Most vertices of a polygon, all rings together.
    public static let maxVertices = 10_000
    /// Most rings of a polygon (the outer ring and its holes).
    public static let maxRings = 100

    /// Haversine distance in metres between two positions.
    public static func distanceMeters(_ a: LatLng, _ b: LatLng) -> Double {
        let r = Double.pi / 180
        let sLat = CoreMath.sin((b.latitude - a.latitude) * r / 2)
        let sLng = CoreMath.sin((b.longitude - a.longitude) * r / 2)
        let h = sLat * sLat + CoreMath.cos(a.latitude * r) * CoreMath.cos(b.latitude * r) * sLng * sLng
        return 2 * earthRadiusMeters * CoreMath.asin(Swift.min(1, h.squareRoot()))
    }
}

/// A fence shape checked and prepared for point and segment tests (see `FenceShape`).
public struct CompiledFenceShape: Sendable {
    public let shape: FenceShape
    /// Geographic box that holds every point of the shape (`west > east` across the antimeridian).
    public let boundingBox: GeoBounds
    /// The polygon's rings (or the rectangle of `bounds`) in unwrapped longitude (x) / latitude (y).
    private let rings: [[(x: Double, y: Double)]]
    /// The rings' unwrapped x-range (width < 360, or exactly 360 for whole-world bounds).
    private let minX: Double, maxX: Double

    /// Checks the shape (finite coordinates in range, ring sizes, radius) and prepares it.
    /// - Throws: `MarkerdCoreError.invalidArgument` naming the field under `field` (e.g.
    ///   `"fence.polygon.rings[1].points[3].longitude"`).
    public init(_ shape: FenceShape, field: String = "fence") throws(MarkerdCoreError) {
        self.shape = shape
        switch shape {
        case .bounds(let b):
            try b.validate(field: field + ".bounds")
            let east = b.west > b.east ? b.east + 360 : b.east
            rings = [[(b.west, b.south), (east, b.south), (east, b.north), (b.west, b.north)]]
            minX = b.west; maxX = east
            boundingBox = b
        case .circle(let c, let radius):
            try Self.validate(c, field: field + ".circle.center")
            guard radius.isFinite, radius > 0, radius <= FenceShape.maxRadiusMeters else {
                throw .invalidArgument(field: field + ".circle.radius_meters",
                                       reason: "\(radius) is not a finite radius in (0, \(FenceShape.maxRadiusMeters)] metres")
            }
            rings = []; minX = 0; maxX = 0
            boundingBox = Self.circleBox(c, radius)
        case .polygon(let given):
            guard !given.isEmpty, given.count <= FenceShape.maxRings else {
                throw .invalidArgument(field: field + ".polygon.rings",
                                       reason: "\(given.count) rings: a polygon has 1 outer ring and at most \(FenceShape.maxRings - 1) holes")
            }
            let total = given.reduce(0) { $0 + $1.count }
            guard total <= FenceShape.maxVertices else {
                throw .invalidArgument(field: field + ".polygon.rings",
                                       reason: "\(total) vertices, more than \(FenceShape.maxVertices) per fence")
            }
            var unwrapped: [[(x: Double, y: Double)]] = []
            var lo = 0.0, hi = 0.0
            for (i, ring) in given.enumerated() {
                let f = "\(field).polygon.rings[\(i)]"
                for (j, p) in ring.enumerated() { try Self.validate(p, field: "\(f).points[\(j)]") }
                var points = ring
                if points.count > 1, points.first == points.last { points.removeLast() }
                guard points.count >= 3 else {
                    throw .invalidArgument(field: f + ".points", reason: "a ring needs at least 3 distinct vertices, not \(points.count)")
                }
                // The first vertex: as given for the outer ring, within [lo, lo + 360) for a hole.
                var x = points[0].longitude
                if i > 0 {
                    while x < lo { x += 360 }
                    while x >= lo + 360 { x -= 360 }
                }
                var out = [(x: x, y: points[0].latitude)]
                out.reserveCapacity(points.count)
                for j in 1...points.count {
                    let p = points[j % points.count]
                    var d = (p.longitude - out[j - 1].x).truncatingRemainder(dividingBy: 360)
                    if d > 180 { d -= 360 } else if d < -180 { d += 360 }
                    guard d.magnitude < 180 else {
                        throw .invalidArgument(field: "\(f).points[\(j % points.count)]",
                                               reason: "the edge from vertex \(j - 1) spans 180 degrees of longitude: its direction is ambiguous")
                    }
                    let nx = out[j - 1].x + d
                    if j == points.count {
                        guard (nx - out[0].x).magnitude < 1e-9 else {
                            throw .invalidArgument(field: f, reason: "the ring winds around a pole (its edges add up to \(nx - out[0].x) degrees of longitude)")
                        }
                    } else {
                        out.append((nx, p.latitude))
                    }
                }
                if i == 0 {
                    lo = out.map(\.x).min()!; hi = out.map(\.x).max()!
                    guard hi - lo < 360 else {
                        throw .invalidArgument(field: f, reason: "the ring spans \(hi - lo) degrees of longitude; at most less than 360")
                    }
                }
                unwrapped.append(out)
            }
            rings = unwrapped
            minX = lo; maxX = hi
            let ys = unwrapped[0].map(\.y)
            boundingBox = Self.box(minX: lo, maxX: hi, south: ys.min()!, north: ys.max()!)
        }
    }

    private static func validate(_ p: LatLng, field: String) throws(MarkerdCoreError) {
        guard p.latitude.isFinite, p.latitude.magnitude <= 90 else {
            throw .invalidArgument(field: field + ".latitude", reason: "\(p.latitude) is not a finite latitude within +-90")
        }
        guard p.longitude.isFinite, p.longitude.magnitude <= 180 else {
            throw .invalidArgument(field: field + ".longitude", reason: "\(p.longitude) is not a finite longitude within [-180, 180]")
        }
    }

    /// Geographic bounds for an unwrapped x-range (wider than 360: every longitude).
    static func box(minX: Double, maxX: Double, south: Double, north: Double) -> GeoBounds {
        if maxX - minX >= 360 { return GeoBounds(west: -180, south: south, east: 180, north: north) }
        func wrap(_ x: Double) -> Double { x > 180 ? x - 360 : x < -180 ? x + 360 : x }
        return GeoBounds(west: wrap(minX), south: south, east: wrap(maxX), north: north)
    }

    /// A box holding the circle, with a margin of 1e-7 degrees (about 1 cm) for rounding.
    static func circleBox(_ c: LatLng, _ radius: Double) -> GeoBounds {
        let margin = 1e-7
        let delta = radius / FenceShape.earthRadiusMeters * (180 / Double.pi)
        let south = Swift.max(-90, c.latitude - delta - margin), north = Swift.min(90, c.latitude + delta + margin)
        let s = CoreMath.sin(radius / FenceShape.earthRadiusMeters) / CoreMath.cos(c.latitude * (Double.pi / 180))
        // The circle reaches a pole, or its widest point is past 90 degrees from the centre's meridian.
        guard north < 90, south > -90, s < 1 else { return GeoBounds(west: -180, south: south, east: 180, north: north) }
        let dLng = CoreMath.asin(s) * (180 / Double.pi) + margin
        return box(minX: c.longitude - dLng, maxX: c.longitude + dLng, south: south, north: north)
    }

    /// The longitude shifts that bring a position into the rings' unwrapped range.
    private static let shifts: [Double] = [0, 360, -360]

    /// Whether the shape holds a position (edges included for bounds; see `FenceShape`).
    public func contains(_ p: LatLng) -> Bool {
        switch shape {
        case .bounds(let b):
            guard p.latitude >= b.south && p.latitude <= b.north else { return false }
            return b.west <= b.east ? (p.longitude >= b.west && p.longitude <= b.east) : (p.longitude >= b.west || p.longitude <= b.east)
        case .circle(let c, let radius):
            return FenceShape.distanceMeters(c, p) <= radius
        case .polygon:
            for shift in Self.shifts {
                let x = p.longitude + shift
                guard x >= minX && x <= maxX else { continue }
                guard Self.ringContains(rings[0], x, p.latitude) else { return false }
                for hole in rings.dropFirst() where Self.ringContains(hole, x, p.latitude) { return false }
                return true
            }
            return false
        }
    }

    /// Even-odd crossing test of the point (x, y) against a ring.
    private static func ringContains(_ ring: [(x: Double, y: Double)], _ x: Double, _ y: Double) -> Bool {
        var inside = false
        var j = ring.count - 1
        for i in ring.indices {
            let a = ring[i], b = ring[j]
            if (a.y > y) != (b.y > y), x < (b.x - a.x) * (y - a.y) / (b.y - a.y) + a.x { inside.toggle() }
            j = i
        }
        return inside
    }

    /// Whether the segment from `a` to `b` (straight in latitude/longitude, the shorter way
    /// round in longitude) meets the shape's boundary: for two points outside the shape, whether
    /// the move between them passes through it (a CROSS). For a circle: whether the segment's
    /// point nearest the centre, in an equirectangular projection about the centre, lies within
    /// the radius.
    public func segmentMeets(_ a: LatLng, _ b: LatLng) -> Bool {
        var d = b.longitude - a.longitude
        if d > 180 { d -= 360 } else if d < -180 { d += 360 }
        switch shape {
        case .circle(let c, let radius):
            var ax = a.longitude - c.longitude
            if ax > 180 { ax -= 360 } else if ax < -180 { ax += 360 }
            let k = CoreMath.cos(c.latitude * (Double.pi / 180))
            let px = ax * k, py = a.latitude - c.latitude
            let vx = d * k, vy = b.latitude - a.latitude
            let len2 = vx * vx + vy * vy
            let t = len2 > 0 ? Swift.min(1, Swift.max(0, -(px * vx + py * vy) / len2)) : 0
            var lng = c.longitude + ax + d * t
            if lng > 180 { lng -= 360 } else if lng < -180 { lng += 360 }
            return FenceShape.distanceMeters(c, LatLng(latitude: a.latitude + (b.latitude - a.latitude) * t, longitude: lng)) <= radius
        case .bounds, .polygon:
            for shift in Self.shifts {
                let x0 = a.longitude + shift, x1 = x0 + d
                guard Swift.max(x0, x1) >= minX && Swift.min(x0, x1) <= maxX else { continue }
                for ring in rings {
                    var j = ring.count - 1
                    for i in ring.indices {
                        if Self.segmentsMeet((x0, a.latitude), (x1, b.latitude), ring[j], ring[i]) { return true }
                        j = i
                    }
                }
            }
            return false
        }
    }

    /// Whether closed segments p1-p2 and q1-q2 share a point.
    private static func segmentsMeet(_ p1: (x: Double, y: Double), _ p2: (x: Double, y: Double),
                                     _ q1: (x: Double, y: Double), _ q2: (x: Double, y: Double)) -> Bool {
        func orient(_ a: (x: Double, y: Double), _ b: (x: Double, y: Double), _ c: (x: Double, y: Double)) -> Double {
            (b.x - a.x) * (c.y - a.y) - (b.y - a.y) * (c.x - a.x)
        }
        func within(_ a: (x: Double, y: Double), _ b: (x: Double, y: Double), _ c: (x: Double, y: Double)) -> Bool {
            Swift.min(a.x, b.x) <= c.x && c.x <= Swift.max(a.x, b.x) && Swift.min(a.y, b.y) <= c.y && c.y <= Swift.max(a.y, b.y)
        }
        let d1 = orient(q1, q2, p1), d2 = orient(q1, q2, p2), d3 = orient(p1, p2, q1), d4 = orient(p1, p2, q2)
        if ((d1 > 0 && d2 < 0) || (d1 < 0 && d2 > 0)) && ((d3 > 0 && d4 < 0) || (d3 < 0 && d4 > 0)) { return true }
        return (d1 == 0 && within(q1, q2, p1)) || (d2 == 0 && within(q1, q2, p2))
            || (d3 == 0 && within(p1, p2, q1)) || (d4 == 0 && within(p1, p2, q2))
    }
}

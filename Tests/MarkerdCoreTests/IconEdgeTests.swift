import Testing
@testable import MarkerdCore

/// An icon is a closed rectangle: one whose edge lies exactly on an edge of a viewport, a tile or
/// a hit box touches it and counts; one world unit further out does not. Fixed cases on every
/// edge and across the antimeridian (random tests hit exact edges only by chance).
@Suite struct IconEdgeTests {
    /// 16 x 24 px with the anchor at (0.25, 0.75): reaches 4 px left, 12 right, 18 up, 6 down,
    /// so that a swapped side shows.
    static let style = IconStyle(source: .image(id: "edge", width: 16, height: 24), anchor: Anchor(x: 0.25, y: 0.75))
    static let w: Int64 = 1 << 32
    static let half: Int64 = 1 << 31
    static let quarter: Int64 = 1 << 30

    /// A world point as a position that converts back to exactly that point.
    static func position(_ x: Int64, _ y: Int64) throws -> LatLng {
        let p = LatLng(latitude: Mercator.latitude(worldY: Double(y)), longitude: Mercator.longitude(worldX: Double(x)))
        try #require(WorldPoint(p) == WorldPoint(x: UInt32(x), y: UInt32(y)), "(\(x), \(y))")
        return p
    }

    /// A layer holding "in" and "out" with the edge style; `mixed` adds a default pin far away,
    /// so that queries read each marker's own extents instead of the layer's common ones.
    static func layer(inAt a: (Int64, Int64), outAt b: (Int64, Int64), mixed: Bool) throws -> MarkerLayer {
        var layer = try MarkerLayer()
        var markers = [MarkerRecord(id: "in", position: try position(a.0, a.1), style: style),
                       MarkerRecord(id: "out", position: try position(b.0, b.1), style: style)]
        if mixed { markers.append(MarkerRecord(id: "far", position: LatLng(latitude: -80, longitude: 0))) }
        _ = try layer.upsert(markers, now: 0)
        return layer
    }

    /// Icons touching each edge of a viewport at zoom 16 (256 world units per px). Edges at
    /// longitudes +-90, +-180 and the equator, whose world coordinates are exact.
    @Test(arguments: [false, true])
    func viewportEdges(mixed: Bool) throws {
        let u: Int64 = 256
        try #require(Mercator.worldUnitsPerPixel(zoom: 16) == Double(u))
        let (l, r, up, down) = (4 * u, 12 * u, 18 * u, 6 * u)
        let south = GeoBounds(west: -90, south: -10, east: 90, north: 0)   // north edge: y = 2^31
        let north = GeoBounds(west: -90, south: 0, east: 90, north: 10)    // south edge: y = 2^31
        let y = Self.half + (1 << 24)                                      // inside `south`
        let x = Self.half
        let cases: [(String, GeoBounds, (Int64, Int64), (Int64, Int64))] = [
            ("east", south, (3 * Self.quarter + l, y), (3 * Self.quarter + l + 1, y)),
            ("west", south, (Self.quarter - r, y), (Self.quarter - r - 1, y)),
            ("north", south, (x, Self.half - down), (x, Self.half - down - 1)),
            ("south", north, (x, Self.half + up), (x, Self.half + up + 1)),
            // Across the antimeridian: the icon wraps around to the other side of the world.
            ("west at -180", GeoBounds(west: -180, south: -10, east: -90, north: 0), (Self.w - r, y), (Self.w - r - 1, y)),
            ("east at 180", GeoBounds(west: 90, south: -10, east: 180, north: 0), (l, y), (l + 1, y)),
            // A viewport crossing the antimeridian, on its two inner edges.
            ("east of a crossing viewport", GeoBounds(west: 90, south: -10, east: -90, north: 0), (Self.quarter + l, y), (Self.quarter + l + 1, y)),
            ("west of a crossing viewport", GeoBounds(west: 90, south: -10, east: -90, north: 0), (3 * Self.quarter - r, y), (3 * Self.quarter - r - 1, y)),
        ]
        for (edge, bounds, a, b) in cases {
            let layer = try Self.layer(inAt: a, outAt: b, mixed: mixed)
            let result = try layer.queryViewport(bounds: bounds, zoom: 16, now: 0)
            #expect(result.markers.map(\.id) == ["in"], "\(edge), mixed: \(mixed)")
            #expect(result.staticInView == 1, "\(edge), mixed: \(mixed)")
        }
    }

    /// Icons touching each edge of a tile (z2: 2^22 world units per px of a 256 px tile).
    @Test(arguments: [false, true])
    func tileEdges(mixed: Bool) throws {
        let u: Int64 = 1 << 22
        let (l, r, up, down) = (4 * u, 12 * u, 18 * u, 6 * u)
        let mid = Self.quarter + Self.quarter / 2   // inside tile (2, 1, 1): [2^30, 2^31] on both axes
        let cases: [(String, TileID?, (Int64, Int64), (Int64, Int64))] = [
            ("east", TileID(z: 2, x: 1, y: 1), (Self.half + l, mid), (Self.half + l + 1, mid)),
            ("west", TileID(z: 2, x: 1, y: 1), (Self.quarter - r, mid), (Self.quarter - r - 1, mid)),
            ("north", TileID(z: 2, x: 1, y: 1), (mid, Self.quarter - down), (mid, Self.quarter - down - 1)),
            ("south", TileID(z: 2, x: 1, y: 1), (mid, Self.half + up), (mid, Self.half + up + 1)),
            ("west at -180", TileID(z: 2, x: 0, y: 1), (Self.w - r, mid), (Self.w - r - 1, mid)),
            ("east at 180", TileID(z: 2, x: 3, y: 1), (l, mid), (l + 1, mid)),
        ]
        for (edge, tile, a, b) in cases {
            let tile = try #require(tile)
            let layer = try Self.layer(inAt: a, outAt: b, mixed: mixed)
            #expect(layer.tileMarkers(tile, now: 0).map(\.id) == ["in"], "\(edge), mixed: \(mixed)")
        }
    }

    /// Icons touching each edge of a hit box (3 px tolerance at zoom 16) around a point.
    @Test(arguments: [false, true])
    func hitBoxEdges(mixed: Bool) throws {
        let u: Int64 = 256
        let t = 3 * u
        let (l, r, up, down) = (4 * u, 12 * u, 18 * u, 6 * u)
        let p = Self.half   // the point (0, 0)
        let center = LatLng(latitude: 0, longitude: 0)
        let cases: [(String, LatLng, (Int64, Int64), (Int64, Int64))] = [
            ("east", center, (p + t + l, p), (p + t + l + 1, p)),
            ("west", center, (p - t - r, p), (p - t - r - 1, p)),
            ("north", center, (p, p - t - down), (p, p - t - down - 1)),
            ("south", center, (p, p + t + up), (p, p + t + up + 1)),
            // The hit box around a point on the antimeridian reaches across it.
            ("east of a point at 180", LatLng(latitude: 0, longitude: 180), (t + l, p), (t + l + 1, p)),
            ("west of a point at -180", LatLng(latitude: 0, longitude: -180), (Self.w - t - r, p), (Self.w - t - r - 1, p)),
        ]
        for (edge, point, a, b) in cases {
            let layer = try Self.layer(inAt: a, outAt: b, mixed: mixed)
            let hits = try layer.hitTest(point: point, zoom: 16, tolerancePx: 3, now: 0)
            #expect(hits.map(\.marker.id) == ["in"], "\(edge), mixed: \(mixed)")
        }
    }
}

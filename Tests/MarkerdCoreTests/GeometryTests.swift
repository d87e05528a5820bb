import Foundation
import MarkerdTestSupport
import Testing
@testable import MarkerdCore

@Suite struct GeometryTests {
    /// `Mercator.latitude` (the tanh form) against the Gudermannian's usual form, and `exp2`
    /// exact on integers.
    @Test func latitudeMatchesTheGudermannian() {
        var rng = SplitMix64(seed: testSeed())
        for _ in 0..<200_000 {
            let y = Double(UInt32.random(in: 0...UInt32.max, using: &rng))
            let glibc = (2 * Foundation.atan(Foundation.exp(Double.pi * (1 - 2 * y / 4_294_967_296))) - Double.pi / 2) * 180 / Double.pi
            #expect(abs(Mercator.latitude(worldY: y) - glibc) <= 1e-13)
        }
        #expect(CoreMath.exp2(3) == 8 && CoreMath.exp2(-24) == 0x1p-24)
    }

    @Test func worldPointsExact() {
        #expect(WorldPoint(LatLng(latitude: 0, longitude: 0)) == WorldPoint(x: 2_147_483_648, y: 2_147_483_648))
        #expect(WorldPoint(LatLng(latitude: 35.681236, longitude: 139.767125)) == WorldPoint(x: 3_814_970_401, y: 1_691_263_664))
        #expect(WorldPoint(LatLng(latitude: 51.5074, longitude: -0.1278)) == WorldPoint(x: 2_145_958_935, y: 1_428_186_245))
        // Edges: 180 maps to the east edge, the latitude limits to the first/last row.
        #expect(WorldPoint(LatLng(latitude: Mercator.maxLatitude, longitude: 180)) == WorldPoint(x: .max, y: 0))
        #expect(WorldPoint(LatLng(latitude: -Mercator.maxLatitude, longitude: -180)) == WorldPoint(x: 0, y: .max))
        #expect(WorldPoint(x: .max, y: 0).latLng == LatLng(latitude: Mercator.maxLatitude, longitude: 180))
        #expect(WorldPoint(x: 0, y: .max).latLng == LatLng(latitude: -Mercator.maxLatitude, longitude: -180))
    }

    @Test func roundTripsSevenDecimals() {
        var rng = SplitMix64(seed: 7)
        for _ in 0..<2000 {
            let lat = (Double(Int64.random(in: -850_511_287...850_511_287, using: &rng)) / 1e7)
            let lng = (Double(Int64.random(in: -1_800_000_000...1_799_999_999, using: &rng)) / 1e7)
            let p = LatLng(latitude: lat, longitude: lng)
            #expect(WorldPoint(p).latLng == p, "\(p)")
        }
    }

    @Test func knownTiles() {
        func tile(_ lat: Double, _ lng: Double, _ z: Int) -> String { TileID.containing(LatLng(latitude: lat, longitude: lng), zoom: z).description }
        #expect(tile(35.681236, 139.767125, 15) == "15/29105/12903")   // Tokyo station
        #expect(tile(51.5074, -0.1278, 10) == "10/511/340")            // London
        #expect(tile(40.7128, -74.0060, 12) == "12/1205/1540")         // New York
        #expect(tile(-33.8688, 151.2093, 14) == "14/15073/9831")       // Sydney
        #expect(tile(0, 0, 1) == "1/1/1")
        #expect(tile(0, 0, 0) == "0/0/0")
        #expect(tile(Mercator.maxLatitude, 180, 3) == "3/7/0")
        #expect(tile(-Mercator.maxLatitude, -180, 3) == "3/0/7")
    }

    @Test func tileBoundsAndCovering() throws {
        let t = try #require(TileID(z: 1, x: 1, y: 0))
        let b = t.bounds
        #expect(b.west == 0 && b.east == 180)
        #expect(b.south == 0)
        #expect(abs(b.north - 85.0511287798066) < 1e-12)
        #expect(TileID(z: 2, x: 4, y: 0) == nil)
        // Tokyo around the station at z15: 3 x 3 tiles.
        let tiles = TileID.covering(GeoBounds(west: 139.75, south: 35.67, east: 139.77, north: 35.69), zoom: 15)
        #expect(tiles.map(\.description) == ["15/29104/12902", "15/29105/12902", "15/29106/12902",
                                              "15/29104/12903", "15/29105/12903", "15/29106/12903",
                                              "15/29104/12904", "15/29105/12904", "15/29106/12904"])
        // Across the antimeridian at z2: columns 3 and 0.
        let am = TileID.covering(GeoBounds(west: 170, south: -10, east: -170, north: 10), zoom: 2)
        #expect(Set(am.map(\.description)) == ["2/3/1", "2/3/2", "2/0/1", "2/0/2"])
        // Whole world at z1.
        #expect(TileID.covering(GeoBounds(west: -180, south: -90, east: 180, north: 90), zoom: 1).count == 4)
    }

    @Test func boundsRanges() throws {
        let b = GeoBounds(west: 170, south: -10, east: -170, north: 10)
        #expect(b.crossesAntimeridian)
        let r = b.worldXRanges
        try #require(r.count == 2)
        #expect(r[0].upperBound == 4_294_967_296 && r[1].lowerBound == 0)
        #expect(abs(r[0].lowerBound - 350.0 / 360 * 4_294_967_296) < 1e-3)
        #expect(GeoBounds(west: -180, south: -90, east: 180, north: 90).worldYRange == 0...4_294_967_296)
        #expect(throws: MarkerdCoreError.self) { try GeoBounds(west: 0, south: 10, east: 1, north: 5).validate() }
        #expect(throws: MarkerdCoreError.self) { try GeoBounds(west: .nan, south: 0, east: 1, north: 5).validate() }
        #expect(throws: MarkerdCoreError.self) { try LatLng(latitude: 85.1, longitude: 0).validate(field: "p") }
        #expect(!LatLng(latitude: 0, longitude: 180.0001).isValid)
    }

    @Test func pixelsAndIconRects() {
        let p = WorldPoint(LatLng(latitude: 0, longitude: 0))
        let px = p.pixel(zoom: 1, density: 2)
        #expect(px.x == 512 && px.y == 512)              // world = 256 * 2 * 2 = 1024 px
        let frac = p.pixel(zoom: 0.5, density: 1)
        #expect(abs(frac.x - 181.01933598375618) < 1e-9)
        // Default pin: 48 x 48, anchored at the bottom centre.
        let r = IconStyle.defaultPin.rect(atPixelX: 100, y: 200, density: 2)
        #expect(r.minX == 52 && r.maxX == 148 && r.minY == 104 && r.maxY == 200)
        let img = IconStyle(source: .image(id: "car", width: 20, height: 10))
        #expect(img.anchor == .center)
        let e = img.extents
        #expect(e.left == 10 && e.right == 10 && e.up == 5 && e.down == 5)
        #expect(IconStyle(source: .pin(PinStyle(scale: 2))).width == 96)
        #expect(Mercator.worldUnitsPerPixel(zoom: 0) == 16_777_216)
        #expect(Mercator.worldUnitsPerPixel(zoom: 22) == 4)
    }

    @Test func spatialKeyTokensAndOrder() throws {
        let k = SpatialKey(point: WorldPoint(x: 0xFFFF_FFFF, y: 7), id: Array("héllo.x".utf8))
        #expect(try SpatialKey(pageToken: k.pageToken) == k)
        #expect(try SpatialKey(pageToken: SpatialKey(morton: 0, id: []).pageToken) == SpatialKey(morton: 0, id: []))
        for bad in ["garbage", "s1.0.zz", "s1.0.abc", "s1.12345678901234567.00", "k1.0.1.00", "s1..00", "s1.0.00.00"] {
            #expect(throws: MarkerdCoreError.self, "\(bad)") { try SpatialKey(pageToken: bad) }
        }
        // y above x at every bit: (x, y) = (1, 0) -> 1, (0, 1) -> 2, (2, 0) -> 4.
        #expect(SpatialKey.morton(x: 1, y: 0) == 1 && SpatialKey.morton(x: 0, y: 1) == 2 && SpatialKey.morton(x: 2, y: 0) == 4)
        #expect(SpatialKey.morton(x: .max, y: .max) == .max && SpatialKey.morton(x: .max, y: 0) == 0x5555_5555_5555_5555)
        #expect(SpatialKey(morton: 3, id: [9]) < SpatialKey(morton: 4, id: [0]))
        #expect(SpatialKey(morton: 3, id: [1]) < SpatialKey(morton: 3, id: [1, 0]))
        #expect(DrawKey(zIndex: 0, worldY: 5, id: [1]) < DrawKey(zIndex: 1, worldY: 0, id: [0]))
        #expect(DrawKey(zIndex: 0, worldY: 5, id: [1]) < DrawKey(zIndex: 0, worldY: 6, id: [0]))
        #expect(DrawKey(zIndex: 0, worldY: 5, id: [1]) < DrawKey(zIndex: 0, worldY: 5, id: [1, 0]))
    }
}



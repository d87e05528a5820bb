import MarkerdTestSupport
import Foundation
import MarkerdAPI
import MarkerdClient
import Testing

/// Viewport queries, hit-tests, drags and moves through the RPC surface (the core's own oracle
/// tests cover the geometry exhaustively; these check the service wiring and statuses).
@Suite("spatial RPCs")
struct SpatialRPCTests {
    func bounds(_ west: Double, _ south: Double, _ east: Double, _ north: Double) -> V1.Bounds {
        var b = V1.Bounds()
        b.west = west
        b.south = south
        b.east = east
        b.north = north
        return b
    }

    func viewport(_ c: MarkerdClient, _ layer: String, _ b: V1.Bounds, zoom: Double, limit: UInt32 = 0, page: String = "") throws -> V1.QueryViewportResponse {
        var r = V1.QueryViewportRequest()
        r.layerID = layer
        r.bounds = b
        r.zoom = zoom
        r.pageSize = limit
        r.pageToken = page
        return try c.queryViewport(r)
    }

    func hitTest(_ c: MarkerdClient, _ layer: String, _ lat: Double, _ lon: Double, zoom: Double) throws -> [V1.MarkerHit] {
        var r = V1.HitTestRequest()
        r.layerID = layer
        var p = V1.LatLng()
        p.latitude = lat
        p.longitude = lon
        r.point = p
        r.zoom = zoom
        return try c.hitTest(r).hits
    }

    @Test("NATIVE below the threshold, TILED at it, and back; live markers stay live objects")
    func thresholdBothWays() throws {
        let s = try TestServer()
        defer { s.stop() }
        let c = try s.client()
        _ = try createLayer(c, "l", minMarkerCount: 10)
        let world = bounds(-180, -85, 180, 85)
        _ = try c.upsertMarkers("l", (0..<9).map { marker("s\($0)", Double($0), Double($0)) } + [marker("drag", 5, 5) { $0.draggable = true }])
        var v = try viewport(c, "l", world, zoom: 2)
        #expect(v.mode == .native && v.markers.count == 10 && v.tiles == nil)
        _ = try c.upsertMarkers("l", [marker("s9", 9.5, 9.5)])
        v = try viewport(c, "l", world, zoom: 2)
        #expect(v.mode == .tiled)
        #expect(v.markers.map(\.id) == ["drag"], "only live markers are objects in TILED mode")
        #expect(v.staticInViewCount == 10 && v.liveInViewCount == 1)
        #expect(v.tiles?.urlTemplate == "/tiles/l/256/{z}/{x}/{y}.png" && v.tiles?.tileSize == 256)
        #expect(v.tiles?.version == v.layerVersion)
        _ = try c.removeMarkers("l", ids: ["s0"])
        #expect(try viewport(c, "l", world, zoom: 2).mode == .native)
    }

    @Test("an animation ends by the server clock: the marker turns static with no request")
    func animationExpires() throws {
        let clock = ManualClock(1_800_000_000_000)  // fixed: time moves only when the test says
        let s = try TestServer(clock: clock.read)
        defer { s.stop() }
        let c = try s.client()
        _ = try createLayer(c, "l", minMarkerCount: 3)
        _ = try c.upsertMarkers("l", [marker("a", 1, 1), marker("b", 2, 2), marker("drop", 3, 3) { m in
            var a = V1.Animation()
            a.kind = .drop
            a.durationMs = 300
            m.animation = a
        }])
        var stats = try c.layerStats("l")
        #expect(stats.liveMarkerCount == 1 && stats.mode == .native)
        let anim = try c.getMarkers("l", ids: ["drop"]).markers.first?.animation
        #expect(anim?.kind == .drop && anim?.endsAtUnixMs == clock.now + 300)
        clock.advance(299)
        #expect(try c.layerStats("l").liveMarkerCount == 1)
        clock.advance(1)
        stats = try c.layerStats("l")
        #expect(stats.liveMarkerCount == 0 && stats.staticMarkerCount == 3 && stats.mode == .tiled)
    }

    @Test("icon extents count: a marker just outside the bounds whose pin reaches in is returned")
    func iconExtents() throws {
        let s = try TestServer()
        defer { s.stop() }
        let c = try s.client()
        _ = try createLayer(c, "l")
        // A default pin is 48 px tall above its tip. At zoom 10 a pixel is 360/2^18 degrees of longitude.
        let px = 360.0 / Double(1 << 18)
        _ = try c.upsertMarkers("l", [marker("below", -10 * px, 0), marker("far", -1, 0)])
        let v = try viewport(c, "l", bounds(-0.1, 0, 0.1, 0.1), zoom: 10)
        #expect(v.markers.map(\.id) == ["below"])
    }

    @Test("viewports across the antimeridian and pages that cover everything once")
    func antimeridianAndPages() throws {
        let s = try TestServer()
        defer { s.stop() }
        let c = try s.client()
        _ = try createLayer(c, "l")
        let ids = (0..<30).map { "e\($0)" } + (0..<30).map { "w\($0)" } + (0..<5).map { "mid\($0)" }
        var ms: [V1.Marker] = []
        for i in 0..<30 {
            ms.append(marker("e\(i)", Double(i) - 15, 179.5))
            ms.append(marker("w\(i)", Double(i) - 15, -179.5))
        }
        for i in 0..<5 { ms.append(marker("mid\(i)", 0, Double(i))) }
        _ = try c.upsertMarkers("l", ms)
        var seen: [String] = []
        var token = ""
        repeat {
            let v = try viewport(c, "l", bounds(179, -20, -179, 20), zoom: 6, limit: 7, page: token)
            #expect(v.markers.count <= 7)
            seen += v.markers.map(\.id)
            token = v.nextPageToken
        } while !token.isEmpty
        #expect(Set(seen).count == seen.count, "no marker twice")
        #expect(Set(seen) == Set(ids.filter { !$0.hasPrefix("mid") }))
        #expect(statusCode { _ = try viewport(c, "l", bounds(0, 0, 1, 1), zoom: 3, page: "not-a-token") } == .invalidArgument)
        #expect(statusCode { _ = try viewport(c, "l", bounds(0, 0, 1, 1), zoom: 23) } == .invalidArgument)
    }

    @Test("hit-tests: topmost first, clickable and visible only, tiled flag")
    func hitTests() throws {
        let s = try TestServer()
        defer { s.stop() }
        let c = try s.client()
        _ = try createLayer(c, "l", minMarkerCount: 3)
        _ = try c.upsertMarkers("l", [
            marker("low", 10, 10) { $0.zIndex = 0 },
            marker("high", 10, 10) { $0.zIndex = 5 },
            marker("south", 9.99999, 10) { $0.zIndex = 0 },
            marker("hidden", 10, 10) { $0.visible = false },
            marker("inert", 10, 10) { $0.clickable = false },
            marker("live", 10, 10) { $0.draggable = true; $0.zIndex = -1 },
        ])
        // Tap just above the common tip, inside every pin.
        let hits = try hitTest(c, "l", 10.00005, 10, zoom: 14)
        #expect(hits.map { $0.marker?.id ?? "" } == ["high", "south", "low", "live"])
        #expect(hits.map(\.tiled) == [true, true, true, false])
        #expect(try hitTest(c, "l", 11, 11, zoom: 14).isEmpty)
    }

    @Test("drags: begin, 60 Hz moves, end is durable state; cancel restores; conflicts")
    func drags() throws {
        let s = try TestServer()
        defer { s.stop() }
        let c = try s.client()
        _ = try createLayer(c, "l")
        _ = try c.upsertMarkers("l", [marker("d", 1, 1) { $0.draggable = true }, marker("fixed", 2, 2)])
        #expect(statusCode { _ = try c.beginDrag("l", markerID: "fixed") } == .failedPrecondition)
        #expect(statusCode { _ = try c.beginDrag("l", markerID: "nope") } == .notFound)
        let begin = try c.beginDrag("l", markerID: "d")
        #expect(begin.marker?.id == "d")
        #expect(statusCode { _ = try c.beginDrag("l", markerID: "d") } == .aborted)
        for i in 1...20 {
            var p = V1.LatLng()
            p.latitude = 1 + Double(i) * 0.01
            p.longitude = 1
            try c.dragTo("l", dragID: begin.dragID, to: p)
        }
        #expect(abs((try c.getMarkers("l", ids: ["d"]).markers.first?.position?.latitude ?? 0) - 1.2) < 1e-6)
        let end = try c.endDrag("l", dragID: begin.dragID)
        #expect(abs((end.marker?.position?.latitude ?? 0) - 1.2) < 1e-6)
        #expect(statusCode { try c.dragTo("l", dragID: begin.dragID, to: V1.LatLng()) } == .notFound)
        let second = try c.beginDrag("l", markerID: "d")
        var far = V1.LatLng()
        far.latitude = 40
        far.longitude = 40
        try c.dragTo("l", dragID: second.dragID, to: far)
        let cancelled = try c.cancelDrag("l", dragID: second.dragID)
        #expect(abs((cancelled.marker?.position?.latitude ?? 0) - 1.2) < 1e-6)
        #expect(statusCode { _ = try c.endDrag("l", dragID: "garbage") } == .invalidArgument)
    }

    @Test("MoveMarkers: batches move, unknown ids reported, bad positions reject the batch")
    func moves() throws {
        let s = try TestServer()
        defer { s.stop() }
        let c = try s.client()
        _ = try createLayer(c, "l")
        _ = try c.upsertMarkers("l", (0..<100).map { marker("v\($0)", 0, 0) })
        let r = try c.moveMarkers("l", (0..<100).map { move("v\($0)", Double($0) / 10, 1) } + [move("ghost", 1, 1)])
        #expect(r.movedCount == 100 && r.notFoundIDs == ["ghost"])
        #expect(try c.getMarkers("l", ids: ["v50"]).markers.first?.position?.latitude == 5)
        #expect(statusCode { _ = try c.moveMarkers("l", [move("v1", 2, 2), move("v2", 95, 0)]) } == .invalidArgument)
        #expect(try c.getMarkers("l", ids: ["v1"]).markers.first?.position?.latitude == 0.1)
    }
}

import Testing
@testable import MarkerdCore

@Suite struct MarkerLayerTests {
    static let tokyo = LatLng(latitude: 35.681236, longitude: 139.767125)

    func pin(_ id: String, _ lat: Double, _ lng: Double, z: Int32 = 0, draggable: Bool = false,
             visible: Bool = true, clickable: Bool = true, animEnd: Int64? = nil) -> MarkerRecord {
        MarkerRecord(id: id, position: LatLng(latitude: lat, longitude: lng), zIndex: z, visible: visible,
                     clickable: clickable, draggable: draggable,
                     animation: animEnd.map { MarkerAnimation(kind: .drop, endsAtUnixMs: $0) })
    }

    @Test func upsertGetRemoveAndVersion() throws {
        var layer = try MarkerLayer()
        #expect(layer.version == 0)
        let m = MarkerRecord(id: "a", position: Self.tokyo,
                             style: IconStyle(source: .image(id: "car", width: 32, height: 16), anchor: Anchor(x: 0, y: 0.25)),
                             zIndex: 3, clickable: false, attributes: ["k": "v"], extra: [1, 2, 3])
        #expect(try layer.upsert([m, pin("b", 1, 2)], now: 0) == UpsertResult(created: 2, updated: 0))
        #expect(layer.version == 1)
        #expect(layer.marker(id: "a") == m)   // 7-decimal positions round-trip exactly
        var m2 = m
        m2.attributes = [:]; m2.extra = []; m2.position = LatLng(latitude: -10, longitude: 20)
        #expect(try layer.upsert([m2], now: 0) == UpsertResult(created: 0, updated: 1))
        #expect(layer.marker(id: "a") == m2)
        #expect(layer.styles.count == 2)
        let r = layer.remove(ids: ["a", "zz"])
        #expect(r.removed == 1 && r.notFound == 1 && r.notFoundIDs == ["zz"])
        #expect(layer.marker(id: "a") == nil && layer.count == 1)
        #expect(layer.styles.count == 1)
        #expect(layer.version == 3)
        _ = layer.remove(ids: ["nope"])
        #expect(layer.version == 3)
        try layer.move(id: "b", to: LatLng(latitude: 5, longitude: 6))
        #expect(layer.marker(id: "b")?.position == LatLng(latitude: 5, longitude: 6))
        #expect(throws: MarkerdCoreError.markerNotFound(id: "c")) { try layer.move(id: "c", to: Self.tokyo) }
        let mr = try layer.move([("b", LatLng(latitude: 1, longitude: 1)), ("c", Self.tokyo)])
        #expect(mr.moved == 1 && mr.notFoundIDs == ["c"])
        #expect(layer.clear() == 1)
        #expect(layer.count == 0 && layer.stats(now: 0).markers == 0)
        try layer.setOptions(TilingOptions(enabled: false))
        #expect(layer.version == 7)
        #expect(throws: MarkerdCoreError.self) { try layer.setOptions(TilingOptions(tileSize: 300)) }
    }

    @Test func validationIsAllOrNothing() throws {
        var layer = try MarkerLayer()
        let bad = [pin("ok", 0, 0), pin("bad", 86, 0)]
        do {
            _ = try layer.upsert(bad, now: 0)
            Issue.record("no error")
        } catch {
            #expect(error == .invalidArgument(field: "markers[1] (id \"bad\").position.latitude",
                                              reason: "86.0 is not a finite latitude within +-85.05112878"))
            #expect(error.description.contains("bad"))
        }
        #expect(layer.count == 0 && layer.version == 0)
        #expect(throws: MarkerdCoreError.self) { try layer.upsert([pin("", 0, 0)], now: 0) }
        #expect(throws: MarkerdCoreError.self) { try layer.upsert([pin(String(repeating: "x", count: 257), 0, 0)], now: 0) }
        var anchorBad = pin("x", 0, 0)
        anchorBad.style = IconStyle(source: .pin(PinStyle()), anchor: Anchor(x: 1.5, y: 0))
        #expect(throws: MarkerdCoreError.self) { try layer.upsert([anchorBad], now: 0) }
        #expect(throws: MarkerdCoreError.self) { try layer.move([("x", LatLng(latitude: .nan, longitude: 0))]) }
    }

    @Test func manyIDsSlotReuseAndCompaction() throws {
        var layer = try MarkerLayer()
        for round in 0..<3 {
            let ms = (0..<3000).map { pin("m-\(round)-\($0)-" + String(repeating: "p", count: $0 % 40), Double($0 % 80), Double($0 % 170)) }
            _ = try layer.upsert(ms, now: 0)
            #expect(layer.count == 3000)
            for m in ms { #expect(layer.marker(id: m.id)?.id == m.id) }
            #expect(layer.remove(ids: ms.map(\.id)).removed == 3000)
            #expect(layer.count == 0)
        }
        #expect(layer.table.slotCount == 3000)   // slots reused
    }

    @Test func countersAndThresholdBothWays() throws {
        var layer = try MarkerLayer(options: TilingOptions(minMarkerCount: 3))
        _ = try layer.upsert([pin("a", 0, 0), pin("b", 0, 1), pin("d", 0, 3, draggable: true),
                              pin("h", 0, 4, visible: false), pin("hd", 0, 5, draggable: true, visible: false)], now: 0)
        var s = layer.stats(now: 0)
        #expect(s.staticMarkers == 2 && s.liveMarkers == 2 && s.hiddenMarkers == 2 && s.mode == .native)
        _ = try layer.upsert([pin("c", 0, 2)], now: 0)
        #expect(layer.mode(now: 0) == .tiled)
        _ = layer.remove(ids: ["c"])
        #expect(layer.mode(now: 0) == .native)
        _ = try layer.upsert([pin("h", 0, 4)], now: 0)   // hidden -> visible
        #expect(layer.mode(now: 0) == .tiled)
        _ = try layer.upsert([pin("h", 0, 4, draggable: true)], now: 0)
        #expect(layer.mode(now: 0) == .native)
        try layer.setOptions(TilingOptions(minMarkerCount: 2))
        #expect(layer.mode(now: 0) == .tiled)
        try layer.setOptions(TilingOptions(enabled: false, minMarkerCount: 2))
        #expect(layer.mode(now: 0) == .native)
        s = layer.stats(now: 0)
        #expect(s.markers == 5 && s.staticMarkers == 2 && s.liveMarkers == 3 && s.hiddenMarkers == 1)
        #expect(s.approximateBytes > 0)
    }

    @Test func animationsExpireByNow() throws {
        var layer = try MarkerLayer(options: TilingOptions(minMarkerCount: 2))
        _ = try layer.upsert([pin("a", 0, 0, animEnd: 1000), pin("b", 0, 0.001, animEnd: 2000),
                              pin("c", 0, 0.002, animEnd: 500)], now: 600)   // c's animation already over
        #expect(layer.marker(id: "c")?.animation == nil)
        let bounds = GeoBounds(west: -1, south: -1, east: 1, north: 1)
        var q = try layer.queryViewport(bounds: bounds, zoom: 10, now: 600)
        #expect(q.mode == .native && q.liveInView == 2 && q.staticInView == 1 && q.markers.count == 3)
        // At 1000 "a" is static although expireAnimations has not run.
        q = try layer.queryViewport(bounds: bounds, zoom: 10, now: 1000)
        #expect(q.mode == .tiled && q.liveInView == 1 && q.staticInView == 2 && q.markers.map(\.id) == ["b"])
        #expect(layer.stats(now: 1000).staticMarkers == 2 && layer.stats(now: 1000).liveMarkers == 1)
        #expect(try layer.hitTest(point: LatLng(latitude: 0, longitude: 0), zoom: 10, now: 1000).first(where: { $0.marker.id == "a" })?.tiled == true)
        #expect(layer.tileMarkers(TileID.containing(LatLng(latitude: 0, longitude: 0), zoom: 10), now: 1000).map(\.id).sorted() == ["a", "c"])
        // Re-upsert "a" with a new end before it is expired: the stale heap entry must not expire it.
        _ = try layer.upsert([pin("a", 0, 0, animEnd: 5000)], now: 1000)
        let v = layer.version
        #expect(layer.expireAnimations(now: 1999) == 0 && layer.version == v)
        #expect(layer.expireAnimations(now: 2000) == 1 && layer.version == v + 1)
        #expect(layer.marker(id: "b")?.animation == nil)
        #expect(layer.stats(now: 2000).liveMarkers == 1)
        #expect(layer.nextAnimationEnd == 5000)
        #expect(layer.expireAnimations(now: 10_000) == 1)
        #expect(layer.stats(now: 10_000).liveMarkers == 0 && layer.stats(now: 10_000).staticMarkers == 3)
    }

    @Test func drags() throws {
        var layer = try MarkerLayer()
        _ = try layer.upsert([pin("d", 10, 10, draggable: true), pin("s", 0, 0)], now: 0)
        #expect(throws: MarkerdCoreError.notDraggable(id: "s")) { try layer.beginDrag(id: "s") }
        #expect(throws: MarkerdCoreError.markerNotFound(id: "x")) { try layer.beginDrag(id: "x") }
        let (d1, m) = try layer.beginDrag(id: "d")
        #expect(m.id == "d" && d1.description == "drag-1" && DragID("drag-1") == d1)
        #expect(throws: MarkerdCoreError.alreadyDragging(id: "d", dragID: d1)) { try layer.beginDrag(id: "d") }
        try layer.dragTo(d1, LatLng(latitude: 11, longitude: 11))
        try layer.dragTo(d1, LatLng(latitude: 12, longitude: 12))
        #expect(layer.marker(id: "d")?.position == LatLng(latitude: 12, longitude: 12))
        #expect(try layer.cancelDrag(d1).position == LatLng(latitude: 10, longitude: 10))
        #expect(throws: MarkerdCoreError.dragNotFound(d1)) { try layer.dragTo(d1, LatLng(latitude: 1, longitude: 1)) }
        let (d2, _) = try layer.beginDrag(id: "d")
        try layer.dragTo(d2, LatLng(latitude: 20, longitude: 20))
        #expect(try layer.endDrag(d2).position == LatLng(latitude: 20, longitude: 20))
        let (d3, _) = try layer.beginDrag(id: "d")
        #expect(try layer.endDrag(d3, at: LatLng(latitude: 30, longitude: 30)).position == LatLng(latitude: 30, longitude: 30))
        // Removing a marker ends its drag; so does making it non-draggable.
        let (d4, _) = try layer.beginDrag(id: "d")
        _ = layer.remove(ids: ["d"])
        #expect(throws: MarkerdCoreError.dragNotFound(d4)) { try layer.endDrag(d4) }
        _ = try layer.upsert([pin("d", 10, 10, draggable: true)], now: 0)
        let (d5, _) = try layer.beginDrag(id: "d")
        _ = try layer.upsert([pin("d", 10, 10, draggable: true)], now: 0)
        #expect(layer.draggedMarkerID(d5) == "d")
        _ = try layer.upsert([pin("d", 10, 10)], now: 0)
        #expect(layer.draggedMarkerID(d5) == nil && layer.activeDragCount == 0)
    }

    @Test func hitTestTopmostFirst() throws {
        var layer = try MarkerLayer()
        // Same spot, equal z: southern (larger y) on top, then id.
        _ = try layer.upsert([pin("n", 0.0001, 0), pin("s", 0, 0), pin("s2", 0, 0), pin("top", 0.0003, 0, z: 1),
                              pin("hidden", 0, 0, visible: false), pin("noclick", 0, 0, clickable: false)], now: 0)
        let hits = try layer.hitTest(point: LatLng(latitude: 0, longitude: 0), zoom: 16, now: 0)
        #expect(hits.map(\.marker.id) == ["top", "s2", "s", "n"])
        #expect(try layer.hitTest(point: LatLng(latitude: 0, longitude: 0), zoom: 16, maxResults: 2, now: 0).map(\.marker.id) == ["top", "s2"])
        // Pin is 48 px tall above its tip: a point 40 px north hits, 70 px north misses, 60 px hits with tolerance 14.
        let u = Mercator.worldUnitsPerPixel(zoom: 16)
        func north(_ px: Double) -> LatLng { LatLng(latitude: Mercator.latitude(worldY: Mercator.worldY(latitude: 0) - px * u), longitude: 0) }
        #expect(try layer.hitTest(point: north(40), zoom: 16, tolerancePx: 0, now: 0).count == 4)
        #expect(try layer.hitTest(point: north(60), zoom: 16, tolerancePx: 0, now: 0).map(\.marker.id) == ["top"])
        #expect(try layer.hitTest(point: north(60), zoom: 16, now: 0).count == 4)
        #expect(try layer.hitTest(point: north(90), zoom: 16, density: 3, now: 0).isEmpty)
    }

    @Test func antimeridianAndPoles() throws {
        var layer = try MarkerLayer()
        _ = try layer.upsert([pin("east", 0, 180), pin("west", 0, -179.99999), pin("north", 85.05112878, 10),
                              pin("south", -85.05112878, 10)], now: 0)
        let q = try layer.queryViewport(bounds: GeoBounds(west: 179, south: -1, east: -179, north: 1), zoom: 8, now: 0)
        #expect(Set(q.markers.map(\.id)) == ["east", "west"])
        // A pin just west of the antimeridian reaches east over it at low zoom.
        let q2 = try layer.queryViewport(bounds: GeoBounds(west: -180, south: 0.1, east: -179.9, north: 10), zoom: 2, now: 0)
        #expect(Set(q2.markers.map(\.id)) == ["east", "west"])
        let q3 = try layer.queryViewport(bounds: GeoBounds(west: 0, south: 80, east: 20, north: 90), zoom: 3, now: 0)
        #expect(q3.markers.map(\.id) == ["north"])
        let q4 = try layer.queryViewport(bounds: GeoBounds(west: 0, south: -90, east: 20, north: -85), zoom: 3, now: 0)
        #expect(q4.markers.map(\.id) == ["south"])
        #expect(try layer.hitTest(point: LatLng(latitude: 0.001, longitude: -180), zoom: 10, now: 0).count == 2)
    }
}

import Foundation
import MarkerdAPI
import MarkerdService
import MarkerdTestSupport
import Synchronization
import Testing

/// Records every notice the service delivers, in order.
final class RecordingFenceSink: FenceEventSink {
    let notices = Mutex<[FenceNotice]>([])
    func deliver(_ n: [FenceNotice]) { notices.withLock { $0 += n } }
    /// The events since the last call, as (fence, kind, marker).
    func take() -> [(String, V1.FenceEventKind, String)] {
        notices.withLock { n in
            defer { n.removeAll() }
            return n.map { ($0.event.fenceID, $0.event.kind, $0.event.markerID) }
        }
    }
}

/// Geofences through the service: CreateFence / DeleteFence / ListFences (paging, validation
/// with field violations), the events of a scripted sequence of changes (ENTER, INSIDE, EXIT,
/// CROSS, attribute filters, removal, ClearLayer), and durability (journal and snapshot,
/// inside-sets rebuilt on restart without spurious ENTERs).
@Suite struct FenceServiceTests {
    typealias S = ClusterTestService

    static func fence(_ id: String, _ shape: V1.Fence.Shape, _ detect: [V1.FenceEventKind] = [.enter, .exit, .inside, .cross],
                      filter: V1.FenceFilter? = nil) -> V1.Fence {
        var f = V1.Fence()
        f.fenceID = id
        f.shape = shape
        f.detect = detect
        f.filter = filter
        return f
    }

    static let square = V1.Fence.Shape.bounds(V1.Bounds(west: 0, south: 0, east: 1, north: 1))

    @discardableResult
    static func create(_ s: MarkerService, _ layer: String, _ f: V1.Fence) throws -> V1.CreateFenceResponse {
        try mutate(s, .createFence, V1.CreateFenceRequest(layerID: layer, fence: f))
    }

    static func move(_ s: MarkerService, _ id: String, _ lat: Double, _ lng: Double) throws -> UInt64 {
        let r: V1.MoveMarkersResponse = try mutate(s, .moveMarkers, V1.MoveMarkersRequest(layerID: "L", moves: [
            V1.MarkerMove(id: id, position: V1.LatLng(latitude: lat, longitude: lng))]))
        return r.layerVersion
    }

    static func failure(_ body: () throws -> Void) -> RPCError? {
        do { try body(); return nil } catch let e as RPCError { return e } catch { return nil }
    }

    @Test func scriptedChangesRaiseTheirEventsInOrder() throws {
        let s = S()
        let sink = RecordingFenceSink()
        s.service.fenceSinks.attach(sink)
        try s.createLayer("L")
        try Self.create(s.service, "L", Self.fence("zone", Self.square))
        try Self.create(s.service, "L", Self.fence("taxis", .circle(V1.FenceCircle(center: V1.LatLng(latitude: 10, longitude: 179.9), radiusMeters: 50_000)),
                                                   [.enter, .exit], filter: V1.FenceFilter(attribute: "kind", value: "taxi")))
        try s.upsert("L", [S.marker("a", lat: 0.5, lng: -0.5)])
        #expect(sink.take().isEmpty)
        let v = try Self.move(s.service, "a", 0.5, 0.5)
        let entered = try #require(sink.notices.withLock { $0.first })
        #expect(entered.event.kind == .enter && entered.event.layerID == "L" && entered.event.layerVersion == v && entered.event.atUnixMs > 0)
        let at = try #require(entered.event.position)
        #expect(abs(at.latitude - 0.5) < 1e-6 && abs(at.longitude - 0.5) < 1e-6)
        #expect(sink.take().map(\.1) == [.enter])
        _ = try Self.move(s.service, "a", 0.6, 0.6)
        #expect(sink.take().map(\.1) == [.inside])
        _ = try Self.move(s.service, "a", 0.5, 2)
        #expect(sink.take().map(\.1) == [.exit])
        // Outside to outside straight through the square: CROSS. Above it: nothing.
        _ = try Self.move(s.service, "a", 0.5, -2)
        #expect(sink.take().map(\.1) == [.cross])
        _ = try Self.move(s.service, "a", 3, 2)
        #expect(sink.take().isEmpty)

        // The filter: a bus inside the circle (across the antimeridian) is not in it until it is a taxi.
        try s.upsert("L", [S.marker("b", lat: 10, lng: -179.9, attributes: ["kind": "bus"])])
        #expect(sink.take().isEmpty)
        _ = try mutate(s.service, .updateMarkers, V1.UpdateMarkersRequest(layerID: "L", updates: [
            V1.MarkerUpdate(id: "b", marker: V1.Marker(attributes: ["kind": "taxi"]), paths: ["attributes"])]), as: V1.UpdateMarkersResponse.self)
        let taxi = sink.take()
        #expect(taxi.map(\.0) == ["taxis"] && taxi.map(\.1) == [.enter] && taxi.map(\.2) == ["b"])
        s.service.fenceSinks.attach(RecordingFenceSink())  // a second sink does not change what the first gets
        try s.remove("L", ["b"])
        #expect(sink.take().map(\.1) == [.exit])

        // ClearLayer: every marker inside leaves; a deleted fence raises nothing.
        _ = try Self.move(s.service, "a", 0.5, 0.5)
        #expect(sink.take().map(\.1) == [.enter])
        _ = try mutate(s.service, .clearLayer, V1.ClearLayerRequest(layerID: "L"), as: V1.ClearLayerResponse.self)
        #expect(sink.take().map { "\($0.0) \($0.2)" } == ["zone a"])
        _ = try mutate(s.service, .deleteFence, V1.DeleteFenceRequest(layerID: "L", fenceID: "zone"), as: V1.DeleteFenceResponse.self)
        try s.upsert("L", [S.marker("c", lat: 0.5, lng: 0.5)])
        #expect(sink.take().isEmpty)
    }

    @Test func createListDeleteAndTheirErrors() throws {
        let s = S()
        try s.createLayer("L")
        try s.createLayer("M")
        try s.upsert("L", [S.marker("in", lat: 0.5, lng: 0.5), S.marker("out", lat: 5, lng: 5)])
        let created = try Self.create(s.service, "L", Self.fence("e", Self.square))
        #expect(created.fence?.insideCount == 1 && created.fence?.layerID == "L")
        for id in ["a", "d", "c", "b"] { try Self.create(s.service, "L", Self.fence(id, Self.square, [.exit])) }
        #expect(Self.failure { try Self.create(s.service, "L", Self.fence("a", Self.square)) }?.code == .alreadyExists)
        #expect(Self.failure { try Self.create(s.service, "nope", Self.fence("a", Self.square)) }?.code == .notFound)

        var ids: [String] = []
        var request = V1.ListFencesRequest(layerID: "L", pageSize: 2)
        var pages = 0
        repeat {
            let page = try s.service.listFences(request)
            #expect(page.fences.count <= 2 && page.fences.allSatisfy { $0.layerID == "L" && $0.insideCount == 1 })
            ids += page.fences.map(\.fenceID)
            request.pageToken = page.nextPageToken
            pages += 1
        } while !request.pageToken.isEmpty && pages < 10
        #expect(ids == ["a", "b", "c", "d", "e"])
        let first = try s.service.listFences(V1.ListFencesRequest(layerID: "L", pageSize: 2))
        let wrongLayer = Self.failure { _ = try s.service.listFences(V1.ListFencesRequest(layerID: "M", pageToken: first.nextPageToken)) }
        #expect(wrongLayer?.code == .invalidArgument && wrongLayer?.fieldViolations.first?.field == "page_token")
        #expect(Self.failure { _ = try s.service.listFences(V1.ListFencesRequest(layerID: "L", pageSize: 1001)) }?.fieldViolations.first?.field == "page_size")

        _ = try mutate(s.service, .deleteFence, V1.DeleteFenceRequest(layerID: "L", fenceID: "c"), as: V1.DeleteFenceResponse.self)
        #expect(try s.service.listFences(V1.ListFencesRequest(layerID: "L")).fences.map(\.fenceID) == ["a", "b", "d", "e"])
        #expect(Self.failure { _ = try mutate(s.service, .deleteFence, V1.DeleteFenceRequest(layerID: "L", fenceID: "c"), as: V1.DeleteFenceResponse.self) }?.code == .notFound)

        // Every invalid input is INVALID_ARGUMENT naming its field.
        func violation(_ f: V1.Fence, layer: String = "L") -> String? {
            Self.failure { try Self.create(s.service, layer, f) }.flatMap { $0.code == .invalidArgument ? $0.fieldViolations.first?.field : "not INVALID_ARGUMENT: \($0)" }
        }
        let p = V1.LatLng(latitude: 0, longitude: 0)
        #expect(violation(Self.fence("x", .circle(V1.FenceCircle(center: p, radiusMeters: .nan)))) == "fence.circle.radius_meters")
        #expect(violation(Self.fence("x", .circle(V1.FenceCircle(center: p, radiusMeters: 1e308)))) == "fence.circle.radius_meters")
        #expect(violation(Self.fence("x", .circle(V1.FenceCircle(radiusMeters: 10)))) == "fence.circle.center")
        #expect(violation(Self.fence("x", .bounds(V1.Bounds(west: .infinity, south: 0, east: 1, north: 1)))) == "fence.bounds.west")
        #expect(violation(Self.fence("x", .polygon(V1.FencePolygon(rings: [V1.FenceRing(points: [p, V1.LatLng(latitude: 1, longitude: 1)])])))) == "fence.polygon.rings[0].points")
        #expect(violation(Self.fence("x", .polygon(V1.FencePolygon(rings: [V1.FenceRing(points: [p, V1.LatLng(latitude: 1, longitude: .nan), V1.LatLng(latitude: 1, longitude: 0)])]))))
                == "fence.polygon.rings[0].points[1].longitude")
        var noShape = Self.fence("x", Self.square)
        noShape.shape = nil
        #expect(violation(noShape) == "fence.shape")
        #expect(violation(Self.fence("x", Self.square, [])) == "fence.detect")
        #expect(violation(Self.fence("x", Self.square, [.unspecified])) == "fence.detect[0]")
        #expect(violation(Self.fence("x", Self.square, [.enter, .enter])) == "fence.detect[1]")
        #expect(violation(Self.fence("bad id", Self.square)) == "fence.fence_id")
        var otherLayer = Self.fence("x", Self.square)
        otherLayer.layerID = "M"
        #expect(violation(otherLayer) == "fence.layer_id")
        var hook = Self.fence("x", Self.square)
        hook.webhook = V1.FenceWebhook(url: "ftp://example.com/")
        #expect(violation(hook) == "fence.webhook.url")
        hook.webhook = V1.FenceWebhook(url: "http://127.0.0.1:9/hook", secretName: "no spaces")
        #expect(violation(hook) == "fence.webhook.secret_name")
        #expect(Self.failure { _ = try mutate(s.service, .createFence, V1.CreateFenceRequest(layerID: "L"), as: V1.CreateFenceResponse.self) }?.fieldViolations.first?.field == "fence")
        #expect(try s.service.listFences(V1.ListFencesRequest(layerID: "L")).fences.count == 4)
    }

    /// Fences survive restarts: from the journal over a snapshot written before any fence existed
    /// (as an older markerd's snapshots have no fence sections), then from a snapshot with fence
    /// sections. Inside-sets are rebuilt from the markers: a marker inside before the restart
    /// raises INSIDE (not ENTER) on its next move, and a resent CreateFence applies nothing.
    @Test func fencesSurviveRestartsAndInsideSetsAreRebuilt() throws {
        let (config, dir) = temporaryDurableConfiguration("fences")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var s = try MarkerService.open(configuration: config)
        try makeLayer(s, "L")
        try upsert(s, "L", [S.marker("in", lat: 0.5, lng: 0.5), S.marker("out", lat: 5, lng: 5)])
        _ = try s.createSnapshot(V1.CreateSnapshotRequest())
        let key = "fence-create-1"
        func createZone(_ s: MarkerService) throws -> [UInt8] {
            let done = DispatchSemaphore(value: 0)
            let result = Mutex<Result<[UInt8], RPCError>?>(nil)
            s.mutate(.createFence, payload: V1.CreateFenceRequest(layerID: "L", fence: Self.fence("zone", Self.square)).serializedBytes(),
                     context: CallContext(method: MutationKind.createFence.methodName, idempotencyKey: key)) { r in
                result.withLock { $0 = r }
                done.signal()
            }
            done.wait()
            return try result.withLock { $0! }.get()
        }
        let first = try createZone(s)
        try Self.create(s, "L", Self.fence("ring", .polygon(V1.FencePolygon(rings: [
            V1.FenceRing(points: [V1.LatLng(latitude: -3, longitude: -3), V1.LatLng(latitude: -3, longitude: 3), V1.LatLng(latitude: 3, longitude: 3), V1.LatLng(latitude: 3, longitude: -3)]),
            V1.FenceRing(points: [V1.LatLng(latitude: -1, longitude: -1), V1.LatLng(latitude: -1, longitude: 0.2), V1.LatLng(latitude: 0.2, longitude: 0.2), V1.LatLng(latitude: 0.2, longitude: -1)]),
        ]))))
        for round in ["journal over a fenceless snapshot", "snapshot with fences"] {
            s.close()
            s = try MarkerService.open(configuration: config)
            let sink = RecordingFenceSink()
            s.fenceSinks.attach(sink)
            let listed = try s.listFences(V1.ListFencesRequest(layerID: "L")).fences
            #expect(listed.map(\.fenceID) == ["ring", "zone"], "\(round)")
            #expect(listed.map(\.insideCount) == [1, 1], "\(round)")
            #expect(listed.last?.shape == Self.square, "\(round)")
            #expect(try createZone(s) == first, "\(round): the resent CreateFence gets its first reply")
            #expect(sink.take().isEmpty, "\(round): recovery raised events")
            _ = try Self.move(s, "in", 0.55, 0.55)
            #expect(sink.take().map { "\($0.0) \($0.1)" } == ["ring \(V1.FenceEventKind.inside)", "zone \(V1.FenceEventKind.inside)"], "\(round)")
            _ = try Self.move(s, "in", 0.5, 0.5)
            _ = sink.take()
            _ = try s.createSnapshot(V1.CreateSnapshotRequest())
        }
        s.close()
    }
}

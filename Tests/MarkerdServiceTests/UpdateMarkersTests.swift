import Foundation
import MarkerdAPI
@testable import MarkerdService
import Synchronization
import Testing

/// UpdateMarkers: partial updates set the fields their paths name and keep every other field,
/// all or nothing per batch, NOT_FOUND for ids not in the layer, INVALID_ARGUMENT naming the
/// path or value at fault; journaled and replayed to the same markers; idempotent per key.
@Suite struct UpdateMarkersTests {
    typealias S = ClusterTestService

    static func full(_ id: String) -> V1.Marker {
        var m = S.marker(id, lat: 48.85, lng: 2.35, attributes: ["name": "Paris", "kind": "city"])
        m.zIndex = 3
        m.label = V1.MarkerLabel(text: "old", priority: 2, color: 0xFF00_00FF)
        m.extra = [1, 2, 3]
        m.icon = .pin(V1.DefaultPin(fillColor: 0xFF00_FF00, scale: 1.5))
        return m
    }

    static func update(_ s: S, _ layer: String, _ updates: [V1.MarkerUpdate]) throws -> V1.UpdateMarkersResponse {
        try s.mutate(.updateMarkers, V1.UpdateMarkersRequest(layerID: layer, updates: updates), as: V1.UpdateMarkersResponse.self)
    }

    static func get(_ s: S, _ layer: String, _ ids: [String]) throws -> [V1.Marker] {
        try s.service.getMarkers(V1.GetMarkersRequest(layerID: layer, ids: ids)).markers
    }

    @Test func oneLabelChangesAndEverythingElseStays() throws {
        let s = S()
        try s.createLayer("L")
        try s.upsert("L", [Self.full("a"), Self.full("b")])
        let before = try Self.get(s, "L", ["a", "b"])
        let r = try Self.update(s, "L", [V1.MarkerUpdate(id: "a", marker: V1.Marker(label: V1.MarkerLabel(text: "new")), paths: ["label.text"])])
        #expect(r.updatedCount == 1 && r.layerVersion > 0)
        let after = try Self.get(s, "L", ["a", "b"])
        var expected = before[0]
        expected.label?.text = "new"
        #expect(after[0] == expected)
        #expect(after[1] == before[1])
    }

    @Test func eachPathSetsItsFieldAndUnsetValuesReset() throws {
        let s = S()
        try s.createLayer("L")
        try s.upsert("L", [Self.full("a")])
        let before = try #require(Self.get(s, "L", ["a"]).first)
        var new = V1.Marker()
        new.position = V1.LatLng(latitude: 10, longitude: 20)
        new.zIndex = 9
        new.visible = false
        new.attributes = ["name": "Berlin"]
        _ = try Self.update(s, "L", [V1.MarkerUpdate(id: "a", marker: new, paths: ["position", "z_index", "visible", "attributes", "extra", "label"])])
        let m = try #require(Self.get(s, "L", ["a"]).first)
        #expect(m.position == V1.LatLng(latitude: 10, longitude: 20) && m.zIndex == 9 && m.visible == false)
        #expect(m.attributes == ["name": "Berlin"] && m.extra.isEmpty && m.label == nil)
        #expect(m.icon == before.icon && m.anchor == before.anchor && m.clickable == true && m.draggable == false)
    }

    @Test func batchesAreAllOrNothing() throws {
        let s = S()
        try s.createLayer("L")
        try s.upsert("L", [Self.full("a"), Self.full("b")])
        let before = try Self.get(s, "L", ["a", "b"])
        let relabel = V1.MarkerUpdate(id: "a", marker: V1.Marker(label: V1.MarkerLabel(text: "x")), paths: ["label.text"])
        func error(_ updates: [V1.MarkerUpdate]) -> RPCError? {
            do { _ = try Self.update(s, "L", updates); return nil } catch { return error as? RPCError }
        }
        let missing = error([relabel, V1.MarkerUpdate(id: "ghost", marker: V1.Marker(), paths: ["z_index"])])
        #expect(missing?.code == .notFound && missing?.message.contains("ghost") == true)
        let unknown = error([relabel, V1.MarkerUpdate(id: "b", marker: V1.Marker(), paths: ["z_index", "colour"])])
        #expect(unknown?.code == .invalidArgument && unknown?.fieldViolations.map(\.field) == ["updates[1].paths[1]"])
        let bad = error([relabel, V1.MarkerUpdate(id: "b", marker: V1.Marker(position: V1.LatLng(latitude: 95, longitude: 0)), paths: ["position"])])
        #expect(bad?.code == .invalidArgument && bad?.fieldViolations.map(\.field) == ["updates[1].marker.position.latitude"])
        #expect(bad?.message.hasPrefix(#"invalid updates[1] (id "b").position.latitude"#) == true, "\(String(describing: bad))")
        for (updates, field) in [
            ([V1.MarkerUpdate(id: "a", paths: [])], "updates[0].paths"),
            ([V1.MarkerUpdate(id: "a", paths: ["z_index", "z_index"])], "updates[0].paths[1]"),
            ([V1.MarkerUpdate(id: "a", paths: ["label", "label.text"])], "updates[0].paths[1]"),
            ([relabel, relabel], "updates[1].id"),
        ] {
            #expect(error(updates)?.fieldViolations.map(\.field) == [field])
        }
        #expect(try Self.get(s, "L", ["a", "b"]) == before)
    }

    @Test func aNewIconTakesItsDefaultAnchorUnlessTheAnchorIsSetToo() throws {
        let s = S()
        try s.createLayer("L")
        var m = Self.full("a")
        m.anchor = V1.Anchor(x: 0.25, y: 0.75)
        try s.upsert("L", [m])
        _ = try Self.update(s, "L", [V1.MarkerUpdate(id: "a", marker: V1.Marker(icon: .pin(V1.DefaultPin(scale: 2))), paths: ["icon"])])
        #expect(try Self.get(s, "L", ["a"]).first?.anchor == V1.Anchor(x: 0.5, y: 1))
        _ = try Self.update(s, "L", [V1.MarkerUpdate(id: "a", marker: V1.Marker(anchor: V1.Anchor(x: 0.1, y: 0.2)), paths: ["anchor"])])
        #expect(try Self.get(s, "L", ["a"]).first?.anchor == V1.Anchor(x: 0.1, y: 0.2))
    }

    @Test func journalReplaysUpdatesToTheSameMarkersAndKeysStayIdempotent() throws {
        let (config, dir) = temporaryDurableConfiguration("update-markers")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try MarkerService.open(configuration: config)
        try mutate(s, .createLayer, V1.CreateLayerRequest(layerID: "L"), as: V1.CreateLayerResponse.self)
        try mutate(s, .upsertMarkers, V1.UpsertMarkersRequest(layerID: "L", markers: (0..<50).map { Self.full("m\($0)") }),
                   as: V1.UpsertMarkersResponse.self)
        _ = try s.createSnapshot(V1.CreateSnapshotRequest())
        // After the snapshot: updates, one removed marker's update, a move and another update.
        let first = V1.UpdateMarkersRequest(layerID: "L", updates: (0..<10).map {
            V1.MarkerUpdate(id: "m\($0)", marker: V1.Marker(label: V1.MarkerLabel(text: "label \($0)")), paths: ["label.text"])
        })
        try mutate(s, .updateMarkers, first, as: V1.UpdateMarkersResponse.self)
        try mutate(s, .moveMarkers, V1.MoveMarkersRequest(layerID: "L", moves: [V1.MarkerMove(id: "m3", position: V1.LatLng(latitude: 1, longitude: 1))]),
                   as: V1.MoveMarkersResponse.self)
        try mutate(s, .updateMarkers, V1.UpdateMarkersRequest(layerID: "L", updates: [
            V1.MarkerUpdate(id: "m3", marker: V1.Marker(zIndex: 7, attributes: ["name": "moved"]), paths: ["z_index", "attributes"]),
        ]), as: V1.UpdateMarkersResponse.self)
        // The same key and bytes again: the first reply, nothing applied.
        let key = CallContext(method: MutationKind.updateMarkers.methodName, idempotencyKey: "relabel-once")
        let once = V1.UpdateMarkersRequest(layerID: "L", updates: [V1.MarkerUpdate(id: "m20", marker: V1.Marker(zIndex: 1), paths: ["z_index"])])
        func send() throws -> [UInt8] {
            let box = Mutex<Result<[UInt8], RPCError>?>(nil)
            let done = DispatchSemaphore(value: 0)
            s.mutate(.updateMarkers, payload: once.serializedBytes(), context: key) { r in box.withLock { $0 = r }; done.signal() }
            done.wait()
            return try box.withLock { $0! }.get()
        }
        let reply = try send()
        let version = try s.getLayer(V1.GetLayerRequest(layerID: "L")).layer!.version
        #expect(try send() == reply)
        #expect(try s.getLayer(V1.GetLayerRequest(layerID: "L")).layer!.version == version)
        let ids = (0..<50).map { "m\($0)" }
        let before = try s.getMarkers(V1.GetMarkersRequest(layerID: "L", ids: ids)).markers
        #expect(before[3].zIndex == 7 && before[3].position?.latitude == 1 && before[3].label?.text == "label 3")
        s.close()

        let recovered = try MarkerService.open(configuration: config)
        defer { recovered.close() }
        #expect(try recovered.getMarkers(V1.GetMarkersRequest(layerID: "L", ids: ids)).markers == before)
    }
}

import MarkerdAPI
@testable import MarkerdService
import Testing

/// INVALID_ARGUMENT errors name the request field at fault as a path (`RPCError.fieldViolations`,
/// copied into `Response.field_violations`), whether the service or the core found the fault.
@Suite struct FieldViolationTests {
    typealias S = ClusterTestService

    static func fields(_ body: () throws -> Void) -> [String]? {
        do {
            try body()
            return nil
        } catch let e as RPCError {
            #expect(e.code == .invalidArgument, "\(e)")
            #expect(e.fieldViolations.allSatisfy { $0.description == e.message }, "\(e)")
            return e.fieldViolations.map(\.field)
        } catch {
            return nil
        }
    }

    @Test func coreFieldsLoseTheMarkerIDButKeepTheirPath() {
        #expect(RPCError.fieldPath(#"markers[3] (id "bus-7").position.latitude"#) == "markers[3].position.latitude")
        #expect(RPCError.fieldPath(#"moves[0] (id "a") (id "b")").position"#) == "moves[0].position")
        #expect(RPCError.fieldPath(#"position (id "x")"#) == "position")
        #expect(RPCError.fieldPath("options.labels.font_size") == "options.labels.font_size")
        #expect(RPCError.fieldPath(#"markers[1] (id "unclosed"#) == #"markers[1] (id "unclosed"#)
    }

    @Test func invalidRequestsNameTheirField() throws {
        let s = S()
        try s.createLayer("L")
        func layer(_ edit: (inout V1.LayerOptions) -> Void) -> V1.CreateLayerRequest {
            var options = V1.LayerOptions()
            edit(&options)
            return V1.CreateLayerRequest(layerID: "new", options: options)
        }
        let cases: [(String, () throws -> Void)] = [
            ("layer_id", { _ = try s.mutate(.createLayer, V1.CreateLayerRequest(layerID: "a b"), as: V1.CreateLayerResponse.self) }),
            ("options.clustering.radius_px", {
                _ = try s.mutate(.createLayer, layer { $0.clustering = V1.ClusteringOptions(radiusPx: -1) }, as: V1.CreateLayerResponse.self)
            }),
            ("options.tiling.tile_size", {
                _ = try s.mutate(.createLayer, layer { $0.tiling = V1.TilingOptions(tileSize: 300) }, as: V1.CreateLayerResponse.self)
            }),
            ("options.labels.font_size", {
                _ = try s.mutate(.createLayer, layer { $0.labels = V1.LabelOptions(fontSize: 100) }, as: V1.CreateLayerResponse.self)
            }),
            ("markers[1].label.text", {
                var m = S.marker("b", lat: 1, lng: 1)
                m.label = V1.MarkerLabel(text: String(repeating: "x", count: 300))
                try s.upsert("L", [S.marker("a", lat: 1, lng: 1), m])
            }),
            ("moves[0].position.latitude", { try s.move("L", [("a", 95, 1)]) }),
            ("zoom", { _ = try s.service.getClusters(V1.GetClustersRequest(layerID: "L", bounds: S.world, zoom: 30)) }),
            ("density", { _ = try s.service.queryViewport(V1.QueryViewportRequest(layerID: "L", bounds: S.world, zoom: 3, density: 9)) }),
            ("bounds.north", {
                _ = try s.service.queryViewport(V1.QueryViewportRequest(layerID: "L", bounds: V1.Bounds(west: 0, south: 0, east: 1, north: .nan), zoom: 3))
            }),
            ("tile_size", { _ = try s.service.getTile(V1.GetTileRequest(layerID: "L", tileSize: 300)) }),
            ("y", { _ = try s.service.getPointTile(V1.GetPointTileRequest(layerID: "L", z: 1, x: 1, y: 2)) }),
            ("extent", { _ = try s.service.getPointTile(V1.GetPointTileRequest(layerID: "L", extent: 8)) }),
            ("page_size", { _ = try s.service.listLayers(V1.ListLayersRequest(pageSize: 5_000)) }),
        ]
        for (field, call) in cases {
            #expect(Self.fields(call) == [field], "\(field)")
        }
    }
}

import MarkerdTestSupport
import Foundation
import MarkerdAPI
import MarkerdClient
import Testing

/// The clustering and point-tile methods are routed as reads over NNG.
@Suite struct ClusterRPCTests {
    @Test("GetClusters, leaves, children, expansion zoom and GetPointTile over inproc://")
    func clusterMethodsAreRouted() throws {
        let s = try TestServer(.inproc)
        defer { s.stop() }
        let c = try s.client()
        _ = try createLayer(c, "c")
        _ = try c.upsertMarkers("c", (0..<20).map { i in marker("m\(i)", 35 + Double(i) * 1e-4, 139 + Double(i) * 1e-4) })
        let world = V1.Bounds(west: -180, south: -85, east: 180, north: 85)
        let r = try c.call("GetClusters", V1.GetClustersRequest(layerID: "c", bounds: world, zoom: 4), as: V1.GetClustersResponse.self)
        try #require(r.clusters.count == 1)
        #expect(r.clusters[0].markerCount == 20 && r.algorithm == .grid && r.layerVersion > 0)
        let id = r.clusters[0].id
        let leaves = try c.call("GetClusterLeaves", V1.GetClusterLeavesRequest(layerID: "c", clusterID: id), as: V1.GetClusterLeavesResponse.self)
        #expect(leaves.markers.count == 10)
        let children = try c.call("GetClusterChildren", V1.GetClusterChildrenRequest(layerID: "c", clusterID: id), as: V1.GetClusterChildrenResponse.self)
        #expect(children.clusters.reduce(0) { $0 + Int($1.markerCount) } + children.markers.count == 20)
        let ez = try c.call("GetClusterExpansionZoom", V1.GetClusterExpansionZoomRequest(layerID: "c", clusterID: id),
                            as: V1.GetClusterExpansionZoomResponse.self)
        #expect(ez.zoom == r.clusters[0].expansionZoom)
        let tile = try c.call("GetPointTile", V1.GetPointTileRequest(layerID: "c", z: 0, x: 0, y: 0, clustered: true), as: V1.GetPointTileResponse.self)
        #expect(!tile.mvt.isEmpty && tile.version == r.layerVersion)
        #expect(VectorTilePointLayer.decodeFirstLayer(tile.mvt)?.features.count == 1)
        do {
            _ = try c.call("GetClusterLeaves", V1.GetClusterLeavesRequest(layerID: "c", clusterID: 1234), as: V1.GetClusterLeavesResponse.self)
            Issue.record("expected NOT_FOUND")
        } catch {
            guard case .status(let code, let message, _) = error else { Issue.record("unexpected \(error)"); return }
            #expect(code == .notFound && message.hasPrefix("cluster 1234 does not exist in layer c at version"))
        }
    }
}

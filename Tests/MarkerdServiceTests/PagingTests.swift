import MarkerdAPI
import MarkerdService
import Testing

/// One paging convention (`page_size`, `page_token`, `next_page_token`) on ListLayers,
/// GetClusterLeaves and QueryViewport: pages cover every item once, sizes above the maximum and
/// malformed tokens are INVALID_ARGUMENT naming the field.
@Suite struct PagingTests {
    typealias S = ClusterTestService

    /// Every page of `first`, following next_page_token until it is empty.
    static func pages<R, P>(_ first: R, token: WritableKeyPath<R, String>, next: KeyPath<P, String>,
                            _ call: (R) throws -> P) throws -> [P] {
        var request = first, out: [P] = []
        repeat {
            let page = try call(request)
            out.append(page)
            request[keyPath: token] = page[keyPath: next]
        } while !request[keyPath: token].isEmpty && out.count < 1_000
        return out
    }

    static func violation(_ body: () throws -> Void) -> (code: V1.Code, fields: [String])? {
        do {
            try body()
            return nil
        } catch let e as RPCError {
            return (e.code, e.fieldViolations.map(\.field))
        } catch {
            return nil
        }
    }

    @Test func listLayersPagesInIDOrder() throws {
        let s = S()
        let ids = (0..<105).map { "layer-\(($0 * 37) % 105)" }
        for id in ids { try s.createLayer(id) }
        let small = try Self.pages(V1.ListLayersRequest(pageSize: 40), token: \.pageToken, next: \.nextPageToken) {
            try s.service.listLayers($0)
        }
        #expect(small.map(\.layers.count) == [40, 40, 25])
        #expect(small.flatMap(\.layers).map(\.id) == ids.sorted())
        // Default page: 100.
        let first = try s.service.listLayers(V1.ListLayersRequest())
        #expect(first.layers.count == 100 && !first.nextPageToken.isEmpty)
        // A page holds the layers after the token's id as they are now: a layer created meanwhile
        // that sorts after it comes; one that sorts before does not.
        try s.createLayer("layer-99x")
        try s.createLayer("a-first")
        let rest = try s.service.listLayers(V1.ListLayersRequest(pageToken: first.nextPageToken))
        #expect(rest.layers.map(\.id) == ids.sorted().suffix(5) + ["layer-99x"] && rest.nextPageToken.isEmpty)
    }

    @Test(arguments: [V1.ClusterAlgorithm.grid, .supercluster])
    func clusterLeavesPagesCoverEveryLeafOnce(algorithm: V1.ClusterAlgorithm) throws {
        let s = S()
        try s.createLayer("L", clustering: V1.ClusteringOptions(enabled: true, algorithm: algorithm))
        try s.upsert("L", (0..<25).map { S.marker("m\($0)", lat: 10 + Double($0) * 1e-5, lng: 10) })
        let clusters = try s.service.getClusters(V1.GetClustersRequest(layerID: "L", bounds: S.world, zoom: 3))
        try #require(clusters.clusters.count == 1)
        let id = clusters.clusters[0].id
        let pages = try Self.pages(V1.GetClusterLeavesRequest(layerID: "L", clusterID: id), token: \.pageToken, next: \.nextPageToken) {
            try s.service.getClusterLeaves($0)
        }
        #expect(pages.map(\.markers.count) == [10, 10, 5])
        let leaves = pages.flatMap(\.markers).map(\.id)
        #expect(Set(leaves) == Set((0..<25).map { "m\($0)" }) && leaves.count == 25)
        // A page exactly at the end has no next page.
        let whole = try s.service.getClusterLeaves(V1.GetClusterLeavesRequest(layerID: "L", clusterID: id, pageSize: 25))
        #expect(whole.markers.count == 25 && whole.nextPageToken.isEmpty)
        // A token is for its cluster only.
        let other = Self.violation {
            _ = try s.service.getClusterLeaves(V1.GetClusterLeavesRequest(layerID: "L", clusterID: id + 1, pageToken: pages[0].nextPageToken))
        }
        #expect(other?.code == .invalidArgument && other?.fields == ["page_token"])
    }

    @Test func pageSizesAboveTheMaximumAreInvalidArgumentNamingPageSize() throws {
        let s = S()
        try s.createLayer("L")
        let calls: [(String, () throws -> Void)] = [
            ("ListLayers", { _ = try s.service.listLayers(V1.ListLayersRequest(pageSize: 1_001)) }),
            ("GetClusterLeaves", { _ = try s.service.getClusterLeaves(V1.GetClusterLeavesRequest(layerID: "L", clusterID: 1, pageSize: 100_001)) }),
            ("QueryViewport", {
                _ = try s.service.queryViewport(V1.QueryViewportRequest(layerID: "L", bounds: S.world, zoom: 3, pageSize: 100_001))
            }),
        ]
        for (method, call) in calls {
            let v = Self.violation(call)
            #expect(v?.code == .invalidArgument && v?.fields == ["page_size"], "\(method)")
        }
        // The maxima themselves are fine.
        _ = try s.service.listLayers(V1.ListLayersRequest(pageSize: 1_000))
        _ = try s.service.queryViewport(V1.QueryViewportRequest(layerID: "L", bounds: S.world, zoom: 3, pageSize: 100_000))
    }

    @Test func malformedTokensAreInvalidArgumentNamingPageToken() throws {
        let s = S()
        try s.createLayer("L")
        let viewportToken = "s1.0.61"
        for token in ["garbage", "n1.", "n1.bad id", "l1.1.0", viewportToken] {
            let v = Self.violation { _ = try s.service.listLayers(V1.ListLayersRequest(pageToken: token)) }
            #expect(v?.code == .invalidArgument && v?.fields == ["page_token"], "ListLayers \(token)")
        }
        for token in ["garbage", "l1.zz.1", "l1.1.-1", "l1.01.1", "l1.1", "n1.L", viewportToken] {
            let v = Self.violation {
                _ = try s.service.getClusterLeaves(V1.GetClusterLeavesRequest(layerID: "L", clusterID: 1, pageToken: token))
            }
            #expect(v?.code == .invalidArgument && v?.fields == ["page_token"], "GetClusterLeaves \(token)")
        }
        for token in ["garbage", "n1.L", "l1.1.0"] {
            let v = Self.violation {
                _ = try s.service.queryViewport(V1.QueryViewportRequest(layerID: "L", bounds: S.world, zoom: 3, pageToken: token))
            }
            #expect(v?.code == .invalidArgument && v?.fields == ["page_token"], "QueryViewport \(token)")
        }
    }
}

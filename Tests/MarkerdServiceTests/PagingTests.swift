import MarkerdAPI
import MarkerdService
import MarkerdTestSupport
import Testing

/// One paging convention (`page_size`, `page_token`, `next_page_token`) on ListLayers,
/// GetClusterLeaves, QueryViewport and ListMarkers: pages cover every item once, sizes above the maximum and
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

    /// A TILED layer of static, live (draggable) and hidden markers with holes (removed markers'
    /// free slots), paged with ListMarkers at random page sizes: every marker exactly once, as
    /// GetMarkers gives it. While a client pages, markers moved or updated meanwhile still come
    /// exactly once, removed ones at most once, added ones at most once.
    @Test func listMarkersPagesCoverEveryMarkerOnce() throws {
        var rng = SplitMix64(seed: testSeed())
        let s = S()
        var tiling = V1.TilingOptions()
        tiling.minMarkerCount = 100
        var options = V1.LayerOptions()
        options.tiling = tiling
        _ = try s.mutate(.createLayer, V1.CreateLayerRequest(layerID: "L", options: options), as: V1.CreateLayerResponse.self)
        let markers = (0..<3_000).map { i in
            S.marker("m\(i)", lat: rng.unit() * 170 - 85, lng: rng.unit() * 360 - 180, visible: rng.next() % 4 != 0,
                     draggable: rng.next() % 5 == 0, attributes: ["n": "\(i)"])
        }
        for batch in stride(from: 0, to: markers.count, by: 500) { try s.upsert("L", Array(markers[batch..<batch + 500])) }
        let removed = Set(markers.indices.filter { _ in rng.next() % 6 == 0 }.map { markers[$0].id })
        try s.remove("L", Array(removed))
        let stats = try #require(try s.service.getLayerStats(V1.GetLayerStatsRequest(layerID: "L")).stats)
        try #require(stats.mode == .tiled && stats.staticMarkerCount > 0 && stats.liveMarkerCount > 0 && stats.hiddenMarkerCount > 0)
        let kept = markers.map(\.id).filter { !removed.contains($0) }

        func walk(_ between: (Int) throws -> Void = { _ in }) throws -> [V1.Marker] {
            var request = V1.ListMarkersRequest(layerID: "L"), out: [V1.Marker] = [], page = 0
            repeat {
                request.pageSize = UInt32(1 + rng.next() % 400)
                let r = try s.service.listMarkers(request)
                #expect(r.markers.count <= Int(request.pageSize))
                out += r.markers
                request.pageToken = r.nextPageToken
                page += 1
                try between(page)
            } while !request.pageToken.isEmpty && page < 10_000
            return out
        }
        let listed = try walk()
        #expect(mismatch(listed.map(\.id).sorted(), kept.sorted()) == nil)
        let byID = Dictionary(listed.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a })
        let got = try s.service.getMarkers(V1.GetMarkersRequest(layerID: "L", ids: kept)).markers
        #expect(got.count == kept.count && got.allSatisfy { byID[$0.id] == $0 })

        // Changes while paging: after the third page, move and update some markers, remove some
        // and add new ones.
        var changed: (moved: Set<String>, gone: Set<String>, added: Set<String>) = ([], [], [])
        let during = try walk { page in
            guard page == 3 else { return }
            let picked = kept.shuffled(using: &rng)
            changed.moved = Set(picked[0..<200])
            changed.gone = Set(picked[200..<400])
            changed.added = Set((0..<200).map { "new\($0)" })
            try s.move("L", changed.moved.sorted().prefix(100).map { ($0, 1, 2) })
            try s.upsert("L", changed.moved.sorted().suffix(100).map { S.marker($0, lat: 3, lng: 4, attributes: ["n": "updated"]) })
            try s.remove("L", Array(changed.gone))
            try s.upsert("L", changed.added.map { S.marker($0, lat: 5, lng: 6) })
        }
        var seen: [String: Int] = [:]
        for m in during { seen[m.id, default: 0] += 1 }
        #expect(seen.values.allSatisfy { $0 == 1 }, "a marker came twice")
        let stayed = kept.filter { !changed.gone.contains($0) }
        #expect(stayed.filter { seen[$0] == nil }.isEmpty, "markers that stayed in the layer are missing")
        #expect(Set(seen.keys).subtracting(kept).isSubset(of: changed.added))
    }

    /// A page looks at a bounded part of the layer's storage: in a layer whose first 70,000
    /// slots are free, the first page is empty but not the last; the next one holds the marker.
    @Test func listMarkersPagesAreBoundedInAMostlyEmptyLayer() throws {
        let s = S()
        try s.createLayer("L")
        let ids = (0..<70_001).map { "m\($0)" }
        for batch in stride(from: 0, to: 70_000, by: 10_000) {
            try s.upsert("L", ids[batch..<batch + 10_000].map { S.marker($0, lat: 1, lng: 1) })
        }
        try s.upsert("L", [S.marker(ids[70_000], lat: 1, lng: 1)])
        for batch in stride(from: 0, to: 70_000, by: 10_000) { try s.remove("L", Array(ids[batch..<batch + 10_000])) }
        let pages = try Self.pages(V1.ListMarkersRequest(layerID: "L", pageSize: 10), token: \.pageToken, next: \.nextPageToken) {
            try s.service.listMarkers($0)
        }
        #expect(pages.count == 2 && pages[0].markers.isEmpty && !pages[0].nextPageToken.isEmpty)
        #expect(pages.last?.markers.map(\.id) == [ids[70_000]])
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
            ("ListMarkers", { _ = try s.service.listMarkers(V1.ListMarkersRequest(layerID: "L", pageSize: 100_001)) }),
        ]
        for (method, call) in calls {
            let v = Self.violation(call)
            #expect(v?.code == .invalidArgument && v?.fields == ["page_size"], "\(method)")
        }
        // The maxima themselves are fine.
        _ = try s.service.listLayers(V1.ListLayersRequest(pageSize: 1_000))
        _ = try s.service.queryViewport(V1.QueryViewportRequest(layerID: "L", bounds: S.world, zoom: 3, pageSize: 100_000))
        _ = try s.service.listMarkers(V1.ListMarkersRequest(layerID: "L", pageSize: 100_000))
        // 0 means 1,000.
        try s.upsert("L", (0..<1_001).map { S.marker("m\($0)", lat: 1, lng: 1) })
        let first = try s.service.listMarkers(V1.ListMarkersRequest(layerID: "L"))
        #expect(first.markers.count == 1_000 && !first.nextPageToken.isEmpty)
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
        for token in ["garbage", "m1.", "m1.1", "m1.zz.L", "m1.-1.L", "m1.01.L", "m1.+1.L", "m1..L", "m1.1.M", "m1.1.L.", "n1.L", "l1.1.0", viewportToken] {
            let v = Self.violation { _ = try s.service.listMarkers(V1.ListMarkersRequest(layerID: "L", pageToken: token)) }
            #expect(v?.code == .invalidArgument && v?.fields == ["page_token"], "ListMarkers \(token)")
        }
        // A well-formed token past the end is an empty last page.
        let past = try s.service.listMarkers(V1.ListMarkersRequest(layerID: "L", pageToken: "m1.7fffffffffffffff.L"))
        #expect(past.markers.isEmpty && past.nextPageToken.isEmpty)
    }
}

import Foundation
import MarkerdAPI
import MarkerdCore
import MarkerdService
import MarkerdTestSupport
import Synchronization
import Testing

/// A MarkerService with synchronous mutation helpers.
struct ClusterTestService {
    let service = MarkerService()
    private static let counter = Atomic<Int>(0)

    func mutate<Resp: ProtoMessage>(_ kind: MutationKind, _ request: some ProtoMessage, as: Resp.Type) throws -> Resp {
        let n = Self.counter.add(1, ordering: .relaxed).newValue
        let result = Mutex<Result<[UInt8], RPCError>?>(nil)
        let done = DispatchSemaphore(value: 0)
        service.mutate(kind, payload: request.serializedBytes(),
                       context: CallContext(method: kind.methodName, idempotencyKey: "k\(n)")) { r in
            result.withLock { $0 = r }
            done.signal()
        }
        done.wait()
        return try Resp(serializedBytes: try result.withLock { $0! }.get())
    }

    func createLayer(_ id: String, clustering: V1.ClusteringOptions? = nil) throws {
        var options = V1.LayerOptions()
        options.clustering = clustering
        _ = try mutate(.createLayer, V1.CreateLayerRequest(layerID: id, options: options), as: V1.CreateLayerResponse.self)
    }

    @discardableResult
    func upsert(_ layer: String, _ markers: [V1.Marker]) throws -> V1.UpsertMarkersResponse {
        try mutate(.upsertMarkers, V1.UpsertMarkersRequest(layerID: layer, markers: markers), as: V1.UpsertMarkersResponse.self)
    }

    func move(_ layer: String, _ moves: [(String, Double, Double)]) throws {
        let m = moves.map { V1.MarkerMove(id: $0.0, position: V1.LatLng(latitude: $0.1, longitude: $0.2)) }
        _ = try mutate(.moveMarkers, V1.MoveMarkersRequest(layerID: layer, moves: m), as: V1.MoveMarkersResponse.self)
    }

    func remove(_ layer: String, _ ids: [String]) throws {
        _ = try mutate(.removeMarkers, V1.RemoveMarkersRequest(layerID: layer, ids: ids), as: V1.RemoveMarkersResponse.self)
    }

    static func marker(_ id: String, lat: Double, lng: Double, visible: Bool = true, draggable: Bool = false,
                       attributes: [String: String] = [:]) -> V1.Marker {
        var m = V1.Marker()
        m.id = id
        m.position = V1.LatLng(latitude: lat, longitude: lng)
        m.visible = visible
        m.draggable = draggable
        m.attributes = attributes
        return m
    }

    static let world = V1.Bounds(west: -180, south: -85.06, east: 180, north: 85.06)
}

/// Cluster RPCs through the service: oracle comparisons, ids, errors, supercluster fixture.
@Suite struct ClusterServiceTests {
    typealias S = ClusterTestService

    /// A comparable form of a GetClusters answer: clusters (id, count, position, bounds, expansion zoom)
    /// and the ids of unclustered markers.
    struct View: Equatable {
        var clusters: [String]
        var markers: Set<String>
        init(_ r: V1.GetClustersResponse) {
            clusters = r.clusters.map { c in
                "\(c.id) n=\(c.markerCount) @\(c.position!.latitude),\(c.position!.longitude) b=\(c.bounds!.west),\(c.bounds!.south),\(c.bounds!.east),\(c.bounds!.north) ez=\(c.expansionZoom)"
            }
            markers = Set(r.markers.map(\.id))
        }
    }

    @Test func gridClustersMatchAFreshLayerAfterRandomChanges() throws {
        let seed = testSeed("ClusterServiceTests.gridClustersMatchAFreshLayerAfterRandomChanges")
        var rng = SplitMix64(seed: seed)
        let s = S()
        var clustering = V1.ClusteringOptions()
        clustering.enabled = true
        clustering.maxZoom = 14
        try s.createLayer("live", clustering: clustering)
        var truth: [String: V1.Marker] = [:]
        func randomMarker(_ id: String) -> V1.Marker {
            let hot = [(35.68, 139.76), (48.85, 2.35), (0.0, 179.99), (0.0, -179.99)][Int(rng.next() % 4)]
            let spread = [0.0, 0.001, 0.1, 5][Int(rng.next() % 4)]
            var lng = hot.1 + (rng.unit() - 0.5) * spread
            if lng > 180 { lng -= 360 } else if lng < -180 { lng += 360 }
            return S.marker(id, lat: hot.0 + (rng.unit() - 0.5) * spread, lng: lng,
                            visible: rng.next() % 6 != 0, draggable: rng.next() % 7 == 0)
        }
        for _ in 0..<400 {
            let id = "m\(rng.next() % 200)"
            switch rng.next() % 10 {
            case 0..<5:
                let m = randomMarker(id)
                try s.upsert("live", [m])
                truth[id] = m
            case 5..<8:
                if var m = truth[id] {
                    let p = V1.LatLng(latitude: rng.unit() * 160 - 80, longitude: rng.unit() * 360 - 180)
                    try s.move("live", [(id, p.latitude, p.longitude)])
                    m.position = p
                    truth[id] = m
                }
            default:
                try s.remove("live", [id])
                truth[id] = nil
            }
        }
        // from scratch: only the visible static markers, same options
        try s.createLayer("fresh", clustering: clustering)
        let statics = truth.values.filter { $0.visible != false && $0.draggable != true }.sorted { $0.id < $1.id }
        try s.upsert("fresh", statics)
        let liveVersion = try s.service.getLayer(V1.GetLayerRequest(layerID: "live")).layer!.version
        for z in [0, 1, 2, 3, 5, 8, 11, 14, 15, 18] {
            for bounds in [S.world, V1.Bounds(west: 170, south: -20, east: -170, north: 20), V1.Bounds(west: 139, south: 35, east: 140.5, north: 36)] {
                let a = try s.service.getClusters(V1.GetClustersRequest(layerID: "live", bounds: bounds, zoom: Double(z) + 0.7))
                let b = try s.service.getClusters(V1.GetClustersRequest(layerID: "fresh", bounds: bounds, zoom: Double(z)))
                #expect(View(a) == View(b), "zoom \(z) bounds \(bounds) seed \(seed)")
                #expect(a.layerVersion == liveVersion)
                #expect(a.algorithm == .grid)
                if bounds == S.world {
                    let total = a.clusters.reduce(0) { $0 + Int($1.markerCount) } + a.markers.count
                    #expect(total == statics.count, "counts add up at zoom \(z)")
                }
            }
        }
        // leaves, children and expansion zoom of every world cluster at zoom 3
        let z3 = try s.service.getClusters(V1.GetClustersRequest(layerID: "live", bounds: S.world, zoom: 3))
        for c in z3.clusters {
            var all: [String] = []
            var request = V1.GetClusterLeavesRequest(layerID: "live", clusterID: c.id, pageSize: 7)
            repeat {
                let page = try s.service.getClusterLeaves(request)
                #expect(page.markers.count == 7 || page.nextPageToken.isEmpty)
                all += page.markers.map(\.id)
                request.pageToken = page.nextPageToken
            } while !request.pageToken.isEmpty
            #expect(all.count == Int(c.markerCount) && Set(all).count == all.count)
            let ch = try s.service.getClusterChildren(V1.GetClusterChildrenRequest(layerID: "live", clusterID: c.id))
            #expect(ch.clusters.reduce(0) { $0 + Int($1.markerCount) } + ch.markers.count == Int(c.markerCount))
            let ez = try s.service.getClusterExpansionZoom(V1.GetClusterExpansionZoomRequest(layerID: "live", clusterID: c.id))
            #expect(ez.zoom == c.expansionZoom && ez.zoom > 3)
        }
    }

    /// The documented contract of grid GetClusters bounds, against brute force over random boxes:
    /// every marker inside the bounds comes back, alone or in the cluster of its cell, and nothing
    /// comes back from beyond the bounds grown by `GetClustersRequest`'s margin (4 cells a side:
    /// replies are written in blocks of 4 x 4 cells).
    @Test func gridClustersCoverTheBoundsWithinTheDocumentedMargin() throws {
        let seed = testSeed("ClusterServiceTests.gridClustersCoverTheBoundsWithinTheDocumentedMargin")
        var rng = SplitMix64(seed: seed)
        let s = S()
        var clustering = V1.ClusteringOptions()
        clustering.enabled = true
        try s.createLayer("c", clustering: clustering)
        let options = GridClusterOptions()  // the layer's: radius 60, extent 512, max zoom 16
        var markers: [V1.Marker] = []
        for i in 0..<5000 {
            let hot = [(48.85, 2.35), (35.68, 139.76), (0.0, 179.9), (-33.9, 151.2)][i % 4]
            let spread = [0.05, 1, 20][i % 3]
            var lng = hot.1 + (rng.unit() - 0.5) * spread
            if lng > 180 { lng -= 360 } else if lng < -180 { lng += 360 }
            markers.append(S.marker("m\(i)", lat: max(-85, min(85, hot.0 + (rng.unit() - 0.5) * spread)), lng: lng))
        }
        try s.upsert("c", markers)
        let world = Dictionary(uniqueKeysWithValues: markers.map { ($0.id, ClusterPoint(id: 0, longitude: $0.position!.longitude, latitude: $0.position!.latitude)) })
        var outside = 0, missing = 0, returned = 0
        var firstMissing: [String] = []
        for round in 0..<120 {
            let zoom = Int(rng.next() % 19)
            let hot = markers[Int(rng.next() % UInt64(markers.count))].position!
            let w = rng.unit() * 40 / Double(1 << min(zoom, 8)) + 0.001, h = rng.unit() * 30 / Double(1 << min(zoom, 8)) + 0.001
            var west = hot.longitude - w * rng.unit(), east = west + w
            if west < -180 { west += 360 }
            if east > 180 { east -= 360 }
            let south = max(-85, hot.latitude - h * rng.unit()), north = min(85, south + h)
            let bounds = V1.Bounds(west: west, south: south, east: east, north: north)
            let r = try V1.GetClustersResponse(serializedBytes: s.service.getClustersPayload(
                V1.GetClustersRequest(layerID: "c", bounds: bounds, zoom: Double(zoom))))
            // The bounds grown by 4 cells (of 2^-(zoom + k) world) a side; exact above max zoom.
            let box = ClusterBox(west: west, south: south, east: east, north: north)
            let k = options.cellsPerTileLog2
            let margin: UInt64 = zoom > options.maxZoom ? 0 : 4 << UInt64(32 - zoom - k)
            func near(_ p: ClusterPoint) -> Bool {
                let dy = p.y < box.minY ? UInt64(box.minY - p.y) : (p.y > box.maxY ? UInt64(p.y - box.maxY) : 0)
                let inX = box.minX <= box.maxX ? (p.x >= box.minX && p.x <= box.maxX) : (p.x >= box.minX || p.x <= box.maxX)
                let dx = inX ? 0 : min(UInt64(box.minX &- p.x), UInt64(p.x &- box.maxX))
                return dx <= margin && dy <= margin
            }
            var cellsReturned = Set<UInt64>()
            for c in r.clusters {
                cellsReturned.insert(c.id & ~(UInt64(1) << 63))  // less the bit that marks grid ids
                let p = try #require(c.position)
                if !near(ClusterPoint(id: 0, longitude: p.longitude, latitude: p.latitude)) { outside += 1 }
            }
            let markersReturned = Set(r.markers.map(\.id))
            for m in r.markers where !near(world[m.id]!) { outside += 1 }
            returned += r.clusters.count + r.markers.count
            for (id, p) in world where box.contains(x: p.x, y: p.y) {
                guard !markersReturned.contains(id) else { continue }
                let z = min(zoom, options.maxZoom)
                let cell = GridClusterID(zoom: z, cellX: p.x >> UInt32(32 - z - k), cellY: p.y >> UInt32(32 - z - k))
                if zoom > options.maxZoom || !cellsReturned.contains(cell.rawValue) {
                    missing += 1
                    if missing < 3 { firstMissing.append("round \(round): \(id) in \(bounds) at z\(zoom)") }
                }
            }
        }
        #expect(outside == 0, "\(outside) items beyond the margin (seed \(seed))")
        #expect(missing == 0, "\(missing) markers in bounds not returned (seed \(seed)), first: \(firstMissing)")
        #expect(returned > 1000)
    }

    /// A finite but huge latitude in GetClusters bounds (1e308: `lat * pi` overflows, and `sin` of
    /// infinity is NaN) once trapped converting NaN to an integer. Latitudes are clamped.
    @Test func hugeFiniteBoundsAreClamped() throws {
        let s = S()
        var grid = V1.ClusteringOptions()
        grid.enabled = true
        var superOptions = grid
        superOptions.algorithm = .supercluster
        try s.createLayer("g", clustering: grid)
        try s.createLayer("s", clustering: superOptions)
        try s.createLayer("e")
        try s.upsert("g", [S.marker("a", lat: 1, lng: 1)])
        try s.upsert("s", [S.marker("a", lat: 1, lng: 1)])
        for layer in ["g", "s", "e"] {
            for b in [V1.Bounds(west: -10, south: -10, east: 10, north: 1e308), V1.Bounds(west: -10, south: -1e308, east: 10, north: 10),
                      V1.Bounds(west: -1e308, south: -1e308, east: 1e308, north: 1e308), V1.Bounds(west: -10, south: -10, east: 10, north: .greatestFiniteMagnitude)] {
                let r = try s.service.getClusters(V1.GetClustersRequest(layerID: layer, bounds: b, zoom: 3))
                #expect(r.markers.map(\.id) == (layer == "e" ? [] : ["a"]), "\(layer) \(b)")
                let payload = try s.service.getClustersPayload(V1.GetClustersRequest(layerID: layer, bounds: b, zoom: 3))
                #expect(try V1.GetClustersResponse(serializedBytes: payload).markers.count == (layer == "e" ? 0 : 1))
            }
            for bad in [Double.nan, .infinity, -.infinity] {
                #expect(throws: RPCError.self) {
                    try s.service.getClusters(V1.GetClustersRequest(layerID: layer, bounds: V1.Bounds(west: -10, south: -10, east: 10, north: bad), zoom: 3))
                }
            }
        }
    }

    @Test func unknownAndOutdatedClusterIDsAreNotFound() throws {
        let s = S()
        try s.createLayer("L")
        try s.upsert("L", [S.marker("a", lat: 10, lng: 10), S.marker("b", lat: 10.0001, lng: 10.0001)])
        let r = try s.service.getClusters(V1.GetClustersRequest(layerID: "L", bounds: S.world, zoom: 5))
        try #require(r.clusters.count == 1 && r.markers.isEmpty)
        let id = r.clusters[0].id
        #expect(try s.service.getClusterLeaves(V1.GetClusterLeavesRequest(layerID: "L", clusterID: id)).markers.count == 2)
        try s.remove("L", ["b"])
        let version = try s.service.getLayer(V1.GetLayerRequest(layerID: "L")).layer!.version
        for bad in [id, 1234] {
            do {
                _ = try s.service.getClusterLeaves(V1.GetClusterLeavesRequest(layerID: "L", clusterID: bad))
                Issue.record("expected NOT_FOUND for \(bad)")
            } catch {
                #expect(error.code == .notFound)
                #expect(error.message == "cluster \(bad) does not exist in layer L at version \(version); it may have changed - query GetClusters again")
            }
            #expect(throws: RPCError.self) { try s.service.getClusterChildren(V1.GetClusterChildrenRequest(layerID: "L", clusterID: bad)) }
            #expect(throws: RPCError.self) {
                try s.service.getClusterExpansionZoom(V1.GetClusterExpansionZoomRequest(layerID: "L", clusterID: bad))
            }
        }
        #expect(throws: RPCError.self) { try s.service.getClusters(V1.GetClustersRequest(layerID: "L", bounds: S.world, zoom: 23)) }
        #expect(throws: RPCError.self) { try s.service.getClusters(V1.GetClustersRequest(layerID: "L", bounds: nil, zoom: 2)) }
        #expect(throws: RPCError.self) { try s.service.getClusters(V1.GetClustersRequest(layerID: "nope", bounds: S.world, zoom: 2)) }
    }

    // MARK: supercluster

    static func fixture(_ name: String) throws -> [String: Any] {
        let url = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("MarkerdCoreTests/Fixtures/\(name)")
        return try #require(try JSONSerialization.jsonObject(with: Data(contentsOf: url)) as? [String: Any])
    }

    static func superclusterOptions(radius: Float = 40) -> V1.ClusteringOptions {
        var c = V1.ClusteringOptions()
        c.algorithm = .supercluster
        c.radiusPx = radius
        return c
    }

    /// supercluster's tile pixel of a position at zoom 0, extent 512 (JavaScript Math.round).
    static func pixel(_ lat: Double, _ lng: Double) -> (Int, Int) {
        let x = lng / 360 + 0.5
        let s = sin(lat * .pi / 180)
        let y = min(1, max(0, 0.5 - 0.25 * log((1 + s) / (1 - s)) / .pi))
        return (Int((512 * x + 0.5).rounded(.down)), Int((512 * y + 0.5).rounded(.down)))
    }

    @Test func superclusterMatchesThePublishedFixture() throws {
        let s = S()
        try s.createLayer("places", clustering: Self.superclusterOptions())
        let all = try #require(try Self.fixture("places.json")["features"] as? [[String: Any]])
        // The last of the 163 features has no geometry: supercluster skips it but counts it in the
        // cluster-id offset (`id = (index << 5) + zoom + 1 + input count`); a layer cannot hold it,
        // so markerd's ids (input count 162) are the fixture's minus one. Everything else is equal.
        let features = all.filter { $0["geometry"] is [String: Any] }
        #expect(all.count == 163 && features.count == 162)
        let idOffset = all.count - features.count
        let markers: [V1.Marker] = features.enumerated().map { i, f in
            let c = (f["geometry"] as! [String: Any])["coordinates"] as! [Double]
            return S.marker("p\(i)", lat: c[1], lng: c[0])
        }
        try s.upsert("places", markers)
        let version = try s.service.getLayer(V1.GetLayerRequest(layerID: "places")).layer!.version
        let r = try s.service.getClusters(V1.GetClustersRequest(layerID: "places", bounds: S.world, zoom: 0))
        #expect(r.algorithm == .supercluster)
        #expect(r.layerVersion == version)

        // expected: the fixture's z0 tile without the wrapped copies in the buffer (x < 0 or x > 512)
        let tile = try #require(try Self.fixture("places-z0-0-0.json")["features"] as? [[String: Any]])
        var expected: [String] = []
        for f in tile {
            let g = (f["geometry"] as! [[Double]])[0]
            guard g[0] >= 0 && g[0] <= 512 else { continue }
            let tags = f["tags"] as! [String: Any]
            if (tags["cluster"] as? Bool) == true {
                expected.append("cluster \((tags["cluster_id"] as! NSNumber).intValue - idOffset) n=\((tags["point_count"] as! NSNumber).intValue) @\(Int(g[0])),\(Int(g[1]))")
            } else {
                expected.append("point @\(Int(g[0])),\(Int(g[1]))")
            }
        }
        var got: [String] = r.clusters.map { c in
            let p = Self.pixel(c.position!.latitude, c.position!.longitude)
            return "cluster \(c.id) n=\(c.markerCount) @\(p.0),\(p.1)"
        }
        got += r.markers.map { m in
            let p = Self.pixel(m.position!.latitude, m.position!.longitude)
            return "point @\(p.0),\(p.1)"
        }
        #expect(mismatch(got.sorted(), expected.sorted()) == nil)
        #expect(r.clusters.reduce(0) { $0 + Int($1.markerCount) } + r.markers.count == features.count)

        // leaves / children / expansion zoom agree with the core index on the same input
        let core = SuperclusterIndex(points: features.map {
            let c = ($0["geometry"] as! [String: Any])["coordinates"] as! [Double]
            return LatLng(latitude: c[1], longitude: c[0])
        })
        for c in r.clusters {
            let leaves = try s.service.getClusterLeaves(V1.GetClusterLeavesRequest(layerID: "places", clusterID: c.id, pageSize: 1000))
            let coreLeaves = try core.leaves(of: Int(c.id), limit: 1000)
            #expect(leaves.markers.map(\.id) == coreLeaves.map { "p\($0.id)" })
            let ez = try s.service.getClusterExpansionZoom(V1.GetClusterExpansionZoomRequest(layerID: "places", clusterID: c.id))
            #expect(Int(ez.zoom) == (try core.expansionZoom(of: Int(c.id))))
            #expect(ez.zoom == c.expansionZoom)
        }
        do {
            _ = try s.service.getClusterChildren(V1.GetClusterChildrenRequest(layerID: "places", clusterID: 99999))
            Issue.record("expected NOT_FOUND")
        } catch {
            #expect(error.code == .notFound && error.message.contains("at version \(version)"))
        }
    }

    @Test func superclusterSnapshotIsRebuiltInTheBackground() throws {
        let s = S()
        try s.createLayer("sc", clustering: Self.superclusterOptions())
        let v1 = try s.upsert("sc", [S.marker("a", lat: 1, lng: 1), S.marker("b", lat: 1.001, lng: 1.001)]).layerVersion
        let first = try s.service.getClusters(V1.GetClustersRequest(layerID: "sc", bounds: S.world, zoom: 3))
        #expect(first.clusters.count == 1 && first.layerVersion == v1)
        let v2 = try s.upsert("sc", [S.marker("c", lat: 1.002, lng: 1.002), S.marker("d", lat: -40, lng: 100)]).layerVersion
        // answers from the last snapshot until the debounced rebuild lands
        var latest = V1.GetClustersResponse()
        try waitUntil("the rebuild answers version \(v2)") {
            latest = try s.service.getClusters(V1.GetClustersRequest(layerID: "sc", bounds: S.world, zoom: 3))
            #expect(latest.layerVersion == v1 || latest.layerVersion == v2)
            return latest.layerVersion == v2
        }
        #expect(latest.clusters.map(\.markerCount) == [3] && latest.markers.map(\.id) == ["d"])
    }
}

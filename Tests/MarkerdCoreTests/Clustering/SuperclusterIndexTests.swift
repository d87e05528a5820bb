import Foundation
import MarkerdTestSupport
import Testing
@testable import MarkerdCore

/// Ports of supercluster 8.0.1's test/test.js expectations (those that do not need map/reduce).
@Suite struct SuperclusterIndexTests {
    struct Place {
        var lngLat: LatLng?
        var id: Int?
        var properties: [String: Any]
    }

    static func fixtureURL(_ name: String) -> URL {
        URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent()
            .appendingPathComponent("Fixtures").appendingPathComponent(name)
    }

    static func loadJSON(_ name: String) throws -> [String: Any] {
        let data = try Data(contentsOf: fixtureURL(name))
        return try #require(try JSONSerialization.jsonObject(with: data) as? [String: Any])
    }

    static func places() throws -> [Place] {
        let features = try #require(try loadJSON("places.json")["features"] as? [[String: Any]])
        return features.map { f in
            let c = (f["geometry"] as? [String: Any])?["coordinates"] as? [Double]
            return Place(lngLat: c.map { LatLng(latitude: $0[1], longitude: $0[0]) }, id: (f["id"] as? NSNumber)?.intValue,
                         properties: f["properties"] as? [String: Any] ?? [:])
        }
    }

    static func placesIndex(_ options: SuperclusterOptions = SuperclusterOptions()) throws -> SuperclusterIndex {
        SuperclusterIndex(optionalPoints: try places().map(\.lngLat), options: options)
    }

    /// JSON value as a comparable string (numbers printed as integers when integral).
    static func str(_ v: Any?) -> String {
        switch v {
        case let n as NSNumber:
            if String(cString: n.objCType) == "c" { return n.boolValue ? "true" : "false" }
            let d = n.doubleValue
            return d == d.rounded() ? String(Int(d)) : String(d)
        case let s as String: return s
        case nil: return "nil"
        default: return "\(v!)"
        }
    }

    @Test func generatesClustersProperly() throws {
        let places = try Self.places()
        #expect(places.count == 163)
        let index = SuperclusterIndex(optionalPoints: places.map(\.lngLat))
        let tile = try #require(index.tile(z: 0, x: 0, y: 0))
        let expected = try #require(try Self.loadJSON("places-z0-0-0.json")["features"] as? [[String: Any]])
        #expect(tile.count == expected.count)
        // supercluster's test is assert.deepEqual on the arrays: order-sensitive. So is this one.
        for (got, want) in zip(tile, expected) {
            let geometry = try #require(want["geometry"] as? [[Double]])
            #expect(got.x == Int(geometry[0][0]) && got.y == Int(geometry[0][1]))
            #expect(Self.str(want["type"]) == "1")
            let tags = try #require(want["tags"] as? [String: Any])
            if got.isCluster {
                #expect(Self.str(tags["cluster"]) == "true")
                #expect(Self.str(tags["cluster_id"]) == String(got.id))
                #expect(Self.str(want["id"]) == String(got.id))
                #expect(Self.str(tags["point_count"]) == String(got.pointCount))
                #expect(Self.str(tags["point_count_abbreviated"]) == got.pointCountAbbreviated)
                #expect(tags.count == 4)
            } else {
                #expect(tags["cluster"] == nil)
                let place = places[got.id]
                #expect(Self.str(tags["name"]) == Self.str(place.properties["name"]))
                #expect(Set(tags.keys) == Set(place.properties.keys))
                for (k, v) in place.properties { #expect(Self.str(tags[k]) == Self.str(v), "\(k)") }
                // a point feature keeps the input feature's id, if any
                #expect(Self.str(want["id"]) == (place.id.map(String.init) ?? "nil"))
            }
        }
    }

    @Test func supportsMinPointsOption() throws {
        let index = try Self.placesIndex(SuperclusterOptions(minPoints: 5))
        let tile = try #require(index.tile(z: 0, x: 0, y: 0))
        // Every cluster has at least 5 points; the tile still covers every place once (plus wrapped copies).
        #expect(tile.filter(\.isCluster).allSatisfy { $0.pointCount >= 5 })
        let all = index.clusters(west: -180, south: -90, east: 180, north: 90, zoom: 0)
        #expect(all.reduce(0) { $0 + $1.pointCount } == 162) // 163 features, one without geometry
        #expect(all.filter(\.isCluster).allSatisfy { $0.pointCount >= 5 })
    }

    @Test func returnsChildrenOfACluster() throws {
        let index = try Self.placesIndex()
        #expect(try index.children(of: 164).map(\.pointCount) == [6, 7, 2, 1])
    }

    @Test func returnsLeavesOfACluster() throws {
        let places = try Self.places()
        let index = SuperclusterIndex(optionalPoints: places.map(\.lngLat))
        let names = try index.leaves(of: 164, limit: 10, offset: 5).map { Self.str(places[$0.id].properties["name"]) }
        #expect(names == ["Niagara Falls", "Cape San Blas", "Cape Sable", "Cape Canaveral", "San  Salvador",
                          "Cabo Gracias a Dios", "I. de Cozumel", "Grand Cayman", "Miquelon", "Cape Bauld"])
        // paging: pages of 3 concatenate to the whole list, all distinct, count == point_count
        let all = try index.leaves(of: 164, limit: Int.max)
        #expect(all.count == 16)
        var paged: [Int] = []
        for offset in Swift.stride(from: 0, to: 20, by: 3) { paged += try index.leaves(of: 164, limit: 3, offset: offset).map(\.id) }
        #expect(paged == all.map(\.id))
        #expect(Set(paged).count == 16)
        #expect(try index.leaves(of: 164, limit: 10, offset: 16).isEmpty)
    }

    @Test func generatedIdsOrderMatches() throws {
        // supercluster's generateId test: ids (= input indices) of the point features of tile 0/0/0, in order.
        let index = try Self.placesIndex()
        let ids = try #require(index.tile(z: 0, x: 0, y: 0)).filter { !$0.isCluster }.map(\.id)
        #expect(ids == [12, 20, 21, 22, 24, 28, 30, 62, 81, 118, 119, 125, 81, 118])
    }

    @Test func leavesWithExtraPoint() throws {
        // getLeaves handles null-property features: the added point is leaf #6 of cluster 165.
        var points = try Self.places().map(\.lngLat)
        points.append(LatLng(latitude: 43.08771393436908, longitude: -79.04411780507252))
        let index = SuperclusterIndex(optionalPoints: points)
        #expect(try index.leaves(of: 165, limit: 1, offset: 6).map(\.id) == [163])
    }

    @Test func returnsClusterExpansionZoom() throws {
        let index = try Self.placesIndex()
        #expect(try index.expansionZoom(of: 164) == 1)
        #expect(try index.expansionZoom(of: 196) == 1)
        #expect(try index.expansionZoom(of: 581) == 2)
        #expect(try index.expansionZoom(of: 1157) == 2)
        #expect(try index.expansionZoom(of: 4134) == 3)
    }

    @Test func returnsClusterExpansionZoomForMaxZoom() throws {
        let index = try Self.placesIndex(SuperclusterOptions(maxZoom: 4, radius: 60, extent: 256))
        #expect(try index.expansionZoom(of: 2504) == 5)
    }

    @Test func errorsForBadClusterIds() throws {
        let index = try Self.placesIndex()
        for bad in [0, 5, 163, 195, -7, 1_000_000, 164 + (40 << 5)] {
            #expect(throws: SuperclusterError.noClusterWithId(bad)) { try index.children(of: bad) }
            #expect(throws: SuperclusterError.noClusterWithId(bad)) { try index.leaves(of: bad) }
        }
        #expect(throws: SuperclusterError.self) { try index.expansionZoom(of: 10) }
    }

    @Test func clustersAcrossTheAntimeridian() throws {
        let points = [-178.989, -178.990, -178.991, -178.992].map { LatLng(latitude: 0, longitude: $0) }
        let index = SuperclusterIndex(points: points)
        let nonCrossing = index.clusters(west: -179, south: -10, east: -177, north: 10, zoom: 1)
        let crossing = index.clusters(west: 179, south: -10, east: -177, north: 10, zoom: 1)
        #expect(!nonCrossing.isEmpty)
        #expect(nonCrossing.count == crossing.count)
        #expect(nonCrossing == crossing)
    }

    @Test func weirdBboxValues() throws {
        let index = try Self.placesIndex()
        #expect(index.clusters(west: 129.426390, south: -103.720017, east: -445.930843, north: 114.518236, zoom: 1).count == 26)
        #expect(index.clusters(west: 112.207836, south: -84.578666, east: -463.149397, north: 120.169159, zoom: 1).count == 27)
        #expect(index.clusters(west: 129.886277, south: -82.332680, east: -445.470956, north: 120.390930, zoom: 1).count == 26)
        #expect(index.clusters(west: 458.220043, south: -84.239039, east: -117.137190, north: 120.206585, zoom: 1).count == 25)
        #expect(index.clusters(west: 456.713058, south: -80.354196, east: -118.644175, north: 120.539148, zoom: 1).count == 25)
        #expect(index.clusters(west: 453.105328, south: -75.857422, east: -122.251904, north: 120.732760, zoom: 1).count == 25)
        #expect(index.clusters(west: -180, south: -90, east: 180, north: 90, zoom: 1).count == 61)
    }

    @Test func sameLocationPointsAreClustered() {
        let p = LatLng(latitude: 53.943034, longitude: -1.426798)
        let index = SuperclusterIndex(points: [p, p], options: SuperclusterOptions(maxZoom: 20, radius: 16, extent: 8192))
        #expect(index.itemCount(zoom: 20) == 1)
    }

    @Test func unclusteredPointCoordsAreNotRounded() throws {
        let index = SuperclusterIndex(points: [LatLng(latitude: -41.340357424709275, longitude: 173.19150559062456)],
                                      options: SuperclusterOptions(maxZoom: 19))
        let f = try #require(index.tile(z: 20, x: 1028744, y: 656754)?.first)
        #expect(f.x == 421 && f.y == 281)
    }

    @Test func zeroItems() {
        let index = SuperclusterIndex(points: [])
        #expect(index.clusters(west: -180, south: -85, east: 180, north: 85, zoom: 0).isEmpty)
        #expect(index.tile(z: 0, x: 0, y: 0) == nil)
    }

    @Test func abbreviations() {
        #expect(SuperclusterIndex.abbreviate(999) == "999")
        #expect(SuperclusterIndex.abbreviate(1000) == "1k")
        #expect(SuperclusterIndex.abbreviate(1249) == "1.2k")
        #expect(SuperclusterIndex.abbreviate(1250) == "1.3k")
        #expect(SuperclusterIndex.abbreviate(9999) == "10k")
        #expect(SuperclusterIndex.abbreviate(10000) == "10k")
        #expect(SuperclusterIndex.abbreviate(35499) == "35k")
    }

    @Test func kdTreeMatchesBruteForce() {
        var rng = SplitMix64(seed: 7)
        for n in [0, 1, 5, 64, 65, 700, 5000] {
            let data = (0..<n).flatMap { _ in [rng.unit(), rng.unit()] }
            let tree = ClusterKDTree(data: data, stride: 2, nodeSize: 16)
            for _ in 0..<20 {
                let (a, b, c, d) = (rng.unit(), rng.unit(), rng.unit(), rng.unit())
                let got = Set(tree.range(min(a, b), min(c, d), max(a, b), max(c, d)))
                let want = Set((0..<n).filter { i in
                    let x = Double(Float(data[2 * i])), y = Double(Float(data[2 * i + 1]))
                    return x >= min(a, b) && x <= max(a, b) && y >= min(c, d) && y <= max(c, d)
                })
                #expect(got == want)
                let r = rng.unit() * 0.2
                let w = Set(tree.within(a, c, r))
                let ww = Set((0..<n).filter { i in
                    let dx = Double(Float(data[2 * i])) - a, dy = Double(Float(data[2 * i + 1])) - c
                    return dx * dx + dy * dy <= r * r
                })
                #expect(w == ww)
            }
        }
    }
}


import Foundation
import MarkerdAPI
import MarkerdCore
import MarkerdService
import MarkerdTestSupport
import Testing

/// Point tiles within the layer's budget (`options.point_tile`): thinned, clustered or refused
/// when over it, every marker when under it, cached by version. Tiles are decoded by the
/// independent Python decoder (`PointTileTests.decode`). Fixed seed by default; `SEED=<n>`
/// replays another.
@Suite struct PointTileBudgetTests {
    typealias S = ClusterTestService

    static func seed(_ name: String = #function) -> UInt64 { testSeed("PointTileBudgetTests." + name, fixed: 35) }

    static func createLayer(_ s: S, _ id: String, _ pointTile: V1.PointTileOptions?) throws {
        _ = try s.mutate(.createLayer, V1.CreateLayerRequest(layerID: id, options: V1.LayerOptions(pointTile: pointTile)),
                         as: V1.CreateLayerResponse.self)
    }

    static func tile(_ s: S, _ layer: String, z: UInt32 = 0, x: UInt32 = 0, y: UInt32 = 0, clustered: Bool = false,
                     knownVersion: UInt64 = 0) throws -> V1.GetPointTileResponse {
        try s.service.getPointTile(V1.GetPointTileRequest(layerID: layer, z: z, x: x, y: y, clustered: clustered, knownVersion: knownVersion))
    }

    /// The features of a tile as the independent decoder reads them.
    static func decoded(_ mvt: [UInt8]) throws -> [[String: Any]] {
        let json = try #require(try PointTileTests.decode(mvt), "python3 decoder unavailable")
        let layers = try #require(json["layers"] as? [String: Any])
        let layer = try #require(layers["markers"] as? [String: Any])
        return try #require(layer["features"] as? [[String: Any]])
    }

    static func pointCount(_ f: [String: Any]) -> Int? { ((f["properties"] as? [String: Any])?["point_count"] as? NSNumber)?.intValue }
    static func markerID(_ f: [String: Any]) -> String? { (f["properties"] as? [String: Any])?["id"] as? String }
    static func xy(_ f: [String: Any]) -> (Int, Int) {
        let g = (f["geometry"] as! [[NSNumber]])[0]
        return (g[0].intValue, g[1].intValue)
    }

    /// `n` markers (ids "m0"...), each well inside one of the 64 x 64 cells of the world (the cells of
    /// the default grid clustering at zoom 3, which a thinned z0 tile keeps one marker of): 60 % in
    /// 40 hot cells, the rest spread over the cells of rows 4..<60 except a fifth of them, left empty.
    /// Returns the markers and each one's cell (x | y << 6).
    static func gridMarkers(_ n: Int, _ rng: inout SplitMix64) -> (markers: [V1.Marker], cells: [Int]) {
        let usable = (0..<64 * 64).filter { c in c >> 6 >= 4 && c >> 6 < 60 && ((c & 63) * 7 + (c >> 6) * 3) % 5 != 0 }
        let hot = (0..<40).map { _ in usable[Int(rng.next() % UInt64(usable.count))] }
        var markers: [V1.Marker] = [], cells: [Int] = []
        markers.reserveCapacity(n)
        for i in 0..<n {
            let c = rng.next() % 10 < 6 ? hot[Int(rng.next() % 40)] : usable[Int(rng.next() % UInt64(usable.count))]
            // Offsets at least 2^20 world units from the cell's edges (7-decimal degrees move a point by ~1 unit).
            let span = UInt64(1 << 26 - 1 << 21)
            let wx = UInt32(c & 63) << 26 + UInt32(1 << 20 + rng.next() % span), wy = UInt32(c >> 6) << 26 + UInt32(1 << 20 + rng.next() % span)
            let p = WorldPoint(x: wx, y: wy).latLng
            markers.append(S.marker("m\(i)", lat: p.latitude, lng: p.longitude, attributes: i % 5 == 0 ? ["kind": "k\(i % 7)"] : [:]))
            cells.append(c)
        }
        return (markers, cells)
    }

    static func upsert(_ s: S, _ layer: String, _ markers: [V1.Marker]) throws {
        for start in stride(from: 0, to: markers.count, by: MarkerConversion.maxBatch) {
            try s.upsert(layer, Array(markers[start..<min(markers.count, start + MarkerConversion.maxBatch)]))
        }
    }

    @Test func z0TileOf200kMarkersIsThinnedUnderTheBudgetOneMarkerPerCell() throws {
        var rng = SplitMix64(seed: Self.seed())
        let (markers, cells) = Self.gridMarkers(200_000, &rng)
        let s = S()
        try Self.createLayer(s, "big", nil)
        try Self.upsert(s, "big", markers)
        let r = try Self.tile(s, "big")
        #expect(r.mvt.count <= Int(V1.PointTileOptions.defaultMaxBytes), "\(r.mvt.count) bytes")
        let features = try Self.decoded(r.mvt)
        #expect(features.count <= Int(V1.PointTileOptions.defaultMaxFeatures))

        // One feature per non-empty cell, at a marker of that cell, with the cell's count.
        var expected: [Int: Int] = [:]
        for c in cells { expected[c, default: 0] += 1 }
        var got: [Int: Int] = [:]
        var cellOfID: [String: Int] = [:]
        for (i, c) in cells.enumerated() { cellOfID["m\(i)"] = c }
        for f in features {
            let (x, y) = Self.xy(f)
            let cell = x >> 6 | (y >> 6) << 6  // 64 extent units per cell of 4096
            let id = try #require(Self.markerID(f))
            #expect(cellOfID[id] == cell, "feature \(id) lies in its cell")
            #expect(got.updateValue(try #require(Self.pointCount(f)), forKey: cell) == nil, "one feature per cell")
        }
        #expect(got == expected)
        #expect(got.values.reduce(0, +) == markers.count)

        // Deterministic: the same markers loaded in another order give the same features (ids,
        // positions, counts; feature ids are slots, which follow the load).
        let again = S()
        try Self.createLayer(again, "big", nil)
        try Self.upsert(again, "big", markers.reversed())
        func strings(_ fs: [[String: Any]]) -> [String] {
            fs.map { f in "\(Self.markerID(f)!) \(Self.xy(f)) \(Self.pointCount(f)!)" }.sorted()
        }
        #expect(strings(try Self.decoded(try Self.tile(again, "big").mvt)) == strings(features))
    }

    @Test func aTileWithinTheBudgetHoldsEveryMarkerAndOneMoreThinsIt() throws {
        var rng = SplitMix64(seed: Self.seed())
        let (markers, _) = Self.gridMarkers(257, &rng)
        for mode in [V1.PointTileMode.unspecified, .thin, .cluster, .none] {
            let s = S()
            try Self.createLayer(s, "l", V1.PointTileOptions(mode: mode, maxFeatures: 256))
            try s.upsert("l", Array(markers[0..<256]))
            let all = try Self.decoded(try Self.tile(s, "l").mvt)
            #expect(Set(all.compactMap(Self.markerID)) == Set(markers[0..<256].map(\.id)), "mode \(mode)")
            #expect(all.allSatisfy { Self.pointCount($0) == nil }, "an unreduced tile has no point_count")

            try s.upsert("l", [markers[256]])
            if mode == .none {
                do {
                    _ = try Self.tile(s, "l")
                    Issue.record("NONE answered a tile over max_features")
                } catch let e as RPCError { #expect(e.code == .resourceExhausted && e.message.contains("point_tile")) }
                // A deeper tile within the budget still answers, with every marker of it.
                let deeper = try Self.decoded(try Self.tile(s, "l", z: 1).mvt)
                #expect(!deeper.isEmpty && deeper.allSatisfy { Self.pointCount($0) == nil })
                continue
            }
            let reduced = try Self.decoded(try Self.tile(s, "l").mvt)
            #expect(reduced.count <= 256)
            // THIN: every feature counts its cell; CLUSTER: clusters count their members, markers themselves.
            #expect(mode == .cluster || reduced.allSatisfy { Self.pointCount($0) != nil }, "mode \(mode)")
            #expect(reduced.map { Self.pointCount($0) ?? 1 }.reduce(0, +) == 257, "mode \(mode): counts add up")
            let clusters = reduced.filter { ($0["properties"] as? [String: Any])?["cluster"] != nil }.count
            #expect(mode == .cluster ? clusters > 0 : clusters == 0, "mode \(mode)")
        }
    }

    /// 300 markers of 2 KB of attributes (600 KB unreduced) within 200 KB: thinned to coarser
    /// cells until the bytes fit (at z0 the coarsest are the 8 x 8 cells of the grid clustering's zoom 0).
    @Test func largeAttributesAreThinnedUnderTheByteBudget() throws {
        var rng = SplitMix64(seed: Self.seed())
        var (markers, _) = Self.gridMarkers(300, &rng)
        for i in markers.indices { markers[i].attributes = ["text": String(repeating: "x", count: 2000) + "\(i)"] }
        for mode in [V1.PointTileMode.thin, .none] {
            let s = S()
            try Self.createLayer(s, "fat", V1.PointTileOptions(mode: mode, maxBytes: 200_000))
            try s.upsert("fat", markers)
            if mode == .none {
                do {
                    _ = try Self.tile(s, "fat")
                    Issue.record("NONE answered a tile over max_bytes")
                } catch let e as RPCError { #expect(e.code == .resourceExhausted) }
                continue
            }
            let r = try Self.tile(s, "fat")
            #expect(r.mvt.count <= 200_000, "\(r.mvt.count) bytes")
            let features = try Self.decoded(r.mvt)
            #expect(features.map { Self.pointCount($0) ?? 0 }.reduce(0, +) == 300)
        }
    }

    @Test func tilesAreCachedByVersionAndAChangeRenewsThem() throws {
        var rng = SplitMix64(seed: Self.seed())
        let (markers, _) = Self.gridMarkers(5000, &rng)
        let s = S()
        try Self.createLayer(s, "c", nil)
        try s.upsert("c", markers)
        for clustered in [false, true] {
            let first = try Self.tile(s, "c", clustered: clustered)
            let (hits, misses) = (s.service.tileCache.stats.hits, s.service.tileCache.stats.misses)
            let second = try Self.tile(s, "c", clustered: clustered)
            #expect(s.service.tileCache.stats.hits == hits + 1 && s.service.tileCache.stats.misses == misses, "a lookup")
            #expect(byteMismatch(second.mvt, first.mvt) == nil && second.version == first.version)
            #expect(try Self.tile(s, "c", clustered: clustered, knownVersion: first.version).notModified)
            // Built again from scratch: the same bytes.
            s.service.tileCache.removeAll()
            #expect(byteMismatch(try Self.tile(s, "c", clustered: clustered).mvt, first.mvt) == nil)
        }
        let before = try Self.tile(s, "c")
        try s.move("c", [("m0", 10, 10)])
        let misses = s.service.tileCache.stats.misses
        let after = try Self.tile(s, "c", knownVersion: before.version)
        #expect(!after.notModified && after.version != before.version && s.service.tileCache.stats.misses == misses + 1)
        #expect(byteMismatch(after.mvt, before.mvt) != nil)
    }

    /// Deeper than the clustering's max zoom clusters are single markers, so a tile over the budget
    /// there is thinned (CLUSTER and clustered requests too), with cells finer than the grid
    /// clustering stores (its max-zoom cells' members grouped).
    @Test func deepTilesOverTheBudgetAreThinnedBelowTheClustersMaxZoom() throws {
        var rng = SplitMix64(seed: Self.seed())
        let s = S()
        _ = try s.mutate(.createLayer, V1.CreateLayerRequest(layerID: "deep", options: V1.LayerOptions(
            clustering: V1.ClusteringOptions(maxZoom: 2), pointTile: V1.PointTileOptions(mode: .cluster, maxFeatures: 256))),
                         as: V1.CreateLayerResponse.self)
        // 300 markers between 1 and 10 degrees north and east: all in tile 5/16/15 (0 to 11.25 east, 0 to 11.16 north).
        try s.upsert("deep", (0..<300).map { i in S.marker("d\(i)", lat: 1 + rng.unit() * 9, lng: 1 + rng.unit() * 9) })
        for clustered in [false, true] {
            let features = try Self.decoded(try Self.tile(s, "deep", z: 5, x: 16, y: 15, clustered: clustered).mvt)
            #expect(features.count > 16 && features.count <= 256, "clustered \(clustered)")
            #expect(features.allSatisfy { Self.pointCount($0) != nil && ($0["properties"] as? [String: Any])?["cluster"] == nil })
            #expect(features.map { Self.pointCount($0) ?? 0 }.reduce(0, +) == 300)
        }
    }

    @Test func optionsAreFilledInAndChecked() throws {
        let s = S()
        try Self.createLayer(s, "d", nil)
        let layer = try #require(try s.service.getLayer(V1.GetLayerRequest(layerID: "d")).layer)
        #expect(layer.options?.pointTile == V1.PointTileOptions(mode: .thin, maxFeatures: 4096, maxBytes: 500_000))
        for bad in [V1.PointTileOptions(maxFeatures: 255), V1.PointTileOptions(maxFeatures: 1_000_001),
                    V1.PointTileOptions(maxBytes: 4095), V1.PointTileOptions(maxBytes: 64 << 20 + 1)] {
            do {
                try Self.createLayer(s, "bad", bad)
                Issue.record("\(bad) accepted")
            } catch let e as RPCError { #expect(e.code == .invalidArgument && e.message.contains("options.point_tile")) }
        }
    }
}

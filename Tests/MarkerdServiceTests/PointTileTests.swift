import Foundation
import MarkerdAPI
import MarkerdCore
import MarkerdService
import MarkerdTestSupport
import Testing

/// GetPointTile: MVT bytes decoded by an independent decoder (clients/python/decode_mvt.py: PyPI
/// mapbox-vector-tile when installed, else its own wire-format reader), compared with the cluster
/// view the service reports for the same tile.
@Suite struct PointTileTests {
    typealias S = ClusterTestService

    static let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()

    /// Runs the Python decoder on `bytes`; nil when python3 is missing.
    static func decode(_ bytes: [UInt8], builtin: Bool = false) throws -> [String: Any]? {
        let file = FileManager.default.temporaryDirectory.appendingPathComponent("markerd-tile-\(UInt64.random(in: 0...UInt64.max)).mvt")
        try Data(bytes).write(to: file)
        defer { try? FileManager.default.removeItem(at: file) }
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", root.appendingPathComponent("clients/python/decode_mvt.py").path, file.path] + (builtin ? ["--builtin"] : [])
        let out = Pipe()
        p.standardOutput = out
        do { try p.run() } catch { return nil }
        let data = out.fileHandleForReading.readDataToEndOfFile()
        p.waitUntilExit()
        guard p.terminationStatus == 0 else { return nil }
        return try JSONSerialization.jsonObject(with: data) as? [String: Any]
    }

    /// The decoded features as comparable strings: "id x,y key=value;...".
    static func featureStrings(_ json: [String: Any]) -> [String] {
        let layers = json["layers"] as! [String: Any]
        let layer = layers["markers"] as! [String: Any]
        return (layer["features"] as! [[String: Any]]).map { f in
            let g = (f["geometry"] as! [[NSNumber]])[0]
            let props = (f["properties"] as! [String: Any]).map { k, v -> String in
                if let b = v as? Bool, String(cString: (v as! NSNumber).objCType) == "c" { return "\(k)=\(b)" }
                return "\(k)=\(v)"
            }.sorted().joined(separator: ";")
            return "\((f["id"] as? NSNumber)?.uint64Value ?? 0) \(g[0].intValue),\(g[1].intValue) \(props)"
        }.sorted()
    }

    static func expectedStrings(_ layer: VectorTilePointLayer) -> [String] {
        layer.features.map { f in
            let props = f.properties.map { k, v -> String in
                switch v {
                case .string(let s): "\(k)=\(s)"
                case .uint(let u): "\(k)=\(u)"
                case .int(let i): "\(k)=\(i)"
                case .double(let d): "\(k)=\(d)"
                case .bool(let b): "\(k)=\(b)"
                }
            }.sorted().joined(separator: ";")
            return "\(f.id ?? 0) \(f.x),\(f.y) \(props)"
        }.sorted()
    }

    @Test func pointTilesRoundTripThroughAnIndependentDecoder() throws {
        let seed = testSeed("PointTileTests.pointTilesRoundTripThroughAnIndependentDecoder")
        var rng = SplitMix64(seed: seed)
        let s = S()
        try s.createLayer("t")
        var markers: [V1.Marker] = []
        for i in 0..<400 {
            // around Paris, some across the antimeridian, one hidden and one draggable
            let nearDateLine = i % 10 == 0
            let lat = nearDateLine ? rng.unit() * 2 - 1 : 48.85 + (rng.unit() - 0.5) * 0.2
            var lng = nearDateLine ? 179.5 + rng.unit() : 2.35 + (rng.unit() - 0.5) * 0.2
            if lng > 180 { lng -= 360 }
            markers.append(S.marker("m\(i)", lat: lat, lng: lng, visible: i != 7, draggable: i == 8,
                                    attributes: i % 3 == 0 ? ["kind": "cafe \(i)", "id": "shadowed"] : [:]))
        }
        try s.upsert("t", markers)
        let version = try s.service.getLayer(V1.GetLayerRequest(layerID: "t")).layer!.version
        var decoders: Set<String> = []
        var featuresSeen = 0
        let tiles: [(Int, Int, Int)] = [(0, 0, 0), (1, 0, 0), (1, 1, 0), (3, 4, 2), (10, 518, 352), (12, 2074, 1409), (12, 2075, 1409), (6, 63, 31), (6, 0, 31)]
        for (z, x, y) in tiles {
            for clustered in [false, true] {
                let r = try s.service.getPointTile(V1.GetPointTileRequest(layerID: "t", z: UInt32(z), x: UInt32(x), y: UInt32(y), clustered: clustered))
                #expect(r.version == version && !r.notModified)
                // the same tile through the cluster view (what the raster renderer will use)
                guard let json = try Self.decode(r.mvt) else { Issue.record("python3 decoder unavailable"); return }
                decoders.insert(json["decoder"] as! String)
                let decoded = Self.featureStrings(json)
                let ours = try #require(VectorTilePointLayer.decodeFirstLayer(r.mvt))
                #expect(ours.name == "markers" && ours.extent == 4096)
                #expect(decoded == Self.expectedStrings(ours), "tile \(z)/\(x)/\(y) clustered \(clustered)")
                if z <= 1, let builtin = try Self.decode(r.mvt, builtin: true) {
                    #expect(Self.featureStrings(builtin) == decoded)
                }
                featuresSeen += decoded.count
                let layers = json["layers"] as! [String: Any]
                let layer = layers["markers"] as! [String: Any]
                #expect((layer["extent"] as! NSNumber).intValue == 4096)
                for f in layer["features"] as! [[String: Any]] {
                    let props = f["properties"] as! [String: Any]
                    let g = (f["geometry"] as! [[NSNumber]])[0]
                    #expect(g[0].intValue >= -64 && g[0].intValue < 4096 + 64 && g[1].intValue >= -64 && g[1].intValue < 4096 + 64)
                    if props["cluster"] != nil {
                        #expect((props["cluster_id"] as! NSNumber).uint64Value == (f["id"] as! NSNumber).uint64Value)
                        #expect((props["point_count"] as! NSNumber).intValue >= 2)
                    } else {
                        let id = props["id"] as! String
                        #expect(id != "m7" && id != "m8", "hidden and live markers are not in point tiles")
                        if let k = props["kind"] as? String { #expect(k == "cafe \(id.dropFirst())") }
                    }
                }
                if !clustered && z == 0 {
                    #expect(decoded.count == 398) // every visible static marker
                }
                if clustered {
                    // counts add up to the markers of the tile's clusters view
                    let view = try s.service.clusterTile(layerID: "t", z: z, x: x, y: y, buffer: 1.0 / 64)
                    #expect(view.items.count == decoded.count)
                }
            }
        }
        #expect(featuresSeen > 100, "decoders used: \(decoders.sorted())")

        // known_version -> not_modified; a change -> new bytes and version
        let again = try s.service.getPointTile(V1.GetPointTileRequest(layerID: "t", z: 0, x: 0, y: 0, knownVersion: version))
        #expect(again.notModified && again.mvt.isEmpty && again.version == version)
        try s.remove("t", ["m1"])
        let changed = try s.service.getPointTile(V1.GetPointTileRequest(layerID: "t", z: 0, x: 0, y: 0, knownVersion: version))
        #expect(!changed.notModified && changed.version == version + 1)
        #expect(throws: RPCError.self) { try s.service.getPointTile(V1.GetPointTileRequest(layerID: "t", z: 2, x: 4, y: 0)) }
    }

    @Test func clusterTilesPartitionTheWorld() throws {
        // With no buffer every grid cell of zoom z lies in exactly one tile: the tiles of a zoom
        // together hold every visible static marker exactly once.
        let seed = testSeed("PointTileTests.clusterTilesPartitionTheWorld")
        var rng = SplitMix64(seed: seed)
        let s = S()
        try s.createLayer("p")
        try s.upsert("p", (0..<1000).map { i in S.marker("m\(i)", lat: rng.unit() * 160 - 80, lng: rng.unit() * 360 - 180) })
        for z in 0...3 {
            var total = 0
            var ids = Set<UInt64>()
            for x in 0..<(1 << z) {
                for y in 0..<(1 << z) {
                    let t = try s.service.clusterTile(layerID: "p", z: z, x: x, y: y)
                    for item in t.items {
                        switch item {
                        case .cluster(let id, let count, _):
                            total += count
                            #expect(ids.insert(id).inserted)
                        case .marker: total += 1
                        }
                    }
                }
            }
            #expect(total == 1000, "zoom \(z)")
            let world = try s.service.getClusters(V1.GetClustersRequest(layerID: "p", bounds: ClusterTestService.world, zoom: Double(z)))
            #expect(Set(world.clusters.map(\.id)) == ids)
        }
    }
}

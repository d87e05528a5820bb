import Foundation
import MarkerdAPI
import MarkerdCore
import MarkerdRender
import MarkerdService
import MarkerdTestSupport
import Testing

/// GetTile with `clustering.raster`: cluster bubbles drawn into the raster tiles.
@Suite struct ClusterRasterTileTests {
    static let z = 12
    static let parisTile12 = TileID.containing(LatLng(latitude: paris.lat, longitude: paris.lon), zoom: z)

    func makeClusterLayer(_ s: MarkerService, _ id: String, raster: Bool, algorithm: V1.ClusterAlgorithm = .grid) throws {
        var c = V1.ClusteringOptions()
        c.enabled = true
        c.algorithm = algorithm
        c.raster = raster
        var o = V1.LayerOptions()
        o.clustering = c
        try mutate(s, .createLayer, V1.CreateLayerRequest(layerID: id, options: o), as: V1.CreateLayerResponse.self)
    }

    /// 20 markers within a few px of Paris at z12: one cluster there.
    static let crowd: [V1.Marker] = (0..<20).map { i in
        marker("m\(i)", paris.lat + Double(i % 5) * 0.00005, paris.lon + Double(i / 5) * 0.00005)
    }

    func get(_ s: MarkerService, _ layer: String, tile t: TileID = parisTile12, known: UInt64 = 0) throws -> V1.GetTileResponse {
        try tile(s, layer, UInt32(t.z), t.x, t.y, known: known)
    }

    @Test(arguments: [V1.ClusterAlgorithm.grid, .supercluster])
    func bubbleReplacesMarkersAndShowsAtTheCluster(algorithm: V1.ClusterAlgorithm) throws {
        let s = MarkerService()
        try makeClusterLayer(s, "plain", raster: false, algorithm: algorithm)
        try makeClusterLayer(s, "bubbles", raster: true, algorithm: algorithm)
        try upsert(s, "plain", Self.crowd)
        try upsert(s, "bubbles", Self.crowd)
        let t = Self.parisTile12
        let plain = try get(s, "plain")
        let bubbles = try get(s, "bubbles")
        #expect(!plain.empty && !bubbles.empty)
        #expect(plain.png != bubbles.png)

        let ct = try s.clusterTile(layerID: "bubbles", z: t.z, x: Int(t.x), y: Int(t.y))
        let clusters = ct.items.compactMap { item -> (Int, WorldPoint)? in
            if case .cluster(_, let count, let p) = item { return (count, p) }
            return nil
        }
        #expect(!clusters.isEmpty)
        let (count, p) = try #require(clusters.max { $0.0 < $1.0 })
        #expect(count >= 2 && count < 100)
        let image = try PNGCodec.decode(bubbles.png)
        #expect(image.width == 256 && image.height == 256)
        // Device px of the cluster centre (as RasterView.tile rounds it).
        let scale = 256 * Double(sign: .plus, exponent: t.z - 32, significand: 1)
        let cx = Int((Double(p.x) * scale + 0.5).rounded(.down)) - Int(t.x) * 256
        let cy = Int((Double(p.y) * scale + 0.5).rounded(.down)) - Int(t.y) * 256
        // 9 px above the centre: inside the fill, above the label.
        let i = ((cy - 9) * image.width + cx) * 4
        let px = Array(image.pixels[i..<i + 4])
        let fill: [Int] = [0x1E, 0x88, 0xE5, 0xFF]
        #expect(zip(px, fill).allSatisfy { abs(Int($0) - $1) <= 2 }, "pixel \(px) at (\(cx), \(cy - 9)) is not the bubble fill")
        // The plain tile has a red pin there, not the bubble's blue.
        let plainImage = try PNGCodec.decode(plain.png)
        let q = Array(plainImage.pixels[i..<i + 4])
        #expect(!zip(q, fill).allSatisfy { abs(Int($0) - $1) <= 2 })
    }

    @Test func singleMarkerTileLooksLikeThePinTile() throws {
        let s = MarkerService()
        try makeClusterLayer(s, "plain", raster: false)
        try makeClusterLayer(s, "bubbles", raster: true)
        let one = [marker("solo", paris.lat, paris.lon)]
        try upsert(s, "plain", one)
        try upsert(s, "bubbles", one)
        for t in [Self.parisTile12, parisTile] {
            let plain = try get(s, "plain", tile: t)
            let bubbles = try get(s, "bubbles", tile: t)
            #expect(!bubbles.empty)
            #expect(byteMismatch(bubbles.png, plain.png) == nil, "tile \(t.z)/\(t.x)/\(t.y)")
        }
    }

    @Test func versionChangesAfterAnUpsertAnywhere() throws {
        let s = MarkerService()
        try makeClusterLayer(s, "plain", raster: false)
        try makeClusterLayer(s, "bubbles", raster: true)
        try upsert(s, "plain", Self.crowd)
        try upsert(s, "bubbles", Self.crowd)
        let plain1 = try get(s, "plain")
        let v1 = try get(s, "bubbles")
        #expect(try get(s, "bubbles", known: v1.version).notModified)
        // Far away (Sydney): the plain tile keeps its version, the clustered one does not.
        let far = [marker("far", -33.8688, 151.2093)]
        try upsert(s, "plain", far)
        try upsert(s, "bubbles", far)
        #expect(try get(s, "plain").version == plain1.version)
        let v2 = try get(s, "bubbles", known: v1.version)
        #expect(v2.version != v1.version)
        #expect(!v2.notModified)
        #expect(byteMismatch(v2.png, v1.png) == nil)  // same pixels, new version (conservative)
        #expect(try get(s, "bubbles", known: v2.version).notModified)
    }
}

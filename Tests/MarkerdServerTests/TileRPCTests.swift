import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdServer
import MarkerdTestSupport
import Testing

@Suite("GetTile and RenderSnapshot over real NNG sockets")
struct TileRPCTests {
    @Test func getTileOverTCP() throws {
        let s = try TestServer(.tcp) { $0.tileCacheBytes = 1 << 20 }
        defer { s.stop() }
        let c = try s.client()
        _ = try createLayer(c, "t")
        // Tile 10/909/403 holds Tokyo (35.68, 139.76).
        var req = V1.GetTileRequest(layerID: "t", z: 10, x: 909, y: 403)
        let empty: V1.GetTileResponse = try c.call("GetTile", req)
        #expect(empty.empty && !empty.png.isEmpty && Array(empty.png.prefix(4)) == [0x89, 0x50, 0x4E, 0x47])
        _ = try c.upsertMarkers("t", (0..<20).map { marker("m\($0)", 35.68 + Double($0) * 0.01, 139.76 + Double($0 % 5) * 0.02) })
        let full: V1.GetTileResponse = try c.call("GetTile", req)
        #expect(!full.empty && full.version != empty.version && full.png.count > 500)
        req.knownVersion = full.version
        let same: V1.GetTileResponse = try c.call("GetTile", req)
        #expect(same.notModified && same.png.isEmpty && same.version == full.version)
        // Bad z/x/y, size, density; unknown layer.
        for bad in [V1.GetTileRequest(layerID: "t", z: 23), V1.GetTileRequest(layerID: "t", z: 2, x: 4),
                    V1.GetTileRequest(layerID: "t", z: 2, y: 9), V1.GetTileRequest(layerID: "t", tileSize: 128),
                    V1.GetTileRequest(layerID: "t", density: 5)] {
            #expect(statusCode { let _: V1.GetTileResponse = try c.call("GetTile", bad) } == .invalidArgument)
        }
        #expect(statusCode { let _: V1.GetTileResponse = try c.call("GetTile", V1.GetTileRequest(layerID: "nope")) } == .notFound)

        var snap = V1.RenderSnapshotRequest()
        snap.layerID = "t"
        var center = V1.LatLng(); center.latitude = 35.78; center.longitude = 139.8
        snap.center = center
        snap.zoom = 11
        snap.width = 512; snap.height = 512
        let image: V1.RenderSnapshotResponse = try c.call("RenderSnapshot", snap)
        #expect(image.drawnCount == 20 && image.png.count > 500)
    }

    @Test func tileCacheFlag() throws {
        let config = try MarkerdConfiguration.parse(["--tile-cache-bytes", "1048576"])
        #expect(config.tileCacheBytes == 1 << 20)
        #expect(MarkerdConfiguration().tileCacheBytes == 256 << 20)
        #expect(throws: MarkerdConfiguration.ParseError.self) { try MarkerdConfiguration.parse(["--tile-cache-bytes", "-1"]) }
    }

    @Test func keptCanvasFlag() throws {
        #expect(try MarkerdConfiguration.parse([]).keptCanvasBytes == 64 << 20)
        #expect(try MarkerdConfiguration.parse(["--kept-canvas-bytes", "4096"]).keptCanvasBytes == 4096)
        #expect(try MarkerdConfiguration.parse(["--swept-canvas-bytes", "0"]).keptCanvasBytes == 0)
        #expect(throws: MarkerdConfiguration.ParseError.self) { try MarkerdConfiguration.parse(["--swept-canvas-bytes", "-1"]) }
        #expect(throws: MarkerdConfiguration.ParseError.self) { try MarkerdConfiguration.parse(["--tile-bands-above", "2000"]) }
    }
}

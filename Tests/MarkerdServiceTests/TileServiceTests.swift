import Foundation
import MarkerdAPI
import MarkerdCore
import MarkerdRender
import MarkerdService
import MarkerdTestSupport
import Synchronization
import Testing

/// Runs a mutation synchronously.
@discardableResult
func mutate<Resp: ProtoMessage>(_ s: MarkerService, _ kind: MutationKind, _ req: some ProtoMessage, as: Resp.Type = Resp.self) throws -> Resp {
    try mutate(s, kind, payload: req.serializedBytes())
}

/// Runs a mutation with the given payload bytes synchronously.
func mutate<Resp: ProtoMessage>(_ s: MarkerService, _ kind: MutationKind, payload: [UInt8], as: Resp.Type = Resp.self) throws -> Resp {
    let box = Mutex<Result<[UInt8], RPCError>?>(nil)
    let done = DispatchSemaphore(value: 0)
    let key = "k\(UInt64.random(in: 0...UInt64.max))"
    s.mutate(kind, payload: payload, context: CallContext(method: kind.methodName, idempotencyKey: key)) { r in
        box.withLock { $0 = r }
        done.signal()
    }
    done.wait()
    return try Resp(serializedBytes: box.withLock { $0! }.get())
}

/// A journaled service's configuration in a new temporary directory named after `prefix`
/// (fsync off, no automatic snapshots); the caller removes `dir`.
func temporaryDurableConfiguration(_ prefix: String) -> (config: ServiceConfiguration, dir: String) {
    let dir = FileManager.default.temporaryDirectory.appendingPathComponent("\(prefix)-\(UUID().uuidString)").path
    var config = ServiceConfiguration()
    config.dataDirectory = dir
    config.fsync = .off
    config.snapshotEveryBytes = 0
    return (config, dir)
}

func makeLayer(_ s: MarkerService, _ id: String, debugOverlay: Bool = false) throws {
    var req = V1.CreateLayerRequest()
    req.layerID = id
    if debugOverlay {
        var t = V1.TilingOptions()
        t.debugOverlay = true
        var o = V1.LayerOptions()
        o.tiling = t
        req.options = o
    }
    try mutate(s, .createLayer, req, as: V1.CreateLayerResponse.self)
}

func upsert(_ s: MarkerService, _ layer: String, _ markers: [V1.Marker]) throws {
    var req = V1.UpsertMarkersRequest()
    req.layerID = layer
    req.markers = markers
    try mutate(s, .upsertMarkers, req, as: V1.UpsertMarkersResponse.self)
}

func tile(_ s: MarkerService, _ layer: String, _ z: UInt32, _ x: UInt32, _ y: UInt32, size: UInt32 = 0, density: UInt32 = 0,
          known: UInt64 = 0) throws(RPCError) -> V1.GetTileResponse {
    try s.getTile(V1.GetTileRequest(layerID: layer, z: z, x: x, y: y, tileSize: size, density: density, knownVersion: known))
}

// Paris, in tile 14/8298/5636.
let paris = (lat: 48.8566, lon: 2.3522)
let parisTile = TileID.containing(LatLng(latitude: 48.8566, longitude: 2.3522), zoom: 14)

final class Counter: Sendable {
    let value = Atomic<Int>(0)
}

@Suite struct TileServiceTests {
    /// A batch above the bulk threshold renews every tile of the layer (conservative), so the
    /// tiles it touches can never keep a stale version; a small batch elsewhere still keeps them.
    @Test func bulkBatchesRenewEveryTile() throws {
        let s = MarkerService()
        try makeLayer(s, "a")
        try upsert(s, "a", [marker("m1", paris.lat, paris.lon)])
        let t = parisTile
        let before = try tile(s, "a", 14, t.x, t.y)
        let bulk = (0...MarkerService.bulkTileMarkThreshold).map { marker("b\($0)", -33 - Double($0 % 50) * 0.01, 151) }
        try upsert(s, "a", bulk)
        let after = try tile(s, "a", 14, t.x, t.y)
        #expect(after.version != before.version)
        #expect(byteMismatch(after.png, before.png) == nil)  // same pixels: a conservative change only
        try upsert(s, "a", [marker("small", -33, 151.5)])
        #expect(try tile(s, "a", 14, t.x, t.y).version == after.version)
    }


    @Test func getTileValidatesArguments() throws {
        let s = MarkerService()
        try makeLayer(s, "a")
        for (z, x, y, size, d) in [(23, 0, 0, 0, 0), (1, 2, 0, 0, 0), (1, 0, 2, 0, 0), (3, 0, 0, 300, 0), (3, 0, 0, 256, 4)] as [(UInt32, UInt32, UInt32, UInt32, UInt32)] {
            #expect(throws: RPCError.self) { try tile(s, "a", z, x, y, size: size, density: d) }
            do { _ = try tile(s, "a", z, x, y, size: size, density: d) } catch { #expect(error.code == .invalidArgument) }
        }
        do { _ = try tile(s, "nope", 0, 0, 0); Issue.record("no error") } catch { #expect(error.code == .notFound) }
        let r = try tile(s, "a", 22, (1 << 22) - 1, (1 << 22) - 1, size: 512, density: 3)
        #expect(r.empty && r.png == TransparentTile.shared(size: 1536)!)
    }

    @Test func emptyTileNotModifiedAndContent() throws {
        let s = MarkerService()
        try makeLayer(s, "a")
        let t = parisTile
        let empty = try tile(s, "a", 14, t.x, t.y)
        #expect(empty.empty && !empty.png.isEmpty && empty.version != 0)
        try upsert(s, "a", [marker("m1", paris.lat, paris.lon)])
        let full = try tile(s, "a", 14, t.x, t.y, known: empty.version)
        #expect(!full.empty && !full.notModified && full.version != empty.version && full.png.count > 200)
        let again = try tile(s, "a", 14, t.x, t.y, known: full.version)
        #expect(again.notModified && again.png.isEmpty && again.version == full.version)
        // Cached: same bytes, one render.
        let misses = s.tileCache.stats.misses
        let third = try tile(s, "a", 14, t.x, t.y)
        #expect(byteMismatch(third.png, full.png) == nil)
        #expect(s.tileCache.stats.misses == misses)
        // Density 2 is a different (bigger) PNG with the same version.
        let d2 = try tile(s, "a", 14, t.x, t.y, density: 2)
        #expect(d2.version == full.version && d2.png != full.png)
    }

    @Test func versionsChangeOnlyWithTheirPixels() throws {
        let s = MarkerService()
        try makeLayer(s, "a")
        try upsert(s, "a", [marker("m1", paris.lat, paris.lon)])
        let t = parisTile
        func v(_ z: UInt32, _ x: UInt32, _ y: UInt32) throws -> UInt64 { try tile(s, "a", z, x, y).version }
        let deep = TileID.containing(LatLng(latitude: paris.lat, longitude: paris.lon), zoom: 18)
        let v0 = try v(14, t.x, t.y), vz3 = try v(3, 4, 2), vDeep = try v(18, deep.x, deep.y)
        // Far away (Sydney): nothing here changes at z14 or z18 (z3 neither: other tile).
        try upsert(s, "a", [marker("far", -33.87, 151.21)])
        #expect(try v(14, t.x, t.y) == v0)
        #expect(try v(18, deep.x, deep.y) == vDeep)
        #expect(try v(3, 4, 2) == vz3)
        // Removing and moving far-away markers: still unchanged.
        var rm = V1.RemoveMarkersRequest(); rm.layerID = "a"; rm.ids = ["far"]
        try mutate(s, .removeMarkers, rm, as: V1.RemoveMarkersResponse.self)
        #expect(try v(14, t.x, t.y) == v0)
        // Nearby (inside the tile): changes.
        try upsert(s, "a", [marker("near", paris.lat + 0.001, paris.lon + 0.001)])
        let v1 = try v(14, t.x, t.y)
        #expect(v1 != v0)
        #expect(try v(3, 4, 2) != vz3)
        // Outside the tile but its icon reaches in: a marker just south of the tile's bottom edge
        // (a pin reaches 48 px up from its position). Precise at z <= 12 (`TileVersions.bucketZoom`);
        // deeper tiles read their z12 ancestor (conservative).
        let t12 = TileID.containing(LatLng(latitude: paris.lat, longitude: paris.lon), zoom: 12)
        let r = t12.worldRect
        let mid = Mercator.longitude(worldX: (r.minX + r.maxX) / 2)
        let w12 = try v(12, t12.x, t12.y)
        try upsert(s, "a", [marker("below", Mercator.latitude(worldY: r.maxY + 10 * t12.worldSpan / 256), mid)])
        let v2 = try v(12, t12.x, t12.y)
        #expect(v2 != w12)
        // And one whose icon cannot reach (60 px south of the edge): unchanged.
        try upsert(s, "a", [marker("below2", Mercator.latitude(worldY: r.maxY + 60 * t12.worldSpan / 256), mid)])
        #expect(try v(12, t12.x, t12.y) == v2)
        // Left of the tile, 20 px: a pin reaches 24 px to the right.
        try upsert(s, "a", [marker("left", paris.lat, Mercator.longitude(worldX: r.minX - 20 * t12.worldSpan / 256))])
        #expect(try v(12, t12.x, t12.y) != v2)
        let v2b = try v(14, t.x, t.y)
        // A hidden marker appearing in the tile changes nothing; making it visible does.
        try upsert(s, "a", [marker("hidden", paris.lat, paris.lon) { $0.visible = false }])
        #expect(try v(14, t.x, t.y) == v2b)
        try upsert(s, "a", [marker("hidden", paris.lat, paris.lon)])
        let v3 = try v(14, t.x, t.y)
        #expect(v3 != v2b)
        // Moving a marker out of the tile changes it; moving a far one far away does not.
        var mv = V1.MoveMarkersRequest(); mv.layerID = "a"
        var move = V1.MarkerMove(); move.id = "hidden"; var p = V1.LatLng(); p.latitude = 10; p.longitude = 10; move.position = p
        mv.moves = [move]
        try mutate(s, .moveMarkers, mv, as: V1.MoveMarkersResponse.self)
        let v4 = try v(14, t.x, t.y)
        #expect(v4 != v3)
        move.position = { var q = V1.LatLng(); q.latitude = 11; q.longitude = 11; return q }()
        mv.moves = [move]
        try mutate(s, .moveMarkers, mv, as: V1.MoveMarkersResponse.self)
        #expect(try v(14, t.x, t.y) == v4)
        // Clear: everything changes.
        var clear = V1.ClearLayerRequest(); clear.layerID = "a"
        try mutate(s, .clearLayer, clear, as: V1.ClearLayerResponse.self)
        #expect(try v(14, t.x, t.y) != v4)
        #expect(try v(3, 4, 2) != vz3)
    }

    @Test func optionChangesChangeVersions() throws {
        // Options change only by re-creating the layer: every version is above the old ones.
        let s = MarkerService()
        try makeLayer(s, "a")
        try upsert(s, "a", [marker("m1", paris.lat, paris.lon)])
        let t = parisTile
        let before = try tile(s, "a", 14, t.x, t.y)
        var del = V1.DeleteLayerRequest(); del.layerID = "a"
        try mutate(s, .deleteLayer, del, as: V1.DeleteLayerResponse.self)
        try makeLayer(s, "a", debugOverlay: true)
        try upsert(s, "a", [marker("m1", paris.lat, paris.lon)])
        let after = try tile(s, "a", 14, t.x, t.y)
        #expect(after.version > before.version)
        #expect(after.png != before.png)
        let emptyWithOverlay = try tile(s, "a", 14, t.x + 5, t.y)
        #expect(!emptyWithOverlay.empty)
    }

    /// A marker whose animation ends becomes static: the tile changes, with a new version. The
    /// service's clock is the test's, so "during" and "after" do not depend on the host's speed.
    @Test func animationExpiryChangesTheTile() throws {
        let clock = ManualClock(1_800_000_000_000)  // fixed: time moves only when the test says
        var c = ServiceConfiguration()
        c.clock = clock.read
        let s = MarkerService(configuration: c)
        try makeLayer(s, "a")
        let t = parisTile
        try upsert(s, "a", [marker("anim", paris.lat, paris.lon) {
            var a = V1.Animation(); a.kind = .drop; a.durationMs = 150; $0.animation = a
        }])
        let ends = try #require(try s.getMarkers(V1.GetMarkersRequest(layerID: "a", ids: ["anim"])).markers.first?.animation?.endsAtUnixMs)
        #expect(ends == clock.now + 150)
        clock.advance(149)
        let during = try tile(s, "a", 14, t.x, t.y)
        #expect(during.empty, "an animating marker is live: not in the raster")
        clock.advance(1)
        let after = try tile(s, "a", 14, t.x, t.y)
        #expect(!after.empty, "the animation ended: the marker is static and drawn")
        #expect(after.version != during.version)
    }

    /// The tile through the service equals the renderer's brute force... checked in the render
    /// tests; here: an image icon registered and drawn.
    @Test func imageIconTile() throws {
        let s = MarkerService()
        try makeLayer(s, "a")
        var icon = V1.RegisterIconRequest()
        icon.iconID = "red"
        icon.png = redSquarePNG
        try mutate(s, .registerIcon, icon, as: V1.RegisterIconResponse.self)
        try upsert(s, "a", [marker("i", paris.lat, paris.lon) { $0.icon = .iconID("red") }])
        let r = try tile(s, "a", 14, parisTile.x, parisTile.y, density: 3)
        #expect(!r.empty)
    }

    @Test func renderSnapshot() throws {
        let s = MarkerService()
        try makeLayer(s, "a")
        try upsert(s, "a", (0..<50).map { marker("m\($0)", paris.lat + Double($0 % 7) * 0.002, paris.lon + Double($0 / 7) * 0.002) })
        var req = V1.RenderSnapshotRequest()
        req.layerID = "a"
        var c = V1.LatLng(); c.latitude = paris.lat + 0.006; c.longitude = paris.lon + 0.006
        req.center = c
        req.zoom = 14.5
        req.width = 800; req.height = 600; req.density = 2
        let r = try s.renderSnapshot(req)
        #expect(r.drawnCount == 50 && r.png.count > 1000 && r.layerVersion > 0, "\(r.drawnCount) drawn")
        req.width = 2100
        do { _ = try s.renderSnapshot(req); Issue.record("no error") } catch { #expect(error.code == .invalidArgument) }
    }
}

@Suite struct TileCacheTests {
    static func key(_ n: Int, version: UInt64 = 1) -> TileCache.Key {
        TileCache.Key(layer: "l", z: 10, x: UInt32(n), y: 0, tileSize: 256, density: 1, version: version)
    }

    @Test func hitsAndVersionedKeys() {
        let c = TileCache(capacityBytes: 1 << 20)
        var renders = 0
        let t1 = c.tile(Self.key(1)) { renders += 1; return TileCache.Tile(png: [1, 2, 3], empty: false) }
        let t2 = c.tile(Self.key(1)) { renders += 1; return TileCache.Tile(png: [9], empty: false) }
        #expect(t1.png == [1, 2, 3] && t2.png == [1, 2, 3] && renders == 1)
        let t3 = c.tile(Self.key(1, version: 2)) { renders += 1; return TileCache.Tile(png: [4], empty: false) }
        #expect(t3.png == [4] && renders == 2)
        #expect(c.stats.hits == 1 && c.stats.misses == 2)
    }

    @Test func evictsLeastRecentlyUsedByBytes() {
        let per = 1000 + TileCache.overheadBytes
        let c = TileCache(capacityBytes: per * 3)
        for i in 0..<3 { _ = c.tile(Self.key(i)) { TileCache.Tile(png: [UInt8](repeating: UInt8(i), count: 1000), empty: false) } }
        _ = c.tile(Self.key(0)) { Issue.record("0 should be cached"); return TileCache.Tile(png: [], empty: true) }  // 0 is now most recent
        _ = c.tile(Self.key(3)) { TileCache.Tile(png: [UInt8](repeating: 3, count: 1000), empty: false) }
        #expect(c.cached(Self.key(1)) == nil)  // least recently used went
        #expect(c.cached(Self.key(0)) != nil && c.cached(Self.key(2)) != nil && c.cached(Self.key(3)) != nil)
        #expect(c.stats.bytes <= per * 3 && c.stats.evictions == 1)
        // Bigger than the whole cache: not kept.
        _ = c.tile(Self.key(9)) { TileCache.Tile(png: [UInt8](repeating: 9, count: per * 4), empty: false) }
        #expect(c.cached(Self.key(9)) == nil)
    }

    @Test func concurrentRequestsRenderOnce() async {
        let c = TileCache()
        let renders = Counter()
        await withTaskGroup(of: [UInt8].self) { g in
            for _ in 0..<16 {
                g.addTask {
                    c.tile(TileCacheTests.key(7)) {
                        renders.value.add(1, ordering: .relaxed)
                        usleep(50_000)
                        return TileCache.Tile(png: [7], empty: false)
                    }.png
                }
            }
            for await png in g { #expect(png == [7]) }
        }
        #expect(renders.value.load(ordering: .relaxed) == 1)
    }
}

/// An 8x8 opaque red PNG (RGB, made with Python's zlib).
let redSquarePNG: [UInt8] = {
    // IHDR 8x8 RGB8, IDAT of 8 rows "\0" + 8 * ff0000.
    func crc(_ b: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for x in b { c ^= UInt32(x); for _ in 0..<8 { c = (c >> 1) ^ (c & 1 == 1 ? 0xEDB8_8320 : 0) } }
        return ~c
    }
    func be(_ v: UInt32) -> [UInt8] { [UInt8(v >> 24), UInt8(v >> 16 & 255), UInt8(v >> 8 & 255), UInt8(v & 255)] }
    func chunk(_ t: String, _ d: [UInt8]) -> [UInt8] { be(UInt32(d.count)) + Array(t.utf8) + d + be(crc(Array(t.utf8) + d)) }
    var raw: [UInt8] = []
    for _ in 0..<8 { raw.append(0); for _ in 0..<8 { raw += [255, 0, 0] } }
    // zlib stored block: header 78 01, final block, len, nlen, data, adler32.
    var a: UInt32 = 1, b: UInt32 = 0
    for x in raw { a = (a + UInt32(x)) % 65521; b = (b + a) % 65521 }
    let n = UInt16(raw.count)
    let z: [UInt8] = [0x78, 0x01, 1, UInt8(n & 255), UInt8(n >> 8), UInt8(~n & 255), UInt8(~n >> 8)] + raw + be(b << 16 | a)
    return [0x89, 0x50, 0x4E, 0x47, 0x0D, 0x0A, 0x1A, 0x0A] + chunk("IHDR", be(8) + be(8) + [8, 2, 0, 0, 0]) + chunk("IDAT", z) + chunk("IEND", [])
}()

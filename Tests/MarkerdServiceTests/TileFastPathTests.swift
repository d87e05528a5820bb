import MarkerdAPI
import MarkerdCore
import MarkerdService
import MarkerdTestSupport
import Testing

/// `MarkerService.cachedTile`: the GetTile reply when it needs neither a render nor a wait, and
/// nil otherwise; never a different answer from `getTile`.
@Suite struct TileFastPathTests {
    func request(_ t: TileID, known: UInt64 = 0, layer: String = "t") -> V1.GetTileRequest {
        V1.GetTileRequest(layerID: layer, z: UInt32(t.z), x: t.x, y: t.y, tileSize: 0, density: 0, knownVersion: known)
    }

    @Test func answersCachedTilesLikeGetTile() throws {
        let s = MarkerService()
        try makeLayer(s, "t")
        try upsert(s, "t", [marker("a", paris.lat, paris.lon), marker("b", paris.lat + 0.001, paris.lon)])
        #expect(s.cachedTile(request(parisTile)) == nil, "not rendered yet")
        let rendered = try s.getTile(request(parisTile))
        #expect(!rendered.empty && !rendered.png.isEmpty)
        let hits = s.tileCache.stats.hits
        let fast = try #require(s.cachedTile(request(parisTile)))
        #expect(byteMismatch(fast.png, rendered.png) == nil)
        #expect(fast.version == rendered.version && fast.empty == rendered.empty && !fast.notModified)
        #expect(s.tileCache.stats.hits == hits + 1, "a fast answer counts as a cache hit")
        let again = try s.getTile(request(parisTile))
        #expect(byteMismatch(again.serializedBytes(), fast.serializedBytes()) == nil)
        // Current known version: not_modified, like getTile.
        let nm = try #require(s.cachedTile(request(parisTile, known: rendered.version)))
        let slowNM = try s.getTile(request(parisTile, known: rendered.version))
        #expect(nm.notModified && nm.png.isEmpty && nm.serializedBytes() == slowNM.serializedBytes())
        // A change in the tile: a new version, not cached yet.
        try upsert(s, "t", [marker("c", paris.lat - 0.001, paris.lon)])
        #expect(s.cachedTile(request(parisTile)) == nil)
        #expect(s.cachedTile(request(parisTile, known: rendered.version)) == nil, "an old known version needs the new tile")
        let fresh = try s.getTile(request(parisTile))
        #expect(fresh.version != rendered.version)
        #expect(s.cachedTile(request(parisTile))?.png == fresh.png)
    }

    @Test func leavesErrorsToGetTile() throws {
        let s = MarkerService()
        try makeLayer(s, "t")
        #expect(s.cachedTile(request(parisTile, layer: "nope")) == nil)
        var bad = request(parisTile)
        bad.z = 23
        #expect(s.cachedTile(bad) == nil)
        bad = request(parisTile)
        bad.tileSize = 300
        #expect(s.cachedTile(bad) == nil)
        bad = request(parisTile)
        bad.density = 4
        #expect(s.cachedTile(bad) == nil)
    }
}

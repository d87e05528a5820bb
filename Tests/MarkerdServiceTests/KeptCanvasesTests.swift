import MarkerdAPI
import MarkerdCore
import MarkerdRender
@testable import MarkerdService
import MarkerdTestSupport
import Testing

/// GetTile of dense rasters patched from the kept canvas (`KeptCanvases`): after random small
/// changes (moves, new markers, removals, hidden markers) the patched tiles match tiles rendered
/// from scratch by a service that keeps no canvas (each within 1 of brute force, so within 2 of
/// each other); many changes at once, a bulk upsert and a clear fall back to a render from
/// scratch; the patch path really ran. Once for rasters that take the node sweep, once for tiles
/// kept for their marker count (`keepCanvasFrom`).
@Suite struct KeptCanvasesTests {
    /// `sweep`: every raster takes the node sweep; else none does, and tiles of 100 markers or
    /// more keep their canvas.
    static func service(keepCanvases: Bool, sweep: Bool) -> MarkerService {
        var c = ServiceConfiguration()
        c.tileSweepAbove = sweep ? 0 : .max
        c.keepCanvasFrom = sweep ? .max : 100
        c.keptCanvasBytes = keepCanvases ? 64 << 20 : 0
        return MarkerService(configuration: c)
    }

    @Test func patchedSweptTilesMatchTilesFromScratch() throws {
        try patchedTilesMatchTilesFromScratch(Self.service(keepCanvases: true, sweep: true), Self.service(keepCanvases: false, sweep: true),
                                              tiles: [(0, 0, 0, 256, 1), (1, 1, 0, 512, 2), (2, 2, 1, 256, 1)])
    }

    /// Tiles around the dense spot at (40, 10) (z4-z6, a few hundred to 2,000 markers each), and
    /// the z0 tile.
    @Test func patchedDenseTilesMatchTilesFromScratch() throws {
        let patching = Self.service(keepCanvases: true, sweep: false)
        let scratch = Self.service(keepCanvases: false, sweep: false)
        var tiles: [(z: UInt32, x: UInt32, y: UInt32, size: UInt32, density: UInt32)] = [(0, 0, 0, 256, 1)]
        for z: UInt32 in 4...6 {
            let t = TileID.containing(LatLng(latitude: 40, longitude: 10), zoom: Int(z))
            tiles.append((z, t.x, t.y, z == 5 ? 512 : 256, z == 6 ? 2 : 1))
        }
        try patchedTilesMatchTilesFromScratch(patching, scratch, tiles: tiles, changesNearSpot: true)
    }

    /// `changesNearSpot`: the small changes put markers in the dense spot (else anywhere).
    func patchedTilesMatchTilesFromScratch(_ patching: MarkerService, _ scratch: MarkerService,
                                           tiles: [(z: UInt32, x: UInt32, y: UInt32, size: UInt32, density: UInt32)],
                                           changesNearSpot: Bool = false) throws {
        var rng = SplitMix64(seed: testSeed())
        let services = [patching, scratch]
        func apply<Resp: ProtoMessage>(_ kind: MutationKind, _ req: some ProtoMessage, _ response: Resp.Type) throws {
            for s in services { try mutate(s, kind, req, as: response) }
        }
        for s in services { try makeLayer(s, "a") }
        func spot() -> (Double, Double) { ((rng.unit() - 0.5) * 120, (rng.unit() - 0.5) * 358) }
        var ids: [String] = []
        var batch: [V1.Marker] = []
        for i in 0..<3000 {
            let (lat, lon) = i % 3 == 0 ? spot() : (40 + (rng.unit() - 0.5) * 8, 10 + (rng.unit() - 0.5) * 8)
            batch.append(marker("m\(i)", lat, lon)); ids.append("m\(i)")
        }
        for s in services { try upsert(s, "a", batch) }
        func check(_ step: String) throws {
            for t in tiles {
                let a = try tile(patching, "a", t.z, t.x, t.y, size: t.size, density: t.density)
                let b = try tile(scratch, "a", t.z, t.x, t.y, size: t.size, density: t.density)
                #expect(a.empty == b.empty, "\(step) \(t): emptiness differs")
                let pa = try PNGCodec.decode(a.png, maxWidth: 2048, maxHeight: 2048, maxBytes: 64 << 20)
                let pb = try PNGCodec.decode(b.png, maxWidth: 2048, maxHeight: 2048, maxBytes: 64 << 20)
                let diff = zip(pa.pixels, pb.pixels).reduce(0) { max($0, abs(Int($1.0) - Int($1.1))) }
                #expect(pa.width == pb.width && diff <= 2, "\(step) \(t): patched tile differs from one rendered from scratch by \(diff)")
            }
        }
        try check("loaded")
        for step in 0..<12 {
            let patchedBefore = patching.tileRenderCounts.patched
            switch step {
            case 4:
                // One new marker inside every tile here (each keeps its canvas: the sweep, or
                // hundreds of markers): one small window each, so every tile is patched. (How
                // many the random steps patch depends on where their changes fall: a window
                // of the z0 raster is a large share of it.)
                for s in services { try upsert(s, "a", [marker("probe", 40.1, 10.1)]) }
                ids.append("probe")
            case 5:
                // More footprints than `TileVersions` keeps (two per move): from scratch.
                var mv = V1.MoveMarkersRequest(); mv.layerID = "a"
                mv.moves = (0..<(TileVersions.recentLimit + 16)).map { k in
                    V1.MarkerMove(id: ids[k * 7], position: V1.LatLng(latitude: 40, longitude: Double(k) / 40))
                }
                try apply(.moveMarkers, mv, V1.MoveMarkersResponse.self)
            case 9:
                var clear = V1.ClearLayerRequest(); clear.layerID = "a"
                try apply(.clearLayer, clear, V1.ClearLayerResponse.self)
                batch = (0..<500).map { i in let (lat, lon) = spot(); return marker("c\(i)", lat, lon) }
                for s in services { try upsert(s, "a", batch) }
                ids = batch.map(\.id)
            default:
                for _ in 0..<(1 + rng.next() % 3) {
                    let i = Int(rng.next() % UInt64(ids.count))
                    let (lat, lon) = changesNearSpot ? (40 + (rng.unit() - 0.5) * 6, 10 + (rng.unit() - 0.5) * 6) : spot()
                    switch rng.next() % 4 {
                    case 0:
                        var rm = V1.RemoveMarkersRequest(); rm.layerID = "a"; rm.ids = [ids[i]]
                        try apply(.removeMarkers, rm, V1.RemoveMarkersResponse.self)
                        ids.swapAt(i, ids.count - 1); ids.removeLast()
                    case 1:
                        let id = "n\(step)-\(rng.next())"
                        for s in services { try upsert(s, "a", [marker(id, lat, lon)]) }
                        ids.append(id)
                    case 2:
                        let visible = rng.next() % 2 == 0
                        for s in services { try upsert(s, "a", [marker(ids[i], lat, lon) { $0.visible = visible }]) }
                    default:
                        var mv = V1.MoveMarkersRequest(); mv.layerID = "a"
                        mv.moves = [V1.MarkerMove(id: ids[i], position: V1.LatLng(latitude: lat, longitude: lon))]
                        try apply(.moveMarkers, mv, V1.MoveMarkersResponse.self)
                    }
                }
            }
            try check("step \(step)")
            if step == 4 {
                #expect(patching.tileRenderCounts.patched - patchedBefore == tiles.count,
                        "one new marker: \(patching.tileRenderCounts.patched - patchedBefore) of \(tiles.count) tiles patched")
            }
        }
        // The renders as /metrics shows them (patched ones checked at step 4), and the bytes kept.
        let counts = patching.tileRenderCounts
        #expect(counts.fromScratch >= 9, "\(counts.fromScratch) renders from scratch: the first ones, after many moves and after the clear")
        #expect(counts.keptCanvasBytes > 0)
        let none = scratch.tileRenderCounts
        #expect(none.patched == 0 && none.fromScratch > 0 && none.keptCanvasBytes == 0)
    }
}

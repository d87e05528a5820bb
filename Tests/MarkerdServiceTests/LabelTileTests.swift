import Foundation
import MarkerdAPI
import MarkerdCore
import MarkerdRender
import MarkerdService
import MarkerdTestSupport
import Testing

/// Labelled raster tiles through the service: seams against one big rendering, updates that
/// renew only the tiles whose labels changed (and give what a fresh placement gives), label
/// hit-tests, priorities, icons hidden with their label.
@Suite struct LabelTileTests {
    /// Real place names in several scripts (GeoNames, CC BY 4.0).
    static let names = ["Paris", "Zürich", "Łódź", "São Paulo", "Reykjavík", "東京", "大阪", "القاهرة", "नई दिल्ली",
                        "กรุงเทพมหานคร", "Москва", "Αθήνα", "ירושלים", "서울", "Kraków", "Besançon", "Saint-Étienne",
                        "Mönchengladbach", "Aix-en-Provence", "Clermont-Ferrand", "Valladolid", "Genève", "Brno", "Gdańsk"]

    static func labelOptions(_ edit: (inout V1.LabelOptions) -> Void = { _ in }) -> V1.LayerOptions {
        var l = V1.LabelOptions()
        l.enabled = true
        l.textAttribute = "name"
        l.priorityAttribute = "population"
        edit(&l)
        var o = V1.LayerOptions()
        o.labels = l
        return o
    }

    static func createLayer(_ s: MarkerService, _ id: String, _ options: V1.LayerOptions?) throws {
        try mutate(s, .createLayer, V1.CreateLayerRequest(layerID: id, options: options), as: V1.CreateLayerResponse.self)
    }

    static func place(_ id: String, _ lat: Double, _ lon: Double, name: String, population: Int) -> V1.Marker {
        var m = V1.Marker()
        m.id = id
        m.position = V1.LatLng(latitude: lat, longitude: lon)
        m.attributes = ["name": name, "population": String(population)]
        return m
    }

    /// `n` named places with random positions in the box, seeded.
    static func places(_ n: Int, lat: ClosedRange<Double>, lon: ClosedRange<Double>, seed: UInt64) -> [V1.Marker] {
        var rng = SplitMix64(seed: seed)
        return (0..<n).map { i in
            let la = lat.lowerBound + rng.unit() * (lat.upperBound - lat.lowerBound)
            let lo = lon.lowerBound + rng.unit() * (lon.upperBound - lon.lowerBound)
            return place("p\(i)", la, lo, name: names[Int(rng.next() % UInt64(names.count))], population: Int(rng.next() % 1_000_000))
        }
    }

    /// The position of world pixel (`x`, `y`) at zoom `z` (256 px tiles).
    static func latLng(px x: Double, _ y: Double, zoom z: Int) -> V1.LatLng {
        let units = Mercator.worldUnitsPerPixel(zoom: Double(z))
        return V1.LatLng(latitude: Mercator.latitude(worldY: y * units), longitude: Mercator.longitude(worldX: x * units))
    }

    /// The 3 x 3 tiles around `center` at zoom `z`, stitched into one 768 px (times density) image.
    static func stitched(_ s: MarkerService, _ layer: String, z: Int, center: TileID, density: Int) throws -> RGBAImage {
        let n = 256 * density
        var out = [UInt8](repeating: 0, count: 9 * n * n * 4)
        for ty in 0..<3 {
            for tx in 0..<3 {
                let t = try tile(s, layer, UInt32(z), center.x - 1 + UInt32(tx), center.y - 1 + UInt32(ty), density: UInt32(density))
                let img = try PNGCodec.decode(t.png, maxWidth: 4096, maxHeight: 4096, maxBytes: 64 << 20)
                #expect(img.width == n && img.height == n)
                for row in 0..<n {
                    let dst = ((ty * n + row) * 3 * n + tx * n) * 4
                    out.replaceSubrange(dst..<dst + n * 4, with: img.pixels[row * n * 4..<(row + 1) * n * 4])
                }
            }
        }
        return RGBAImage(width: 3 * n, height: 3 * n, pixels: out)
    }

    /// Every tile of a 3 x 3 region, stitched, equals one snapshot of the region (labels crossing
    /// tile edges meet, none shows on one side of a seam only), at several zooms and densities.
    /// Icons are culled per raster within 1/255 per channel (`TileRenderer.Culling.withinOne`),
    /// so pixels may differ by 1; a label missing or cut on one side differs by far more.
    @Test(arguments: [(4, 1), (6, 1), (6, 2), (8, 1)])
    func tilesMeetTheBigRendering(zoom z: Int, density: Int) throws {
        let s = MarkerService()
        try Self.createLayer(s, "labels", Self.labelOptions())
        try Self.createLayer(s, "plain", nil)
        let markers = Self.places(600, lat: 46...50, lon: 0...8, seed: testSeed())
        try upsert(s, "labels", markers)
        try upsert(s, "plain", markers)
        let center = TileID.containing(LatLng(latitude: 48, longitude: 4), zoom: z)
        let big = try s.renderSnapshot(V1.RenderSnapshotRequest(
            layerID: "labels", center: Self.latLng(px: Double(center.x) * 256 + 128, Double(center.y) * 256 + 128, zoom: z),
            zoom: Double(z), width: 768, height: 768, density: UInt32(density)))
        let whole = try PNGCodec.decode(big.png, maxWidth: 4096, maxHeight: 4096, maxBytes: 64 << 20)
        let tiles = try Self.stitched(s, "labels", z: z, center: center, density: density)
        let plain = try Self.stitched(s, "plain", z: z, center: center, density: density)
        #expect(whole.width == tiles.width && whole.height == tiles.height)
        var worst = 0, labelPixels = 0
        for i in 0..<min(whole.pixels.count, tiles.pixels.count) {
            worst = max(worst, abs(Int(whole.pixels[i]) - Int(tiles.pixels[i])))
            if tiles.pixels[i] != plain.pixels[i] { labelPixels += 1 }
        }
        #expect(worst <= 1, "tiles differ from the big rendering by \(worst)/255")
        #expect(labelPixels > 2_000 * density * density, "only \(labelPixels) bytes differ from the unlabelled tiles: labels missing?")
    }

    /// A moved marker renews only tiles whose pixels may have changed: every tile whose bytes
    /// changed has a new version, tiles far away keep theirs, and every tile equals the tile of
    /// a layer loaded afresh with the final markers (the incremental placement is the placement).
    /// z6 places lazily (300 markers), z2 eagerly: kept across the moves through watch lists.
    @Test(arguments: [UInt32(6), 2])
    func movesRenewOnlyTheirTilesAndMatchAFreshPlacement(zoom z: UInt32) throws {
        let s = MarkerService()
        try Self.createLayer(s, "a", Self.labelOptions())
        var markers = Self.places(300, lat: 40...56, lon: -10...20, seed: testSeed())
        try upsert(s, "a", markers)
        let lo = TileID.containing(LatLng(latitude: 56, longitude: -10), zoom: Int(z))
        let hi = TileID.containing(LatLng(latitude: 40, longitude: 20), zoom: Int(z))
        let tiles = (lo.y...hi.y).flatMap { y in (lo.x...hi.x).map { x in (x, y) } }
        let before = try tiles.map { try tile(s, "a", z, $0.0, $0.1) }
        var rng = SplitMix64(seed: testSeed() ^ 1)
        for round in 0..<5 {
            let i = Int(rng.next() % UInt64(markers.count))
            markers[i].position = V1.LatLng(latitude: markers[i].position!.latitude + 0.3, longitude: markers[i].position!.longitude - 0.4)
            try mutate(s, .moveMarkers, V1.MoveMarkersRequest(layerID: "a", moves: [V1.MarkerMove(id: markers[i].id, position: markers[i].position)]),
                       as: V1.MoveMarkersResponse.self)
            _ = round
        }
        let after = try tiles.map { try tile(s, "a", z, $0.0, $0.1) }
        let fresh = MarkerService()
        try Self.createLayer(fresh, "a", Self.labelOptions())
        try upsert(fresh, "a", markers)
        var kept = 0
        for (k, t) in tiles.enumerated() {
            if after[k].png != before[k].png { #expect(after[k].version != before[k].version, "tile \(z)/\(t.0)/\(t.1) changed under its old version") }
            if after[k].version == before[k].version { kept += 1 }
            let f = try tile(fresh, "a", z, t.0, t.1)
            #expect(byteMismatch(after[k].png, f.png) == nil, "tile \(z)/\(t.0)/\(t.1) differs from a fresh placement")
        }
        if z == 6 { #expect(kept > 0, "every tile got a new version: updates are not local") }
    }

    /// Two markers whose labels compete for the same place (positions RIGHT only): the higher
    /// population wins; the other's label is dropped, and with `show_icon_without_label` false its
    /// icon goes too. HitTest reports the label hit with `on_label`.
    @Test func priorityDecidesAndHitTestFindsLabels() throws {
        let s = MarkerService()
        let z = 10
        let base = (x: 132_800.0, y: 90_200.0)  // world px at z 10, near Paris
        func pos(_ dx: Double, _ dy: Double) -> V1.LatLng { Self.latLng(px: base.x + dx, base.y + dy, zoom: z) }
        for (layer, showIcon) in [("shown", true), ("hidden", false)] {
            var options = Self.labelOptions { l in
                l.positions = [.right]
                l.showIconWithoutLabel = showIcon
            }
            var tiling = V1.TilingOptions()
            tiling.minMarkerCount = 1  // TILED: the hit-test answers for what the tiles show
            options.tiling = tiling
            try Self.createLayer(s, layer, options)
            var small = Self.place("small", 0, 0, name: "Small town with a long name", population: 10)
            small.position = pos(0, 0)
            var big = Self.place("big", 0, 0, name: "Big city", population: 5_000_000)
            big.position = pos(30, 0)
            try upsert(s, layer, [small, big])
        }
        // The small town's label would start 26 px right of it, over the big city's label.
        func hit(_ layer: String, _ dx: Double, _ dy: Double) throws -> [V1.MarkerHit] {
            try s.hitTest(V1.HitTestRequest(layerID: layer, point: pos(dx, dy), zoom: Double(z), tolerancePx: 0)).hits
        }
        let onBig = try hit("shown", 30 + 24 + 2 + 10, -24)
        #expect(onBig.first?.marker?.id == "big" && onBig.first?.onLabel == true)
        let onSmallIcon = try hit("shown", 0, -30)
        #expect(onSmallIcon.first?.marker?.id == "small" && onSmallIcon.first?.onLabel == false && onSmallIcon.first?.tiled == true)
        #expect(try hit("hidden", 0, -30).allSatisfy { $0.marker?.id != "small" }, "a hidden icon was hit")

        let t = TileID.containing(WorldPoint(x: UInt32(base.x * 16384), y: UInt32(base.y * 16384)), zoom: z)
        let shown = try PNGCodec.decode(try tile(s, "shown", UInt32(z), t.x, t.y).png)
        let hidden = try PNGCodec.decode(try tile(s, "hidden", UInt32(z), t.x, t.y).png)
        // The small town's pin, 10 px above its tip: red when shown, gone when hidden.
        let px = Int(base.x) - Int(t.x) * 256, py = Int(base.y) - Int(t.y) * 256 - 10
        let i = (py * 256 + px) * 4
        #expect(shown.pixels[i + 3] == 255 && shown.pixels[i] > 200, "the pin is not drawn when shown")
        #expect(hidden.pixels[i + 3] == 0, "the pin of a dropped label is drawn")
    }

    /// Invalid label options are INVALID_ARGUMENT naming the field; GetLayer returns every default.
    @Test func labelOptionsAreCheckedAndFilledIn() throws {
        let s = MarkerService()
        for (edit, field) in [({ (l: inout V1.LabelOptions) in l.fontSize = 0 }, "font_size"),
                              ({ (l: inout V1.LabelOptions) in l.fontSize = .nan }, "font_size"),
                              ({ (l: inout V1.LabelOptions) in l.maxLines = 0 }, "max_lines"),
                              ({ (l: inout V1.LabelOptions) in l.positions = [.right, .right] }, "positions"),
                              ({ (l: inout V1.LabelOptions) in l.positions = [.unspecified] }, "positions"),
                              ({ (l: inout V1.LabelOptions) in l.minZoom = 23 }, "min_zoom")] {
            #expect(throws: RPCError.self) { try Self.createLayer(s, "bad", Self.labelOptions(edit)) }
            do { try Self.createLayer(s, "bad", Self.labelOptions(edit)) } catch let e as RPCError {
                #expect(e.code == .invalidArgument && "\(e)".contains(field), "\(e)")
            }
        }
        try Self.createLayer(s, "ok", Self.labelOptions())
        let l = try #require(try s.getLayer(V1.GetLayerRequest(layerID: "ok")).layer?.options?.labels)
        #expect(l.fontSize == 13 && l.maxWidth == 160 && l.positions == [.right, .left, .below, .above] && l.showIconWithoutLabel == true)
    }

    /// Labels survive a restart, from a snapshot and from the journal after it: the layer's label
    /// options, markers' own labels (text, priority, colour) and the tiles' bytes.
    @Test func labelsSurviveARestart() throws {
        let (config, dir) = temporaryDurableConfiguration("labels")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try MarkerService.open(configuration: config)
        try Self.createLayer(s, "a", Self.labelOptions { $0.fontSize = 15 })
        var markers = Self.places(200, lat: 40...56, lon: -10...20, seed: testSeed())
        for i in stride(from: 0, to: markers.count, by: 5) {
            markers[i].label = V1.MarkerLabel(text: i % 10 == 0 ? "大阪 \(i)" : "", priority: Double(i), color: 0xFF00_66CC)
        }
        try upsert(s, "a", Array(markers[..<100]))
        _ = try s.createSnapshot(V1.CreateSnapshotRequest())
        try upsert(s, "a", Array(markers[100...]))   // in the journal after the snapshot
        let ids = markers.map(\.id)
        let before = try s.getMarkers(V1.GetMarkersRequest(layerID: "a", ids: ids)).markers
        #expect(before.filter { $0.label != nil }.count == 40)
        let tiles = try (0..<4).map { try tile(s, "a", 4, 7 + UInt32($0 % 2), 5 + UInt32($0 / 2)).png }
        s.close()
        let r = try MarkerService.open(configuration: config)
        defer { r.close() }
        #expect(try r.getLayer(V1.GetLayerRequest(layerID: "a")).layer?.options?.labels?.fontSize == 15)
        #expect(try r.getMarkers(V1.GetMarkersRequest(layerID: "a", ids: ids)).markers == before)
        for i in 0..<4 {
            #expect(byteMismatch(try tile(r, "a", 4, 7 + UInt32(i % 2), 5 + UInt32(i / 2)).png, tiles[i]) == nil)
        }
    }

    /// The network thread's cache path (`cachedTile`) answers a labelled tile only once its zoom's
    /// placement is kept, and then exactly as `getTile` does.
    @Test func cachedLabelledTilesAnswerLikeGetTile() throws {
        let s = MarkerService()
        try Self.createLayer(s, "a", Self.labelOptions())
        try upsert(s, "a", Self.places(100, lat: 46...50, lon: 0...8, seed: testSeed()))
        let request = V1.GetTileRequest(layerID: "a", z: 5, x: 16, y: 11, tileSize: 0, density: 0, knownVersion: 0)
        #expect(s.cachedTile(request) == nil, "a zoom without a placement was answered from the cache")
        let bytes = { try s.getLayerStats(V1.GetLayerStatsRequest(layerID: "a")).stats?.approximateBytes ?? 0 }
        let before = try bytes()
        let rendered = try s.getTile(request)
        #expect(try bytes() > before, "the zoom's label placement is not counted in the layer's bytes")
        let cached = try #require(s.cachedTile(request))
        #expect(cached.version == rendered.version && cached.png == rendered.png && !rendered.png.isEmpty)
    }
}

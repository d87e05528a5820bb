import Foundation
import MarkerdCore
import MarkerdRender
import MarkerdTestSupport
import Testing

/// A 12x12 semi-transparent image icon: a blue disc with a soft edge and a 50% alpha centre.
let testIcon: RGBAImage = {
    var px = [UInt8](repeating: 0, count: 12 * 12 * 4)
    for y in 0..<12 {
        for x in 0..<12 {
            let dx = Double(x) - 5.5, dy = Double(y) - 5.5
            let r = (dx * dx + dy * dy).squareRoot()
            var a = r < 4.5 ? 255.0 : r < 6 ? 255 * (6 - r) / 1.5 : 0
            if r < 2 { a = 128 }
            let ai = UInt8(a.rounded())
            let i = (y * 12 + x) * 4
            px[i] = 0; px[i + 1] = UInt8((Double(ai) * 0.4).rounded()); px[i + 2] = ai; px[i + 3] = ai
        }
    }
    return RGBAImage(width: 12, height: 12, pixels: px)
}()

/// A 12x12 fully opaque red square.
let opaqueSquare = RGBAImage(width: 12, height: 12, pixels: Array(repeating: [200, 0, 0, 255], count: 144).flatMap { $0 })

/// `sweepAbove: 0`: every raster goes through the node sweep; the default (Int.max here): none does.
func makeRenderer(_ culling: TileRenderer.Culling = .withinOne, sweepAbove: Int = .max) -> TileRenderer {
    TileRenderer(culling: culling, sweepAbove: sweepAbove, images: { id in id == "dot" ? testIcon : id == "square" ? opaqueSquare : nil })
}

/// The most a renderer may differ from brute force per channel: 0 when culling only opaque
/// cover, 1 otherwise (the 1/255).
func tolerance(_ r: TileRenderer) -> Int { r.culling == .exact ? 0 : 1 }

/// The brute-force renderer: every static marker, one draw each, in draw order.
func bruteForce(_ layer: MarkerLayer, _ view: RasterView, now: Int64, sprites: IconSpriteCache) throws -> TileCanvas {
    var all: [MarkerRecord] = []
    var from = 0
    while true {
        let (ms, next) = layer.markers(fromSlot: from, limit: 10_000)
        all += ms
        guard let next else { break }
        from = next
    }
    struct Draw { var key: DrawKey; var copy: Int; var sprite: TileSprite; var x: Int; var y: Int }
    var draws: [Draw] = []
    for m in all {
        guard m.visible, !m.draggable else { continue }
        if let a = m.animation, a.kind != .none, a.endsAtUnixMs > now { continue }
        let sprite = try sprites.sprite(m.style, density: view.density)
        let p = layer.worldPosition(id: m.id)!
        let py = Int64((Double(p.y) * view.scale + 0.5).rounded(.down)) - view.originY
        for k in -1...1 {
            let px = Int64(((Double(p.x) + Double(k) * 4_294_967_296) * view.scale + 0.5).rounded(.down)) - view.originX
            draws.append(Draw(key: layer.drawKey(id: m.id)!, copy: k, sprite: sprite,
                              x: Int(px) - sprite.anchorX, y: Int(py) - sprite.anchorY))
        }
    }
    draws.sort { $0.key != $1.key ? $0.key < $1.key : $0.copy < $1.copy }
    var canvas = TileCanvas(width: view.width, height: view.height)
    for d in draws { canvas.draw(sprite: d.sprite.image, atX: d.x, y: d.y) }
    return canvas
}

/// Largest per-channel difference.
func maxDifference(_ a: [UInt8], _ b: [UInt8]) -> Int {
    precondition(a.count == b.count)
    var m = 0
    for i in a.indices { m = max(m, abs(Int(a[i]) - Int(b[i]))) }
    return m
}

/// `oneStyle`: every marker gets `styles[oneStyle]` (of the six below), the layer's only style in
/// use (`TileRenderer.collectOneStyle`); nil (default): a random style each.
func randomLayer(count: Int, center: LatLng, spreadDegrees: Double, rng: inout SplitMix64, now: Int64,
                 oneStyle: Int? = nil) throws -> MarkerLayer {
    var layer = try MarkerLayer()
    let styles: [IconStyle] = [
        .defaultPin,
        IconStyle(source: .pin(PinStyle(fillColor: 0xFF33_AA33, scale: 0.5))),
        IconStyle(source: .pin(PinStyle(fillColor: 0x8000_00FF, strokeColor: 0x80FF_FFFF, scale: 0.75))),
        IconStyle(source: .pin(PinStyle(fillColor: 0xFF22_22AA, label: "7", labelSize: 14))),
        IconStyle(source: .image(id: "dot", width: 12, height: 12)),
        IconStyle(source: .image(id: "dot", width: 12, height: 12), anchor: Anchor(x: 0, y: 1)),
    ]
    var records: [MarkerRecord] = []
    for i in 0..<count {
        let lat = min(85, max(-85, center.latitude + (rng.unit() - 0.5) * spreadDegrees))
        var lon = center.longitude + (rng.unit() - 0.5) * spreadDegrees
        if lon > 180 { lon -= 360 }
        if lon < -180 { lon += 360 }
        var m = MarkerRecord(id: "m\(i)", position: LatLng(latitude: lat, longitude: lon),
                             style: styles[oneStyle ?? Int(rng.next() % UInt64(styles.count))],
                             zIndex: Int32(rng.next() % 3))
        switch rng.next() % 20 {
        case 0: m.visible = false
        case 1: m.draggable = true
        case 2: m.animation = MarkerAnimation(kind: .drop, endsAtUnixMs: now + 60_000)
        case 3: m.animation = MarkerAnimation(kind: .drop, endsAtUnixMs: now - 1)
        default: break
        }
        records.append(m)
    }
    // A few exact duplicates of position and style: stacks of identical draws.
    for i in 0..<(count / 10) {
        var m = records[Int(rng.next() % UInt64(records.count))]
        m.id = "dup\(i)"
        records.append(m)
    }
    _ = try layer.upsert(records, now: now)
    return layer
}

@Suite struct TileRendererTests {
    let now: Int64 = 1_700_000_000_000

    @Test func emptyTileIsTheSharedTransparentPNG() throws {
        let layer = try MarkerLayer()
        let r = makeRenderer()
        for (size, d) in [(256, 1), (512, 1), (256, 2), (256, 3), (512, 3)] {
            let t = try r.renderTile(layer, tile: TileID(z: 3, x: 1, y: 2)!, tileSize: size, density: d, now: now)
            #expect(t.empty && t.markers == 0)
            #expect(t.png == TransparentTile.shared(size: size * d)!)
        }
    }

    /// Random small layers, random tiles (mostly dense ones): the culling renderer is within 1 per
    /// channel of drawing every marker.
    @Test func matchesBruteForceOnRandomLayers() throws {
        var rng = SplitMix64(seed: testSeed())
        var worst = 0, tiles = 0, culled = 0, total = 0
        for round in 0..<12 {
            let r = makeRenderer(sweepAbove: round % 2 == 0 ? 0 : .max)
            let center = LatLng(latitude: (rng.unit() - 0.5) * 120, longitude: round % 4 == 0 ? 179.99 : (rng.unit() - 0.5) * 340)
            let spread = [0.02, 0.2, 2, 30][round % 4]
            // Every third round one style (the collect's bulk path, `collectOneStyle`).
            let layer = try randomLayer(count: 150 + Int(rng.next() % 400), center: center, spreadDegrees: spread, rng: &rng, now: now,
                                        oneStyle: round % 3 == 1 ? Int(rng.next() % 6) : nil)
            for _ in 0..<6 {
                let z = Int(rng.next() % 14)
                var tile = TileID.containing(center, zoom: z)
                if rng.next() % 3 == 0, let t = TileID(z: z, x: tile.x &+ 1, y: tile.y) { tile = t }
                let size = rng.next() % 4 == 0 ? 512 : 256
                let density = 1 + Int(rng.next() % 3)
                let view = RasterView.tile(tile, tileSize: size, density: density)
                let fast = try r.render(layer, view: view, now: now)
                let slow = try bruteForce(layer, view, now: now, sprites: r.sprites)
                let diff = maxDifference(fast.canvas.pixels, slow.pixels)
                worst = max(worst, diff)
                #expect(diff <= 1, "tile \(tile) size \(size) density \(density): differs by \(diff)")
                #expect(fast.canvas.isEmpty == slow.isEmpty)
                tiles += 1; total += fast.markers; culled += fast.markers - fast.draws
            }
        }
        print("brute force: \(tiles) tiles, \(total) markers, \(culled) draws skipped or folded, worst difference \(worst)")
    }

    /// Stacks of many identical markers (semi-transparent edges drawn repeatedly) at z0 and z2.
    @Test func denseStacksMatchBruteForce() throws {
        var rng = SplitMix64(seed: testSeed())
        var layer = try MarkerLayer()
        var records: [MarkerRecord] = []
        let spots = (0..<40).map { _ in LatLng(latitude: (rng.unit() - 0.5) * 140, longitude: (rng.unit() - 0.5) * 359) }
        for i in 0..<4000 {
            let p = spots[Int(rng.next() % 40)]
            // Tiny jitter: the same device pixel at z0, different ones at z8.
            let q = LatLng(latitude: p.latitude + (rng.unit() - 0.5) * 0.01, longitude: p.longitude + (rng.unit() - 0.5) * 0.01)
            let style: IconStyle = i % 3 == 0 ? IconStyle(source: .image(id: "dot", width: 12, height: 12))
                : IconStyle(source: .pin(PinStyle(fillColor: i % 2 == 0 ? 0xFFFF_0000 : 0x80_00FF_00, scale: 0.5)))
            records.append(MarkerRecord(id: "s\(i)", position: q, style: style, zIndex: Int32(i % 2)))
        }
        _ = try layer.upsert(records, now: now)
        for (tile, d) in [(TileID(z: 0, x: 0, y: 0)!, 1), (TileID(z: 0, x: 0, y: 0)!, 2), (TileID.containing(spots[0], zoom: 8), 1)] {
            let r = makeRenderer(sweepAbove: d == 2 ? 0 : .max)
            let view = RasterView.tile(tile, tileSize: 256, density: d)
            let fast = try r.render(layer, view: view, now: now)
            let slow = try bruteForce(layer, view, now: now, sprites: r.sprites)
            let diff = maxDifference(fast.canvas.pixels, slow.pixels)
            #expect(diff <= 1, "\(tile) density \(d): differs by \(diff)")
            print("dense stacks \(tile) d\(d): \(fast.markers) markers, \(fast.draws) draws, difference \(diff)")
        }
    }

    /// Neighbouring tiles meet seamlessly: 2x2 tiles equal one canvas over the same area (exact
    /// culling), or are within 1 of it (`.withinOne`: a pixel whose earlier draws cannot matter
    /// by more than 1 may be drawn in one raster and left out in the other).
    @Test(arguments: [(256, 1, TileRenderer.Culling.exact), (256, 2, .exact), (512, 1, .exact), (256, 3, .exact),
                      (256, 1, .withinOne), (512, 2, .withinOne)])
    func seamsMatchOneBigCanvas(size: Int, density: Int, culling: TileRenderer.Culling) throws {
        var rng = SplitMix64(seed: testSeed())
        let center = LatLng(latitude: 48.8566, longitude: 2.3522)
        let layer = try randomLayer(count: 400, center: center, spreadDegrees: 0.05, rng: &rng, now: now)
        let r = makeRenderer(culling)
        let t = TileID.containing(center, zoom: 14)
        let n = size * density
        let big = RasterView(originX: Int64(t.x) * Int64(n), originY: Int64(t.y) * Int64(n), width: 2 * n, height: 2 * n,
                             scale: RasterView.tile(t, tileSize: size, density: density).scale, density: density)
        let whole = try r.render(layer, view: big, now: now).canvas
        var drawn = 0
        for dy in 0..<2 {
            for dx in 0..<2 {
                let tile = TileID(z: 14, x: t.x + UInt32(dx), y: t.y + UInt32(dy))!
                let part = try r.render(layer, view: .tile(tile, tileSize: size, density: density), now: now)
                drawn += part.markers
                for y in 0..<n {
                    let a = Array(part.canvas.pixels[(y * n * 4)..<((y + 1) * n * 4)])
                    let off = ((dy * n + y) * 2 * n + dx * n) * 4
                    let b = Array(whole.pixels[off..<(off + n * 4)])
                    let diff = maxDifference(a, b)
                    #expect(diff <= tolerance(r), "tile (\(dx), \(dy)) row \(y) differs by \(diff)")
                    if diff > tolerance(r) { return }
                }
            }
        }
        #expect(drawn > 0)
    }

    /// The antimeridian: a marker at longitude 179.9999 shows on both sides at z0 and on tile x=0 at z3.
    @Test func markersWrapAroundTheAntimeridian() throws {
        var layer = try MarkerLayer()
        _ = try layer.upsert([MarkerRecord(id: "east", position: LatLng(latitude: 0, longitude: 179.9999))], now: now)
        let r = makeRenderer()
        let z3west = try r.render(layer, view: .tile(TileID(z: 3, x: 0, y: 3)!, tileSize: 256, density: 1), now: now)
        #expect(z3west.markers == 1 && !z3west.canvas.isEmpty)
        let z3east = try r.render(layer, view: .tile(TileID(z: 3, x: 7, y: 3)!, tileSize: 256, density: 1), now: now)
        #expect(z3east.markers == 1)
        let z0 = try r.render(layer, view: .tile(TileID(z: 0, x: 0, y: 0)!, tileSize: 256, density: 1), now: now)
        #expect(z0.canvas.image[2, 120][3] > 0 && z0.canvas.image[253, 120][3] > 0)
        let slow = try bruteForce(layer, .tile(TileID(z: 0, x: 0, y: 0)!, tileSize: 256, density: 1), now: now, sprites: r.sprites)
        #expect(maxDifference(slow.pixels, z0.canvas.pixels) <= 1)
    }

    @Test func debugOverlayDrawsBorderAndText() throws {
        var layer = try MarkerLayer()
        _ = try layer.upsert([MarkerRecord(id: "a", position: LatLng(latitude: 10, longitude: 10))], now: now)
        let r = makeRenderer()
        let tile = TileID.containing(LatLng(latitude: 10, longitude: 10), zoom: 5)
        let t = try r.renderTile(layer, tile: tile, tileSize: 256, density: 1, now: now, debugOverlay: true)
        #expect(!t.empty && t.markers == 1)
        let img = try PNGCodec.decode(t.png, maxWidth: 4096, maxHeight: 4096, maxBytes: 1 << 26)
        #expect(img[0, 100][3] == 255 && img[255, 7][3] == 255 && img[100, 255][3] == 255)
        var textPixels = 0
        for y in 4..<20 { for x in 4..<150 where img[x, y][3] > 0 { textPixels += 1 } }
        #expect(textPixels > 100)
        try Golden.check("tile_debug_overlay.png", t.png)
    }

    @Test func snapshotEqualsBruteForce() throws {
        var rng = SplitMix64(seed: testSeed())
        let center = LatLng(latitude: 35.68, longitude: 139.76)
        let layer = try randomLayer(count: 500, center: center, spreadDegrees: 0.3, rng: &rng, now: now)
        let r = makeRenderer()
        let view = RasterView.snapshot(center: center, zoom: 11.3, width: 300, height: 200, density: 2)
        let fast = try r.render(layer, view: view, now: now)
        let slow = try bruteForce(layer, view, now: now, sprites: r.sprites)
        #expect(maxDifference(fast.canvas.pixels, slow.pixels) <= 1)
        #expect(fast.markers > 50)
    }

    @Test func imageIconsScaleByPixelReplication() {
        let s = TileSprite.scale(testIcon, by: 3)
        #expect(s.width == 36 && s.height == 36)
        for y in 0..<36 { for x in 0..<36 { #expect(s[x, y] == testIcon[x / 3, y / 3]) } }
    }

    @Test func repeatedDrawEqualsDrawingManyTimes() {
        var rng = SplitMix64(seed: testSeed())
        let sprite = randomImage(width: 9, height: 7, using: &rng)
        let under = randomImage(width: 9, height: 7, using: &rng)
        for times in [1, 2, 3, 17, 300] {
            var a = TileCanvas(width: 12, height: 10), b = TileCanvas(width: 12, height: 10)
            a.draw(sprite: under, atX: 1, y: 2); b.draw(sprite: under, atX: 1, y: 2)
            for _ in 0..<times { a.draw(sprite: sprite, atX: 2, y: 1) }
            b.draw(sprite: sprite, atX: 2, y: 1, times: times)
            #expect(a.pixels == b.pixels, "times \(times)")
        }
    }
}

import Foundation
import MarkerdCore
import MarkerdRender
import Testing

/// Golden tile PNGs in Fixtures: compared within 1/255 per channel (premultiplied), regenerated
/// with `MARKERD_UPDATE_GOLDEN=1 swift test --filter TileGoldenTests` (look at them before committing).
enum Golden {
    static func check(_ name: String, _ png: [UInt8]) throws {
        if ProcessInfo.processInfo.environment["MARKERD_UPDATE_GOLDEN"] == "1" {
            try Data(png).write(to: Fixtures.sourceDirectory.appendingPathComponent(name))
            print("wrote golden \(name)")
            return
        }
        let expected = try PNGCodec.decode(Fixtures.bytes(name), maxWidth: 4096, maxHeight: 4096, maxBytes: 1 << 26)
        let actual = try PNGCodec.decode(png, maxWidth: 4096, maxHeight: 4096, maxBytes: 1 << 26)
        #expect(expected.width == actual.width && expected.height == actual.height, "\(name): size")
        guard expected.width == actual.width && expected.height == actual.height else { return }
        let d = maxDifference(expected.pixels, actual.pixels)
        #expect(d <= 1, "\(name): differs by \(d)/255")
    }
}

@Suite struct TileGoldenTests {
    let now: Int64 = 1_700_000_000_000
    // Tile 14/8186/5448 (Paris area); markers placed by pixel offsets from its top-left corner.
    static let tile = TileID(z: 14, x: 8298, y: 5636)!

    static func position(_ px: Double, _ py: Double, tile: TileID = tile, size: Double = 256) -> LatLng {
        let r = tile.worldRect
        let u = tile.worldSpan / size
        return LatLng(latitude: Mercator.latitude(worldY: r.minY + py * u), longitude: Mercator.longitude(worldX: r.minX + px * u))
    }

    func render(_ records: [MarkerRecord], tile: TileID = tile, size: Int = 256, density: Int = 1) throws -> [UInt8] {
        var layer = try MarkerLayer()
        _ = try layer.upsert(records, now: now)
        return try makeRenderer().renderTile(layer, tile: tile, tileSize: size, density: density, now: now).png
    }

    @Test func defaultPinsWithLabels() throws {
        let colors: [UInt32] = [0xFFFF_0000, 0xFF00_8800, 0xFF22_44CC, 0xFFFF_9900, 0xFF88_00AA]
        var records: [MarkerRecord] = []
        for i in 0..<5 {
            let pin = PinStyle(fillColor: colors[i], label: "\(i + 1)")
            records.append(MarkerRecord(id: "p\(i)", position: Self.position(30 + Double(i) * 48, 70 + Double(i % 2) * 90),
                                        style: IconStyle(source: .pin(pin))))
        }
        records.append(MarkerRecord(id: "plain", position: Self.position(128, 240)))
        try Golden.check("tile_pins_labels.png", render(records))
    }

    @Test func imageIconsAtDensity2() throws {
        var records: [MarkerRecord] = []
        for i in 0..<4 {
            records.append(MarkerRecord(id: "d\(i)", position: Self.position(40 + Double(i) * 55, 128),
                                        style: IconStyle(source: .image(id: "dot", width: 12, height: 12),
                                                         anchor: i == 3 ? Anchor(x: 0, y: 0) : nil)))
        }
        records.append(MarkerRecord(id: "pin", position: Self.position(128, 200), style: IconStyle(source: .pin(PinStyle(scale: 0.75)))))
        try Golden.check("tile_image_icons_density2.png", render(records, density: 2))
    }

    /// A northern marker with a higher z-index is drawn over a southern one (z-index first); two
    /// equal z-indexes: the southern one on top.
    @Test func overlappingZIndex() throws {
        let records = [
            MarkerRecord(id: "north-top", position: Self.position(90, 110), style: IconStyle(source: .pin(PinStyle(fillColor: 0xFF00_66FF))), zIndex: 5),
            MarkerRecord(id: "south-under", position: Self.position(100, 125), style: IconStyle(source: .pin(PinStyle(fillColor: 0xFFFF_0000))), zIndex: 0),
            MarkerRecord(id: "north-eq", position: Self.position(170, 110), style: IconStyle(source: .pin(PinStyle(fillColor: 0xFF00_66FF))), zIndex: 1),
            MarkerRecord(id: "south-eq", position: Self.position(180, 125), style: IconStyle(source: .pin(PinStyle(fillColor: 0xFFFF_0000))), zIndex: 1),
            MarkerRecord(id: "ghost", position: Self.position(128, 220), style: IconStyle(source: .pin(PinStyle(fillColor: 0x8000_AA00, strokeColor: 0x80FF_FFFF, scale: 1.5)))),
            MarkerRecord(id: "ghost2", position: Self.position(136, 226), style: IconStyle(source: .pin(PinStyle(fillColor: 0x8000_AA00, strokeColor: 0x80FF_FFFF, scale: 1.5)))),
        ]
        let png = try render(records)
        try Golden.check("tile_zindex_overlap.png", png)
        let img = try PNGCodec.decode(png)
        // The blue z-index 5 pin covers the red one where they overlap; with equal z-index the
        // southern red pin is on top.
        #expect(img[95, 85][2] > 200 && img[95, 85][0] < 50)
        #expect(img[175, 100][0] > 200 && img[175, 100][2] < 50)
    }

    /// Pins straddling the edge between two tiles: the two tiles side by side (stored as one
    /// 512x256 image) equal one canvas over both.
    @Test func tileSeam() throws {
        var records: [MarkerRecord] = []
        for (i, dy) in [60.0, 130, 200].enumerated() {
            records.append(MarkerRecord(id: "s\(i)", position: Self.position(256 + Double(i * 9) - 9, dy),
                                        style: IconStyle(source: .pin(PinStyle(fillColor: 0xFF00_99CC, label: "\(i)")))))
        }
        var layer = try MarkerLayer()
        _ = try layer.upsert(records, now: now)
        let r = makeRenderer()
        let left = try r.render(layer, view: .tile(Self.tile, tileSize: 256, density: 1), now: now).canvas
        let rightTile = TileID(z: 14, x: Self.tile.x + 1, y: Self.tile.y)!
        let right = try r.render(layer, view: .tile(rightTile, tileSize: 256, density: 1), now: now).canvas
        var both = [UInt8](repeating: 0, count: 512 * 256 * 4)
        for y in 0..<256 {
            both.replaceSubrange((y * 512 * 4)..<(y * 512 * 4 + 1024), with: left.pixels[(y * 1024)..<(y * 1024 + 1024)])
            both.replaceSubrange((y * 512 * 4 + 1024)..<(y * 512 * 4 + 2048), with: right.pixels[(y * 1024)..<(y * 1024 + 1024)])
        }
        let base = RasterView.tile(Self.tile, tileSize: 256, density: 1)
        let whole = try r.render(layer, view: RasterView(originX: base.originX, originY: base.originY, width: 512, height: 256,
                                                         scale: base.scale, density: 1), now: now).canvas
        #expect(maxDifference(whole.pixels, both) == 0)
        #expect(!left.isEmpty && !right.isEmpty)
        try Golden.check("tile_seam_pair.png", PNGCodec.encode(RGBAImage(width: 512, height: 256, pixels: both)))
    }
}

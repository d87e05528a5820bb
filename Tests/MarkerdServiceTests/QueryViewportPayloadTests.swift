import MarkerdAPI
import MarkerdCore
import MarkerdService
import MarkerdTestSupport
import Testing

/// `queryViewportPayload` (markers written straight from the layer by `MarkerWireEncoder`)
/// against the regular path (`queryViewport`, a `V1.Marker` per marker, protobuf-c).
@Suite struct QueryViewportPayloadTests {
    /// Seeded random layers with every kind of marker field (ids with NULs and non-ASCII, zero
    /// coordinates, negative z, flags, pins, image icons, anchors, animations, attributes,
    /// extra), random viewports and limits, every page: the payload decodes to the regular
    /// response, and is byte for byte the regular response's other fields followed by each
    /// regular marker encoding as field 2.
    @Test func payloadMatchesTheRegularEncoding() throws {
        try check(varied: true)
    }

    /// The same with every marker on the default pin: a layer with one style in use, whose
    /// pages `MarkerLayer.gather` reads without the style column (`soleStyleIndex`).
    @Test func payloadMatchesTheRegularEncodingWithOneStyle() throws {
        try check(varied: false)
    }

    /// - varied: markers with every kind of field; else plain ones (default pin, no anchor,
    ///   animation, attributes or extra), ids still of every length.
    private func check(varied: Bool) throws {
        var rng = SplitMix64(seed: testSeed(varied ? "payloadMatchesTheRegularEncoding" : "payloadMatchesTheRegularEncodingWithOneStyle"))
        let s = MarkerService()
        var icon = V1.RegisterIconRequest()
        icon.iconID = "red"
        icon.png = redSquarePNG
        try mutate(s, .registerIcon, icon, as: V1.RegisterIconResponse.self)
        try makeLayer(s, "tiled")
        var native = V1.CreateLayerRequest()
        native.layerID = "native"
        var tiling = V1.TilingOptions()
        tiling.enabled = false
        var options = V1.LayerOptions()
        options.tiling = tiling
        native.options = options
        try mutate(s, .createLayer, native, as: V1.CreateLayerResponse.self)

        var markers: [V1.Marker] = []
        for i in 0..<3000 {
            var id = "m\(i)"
            switch rng.next() % 20 {
            case 0: id += "\u{0}tail"
            case 1: id = "é-\(i)-" + String(repeating: "x", count: Int(rng.next() % 200))
            default: break
            }
            // A few exact zeros, the rest around (0, 0) so that small viewports hold many markers.
            let lat = rng.next() % 25 == 0 ? 0 : (rng.unit() - 0.5) * 2
            let lon = rng.next() % 25 == 0 ? 0 : (rng.unit() - 0.5) * 2
            markers.append(marker(id, lat, lon) { m in
                guard varied else { return }
                m.zIndex = Int32(Int(rng.next() % 7) - 3)
                if rng.next() % 4 == 0 { m.visible = rng.next() % 5 != 0 }
                if rng.next() % 4 == 0 { m.clickable = rng.next() % 2 == 0 }
                if rng.next() % 10 == 0 { m.draggable = true }
                switch rng.next() % 6 {
                case 0: m.icon = .iconID("red")
                case 1: m.icon = .pin(V1.DefaultPin(fillColor: 0xFF00_FF00, scale: 1.5, label: "L\(i % 3)"))
                default: break
                }
                if rng.next() % 5 == 0 { m.anchor = V1.Anchor(x: 0.25, y: Float(rng.next() % 3) / 2) }
                if rng.next() % 30 == 0 { m.animation = V1.Animation(kind: .bounce, durationMs: 600_000) }
                if rng.next() % 3 == 0 { m.attributes = ["name": "Ville \(i) 東京", "category": "town", "population": "\(i * 13)", "k": ""] }
                if rng.next() % 30 == 0 { m.extra = [1, 0, 2] }
            })
        }
        try upsert(s, "tiled", markers)
        try upsert(s, "native", markers)

        var pagesChecked = 0, markersChecked = 0
        for _ in 0..<60 {
            let w = (rng.unit() - 0.5) * 2.5, so = (rng.unit() - 0.5) * 2.5
            let span = rng.unit() * 2
            var request = V1.QueryViewportRequest()
            request.bounds = V1.Bounds(west: w, south: so, east: w + span, north: so + span)
            request.zoom = 4 + rng.unit() * 12
            request.density = UInt32(rng.next() % 4)
            request.pageSize = UInt32(1 + rng.next() % 400)
            for layer in ["tiled", "native"] {
                request.layerID = layer
                request.pageToken = ""
                while true {
                    let regular = try s.queryViewport(request)
                    let payload = try s.queryViewportPayload(request)
                    #expect(try V1.QueryViewportResponse(serializedBytes: payload) == regular)
                    var header = regular
                    header.markers = []
                    var expected = header.serializedBytes()
                    for m in regular.markers {
                        let bytes = m.serializedBytes()
                        expected.append(0x12)
                        var n = bytes.count
                        while n >= 0x80 { expected.append(UInt8(n & 0x7F) | 0x80); n >>= 7 }
                        expected.append(UInt8(n))
                        expected += bytes
                    }
                    #expect(byteMismatch(payload, expected) == nil)
                    pagesChecked += 1
                    markersChecked += regular.markers.count
                    if regular.nextPageToken.isEmpty { break }
                    request.pageToken = regular.nextPageToken
                }
            }
        }
        #expect(markersChecked > 3000, "\(pagesChecked) pages, \(markersChecked) markers")
    }
}

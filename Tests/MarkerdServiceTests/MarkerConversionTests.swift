import MarkerdAPI
import MarkerdCore
import MarkerdService
import MarkerdTestSupport
import Testing

@Suite("API <-> core marker conversion")
struct MarkerConversionTests {
    func noIcons(_: String) -> (width: Int, height: Int, anchor: Anchor)? { nil }

    @Test("defaults are MapConductor's DefaultMarkerIcon and survive a round trip")
    func defaults() throws {
        var m = V1.Marker()
        m.id = "a"
        var p = V1.LatLng()
        p.latitude = 1.5
        p.longitude = -2.25
        m.position = p
        let r = try MarkerConversion.record(m, index: 0, nowUnixMs: 1_000, icon: noIcons)
        #expect(r.style == IconStyle.defaultPin)
        #expect(r.visible && r.clickable && !r.draggable && r.animation == nil && r.zIndex == 0)
        let back = MarkerConversion.apiMarker(r)
        guard case .pin(let pin)? = back.icon else { Issue.record("no pin"); return }
        #expect(pin.fillColor == 0xFFFF_0000 && pin.strokeColor == 0xFFFF_FFFF && pin.strokeWidth == 1)
        #expect(pin.scale == 1 && pin.labelColor == 0xFF00_0000 && pin.labelSize == 18 && pin.label == nil)
        #expect(back.anchor?.x == 0.5 && back.anchor?.y == 1.0)
        #expect(back.clickable == true && back.visible == true && back.draggable == false)
        #expect(try MarkerConversion.record(back, index: 0, nowUnixMs: 1_000, icon: noIcons) == r)
    }

    @Test("animations end duration_ms after the server applies them; restoring keeps the stored end")
    func animations() throws {
        var m = V1.Marker()
        m.id = "a"
        m.position = V1.LatLng()
        var a = V1.Animation()
        a.kind = .bounce
        a.durationMs = 250
        a.endsAtUnixMs = 99  // output only: ignored on upsert
        m.animation = a
        #expect(try MarkerConversion.record(m, index: 0, nowUnixMs: 10_000, icon: noIcons).animation?.endsAtUnixMs == 10_250)
        #expect(try MarkerConversion.record(m, index: 0, nowUnixMs: 10_000, restoring: true, icon: noIcons).animation?.endsAtUnixMs == 99)
        a.durationMs = 0
        m.animation = a
        #expect(try MarkerConversion.record(m, index: 0, nowUnixMs: 0, icon: noIcons).animation?.endsAtUnixMs
                == Int64(MarkerConversion.defaultAnimationMs))
        a.durationMs = 700_000
        m.animation = a
        #expect(throws: RPCError.self) { try MarkerConversion.record(m, index: 0, nowUnixMs: 0, icon: noIcons) }
    }

    @Test("image icons take the registered size and anchor unless the marker overrides the anchor")
    func imageIcons() throws {
        var m = V1.Marker()
        m.id = "a"
        m.position = V1.LatLng()
        m.icon = .iconID("truck")
        let registered: (String) -> (width: Int, height: Int, anchor: Anchor)? = { $0 == "truck" ? (32, 20, Anchor(x: 0.5, y: 1)) : nil }
        let r = try MarkerConversion.record(m, index: 0, nowUnixMs: 0, icon: registered)
        #expect(r.style.width == 32 && r.style.height == 20 && r.style.anchor == Anchor(x: 0.5, y: 1))
        var anchor = V1.Anchor()
        anchor.x = 0
        anchor.y = 0
        m.anchor = anchor
        #expect(try MarkerConversion.record(m, index: 0, nowUnixMs: 0, icon: registered).style.anchor == Anchor(x: 0, y: 0))
        m.icon = .iconID("bus")
        do {
            _ = try MarkerConversion.record(m, index: 4, nowUnixMs: 0, icon: registered)
            Issue.record("unknown icon accepted")
        } catch {
            #expect(error.code == .invalidArgument && error.message.contains("markers[4]") && error.message.contains("bus"))
        }
    }

    @Test("names, batches and payload limits")
    func limits() throws {
        #expect(throws: RPCError.self) { try MarkerConversion.checkName("", what: "layer_id") }
        #expect(throws: RPCError.self) { try MarkerConversion.checkName("a b", what: "layer_id") }
        #expect(throws: RPCError.self) { try MarkerConversion.checkName(String(repeating: "a", count: 129), what: "layer_id") }
        try MarkerConversion.checkName("Tokyo_2026.v-1", what: "layer_id")
        #expect(throws: RPCError.self) { try MarkerConversion.checkBatch(["a", "b", "a"], id: { $0 }, count: 3, what: "markers") }
        try MarkerConversion.checkBatch(["a", "b"], id: { $0 }, count: 2, what: "markers")
        var m = V1.Marker()
        m.id = "big"
        m.position = V1.LatLng()
        m.extra = [UInt8](repeating: 1, count: MarkerConversion.maxPayloadBytes + 1)
        #expect(throws: RPCError.self) { try MarkerConversion.record(m, index: 0, nowUnixMs: 0, icon: noIcons) }
    }
}

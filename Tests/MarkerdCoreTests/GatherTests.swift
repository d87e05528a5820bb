import MarkerdTestSupport
import Testing
@testable import MarkerdCore

/// `MarkerLayer.gather(_:)` (a page's rows read column by column, ids copied in 8-byte words)
/// against `record(_:)` of each slot (the plain path), on seeded random layers.
@Suite struct GatherTests {
    /// Layers with one style or several, ids of 1...256 bytes (the longest ones last in the
    /// arena, so the word copy must not read past its end), markers removed (freed slots,
    /// garbage in the arena) and re-added; slots in random order with repeats, and empty pages.
    @Test func gatherMatchesRecords() throws {
        let seed = testSeed("GatherTests.gatherMatchesRecords")
        var rng = SplitMix64(seed: seed)
        for round in 0..<8 {
            let oneStyle = round % 2 == 0
            var layer = try MarkerLayer(options: TilingOptions(minMarkerCount: 100))
            var markers = RestoreTests.markers(2_000 + Int(rng.next() % 2_000), ids: { i in
                switch i % 7 {
                case 0: return String(repeating: "L", count: 17 + i % 240)
                case 1: return "\(i)"
                default: return "m\(i)-" + String(repeating: "é", count: i % 9)
                }
            }, &rng)
            if oneStyle { for i in markers.indices { markers[i].style = .defaultPin } }
            // Some markers carry nothing but their own label (a payload too).
            for i in stride(from: 3, to: markers.count, by: 11) { markers[i].label = MarkerLabel(text: "label \(i)") }
            _ = try layer.upsert(markers, now: RestoreTests.now)
            for i in stride(from: Int(rng.next() % 5), to: markers.count, by: 5) { _ = layer.remove(ids: [markers[i].id]) }
            // Ids at the arena's end, some longer than 16 bytes, reusing freed slots.
            _ = try layer.upsert([MarkerRecord(id: String(repeating: "z", count: 200), position: LatLng(latitude: 1, longitude: 2)),
                                  MarkerRecord(id: "q", position: LatLng(latitude: 3, longitude: 4))], now: RestoreTests.now)
            let used = (0..<layer.table.slotCount).filter { layer.table.flags[$0] != 0 }.map(Int32.init)
            #expect(used.count == layer.count)
            for page in 0..<20 {
                let n = page == 0 ? 0 : Int(rng.next() % 1_500)
                let slots = (0..<n).map { _ in
                    let s = used[Int(rng.next() % UInt64(used.count))]
                    let t = layer.table
                    return MarkerSlot(GridEntry(x: t.x[Int(s)], y: t.y[Int(s)], z: t.zIndex[Int(s)], slot: s))
                }
                let g = layer.gather(slots)
                try #require(g.basics.count == n)
                let end = g.basics.last.map(\.idRange.upperBound) ?? 0
                #expect(g.ids.count == end + 16 && g.ids[end...].allSatisfy { $0 == 0 })
                for (slot, b) in zip(slots, g.basics) {
                    let r = layer.record(slot)
                    let same = b.zIndex == r.zIndex && b.visible == r.visible && b.clickable == r.clickable
                        && b.draggable == r.draggable && layer.styles.style(at: b.styleIndex) == r.style
                        && b.hasPayload == (r.animation != nil || !r.extra.isEmpty || r.label != nil) && b.hasAttributes == !r.attributes.isEmpty
                        && Array(g.ids[b.idRange]) == Array(r.id.utf8)
                    #expect(same, "seed \(seed) round \(round): slot \(slot.raw) gathered \(b), record \(r)")
                    if !same { return }
                }
            }
        }
    }
}

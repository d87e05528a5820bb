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
        print("GatherTests seed \(seed) (SEED=\(seed) replays)")
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
                        && b.hasPayload == (r.animation != nil || !r.attributes.isEmpty || !r.extra.isEmpty)
                        && Array(g.ids[b.idRange]) == Array(r.id.utf8)
                    #expect(same, "seed \(seed) round \(round): slot \(slot.raw) gathered \(b), record \(r)")
                    if !same { return }
                }
            }
        }
    }

    /// `gather(_:liveAt:)` on viewport pages (static markers' flags not read when they are all
    /// alike) against `gather(_:)` (every row read), and the counters behind `staticFlags`
    /// against a scan of the table, through random upserts (clickable, attributes, visibility,
    /// draggable and animations changing), removals, animation expiry and a clear.
    @Test func pageGatherWithKnownStaticFlags() throws {
        let seed = testSeed("GatherTests.pageGatherWithKnownStaticFlags")
        print("GatherTests seed \(seed) (SEED=\(seed) replays)")
        var rng = SplitMix64(seed: seed)
        let now = RestoreTests.now
        var fastPages = 0, slowPages = 0
        for round in 0..<6 {
            var layer = try MarkerLayer(options: TilingOptions(enabled: false))
            let unclickable = round % 3 == 1   // all static markers unclickable: also known
            // odd: 0 plain, 1 clickable flipped, 2 attributes, 3 extra bytes, 4 hidden (one kind per batch,
            // so that each breaks the all-alike flags alone).
            func marker(_ i: Int, odd: UInt64 = 0) -> MarkerRecord {
                let p = LatLng(latitude: 48 + Double(rng.next() % 1000) / 1e4, longitude: 2 + Double(rng.next() % 1000) / 1e4)
                var m = MarkerRecord(id: "g\(i)", position: p, clickable: !unclickable, draggable: rng.next() % 40 == 0)
                if rng.next() % 50 == 0 { m.animation = MarkerAnimation(kind: .bounce, endsAtUnixMs: now + Int64(rng.next() % 3) * 1000 - 1000) }
                if odd > 0 {
                    switch odd - 1 {
                    case 0: m.clickable.toggle()
                    case 1: m.attributes = ["k": "v"]
                    case 2: m.extra = [1, 2]
                    default: m.visible = false
                    }
                }
                return m
            }
            _ = try layer.upsert((0..<3_000).map { marker($0) }, now: now)
            for step in 0..<12 {
                switch rng.next() % 5 {
                case 0:
                    let kind = 1 + rng.next() % 4
                    _ = try layer.upsert((0..<20).map { _ in marker(Int(rng.next() % 3_000), odd: kind) }, now: now)
                case 1: _ = try layer.upsert((0..<200).map { _ in marker(Int(rng.next() % 3_000)) }, now: now)
                case 2: _ = layer.remove(ids: (0..<100).map { _ in "g\(rng.next() % 3_000)" })
                case 3: layer.expireAnimations(now: now)
                default: if step == 6 { layer.clear(); _ = try layer.upsert((0..<500).map { marker($0) }, now: now) }
                }
                // The counters against the table.
                var statics = Set<UInt8>()
                var payload = false
                for s in 0..<layer.table.slotCount {
                    let f = layer.table.flags[s]
                    guard f != 0, MarkerLayer.gridClass(f) == GridIndex.Class.staticMarker.rawValue else { continue }
                    statics.insert(f & ~(MarkerFlags.hasAttributes | MarkerFlags.hasExtra))
                    payload = payload || f & (MarkerFlags.hasAttributes | MarkerFlags.hasExtra) != 0
                }
                let expected: UInt8? = payload || statics.count > 1 ? nil
                    : statics.first ?? (MarkerFlags.occupied | MarkerFlags.visible | MarkerFlags.clickable)
                #expect(layer.staticFlags == expected, "seed \(seed) round \(round) step \(step)")
                if layer.staticFlags != nil { fastPages += 1 } else { slowPages += 1 }
                for _ in 0..<4 {
                    let w = 2 + Double(rng.next() % 900) / 1e4, s = 48 + Double(rng.next() % 900) / 1e4
                    let page = try layer.viewportPage(bounds: GeoBounds(west: w, south: s, east: w + 0.05, north: s + 0.05),
                                                      zoom: 14, limit: 1 + Int(rng.next() % 400), now: now)
                    #expect(page.liveAt == page.slots.indices.filter {
                        MarkerLayer.gridClass(layer.table.flags[Int(page.slots[$0].raw)]) == GridIndex.Class.live.rawValue
                    }, "seed \(seed) round \(round) step \(step)")
                    let fast = layer.gather(page.slots, liveAt: page.liveAt), full = layer.gather(page.slots)
                    #expect(fast.basics == full.basics && fast.ids == full.ids, "seed \(seed) round \(round) step \(step)")
                }
            }
        }
        #expect(fastPages > 10 && slowPages > 10)
    }
}

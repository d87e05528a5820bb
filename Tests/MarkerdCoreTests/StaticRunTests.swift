import MarkerdTestSupport
import Testing
@testable import MarkerdCore

/// `MarkerLayer.forEachStaticRun` (the tile renderer's bulk collect) hands over exactly the
/// markers `forEachStaticMarker` visits, in the same order: through the grid (leaves inside the
/// view as stored, leaves across its edge filtered, live markers that are static now) and
/// through the table scan of wide views.
@Suite struct StaticRunTests {
    let now: Int64 = 1_700_000_000_000

    @Test func runsHoldWhatTheVisitSees() throws {
        var rng = SplitMix64(seed: testSeed())
        var handed = 0, scanned = 0
        for round in 0..<8 {
            var layer = try MarkerLayer()
            let center = LatLng(latitude: (rng.unit() - 0.5) * 140, longitude: round % 2 == 0 ? 179.99 : (rng.unit() - 0.5) * 340)
            var records: [MarkerRecord] = []
            for i in 0..<(2000 + Int(rng.next() % 2000)) {
                // Dense clusters (deep leaves) and exact duplicates (the last level's long runs).
                let spread = [0.001, 0.05, 3.0][i % 3]
                let p = i % 17 == 0 ? center : LatLng(latitude: max(-85, min(85, center.latitude + (rng.unit() - 0.5) * spread)),
                                                       longitude: max(-180, min(180, center.longitude + (rng.unit() - 0.5) * spread)))
                var m = MarkerRecord(id: "m\(i)", position: p, style: .defaultPin, zIndex: Int32(rng.next() % 4))
                switch rng.next() % 12 {
                case 0: m.visible = false
                case 1: m.draggable = true
                case 2: m.animation = MarkerAnimation(kind: .drop, endsAtUnixMs: now + 60_000)
                case 3: m.animation = MarkerAnimation(kind: .drop, endsAtUnixMs: now - 1)   // live in the grid, static now
                default: break
                }
                records.append(m)
            }
            _ = try layer.upsert(records, now: now)
            for _ in 0..<10 {
                let z = Int(rng.next() % 16)
                let tile = TileID.containing(center, zoom: z)
                let r = tile.worldRect
                // Sometimes a view reaching past the antimeridian.
                let shift = rng.next() % 4 == 0 ? r.maxX - r.minX : 0
                let viewX = [(r.minX + shift, r.maxX + shift)]
                let upp = tile.worldSpan / 256
                let scan = z <= 2 && rng.next() % 2 == 0
                var visited: [[Int64]] = []
                layer.forEachStaticMarker(viewX: viewX, viewY0: r.minY, viewY1: r.maxY, unitsPerPx: upp, marginPx: 2, now: now,
                                          readStyles: false) { c in visited.append([Int64(c.slot), Int64(c.x), Int64(c.y), Int64(c.zIndex)]) }
                var runs: [[Int64]] = []
                layer.forEachStaticRun(viewX: viewX, viewY0: r.minY, viewY1: r.maxY, unitsPerPx: upp, marginPx: 2, now: now,
                                       scanAbove: scan ? 0 : MarkerLayer.scanAboveMarkers) { run in
                    #expect(!run.isEmpty)
                    for e in run { runs.append([Int64(e.slot), Int64(e.x), Int64(e.y), Int64(e.z)]) }
                }
                if scan {
                    // The scan visits slots in order; the walk of the grid another order.
                    #expect(runs.sorted { $0.lexicographicallyPrecedes($1) } == visited.sorted { $0.lexicographicallyPrecedes($1) },
                            "round \(round) z\(z) (scan): \(runs.count) against \(visited.count)")
                    scanned += runs.count
                } else {
                    #expect(runs == visited, "round \(round) z\(z): \(runs.count) entries against \(visited.count)")
                }
                handed += runs.count
            }
        }
        #expect(handed > 20_000 && scanned > 0, "only \(handed) entries handed over, \(scanned) scanned")
    }
}

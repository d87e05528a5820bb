import MarkerdTestSupport
import Testing
@testable import MarkerdCore

/// `SpatialCursor.sortPacked` (keys packed with their index into 8-byte words) against
/// `SpatialCursor.sort` (the 24-byte entries sorted directly), on seeded random batches: keys
/// from narrow spans (the packed path) and wide ones (its fallback), runs of equal keys
/// (ordered by id), batch sizes 0...600 (past `insertionSortLimit`), storage reused across calls.
@Suite struct SpatialCursorSortTests {
    @Test func packedSortMatchesSort() throws {
        let seed = testSeed("SpatialCursorSortTests.packedSortMatchesSort")
        print("SpatialCursorSortTests seed \(seed) (SEED=\(seed) replays)")
        var rng = SplitMix64(seed: seed)
        var layer = try MarkerLayer(options: TilingOptions(minMarkerCount: 100))
        let markers = (0..<300).map { i in
            MarkerRecord(id: "k\((i * 7919) % 300)-\(i)", position: LatLng(latitude: Double(i % 17), longitude: Double(i % 23)))
        }
        _ = try layer.upsert(markers, now: 0)
        let slots = (0..<layer.table.slotCount).filter { layer.table.flags[$0] != 0 }.map(Int32.init)
        var packed: [UInt64] = [], scratch: [SpatialCursor.Keyed] = []
        var packedPathRuns = 0
        for round in 0..<400 {
            let n = round < 4 ? round : Int(rng.next() % 600)
            // Spans: a leaf's cell (narrow), the packed limit's edge, anything (wide).
            let spanBits = [20, 40, 53, 54, 55, 64][Int(rng.next() % 6)]
            let base = rng.next()
            let distinct = 1 + Int(rng.next() % UInt64(max(1, n)))   // few distinct keys: runs of ties
            let keys = (0..<distinct).map { _ in base &+ (spanBits == 64 ? rng.next() : rng.next() % (UInt64(1) << UInt64(spanBits))) }
            var buffer = (0..<n).map { _ in
                SpatialCursor.Keyed(key: keys[Int(rng.next() % UInt64(keys.count))],
                                    entry: GridEntry(x: UInt32(truncatingIfNeeded: rng.next()), y: 0, z: 0,
                                                     slot: slots[Int(rng.next() % UInt64(slots.count))]))
            }
            // Distinct slots per key, as in the grid (one entry per marker).
            var seen = Set<[UInt64]>()
            buffer = buffer.filter { seen.insert([$0.key, UInt64(UInt32(bitPattern: $0.entry.slot))]).inserted }
            var expected = buffer
            SpatialCursor.sort(&expected, layer.table)
            let keysSpan = (buffer.map(\.key).max() ?? 0) &- (buffer.map(\.key).min() ?? 0)
            if buffer.count > 1 && keysSpan < UInt64(1) << 54 && buffer.count <= SpatialCursor.insertionSortLimit { packedPathRuns += 1 }
            SpatialCursor.sortPacked(&buffer, layer.table, packed: &packed, scratch: &scratch)
            #expect(buffer.map(\.key) == expected.map(\.key), "round \(round), seed \(seed)")
            #expect(buffer.map(\.entry.slot) == expected.map(\.entry.slot), "round \(round), seed \(seed)")
            #expect(buffer.map(\.entry.x) == expected.map(\.entry.x), "round \(round), seed \(seed)")
        }
        #expect(packedPathRuns > 100)
    }
}

import MarkerdTestSupport
import Testing
@testable import MarkerdCore

/// `MarkerLayer.upsert(_: MarkerBatch, now:)` (plain markers in columns, the UpsertMarkers fast
/// path) against `upsert(_: [MarkerRecord], now:)` of the same markers, `GridIndex.insert(_:)`
/// (new entries in spatial order) against one-by-one inserts, and
/// `MarkerBatch.firstRepeatedID` against a brute-force search.
@Suite struct BatchUpsertTests {
    static func plain(_ n: Int, ids: (Int) -> String, _ rng: inout SplitMix64) -> [MarkerRecord] {
        RestoreTests.markers(n, ids: ids, &rng).map { m in
            var m = m
            m.animation = nil
            return m
        }
    }

    /// `plain` markers and the same markers as one column batch (`RestoreTests.columnBatches`).
    static func plainBatch(_ n: Int, ids: (Int) -> String, _ rng: inout SplitMix64) throws -> (records: [MarkerRecord], batch: MarkerBatch) {
        let records = plain(n, ids: ids, &rng)
        return (records, try #require(RestoreTests.columnBatches([records])?.first))
    }

    @Test func columnBatchesUpsertLikeRecords() throws {
        let seed = testSeed("BatchUpsertTests.columnBatchesUpsertLikeRecords")
        var rng = SplitMix64(seed: seed)
        // A used layer: markers with animations, attributes, drags in progress, clusters on.
        var a = try MarkerLayer(options: TilingOptions(minMarkerCount: 100))
        a.enableGridClusters(GridClusterOptions())
        _ = try a.upsert(RestoreTests.markers(3_000, ids: { "r\($0)" }, &rng), now: RestoreTests.now)
        for i in stride(from: 0, to: 3_000, by: 17) { _ = try a.beginDrag(id: "r\(i)") }
        var b = a
        // Ids new and old, repeated across batches and within them; some become non-draggable.
        let all = Self.plain(9_000, ids: { i in i % 3 == 0 ? "r\((i * 7) % 3_500)" : "u\(i % 6_000)" }, &rng)
        let batches = RestoreTests.batches(all, &rng)
        let columns = try #require(RestoreTests.columnBatches(batches))
        for (records, batch) in zip(batches, columns) {
            let ra = try a.upsert(records, now: RestoreTests.now)
            let rb = b.upsert(batch, now: RestoreTests.now)
            #expect(ra.created == rb.created && ra.updated == rb.updated, "seed \(seed)")
        }
        // The same markers by id (a batch numbers its new slots in spatial order, not as given).
        #expect(a.table.slotCount == b.table.slotCount && a.count == b.count, "seed \(seed)")
        for s in 0..<a.table.slotCount where a.table.flags[s] != 0 {
            let id = a.table.id(Int32(s))
            #expect(a.record(Int32(s)) == b.marker(id: id), "seed \(seed): \(id)")
        }
        #expect(a.drags.count == b.drags.count && a.styles.count == b.styles.count, "seed \(seed): drags, styles")
        // New markers enter the grid after the batch's updates (in spatial order): splits and
        // merges may differ, the answers may not.
        #expect(b.grid.validate().problems.isEmpty, "seed \(seed): grid")
        #expect(a.clusters?.count == b.clusters?.count, "seed \(seed): clusters")
        try RestoreTests.compareAnswers(a, b, ids: all.map(\.id) + (0..<3_000).map { "r\($0)" }, &rng, "seed \(seed)")
    }

    /// The slots a batch creates follow the spatial order of its new markers (Morton order of
    /// their level-16 cells), whatever order they came in; repeated ids still resolve as in the
    /// marker-by-marker upsert (checked against it by id).
    @Test func batchNumbersNewSlotsInSpatialOrder() throws {
        let seed = testSeed("BatchUpsertTests.batchNumbersNewSlotsInSpatialOrder")
        var rng = SplitMix64(seed: seed)
        var a = try MarkerLayer()
        var b = a, c = a
        for round in 0..<4 {
            let (all, batch) = try Self.plainBatch(2_000, ids: { i in "v\((i * 13 + round * 977) % 5_000)" }, &rng)
            let first = b.table.slotCount
            let newIDs = all.map(\.id).filter { a.marker(id: $0) == nil }
            let ra = try a.upsert(all, now: RestoreTests.now)
            let rb = b.upsert(batch, now: RestoreTests.now)
            #expect(ra.created == rb.created && ra.updated == rb.updated, "seed \(seed) round \(round)")
            // spatialSlots: false keeps the batch's order, as the marker-by-marker upsert does.
            _ = c.upsert(batch, now: RestoreTests.now, spatialSlots: false)
            #expect((first..<c.table.slotCount).map { c.table.id(Int32($0)) } == newIDs, "seed \(seed) round \(round)")
            let cells = (first..<b.table.slotCount).map { s in
                SpatialKey.morton(x: b.table.x[s] >> 16, y: b.table.y[s] >> 16)
            }
            #expect(cells == cells.sorted(), "seed \(seed) round \(round): new slots out of spatial order")
            for m in all { #expect(a.marker(id: m.id) == b.marker(id: m.id), "seed \(seed) round \(round): \(m.id)") }
        }
        #expect(b.grid.validate().problems.isEmpty, "seed \(seed): grid")
    }

    /// A batch whose layout was computed ahead (`MarkerBatch.prepareLayout`, as the service does
    /// before taking the layer's lock) upserts exactly as one without (whose layout the layer
    /// computes): the same slots, grid nodes and entry order; a layout for another seed is not
    /// used. The layout's orders and hashes against brute-force sorts and hashing.
    @Test func preparedLayoutUpsertsLikeUnprepared() throws {
        let seed = testSeed("BatchUpsertTests.preparedLayoutUpsertsLikeUnprepared")
        var rng = SplitMix64(seed: seed)
        var a = try MarkerLayer()
        var b = a, c = a
        for round in 0..<5 {
            // Ids new and old; the last round repeats ids within the batch (early grid inserts).
            let (_, plain) = try Self.plainBatch(3_000, ids: { i in round == 4 ? "w\(i % 2_500)" : "w\((i * 11 + round * 1_301) % 7_000)" }, &rng)
            var batch = plain, other = plain
            batch.prepareLayout(idHashSeed: a.idHashSeed)
            other.prepareLayout(idHashSeed: a.idHashSeed &+ 2)
            let layout = try #require(batch.layout)
            let n = plain.count
            let world = plain.entries.map(\.world)
            let spatial = (0..<n).sorted { i, j in
                let ki = SpatialKey.morton(x: world[i].x >> 16, y: world[i].y >> 16), kj = SpatialKey.morton(x: world[j].x >> 16, y: world[j].y >> 16)
                return ki != kj ? ki < kj : i < j
            }
            #expect(mismatch(layout.spatial.map(Int.init), spatial) == nil, "seed \(seed) round \(round): spatial order")
            let hashes = spatial.map { i in
                var id = plain.id(i)
                return id.withUTF8 { MarkerTable.hash($0, seed: a.table.seed) }
            }
            #expect(mismatch(layout.hashes, hashes) == nil, "seed \(seed) round \(round): hashes")
            #expect(mismatch(String(decoding: layout.ids, as: UTF8.self), spatial.map(plain.id).joined()) == nil, "seed \(seed) round \(round): ids")
            let ra = a.upsert(batch, now: RestoreTests.now), rb = b.upsert(plain, now: RestoreTests.now)
            let rc = c.upsert(other, now: RestoreTests.now)
            #expect(ra == rb && ra == rc, "seed \(seed) round \(round)")
        }
        for (name, x) in [("unprepared", b), ("other seed", c)] {
            #expect(a.table.ids == x.table.ids && a.table.x == x.table.x && a.table.y == x.table.y, "seed \(seed): \(name) table")
            #expect(mismatch(a.grid.entries.map(\.slot), x.grid.entries.map(\.slot)) == nil, "seed \(seed): \(name) grid entries")
            #expect(RestoreTests.nodes(a.grid) == RestoreTests.nodes(x.grid), "seed \(seed): \(name) grid nodes")
        }
        #expect(a.grid.validate().problems.isEmpty, "seed \(seed): grid")
    }

    /// A batch grows the table's columns and the grid's per-slot arrays ahead, 4x at a time
    /// (`Array.reserveGrowing`): a growth leaves at least four times the old capacity.
    @Test func batchesGrowColumnsFourfold() throws {
        let seed = testSeed("BatchUpsertTests.batchesGrowColumnsFourfold")
        var rng = SplitMix64(seed: seed)
        var layer = try MarkerLayer()
        var before = layer.table.flags.capacity
        for round in 0..<6 {
            let (_, batch) = try Self.plainBatch(500 + Int(rng.next() % 3_000), ids: { "g\(round)-\($0)" }, &rng)
            _ = layer.upsert(batch, now: RestoreTests.now)
            let t = layer.table
            let capacities = [t.ids.capacity, t.idHash.capacity, t.x.capacity, t.y.capacity, t.zIndex.capacity, t.style.capacity, t.flags.capacity]
            #expect(capacities.allSatisfy { $0 >= t.slotCount }, "seed \(seed) round \(round): \(capacities)")
            if t.flags.capacity != before { #expect(t.flags.capacity >= 4 * before, "seed \(seed) round \(round): \(before) -> \(t.flags.capacity)") }
            #expect(layer.grid.pos.capacity >= t.slotCount && layer.grid.leafLevel.capacity >= t.slotCount, "seed \(seed) round \(round)")
            before = t.flags.capacity
        }
        #expect(layer.grid.validate().problems.isEmpty, "seed \(seed): grid")
    }

    @Test func firstRepeatedIDMatchesBruteForce() throws {
        let seed = testSeed("BatchUpsertTests.firstRepeatedIDMatchesBruteForce")
        var rng = SplitMix64(seed: seed)
        for round in 0..<60 {
            let n = Int(rng.next() % 400)
            let pool = 1 + Int(rng.next() % 2_000)   // small pools repeat ids
            let ids = (0..<n).map { _ in
                let k = Int(rng.next() % UInt64(pool))
                return k % 5 == 0 ? String(repeating: "long-id-", count: 1 + k % 4) + "\(k)" : "m\(k)"
            }
            let batch = try #require(RestoreTests.columnBatches([ids.map { MarkerRecord(id: $0, position: LatLng(latitude: 1, longitude: 2)) }])?.first)
            let expected = ids.indices.first { i in ids[..<i].contains(ids[i]) }
            #expect(batch.firstRepeatedID() == expected, "seed \(seed) round \(round)")
        }
    }

    @Test func batchInsertGivesTheNodesOfOneByOneInserts() throws {
        let seed = testSeed("BatchUpsertTests.batchInsertGivesTheNodesOfOneByOneInserts")
        var rng = SplitMix64(seed: seed)
        var a = GridIndex(), b = GridIndex()
        var slot: Int32 = 0
        var listed: [(entry: GridEntry, cls: UInt32)] = []
        for round in 0..<8 {
            // Batches below and above `levelwiseInsertAbove`, into a grid that already holds
            // entries (appends to old leaves, old leaves that split) and lost some (freed runs).
            let n = Int(rng.next() % (round % 2 == 0 ? 6_000 : UInt64(2 * GridIndex.levelwiseInsertAbove)))
            let items = (0..<n).map { i -> (entry: GridEntry, cls: UInt32) in
                // Dense spots (deep splits), exact duplicates, and spread.
                let spot = UInt32(truncatingIfNeeded: rng.next() % 5) &* 0x3000_0000
                let x = i % 3 == 0 ? UInt32(truncatingIfNeeded: rng.next()) : spot &+ UInt32(rng.next() % (i % 3 == 1 ? 4_000 : 1))
                let y = i % 3 == 0 ? UInt32(truncatingIfNeeded: rng.next()) : spot &+ UInt32(rng.next() % 4_000)
                defer { slot += 1 }
                // z-indices from a wide range: leaves whose removed entries held the extremes keep wider
                // bounds than their entries have, which a split narrows again.
                return (GridEntry(x: x, y: y, z: Int32(rng.next() % 61) - 30, slot: slot), UInt32(rng.next() % 3))
            }
            for (e, cls) in items { a.insert(e.slot, x: e.x, y: e.y, z: e.z, cls: cls) }
            b.insert(items)
            #expect(b.validate().problems.isEmpty, "seed \(seed) round \(round)")
            #expect(RestoreTests.nodes(a) == RestoreTests.nodes(b), "seed \(seed) round \(round): nodes differ")
            listed += items
            listed.shuffle(using: &rng)
            for (e, cls) in listed.suffix(listed.count / 4) {
                a.remove(e.slot, x: e.x, y: e.y, cls: cls)
                b.remove(e.slot, x: e.x, y: e.y, cls: cls)
            }
            listed.removeLast(listed.count / 4)
            #expect(b.validate().problems.isEmpty, "seed \(seed) round \(round) after removals")
            #expect(RestoreTests.nodes(a) == RestoreTests.nodes(b), "seed \(seed) round \(round): nodes differ after removals")
        }
    }
}

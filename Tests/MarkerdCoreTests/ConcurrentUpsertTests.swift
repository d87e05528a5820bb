import Dispatch
import MarkerdTestSupport
import Testing
@testable import MarkerdCore

/// `MarkerLayer.upsert(_:now:spatialSlots:alongside:)`: a batch upserted with its grid inserts
/// on a second thread against the same batch upserted without one. All new markers: exactly
/// the same layer (slots, table, grid nodes and entry order). Some not new (ids already in the
/// layer, ids repeated in the batch): the grid inserts made ahead are taken out again and the
/// layer answers as the one without.
@Suite struct ConcurrentUpsertTests {
    /// Runs `there` on a second thread at the same time as `here` (`.concurrent`), or both on
    /// the calling thread in either order; counts its calls.
    final class Runner: ConcurrentWork, @unchecked Sendable {
        enum Mode { case concurrent, thereFirst, hereFirst }
        let mode: Mode
        private(set) var calls = 0
        init(_ mode: Mode) { self.mode = mode }

        final class Box: @unchecked Sendable {
            let body: () -> Void
            init(_ body: @escaping () -> Void) { self.body = body }
        }

        func run(_ here: () -> Void, alongside there: () -> Void) {
            calls += 1
            switch mode {
            case .thereFirst: there(); here()
            case .hereFirst: here(); there()
            case .concurrent:
                withoutActuallyEscaping(there) { there in
                    let box = Box(there), group = DispatchGroup()
                    DispatchQueue.global().async(group: group) { box.body() }
                    here()
                    group.wait()
                }
            }
        }
    }

    static func prepared(_ n: Int, ids: (Int) -> String, seed: UInt64, _ rng: inout SplitMix64) throws -> ([MarkerRecord], MarkerBatch) {
        var (records, batch) = try BatchUpsertTests.plainBatch(n, ids: ids, &rng)
        batch.prepareLayout(idHashSeed: seed)
        return (records, batch)
    }

    /// A test's seed and generator, two equal empty layers (one to upsert into without the
    /// second thread, one with it) and a runner.
    static func start(_ name: String, _ mode: Runner.Mode) throws -> (UInt64, SplitMix64, MarkerLayer, MarkerLayer, Runner) {
        let seed = testSeed(name)
        let layer = try MarkerLayer(options: TilingOptions(minMarkerCount: 100))
        return (seed, SplitMix64(seed: seed), layer, layer, Runner(mode))
    }

    /// New markers only, batch after batch into a growing layer: the same layer exactly.
    @Test(arguments: [Runner.Mode.concurrent, .thereFirst, .hereFirst])
    func allNewGivesTheSameLayer(mode: Runner.Mode) throws {
        var (seed, rng, a, b, runner) = try Self.start("ConcurrentUpsertTests.allNewGivesTheSameLayer", mode)
        for round in 0..<6 {
            let n = MarkerLayer.concurrentUpsertAbove + Int(rng.next() % 6_000)
            let (_, batch) = try Self.prepared(n, ids: { "n\(round)-\($0)" }, seed: a.idHashSeed, &rng)
            let ra = a.upsert(batch, now: RestoreTests.now)
            let rb = b.upsert(batch, now: RestoreTests.now, alongside: runner)
            #expect(ra == rb && rb.created == n, "seed \(seed) round \(round)")
        }
        #expect(runner.calls == 6, "seed \(seed): the second thread was not used")
        #expect(a.table.ids == b.table.ids && a.table.idHash == b.table.idHash && a.table.x == b.table.x
                && a.table.y == b.table.y && a.table.zIndex == b.table.zIndex && a.table.flags == b.table.flags
                && a.table.style == b.table.style && a.table.buckets == b.table.buckets, "seed \(seed): table")
        #expect(mismatch(a.grid.entries.map(\.slot), b.grid.entries.map(\.slot)) == nil, "seed \(seed): grid entries")
        #expect(a.grid.pos == b.grid.pos && a.grid.leafLevel == b.grid.leafLevel, "seed \(seed): grid positions")
        #expect(RestoreTests.nodes(a.grid) == RestoreTests.nodes(b.grid), "seed \(seed): grid nodes")
        #expect(b.grid.validate().problems.isEmpty, "seed \(seed): grid")
        #expect(a.version == b.version && a.count == b.count && a.styles.count == b.styles.count, "seed \(seed)")
        try RestoreTests.compareAnswers(a, b, ids: [], &rng, "seed \(seed)")
    }

    /// All new markers with attributes (a few without, in scrambled wire order), batch after
    /// batch, after an arena that already ends mid-chunk: with and without the second thread,
    /// every slot reads the attributes last sent, and the arenas count the same bytes.
    @Test func allNewWithAttributesStoresTheSameAttributes() throws {
        var (seed, rng, a, b, runner) = try Self.start("ConcurrentUpsertTests.allNewWithAttributesStoresTheSameAttributes", .concurrent)
        var expected: [String: [String: String]] = [:]
        for round in 0..<5 {
            let n = round == 0 ? 333 : MarkerLayer.concurrentUpsertAbove + Int(rng.next() % 6_000)
            var batch = MarkerBatch(capacity: n)
            let pin = batch.styleIndex(IconStyle.defaultPin, hint: nil)
            let style = try #require(pin)
            for i in 0..<n {
                let id = "a\(round)-\(i)"
                let attributes = i % 10 == 3 ? [:] : AttributeArenaTests.threeAttributes(i, &rng)
                expected[id] = attributes
                let wire = AttributeArenaTests.scrambledWire(attributes, &rng)
                let ok = wire.withUnsafeBytes {
                    batch.append(id: id, position: LatLng(latitude: Double(rng.next() % 170) - 85, longitude: Double(rng.next() % 360) - 180),
                                 style: style, zIndex: 0, visible: true, clickable: true, draggable: false, extra: [], attributes: $0)
                }
                #expect(ok, "seed \(seed)")
            }
            batch.prepareLayout(idHashSeed: a.idHashSeed)
            #expect(a.upsert(batch, now: RestoreTests.now) == b.upsert(batch, now: RestoreTests.now, alongside: runner), "seed \(seed) round \(round)")
        }
        #expect(runner.calls == 4, "seed \(seed): the second thread was not used")
        #expect(a.attributes.liveBytes == b.attributes.liveBytes && a.attributes.approximateBytes == b.attributes.approximateBytes, "seed \(seed)")
        for (id, attributes) in expected {
            let sa = try #require(a.table.find(id)), sb = try #require(b.table.find(id))
            #expect(a.attributes.withBytes(sa, AttributeEncoding.decode) == attributes, "seed \(seed) \(id)")
            #expect(b.attributes.withBytes(sb, AttributeEncoding.decode) == attributes, "seed \(seed) \(id)")
            #expect(b.marker(id: id)?.attributes == attributes, "seed \(seed) \(id)")
        }
    }

    /// Batches whose ids are not all new: some already in the layer (often missed by the sample
    /// of `likelyAllNew`), or repeated in the batch (an empty layer is not sampled at all). The
    /// grid inserts made ahead are undone; the layer answers as without the second thread.
    @Test(arguments: [Runner.Mode.concurrent, .thereFirst, .hereFirst])
    func notAllNewAnswersTheSame(mode: Runner.Mode) throws {
        var (seed, rng, a, b, runner) = try Self.start("ConcurrentUpsertTests.notAllNewAnswersTheSame", mode)
        var all: [String] = []
        // Into the empty layer: 50 ids repeated (not sampled, so the grid is filled ahead and undone).
        let n0 = MarkerLayer.concurrentUpsertAbove + 1_000
        let (first, batch0) = try Self.prepared(n0, ids: { "e\($0 % (n0 - 50))" }, seed: a.idHashSeed, &rng)
        #expect(a.upsert(batch0, now: RestoreTests.now) == b.upsert(batch0, now: RestoreTests.now, alongside: runner), "seed \(seed)")
        #expect(runner.calls == 1, "seed \(seed): the empty layer's batch did not take the second thread")
        all += first.map(\.id)
        var undone = 0
        for round in 0..<8 {
            let n = MarkerLayer.concurrentUpsertAbove + Int(rng.next() % 4_000)
            // A few ids of earlier rounds (1 to 8 of them; every other round, none).
            let old = round % 2 == 0 ? 0 : 1 + Int(rng.next() % 8)
            let stride = n / max(old, 1)
            let (records, batch) = try Self.prepared(n, ids: { i in
                old > 0 && i % stride == stride / 2 && i / stride < old ? "e\((i * 31) % (n0 - 50))" : "r\(round)-\(i)"
            }, seed: a.idHashSeed, &rng)
            let calls = runner.calls
            let ra = a.upsert(batch, now: RestoreTests.now)
            let rb = b.upsert(batch, now: RestoreTests.now, alongside: runner)
            #expect(ra == rb, "seed \(seed) round \(round)")
            if runner.calls > calls && rb.updated > 0 { undone += 1 }
            all += records.map(\.id)
            #expect(b.grid.validate().problems.isEmpty, "seed \(seed) round \(round): grid")
        }
        #expect(undone > 0, "seed \(seed): no batch with old ids took the second thread")
        #expect(a.table.slotCount == b.table.slotCount, "seed \(seed)")
        try RestoreTests.compareAnswers(a, b, ids: all, &rng, "seed \(seed)")
    }

    /// Small batches, a layer with freed slots and one clustered in slot order do not take the
    /// second thread.
    @Test func gatedOut() throws {
        let seed = testSeed("ConcurrentUpsertTests.gatedOut")
        var rng = SplitMix64(seed: seed)
        var layer = try MarkerLayer()
        let runner = Runner(.concurrent)
        let (_, small) = try Self.prepared(MarkerLayer.concurrentUpsertAbove - 1, ids: { "s\($0)" }, seed: layer.idHashSeed, &rng)
        _ = layer.upsert(small, now: RestoreTests.now, alongside: runner)
        #expect(runner.calls == 0, "seed \(seed): small batch")
        _ = layer.remove(ids: ["s1", "s2"])
        let (_, big) = try Self.prepared(MarkerLayer.concurrentUpsertAbove, ids: { "t\($0)" }, seed: layer.idHashSeed, &rng)
        _ = layer.upsert(big, now: RestoreTests.now, alongside: runner)
        #expect(runner.calls == 0, "seed \(seed): freed slots")
        let (_, ordered) = try Self.prepared(MarkerLayer.concurrentUpsertAbove, ids: { "u\($0)" }, seed: layer.idHashSeed, &rng)
        var fresh = try MarkerLayer()
        _ = fresh.upsert(ordered, now: RestoreTests.now, spatialSlots: false, alongside: runner)
        #expect(runner.calls == 0, "seed \(seed): slot order kept")
        _ = fresh.upsert(big, now: RestoreTests.now, alongside: runner)
        #expect(runner.calls == 0, "seed \(seed): layout for another layer's seed")
        #expect(layer.grid.validate().problems.isEmpty && fresh.grid.validate().problems.isEmpty, "seed \(seed)")
    }
}

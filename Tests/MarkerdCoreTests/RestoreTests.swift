import MarkerdTestSupport
import Testing
@testable import MarkerdCore

/// `MarkerLayer.restore` + `finishRestore` (deferred id index, grid built in one pass) against
/// the same batches upserted one by one: the same grid nodes and leaf contents, the same table,
/// the same answers, before and after further changes.
@Suite struct RestoreTests {
    static let styles: [IconStyle] = [
        .defaultPin, IconStyle(source: .image(id: "dot", width: 8, height: 8)),
        IconStyle(source: .pin(PinStyle(fillColor: 0xFF00_FF00, label: "A"))),
    ]
    static let now: Int64 = 1_000_000

    /// Random markers: dense spots (deep splits, exact duplicates reaching the last level), a
    /// world-wide spread, every grid class, animations (some already over), attributes, extra.
    static func markers(_ n: Int, ids: (Int) -> String, _ rng: inout SplitMix64) -> [MarkerRecord] {
        let spots = (0..<6).map { _ in LatLng(latitude: Double.random(in: -70...70, using: &rng), longitude: Double.random(in: -180...180, using: &rng)) }
        return (0..<n).map { i in
            let p: LatLng
            switch i % 4 {
            case 0: p = spots[i % spots.count]   // exact duplicates
            case 1:
                let c = spots[(i / 4) % spots.count]
                p = LatLng(latitude: c.latitude + Double.random(in: -0.001...0.001, using: &rng),
                           longitude: c.longitude + Double.random(in: -0.001...0.001, using: &rng))
            default:
                p = LatLng(latitude: Double.random(in: -85...85, using: &rng), longitude: Double.random(in: -180...180, using: &rng))
            }
            let anim: MarkerAnimation? = i % 29 == 0 ? MarkerAnimation(kind: .bounce, endsAtUnixMs: now + (i % 58 == 0 ? -5 : 60_000)) : nil
            return MarkerRecord(id: ids(i), position: p, style: styles[Int(rng.next() % 3)], zIndex: Int32(rng.next() % 5) - 2,
                                visible: i % 11 != 0, clickable: i % 3 != 0, draggable: i % 17 == 0, animation: anim,
                                attributes: i % 23 == 0 ? ["k": "v\(i)"] : [:], extra: i % 31 == 0 ? [UInt8(i & 255)] : [])
        }
    }

    /// Splits `all` into batches of random sizes.
    static func batches(_ all: [MarkerRecord], _ rng: inout SplitMix64) -> [[MarkerRecord]] {
        var out: [[MarkerRecord]] = []
        var i = 0
        while i < all.count {
            let n = min(all.count - i, 1 + Int(rng.next() % 3000))
            out.append(Array(all[i..<i + n]))
            i += n
        }
        return out
    }

    /// Every node: key -> (internal, child mask or 0, count, z bounds, sorted entries of a leaf).
    static func nodes(_ g: GridIndex) -> [UInt64: String] {
        var out: [UInt64: String] = [:]
        for c in g.nodes.cells where c.key != GridCellTable.emptyKey {
            var entries: [String] = []
            if !c.isInternal { g.forEachEntry(c) { entries.append("\($0.slot):\($0.x),\($0.y),\($0.z)") } }
            out[c.key] = "\(c.isInternal) \(c.isInternal ? c.childMask : 0) \(c.count) \(c.minZ) \(c.maxZ) \(entries.sorted())"
        }
        return out
    }

    static func restored(_ batches: [[MarkerRecord]], projectSome: Bool) throws -> MarkerLayer {
        var layer = try MarkerLayer(options: TilingOptions(minMarkerCount: 100))
        for (k, b) in batches.enumerated() {
            let world = projectSome && k % 2 == 0 ? b.map { WorldPoint($0.position) } : nil
            _ = try layer.restore(b, world: world, now: now)
            #expect(layer.hasDeferredGrid)
        }
        layer.finishRestore()
        #expect(!layer.hasDeferredGrid)
        return layer
    }

    static func upserted(_ batches: [[MarkerRecord]]) throws -> MarkerLayer {
        var layer = try MarkerLayer(options: TilingOptions(minMarkerCount: 100))
        for b in batches { _ = try layer.upsert(b, now: now) }
        return layer
    }

    /// Same answers by id (slots may differ when ids repeat) for viewports, hit-tests and stats.
    static func compareAnswers(_ a: MarkerLayer, _ b: MarkerLayer, ids: [String], _ rng: inout SplitMix64, _ note: String) throws {
        #expect(a.count == b.count && a.version == b.version, "\(note): count/version")
        let sa = a.stats(now: now), sb = b.stats(now: now)   // approximateBytes differ: no split leftovers
        #expect(sa.markers == sb.markers && sa.staticMarkers == sb.staticMarkers && sa.liveMarkers == sb.liveMarkers
                && sa.hiddenMarkers == sb.hiddenMarkers && sa.mode == sb.mode, "\(note): counters")
        for id in ids { #expect(a.marker(id: id) == b.marker(id: id), "\(note): marker \(id)") }
        for _ in 0..<40 {
            let zoom = Double(rng.next() % 20)
            let c = LatLng(latitude: Double.random(in: -80...80, using: &rng), longitude: Double.random(in: -170...170, using: &rng))
            let d = 200 / Double(1 << Int(zoom))
            let bounds = GeoBounds(west: max(-180, c.longitude - d), south: max(-85, c.latitude - d), east: min(180, c.longitude + d), north: min(85, c.latitude + d))
            let qa = try a.queryViewport(bounds: bounds, zoom: zoom, limit: 500, now: now)
            let qb = try b.queryViewport(bounds: bounds, zoom: zoom, limit: 500, now: now)
            #expect(qa.markers == qb.markers && qa.staticInView == qb.staticInView && qa.liveInView == qb.liveInView, "\(note): viewport \(bounds) z\(zoom)")
            let ha = try a.hitTest(point: c, zoom: zoom + 2, tolerancePx: 40, maxResults: 20, now: now)
            let hb = try b.hitTest(point: c, zoom: zoom + 2, tolerancePx: 40, maxResults: 20, now: now)
            #expect(ha.map(\.marker) == hb.map(\.marker), "\(note): hit-test \(c)")
        }
    }

    @Test func restoreEqualsOneByOneInserts() throws {
        let seed = testSeed("RestoreTests.restoreEqualsOneByOneInserts")
        var rng = SplitMix64(seed: seed)
        let all = Self.markers(12_000, ids: { "m\($0)" }, &rng)
        let batches = Self.batches(all, &rng)
        var a = try Self.upserted(batches)
        var b = try Self.restored(batches, projectSome: true)
        let (problems, _) = b.grid.validate()
        #expect(problems.isEmpty, "seed \(seed): \(problems.prefix(5))")
        #expect(b.grid.deepestLevel == GridIndex.maxLevel)
        // Unique ids: the same slots, so the very same nodes and leaf entries.
        #expect(Self.nodes(a.grid) == Self.nodes(b.grid), "seed \(seed): grid nodes differ")
        #expect(a.table.slotCount == b.table.slotCount)
        for s in 0..<a.table.slotCount {
            #expect(a.record(Int32(s)) == b.record(Int32(s)) && a.table.flags[s] == b.table.flags[s]
                    && a.table.style[s] == b.table.style[s] && a.grid.pos.count == b.grid.pos.count, "seed \(seed): slot \(s)")
        }
        for m in all.prefix(500) { #expect(a.table.find(m.id) == b.table.find(m.id)) }
        try Self.compareAnswers(a, b, ids: all.map(\.id), &rng, "seed \(seed) restored")

        // Both keep working the same under further upserts, moves and removes.
        let more = Self.markers(3_000, ids: { "m\(($0 * 7) % 15_000)" }, &rng)
        _ = try a.upsert(more, now: Self.now)
        _ = try b.upsert(more, now: Self.now)
        let moves = (0..<2_000).map { i in (id: "m\((i * 13) % 12_000)", position: LatLng(latitude: Double(i % 160) - 80, longitude: Double(i % 360) - 180)) }
        _ = try a.move(moves)
        _ = try b.move(moves)
        let gone = (0..<4_000).map { "m\(($0 * 3) % 12_000)" }
        _ = a.remove(ids: gone)
        _ = b.remove(ids: gone)
        #expect(b.grid.validate().problems.isEmpty, "seed \(seed): after changes")
        try Self.compareAnswers(a, b, ids: all.map(\.id) + more.map(\.id), &rng, "seed \(seed) after changes")
    }

    @Test func repeatedIdsResolveLikeUpdates() throws {
        let seed = testSeed("RestoreTests.repeatedIdsResolveLikeUpdates")
        var rng = SplitMix64(seed: seed)
        // Ids repeat across batches (a fuzzy snapshot can list a marker twice) and within one.
        let all = Self.markers(8_000, ids: { i in i % 5 == 0 ? "r\(i % 700)" : "u\(i)" }, &rng)
        let batches = Self.batches(all, &rng)
        let a = try Self.upserted(batches)
        let b = try Self.restored(batches, projectSome: false)
        #expect(b.grid.validate().problems.isEmpty, "seed \(seed)")
        #expect(b.count == Set(all.map(\.id)).count)
        #expect(b.styles.count == a.styles.count, "seed \(seed): styles in use")
        try Self.compareAnswers(a, b, ids: all.map(\.id), &rng, "seed \(seed)")
        // The repeats' slots were freed: the next new ids reuse them.
        var c = b
        _ = try c.upsert([MarkerRecord(id: "new", position: LatLng(latitude: 1, longitude: 2))], now: Self.now)
        #expect(Int(c.table.find("new")!) < b.table.slotCount)
    }

    @Test func restoreIntoAUsedLayerIsAPlainUpsert() throws {
        var layer = try MarkerLayer()
        _ = try layer.upsert([MarkerRecord(id: "a", position: LatLng(latitude: 1, longitude: 1))], now: 0)
        _ = try layer.restore([MarkerRecord(id: "b", position: LatLng(latitude: 2, longitude: 2)),
                               MarkerRecord(id: "a", position: LatLng(latitude: 3, longitude: 3))], world: nil, now: 0)
        #expect(!layer.hasDeferredGrid)
        #expect(layer.count == 2 && layer.marker(id: "a")?.position == LatLng(latitude: 3, longitude: 3))
        #expect(layer.grid.validate().problems.isEmpty)
        // An invalid marker rejects the batch and changes nothing, deferred or not.
        var fresh = try MarkerLayer()
        #expect(throws: MarkerdCoreError.self) {
            _ = try fresh.restore([MarkerRecord(id: "", position: LatLng(latitude: 0, longitude: 0))], world: nil, now: 0)
        }
        #expect(fresh.count == 0 && !fresh.hasDeferredGrid)
    }

    /// `markers` as `MarkerBatch`es of the same sizes (plain markers only: no animation;
    /// attributes given as their canonical wire bytes), or nil if `append` refuses one.
    static func columnBatches(_ batches: [[MarkerRecord]]) -> [MarkerBatch]? {
        var out: [MarkerBatch] = []
        for b in batches {
            var batch = MarkerBatch(capacity: b.count)
            var last: UInt32? = nil
            for m in b {
                guard let style = batch.styleIndex(m.style, hint: last),
                      AttributeEncoding.encode(m.attributes).withUnsafeBytes({ attributes in
                          batch.append(id: m.id, position: m.position, style: style, zIndex: m.zIndex, visible: m.visible,
                                       clickable: m.clickable, draggable: m.draggable, extra: m.extra, attributes: attributes)
                      }) else { return nil }
                last = style
            }
            out.append(batch)
        }
        return out
    }

    @Test func columnBatchesRestoreLikeRecords() throws {
        let seed = testSeed("RestoreTests.columnBatchesRestoreLikeRecords")
        var rng = SplitMix64(seed: seed)
        // Plain markers (what snapshots hold), ids repeating across and within batches.
        let all = Self.markers(9_000, ids: { i in i % 7 == 0 ? "r\(i % 500)" : "u\(i)" }, &rng).map { m in
            var m = m
            m.animation = nil
            return m
        }
        let batches = Self.batches(all, &rng)
        let columns = try #require(Self.columnBatches(batches))
        #expect(zip(batches, columns).allSatisfy { b, c in (0..<b.count).allSatisfy { c.record($0) == b[$0] } }, "seed \(seed): record(i)")
        let a = try Self.restored(batches, projectSome: false)
        var b = try MarkerLayer(options: TilingOptions(minMarkerCount: 100))
        for c in columns {
            let r = b.restore(c, now: Self.now)
            #expect(r.created == c.count && b.hasDeferredGrid)
        }
        b.finishRestore()
        // The same slots, flags, style numbers, counters and grid as restoring the records.
        #expect(a.version == b.version && a.count == b.count && a.table.slotCount == b.table.slotCount, "seed \(seed)")
        for s in 0..<a.table.slotCount {
            #expect(a.table.flags[s] == b.table.flags[s] && a.table.style[s] == b.table.style[s]
                    && (a.table.flags[s] == 0 || a.record(Int32(s)) == b.record(Int32(s))), "seed \(seed): slot \(s)")
        }
        #expect(a.styles.count == b.styles.count && a.styles.maxExtents == b.styles.maxExtents
                && a.styles.minExtents == b.styles.minExtents, "seed \(seed): styles")
        #expect(Self.nodes(a.grid) == Self.nodes(b.grid), "seed \(seed): grid nodes differ")
        try Self.compareAnswers(a, b, ids: all.map(\.id), &rng, "seed \(seed) columns")

        // Into a used layer a batch is a plain upsert, as records are.
        var c = try Self.upserted([Array(all.prefix(100))])
        var d = c
        _ = try c.upsert(batches[0], now: Self.now)
        _ = d.restore(columns[0], now: Self.now)
        try Self.compareAnswers(c, d, ids: all.map(\.id), &rng, "seed \(seed) used layer")
    }

    @Test func columnBatchRefusesWhatValidateRejects() {
        var batch = MarkerBatch()
        let ok = batch.styleIndex(.defaultPin, hint: nil)!
        #expect(batch.styleIndex(IconStyle(source: .pin(PinStyle(scale: 0))), hint: ok) == nil)
        #expect(batch.styleIndex(IconStyle(source: .pin(PinStyle()), anchor: Anchor(x: 2, y: 0)), hint: nil) == nil)
        func add(_ id: String, _ p: LatLng) -> Bool {
            batch.append(id: id, position: p, style: ok, zIndex: 0, visible: true, clickable: true, draggable: false, extra: [])
        }
        #expect(!add("", LatLng(latitude: 0, longitude: 0)))
        #expect(!add(String(repeating: "x", count: 257), LatLng(latitude: 0, longitude: 0)))
        #expect(!add("a", LatLng(latitude: .nan, longitude: 0)))
        #expect(!add("a", LatLng(latitude: 0, longitude: 181)))
        #expect(batch.count == 0)
        #expect(add(String(repeating: "x", count: 256), LatLng(latitude: 85, longitude: -180)))
        #expect(batch.count == 1 && batch.styleUses == [1])
    }
}

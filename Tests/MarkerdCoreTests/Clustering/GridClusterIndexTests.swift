import MarkerdTestSupport
import Foundation
import Testing
@testable import MarkerdCore

/// Randomised tests of GridClusterIndex against a brute-force oracle (group points by cell key per zoom).
/// Fixed seeds by default (`testSeed`: `SEED=<n>` replays, `SEED=random` explores).
@Suite struct GridClusterIndexTests {
    /// The seed of the calling test, plus `salt` (which sets apart the cases of one test).
    static func seed(_ salt: UInt64, _ name: String = #function) -> UInt64 {
        testSeed("GridClusterIndexTests." + name) &+ salt
    }

    /// Brute-force clustering of `points` (one zoom): cell key -> members.
    struct Oracle {
        let options: GridClusterOptions
        let points: [Int32: ClusterPoint]
        var k: Int { options.cellsPerTileLog2 }

        func cellKey(_ p: ClusterPoint, _ z: Int) -> (UInt32, UInt32) {
            let s = UInt64(32 - z - k)
            return (UInt32(UInt64(p.x) >> s), UInt32(UInt64(p.y) >> s))
        }

        func cells(_ z: Int) -> [GridClusterID: [ClusterPoint]] {
            var out: [GridClusterID: [ClusterPoint]] = [:]
            for p in points.values {
                let (cx, cy) = cellKey(p, z)
                out[GridClusterID(zoom: z, cellX: cx, cellY: cy), default: []].append(p)
            }
            return out
        }

        func cluster(_ id: GridClusterID, _ m: [ClusterPoint]) -> GridCluster {
            let n = UInt64(m.count)
            let sx = m.reduce(UInt64(0)) { $0 + UInt64($1.x) }, sy = m.reduce(UInt64(0)) { $0 + UInt64($1.y) }
            return GridCluster(id: id, count: m.count, x: UInt32(sx / n), y: UInt32(sy / n),
                               bounds: ClusterBox(minX: m.map(\.x).min()!, minY: m.map(\.y).min()!,
                                                  maxX: m.map(\.x).max()!, maxY: m.map(\.y).max()!))
        }

        func cellRect(_ id: GridClusterID) -> (UInt32, UInt32, UInt32, UInt32) {
            let s = UInt64(32 - id.zoom - k)
            let cx = UInt64(id.cellX), cy = UInt64(id.cellY)
            return (UInt32(cx << s), UInt32(cy << s), UInt32(((cx + 1) << s) - 1), UInt32(((cy + 1) << s) - 1))
        }

        /// Expected items at `zoom` for `box`, as a set.
        func items(_ box: ClusterBox, _ zoom: Int) -> Set<GridClusterItem> {
            if zoom > options.maxZoom {
                return Set(points.values.filter { box.contains(x: $0.x, y: $0.y) }.map { .point($0) })
            }
            var out = Set<GridClusterItem>()
            for (id, m) in cells(zoom) {
                let r = cellRect(id)
                guard box.intersects(x0: r.0, y0: r.1, x1: r.2, y1: r.3) else { continue }
                if m.count >= options.minPoints { out.insert(.cluster(cluster(id, m))) } else { for p in m { out.insert(.point(p)) } }
            }
            return out
        }
    }

    static func randomPoint(_ id: Int32, _ rng: inout SplitMix64, hotspots: [(UInt32, UInt32)]) -> ClusterPoint {
        if rng.next() % 4 == 0 {
            return ClusterPoint(id: id, x: UInt32(truncatingIfNeeded: rng.next()), y: UInt32(truncatingIfNeeded: rng.next()))
        }
        let h = hotspots[Int(rng.next() % UInt64(hotspots.count))]
        // spread 2^(8...26) world units: clusters break apart at varied zooms; some exact duplicates
        let spread = UInt64(1) << (8 + rng.next() % 19)
        let dx = UInt32(truncatingIfNeeded: rng.next() % spread), dy = UInt32(truncatingIfNeeded: rng.next() % spread)
        if rng.next() % 16 == 0 { return ClusterPoint(id: id, x: h.0, y: h.1) }
        return ClusterPoint(id: id, x: h.0 &+ dx, y: h.1 &+ dy) // &+ wraps in x across the antimeridian
    }

    static func randomBox(_ rng: inout SplitMix64) -> ClusterBox {
        let a = UInt32(truncatingIfNeeded: rng.next()), b = UInt32(truncatingIfNeeded: rng.next())
        let w = UInt32(truncatingIfNeeded: rng.next() >> (UInt64(rng.next() % 32) + 32))
        let h = UInt32(truncatingIfNeeded: rng.next() >> (UInt64(rng.next() % 32) + 32))
        let minY = min(b, UInt32.max - h)
        return ClusterBox(minX: a, minY: minY, maxX: a &+ w, maxY: minY + h) // maxX < minX: crosses the antimeridian
    }

    /// `ops` random upserts, moves and removals of `ids` ids, checked against the oracle; with
    /// `bulk` > 0, starting from an index built in bulk from `bulk` random points.
    func runRandom(options: GridClusterOptions, ops: Int, ids: Int32, salt: UInt64, bulk: Int = 0, name: String = #function) throws {
        var rng = SplitMix64(seed: Self.seed(salt, name))
        let hotspots: [(UInt32, UInt32)] = (0..<6).map { i in
            i == 0 ? (UInt32.max - 5000, 1 << 31) : (UInt32(truncatingIfNeeded: rng.next()), UInt32(truncatingIfNeeded: rng.next()))
        }
        var truth: [Int32: ClusterPoint] = [:]
        let initial = (0..<bulk).map { _ in Self.randomPoint(Int32(rng.next() % UInt64(ids)), &rng, hotspots: hotspots) }
        for p in initial { truth[p.id] = p }
        var index = GridClusterIndex(options: options, points: initial)
        if bulk > 0 { try check(index, truth, options, &rng, deep: false) }
        for step in 0..<ops {
            let id = Int32(rng.next() % UInt64(ids))
            if truth[id] != nil && rng.next() % 3 == 0 {
                let removed = index.remove(id: id)
                #expect(removed)
                truth[id] = nil
            } else if let old = truth[id], rng.next() % 3 == 0 {
                // a small move (often within the point's cell: the in-place path), wrapping in x
                let r = UInt64(1) << (rng.next() % 14)
                let dx = Int64(rng.next() % (2 * r + 1)) - Int64(r), dy = Int64(rng.next() % (2 * r + 1)) - Int64(r)
                let y = UInt32(min(max(Int64(old.y) + dy, 0), Int64(UInt32.max)))
                let p = ClusterPoint(id: id, x: UInt32(truncatingIfNeeded: Int64(old.x) + dx), y: y)
                index.upsert(p)
                truth[id] = p
            } else {
                let p = Self.randomPoint(id, &rng, hotspots: hotspots)
                index.upsert(p)
                truth[id] = p
            }
            #expect(index.count == truth.count)
            if step % (ops / 4) == 0 { try check(index, truth, options, &rng, deep: false) }
        }
        let removedAbsent = index.remove(id: ids + 7)
        #expect(!removedAbsent)
        try check(index, truth, options, &rng, deep: true)

        // from scratch, in two different orders: identical outputs (including order)
        var shuffled = Array(truth.values)
        shuffled.shuffle(using: &rng)
        let fresh = GridClusterIndex(options: options, points: shuffled)
        let fresh2 = GridClusterIndex(options: options, points: truth.values.sorted { $0.id > $1.id })
        for z in 0...(options.maxZoom + 1) {
            let a = index.clusters(in: .world, zoom: z)
            #expect(a == fresh.clusters(in: .world, zoom: z), "zoom \(z)")
            #expect(a == fresh2.clusters(in: .world, zoom: z), "zoom \(z)")
            let box = Self.randomBox(&rng)
            #expect(index.clusters(in: box, zoom: z) == fresh.clusters(in: box, zoom: z))
        }
        #expect(index.cellCount == fresh.cellCount)

        // removing everything empties the index
        for id in truth.keys { index.remove(id: id) }
        #expect(index.count == 0 && index.cellCount == 0)
        #expect(index.clusters(in: .world, zoom: 0).isEmpty)
    }

    func check(_ index: GridClusterIndex, _ truth: [Int32: ClusterPoint], _ options: GridClusterOptions,
               _ rng: inout SplitMix64, deep: Bool) throws {
        let oracle = Oracle(options: options, points: truth)
        for z in 0...(options.maxZoom + 1) {
            let got = index.clusters(in: .world, zoom: z)
            #expect(got.reduce(0) { $0 + $1.count } == truth.count, "zoom \(z)")
            #expect(Set(got) == oracle.items(.world, z), "zoom \(z)")
            #expect(Set(got).count == got.count)
            for _ in 0..<(deep ? 6 : 2) {
                let box = Self.randomBox(&rng)
                let view = index.clusters(in: box, zoom: z)
                let want = oracle.items(box, z)
                #expect(Set(view) == want, "zoom \(z) box \(box)")
                #expect(view.count == want.count)
                #expect(view.reduce(0) { $0 + $1.count } == want.reduce(0) { $0 + $1.count })
                // The same items with each cluster's expansion zoom, as expansionZoom(of:) gives it.
                let withZooms = index.clustersWithExpansionZooms(in: box, zoom: z)
                #expect(withZooms.items == view)
                let clusterIDs = view.compactMap { item -> GridClusterID? in if case .cluster(let c) = item { c.id } else { nil } }
                #expect(withZooms.expansionZooms == clusterIDs.map { (try? index.expansionZoom(of: $0)) ?? -1 }, "zoom \(z) box \(box)")
            }
        }
        guard deep else { return }
        // tiles partition the world at low zooms
        for z in 0...2 {
            var all: [GridClusterItem] = []
            for ty in 0..<(1 << z) { for tx in 0..<(1 << z) { all += index.clusters(tileZ: z, x: tx, y: ty) } }
            #expect(all.count == Set(all).count)
            #expect(Set(all) == Set(index.clusters(in: .world, zoom: z)))
        }
        // children, leaves, expansion zoom, lookup of every cluster at a few zooms
        for z in [0, 3, 9, options.maxZoom] where z <= options.maxZoom {
            let cells = oracle.cells(z)
            for (id, m) in cells {
                guard m.count >= options.minPoints else {
                    #expect(index.cluster(id) == nil)
                    #expect(throws: GridClusterError.noCluster(id)) { try index.children(of: id) }
                    continue
                }
                #expect(index.cluster(id) == oracle.cluster(id, m))
                let children = try index.children(of: id)
                #expect(children.reduce(0) { $0 + $1.count } == m.count)
                if z < options.maxZoom {
                    let sub = oracle.items(.world, z + 1).filter { item in
                        switch item {
                        case .cluster(let c): return c.id.cellX >> 1 == id.cellX && c.id.cellY >> 1 == id.cellY
                        case .point(let p): return m.contains(p)
                        }
                    }
                    #expect(Set(children) == sub)
                } else {
                    #expect(children == m.sorted { $0.id < $1.id }.map { .point($0) })
                }
                let leaves = try index.leaves(of: id, limit: .max)
                #expect(Set(leaves) == Set(m) && leaves.count == m.count)
                var paged: [ClusterPoint] = []
                var off = 0
                while off < m.count + 3 {
                    paged += try index.leaves(of: id, limit: 3, offset: off)
                    off += 3
                }
                #expect(paged == leaves)
                var expected = options.maxZoom + 1
                for z2 in (z + 1)..<(options.maxZoom + 1) {
                    if Set(m.map { oracle.cellKey($0, z2).0 }).count > 1 || Set(m.map { oracle.cellKey($0, z2).1 }).count > 1 {
                        expected = z2
                        break
                    }
                }
                #expect(try index.expansionZoom(of: id) == expected)
            }
        }
    }

    @Test func randomUpdatesMatchOracleDefaults() throws {
        try runRandom(options: GridClusterOptions(), ops: 4000, ids: 600, salt: 0)
    }

    @Test func randomUpdatesMatchOracleMinPoints4() throws {
        try runRandom(options: GridClusterOptions(radius: 40, minPoints: 4, maxZoom: 12, extent: 512), ops: 3000, ids: 400, salt: 1)
    }

    /// The bulk build (Morton-ordered insertion) with duplicate ids: the last occurrence wins, as
    /// with upserts in input order, and everything observable matches the brute-force oracle.
    @Test func bulkBuildWithDuplicatesMatchesUpsertsAndOracle() throws {
        var rng = SplitMix64(seed: Self.seed(3))
        let hotspots: [(UInt32, UInt32)] = (0..<4).map { _ in (UInt32(truncatingIfNeeded: rng.next()), UInt32(truncatingIfNeeded: rng.next())) }
        let options = GridClusterOptions()
        let points = (0..<3000).map { _ in Self.randomPoint(Int32(rng.next() % 700), &rng, hotspots: hotspots) }
        var sequential = GridClusterIndex(options: options)
        var truth: [Int32: ClusterPoint] = [:]
        for p in points {
            sequential.upsert(p)
            truth[p.id] = p
        }
        let bulk = GridClusterIndex(options: options, points: points)
        #expect(bulk.count == truth.count && bulk.cellCount == sequential.cellCount)
        for (id, p) in truth { #expect(bulk.point(id: id) == p) }
        for z in 0...(options.maxZoom + 1) {
            #expect(bulk.clusters(in: .world, zoom: z) == sequential.clusters(in: .world, zoom: z), "zoom \(z)")
        }
        try check(bulk, truth, options, &rng, deep: true)
    }

    @Test func mortonKeyInterleavesYThenX() {
        #expect(GridClusterIndex.mortonKey(1, 0) == 1)
        #expect(GridClusterIndex.mortonKey(0, 1) == 2)
        #expect(GridClusterIndex.mortonKey(.max, 0) == 0x5555_5555_5555_5555)
        #expect(GridClusterIndex.mortonKey(0, .max) == 0xAAAA_AAAA_AAAA_AAAA)
        #expect(GridClusterIndex.mortonKey(1 << 31, 1 << 31) == 3 << 62)
        var rng = SplitMix64(seed: Self.seed(4))
        for _ in 0..<1000 {
            let x = UInt32(truncatingIfNeeded: rng.next()), y = UInt32(truncatingIfNeeded: rng.next())
            let key = GridClusterIndex.mortonKey(x, y)
            #expect(GridClusterIndex.mortonX(key) == x && GridClusterIndex.mortonY(key) == y)
        }
    }

    /// Updates of an index built in bulk (cells numbered breadth-first, then freed and reused).
    @Test func randomUpdatesAfterBulkBuildMatchOracle() throws {
        try runRandom(options: GridClusterOptions(), ops: 3000, ids: 500, salt: 5, bulk: 1500)
    }

    @Test func randomUpdatesMatchOracleMinPoints1() throws {
        try runRandom(options: GridClusterOptions(radius: 300, minPoints: 1, maxZoom: 10, extent: 256), ops: 2000, ids: 300, salt: 2)
    }

    @Test func optionsCellSize() {
        #expect(GridClusterOptions().cellsPerTileLog2 == 3)
        #expect(GridClusterOptions().cellSize == 64)
        #expect(GridClusterOptions(radius: 40).cellSize == 32) // 512/40 = 12.8 -> 2^4 (log2 3.68 rounds to 4)
        #expect(GridClusterOptions(radius: 1000).cellsPerTileLog2 == 0)
        #expect(!GridClusterOptions(maxZoom: 27).isValid)
        #expect(!GridClusterOptions(minPoints: 0).isValid)
    }

    @Test func worldCoordinates() {
        #expect(ClusterPoint.worldX(longitude: -180) == 0)
        #expect(ClusterPoint.worldX(longitude: 0) == 1 << 31)
        #expect(ClusterPoint.worldX(longitude: 180) == 0) // wraps
        #expect(ClusterPoint.worldY(latitude: 0) == 1 << 31)
        #expect(ClusterPoint.worldY(latitude: 90) == 0)
        #expect(ClusterPoint.worldY(latitude: -90) == .max)
        #expect(abs(ClusterPoint.longitude(worldX: ClusterPoint.worldX(longitude: 12.5)) - 12.5) < 1e-6)
        #expect(abs(ClusterPoint.latitude(worldY: ClusterPoint.worldY(latitude: 48.1)) - 48.1) < 1e-6)
        let box = ClusterBox(west: 170, south: -10, east: -170, north: 10)
        #expect(box.minX > box.maxX)
        #expect(box.contains(x: ClusterPoint.worldX(longitude: 179), y: 1 << 31))
        #expect(box.contains(x: ClusterPoint.worldX(longitude: -179), y: 1 << 31))
        #expect(!box.contains(x: ClusterPoint.worldX(longitude: 0), y: 1 << 31))
        #expect(ClusterBox(west: -200, south: -85, east: 200, north: 85).minX == 0)
    }

    @Test func antimeridianViewport() {
        var index = GridClusterIndex()
        for (i, lng) in [-178.989, -178.990, -178.991, -178.992, 179.5].enumerated() {
            index.upsert(ClusterPoint(id: Int32(i), longitude: lng, latitude: 0))
        }
        let crossing = index.clusters(west: 179, south: -10, east: -177, north: 10, zoom: 1)
        #expect(crossing.reduce(0) { $0 + $1.count } == 5)
        let west = index.clusters(west: -179, south: -10, east: -177, north: 10, zoom: 1)
        #expect(west.reduce(0) { $0 + $1.count } == 4 || west.reduce(0) { $0 + $1.count } == 5)
        // at zoom 17 (> maxZoom) points are filtered exactly
        #expect(index.clusters(west: 179, south: -10, east: -177, north: 10, zoom: 17).count == 5)
        #expect(index.clusters(west: -179, south: -10, east: -177, north: 10, zoom: 17).count == 4)
    }

    @Test func movesAndIdStability() throws {
        var index = GridClusterIndex()
        let a = ClusterPoint(id: 1, longitude: 2.35, latitude: 48.85)
        let b = ClusterPoint(id: 2, longitude: 2.351, latitude: 48.851)
        index.upsert(a)
        index.upsert(b)
        let id = index.cellID(x: a.x, y: a.y, zoom: 5)
        let c1 = try #require(index.cluster(id))
        #expect(c1.count == 2)
        // moving b within the cell keeps the id, changes the centroid
        index.upsert(ClusterPoint(id: 2, longitude: 2.36, latitude: 48.86))
        let c2 = try #require(index.cluster(id))
        #expect(c2.id == c1.id && c2.x != c1.x)
        // moving b far away dissolves the cluster
        index.upsert(ClusterPoint(id: 2, longitude: -70, latitude: -30))
        #expect(index.cluster(id) == nil)
        #expect(throws: GridClusterError.noCluster(id)) { try index.leaves(of: id) }
        #expect(throws: GridClusterError.noCluster(id)) { try index.expansionZoom(of: id) }
        #expect(index.clusters(in: .world, zoom: 5).count == 2)
        #expect(index.clusters(in: .world, zoom: 0).count == 2) // different zoom-0 cells
        // bad ids
        #expect(index.cluster(GridClusterID(zoom: 30, cellX: 0, cellY: 0)) == nil)
        #expect(index.cluster(GridClusterID(zoom: 0, cellX: 9, cellY: 0)) == nil)
    }

    /// Records the stamps of the subtrees a walk enters at its target zoom and the points emitted
    /// below each (every cell emits points: min points above the layer's size).
    struct StampRecorder: GridClusterVisitor {
        var stamps: [Int32: UInt32] = [:]
        var pointsBelow: [Int32: Set<Int32>] = [:]
        /// The entered cell of the target zoom the walk is in, if any.
        var current: Int32?
        var items: [Int32] = []

        mutating func enterSubtree(_ node: GridNodeStamp, target: Int) -> Bool {
            if node.zoom == target {
                stamps[node.cell] = node.stamp
                current = node.cell
            }
            return false
        }

        mutating func leaveSubtree(_ node: GridNodeStamp, target: Int) { if node.zoom == target { current = nil } }
        mutating func visitCluster(_ cluster: GridCluster, expansionZoom: Int) { Issue.record("no clusters expected") }

        mutating func visitPoint(_ point: ClusterPoint) {
            items.append(point.id)
            if let current { pointsBelow[current, default: []].insert(point.id) }
        }
    }

    /// Upserting a point again at its position (its owner's record changed, not its place) gives
    /// the cell of each zoom holding it a new stamp and leaves every other cell's stamp and the
    /// output alone: what lets `GridClusterMemo` keep unclustered markers' bytes by stamp.
    @Test func upsertAtTheSamePositionRestampsTheCellsAboveThePoint() {
        let seed = Self.seed(17)
        var rng = SplitMix64(seed: seed)
        let options = GridClusterOptions(radius: 60, minPoints: 1_000_000, maxZoom: 10, extent: 512)
        var index = GridClusterIndex(options: options)
        var points: [ClusterPoint] = []
        for i in 0..<3000 {
            // Hot spots, so that most points share stored cells down to deep zooms.
            let hx = UInt32(rng.next() % 4) << 30, hy = UInt32(rng.next() % 4) << 30
            let p = ClusterPoint(id: Int32(i), x: hx &+ UInt32(rng.next() % (1 << 18)), y: hy &+ UInt32(rng.next() % (1 << 18)))
            points.append(p)
            index.upsert(p)
        }
        var restamped = 0
        for round in 0..<40 {
            let zoom = Int(rng.next() % 11)
            let p = points[Int(rng.next() % UInt64(points.count))]
            var before = StampRecorder()
            index.visit(in: .world, zoom: zoom, &before)
            index.upsert(p)
            var after = StampRecorder()
            index.visit(in: .world, zoom: zoom, &after)
            #expect(after.items == before.items, "round \(round) seed \(seed)")
            for (cell, stamp) in before.stamps {
                let holdsP = before.pointsBelow[cell]?.contains(p.id) ?? false
                #expect((after.stamps[cell] != stamp) == holdsP, "round \(round) zoom \(zoom) cell \(cell) holds the point: \(holdsP) seed \(seed)")
                if holdsP { restamped += 1 }
            }
        }
        #expect(restamped > 20, "\(restamped) cells re-stamped (seed \(seed))")
    }
}

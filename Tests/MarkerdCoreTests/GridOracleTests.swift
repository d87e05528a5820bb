import MarkerdTestSupport
import Testing
@testable import MarkerdCore

/// Oracle tests aimed at the adaptive grid: dense clusters and exact duplicates (deep splits,
/// the last level's unbounded leaves), splits and merges under random moves and removes,
/// low-zoom counts over world-spread layers, hit-tests among overlapping icons with equal
/// z-index, the antimeridian and the latitude limits. Every query is compared with
/// `OracleModel`, and the grid's structure is checked along the way.
@Suite struct GridOracleTests {
    static let styles: [IconStyle] = [
        .defaultPin, IconStyle(source: .image(id: "dot", width: 8, height: 8)),
        IconStyle(source: .image(id: "bar", width: 300, height: 6), anchor: Anchor(x: 0, y: 0)),
        IconStyle(source: .pin(PinStyle(scale: 0.5))),
    ]

    static func checkStructure(_ layer: MarkerLayer, _ model: OracleModel, _ note: String) {
        let (problems, counts) = layer.grid.validate()
        #expect(problems.isEmpty, "\(note): \(problems.prefix(5))")
        #expect(counts.values.reduce(0, +) == model.markers.count, "\(note): grid holds \(counts), model \(model.markers.count)")
    }

    /// Compares every page of a viewport query and its counts with the oracle.
    static func compareViewport(_ layer: MarkerLayer, _ model: OracleModel, _ b: GeoBounds, zoom: Double, limit: Int,
                                now: Int64, _ note: String) throws {
        let expected = model.viewport(b, zoom: zoom, now: now)
        let limit = max(limit, expected.ids.count / 6 + 1)   // a few pages at most (debug builds are slow)
        var got: [String] = []
        var token: String? = nil
        var pages = 0
        repeat {
            let q = try layer.queryViewport(bounds: b, zoom: zoom, limit: limit, pageToken: token, now: now)
            #expect(q.mode == expected.mode && q.staticInView == expected.st && q.liveInView == expected.live,
                    "\(note) \(b) z\(zoom): got \(q.staticInView)/\(q.liveInView), expected \(expected.st)/\(expected.live)")
            got += q.markers.map(\.id)
            token = q.nextPageToken
            pages += 1
        } while token != nil && pages < 200
        #expect(got == expected.ids, "\(note) \(b) z\(zoom): \(got.count) vs \(expected.ids.count) markers")
    }

    static func compareHits(_ layer: MarkerLayer, _ model: OracleModel, _ p: LatLng, zoom: Double, tolerance: Double,
                            max: Int, now: Int64, _ note: String) throws {
        let got = try layer.hitTest(point: p, zoom: zoom, tolerancePx: tolerance, maxResults: max, now: now)
        let exp = model.hits(p, zoom: zoom, tolerance: tolerance, max: max, now: now)
        #expect(got.map(\.marker.id) == exp.map(\.0) && got.map(\.tiled) == exp.map(\.1), "\(note) hit \(p) z\(zoom)")
    }

    static func jitter(_ c: LatLng, metres: Double, _ rng: inout SplitMix64) -> LatLng {
        let d = metres / 111_000
        return LatLng(latitude: min(max(c.latitude + Double.random(in: -d...d, using: &rng), -Mercator.maxLatitude), Mercator.maxLatitude),
                      longitude: min(max(c.longitude + Double.random(in: -d...d, using: &rng), -180), 180))
    }

    @Test func denseClustersAndDuplicates() throws {
        let seed = testSeed("GridOracleTests.denseClustersAndDuplicates")
        var rng = SplitMix64(seed: seed)
        let centre = LatLng(latitude: 35.681236, longitude: 139.767125)
        var model = OracleModel()
        model.options = TilingOptions(minMarkerCount: 500)
        var layer = try MarkerLayer(options: model.options)
        var batch: [MarkerRecord] = []
        for i in 0..<2000 {
            // 600 exact duplicates, the rest within 3 m (a few within 3 cm), equal z mostly.
            let p = i < 600 ? centre : Self.jitter(centre, metres: i % 10 == 0 ? 0.03 : 3, &rng)
            batch.append(MarkerRecord(id: "d\(i)", position: p, style: Self.styles[i % 7 == 0 ? 1 : 0],
                                      zIndex: i % 50 == 0 ? 1 : 0, clickable: i % 13 != 0, draggable: i % 97 == 0))
        }
        _ = try layer.upsert(batch, now: 0)
        for m in batch { model.markers[m.id] = m }
        Self.checkStructure(layer, model, "seed \(seed) built")
        #expect(layer.grid.deepestLevel == GridIndex.maxLevel)
        for step in 0..<30 {
            let zoom = [10.0, 14, 17, 19, 21, 22, 22, 16.5].randomElement(using: &rng)!
            let u = Mercator.worldUnitsPerPixel(zoom: zoom)
            let c = WorldPoint(Self.jitter(centre, metres: 4, &rng))
            let w = Double.random(in: 1...600, using: &rng) * u, h = Double.random(in: 1...600, using: &rng) * u
            let b = GeoBounds(west: Mercator.longitude(worldX: Double(c.x) - w), south: Mercator.latitude(worldY: Double(c.y) + h),
                              east: Mercator.longitude(worldX: Double(c.x) + w), north: Mercator.latitude(worldY: Double(c.y) - h))
            model.options = TilingOptions(enabled: step % 3 != 0, minMarkerCount: 500)
            try layer.setOptions(model.options)
            try Self.compareViewport(layer, model, b, zoom: zoom, limit: Int.random(in: 1...700, using: &rng), now: 0, "seed \(seed) step \(step)")
            try Self.compareHits(layer, model, Self.jitter(centre, metres: 3, &rng), zoom: zoom, tolerance: [0, 14].randomElement(using: &rng)!,
                                 max: Int.random(in: 1...40, using: &rng), now: 0, "seed \(seed) step \(step)")
            // Churn: moves inside the cluster, out of it and back, z changes, removes and re-adds.
            for _ in 0..<40 {
                let id = "d\(Int.random(in: 0..<2000, using: &rng))"
                switch Int.random(in: 0..<4, using: &rng) {
                case 0:
                    let p = Bool.random(using: &rng) ? Self.jitter(centre, metres: 2, &rng) : Self.jitter(centre, metres: 2000, &rng)
                    if model.markers[id] != nil { try layer.move(id: id, to: p); model.markers[id]!.position = p }
                case 1:
                    if model.markers.removeValue(forKey: id) != nil { _ = layer.remove(ids: [id]) }
                default:
                    let m = MarkerRecord(id: id, position: Bool.random(using: &rng) ? centre : Self.jitter(centre, metres: 1, &rng),
                                         zIndex: Int32.random(in: 0...1, using: &rng))
                    _ = try layer.upsert([m], now: 0)
                    model.markers[id] = m
                }
            }
        }
        Self.checkStructure(layer, model, "seed \(seed) churned")
    }

    @Test func splitsAndMergesUnderRandomMovesAndRemoves() throws {
        let seed = testSeed("GridOracleTests.splitsAndMerges")
        var rng = SplitMix64(seed: seed)
        let spots = [LatLng(latitude: 48.85, longitude: 2.35), LatLng(latitude: 48.8501, longitude: 2.3502),
                     LatLng(latitude: -33.87, longitude: 151.21), LatLng(latitude: 0, longitude: 179.9999)]
        var model = OracleModel()
        model.options = TilingOptions(minMarkerCount: 50)
        var layer = try MarkerLayer(options: model.options)
        func randomPosition() -> LatLng {
            Self.jitter(spots.randomElement(using: &rng)!, metres: [0.5, 30, 800, 50_000].randomElement(using: &rng)!, &rng)
        }
        var peakNodes = 0
        for phase in 0..<6 {
            // Grow (phases 0, 2, 4) to a few thousand markers, then shrink to a few dozen.
            let grow = phase % 2 == 0
            for _ in 0..<(grow ? 2500 : 2400) {
                let id = "s\(Int.random(in: 0..<3000, using: &rng))"
                let op = Int.random(in: 0..<10, using: &rng)
                if grow && op < 6 || !grow && op < 1 {
                    let m = MarkerRecord(id: id, position: randomPosition(), style: Self.styles.randomElement(using: &rng)!,
                                         zIndex: Int32.random(in: -2...2, using: &rng), visible: op != 0, draggable: op == 1)
                    _ = try layer.upsert([m], now: 0)
                    model.markers[id] = m
                } else if op < 8 || model.markers.count < 40 {
                    let p = randomPosition()
                    if model.markers[id] != nil { try layer.move(id: id, to: p); model.markers[id]!.position = p }
                } else if let victim = model.markers.keys.randomElement(using: &rng) {
                    _ = layer.remove(ids: [victim]); model.markers[victim] = nil
                }
            }
            if !grow {
                while model.markers.count > 30, let victim = model.markers.keys.randomElement(using: &rng) {
                    _ = layer.remove(ids: [victim]); model.markers[victim] = nil
                }
            }
            Self.checkStructure(layer, model, "seed \(seed) phase \(phase)")
            peakNodes = max(peakNodes, layer.grid.nodes.occupied)
            if !grow {
                // Merged back: a few dozen markers need only a few nodes per class and spot.
                #expect(layer.grid.nodes.occupied < 120, "seed \(seed) phase \(phase): \(layer.grid.nodes.occupied) nodes after shrinking")
            }
            for q in 0..<12 {
                let zoom = Double.random(in: 2...22, using: &rng)
                let u = Mercator.worldUnitsPerPixel(zoom: zoom)
                let c = WorldPoint(randomPosition())
                let w = Double.random(in: 1...1200, using: &rng) * u, h = Double.random(in: 1...1200, using: &rng) * u
                let x0 = Double(c.x) - w, x1 = Double(c.x) + w
                func lng(_ x: Double) -> Double { Mercator.longitude(worldX: x < 0 ? x + OracleModel.W : (x > OracleModel.W ? x - OracleModel.W : x)) }
                let b = 2 * w >= OracleModel.W
                    ? GeoBounds(west: -180, south: Mercator.latitude(worldY: min(OracleModel.W, Double(c.y) + h)), east: 180, north: Mercator.latitude(worldY: max(0, Double(c.y) - h)))
                    : GeoBounds(west: lng(x0), south: Mercator.latitude(worldY: min(OracleModel.W, Double(c.y) + h)), east: lng(x1), north: Mercator.latitude(worldY: max(0, Double(c.y) - h)))
                model.options = TilingOptions(enabled: q % 2 == 0, minMarkerCount: 50)
                try layer.setOptions(model.options)
                try Self.compareViewport(layer, model, b, zoom: zoom, limit: Int.random(in: 1...300, using: &rng), now: 0, "seed \(seed) phase \(phase) q \(q)")
                try Self.compareHits(layer, model, randomPosition(), zoom: zoom, tolerance: 14, max: Int.random(in: 1...12, using: &rng), now: 0,
                                     "seed \(seed) phase \(phase) q \(q)")
            }
        }
        #expect(peakNodes > 100)
    }

    /// A leaf's entries are one contiguous run that moves to a bigger run when full and to a
    /// smaller one when a quarter full: exact duplicates (a last-level leaf, never split) grow
    /// to hundreds and shrink to a few, several times, with removals and in-leaf moves in
    /// between; structure, counts and pages must match the oracle throughout, and freed runs
    /// must be reused (the entry storage does not keep growing from cycle to cycle).
    @Test func leafRunsGrowShrinkAndAreReused() throws {
        let seed = testSeed("GridOracleTests.leafRuns")
        var rng = SplitMix64(seed: seed)
        let spot = LatLng(latitude: 35.6895, longitude: 139.6917)
        var model = OracleModel()
        model.options = TilingOptions(minMarkerCount: 100)
        var layer = try MarkerLayer(options: model.options)
        var storageAfterFirstCycle = 0
        for cycle in 0..<6 {
            let peak = 600
            while model.markers.count < peak {
                let id = "d\(Int.random(in: 0..<5000, using: &rng))"
                // Half exact duplicates, half within a few cm (same or neighbouring last-level leaves).
                let p = Bool.random(using: &rng) ? spot : Self.jitter(spot, metres: 0.05, &rng)
                let m = MarkerRecord(id: id, position: p, zIndex: Int32.random(in: -1...1, using: &rng),
                                     draggable: Int.random(in: 0..<20, using: &rng) == 0)
                _ = try layer.upsert([m], now: 0)
                model.markers[id] = m
            }
            Self.checkStructure(layer, model, "seed \(seed) cycle \(cycle) grown")
            let floor = Int.random(in: 1...6, using: &rng)
            while model.markers.count > floor, let victim = model.markers.keys.randomElement(using: &rng) {
                if Int.random(in: 0..<4, using: &rng) == 0, let mover = model.markers.keys.randomElement(using: &rng) {
                    let p = Self.jitter(spot, metres: 0.05, &rng)
                    try layer.move(id: mover, to: p); model.markers[mover]!.position = p
                }
                _ = layer.remove(ids: [victim]); model.markers[victim] = nil
                if model.markers.count % 97 == 0 { Self.checkStructure(layer, model, "seed \(seed) cycle \(cycle) at \(model.markers.count)") }
            }
            Self.checkStructure(layer, model, "seed \(seed) cycle \(cycle) shrunk")
            for q in 0..<4 {
                let zoom = Double.random(in: 10...22, using: &rng)
                let d = Double.random(in: 0.00001...0.01, using: &rng)
                let b = GeoBounds(west: spot.longitude - d, south: spot.latitude - d, east: spot.longitude + d, north: spot.latitude + d)
                model.options = TilingOptions(enabled: q % 2 == 0, minMarkerCount: 100)
                try layer.setOptions(model.options)
                try Self.compareViewport(layer, model, b, zoom: zoom, limit: 50, now: 0, "seed \(seed) cycle \(cycle) q \(q)")
            }
            if cycle == 0 { storageAfterFirstCycle = layer.grid.entries.count }
        }
        // Later cycles (the same peak) mostly fit in the runs freed by earlier ones; without
        // reuse, each would add about 2,000 entries (runs of 8, 16, ..., 1024) per big leaf.
        #expect(layer.grid.entries.count <= storageAfterFirstCycle + 4096,
                "seed \(seed): entry storage \(layer.grid.entries.count) after cycles, \(storageAfterFirstCycle) after the first")
    }

    @Test func lowZoomCountsOverWorldSpreadLayers() throws {
        let seed = testSeed("GridOracleTests.lowZoomCounts")
        var rng = SplitMix64(seed: seed)
        var model = OracleModel()
        model.options = TilingOptions(minMarkerCount: 100)
        var layer = try MarkerLayer(options: model.options)
        var batch: [MarkerRecord] = []
        for i in 0..<3000 {
            let p: LatLng
            switch i % 6 {
            case 0: p = LatLng(latitude: Double.random(in: -85...85, using: &rng), longitude: [180, -180].randomElement(using: &rng)!)
            case 1: p = LatLng(latitude: [Mercator.maxLatitude, -Mercator.maxLatitude].randomElement(using: &rng)!, longitude: Double.random(in: -180...180, using: &rng))
            default: p = LatLng(latitude: Double.random(in: -Mercator.maxLatitude...Mercator.maxLatitude, using: &rng), longitude: Double.random(in: -180...180, using: &rng))
            }
            batch.append(MarkerRecord(id: "w\(i)", position: p, style: (i % 11 == 0 ? Self.styles.randomElement(using: &rng)! : .defaultPin),
                                      zIndex: Int32(i % 3), visible: i % 17 != 0, draggable: i % 23 == 0,
                                      animation: i % 29 == 0 ? MarkerAnimation(kind: .drop, endsAtUnixMs: 100) : nil))
        }
        _ = try layer.upsert(batch, now: 0)
        for m in batch { model.markers[m.id] = m }
        Self.checkStructure(layer, model, "seed \(seed)")
        let oracle = OracleTests()
        for q in 0..<50 {
            let zoom = Double.random(in: 0...6, using: &rng)
            let now: Int64 = q % 2 == 0 ? 50 : 150
            var b = oracle.randomBounds(&rng, zoom: zoom, model: model)
            if q % 10 == 0 { b = GeoBounds(west: -180, south: -90, east: 180, north: 90) }
            if q % 10 == 1 { b = GeoBounds(west: 150, south: -90, east: -150, north: 90) }
            model.options = TilingOptions(enabled: q % 4 != 3, minMarkerCount: 100)
            try layer.setOptions(model.options)
            try Self.compareViewport(layer, model, b, zoom: zoom, limit: q % 4 == 3 ? 5000 : 1000, now: now, "seed \(seed) q \(q)")
        }
    }

    @Test func hitTestsAtTheEdgesOfTheWorld() throws {
        let seed = testSeed("GridOracleTests.hitTestsAtTheEdges")
        var rng = SplitMix64(seed: seed)
        var model = OracleModel()
        var layer = try MarkerLayer(options: TilingOptions(minMarkerCount: 10))
        model.options = TilingOptions(minMarkerCount: 10)
        let corners = [LatLng(latitude: 0, longitude: 180), LatLng(latitude: 0, longitude: -180),
                       LatLng(latitude: Mercator.maxLatitude, longitude: 180), LatLng(latitude: -Mercator.maxLatitude, longitude: -180),
                       LatLng(latitude: Mercator.maxLatitude, longitude: 0), LatLng(latitude: -Mercator.maxLatitude, longitude: 0)]
        var batch: [MarkerRecord] = []
        for i in 0..<1500 {
            let c = corners[i % corners.count]
            batch.append(MarkerRecord(id: "e\(i)", position: i % 5 == 0 ? c : Self.jitter(c, metres: [1, 20, 300].randomElement(using: &rng)!, &rng),
                                      style: Self.styles[i % 9 == 0 ? 2 : 0], zIndex: i % 40 == 0 ? 2 : 0, draggable: i % 31 == 0))
        }
        _ = try layer.upsert(batch, now: 0)
        for m in batch { model.markers[m.id] = m }
        Self.checkStructure(layer, model, "seed \(seed)")
        for q in 0..<80 {
            let c = corners.randomElement(using: &rng)!
            let p = Self.jitter(c, metres: [0, 5, 100].randomElement(using: &rng)!, &rng)
            try Self.compareHits(layer, model, p, zoom: Double.random(in: 8...22, using: &rng), tolerance: [0, 14, 40].randomElement(using: &rng)!,
                                 max: Int.random(in: 1...30, using: &rng), now: 0, "seed \(seed) q \(q)")
        }
    }
}

/// The branch-free rectangle tests of the grid's scans (`CellRect.holds`, `InnerRects`) against
/// the plain ones, on seeded random rectangles (edges at 0 and 2^32 - 1 included) and points
/// on, next to and away from their edges.
@Suite struct BranchFreeRectTests {
    @Test func holdsMatchesContains() {
        let seed = testSeed()
        var rng = SplitMix64(seed: seed)
        func coordinate() -> UInt32 {
            switch rng.next() % 8 {
            case 0: return 0
            case 1: return .max
            default: return UInt32(truncatingIfNeeded: rng.next()) >> UInt32(rng.next() % 32)
            }
        }
        func rect() -> CellRect {
            let a = coordinate(), b = coordinate(), c = coordinate(), d = coordinate()
            return CellRect(x0: min(a, b), y0: min(c, d), x1: max(a, b), y1: max(c, d))
        }
        for _ in 0..<3_000 {
            let rects = (0..<Int(rng.next() % 8)).map { _ in rect() }
            let q = InnerRects(rects)
            var points: [(UInt32, UInt32)] = (0..<8).map { _ in (coordinate(), coordinate()) }
            for r in rects {
                for (x, y) in [(r.x0, r.y0), (r.x1, r.y1), (r.x0 &- 1, r.y0), (r.x1 &+ 1, r.y1), (r.x0, r.y0 &- 1), (r.x1, r.y1 &+ 1)] {
                    points.append((x, y))
                }
            }
            for (x, y) in points {
                let expected = rects.contains { $0.contains(x: x, y: y) }
                let got = q.holds(x, y) || q.contains(x, y, overflow: rects)
                if got != expected || rects.contains(where: { $0.holds(x, y) != $0.contains(x: x, y: y) }) {
                    Issue.record("SEED=\(seed): (\(x), \(y)) in \(rects): \(got), expected \(expected)")
                    return
                }
            }
        }
    }
}

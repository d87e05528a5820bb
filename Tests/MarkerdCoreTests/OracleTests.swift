import MarkerdTestSupport
import Testing
@testable import MarkerdCore

/// Brute-force model of a layer: a plain dictionary scanned on every query.
struct OracleModel {
    var markers: [String: MarkerRecord] = [:]
    var options = TilingOptions()

    static let W = 4_294_967_296.0

    func world(_ m: MarkerRecord) -> WorldPoint { WorldPoint(m.position) }
    func animating(_ m: MarkerRecord, _ now: Int64) -> Bool {
        guard let a = m.animation, a.kind != .none else { return false }
        return a.endsAtUnixMs > now
    }
    func isStatic(_ m: MarkerRecord, _ now: Int64) -> Bool { m.visible && !m.draggable && !animating(m, now) }
    func isLive(_ m: MarkerRecord, _ now: Int64) -> Bool { m.draggable || animating(m, now) }
    func mode(_ now: Int64) -> TilingMode {
        options.enabled && markers.values.filter { isStatic($0, now) }.count >= Int(options.minMarkerCount) ? .tiled : .native
    }
    func key(_ m: MarkerRecord) -> DrawKey { DrawKey(zIndex: m.zIndex, worldY: world(m).y, id: Array(m.id.utf8)) }

    /// Closed icon rectangle vs closed area, in world units, with the world wrapping in x.
    func overlaps(_ m: MarkerRecord, viewX: [(Double, Double)], y0: Double, y1: Double, u: Double) -> Bool {
        let p = world(m), e = m.style.extents
        let my = Double(p.y), mx = Double(p.x)
        if my + e.down * u < y0 || my - e.up * u > y1 { return false }
        for (a, b) in viewX {
            for shift in [0, -Self.W, Self.W] {
                if mx - e.left * u + shift <= b && mx + e.right * u + shift >= a { return true }
            }
        }
        return false
    }

    /// Markers in view (ids in spatial order, as QueryViewport pages them) and their counts.
    func viewport(_ b: GeoBounds, zoom: Double, now: Int64) -> (mode: TilingMode, ids: [String], st: Int, live: Int) {
        let u = Mercator.worldUnitsPerPixel(zoom: zoom)
        let yr = b.worldYRange
        let vx = b.worldXRanges.map { ($0.lowerBound, $0.upperBound) }
        let mode = self.mode(now)
        var st = 0, live = 0
        var out: [MarkerRecord] = []
        for m in markers.values where m.visible && overlaps(m, viewX: vx, y0: yr.lowerBound, y1: yr.upperBound, u: u) {
            if isLive(m, now) { live += 1 } else { st += 1 }
            if mode == .native || isLive(m, now) { out.append(m) }
        }
        let sorted = out.map { (SpatialKey(point: world($0), id: Array($0.id.utf8)), $0.id) }.sorted { $0.0 < $1.0 }
        return (mode, sorted.map(\.1), st, live)
    }

    func hits(_ p: LatLng, zoom: Double, tolerance: Double, max: Int, now: Int64) -> [(String, Bool)] {
        let u = Mercator.worldUnitsPerPixel(zoom: zoom)
        let px = Mercator.worldX(longitude: p.longitude), py = Mercator.worldY(latitude: p.latitude), t = tolerance * u
        let tiled = mode(now) == .tiled
        let found = markers.values.filter { $0.visible && $0.clickable && overlaps($0, viewX: [(px - t, px + t)], y0: py - t, y1: py + t, u: u) }
        return found.map { (key($0), $0) }.sorted { $1.0 < $0.0 }.prefix(max).map { ($0.1.id, tiled && isStatic($0.1, now)) }
    }
}

@Suite struct OracleTests {
    static let hotspots: [LatLng] = [
        LatLng(latitude: 0, longitude: 179.9995), LatLng(latitude: 0.5, longitude: -179.9995),
        LatLng(latitude: 85.0511, longitude: 10), LatLng(latitude: -85.0511, longitude: -120),
        LatLng(latitude: 35.68, longitude: 139.76), LatLng(latitude: 48.85, longitude: 2.35),
    ]
    static let styles: [IconStyle] = [
        .defaultPin, IconStyle(source: .pin(PinStyle(scale: 2.5))),
        IconStyle(source: .image(id: "dot", width: 8, height: 8)),
        IconStyle(source: .image(id: "bar", width: 300, height: 6), anchor: Anchor(x: 0, y: 0)),
        IconStyle(source: .image(id: "tall", width: 10, height: 200), anchor: Anchor(x: 1, y: 1)),
    ]

    func randomPosition(_ rng: inout SplitMix64) -> LatLng {
        if Int.random(in: 0..<5, using: &rng) == 0 {
            return LatLng(latitude: Double.random(in: -85...85, using: &rng), longitude: Double.random(in: -180...180, using: &rng))
        }
        let h = Self.hotspots.randomElement(using: &rng)!
        let spread = [1e-5, 1e-4, 1e-3, 1e-2, 0.3].randomElement(using: &rng)!
        let lat = min(max(h.latitude + Double.random(in: -spread...spread, using: &rng), -Mercator.maxLatitude), Mercator.maxLatitude)
        var lng = h.longitude + Double.random(in: -spread...spread, using: &rng)
        if lng > 180 { lng -= 360 } else if lng < -180 { lng += 360 }
        return LatLng(latitude: lat, longitude: lng)
    }

    /// Different styles with the same icon extents: queries then skip the per-marker style
    /// lookup (`minExtents == maxExtents`), a fast path rounds 1 and 4 check.
    static let sameExtentStyles: [IconStyle] = [
        .defaultPin, IconStyle(source: .pin(PinStyle(fillColor: 0xFF00_00FF))), IconStyle(source: .pin(PinStyle(label: "7"))),
    ]

    func randomMarker(_ id: String, _ rng: inout SplitMix64, now: Int64, styles: [IconStyle] = OracleTests.styles) -> MarkerRecord {
        let roll = Int.random(in: 0..<20, using: &rng)
        return MarkerRecord(
            id: id, position: randomPosition(&rng), style: styles.randomElement(using: &rng)!,
            zIndex: Int32.random(in: -1...1, using: &rng), visible: roll != 0, clickable: roll != 1, draggable: roll == 2 || roll == 3,
            animation: roll >= 4 && roll < 7 ? MarkerAnimation(kind: .bounce, endsAtUnixMs: now + Int64.random(in: -50...400, using: &rng)) : nil,
            attributes: roll == 8 ? ["r": "\(roll)"] : [:], extra: roll == 9 ? [9] : [])
    }

    func randomBounds(_ rng: inout SplitMix64, zoom: Double, model: OracleModel) -> GeoBounds {
        let u = Mercator.worldUnitsPerPixel(zoom: zoom)
        let center = (model.markers.values.randomElement(using: &rng)?.position).flatMap { Bool.random(using: &rng) ? $0 : nil } ?? randomPosition(&rng)
        let wpx = Double.random(in: 1...2500, using: &rng), hpx = Double.random(in: 1...2500, using: &rng)
        let cx = Mercator.worldX(longitude: center.longitude), cy = Mercator.worldY(latitude: center.latitude)
        let half = wpx * u / 2
        let (west, east): (Double, Double)
        if 2 * half >= OracleModel.W {
            (west, east) = (-180, 180)
        } else {
            func wrap(_ x: Double) -> Double { Mercator.longitude(worldX: x < 0 ? x + OracleModel.W : (x > OracleModel.W ? x - OracleModel.W : x)) }
            (west, east) = (wrap(cx - half), wrap(cx + half))
        }
        let north = Mercator.latitude(worldY: max(0, cy - hpx * u / 2)), south = Mercator.latitude(worldY: min(OracleModel.W, cy + hpx * u / 2))
        return GeoBounds(west: west, south: min(south, north), east: east, north: north)
    }

    @Test func randomizedAgainstBruteForce() throws {
        let seed = testSeed("OracleTests.randomizedAgainstBruteForce")
        var rng = SplitMix64(seed: seed)
        var compared = 0, hitsCompared = 0, tiledQueries = 0, multiPage = 0
        for round in 0..<5 {
            var model = OracleModel()
            model.options = TilingOptions(enabled: round < 3, minMarkerCount: UInt32.random(in: 20...120, using: &rng))
            let styles = round == 1 || round == 4 ? Self.sameExtentStyles : Self.styles
            var layer = try MarkerLayer(options: model.options)
            var now: Int64 = 1_000
            var drags: [String: DragID] = [:]
            let idPool = (0..<260).map { i in ["m\(i)", "m\(i)x", "é\(i)", "\(i)"][i % 4] }
            for step in 0..<350 {
                now += Int64.random(in: 0...5, using: &rng)
                let op = Int.random(in: 0..<100, using: &rng)
                switch op {
                case 0..<35:
                    let batch = (0..<Int.random(in: 1...8, using: &rng)).map { _ in randomMarker(idPool.randomElement(using: &rng)!, &rng, now: now, styles: styles) }
                    let before = Set(model.markers.keys)
                    let r = try layer.upsert(batch, now: now)
                    var created = 0
                    var seen = before
                    for m in batch {
                        if seen.insert(m.id).inserted { created += 1 }
                        var stored = m
                        if let a = m.animation, a.endsAtUnixMs <= now { stored.animation = nil }
                        model.markers[m.id] = stored
                        if !m.draggable { drags[m.id] = nil }
                    }
                    #expect(r.created == created && r.updated == batch.count - created)
                case 35..<50:
                    let moves = (0..<Int.random(in: 1...6, using: &rng)).map { _ in (id: idPool.randomElement(using: &rng)!, position: randomPosition(&rng)) }
                    let r = try layer.move(moves)
                    for mv in moves where model.markers[mv.id] != nil { model.markers[mv.id]!.position = mv.position }
                    #expect(r.notFoundIDs == moves.map(\.id).filter { model.markers[$0] == nil })
                case 50..<58:
                    let ids = (0..<Int.random(in: 1...5, using: &rng)).map { _ in idPool.randomElement(using: &rng)! }
                    let r = layer.remove(ids: ids)
                    var removed = 0
                    for id in ids where model.markers.removeValue(forKey: id) != nil { removed += 1; drags[id] = nil }
                    #expect(r.removed == removed)
                case 58..<64:
                    let id = idPool.randomElement(using: &rng)!
                    if let m = model.markers[id] {
                        if let d = drags[id] {
                            let pos = randomPosition(&rng)
                            switch Int.random(in: 0..<3, using: &rng) {
                            case 0: try layer.dragTo(d, pos); model.markers[id]!.position = pos
                            case 1: _ = try layer.endDrag(d, at: pos); model.markers[id]!.position = pos; drags[id] = nil
                            default:
                                let back = try layer.cancelDrag(d); drags[id] = nil
                                model.markers[id]!.position = back.position
                            }
                        } else if m.draggable {
                            drags[id] = try layer.beginDrag(id: id).dragID
                            #expect(throws: MarkerdCoreError.self) { try layer.beginDrag(id: id) }
                        } else {
                            #expect(throws: MarkerdCoreError.notDraggable(id: id)) { try layer.beginDrag(id: id) }
                        }
                    }
                case 64..<68:
                    _ = layer.expireAnimations(now: now)
                    for (id, m) in model.markers where m.animation.map({ $0.endsAtUnixMs <= now }) ?? false { model.markers[id]!.animation = nil }
                case 68..<70:
                    if Int.random(in: 0..<10, using: &rng) == 0 {
                        layer.clear(); model.markers = [:]; drags = [:]
                    }
                case 70..<85:
                    let zoom = [0, 1, 3, 5, 8, 12, 14, 16, 18, 22].randomElement(using: &rng)! + Double.random(in: 0..<1, using: &rng) * (Bool.random(using: &rng) ? 1 : 0)
                    let z = min(zoom, 22)
                    let b = randomBounds(&rng, zoom: z, model: model)
                    let expected = model.viewport(b, zoom: z, now: now)
                    var got: [String] = []
                    var token: String? = nil
                    let limit = max(Int.random(in: 1...40, using: &rng), expected.ids.count / 6)
                    var pages = 0
                    repeat {
                        let q = try layer.queryViewport(bounds: b, zoom: z, density: Double(Int.random(in: 1...3, using: &rng)),
                                                        limit: limit, pageToken: token, now: now)
                        #expect(q.mode == expected.mode && q.staticInView == expected.st && q.liveInView == expected.live,
                                "seed \(seed) step \(step) \(b) z\(z)")
                        #expect(q.markers.count <= limit)
                        got += q.markers.map(\.id)
                        token = q.nextPageToken
                        pages += 1
                    } while token != nil && pages < 1000
                    compared += got.count
                    if expected.mode == .tiled { tiledQueries += 1 }
                    if pages > 1 { multiPage += 1 }
                    #expect(got == expected.ids, "seed \(seed) step \(step) \(b) z\(z)")
                default:
                    let zoom = Double.random(in: 0...22, using: &rng)
                    let target = (model.markers.values.randomElement(using: &rng)?.position) ?? randomPosition(&rng)
                    let u = Mercator.worldUnitsPerPixel(zoom: zoom)
                    let dx = Double.random(in: -60...60, using: &rng) * u, dy = Double.random(in: -60...60, using: &rng) * u
                    var wx = Mercator.worldX(longitude: target.longitude) + dx
                    if wx < 0 { wx += OracleModel.W } else if wx > OracleModel.W { wx -= OracleModel.W }
                    let wy = min(max(Mercator.worldY(latitude: target.latitude) + dy, 0), OracleModel.W)
                    let p = LatLng(latitude: min(max(Mercator.latitude(worldY: wy), -Mercator.maxLatitude), Mercator.maxLatitude),
                                   longitude: Mercator.longitude(worldX: wx))
                    let tol: Double = [0, 14, 30].randomElement(using: &rng)!
                    let maxR = Int.random(in: 1...12, using: &rng)
                    let got = try layer.hitTest(point: p, zoom: zoom, density: 2, tolerancePx: tol, maxResults: maxR, now: now)
                    let exp = model.hits(p, zoom: zoom, tolerance: tol, max: maxR, now: now)
                    hitsCompared += exp.count
                    #expect(got.map { $0.marker.id } == exp.map { $0.0 } && got.map { $0.tiled } == exp.map { $0.1 }, "seed \(seed) step \(step)")
                }
                if step % 150 == 0 {
                    let s = layer.stats(now: now)
                    #expect(s.markers == model.markers.count)
                    #expect(s.staticMarkers == model.markers.values.filter { model.isStatic($0, now) }.count)
                    #expect(s.liveMarkers == model.markers.values.filter { model.isLive($0, now) }.count)
                    #expect(s.hiddenMarkers == model.markers.values.filter { !$0.visible }.count)
                    if styles == Self.sameExtentStyles && !model.markers.isEmpty {
                        #expect(layer.styles.minExtents == layer.styles.maxExtents, "the same-extent fast path is not exercised")
                    }
                    var bad: [String] = []
                    for m in model.markers.values {
                        let got = layer.marker(id: m.id)
                        if !(got?.position == WorldPoint(m.position).latLng && got?.zIndex == m.zIndex && got?.style == m.style
                             && got?.animation == m.animation && got?.attributes == m.attributes && got?.extra == m.extra) { bad.append(m.id) }
                    }
                    #expect(bad.isEmpty, "seed \(seed) step \(step): records differ for \(bad)")
                }
            }
        }
        // The random cases reach what they are for (about 4,000-6,000 markers, 400-550 hits,
        // 50-120 TILED answers and 60-90 paged ones over seeds).
        #expect(compared > 1000 && hitsCompared > 100 && tiledQueries > 10 && multiPage > 10,
                "seed \(seed): \(compared) viewport markers, \(hitsCompared) hits, \(tiledQueries) tiled queries, \(multiPage) multi-page")
    }

    /// Pages through viewports (both modes, random limits, exact duplicates, icons across the
    /// edges, the antimeridian) twice: on a layer that does not change, the pages joined must be
    /// the oracle's list, in order; with markers added, moved, removed and restyled between
    /// pages, every page must hold only markers in view at that time, in spatial order, after
    /// the token, and every marker left alone during the paging and in view must come exactly once.
    @Test func pagingInSpatialOrderAgainstBruteForce() throws {
        let seed = testSeed("OracleTests.pagingInSpatialOrder")
        var rng = SplitMix64(seed: seed)
        var pagesSeen = 0, changedPaging = 0
        for round in 0..<4 {
            var model = OracleModel()
            model.options = TilingOptions(enabled: round % 2 == 1, minMarkerCount: 50)
            var layer = try MarkerLayer(options: model.options)
            var next = 0
            func newMarker(_ rng: inout SplitMix64) -> MarkerRecord {
                next += 1
                var m = randomMarker("q\(next)", &rng, now: 0)
                // A few exact duplicates of an existing position: equal Morton keys, ordered by id.
                if next % 9 == 0, let other = model.markers.values.randomElement(using: &rng) { m.position = other.position }
                return m
            }
            let batch = (0..<1500).map { _ in newMarker(&rng) }
            _ = try layer.upsert(batch, now: 0)
            for m in batch { model.markers[m.id] = m }
            for query in 0..<12 {
                let zoom = [3.0, 8, 12, 14.5, 17, 20].randomElement(using: &rng)!
                let b = randomBounds(&rng, zoom: zoom, model: model)
                let changing = query % 2 == 1
                let first = model.viewport(b, zoom: zoom, now: 0)
                let limit = max(Int.random(in: 1...60, using: &rng), first.ids.count / 15)
                var got: [String] = [], token: String? = nil, pages = 0
                var touched: Set<String> = []
                repeat {
                    let q = try layer.queryViewport(bounds: b, zoom: zoom, limit: limit, pageToken: token, now: 0)
                    let expected = model.viewport(b, zoom: zoom, now: 0)
                    let note = "seed \(seed) round \(round) query \(query) page \(pages) \(b) z\(zoom)"
                    #expect(q.staticInView == expected.st && q.liveInView == expected.live && q.mode == expected.mode, "\(note)")
                    #expect(q.markers.count <= limit && (q.nextPageToken == nil || q.markers.count == limit), "\(note)")
                    let ids = q.markers.map(\.id)
                    #expect(Set(ids).isSubset(of: Set(expected.ids)), "\(note): markers not in view")
                    var keys = ids.map { SpatialKey(point: model.world(model.markers[$0]!), id: Array($0.utf8)) }
                    if let token { keys.insert(try SpatialKey(pageToken: token), at: 0) }
                    #expect(zip(keys, keys.dropFirst()).allSatisfy { $0 < $1 }, "\(note): not in spatial order after the token")
                    got += ids
                    token = q.nextPageToken
                    pages += 1
                    if changing {
                        // Add, move, restyle and remove a few markers between pages.
                        for _ in 0..<Int.random(in: 1...4, using: &rng) {
                            var m = Bool.random(using: &rng) ? model.markers.values.randomElement(using: &rng)! : newMarker(&rng)
                            if Bool.random(using: &rng) { m.position = randomPosition(&rng) } else { m.style = Self.styles.randomElement(using: &rng)! }
                            _ = try layer.upsert([m], now: 0)
                            model.markers[m.id] = m
                            touched.insert(m.id)
                        }
                        if let gone = model.markers.keys.randomElement(using: &rng) {
                            _ = layer.remove(ids: [gone]); model.markers[gone] = nil; touched.insert(gone)
                        }
                    }
                } while token != nil && pages < 2000
                pagesSeen += pages
                if changing {
                    changedPaging += 1
                    let untouched = first.ids.filter { !touched.contains($0) }
                    var counts: [String: Int] = [:]
                    for id in got { counts[id, default: 0] += 1 }
                    #expect(untouched.allSatisfy { counts[$0] == 1 }, "seed \(seed) round \(round) query \(query): untouched markers missed or repeated")
                    #expect(counts.allSatisfy { $0.value == 1 || touched.contains($0.key) }, "seed \(seed) round \(round) query \(query)")
                } else {
                    #expect(got == first.ids, "seed \(seed) round \(round) query \(query) \(b) z\(zoom): \(got.count) vs \(first.ids.count)")
                }
            }
        }
        #expect(pagesSeen > 50 && changedPaging > 5, "seed \(seed): \(pagesSeen) pages, \(changedPaging) pagings with changes")
    }

    /// `viewportPage(...liveBudget:)` is nil exactly when the live class holds more than the
    /// budget in the searched cells (`viewportLiveClassCount`, counted on its own), and otherwise
    /// the page without a budget: budgets 0, the count - 1, the count and the count + 1, on
    /// seeded layers with many draggable and animating markers (some ended), across the
    /// antimeridian (which searches two rectangles), in both modes.
    @Test func liveBudgetStopsExactlyAtTheLiveClassCount() throws {
        let seed = testSeed("OracleTests.liveBudget")
        var rng = SplitMix64(seed: seed)
        var stopped = 0, answered = 0
        for round in 0..<4 {
            var model = OracleModel(options: TilingOptions(enabled: round % 2 == 1, minMarkerCount: 50))
            var layer = try MarkerLayer(options: model.options)
            let batch = (0..<2_000).map { i -> MarkerRecord in
                var m = randomMarker("b\(i)", &rng, now: 0)
                if i % 3 == 0 { m.draggable = true }
                if round >= 2 && i % 50 == 1 { m.position.longitude = Double.random(in: 178...180, using: &rng) }
                return m
            }
            _ = try layer.upsert(batch, now: 0)
            for m in batch { model.markers[m.id] = m }
            for query in 0..<30 {
                let zoom = [2.0, 5, 8, 12, 15].randomElement(using: &rng)!
                var b = randomBounds(&rng, zoom: zoom, model: model)
                if query % 5 == 0 { b = GeoBounds(west: 170, south: b.south, east: -170, north: b.north) }
                let now = Int64(Int.random(in: 0...2_000, using: &rng))
                let count = try layer.viewportLiveClassCount(bounds: b, zoom: zoom)
                let full = try layer.viewportPage(bounds: b, zoom: zoom, limit: 200, now: now)
                for budget in Set([0, max(0, count - 1), count, count + 1]) {
                    let note = "seed \(seed) round \(round) query \(query) \(b) z\(zoom): \(count) live-class, budget \(budget)"
                    let page = try layer.viewportPage(bounds: b, zoom: zoom, limit: 200, now: now, liveBudget: budget)
                    if count > budget {
                        let refused = page == nil
                        #expect(refused, "\(note)")
                        stopped += 1
                    } else {
                        let page = try #require(page, "\(note)")
                        #expect(page.slots == full.slots && page.staticInView == full.staticInView && page.liveInView == full.liveInView
                                && page.nextPageToken == full.nextPageToken && page.mode == full.mode, "\(note)")
                        answered += 1
                    }
                }
            }
        }
        #expect(stopped > 20 && answered > 20, "seed \(seed): \(stopped) stopped, \(answered) answered")
    }

    @Test func malformedPageTokensAreRejected() throws {
        let layer = try MarkerLayer()
        let b = GeoBounds(west: -2, south: -2, east: 2, north: 2)
        for bad in ["x", "k1.0.1.00", "s1.zz.00", "s1.1.0"] {
            #expect(throws: MarkerdCoreError.invalidPageToken(bad)) { try layer.queryViewport(bounds: b, zoom: 6, pageToken: bad, now: 0) }
        }
    }
}

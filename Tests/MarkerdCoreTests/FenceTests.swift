import Foundation
import MarkerdTestSupport
import Testing
@testable import MarkerdCore

/// Fence shapes against independent oracles (bounds arithmetic, spherical destinations,
/// rotation across the antimeridian), and `FenceSet`'s grid-driven events against a
/// brute-force model over random changes.
@Suite struct FenceTests {
    static func wrap(_ lng: Double) -> Double { lng > 180 ? lng - 360 : lng < -180 ? lng + 360 : lng }

    /// A star-shaped ring around (lat, lng), radii in [rMin, rMax] degrees, longitudes wrapped into [-180, 180].
    static func star(_ rng: inout SplitMix64, lat: Double, lng: Double, rMin: Double, rMax: Double, n: Int) -> [LatLng] {
        (0..<n).map { i in
            let a = (Double(i) + rng.unit() * 0.8) / Double(n) * 2 * Double.pi
            let r = rMin + rng.unit() * (rMax - rMin)
            let q = { (v: Double) in (v * 4096).rounded() / 4096 }
            return LatLng(latitude: q(lat + r * sin(a)), longitude: wrap(q(lng + r * cos(a))))
        }
    }

    /// A polygon with up to two holes around (lat, lng) (holes inside the outer ring's inner radius).
    static func polygon(_ rng: inout SplitMix64, lat: Double, lng: Double, size: Double) -> [[LatLng]] {
        var rings = [star(&rng, lat: lat, lng: lng, rMin: size / 2, rMax: size, n: 3 + Int(rng.next() % 12))]
        if rng.next() % 3 != 0 { rings.append(star(&rng, lat: lat, lng: lng, rMin: size / 8, rMax: size / 4, n: 3 + Int(rng.next() % 6))) }
        if rng.next() % 3 == 0 {
            rings.append(star(&rng, lat: lat + size * 0.38, lng: wrap(lng), rMin: size / 20, rMax: size / 10, n: 3 + Int(rng.next() % 4)))
        }
        return rings
    }

    /// The point `distance` metres from `p` on initial bearing `bearing` (radians): the sphere's
    /// destination formula, independent of the haversine that `contains` uses.
    static func destination(_ p: LatLng, bearing: Double, distance: Double) -> LatLng {
        let d = distance / FenceShape.earthRadiusMeters, lat1 = p.latitude * .pi / 180, lng1 = p.longitude * .pi / 180
        let lat2 = asin(sin(lat1) * cos(d) + cos(lat1) * sin(d) * cos(bearing))
        let lng2 = lng1 + atan2(sin(bearing) * sin(d) * cos(lat1), cos(d) - sin(lat1) * sin(lat2))
        return LatLng(latitude: lat2 * 180 / .pi, longitude: wrap(remainder(lng2 * 180 / .pi, 360)))
    }

    static func inBox(_ b: GeoBounds, _ p: LatLng) -> Bool {
        p.latitude >= b.south && p.latitude <= b.north
            && (b.west <= b.east ? p.longitude >= b.west && p.longitude <= b.east : p.longitude >= b.west || p.longitude <= b.east)
    }

    @Test func polygonWithHoleMatchesBoundsArithmetic() throws {
        var rng = SplitMix64(seed: testSeed())
        // Outer 170..-170 (across the antimeridian) x -10..10, hole 175..-178 x -2..3.
        let outer = [LatLng(latitude: -10, longitude: 170), LatLng(latitude: -10, longitude: -170),
                     LatLng(latitude: 10, longitude: -170), LatLng(latitude: 10, longitude: 170)]
        let hole = [LatLng(latitude: -2, longitude: 175), LatLng(latitude: 3, longitude: 175),
                    LatLng(latitude: 3, longitude: -178), LatLng(latitude: -2, longitude: -178), LatLng(latitude: -2, longitude: 175)]
        let shape = try CompiledFenceShape(.polygon(rings: [outer, hole]))
        let outerBox = GeoBounds(west: 170, south: -10, east: -170, north: 10), holeBox = GeoBounds(west: 175, south: -2, east: -178, north: 3)
        #expect(shape.boundingBox == outerBox)
        var inside = 0
        for _ in 0..<20_000 {
            let p = LatLng(latitude: -15 + rng.unit() * 30, longitude: Self.wrap(160 + rng.unit() * 40))
            let expected = Self.inBox(outerBox, p) && !Self.inBox(holeBox, p)
            #expect(shape.contains(p) == expected, "\(p)")
            if expected { inside += 1 }
        }
        #expect(inside > 5_000)
    }

    /// Rotating a polygon and the points by 180 degrees of longitude (onto the antimeridian)
    /// keeps every answer, for random polygons with holes.
    @Test func polygonsAcrossTheAntimeridianMatchTheirRotation() throws {
        var rng = SplitMix64(seed: testSeed())
        func rotate(_ p: LatLng) -> LatLng { LatLng(latitude: p.latitude, longitude: Self.wrap(p.longitude + 180)) }
        var inside = 0
        for _ in 0..<200 {
            let lat = -70 + rng.unit() * 140, size = 0.01 + rng.unit() * 20
            let rings = Self.polygon(&rng, lat: lat, lng: (rng.unit() - 0.5) * 4, size: size)
            let plain = try CompiledFenceShape(.polygon(rings: rings))
            let rotated = try CompiledFenceShape(.polygon(rings: rings.map { $0.map(rotate) }))
            #expect(plain.boundingBox.crossesAntimeridian == false)
            for _ in 0..<200 {
                let p = LatLng(latitude: ((lat + (rng.unit() - 0.5) * 2.4 * size) * 4096).rounded() / 4096 + 1.0 / 8192,
                               longitude: (((rng.unit() - 0.5) * 4 + (rng.unit() - 0.5) * 2.4 * size) * 4096).rounded() / 4096 + 1.0 / 8192)
                let a = plain.contains(p)
                #expect(a == rotated.contains(rotate(p)), "\(rings) \(p)")
                if a { inside += 1; #expect(Self.inBox(rotated.boundingBox, rotate(p))) }
            }
        }
        #expect(inside > 2_000)
    }

    /// Circles near the antimeridian and the poles: points at a known distance (the sphere's
    /// destination formula) are inside exactly when that distance is within the radius, and every
    /// point inside is in the bounding box (which the grid relies on).
    @Test func circlesNearTheAntimeridianAndPoles() throws {
        var rng = SplitMix64(seed: testSeed())
        var spansAll = 0
        for i in 0..<300 {
            let lat = i % 3 == 0 ? 80 + rng.unit() * 9.9 : i % 3 == 1 ? -(80 + rng.unit() * 9.9) : (rng.unit() - 0.5) * 160
            let c = LatLng(latitude: lat, longitude: Self.wrap(180 + (rng.unit() - 0.5) * 6))
            let radius = [1.0, 500, 20_000, 300_000, 2_000_000][i % 5] * (0.5 + rng.unit())
            let shape = try CompiledFenceShape(.circle(center: c, radiusMeters: radius))
            if shape.boundingBox.west == -180 && shape.boundingBox.east == 180 { spansAll += 1 }
            for _ in 0..<100 {
                let f = rng.unit() * 1.5
                if abs(f - 1) < 1e-6 { continue }
                let p = Self.destination(c, bearing: rng.unit() * 2 * .pi, distance: f * radius)
                #expect(shape.contains(p) == (f < 1), "centre \(c) radius \(radius) fraction \(f) point \(p)")
                if f < 1 { #expect(Self.inBox(shape.boundingBox, p), "\(shape.boundingBox) misses \(p)") }
            }
        }
        #expect(spansAll > 0)
    }

    @Test func invalidShapesAreRejectedWithTheirField() {
        func field(_ s: FenceShape) -> String? {
            do { _ = try CompiledFenceShape(s); return nil } catch { if case .invalidArgument(let f, _) = error { return f }; return "?" }
        }
        let p = LatLng(latitude: 0, longitude: 0)
        #expect(field(.circle(center: p, radiusMeters: 0)) == "fence.circle.radius_meters")
        #expect(field(.circle(center: p, radiusMeters: .nan)) == "fence.circle.radius_meters")
        #expect(field(.circle(center: p, radiusMeters: 1e308)) == "fence.circle.radius_meters")
        #expect(field(.circle(center: LatLng(latitude: .infinity, longitude: 0), radiusMeters: 5)) == "fence.circle.center.latitude")
        #expect(field(.bounds(GeoBounds(west: 1e308, south: 0, east: 1, north: 1))) == "fence.bounds.west")
        #expect(field(.polygon(rings: [])) == "fence.polygon.rings")
        #expect(field(.polygon(rings: [[p, LatLng(latitude: 1, longitude: 1), p]])) == "fence.polygon.rings[0].points")
        #expect(field(.polygon(rings: [[p, LatLng(latitude: 1, longitude: .nan), LatLng(latitude: 1, longitude: 0)]]))
                == "fence.polygon.rings[0].points[1].longitude")
        // An edge of exactly 180 degrees of longitude is ambiguous.
        #expect(field(.polygon(rings: [[LatLng(latitude: 0, longitude: -90), LatLng(latitude: 0, longitude: 90), LatLng(latitude: 5, longitude: 0)]]))
                == "fence.polygon.rings[0].points[1]")
        // A ring around the north pole (four 90-degree steps east) winds once round it.
        #expect(field(.polygon(rings: [[0.0, 90, 180, -90].map { LatLng(latitude: 80, longitude: $0 == 180 ? 179.999 : $0) }]))
                == "fence.polygon.rings[0]")
        let many = (0..<FenceShape.maxVertices + 1).map { LatLng(latitude: sin(Double($0)) , longitude: cos(Double($0))) }
        #expect(field(.polygon(rings: [many])) == "fence.polygon.rings")
        #expect(field(.polygon(rings: Array(repeating: [p, LatLng(latitude: 1, longitude: 0), LatLng(latitude: 0, longitude: 1)], count: FenceShape.maxRings + 1)))
                == "fence.polygon.rings")
    }

    // MARK: FenceSet against brute force

    /// Brute-force events of one change, in the order `FenceSet` promises (fence id, then kind).
    static func expectedHits(_ fences: [Fence], id: String, from: LatLng?, fromAttrs: [String: String], to: LatLng?,
                             toAttrs: [String: String]) -> [FenceHit] {
        var out: [FenceHit] = []
        for f in fences.sorted(by: { $0.id.utf8.lexicographicallyPrecedes($1.id.utf8) }) {
            func matches(_ a: [String: String]) -> Bool { f.filter.map { a[$0.attribute] == $0.value } ?? true }
            let was = from.map { f.shape.contains($0) && matches(fromAttrs) } ?? false
            let now = to.map { f.shape.contains($0) && matches(toAttrs) } ?? false
            var kind: FenceEventKind?
            switch (was, now) {
            case (false, true): kind = .enter
            case (true, false): kind = .exit
            case (true, true): kind = .inside
            case (false, false):
                if let from, let to, matches(toAttrs), f.shape.segmentMeets(from, to) { kind = .cross }
            }
            let flags: [FenceEventKind: FenceDetect] = [.enter: .enter, .exit: .exit, .inside: .inside, .cross: .cross]
            if let kind, f.detect.contains(flags[kind]!) {
                out.append(FenceHit(fenceID: f.id, kind: kind, markerID: id, position: kind == .exit ? (to ?? from!) : to!))
            }
        }
        return out
    }

    /// Random fences of every shape (near the antimeridian, the Mercator limit and the equator),
    /// random upserts, moves (short and long), attribute changes and removes: every change's
    /// events equal the brute-force model's, fences come and go, and a rebuilt set agrees.
    @Test func fenceSetMatchesBruteForceOverRandomChanges() throws {
        var rng = SplitMix64(seed: testSeed())
        let hotspots = [LatLng(latitude: 0, longitude: 0), LatLng(latitude: 10, longitude: 179.5), LatLng(latitude: 84, longitude: -179.8),
                        LatLng(latitude: -84, longitude: 60)]
        func near(_ h: LatLng, _ spread: Double) -> LatLng {
            LatLng(latitude: min(84.9, max(-84.9, h.latitude + (rng.unit() - 0.5) * spread)),
                   longitude: Self.wrap(h.longitude + (rng.unit() - 0.5) * spread * 2))
        }
        func randomFence(_ n: Int) throws -> Fence {
            let h = hotspots[Int(rng.next() % UInt64(hotspots.count))]
            let c = near(h, 6)
            let shape: FenceShape
            switch rng.next() % 3 {
            case 0:
                let w = rng.unit() * 4, hgt = rng.unit() * 3
                shape = .bounds(GeoBounds(west: Self.wrap(c.longitude - w), south: max(-90, c.latitude - hgt), east: Self.wrap(c.longitude + w),
                                          north: min(90, c.latitude + hgt)))
            case 1: shape = .circle(center: c, radiusMeters: 1_000 + rng.unit() * 300_000)
            default:
                var rings = Self.polygon(&rng, lat: min(80, max(-80, c.latitude)), lng: c.longitude, size: 0.2 + rng.unit() * 3)
                rings = rings.map { $0.map { LatLng(latitude: min(90, max(-90, $0.latitude)), longitude: $0.longitude) } }
                shape = .polygon(rings: rings)
            }
            let detect = FenceDetect(rawValue: UInt8(1 + rng.next() % 15))
            let filter = rng.next() % 4 == 0 ? FenceFilter(attribute: "kind", value: "taxi") : nil
            return Fence(id: "f\(n)", shape: try CompiledFenceShape(shape), detect: detect, filter: filter)
        }
        var set = FenceSet()
        var fences: [Fence] = []
        for n in 0..<60 { let f = try randomFence(n); fences.append(f); let inserted = set.insert(f, markersOf: nil); #expect(inserted) }
        var markers: [String: (p: LatLng, attrs: [String: String])] = [:]
        var counts: [FenceEventKind: Int] = [:]
        var nextFence = 60
        for step in 0..<20_000 {
            let id = "m\(rng.next() % 300)"
            let old = markers[id]
            var to: LatLng? = nil
            var attrs = old?.attrs ?? [:]
            switch rng.next() % 10 {
            case 0: to = nil  // remove
            case 1: attrs["kind"] = attrs["kind"] == "taxi" ? "bus" : "taxi"; to = old?.p ?? near(hotspots[0], 10)
            case 2: to = near(hotspots[Int(rng.next() % UInt64(hotspots.count))], 12)  // a long jump
            default: to = old.map { near($0.p, 0.3) } ?? near(hotspots[Int(rng.next() % UInt64(hotspots.count))], 8)
            }
            if old == nil && to == nil { continue }
            let expected = Self.expectedHits(fences, id: id, from: old?.p, fromAttrs: old?.attrs ?? [:], to: to, toAttrs: attrs)
            var hits: [FenceHit] = []
            set.markerChanged(id, from: old?.p, to: to, attribute: { attrs[$0] }, into: &hits)
            #expect(mismatch(hits, expected) == nil, "step \(step) \(id): \(old?.p as Any) -> \(to as Any)")
            for h in hits { counts[h.kind, default: 0] += 1 }
            markers[id] = to.map { ($0, attrs) }
            if step % 500 == 499 {
                // A fence goes, a new one comes (its inside-set seeded from the model, as `insert` does from a layer).
                let gone = fences.remove(at: Int(rng.next() % UInt64(fences.count)))
                let removed = set.remove(gone.id)
                #expect(removed?.id == gone.id)
                #expect(set.fence(gone.id) == nil)
                let f = try randomFence(nextFence)
                nextFence += 1
                fences.append(f)
                set.insert(f, markersOf: nil)
                for (mid, m) in markers.sorted(by: { $0.key < $1.key }) {
                    var ignored: [FenceHit] = []
                    // Entering through a change with no move seeds it like a scan would (ENTER discarded).
                    set.markerChanged(mid, from: m.p, to: m.p, attribute: { m.attrs[$0] }, into: &ignored)
                }
            }
        }
        for f in fences {
            let expected = markers.filter { m in f.shape.contains(m.value.p) && (f.filter.map { m.value.attrs[$0.attribute] == $0.value } ?? true) }
                .keys.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            #expect(mismatch(set.markersInside(f.id) ?? [], expected) == nil, "fence \(f.id)")
        }
        print("fence events: \(counts)")
        for kind in [FenceEventKind.enter, .exit, .inside, .cross] { #expect(counts[kind, default: 0] > 20, "too few \(kind) events") }
    }

    /// A new fence's inside-set comes from the layer's markers (through the marker grid), and
    /// `rebuild` recomputes it: equal to a brute-force scan, filters included.
    @Test func insertAndRebuildSeedInsideSetsFromTheLayer() throws {
        var rng = SplitMix64(seed: testSeed())
        var layer = try MarkerLayer(options: TilingOptions())
        var records: [MarkerRecord] = []
        for i in 0..<5_000 {
            let p = LatLng(latitude: (rng.unit() - 0.5) * 20, longitude: Self.wrap(180 + (rng.unit() - 0.5) * 20))
            records.append(MarkerRecord(id: "m\(i)", position: p, attributes: i % 2 == 0 ? ["kind": "taxi"] : [:]))
        }
        _ = try layer.upsert(records, now: 0)
        let shapes: [FenceShape] = [
            .bounds(GeoBounds(west: 175, south: -3, east: -176, north: 4)),
            .circle(center: LatLng(latitude: 2, longitude: -179), radiusMeters: 400_000),
            .polygon(rings: [Self.star(&rng, lat: 0, lng: 179, rMin: 3, rMax: 6, n: 9), Self.star(&rng, lat: 0, lng: 179, rMin: 0.5, rMax: 1, n: 5)]),
        ]
        var set = FenceSet()
        for (i, s) in shapes.enumerated() {
            let f = Fence(id: "f\(i)", shape: try CompiledFenceShape(s), detect: [.enter], filter: i == 2 ? FenceFilter(attribute: "kind", value: "taxi") : nil)
            set.insert(f, markersOf: layer)
            let expected = (0..<5_000).map { "m\($0)" }.filter { id in
                let m = layer.marker(id: id)!
                return f.shape.contains(m.position) && (f.filter == nil || m.attributes["kind"] == "taxi")
            }.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) }
            #expect(expected.count > 50)
            #expect(mismatch(set.markersInside(f.id) ?? [], expected) == nil, "fence \(i)")
        }
        let before = shapes.indices.map { set.markersInside("f\($0)") ?? [] }
        _ = layer.remove(ids: (0..<2_500).map { "m\($0)" })
        set.rebuild(from: layer)
        for i in shapes.indices {
            let kept = before[i].filter { Int($0.dropFirst())! >= 2_500 }
            #expect(mismatch(set.markersInside("f\(i)") ?? [], kept) == nil)
        }
    }

    @Test func removingEveryMarkerExitsInFenceOrder() throws {
        var set = FenceSet()
        for id in ["b", "a"] {
            set.insert(Fence(id: id, shape: try CompiledFenceShape(.bounds(GeoBounds(west: -1, south: -1, east: 1, north: 1))), detect: [.enter, .exit], filter: nil),
                       markersOf: nil)
        }
        var hits: [FenceHit] = []
        let p = LatLng(latitude: 0.5, longitude: 0.5)
        set.markerChanged("x", from: nil, to: p, attribute: { _ in nil }, into: &hits)
        #expect(hits.map(\.fenceID) == ["a", "b"] && hits.allSatisfy { $0.kind == .enter })
        hits = []
        set.removeAllMarkers(positions: { _ in p }, into: &hits)
        #expect(hits == [FenceHit(fenceID: "a", kind: .exit, markerID: "x", position: p), FenceHit(fenceID: "b", kind: .exit, markerID: "x", position: p)])
        #expect(set.markersInside("a") == [])
    }
}

import MarkerdTestSupport
import Testing
@testable import MarkerdCore

/// The grid clusters a MarkerLayer maintains follow every change: after random upserts, moves,
/// removals, visibility / draggable changes, drags, animation expiry and clears, they equal the
/// clusters computed from scratch on the final visible static markers. Prints the seed; SEED= replays.
@Suite struct LayerClusterTests {
    static let options = GridClusterOptions(radius: 60, minPoints: 2, maxZoom: 12, extent: 512)

    static func randomRecord(_ id: String, _ rng: inout SplitMix64, now: Int64) -> MarkerRecord {
        // a few hotspots so that clusters form and split at many zooms; some exact duplicates
        let hot = [(35.68, 139.76), (48.85, 2.35), (-33.86, 151.2), (0.0, 179.999), (0.0, -179.999)]
        let h = hot[Int(rng.next() % UInt64(hot.count))]
        let spread = [0.0, 0.0001, 0.01, 1, 20][Int(rng.next() % 5)]
        let lat = max(-85, min(85, h.0 + (rng.unit() - 0.5) * spread))
        var lng = h.1 + (rng.unit() - 0.5) * spread
        if lng > 180 { lng -= 360 } else if lng < -180 { lng += 360 }
        let anim: MarkerAnimation? = rng.next() % 6 == 0
            ? MarkerAnimation(kind: .drop, endsAtUnixMs: now + Int64(rng.next() % 40) - 10) : nil
        return MarkerRecord(id: id, position: LatLng(latitude: lat, longitude: lng), visible: rng.next() % 7 != 0,
                            draggable: rng.next() % 8 == 0, animation: anim)
    }

    /// From scratch: the visible static markers (by the records: visible, not draggable, no
    /// animation running at `now`) of the layer, indexed by slot.
    static func oracle(_ layer: MarkerLayer, now: Int64) -> GridClusterIndex {
        var points: [ClusterPoint] = []
        var slot = 0
        while true {
            let page = layer.markers(fromSlot: slot, limit: 1000)
            for r in page.markers where r.visible && !r.draggable && (r.animation.map { $0.endsAtUnixMs <= now } ?? true) {
                let s = layer.table.find(r.id)!
                let w = WorldPoint(x: layer.table.x[Int(s)], y: layer.table.y[Int(s)])
                points.append(ClusterPoint(id: s, x: w.x, y: w.y))
            }
            guard let next = page.next else { break }
            slot = next
        }
        return GridClusterIndex(options: options, points: points)
    }

    static func check(_ layer: MarkerLayer, now: Int64, _ rng: inout SplitMix64, _ note: String) {
        let fresh = oracle(layer, now: now)
        let index = layer.gridClusterIndex!
        #expect(index.count == fresh.count, "\(note): point count")
        let staticCount = layer.stats(now: now).staticMarkers
        #expect(index.count == staticCount, "\(note): clustered points = static markers")
        for z in 0...(options.maxZoom + 1) {
            let a = index.clusters(in: .world, zoom: z)
            #expect(a == fresh.clusters(in: .world, zoom: z), "\(note): zoom \(z)")
            #expect(a.reduce(0) { $0 + $1.count } == fresh.count, "\(note): counts add up at zoom \(z)")
            // a random viewport, possibly across the antimeridian
            let w = rng.unit() * 360 - 180, e = w + rng.unit() * 90, s = rng.unit() * 120 - 60
            let box = ClusterBox(west: w, south: s, east: e > 180 ? e - 360 : e, north: s + rng.unit() * 40)
            #expect(index.clusters(in: box, zoom: z) == fresh.clusters(in: box, zoom: z), "\(note): box at zoom \(z)")
        }
        #expect(index.cellCount == fresh.cellCount, "\(note): canonical structure")
    }

    @Test func gridClustersFollowEveryChange() throws {
        let seed = testSeed("LayerClusterTests.gridClustersFollowEveryChange")
        var rng = SplitMix64(seed: seed)
        var layer = try MarkerLayer()
        var now: Int64 = 1_000_000
        _ = try layer.upsert((0..<50).map { Self.randomRecord("pre\($0)", &rng, now: now) }, now: now)
        layer.enableGridClusters(Self.options) // built from existing markers, then incremental
        Self.check(layer, now: now, &rng, "after enable")
        let ids = (0..<300).map { "m\($0)" }
        var drags: [DragID] = []
        for step in 0..<3000 {
            now += Int64(rng.next() % 5)
            switch rng.next() % 100 {
            case 0..<40:
                let n = 1 + Int(rng.next() % 5)
                _ = try layer.upsert((0..<n).map { _ in Self.randomRecord(ids[Int(rng.next() % 300)], &rng, now: now) }, now: now)
            case 40..<60:
                let moves = (0..<(1 + Int(rng.next() % 4))).map { _ in
                    (id: ids[Int(rng.next() % 300)], position: LatLng(latitude: rng.unit() * 170 - 85, longitude: rng.unit() * 360 - 180))
                }
                _ = try layer.move(moves)
            case 60..<75:
                _ = layer.remove(ids: [ids[Int(rng.next() % 300)], ids[Int(rng.next() % 300)]])
            case 75..<85:
                layer.expireAnimations(now: now)
            case 85..<95:
                if let d = drags.last, rng.next() % 2 == 0 {
                    if (try? layer.dragTo(d, LatLng(latitude: rng.unit() * 10, longitude: rng.unit() * 10))) == nil {
                        drags.removeLast()
                    } else if rng.next() % 3 == 0 {
                        _ = try? layer.endDrag(d)
                        drags.removeLast()
                    }
                } else if let r = try? layer.beginDrag(id: ids[Int(rng.next() % 300)]) {
                    drags.append(r.dragID)
                }
            default:
                if rng.next() % 20 == 0 { layer.clear(); drags = [] }
            }
            if step % 500 == 0 {
                layer.expireAnimations(now: now)
                Self.check(layer, now: now, &rng, "step \(step) seed \(seed)")
            }
        }
        layer.expireAnimations(now: now + 100)
        Self.check(layer, now: now + 100, &rng, "final seed \(seed)")
    }

    @Test func animatedMarkerJoinsWhenItsAnimationEnds() throws {
        var layer = try MarkerLayer()
        layer.enableGridClusters(Self.options)
        let p = LatLng(latitude: 10, longitude: 10)
        _ = try layer.upsert([MarkerRecord(id: "a", position: p), MarkerRecord(id: "b", position: p,
                          animation: MarkerAnimation(kind: .bounce, endsAtUnixMs: 2000)),
                          MarkerRecord(id: "h", position: p, visible: false),
                          MarkerRecord(id: "d", position: p, draggable: true)], now: 1000)
        #expect(layer.gridClusterIndex!.count == 1)
        #expect(layer.gridClusterItems(in: .world, zoom: 3)!.count == 1)
        layer.expireAnimations(now: 2000)
        #expect(layer.gridClusterIndex!.count == 2)
        let items = layer.gridClusterItems(in: .world, zoom: 3)!
        try #require(items.count == 1)
        #expect(items[0].count == 2)
        guard case .cluster(let c) = items[0] else { Issue.record("expected a cluster"); return }
        let leaves = try layer.gridClusterLeaves(c.id, limit: 10, offset: 0)
        #expect(Set(leaves.map(\.id)) == ["a", "b"])
        // tile view: every cell of zoom z is in exactly one tile
        let t = TileID.containing(p, zoom: 3)
        #expect(layer.gridClusterTile(z: 3, x: Int(t.x), y: Int(t.y))!.count == 1)
        #expect(layer.gridClusterTile(z: 3, x: Int(t.x) + 1, y: Int(t.y))!.isEmpty)
        layer.clear()
        #expect(layer.gridClusterIndex!.count == 0)
    }
}

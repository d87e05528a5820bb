import MarkerdAPI
import MarkerdCore
import MarkerdService
import MarkerdTestSupport
import Testing

/// `getClustersPayload` (clusters written during the walk by `ClusterReplyWriter`, with the
/// layer's memo of unchanged subtrees; markers by `MarkerWireEncoder`) against the regular path
/// (`getClusters`: `V1.Cluster` and `V1.Marker` messages, protobuf-c), byte for byte; so is
/// `inlineClustersPayload`, which copies memoized clusters straight into the reply buffer.
@Suite struct ClusterReplyTests {
    typealias S = ClusterTestService

    /// Seeded random layers (hot spots, including both sides of the antimeridian and exact zero
    /// coordinates; hidden and draggable markers; default options and min_points 1 with max zoom
    /// 6), rounds of random changes (new markers, small moves that keep the cell, jumps, removals,
    /// visibility, draggable, z-index, style, clickable and attribute changes at the same position,
    /// which change unclustered markers' bytes but no cluster) between rounds of random queries (world,
    /// antimeridian-crossing and small boxes, zooms 0-19, each asked twice so the second answer
    /// comes from the memo), each also asked inline, before or after: every payload equals the
    /// regular response's bytes.
    @Test func payloadMatchesTheRegularEncodingAfterRandomChanges() throws {
        let seed = testSeed("ClusterReplyTests.payloadMatchesTheRegularEncodingAfterRandomChanges")
        var rng = SplitMix64(seed: seed)
        let s = S()
        var small = V1.ClusteringOptions()
        small.enabled = true
        small.minPoints = 1
        small.maxZoom = 6
        try s.createLayer("default", clustering: V1.ClusteringOptions(enabled: true))
        try s.createLayer("small", clustering: small)
        let hot: [(Double, Double)] = [(35.68, 139.76), (48.85, 2.35), (0.0, 179.99), (0.0, -179.99), (0, 0), (-33.9, 151.2)]
        func position() -> (Double, Double) {
            let h = hot[Int(rng.next() % UInt64(hot.count))]
            if rng.next() % 10 == 0 { return (rng.next() % 2 == 0 ? 0 : h.0, rng.next() % 2 == 0 ? 0 : h.1) }
            let spread = [0.0005, 0.05, 1, 20][Int(rng.next() % 4)]
            var lng = h.1 + (rng.unit() - 0.5) * spread
            if lng > 180 { lng -= 360 } else if lng < -180 { lng += 360 }
            return (max(-80, min(80, h.0 + (rng.unit() - 0.5) * spread)), lng)
        }
        var present: [String: (Double, Double)] = [:]
        func randomMarker(_ id: String) -> V1.Marker {
            let p = position()
            present[id] = p
            var m = S.marker(id, lat: p.0, lng: p.1, visible: rng.next() % 8 != 0, draggable: rng.next() % 10 == 0)
            m.zIndex = Int32(Int(rng.next() % 5) - 2)
            return m
        }
        let layers = ["default", "small"]
        var initial: [V1.Marker] = []
        for i in 0..<3000 { initial.append(randomMarker("m\(i)")) }
        for l in layers { try s.upsert(l, initial) }

        var queries = 0, clusters = 0, markers = 0
        for round in 0..<12 {
            if round > 0 {
                for _ in 0..<150 {
                    let id = "m\(rng.next() % 3300)"
                    switch rng.next() % 8 {
                    case 0, 1:
                        let m = randomMarker(id)
                        for l in layers { try s.upsert(l, [m]) }
                    case 2, 3:  // a small move, mostly within the same finest cell
                        guard let p = present[id] else { continue }
                        // Kept within [-180, 180]: a marker near the antimeridian must not be moved past it.
                        let q = (p.0 + (rng.unit() - 0.5) * 1e-5, max(-180, min(180, p.1 + (rng.unit() - 0.5) * 1e-5)))
                        present[id] = q
                        for l in layers { try s.move(l, [(id, q.0, q.1)]) }
                    case 4:
                        guard present[id] != nil else { continue }
                        let q = position()
                        present[id] = q
                        for l in layers { try s.move(l, [(id, q.0, q.1)]) }
                    case 5:
                        present[id] = nil
                        for l in layers { try s.remove(l, [id]) }
                    default:  // the same position; other flags, z-index, style, clickable or attributes
                        guard let p = present[id] else { continue }
                        var m = S.marker(id, lat: p.0, lng: p.1, visible: rng.next() % 3 != 0, draggable: rng.next() % 4 == 0)
                        m.zIndex = Int32(Int(rng.next() % 5) - 2)
                        // Changes of the marker's bytes alone (the memo keeps unclustered markers' bytes).
                        if rng.next() % 2 == 0 { m.icon = .pin(V1.DefaultPin(fillColor: UInt32(rng.next() % 3), label: rng.next() % 2 == 0 ? "L" : nil)) }
                        if rng.next() % 3 == 0 { m.clickable = false }
                        if rng.next() % 4 == 0 { m.attributes = ["k": "v\(rng.next() % 3)"] }
                        for l in layers { try s.upsert(l, [m]) }
                    }
                }
            }
            for _ in 0..<25 {
                let bounds: V1.Bounds
                switch rng.next() % 4 {
                case 0: bounds = S.world
                case 1: bounds = V1.Bounds(west: 150 + rng.unit() * 29, south: -30, east: -179 + rng.unit() * 29, north: 30)
                default:
                    let (lat, lng) = position()
                    let span = [0.01, 0.5, 10][Int(rng.next() % 3)]
                    bounds = V1.Bounds(west: lng - span, south: lat - span / 2, east: lng + span, north: lat + span / 2)
                }
                let zoom = Double(rng.next() % 20) + rng.unit() * 0.9
                for l in layers {
                    let request = V1.GetClustersRequest(layerID: l, bounds: bounds, zoom: zoom)
                    for pass in 0..<2 {
                        let regular = try s.service.getClusters(request)
                        // The inline path (memoized clusters copied straight into the reply buffer) goes first
                        // in one query of two, so it fills the memo as often as it reads it.
                        let inlineFirst = rng.next() % 2 == 0
                        let early = inlineFirst ? Self.inlinePayload(s.service, request) : nil
                        let payload = try s.service.getClustersPayload(request)
                        let late = inlineFirst ? nil : Self.inlinePayload(s.service, request)
                        let expected = regular.serializedBytes()
                        let same = payload == expected  // (not inside #expect: it would print every byte)
                        #expect(same, "layer \(l) bounds \(bounds) zoom \(zoom) round \(round) seed \(seed)")
                        let inlineSame = (early ?? late) == expected
                        #expect(inlineSame, "inline: layer \(l) bounds \(bounds) zoom \(zoom) round \(round) pass \(pass) seed \(seed)")
                        queries += 1
                        clusters += regular.clusters.count
                        markers += regular.markers.count
                    }
                }
            }
        }
        #expect(clusters > 10_000 && markers > 10_000, "\(queries) answers: \(clusters) clusters, \(markers) markers (seed \(seed))")
    }

    /// `inlineClustersPayload` without a budget, written into an array of the size it asks for.
    static func inlinePayload(_ service: MarkerService, _ request: V1.GetClustersRequest) -> [UInt8]? {
        var out: [UInt8]?
        let answered = service.inlineClustersPayload(request, budget: .max) { size, fill in
            out = [UInt8](unsafeUninitializedCapacity: size) { b, n in
                fill(UnsafeMutableRawBufferPointer(b))
                n = size
            }
        }
        #expect(answered == (out != nil))
        return out
    }

    /// The supercluster algorithm's payload is its regular response's bytes too.
    @Test func superclusterPayloadIsTheRegularEncoding() throws {
        let s = S()
        var options = V1.ClusteringOptions(enabled: true)
        options.algorithm = .supercluster
        try s.createLayer("sc", clustering: options)
        var rng = SplitMix64(seed: testSeed("ClusterReplyTests.superclusterPayloadIsTheRegularEncoding"))
        try s.upsert("sc", (0..<500).map { S.marker("m\($0)", lat: (rng.unit() - 0.5) * 10, lng: (rng.unit() - 0.5) * 10) })
        for z in 0..<8 {
            let request = V1.GetClustersRequest(layerID: "sc", bounds: S.world, zoom: Double(z))
            #expect(try byteMismatch(s.service.getClustersPayload(request), s.service.getClusters(request).serializedBytes()) == nil)
        }
    }
}

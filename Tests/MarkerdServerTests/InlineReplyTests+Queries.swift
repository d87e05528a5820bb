import MarkerdAPI
import MarkerdServer
@testable import MarkerdService
import MarkerdTestSupport
import Testing

/// `RPCDispatcher.answerInline`: HitTest and QueryViewport answered on the network thread,
/// byte for byte what `handle` answers; nil (the normal path) for a busy layer lock, work over
/// the budget, unknown layers and bad requests.
extension InlineReplyTests {
    /// A layer of `count` random markers, one in `draggableEvery` draggable (live), with tiling
    /// (TILED from 100 static markers) or without (NATIVE).
    func queryLayer(_ d: RPCDispatcher, _ id: String, count: Int, draggableEvery: Int, tiled: Bool,
                    _ rng: inout SplitMix64) {
        var options = V1.LayerOptions()
        var tiling = V1.TilingOptions()
        tiling.enabled = tiled
        tiling.minMarkerCount = 100
        options.tiling = tiling
        #expect(handled(d, envelope("CreateLayer", V1.CreateLayerRequest(layerID: id, options: options).serializedBytes(), key: "c-\(id)")).code == .ok)
        var up = V1.UpsertMarkersRequest()
        up.layerID = id
        up.markers = (0..<count).map { i in
            marker("\(id)\(i)", rng.unit() * 20 + 40, rng.unit() * 30 - 5) { $0.draggable = i % draggableEvery == 0 }
        }
        #expect(handled(d, envelope("UpsertMarkers", up.serializedBytes(), key: "u-\(id)")).code == .ok)
    }

    func viewportEnvelope(_ layer: String, _ rng: inout SplitMix64, limit: UInt32 = 0) -> [UInt8] {
        let lat = rng.unit() * 20 + 40, lng = rng.unit() * 30 - 5, span = [0.05, 0.5, 5][Int(rng.next() % 3)]
        var r = V1.QueryViewportRequest()
        r.layerID = layer
        r.bounds = V1.Bounds(west: lng, south: lat, east: lng + span, north: lat + span / 2)
        r.zoom = Double(rng.next() % 8) + 6 + rng.unit()
        r.pageSize = limit
        return envelope("QueryViewport", r.serializedBytes(), id: rng.next())
    }

    func hitEnvelope(_ layer: String, _ rng: inout SplitMix64, maxResults: UInt32? = nil) -> [UInt8] {
        var r = V1.HitTestRequest()
        r.layerID = layer
        r.point = V1.LatLng(latitude: rng.unit() * 20 + 40, longitude: rng.unit() * 30 - 5)
        r.zoom = Double(rng.next() % 12) + 4
        r.tolerancePx = Float(rng.unit() * 60)
        r.maxResults = maxResults
        return envelope("HitTest", r.serializedBytes(), id: rng.next())
    }

    func inlineQuery(_ d: RPCDispatcher, _ b: [UInt8]) -> [UInt8]? {
        answered(d, b)
    }

    @Test func queriesWithinTheBudget() throws {
        let seed = testSeed("InlineReplyTests.queriesWithinTheBudget")
        var rng = SplitMix64(seed: seed)
        let d = RPCDispatcher(service: MarkerService())
        queryLayer(d, "t", count: 4000, draggableEvery: 20, tiled: true, &rng)
        queryLayer(d, "n", count: 4000, draggableEvery: 20, tiled: false, &rng)
        var tiledHits = 0
        for i in 0..<80 {
            // TILED pages at the default limit of 1,000, NATIVE pages within the budget (the
            // default limit, 0, is 1,000 too), hit tests.
            let nativeLimit = i % 4 == 0 ? 0 : UInt32(1 + rng.next() % UInt64(RPCDispatcher.inlinePageLimit))
            let requests = [viewportEnvelope("t", &rng), viewportEnvelope("n", &rng, limit: nativeLimit),
                            hitEnvelope(["t", "n"][i % 2], &rng, maxResults: i % 3 == 0 ? nil : UInt32(rng.next() % 65))]
            for (k, b) in requests.enumerated() {
                let expected = handled(d, b)
                #expect(expected.code == .ok)
                let fast = inlineQuery(d, b)
                #expect(fast == expected.serializedBytes(), "request \(i).\(k), seed \(seed)")
                if k == 2, let fast, try V1.HitTestResponse(serializedBytes: V1.Response(serializedBytes: fast).payload).hits.contains(where: \.tiled) {
                    tiledHits += 1
                }
            }
        }
        #expect(tiledHits > 0, "no hit test found a tiled marker: the comparison did not cover them")
        // A NATIVE page with markers after a page token.
        var r = V1.QueryViewportRequest()
        r.layerID = "n"
        r.bounds = V1.Bounds(west: -5, south: 40, east: 25, north: 60)
        r.zoom = 8
        r.pageSize = 100
        let first = try V1.QueryViewportResponse(serializedBytes: handled(d, envelope("QueryViewport", r.serializedBytes())).payload)
        #expect(first.markers.count == 100 && !first.nextPageToken.isEmpty)
        r.pageToken = first.nextPageToken
        let second = envelope("QueryViewport", r.serializedBytes())
        #expect(inlineQuery(d, second) == handled(d, second).serializedBytes())
    }

    @Test func queriesOverTheBudgetOrFailingGoTheNormalWay() throws {
        var rng = SplitMix64(seed: testSeed("InlineReplyTests.queriesOverTheBudget"))
        let service = MarkerService()
        let d = RPCDispatcher(service: service)
        queryLayer(d, "n", count: 2000, draggableEvery: 20, tiled: false, &rng)
        queryLayer(d, "live", count: 3000, draggableEvery: 2, tiled: true, &rng)
        func normal(_ b: [UInt8], _ code: V1.Code) {
            #expect(inlineQuery(d, b) == nil)
            #expect(handled(d, b).code == code)
        }
        // Over the budget: a NATIVE page of more than 1,000, a view of 1,500 live markers, 65 hits.
        #expect(inlineQuery(d, viewportEnvelope("n", &rng)) != nil, "the default page (1,000) is inline")
        normal(viewportEnvelope("n", &rng, limit: UInt32(RPCDispatcher.inlinePageLimit) + 1), .ok)
        normal(viewportEnvelope("n", &rng, limit: 5000), .ok)
        var all = V1.QueryViewportRequest()
        all.layerID = "live"
        all.bounds = V1.Bounds(west: -6, south: 39, east: 26, north: 61)
        all.zoom = 6
        normal(envelope("QueryViewport", all.serializedBytes()), .ok)
        all.bounds = V1.Bounds(west: 0, south: 45, east: 0.5, north: 45.5)
        all.zoom = 12
        #expect(inlineQuery(d, envelope("QueryViewport", all.serializedBytes())) != nil, "a small view of that layer is inline")
        normal(hitEnvelope("n", &rng, maxResults: 65), .ok)
        // Within the budget but the layer's lock is busy (a writer holds it).
        let small = viewportEnvelope("n", &rng, limit: 10), hit = hitEnvelope("n", &rng)
        #expect(inlineQuery(d, small) != nil && inlineQuery(d, hit) != nil)
        let h = try service.handle("n")
        h.lock.withWriteLock {
            #expect(inlineQuery(d, small) == nil)
            #expect(inlineQuery(d, hit) == nil)
        }
        // Unknown layer, bad requests: the normal path answers the error.
        normal(viewportEnvelope("nope", &rng, limit: 10), .notFound)
        normal(hitEnvelope("nope", &rng), .notFound)
        var bad = V1.QueryViewportRequest()
        bad.layerID = "n"
        normal(envelope("QueryViewport", bad.serializedBytes()), .invalidArgument)  // no bounds
        bad.bounds = V1.Bounds(west: 0, south: 40, east: 1, north: 41)
        bad.zoom = 40
        normal(envelope("QueryViewport", bad.serializedBytes()), .invalidArgument)
        bad.zoom = 10
        bad.density = 7
        normal(envelope("QueryViewport", bad.serializedBytes()), .invalidArgument)
        bad.density = 1
        bad.pageSize = 5
        bad.pageToken = "not a token"
        normal(envelope("QueryViewport", bad.serializedBytes()), .invalidArgument)
        var badHit = V1.HitTestRequest()
        badHit.layerID = "n"
        normal(envelope("HitTest", badHit.serializedBytes()), .invalidArgument)  // no point
        badHit.point = V1.LatLng(latitude: 45, longitude: 5)
        badHit.tolerancePx = 5000
        normal(envelope("HitTest", badHit.serializedBytes()), .invalidArgument)
        #expect(inlineQuery(d, [0xFF, 0x01, 0x02]) == nil)
        #expect(inlineQuery(d, envelope("GetLayer", V1.GetLayerRequest(layerID: "n").serializedBytes())) == nil)
    }
}

extension InlineReplyTests {
    /// The stage metrics say which way each call went: `inline` for what `answerInline`
    /// answered, `queued` for what `handle` served, `reply` for both; and they reach the
    /// Prometheus text.
    @Test func stagesAreRecordedPerPath() throws {
        var rng = SplitMix64(seed: testSeed("InlineReplyTests.stagesAreRecordedPerPath"))
        let metrics = ServerMetrics()
        let d = RPCDispatcher(service: MarkerService(), metrics: metrics)
        queryLayer(d, "n", count: 500, draggableEvery: 20, tiled: false, &rng)
        let small = viewportEnvelope("n", &rng), big = viewportEnvelope("n", &rng, limit: 5000)
        #expect(inlineQuery(d, small) != nil)
        #expect(inlineQuery(d, big) == nil)
        #expect(handled(d, big).code == .ok)
        #expect(metrics.count(stage: .inline, method: "QueryViewport") == 1)
        #expect(metrics.count(stage: .queued, method: "QueryViewport") == 1)
        #expect(metrics.count(stage: .reply, method: "QueryViewport") == 2)
        #expect(metrics.count(stage: .inline, method: "HitTest") == 0)
        let text = metrics.prometheusText()
        for stage in ["inline", "queued", "reply"] {
            #expect(text.contains("markerd_rpc_stage_microseconds_bucket{method=\"QueryViewport\",stage=\"\(stage)\",le=\"5\"}"))
        }
        #expect(text.contains("markerd_rpc_stage_microseconds_count{method=\"QueryViewport\",stage=\"reply\"} 2\n"))
        #expect(text.contains("markerd_rpc_latency_microseconds_count{method=\"QueryViewport\"} 2\n"))
    }
}

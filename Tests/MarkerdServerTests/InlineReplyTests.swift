import MarkerdAPI
import MarkerdServer
import MarkerdService
import MarkerdTestSupport
import Testing

/// `RPCDispatcher.answerInline`: replies built on the network thread (cached GetTile here), byte
/// for byte what `handle` would answer; nothing for everything else.
@Suite struct InlineReplyTests {
    /// What `answerInline` answers for `bytes` (received `ago`), or nil when it declines; it calls
    /// its `respond` exactly when it says it answered.
    func answered(_ d: RPCDispatcher, _ bytes: [UInt8], ago: Duration = .zero) -> [UInt8]? {
        var out: [UInt8]?
        let said = bytes.withUnsafeBytes { body in
            d.answerInline(body: body, receivedAt: .now - ago) { size, fill in
                out = [UInt8](unsafeUninitializedCapacity: size) { buffer, n in
                    fill(UnsafeMutableRawBufferPointer(buffer))
                    n = size
                }
            }
        }
        #expect(said == (out != nil))
        return out
    }

    func envelope(_ method: String, _ payload: [UInt8], id: UInt64 = 7, timeoutMs: UInt32 = 0, key: String = "") -> [UInt8] {
        var env = V1.Request()
        env.idempotencyKey = key
        env.method = RPCDispatcher.servicePrefix + method
        env.requestID = id
        env.timeoutMs = timeoutMs
        env.payload = payload
        return env.serializedBytes()
    }

    func handled(_ d: RPCDispatcher, _ bytes: [UInt8]) -> V1.Response {
        let box = ResponseBox()
        bytes.withUnsafeBytes { raw in d.handle(body: raw, receivedAt: .now) { box.set($0) } }
        return box.wait()
    }

    @Test func cachedTilesOnly() throws {
        let service = MarkerService()
        let d = RPCDispatcher(service: service)
        var create = V1.CreateLayerRequest()
        create.layerID = "t"
        #expect(handled(d, envelope("CreateLayer", create.serializedBytes(), key: "k1")).code == .ok)
        var up = V1.UpsertMarkersRequest()
        up.layerID = "t"
        up.markers = [marker("a", 48.8566, 2.3522)]
        #expect(handled(d, envelope("UpsertMarkers", up.serializedBytes(), key: "k2")).code == .ok)
        let get = envelope("GetTile", V1.GetTileRequest(layerID: "t", z: 14, x: 8298, y: 5636).serializedBytes())
        func inline(_ b: [UInt8], ago: Duration = .zero) -> [UInt8]? { answered(d, b, ago: ago) }
        #expect(inline(get) == nil, "not rendered yet")
        let slow = handled(d, get)
        #expect(slow.code == .ok)
        let fast = try #require(inline(get))
        #expect(byteMismatch(fast, slow.serializedBytes()) == nil)
        #expect(try V1.GetTileResponse(serializedBytes: V1.Response(serializedBytes: fast).payload).png.count > 100)
        // not_modified, and a request id of 0 (left out of the envelope).
        let version = try V1.GetTileResponse(serializedBytes: slow.payload).version
        for (id, known) in [(UInt64(0), version), (UInt64.max, version), (0, UInt64(0)), (300, version)] {
            let b = envelope("GetTile", V1.GetTileRequest(layerID: "t", z: 14, x: 8298, y: 5636, knownVersion: known).serializedBytes(), id: id)
            let expected = handled(d, b).serializedBytes()
            #expect(inline(b) == expected, "request id \(id), known version \(known)")
        }
        // Other methods, expired deadlines and bad tiles go the normal way.
        #expect(inline(envelope("ListLayers", V1.ListLayersRequest().serializedBytes())) == nil)
        let timed = envelope("GetTile", V1.GetTileRequest(layerID: "t", z: 14, x: 8298, y: 5636).serializedBytes(), timeoutMs: 50)
        #expect(inline(timed) != nil)
        #expect(inline(timed, ago: .milliseconds(200)) == nil)
        #expect(inline(envelope("GetTile", V1.GetTileRequest(layerID: "t", z: 30).serializedBytes())) == nil)
        #expect(inline([0xFF, 0x01, 0x02]) == nil)
        // An envelope that `V1.RequestHead` does not read (here: with an idempotency key) goes to
        // `handle`, which answers the same bytes.
        let keyed = envelope("GetTile", V1.GetTileRequest(layerID: "t", z: 14, x: 8298, y: 5636).serializedBytes(), key: "k3")
        #expect(inline(keyed) == nil)
        #expect(byteMismatch(handled(d, keyed).serializedBytes(), slow.serializedBytes()) == nil)
    }

    /// Grid GetClusters answered on the network thread (`answerInline`): byte for byte what
    /// `handle` answers; nil when the answer needs more than the budget of fresh work (an empty
    /// memo, or many unclustered markers), for other algorithms and for errors.
    @Test func clustersFromTheMemo() throws {
        let service = MarkerService()
        let d = RPCDispatcher(service: service)
        var rng = SplitMix64(seed: testSeed("InlineReplyTests.clustersFromTheMemo"))
        var options = V1.LayerOptions()
        options.clustering = V1.ClusteringOptions(enabled: true)
        #expect(handled(d, envelope("CreateLayer", V1.CreateLayerRequest(layerID: "c", options: options).serializedBytes(), key: "k1")).code == .ok)
        var up = V1.UpsertMarkersRequest()
        up.layerID = "c"
        // 6,000 markers around 1,500 centres (4 each, within 0.2 degree): at zoom 3 about a thousand
        // clusters (more than the inline budget of fresh work) but few unclustered markers (far
        // fewer than the budget, which memoized markers count against too); at zoom 16 none clustered.
        let centres = (0..<1500).map { _ in (rng.unit() * 140 - 70, rng.unit() * 360 - 180) }
        up.markers = (0..<6000).map { i in
            let c = centres[i % centres.count]
            return marker("m\(i)", c.0 + rng.unit() * 0.2, min(180, c.1 + rng.unit() * 0.2))
        }
        #expect(handled(d, envelope("UpsertMarkers", up.serializedBytes(), key: "k2")).code == .ok)
        func inline(_ b: [UInt8]) -> [UInt8]? { answered(d, b) }
        let world = V1.Bounds(west: -180, south: -85, east: 180, north: 85)
        // 4,096 cells at zoom 3: more than the budget until the memo holds them.
        let z3 = envelope("GetClusters", V1.GetClustersRequest(layerID: "c", bounds: world, zoom: 3).serializedBytes(), id: 9)
        #expect(inline(z3) == nil)
        let slow = handled(d, z3)
        #expect(slow.code == .ok)
        let z3Answer = try V1.GetClustersResponse(serializedBytes: slow.payload)
        #expect(z3Answer.clusters.count > 512 && z3Answer.markers.count < 256,
                "\(z3Answer.clusters.count) clusters, \(z3Answer.markers.count) markers: the data no longer tests what it should")
        #expect(inline(z3) == slow.serializedBytes())
        // Small views at several zooms, each asked inline, then the normal way, then inline again.
        for i in 0..<60 {
            let lat = rng.unit() * 100 - 50, lng = rng.unit() * 300 - 150, span = [0.5, 5, 40][i % 3]
            let r = V1.GetClustersRequest(layerID: "c", bounds: V1.Bounds(west: lng, south: lat, east: lng + span, north: lat + span / 2),
                                          zoom: Double(rng.next() % 10))
            let b = envelope("GetClusters", r.serializedBytes(), id: rng.next())
            let first = inline(b)
            let expected = handled(d, b).serializedBytes()
            if let first { #expect(byteMismatch(first, expected) == nil) }
            #expect(inline(b) == expected, "request \(i)")
        }
        // Thousands of unclustered markers: never inline. Unknown layers and supercluster layers neither.
        let z16 = envelope("GetClusters", V1.GetClustersRequest(layerID: "c", bounds: world, zoom: 16).serializedBytes())
        #expect(handled(d, z16).code == .ok)
        #expect(inline(z16) == nil)
        #expect(inline(envelope("GetClusters", V1.GetClustersRequest(layerID: "nope", bounds: world, zoom: 3).serializedBytes())) == nil)
        options.clustering?.algorithm = .supercluster
        #expect(handled(d, envelope("CreateLayer", V1.CreateLayerRequest(layerID: "s", options: options).serializedBytes(), key: "k3")).code == .ok)
        let sc = envelope("GetClusters", V1.GetClustersRequest(layerID: "s", bounds: world, zoom: 3).serializedBytes())
        #expect(handled(d, sc).code == .ok)
        #expect(inline(sc) == nil)
    }
}

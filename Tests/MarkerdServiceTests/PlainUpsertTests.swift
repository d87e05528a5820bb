import Foundation
import MarkerdAPI
@testable import MarkerdCore
@testable import MarkerdService
import MarkerdTestSupport
import Testing

/// UpsertMarkers through the plain decoder and the column batch (`upsertPlainMarkers`) against
/// the protobuf-c path: the same requests go to two services, the second one's with an unknown
/// field appended (protobuf-c skips it, the plain decoder declines the request), and every
/// reply, error and stored marker must agree.
@Suite struct PlainUpsertTests {
    static func service() throws -> MarkerService {
        let s = MarkerService()
        var icon = V1.RegisterIconRequest()
        icon.iconID = "red"
        icon.png = redSquarePNG
        try mutate(s, .registerIcon, icon, as: V1.RegisterIconResponse.self)
        try makeLayer(s, "a")
        return s
    }

    /// Replies as text: the response fields, or the error's code and message.
    static func send(_ s: MarkerService, _ request: [UInt8]) -> String {
        let r = Result { () throws -> V1.UpsertMarkersResponse in try mutate(s, .upsertMarkers, payload: request) }
        switch r {
        case .success(let v): return "ok \(v.createdCount) \(v.updatedCount) \(v.layerVersion)"
        case .failure(let e): return "\(e)"
        }
    }

    @Test func plainPathAgreesWithProtobufC() throws {
        let seed = testSeed("PlainUpsertTests.plainPathAgreesWithProtobufC")
        var rng = SplitMix64(seed: seed)
        let fast = try Self.service(), slow = try Self.service()
        var ids: Set<String> = []
        var plainReplies = 0
        for round in 0..<80 {
            let n = Int(rng.next() % 300)
            var markers = (0..<n).map { i -> V1.Marker in
                let id = "m\(rng.next() % 2_000)"
                ids.insert(id)
                return marker(id, Double.random(in: -80...80, using: &rng), Double.random(in: -180...180, using: &rng)) { m in
                    switch rng.next() % 6 {
                    case 0: m.icon = .iconID("red")
                    case 1: m.icon = .pin(V1.DefaultPin(fillColor: UInt32(i % 3), label: i % 2 == 0 ? "L" : nil))
                    default: break
                    }
                    if rng.next() % 4 == 0 { m.anchor = V1.Anchor(x: 0.5, y: Float(rng.next() % 3) / 2) }
                    m.zIndex = Int32(rng.next() % 5)
                    if rng.next() % 9 == 0 { m.draggable = true }
                    if rng.next() % 7 == 0 { m.visible = false }
                    if rng.next() % 8 == 0 { m.clickable = false }
                    if rng.next() % 10 == 0 { m.extra = [UInt8(i & 255), 1] }
                    if rng.next() % 3 == 0 {
                        m.attributes = ["name": "Ōsaka \(i)", "category": ["city", "town", ""][i % 3], "population": "\(rng.next() % 90_000)"]
                    }
                }
            }
            // Within a batch: repeated ids are refused; now and then one bad marker.
            markers = Array(Dictionary(markers.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a }).values)
                .sorted { $0.id < $1.id }
            if !markers.isEmpty {
                switch round % 10 {
                case 3: markers.append(markers[Int(rng.next() % UInt64(markers.count))])        // repeated id
                case 5: markers[0].position = nil                                               // missing position
                case 6: markers[0].icon = .iconID("nope")                                       // unregistered icon
                case 7: markers[0].position = V1.LatLng(latitude: 91, longitude: 0)             // invalid position
                case 8: markers[0].id = ""                                                      // empty id
                case 9 where round % 20 == 9: markers[0].attributes[""] = "x"                   // empty attribute key
                case 2 where round % 20 == 2: markers[0].attributes["big"] = String(repeating: "x", count: MarkerConversion.maxPayloadBytes)  // too big
                default: break
                }
            }
            let layer = round % 17 == 16 ? "missing" : "a"
            let request = V1.UpsertMarkersRequest(layerID: layer, markers: markers).serializedBytes()
            let a = Self.send(fast, request)
            let b = Self.send(slow, request + [0x78, 0x01])   // field 15, varint: unknown
            #expect(a == b, "seed \(seed) round \(round)")
            if a.hasPrefix("ok") { plainReplies += 1 }
        }
        #expect(plainReplies > 20, "seed \(seed): batches without a planted error apply")
        let ha = fast.layers.withLock { $0["a"]! }, hb = slow.layers.withLock { $0["a"]! }
        for id in ids { #expect(ha.layer.marker(id: id) == hb.layer.marker(id: id), "seed \(seed): \(id)") }
        #expect(ha.layer.count == hb.layer.count && ha.layer.version == hb.layer.version)
        var sa = ha.layer.stats(now: 0), sb = hb.layer.stats(now: 0)
        sa.approximateBytes = 0   // array capacities differ (the batch path grows the id index ahead)
        sb.approximateBytes = 0
        #expect(sa == sb, "seed \(seed)")
    }

    /// Markers with attributes stay on the plain path: the decoder takes them, their wire bytes
    /// go into the batch as they are (already sorted, as clients write them), and the layer
    /// ends up as through protobuf-c, on one thread and on two (a batch above
    /// `MarkerLayer.concurrentUpsertAbove`).
    @Test(arguments: [300, MarkerLayer.concurrentUpsertAbove + 100]) func attributesStayOnThePlainPath(n: Int) throws {
        let seed = testSeed("PlainUpsertTests.attributesStayOnThePlainPath")
        var rng = SplitMix64(seed: seed)
        let fast = try Self.service(), slow = try Self.service()
        let markers = (0..<n).map { i in
            marker("p\(i)", Double.random(in: -80...80, using: &rng), Double.random(in: -180...180, using: &rng)) { m in
                if i % 5 != 0 {
                    m.attributes = ["name": "Place \(i) نيودلهي", "category": ["city", "town", "village"][i % 3], "population": "\(rng.next() % 9_000_000)"]
                }
            }
        }
        let request = V1.UpsertMarkersRequest(layerID: "a", markers: markers).serializedBytes()
        let batch = try #require(fast.plainBatch(request) { V1.UpsertMarkersRequest.visitPlain($0, reserve: $1, each: $2) }?.1)
        #expect(batch.count == n)
        #expect(byteMismatch((0..<batch.count).flatMap(batch.encodedAttributes), markers.flatMap { AttributeEncoding.encode($0.attributes) }) == nil)
        let a = Self.send(fast, request)
        #expect(a == Self.send(slow, request + [0x78, 0x01]), "seed \(seed)")
        #expect(a.hasPrefix("ok \(n) 0"), "seed \(seed): \(a)")
        let ha = fast.layers.withLock { $0["a"]! }, hb = slow.layers.withLock { $0["a"]! }
        for m in markers {
            let stored = try #require(ha.layer.marker(id: m.id))
            #expect(stored == hb.layer.marker(id: m.id), "seed \(seed): \(m.id)")
            #expect(stored.attributes == m.attributes, "seed \(seed): \(m.id)")
        }
    }

    /// Batches big enough for the write helper's second thread (`MarkerLayer.concurrentUpsertAbove`):
    /// all new, and with a few ids already in the layer (the grid inserts made ahead are
    /// undone), against the protobuf-c path, which files marker by marker.
    @Test func bigBatchesAgreeWithProtobufC() throws {
        let seed = testSeed("PlainUpsertTests.bigBatchesAgreeWithProtobufC")
        var rng = SplitMix64(seed: seed)
        let fast = try Self.service(), slow = try Self.service()
        var ids: [String] = []
        for round in 0..<4 {
            let n = MarkerLayer.concurrentUpsertAbove + Int(rng.next() % 3_000)
            let old = round < 2 ? 0 : 1 + Int(rng.next() % 5)
            let markers = (0..<n).map { i -> V1.Marker in
                let id = i < old ? ids[Int(rng.next() % UInt64(ids.count))] : "b\(round)-\(i)"
                return marker(id, Double.random(in: -80...80, using: &rng), Double.random(in: -180...180, using: &rng)) { m in
                    m.zIndex = Int32(rng.next() % 3)
                    if rng.next() % 50 == 0 { m.draggable = true }
                    if rng.next() % 40 == 0 { m.visible = false }
                }
            }
            let unique = Array(Dictionary(markers.map { ($0.id, $0) }, uniquingKeysWith: { a, _ in a }).values).shuffled(using: &rng)
            ids += unique.map(\.id).filter { $0.hasPrefix("b\(round)-") }
            let request = V1.UpsertMarkersRequest(layerID: "a", markers: unique).serializedBytes()
            let a = Self.send(fast, request)
            #expect(a == Self.send(slow, request + [0x78, 0x01]), "seed \(seed) round \(round)")
            #expect(a.hasPrefix("ok"), "seed \(seed) round \(round): \(a)")
        }
        let ha = fast.layers.withLock { $0["a"]! }, hb = slow.layers.withLock { $0["a"]! }
        for id in ids { #expect(ha.layer.marker(id: id) == hb.layer.marker(id: id), "seed \(seed): \(id)") }
        var sa = ha.layer.stats(now: 0), sb = hb.layer.stats(now: 0)
        sa.approximateBytes = 0
        sb.approximateBytes = 0
        #expect(sa == sb, "seed \(seed)")
        #expect(ha.layer.grid.validate().problems.isEmpty, "seed \(seed): grid")
    }
}

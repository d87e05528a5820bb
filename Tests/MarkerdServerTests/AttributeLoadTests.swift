import MarkerdAPI
import MarkerdClient
import MarkerdTestSupport
import Testing

/// Bulk loads with attributes (issue 36): `BulkLoader` through a real server (the client's
/// plain encoder, the server's plain decoder and attribute arena) gives the same markers as
/// single upserts of each marker (protobuf-c's bytes for one marker a call), in any dictionary
/// order of the attributes, updates included.
@Suite struct AttributeLoadTests {
    static func attributes(_ i: Int, _ rng: inout SplitMix64) -> [String: String] {
        var a = ["name": ["Tōkyō", "القاهرة", "नई दिल्ली", "Paris", "กรุงเทพมหานคร"][i % 5] + " \(i)",
                 "category": ["city", "town", "village"][i % 3], "population": "\(rng.next() % 9_000_000)"]
        if i % 7 == 0 { a["note"] = String(repeating: "long value ", count: Int(rng.next() % 40)) }
        if i % 11 == 0 { a["empty"] = "" }
        return a
    }

    @Test func bulkLoadWithAttributesEqualsSingleUpserts() throws {
        let seed = testSeed("AttributeLoadTests.bulkLoadWithAttributesEqualsSingleUpserts")
        var rng = SplitMix64(seed: seed)
        let s = try TestServer(.tcp)
        defer { s.stop() }
        let c = try s.client()
        _ = try createLayer(c, "bulk")
        _ = try createLayer(c, "single")
        let n = 6_000  // over the concurrent upsert's 4,096 per batch
        var markers = (0..<n).map { i in
            V1.Marker(id: "p\(i)", position: V1.LatLng(latitude: Double(rng.next() % 160) - 80 + 0.5, longitude: Double(rng.next() % 360) - 180 + 0.25),
                      attributes: i % 9 == 0 ? [:] : Self.attributes(i, &rng))
        }
        // Then updates: new values, keys dropped, attributes removed, and a few new markers.
        var updates = (0..<1_500).map { k in
            var m = markers[Int(rng.next() % UInt64(n))]
            m.attributes = k % 4 == 0 ? [:] : Self.attributes(k + n, &rng)
            return m
        }
        updates += (n..<n + 200).map { V1.Marker(id: "p\($0)", position: V1.LatLng(latitude: 1, longitude: 2), attributes: Self.attributes($0, &rng)) }
        let loader = BulkLoader(client: c, batchSize: 5_000, concurrency: 2)
        let loaded = try loader.load(markers, into: "bulk")
        #expect(loaded.created == n)
        for m in markers { _ = try c.upsertMarkers("single", [m]) }
        // Updates upsert each id once per call: a batch of BulkLoader must not repeat an id.
        var seen = Set<String>()
        updates = updates.reversed().filter { seen.insert($0.id).inserted }.reversed()
        _ = try BulkLoader(client: c, batchSize: 700, concurrency: 1).load(updates, into: "bulk")
        for m in updates { _ = try c.upsertMarkers("single", [m]) }
        for m in updates { markers.append(m) }
        let ids = Array(Set(markers.map(\.id))).sorted()
        for chunk in stride(from: 0, to: ids.count, by: 1_000).map({ Array(ids[$0..<min($0 + 1_000, ids.count)]) }) {
            let bulk = try c.getMarkers("bulk", ids: chunk), single = try c.getMarkers("single", ids: chunk)
            #expect(bulk.missingIDs.isEmpty && single.missingIDs.isEmpty)
            #expect(mismatch(bulk.markers, single.markers) == nil, "seed \(seed)")
        }
        // And what the server holds is what was sent last for each id.
        var last: [String: [String: String]] = [:]
        for m in markers { last[m.id] = m.attributes }
        let sample = try c.getMarkers("bulk", ids: Array(ids.prefix(500)))
        for m in sample.markers { #expect(m.attributes == last[m.id], "seed \(seed): \(m.id)") }
    }
}

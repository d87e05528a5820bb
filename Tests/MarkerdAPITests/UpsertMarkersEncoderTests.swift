import MarkerdAPI
import MarkerdTestSupport
import Testing

/// `V1.UpsertMarkersRequest.serializedPlainBytes` (the client's encoder for bulk loads) against
/// protobuf-c (`serializedBytes()`): byte for byte the same whenever it encodes (attributes
/// included), and nil exactly for what it does not handle.
@Suite struct UpsertMarkersEncoderTests {
    @Test func encodesLikeProtobufC() {
        let seed = testSeed("UpsertMarkersEncoderTests.encodesLikeProtobufC")
        var rng = SplitMix64(seed: seed)
        var declined = 0
        for round in 0..<80 {
            var markers = (0..<Int(rng.next() % 200)).map { SnapshotMarkersTests.randomMarker($0, &rng, plainOnly: round % 2 == 0) }
            // Unusual values: negative and extreme z-indices, -0 and NaN coordinates, big colors.
            for i in markers.indices where rng.next() % 8 == 0 {
                switch rng.next() % 5 {
                case 0: markers[i].zIndex = rng.next() % 2 == 0 ? .min : .max
                case 1: markers[i].position = V1.LatLng(latitude: -0.0, longitude: .nan)
                case 2: markers[i].anchor = V1.Anchor(x: -0.0, y: .infinity)
                case 3: markers[i].icon = .pin(V1.DefaultPin(fillColor: .max, label: ""))
                default: markers[i].id = ""
                }
            }
            let request = V1.UpsertMarkersRequest(layerID: round % 9 == 0 ? "" : "layer-\(round)", markers: markers)
            let plain = !markers.contains { $0.animation != nil }
            let got = request.serializedPlainBytes()
            #expect((got != nil) == plain, "seed \(seed) round \(round)")
            if let got { #expect(byteMismatch(got, request.serializedBytes()) == nil, "seed \(seed) round \(round)") } else { declined += 1 }
            // A slice (BulkLoader's batches) encodes as a request holding just those markers.
            let a = markers.isEmpty ? 0 : Int(rng.next() % UInt64(markers.count))
            let b = a + Int(rng.next() % UInt64(markers.count - a + 1))
            let slice = V1.UpsertMarkersRequest.serializedPlainBytes(layerID: request.layerID, markers: markers[a..<b])
            let sliceRequest = V1.UpsertMarkersRequest(layerID: request.layerID, markers: Array(markers[a..<b]))
            #expect(slice == sliceRequest.serializedPlainBytes(), "seed \(seed) round \(round) slice \(a)..<\(b)")
            if let slice { #expect(byteMismatch(slice, sliceRequest.serializedBytes()) == nil, "seed \(seed) round \(round) slice \(a)..<\(b)") }
        }
        #expect(declined > 0)
        // Strings with a NUL byte (protobuf-c cuts them): declined.
        for m in [V1.Marker(id: "a\u{0}b"), V1.Marker(id: "a", icon: .iconID("x\u{0}")),
                  V1.Marker(id: "a", icon: .pin(V1.DefaultPin(label: "\u{0}"))),
                  V1.Marker(id: "a", attributes: ["k\u{0}": "v"]), V1.Marker(id: "a", attributes: ["k": "\u{0}"])] {
            #expect(V1.UpsertMarkersRequest(layerID: "l", markers: [m]).serializedPlainBytes() == nil)
        }
        #expect(V1.UpsertMarkersRequest(layerID: "l\u{0}", markers: []).serializedPlainBytes() == nil)
    }

    /// Attributes are encoded once per marker and reordered by their key bytes, without
    /// comparing Strings: many keys, keys that share long prefixes or are prefixes of others,
    /// keys and values in several scripts, empty values, values over 127 bytes (two-byte
    /// lengths), in any dictionary order. The bytes are protobuf-c's and decode back to the same
    /// attributes; a NUL in any key or value, also after valid ones, declines the batch.
    ///
    /// Every round also encodes into one `EncodingScratch` reused from round to round (as a
    /// client's pool reuses them), after the previous round declined a batch in it: the same
    /// bytes as protobuf-c's.
    @Test func attributesEncodeSortedAndDecodeBack() throws {
        let seed = testSeed("UpsertMarkersEncoderTests.attributesEncodeSortedAndDecodeBack")
        var rng = SplitMix64(seed: seed)
        let reused = EncodingScratch()
        let keys = ["name", "category", "population", "名前", "a", "ab", "abc", "ab\u{7F}", "Ä", "z",
                    String(repeating: "k", count: 9), String(repeating: "k", count: 10) + "a", String(repeating: "k", count: 10) + "b",
                    String(repeating: "long key ", count: 20)]
        for round in 0..<60 {
            let markers = (0..<Int(1 + rng.next() % 40)).map { i in
                var m = V1.Marker(id: "m\(i)", position: V1.LatLng(latitude: 1, longitude: 2))
                for _ in 0..<Int(rng.next() % 12) {
                    let key = rng.next() % 4 == 0 ? "k\(rng.next() % 50)" : keys[Int(rng.next() % UInt64(keys.count))]
                    m.attributes[key] = switch rng.next() % 4 {
                    case 0: ""
                    case 1: String(repeating: "القاهرة ", count: Int(1 + rng.next() % 30))
                    default: "v\(rng.next() % 1000) 東京"
                    }
                }
                return m
            }
            let request = V1.UpsertMarkersRequest(layerID: "l", markers: markers)
            let got = try #require(request.serializedPlainBytes(), "seed \(seed) round \(round)")
            #expect(byteMismatch(got, request.serializedBytes()) == nil, "seed \(seed) round \(round)")
            let back = try V1.UpsertMarkersRequest(serializedBytes: got)
            #expect(mismatch(back.markers.map(\.attributes), markers.map(\.attributes)) == nil, "seed \(seed) round \(round)")
            // A NUL in one key or value of one marker declines the whole batch.
            var bad = markers
            let i = Int(rng.next() % UInt64(bad.count))
            if rng.next() % 2 == 0 { bad[i].attributes["zz\u{0}"] = "v" } else { bad[i].attributes[keys[round % keys.count]] = "v\u{0}w" }
            #expect(V1.UpsertMarkersRequest(layerID: "l", markers: bad).serializedPlainBytes() == nil, "seed \(seed) round \(round)")
            // The same with the reused scratch, which then takes the declined batch.
            let plain = try #require(V1.UpsertMarkersRequest.PlainEncoding(layerID: "l", markers: markers[...], scratch: reused), "seed \(seed) round \(round)")
            let written = [UInt8](unsafeUninitializedCapacity: plain.size) { b, n in
                plain.write(into: UnsafeMutableRawBufferPointer(b))
                n = plain.size
            }
            #expect(byteMismatch(written, got) == nil, "seed \(seed) round \(round): reused scratch")
            #expect(V1.UpsertMarkersRequest.PlainEncoding(layerID: "l", markers: bad[...], scratch: reused) == nil, "seed \(seed) round \(round)")
        }
    }

    /// Attributes given as columns (`AttributeColumns`: `markerctl load`'s path) encode to
    /// exactly the bytes of the same markers carrying them as dictionaries (the encoder above,
    /// itself checked against protobuf-c, and protobuf-c itself): keys in any order, keys that
    /// are prefixes of others or non-ASCII, absent cells, empty values, values over 127 bytes,
    /// and batches that are slices of the array (rows follow the slice's indices). A NUL in a
    /// value declines the batch.
    @Test func columnsEncodeLikeDictionaries() throws {
        let seed = testSeed("UpsertMarkersEncoderTests.columnsEncodeLikeDictionaries")
        var rng = SplitMix64(seed: seed)
        let pool = ["name", "category", "population", "名前", "a", "ab", "abc", "Ä", "z", "", String(repeating: "long key ", count: 20)]
        let reused = EncodingScratch()
        for round in 0..<60 {
            var keys = pool.filter { _ in rng.next() % 2 == 0 }
            keys.shuffle(using: &rng)
            var columns = AttributeColumns(keys: keys)
            let count = Int(rng.next() % 120)
            var markers: [V1.Marker] = []
            for i in 0..<count {
                var m = SnapshotMarkersTests.randomMarker(i, &rng, plainOnly: true)
                m.attributes = [:]
                markers.append(m)
                for _ in keys {
                    switch rng.next() % 6 {
                    case 0: columns.appendAbsent()
                    case 1: columns.append("")
                    case 2: columns.append(String(repeating: "القاهرة ", count: Int(1 + rng.next() % 30)))
                    default: columns.append("v\(rng.next() % 1000) 東京")
                    }
                }
            }
            #expect(columns.rowCount == (keys.isEmpty ? 0 : count))
            let named = columns.merged(into: markers[...])
            let a = count == 0 ? 0 : Int(rng.next() % UInt64(count))
            let b = a + Int(rng.next() % UInt64(count - a + 1))
            for range in [0..<count, a..<b] {
                let plain = try #require(V1.UpsertMarkersRequest.PlainEncoding(layerID: "l", markers: markers[range], columns: columns, scratch: reused),
                                         "seed \(seed) round \(round)")
                let got = [UInt8](unsafeUninitializedCapacity: plain.size) { out, n in
                    plain.write(into: UnsafeMutableRawBufferPointer(out))
                    n = plain.size
                }
                let request = V1.UpsertMarkersRequest(layerID: "l", markers: Array(named[range]))
                let dictionaries = try #require(request.serializedPlainBytes(), "seed \(seed) round \(round)")
                #expect(byteMismatch(got, dictionaries) == nil, "seed \(seed) round \(round) rows \(range)")
                #expect(byteMismatch(got, request.serializedBytes()) == nil, "seed \(seed) round \(round) rows \(range)")
            }
            // Markers that carry attributes of their own besides columns: declined (the client
            // then sends `merged`).
            if count > 0 {
                var own = markers
                own[Int(rng.next() % UInt64(count))].attributes["own"] = "x"
                #expect(V1.UpsertMarkersRequest.PlainEncoding(layerID: "l", markers: own[...], columns: columns, scratch: reused) == nil)
            }
        }
        // A NUL in a value or key: declined.
        var nul = AttributeColumns(keys: ["a", "b"])
        nul.append("x")
        nul.append("y\u{0}")
        #expect(V1.UpsertMarkersRequest.PlainEncoding(layerID: "l", markers: [V1.Marker(id: "m")][...], columns: nul, scratch: reused) == nil)
        var nulKey = AttributeColumns(keys: ["a\u{0}"])
        nulKey.append("x")
        #expect(V1.UpsertMarkersRequest.PlainEncoding(layerID: "l", markers: [V1.Marker(id: "m")][...], columns: nulKey, scratch: reused) == nil)
    }
}

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
}

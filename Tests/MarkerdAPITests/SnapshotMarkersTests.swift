import MarkerdAPI
import MarkerdTestSupport
import Testing

/// `V1.SnapshotSection.decodeMarkersChunk` (the restore's decoder) and
/// `V1.UpsertMarkersRequest.decodePlain` (UpsertMarkers' decoder, the same code without the
/// section around the request; `wrapped` picks which) against protobuf-c
/// (`init(serializedBytes:)`): whenever they decode, they decode the same; they decline what
/// they do not handle; on damaged bytes they decline or agree, and never crash.
@Suite struct SnapshotMarkersTests {
    static func randomMarker(_ i: Int, _ rng: inout SplitMix64, plainOnly: Bool) -> V1.Marker {
        func maybe<T>(_ v: @autoclosure () -> T) -> T? { rng.next() % 2 == 0 ? v() : nil }
        var m = V1.Marker()
        m.id = rng.next() % 10 == 0 ? "é-\(i)-ü" : "id-\(i)"
        if rng.next() % 20 != 0 {
            m.position = V1.LatLng(latitude: Double.random(in: -90...90, using: &rng), longitude: Double.random(in: -180...180, using: &rng))
        }
        switch rng.next() % 3 {
        case 0:
            var pin = V1.DefaultPin()
            pin.fillColor = maybe(UInt32(truncatingIfNeeded: rng.next()))
            pin.strokeColor = maybe(UInt32(truncatingIfNeeded: rng.next()))
            pin.strokeWidth = maybe(Float(rng.next() % 40) / 4)
            pin.scale = maybe(Float(rng.next() % 40) / 8)
            pin.label = maybe(rng.next() % 3 == 0 ? "" : "L\(i)")
            pin.labelColor = maybe(UInt32(truncatingIfNeeded: rng.next()))
            pin.labelSize = maybe(Float(rng.next() % 64))
            m.icon = .pin(pin)
        case 1: m.icon = .iconID(rng.next() % 4 == 0 ? "" : "icon-\(i % 3)")
        default: break
        }
        if rng.next() % 3 == 0 { m.anchor = V1.Anchor(x: Float(rng.next() % 10) / 10, y: Float(rng.next() % 10) / 10) }
        m.zIndex = Int32(truncatingIfNeeded: Int64(rng.next() % 2000) - 1000)
        m.clickable = maybe(rng.next() % 2 == 0)
        m.draggable = maybe(rng.next() % 2 == 0)
        m.visible = maybe(rng.next() % 2 == 0)
        if rng.next() % 5 == 0 { m.extra = (0..<Int(rng.next() % 6)).map { _ in UInt8(truncatingIfNeeded: rng.next()) } }
        if rng.next() % 3 == 0 {
            m.attributes = ["name": "Tōkyō \(i)", "a": "", "population": "\(rng.next() % 100_000)"]
            if rng.next() % 2 == 0 { m.attributes["z\(i)"] = "東京" }
        }
        if !plainOnly && rng.next() % 8 == 0 { m.animation = V1.Animation(kind: .drop, durationMs: 500, endsAtUnixMs: 7) }
        return m
    }

    static func section(_ markers: [V1.Marker], layer: String = "layer-1") -> [UInt8] {
        var s = V1.SnapshotSection()
        s.section = .markers(V1.UpsertMarkersRequest(layerID: layer, markers: markers))
        return s.serializedBytes()
    }

    /// A snapshot section (`wrapped`) or the bare request.
    static func encoded(_ markers: [V1.Marker], layer: String = "layer-1", wrapped: Bool) -> [UInt8] {
        wrapped ? section(markers, layer: layer) : V1.UpsertMarkersRequest(layerID: layer, markers: markers).serializedBytes()
    }

    static func fast(_ bytes: [UInt8], wrapped: Bool = true) -> V1.UpsertMarkersRequest? {
        bytes.withUnsafeBytes(wrapped ? V1.SnapshotSection.decodeMarkersChunk : V1.UpsertMarkersRequest.decodePlain)
    }

    /// What protobuf-c decodes, if it is a markers section (`wrapped`) or a request.
    static func slow(_ bytes: [UInt8], wrapped: Bool = true) -> V1.UpsertMarkersRequest? {
        guard wrapped else { return try? V1.UpsertMarkersRequest(serializedBytes: bytes) }
        guard let s = try? V1.SnapshotSection(serializedBytes: bytes), case .markers(let r)? = s.section else { return nil }
        return r
    }

    static func visit(_ bytes: [UInt8], wrapped: Bool, each: (V1.Marker, Bool, UnsafeRawBufferPointer) -> Bool) -> String? {
        bytes.withUnsafeBytes { raw in
            wrapped ? V1.SnapshotSection.visitMarkersChunk(raw, reserve: { _ in }, each: each)
                : V1.UpsertMarkersRequest.visitPlain(raw, reserve: { _ in }, each: each)
        }
    }

    @Test(arguments: [true, false]) func decodesWhatMarkerdWritesLikeProtobufC(wrapped: Bool) {
        let seed = testSeed("SnapshotMarkersTests.decodesWhatMarkerdWritesLikeProtobufC")
        var rng = SplitMix64(seed: seed)
        for round in 0..<40 {
            var markers = (0..<Int(rng.next() % 300)).map { Self.randomMarker($0, &rng, plainOnly: true) }
            if round % 2 == 0, let shared = markers.first(where: { if case .pin? = $0.icon { true } else { false } })?.icon {
                // Like a snapshot: runs of markers with the same pin (the decoder reuses it).
                for i in markers.indices where i % 5 != 0 { markers[i].icon = shared }
            }
            let bytes = Self.encoded(markers, layer: round % 7 == 0 ? "" : "layer-\(round)", wrapped: wrapped)
            let got = Self.fast(bytes, wrapped: wrapped)
            #expect(got != nil, "seed \(seed) round \(round): declined a plain chunk")
            #expect(got == Self.slow(bytes, wrapped: wrapped), "seed \(seed) round \(round)")
            #expect(got?.markers == markers, "seed \(seed) round \(round): round trip")
        }
    }

    /// `visitMarkersChunk`'s `sameStyle`: true exactly when the icon and anchor equal the
    /// previous marker's (equal values encode to equal bytes), never for the first marker.
    @Test(arguments: [true, false]) func reportsRepeatedIconAndAnchor(wrapped: Bool) {
        let seed = testSeed("SnapshotMarkersTests.reportsRepeatedIconAndAnchor")
        var rng = SplitMix64(seed: seed)
        for round in 0..<30 {
            var markers = (0..<Int(1 + rng.next() % 200)).map { Self.randomMarker($0, &rng, plainOnly: true) }
            for i in markers.indices.dropFirst() where rng.next() % 3 != 0 {
                // Runs: copy the icon, the anchor or both from the previous marker.
                let k = rng.next() % 3
                if k != 1 { markers[i].icon = markers[i - 1].icon }
                if k != 0 { markers[i].anchor = markers[i - 1].anchor }
            }
            var flags: [Bool] = []
            let bytes = Self.encoded(markers, wrapped: wrapped)
            let layer = Self.visit(bytes, wrapped: wrapped) { _, same, _ in flags.append(same); return true }
            #expect(layer == "layer-1", "seed \(seed) round \(round)")
            let expected = markers.indices.map { i in i > 0 && markers[i].icon == markers[i - 1].icon && markers[i].anchor == markers[i - 1].anchor }
            #expect(flags == expected, "seed \(seed) round \(round)")
        }
    }

    @Test(arguments: [true, false]) func declinesWhatItDoesNotHandle(wrapped: Bool) {
        let seed = testSeed("SnapshotMarkersTests.declinesWhatItDoesNotHandle")
        var rng = SplitMix64(seed: seed)
        var declined = 0
        for round in 0..<60 {
            let markers = (0..<Int(1 + rng.next() % 50)).map { Self.randomMarker($0, &rng, plainOnly: false) }
            let bytes = Self.encoded(markers, wrapped: wrapped)
            let handled = !markers.contains { $0.animation != nil }
            let got = Self.fast(bytes, wrapped: wrapped)
            if got == nil { declined += 1 }
            #expect((got != nil) == handled, "seed \(seed) round \(round)")
            if let got { #expect(got == Self.slow(bytes, wrapped: wrapped), "seed \(seed) round \(round)") }
        }
        #expect(declined > 0)
        guard wrapped else {
            // A repeated layer_id, an unknown field, an id with a NUL byte: left to protobuf-c.
            let one = Self.encoded([V1.Marker(id: "a", position: V1.LatLng(latitude: 1, longitude: 2))], wrapped: false)
            #expect(Self.fast(one, wrapped: false) != nil)
            #expect(Self.fast(one + [0x0A, 0x01, 0x62], wrapped: false) == nil)
            #expect(Self.fast(one + [0x18, 0x01], wrapped: false) == nil && Self.slow(one + [0x18, 0x01], wrapped: false) != nil)
            let marker: [UInt8] = [0x0A, 0x03, 0x61, 0x00, 0x62]
            let withNUL: [UInt8] = [0x12, UInt8(marker.count)] + marker
            #expect(Self.fast(withNUL, wrapped: false) == nil && Self.slow(withNUL, wrapped: false) != nil)
            return
        }
        // Other sections, a repeated field, trailing bytes, a string with NUL.
        var header = V1.SnapshotSection()
        header.section = .footer(V1.SnapshotFooter())
        #expect(Self.fast(header.serializedBytes()) == nil)
        let one = Self.section([V1.Marker(id: "a", position: V1.LatLng(latitude: 1, longitude: 2))])
        #expect(Self.fast(one) != nil)
        #expect(Self.fast(one + [0x08, 0x01]) == nil)
        let inner = Array(one.dropFirst(2))   // the UpsertMarkersRequest
        let twice = inner + [0x0A, 0x01, 0x62]     // layer_id again
        #expect(Self.fast([0x22, UInt8(twice.count)] + twice) == nil)
        // An id with a NUL byte on the wire (protobuf-c cuts it there): left to protobuf-c.
        let marker: [UInt8] = [0x0A, 0x03, 0x61, 0x00, 0x62]
        let request: [UInt8] = [0x12, UInt8(marker.count)] + marker
        let withNUL: [UInt8] = [0x22, UInt8(request.count)] + request
        #expect(Self.fast(withNUL) == nil)
        #expect(Self.slow(withNUL) != nil)
    }

    @Test(arguments: [true, false]) func damagedBytesAreDeclinedOrDecodedAlike(wrapped: Bool) {
        let seed = testSeed("SnapshotMarkersTests.damagedBytesAreDeclinedOrDecodedAlike")
        var rng = SplitMix64(seed: seed)
        var decodedDamaged = 0
        for round in 0..<400 {
            let markers = (0..<Int(1 + rng.next() % 20)).map { Self.randomMarker($0, &rng, plainOnly: true) }
            var bytes = Self.encoded(markers, wrapped: wrapped)
            switch round % 3 {
            case 0: bytes = Array(bytes.prefix(Int(rng.next() % UInt64(bytes.count))))
            case 1:
                for _ in 0..<(1 + Int(rng.next() % 3)) { bytes[Int(rng.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: rng.next()) }
            default:
                bytes.insert(UInt8(truncatingIfNeeded: rng.next()), at: Int(rng.next() % UInt64(bytes.count)))
            }
            if let got = Self.fast(bytes, wrapped: wrapped) {
                decodedDamaged += 1
                // Damage can make a double NaN, which is never == itself: compare the re-encoded
                // messages, which are equal iff every field is bit-identical.
                #expect(got.serializedBytes() == Self.slow(bytes, wrapped: wrapped)?.serializedBytes(), "seed \(seed) round \(round): \(bytes)")
            }
        }
        #expect(decodedDamaged > 0, "some damage (e.g. in a coordinate) still decodes")
    }
}

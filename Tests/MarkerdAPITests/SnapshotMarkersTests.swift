import MarkerdAPI
import MarkerdTestSupport
import Testing

/// `V1.SnapshotSection.decodeMarkersChunk` (the restore's decoder) against protobuf-c
/// (`init(serializedBytes:)`): whenever it decodes, it decodes the same; it declines what it
/// does not handle; on damaged bytes it declines or agrees, and never crashes.
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
        if !plainOnly && rng.next() % 4 == 0 {
            if rng.next() % 2 == 0 { m.attributes = ["a": "b\(i)"] } else { m.animation = V1.Animation(kind: .drop, durationMs: 500, endsAtUnixMs: 7) }
        }
        return m
    }

    static func section(_ markers: [V1.Marker], layer: String = "layer-1") -> [UInt8] {
        var s = V1.SnapshotSection()
        s.section = .markers(V1.UpsertMarkersRequest(layerID: layer, markers: markers))
        return s.serializedBytes()
    }

    static func fast(_ bytes: [UInt8]) -> V1.UpsertMarkersRequest? {
        bytes.withUnsafeBytes(V1.SnapshotSection.decodeMarkersChunk)
    }

    /// What protobuf-c decodes, if it is a markers section.
    static func slow(_ bytes: [UInt8]) -> V1.UpsertMarkersRequest? {
        guard let s = try? V1.SnapshotSection(serializedBytes: bytes), case .markers(let r)? = s.section else { return nil }
        return r
    }

    @Test func decodesWhatMarkerdWritesLikeProtobufC() {
        let seed = testSeed("SnapshotMarkersTests.decodesWhatMarkerdWritesLikeProtobufC")
        var rng = SplitMix64(seed: seed)
        for round in 0..<40 {
            var markers = (0..<Int(rng.next() % 300)).map { Self.randomMarker($0, &rng, plainOnly: true) }
            if round % 2 == 0, let shared = markers.first(where: { if case .pin? = $0.icon { true } else { false } })?.icon {
                // Like a snapshot: runs of markers with the same pin (the decoder reuses it).
                for i in markers.indices where i % 5 != 0 { markers[i].icon = shared }
            }
            let bytes = Self.section(markers, layer: round % 7 == 0 ? "" : "layer-\(round)")
            let got = Self.fast(bytes)
            #expect(got != nil, "seed \(seed) round \(round): declined a plain chunk")
            #expect(got == Self.slow(bytes), "seed \(seed) round \(round)")
            #expect(got?.markers == markers, "seed \(seed) round \(round): round trip")
        }
    }

    /// `visitMarkersChunk`'s `sameStyle`: true exactly when the icon and anchor equal the
    /// previous marker's (equal values encode to equal bytes), never for the first marker.
    @Test func reportsRepeatedIconAndAnchor() {
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
            let bytes = Self.section(markers)
            let layer = bytes.withUnsafeBytes { raw in
                V1.SnapshotSection.visitMarkersChunk(raw, reserve: { _ in }) { _, same in flags.append(same); return true }
            }
            #expect(layer == "layer-1", "seed \(seed) round \(round)")
            let expected = markers.indices.map { i in i > 0 && markers[i].icon == markers[i - 1].icon && markers[i].anchor == markers[i - 1].anchor }
            #expect(flags == expected, "seed \(seed) round \(round)")
        }
    }

    @Test func declinesWhatItDoesNotHandle() {
        let seed = testSeed("SnapshotMarkersTests.declinesWhatItDoesNotHandle")
        var rng = SplitMix64(seed: seed)
        var declined = 0
        for round in 0..<60 {
            let markers = (0..<Int(1 + rng.next() % 50)).map { Self.randomMarker($0, &rng, plainOnly: false) }
            let bytes = Self.section(markers)
            let handled = !markers.contains { !$0.attributes.isEmpty || $0.animation != nil }
            let got = Self.fast(bytes)
            if got == nil { declined += 1 }
            #expect((got != nil) == handled, "seed \(seed) round \(round)")
            if let got { #expect(got == Self.slow(bytes), "seed \(seed) round \(round)") }
        }
        #expect(declined > 0)
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

    @Test func damagedBytesAreDeclinedOrDecodedAlike() {
        let seed = testSeed("SnapshotMarkersTests.damagedBytesAreDeclinedOrDecodedAlike")
        var rng = SplitMix64(seed: seed)
        var decodedDamaged = 0
        for round in 0..<400 {
            let markers = (0..<Int(1 + rng.next() % 20)).map { Self.randomMarker($0, &rng, plainOnly: true) }
            var bytes = Self.section(markers)
            switch round % 3 {
            case 0: bytes = Array(bytes.prefix(Int(rng.next() % UInt64(bytes.count))))
            case 1:
                for _ in 0..<(1 + Int(rng.next() % 3)) { bytes[Int(rng.next() % UInt64(bytes.count))] = UInt8(truncatingIfNeeded: rng.next()) }
            default:
                bytes.insert(UInt8(truncatingIfNeeded: rng.next()), at: Int(rng.next() % UInt64(bytes.count)))
            }
            if let got = Self.fast(bytes) {
                decodedDamaged += 1
                // Damage can make a double NaN, which is never == itself: compare the re-encoded
                // messages, which are equal iff every field is bit-identical.
                #expect(got.serializedBytes() == Self.slow(bytes)?.serializedBytes(), "seed \(seed) round \(round): \(bytes)")
            }
        }
        #expect(decodedDamaged > 0, "some damage (e.g. in a coordinate) still decodes")
    }
}

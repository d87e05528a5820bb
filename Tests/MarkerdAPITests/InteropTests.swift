import MarkerdAPI
import Testing

// Fixtures made with Python protobuf 5.x (upb) from the same protos, offline:
//   python3 -m grpc_tools.protoc -I Protos --python_out=OUT markerd/v1/markerd.proto markerd/v1/storage.proto
//   then, in OUT, for each message below: msg.SerializeToString(deterministic=True).hex()
// The Python expression that made each fixture is quoted next to it.
@Suite struct InteropTests {
    /// Decodes `hex` to `expected`, and (for deterministic messages) re-encodes to the same bytes.
    private func check<M: ProtoMessage>(_ hexBytes: String, _ expected: M, sameBytes: Bool = true,
                                        sourceLocation: SourceLocation = #_sourceLocation) throws {
        let wire = bytes(hex: hexBytes)
        let decoded = try M(serializedBytes: wire)
        #expect(decoded == expected, sourceLocation: sourceLocation)
        if sameBytes {
            #expect(hex(expected.serializedBytes()) == hexBytes, sourceLocation: sourceLocation)
            #expect(expected.serializedSize == wire.count, sourceLocation: sourceLocation)
        }
    }

    @Test func request() throws {
        // Request(method="/markerd.v1.MarkerService/UpsertMarkers", request_id=42, idempotency_key="k-1",
        //         timeout_ms=1500, payload=b"\x0a\x02L1")
        try check(
            "0a272f6d61726b6572642e76312e4d61726b6572536572766963652f5570736572744d61726b657273102a1a036b2d3120dc0b32040a024c31",
            V1.Request(method: "/markerd.v1.MarkerService/UpsertMarkers", requestID: 42, idempotencyKey: "k-1",
                       timeoutMs: 1500, payload: [0x0A, 0x02, 0x4C, 0x31]))
    }

    @Test func response() throws {
        // Response(request_id=42, code=INVALID_ARGUMENT, message="bad id ü")
        try check("082a10031a0962616420696420c3bc", V1.Response(requestID: 42, code: .invalidArgument, message: "bad id ü"))
    }

    @Test func markerWithEveryField() throws {
        // Marker(id="m-ü1", position=LatLng(latitude=52.52, longitude=-13.405),
        //        pin=DefaultPin(fill_color=0xFF00FF00, scale=1.5, label="A"), anchor=Anchor(x=0.5, y=1.0),
        //        z_index=-3, clickable=False, draggable=True,
        //        animation=Animation(kind=ANIMATION_KIND_BOUNCE, duration_ms=300, ends_at_unix_ms=1700000000123),
        //        visible=True, attributes={"z": "last", "a": "first", "m": ""}, extra=b"\x00\xff")
        try check(
            "0a056d2dc3bc31121209c3f5285c8f424a40118fc2f5285ccf2ac01a0e0880fe83f80f250000c03f2a01412a0a0d0000003f150000803f"
                + "30fdffffffffffffffff01380040014a0c080210ac0218fbd095ffbc3150015a0a0a0161120566697273745a050a016d12005a090a"
                + "017a12046c617374620200ff",
            V1.Marker(
                id: "m-ü1", position: V1.LatLng(latitude: 52.52, longitude: -13.405),
                icon: .pin(V1.DefaultPin(fillColor: 0xFF00_FF00, scale: 1.5, label: "A")),
                anchor: V1.Anchor(x: 0.5, y: 1.0), zIndex: -3, clickable: false, draggable: true,
                animation: V1.Animation(kind: .bounce, durationMs: 300, endsAtUnixMs: 1_700_000_000_123),
                visible: true, attributes: ["z": "last", "a": "first", "m": ""], extra: [0x00, 0xFF]))
    }

    @Test func upsertMarkers() throws {
        // UpsertMarkersRequest(layer_id="cities", markers=[
        //     Marker(id="berlin", position=LatLng(latitude=52.52, longitude=13.405)),
        //     Marker(id="tokyo", position=LatLng(latitude=35.6762, longitude=139.6503), icon_id="star"),
        //     Marker(id="zero")])
        try check(
            "0a06636974696573121c0a066265726c696e121209c3f5285c8f424a40118fc2f5285ccf2a4012210a05746f6b796f12120911c7bab8"
                + "8dd6414011d712f241cf74614022047374617212060a047a65726f",
            V1.UpsertMarkersRequest(layerID: "cities", markers: [
                V1.Marker(id: "berlin", position: V1.LatLng(latitude: 52.52, longitude: 13.405)),
                V1.Marker(id: "tokyo", position: V1.LatLng(latitude: 35.6762, longitude: 139.6503), icon: .iconID("star")),
                V1.Marker(id: "zero"),
            ]))
    }

    @Test func hitTestWithDefaultsSetExplicitly() throws {
        // HitTestRequest(layer_id="L", point=LatLng(latitude=1.5, longitude=-2.5), zoom=12.5, tolerance_px=14, max_results=10)
        try check(
            "0a014c121209000000000000f83f1100000000000004c01900000000000029402d00006041300a",
            V1.HitTestRequest(layerID: "L", point: V1.LatLng(latitude: 1.5, longitude: -2.5), zoom: 12.5,
                              tolerancePx: 14, maxResults: 10))
    }

    @Test func createLayerWithPresence() throws {
        // CreateLayerRequest(layer_id="L", options=LayerOptions(tiling=TilingOptions(enabled=False, tile_size=512),
        //                    clustering=ClusteringOptions()))
        try check(
            "0a014c12090a0508001880041200",
            V1.CreateLayerRequest(layerID: "L", options: V1.LayerOptions(
                tiling: V1.TilingOptions(enabled: false, tileSize: 512), clustering: V1.ClusteringOptions())))
    }

    @Test func snapshotSection() throws {
        // SnapshotSection(header=SnapshotHeader(format_version=1, covers_sequence=0, created_at_unix_ms=-1))
        try check("0a0f0801100018ffffffffffffffffff01",
                  V1.SnapshotSection(section: .header(V1.SnapshotHeader(formatVersion: 1, coversSequence: 0, createdAtUnixMs: -1))))
    }

    @Test func journalRecordDropsExplicitZeroValues() throws {
        // JournalRecord(sequence=7, method="/markerd.v1.MarkerService/MoveMarkers", payload=b"",
        //               applied_at_unix_ms=5, request_digest=2**64-1)
        // payload is a plain field: the explicitly set empty payload decodes to [] and is not re-encoded.
        let record = V1.JournalRecord(sequence: 7, method: "/markerd.v1.MarkerService/MoveMarkers", appliedAtUnixMs: 5,
                                      requestDigest: .max)
        try check("080712252f6d61726b6572642e76312e4d61726b6572536572766963652f4d6f76654d61726b6572732200280538ffffffffffffffffff01",
                  record, sameBytes: false)
        #expect(hex(record.serializedBytes())
            == "080712252f6d61726b6572642e76312e4d61726b6572536572766963652f4d6f76654d61726b657273280538ffffffffffffffffff01")
    }

    @Test func unknownFieldsAreSkippedAndUnknownEnumNumbersFallBack() throws {
        // Response with request_id=1, code=99 (not a Code) and an unknown field 15 (varint 5).
        let response = try V1.Response(serializedBytes: bytes(hex: "0801 1063 7805"))
        #expect(response == V1.Response(requestID: 1, code: .unknown))
        // Layer.mode = 7 (not a TilingMode).
        #expect(try V1.Layer(serializedBytes: bytes(hex: "2007")).mode == .unspecified)
        // PointTileOptions.mode = 9 (not a PointTileMode): the default.
        #expect(try V1.PointTileOptions(serializedBytes: bytes(hex: "0809")).mode == .unspecified)
        // Animation.kind = -1 (10-byte varint).
        #expect(try V1.Animation(serializedBytes: bytes(hex: "08ffffffffffffffffff01")).kind == .unspecified)
        // ClusteringOptions.algorithm = 7 (field 8; not a ClusterAlgorithm): the default.
        #expect(try V1.ClusteringOptions(serializedBytes: bytes(hex: "4007")).algorithm == .unspecified)
    }

    @Test func repeatedScalarFieldLastValueWins() throws {
        // Two request_id fields: proto semantics keep the last one.
        #expect(try V1.Request(serializedBytes: bytes(hex: "1001 1002")).requestID == 2)
    }
}

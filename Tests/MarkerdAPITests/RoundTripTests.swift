import MarkerdAPI
import Testing

/// Encodes, checks the size, decodes, and checks that re-encoding gives the same bytes.
private func roundTrip<M: ProtoMessage>(_ message: M, sourceLocation: SourceLocation = #_sourceLocation) throws -> [UInt8] {
    let encoded = message.serializedBytes()
    #expect(encoded.count == message.serializedSize, "\(M.self)", sourceLocation: sourceLocation)
    // serialize(into:) writes exactly serializedSize bytes into a larger buffer.
    var buffer = [UInt8](repeating: 0xEE, count: encoded.count + 8)
    buffer.withUnsafeMutableBytes { message.serialize(into: $0) }
    #expect(Array(buffer[..<encoded.count]) == encoded, "\(M.self)", sourceLocation: sourceLocation)
    #expect(buffer[encoded.count...].allSatisfy { $0 == 0xEE }, "\(M.self)", sourceLocation: sourceLocation)
    let decoded = try M(serializedBytes: encoded)
    #expect(decoded == message, "\(M.self)", sourceLocation: sourceLocation)
    #expect(decoded.serializedBytes() == encoded, "\(M.self)", sourceLocation: sourceLocation)
    return encoded
}

private func expectEmptyDecodes<M: ProtoMessage>(_: M.Type) throws {
    #expect(try M(serializedBytes: []) == M())
}

@Suite struct RoundTripTests {
    @Test func everyMessageWithAllFieldsSet() throws {
        #expect(Full.all.count == Full.types.count)
        for message in Full.all {
            let encoded = try roundTrip(message)
            if !(message is V1.ListLayersRequest || message is V1.DragToResponse || message is V1.CreateSnapshotRequest
                || message is V1.GetServerInfoRequest) {
                #expect(!encoded.isEmpty, "\(type(of: message)) encodes its fields")
            }
        }
    }

    @Test func everyMessageWithNoFieldsSet() throws {
        for type in Full.types {
            let encoded = try roundTrip(type.init())
            #expect(encoded.isEmpty, "\(type) with no field set encodes to nothing")
            try expectEmptyDecodes(type)
        }
    }

    @Test func zeroValuesOfPlainFieldsAreNotEncoded() throws {
        let request = V1.Request(method: "", requestID: 0, idempotencyKey: "", timeoutMs: 0, authToken: "", payload: [])
        #expect(request.serializedBytes().isEmpty)
        let marker = V1.Marker(id: "", zIndex: 0, extra: [])
        #expect(marker.serializedBytes().isEmpty)
        #expect(V1.Layer(mode: .unspecified).serializedBytes().isEmpty)
    }

    @Test func presenceIsKeptForOptionalFields() throws {
        // Zero / default values that are set explicitly are encoded and come back as set.
        let pin = V1.DefaultPin(fillColor: 0, strokeColor: V1.DefaultPin.defaultStrokeColor, strokeWidth: 0, scale: 1,
                                label: "", labelColor: 0, labelSize: 0)
        let decoded = try V1.DefaultPin(serializedBytes: pin.serializedBytes())
        #expect(decoded == pin)
        #expect(decoded.label == "")
        #expect(try V1.DefaultPin(serializedBytes: V1.DefaultPin().serializedBytes()).label == nil)

        let marker = V1.Marker(id: "m", clickable: true, draggable: false, visible: true)
        #expect(try V1.Marker(serializedBytes: marker.serializedBytes()) == marker)
        #expect(try V1.Marker(serializedBytes: V1.Marker(id: "m").serializedBytes()).clickable == nil)

        let options = V1.LayerOptions(tiling: V1.TilingOptions(), clustering: V1.ClusteringOptions(enabled: false))
        #expect(options.serializedBytes() == [0x0A, 0x00, 0x12, 0x02, 0x08, 0x00])
        #expect(try V1.LayerOptions(serializedBytes: options.serializedBytes()) == options)
    }

    @Test func oneofCases() throws {
        for icon: V1.Marker.Icon? in [nil, .pin(V1.DefaultPin()), .pin(Full.defaultPin), .iconID("star"), .iconID("")] {
            let marker = V1.Marker(id: "m", icon: icon)
            _ = try roundTrip(marker)
        }
        let sections: [V1.SnapshotSection.Section?] = [
            nil, .header(Full.snapshotHeader), .layer(Full.createLayerRequest), .icon(Full.registerIconRequest),
            .markers(Full.upsertMarkersRequest), .idempotency(Full.idempotencyEntry), .footer(V1.SnapshotFooter()),
        ]
        for section in sections {
            _ = try roundTrip(V1.SnapshotSection(section: section))
        }
    }

    @Test func mapIsEncodedWithSortedKeys() throws {
        // Insertion order (and Dictionary's per-process seed) must not matter.
        var a: [String: String] = [:]
        var b: [String: String] = [:]
        let keys = (0..<50).map { "k\($0 * 7919 % 101)" }
        for k in keys { a[k] = "v" + k }
        for k in keys.reversed() { b[k] = "v" + k }
        let ma = V1.Marker(id: "m", attributes: a)
        let mb = V1.Marker(id: "m", attributes: b)
        #expect(ma.serializedBytes() == mb.serializedBytes())
        _ = try roundTrip(ma)
    }

    @Test func extremeScalars() throws {
        let marker = V1.Marker(id: String(repeating: "é", count: 128), position: V1.LatLng(latitude: -85.05112878, longitude: 180),
                               zIndex: .min, animation: V1.Animation(kind: .drop, durationMs: .max, endsAtUnixMs: .min))
        _ = try roundTrip(marker)
        _ = try roundTrip(V1.Response(requestID: .max, code: .dataLoss))
        _ = try roundTrip(V1.GetServerInfoResponse(version: "1.0", uptimeMs: .max, layerCount: .max,
                                                   markerCount: .max, durable: true))
        _ = try roundTrip(V1.SnapshotHeader(formatVersion: 0, coversSequence: 0, createdAtUnixMs: 0))
        _ = try roundTrip(V1.Request(payload: [UInt8](repeating: 7, count: 1 << 20)))
    }

    @Test func codes() {
        // gRPC's 17 codes, then markerd's own: MOVED (cluster mode's redirect).
        #expect(V1.Code.allCases.count == 18)
        #expect(V1.Code.allCases.map(\.rawValue) == Array(0...17))
        #expect(V1.Code.moved.name == "MOVED" && V1.Code.moved.rawValue == 17)
        #expect(V1.Code.invalidArgument.name == "INVALID_ARGUMENT")
        #expect(V1.Code.ok.name == "OK")
        #expect(V1.Code.internal.rawValue == 13)
        #expect(V1.Code.unauthenticated.name == "UNAUTHENTICATED")
        #expect(V1.TilingMode.tiled.name == "TILING_MODE_TILED")
        #expect(V1.AnimationKind.bounce.rawValue == 2)
        #expect(V1.DefaultPin.defaultFillColor == 0xFFFF_0000)
        #expect(V1.TilingOptions.defaultMinMarkerCount == 2000)
        #expect(V1.PointTileMode.allCases.map(\.rawValue) == [0, 1, 2, 3])
        #expect(V1.PointTileMode.none.name == "POINT_TILE_MODE_NONE")
        #expect(V1.PointTileOptions.defaultMaxFeatures == 4096 && V1.PointTileOptions.defaultMaxBytes == 500_000)
        #expect(V1.HitTestRequest.defaultTolerancePx == 14)
    }
}

import MarkerdTestSupport
import MarkerdAPI
import Testing

/// Decodes `bytes` as every message type: each must either decode or throw, never crash. What
/// decodes must encode to bytes that decode and encode to the same bytes again (compared as
/// bytes, not with ==: random doubles may be NaN). Returns how many types decoded.
@discardableResult
private func decodeAsEveryType(_ bytes: [UInt8]) -> Int {
    var decoded = 0
    for type in Full.types {
        guard let message = try? type.init(serializedBytes: bytes) else { continue }
        decoded += 1
        let wire = message.serializedBytes()
        let again = try? type.init(serializedBytes: wire).serializedBytes()
        #expect(again == wire, "\(type) decoded from \(hex(bytes)) does not encode stably")
    }
    return decoded
}

private func expectThrows<M: ProtoMessage>(_: M.Type, _ hexBytes: String, sourceLocation: SourceLocation = #_sourceLocation) {
    #expect(throws: ProtoDecodingError.self, "\(M.self) \(hexBytes)", sourceLocation: sourceLocation) {
        try M(serializedBytes: bytes(hex: hexBytes))
    }
}

@Suite struct MalformedInputTests {
    @Test func truncatedBytes() throws {
        let request = Full.request.serializedBytes()
        // The first field is the 9-byte method string (tag, length, bytes): any cut inside it is malformed.
        for n in 1..<11 {
            #expect(throws: ProtoDecodingError.self) { try V1.Request(serializedBytes: Array(request[..<n])) }
        }
        // Every prefix of every full message either decodes (a cut between fields) or throws.
        for message in Full.all {
            let full = message.serializedBytes()
            let type = type(of: message)
            var failures = 0
            for n in 0..<full.count where (try? type.init(serializedBytes: Array(full[..<n]))) == nil { failures += 1 }
            if full.count > 1 { #expect(failures > 0, "\(type): some truncations must fail") }
        }
    }

    @Test func errorDescription() {
        let wire = Array(Full.upsertMarkersRequest.serializedBytes().dropLast())
        do {
            _ = try V1.UpsertMarkersRequest(serializedBytes: wire)
            Issue.record("truncated UpsertMarkersRequest decoded")
        } catch {
            #expect(error.reason == .malformed)
            #expect(error.description == "malformed UpsertMarkersRequest (\(wire.count) bytes)")
        }
    }

    @Test func wrongWireTypes() {
        expectThrows(V1.Request.self, "0801")              // method (string) as a varint
        expectThrows(V1.Request.self, "1101020304050607 08") // request_id (varint) as fixed64
        expectThrows(V1.LatLng.self, "0801")               // latitude (double) as a varint
        expectThrows(V1.Anchor.self, "0d0000")             // x (float), fixed32 cut short
        expectThrows(V1.Marker.self, "1001")               // position (message) as a varint
        expectThrows(V1.UpsertMarkersRequest.self, "1500000000") // markers (message) as fixed32
        expectThrows(V1.RemoveMarkersRequest.self, "1001") // ids (repeated string) as a varint
        expectThrows(V1.Marker.self, "5801")               // attributes (map) as a varint
        expectThrows(V1.SnapshotSection.self, "0801")      // header (oneof message) as a varint
    }

    @Test func badLengthsAndVarints() {
        expectThrows(V1.Request.self, "0a0541")                    // length past the end
        expectThrows(V1.Request.self, "0affffffff0f41")            // huge length
        expectThrows(V1.Request.self, "10ffffffffffffffffffff01")  // 11-byte varint
        expectThrows(V1.Request.self, "80")                        // tag cut short
        expectThrows(V1.Request.self, "00")                        // field number 0
        expectThrows(V1.UpsertMarkersRequest.self, "1203 0a05 41") // nested message overruns its length
        expectThrows(V1.Marker.self, "1a02 08")                    // pin with a cut varint
    }

    @Test func invalidUTF8IsRejected() throws {
        // Marker.id = 0xFF 0x41: not UTF-8.
        do {
            _ = try V1.Marker(serializedBytes: bytes(hex: "0a02ff41"))
            Issue.record("invalid UTF-8 decoded")
        } catch {
            #expect(error.reason == .invalidUTF8(field: "Marker.id"))
        }
        // Nested: an UpsertMarkersRequest whose second marker id is a lone continuation byte.
        let wire = bytes(hex: "0a014c 1203 0a0161 1203 0a0180")
        do {
            _ = try V1.UpsertMarkersRequest(serializedBytes: wire)
            Issue.record("invalid UTF-8 decoded")
        } catch {
            #expect(error.description == "invalid UTF-8 in Marker.id while decoding UpsertMarkersRequest (13 bytes)")
        }
        expectThrows(V1.Marker.self, "5a05 0a03eda080")    // attribute key: an encoded surrogate
        expectThrows(V1.RemoveMarkersRequest.self, "1201c0") // ids
        expectThrows(V1.Marker.self, "2202c3")             // icon_id: truncated sequence
        // bytes fields are not checked.
        #expect(try V1.Marker(serializedBytes: bytes(hex: "6202ff80")).extra == [0xFF, 0x80])
    }

    @Test func randomBytes() {
        let seed = testSeed("randomBytes")
        var rng = SplitMix64(seed: seed)
        var decoded = 0
        for _ in 0..<2000 {
            let count = Int.random(in: 0...48, using: &rng)
            let wire = (0..<count).map { _ in UInt8.random(in: 0...255, using: &rng) }
            decoded += decodeAsEveryType(wire)
        }
        // Some random bytes decode (so the re-encoding above is exercised), far from all.
        #expect(decoded > 0 && decoded < 2000 * Full.types.count, "seed \(seed): \(decoded) decodes succeeded")
    }

    @Test func mutatedMessages() {
        // Random byte flips, insertions and cuts in valid encodings reach deeper into the parser.
        let seed = testSeed("mutatedMessages")
        var rng = SplitMix64(seed: seed)
        let valid = Full.all.map { $0.serializedBytes() }.filter { !$0.isEmpty }
        for _ in 0..<3000 {
            var wire = valid.randomElement(using: &rng)!
            for _ in 0..<Int.random(in: 1...4, using: &rng) {
                let i = Int.random(in: 0..<wire.count, using: &rng)
                switch Int.random(in: 0..<4, using: &rng) {
                case 0: wire[i] = UInt8.random(in: 0...255, using: &rng)
                case 1: wire[i] ^= 1 << UInt8.random(in: 0..<8, using: &rng)
                case 2: wire.insert(UInt8.random(in: 0...255, using: &rng), at: i)
                default: wire.removeSubrange(i...)
                }
                if wire.isEmpty { break }
            }
            decodeAsEveryType(wire)
        }
    }
}

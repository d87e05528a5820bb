import MarkerdTestSupport
import MarkerdAPI
import Testing

/// `V1.RequestHead` (the envelope read in place by the inline path) against the full decode
/// `V1.Request(serializedBytes:)` on seeded random envelopes, valid and mutated.
@Suite struct RequestHeadTests {
    /// Whenever the head reads an envelope, the full decode gives the same fields.
    private func expectAgrees(_ wire: [UInt8], seed: UInt64, sourceLocation: SourceLocation = #_sourceLocation) -> Bool {
        let head = wire.withUnsafeBytes { V1.RequestHead($0) }
        guard let head else { return false }
        let full = try? V1.Request(serializedBytes: wire)
        #expect(full != nil, "seed \(seed): head read \(hex(wire)) but the full decode fails", sourceLocation: sourceLocation)
        guard let full else { return true }
        #expect(Array(wire[head.method]) == Array(full.method.utf8), "seed \(seed): \(hex(wire))", sourceLocation: sourceLocation)
        #expect(head.requestID == full.requestID, "seed \(seed): \(hex(wire))", sourceLocation: sourceLocation)
        #expect(head.timeoutMs == full.timeoutMs, "seed \(seed): \(hex(wire))", sourceLocation: sourceLocation)
        #expect(Array(wire[head.payload]) == full.payload, "seed \(seed): \(hex(wire))", sourceLocation: sourceLocation)
        #expect(Array(wire[head.authToken]) == Array(full.authToken.utf8), "seed \(seed): \(hex(wire))", sourceLocation: sourceLocation)
        #expect(Array(wire[head.idempotencyKey]) == Array(full.idempotencyKey.utf8), "seed \(seed): \(hex(wire))", sourceLocation: sourceLocation)
        #expect(head.minSequence == full.minSequence, "seed \(seed): \(hex(wire))", sourceLocation: sourceLocation)
        // The envelope built from the head is the full decode's.
        #expect((try? wire.withUnsafeBytes { try V1.request($0) }) == full, "seed \(seed): \(hex(wire))", sourceLocation: sourceLocation)
        return true
    }

    private static func randomRequest(_ rng: inout SplitMix64) -> V1.Request {
        let methods = ["/markerd.v1.MarkerService/QueryViewport", "/markerd.v1.MarkerService/HitTest", "", "m"]
        var r = V1.Request()
        r.method = methods[Int.random(in: 0..<methods.count, using: &rng)]
        if Bool.random(using: &rng) { r.requestID = [1, 127, 128, 300, UInt64.max, rng.next()][Int.random(in: 0..<6, using: &rng)] }
        if Bool.random(using: &rng) { r.timeoutMs = [1, 1000, UInt32.max][Int.random(in: 0..<3, using: &rng)] }
        if Int.random(in: 0..<4, using: &rng) == 0 { r.idempotencyKey = ["key-\(rng.next() % 100)", "k\u{e9}y", "load-1/7"][Int.random(in: 0..<3, using: &rng)] }
        if Int.random(in: 0..<4, using: &rng) == 0 { r.minSequence = [1, 128, UInt64.max][Int.random(in: 0..<3, using: &rng)] }
        if Int.random(in: 0..<4, using: &rng) == 0 { r.authToken = ["token", "mkd_Zx-9_", "tok\u{e9}n"][Int.random(in: 0..<3, using: &rng)] }
        r.payload = (0..<Int.random(in: 0...200, using: &rng)).map { _ in UInt8.random(in: 0...255, using: &rng) }
        return r
    }

    @Test func agreesWithTheFullDecode() {
        let seed = testSeed("RequestHeadTests.agreesWithTheFullDecode")
        var rng = SplitMix64(seed: seed)
        var plainRead = 0, plain = 0, mutatedRead = 0
        for _ in 0..<3_000 {
            let request = Self.randomRequest(&rng)
            let wire = request.serializedBytes()
            let read = expectAgrees(wire, seed: seed)
            // A plain envelope (key and token absent or ASCII) is always read.
            if request.idempotencyKey.utf8.allSatisfy({ $0 < 0x80 }) && request.authToken.utf8.allSatisfy({ $0 < 0x80 }) {
                plain += 1
                if read { plainRead += 1 }
            } else {
                #expect(!read, "seed \(seed): read an envelope with a non-ASCII key or token: \(hex(wire))")
            }
            // Byte flips, insertions and cuts: the head either declines or agrees.
            var mutated = wire
            for _ in 0..<Int.random(in: 1...3, using: &rng) where !mutated.isEmpty {
                let i = Int.random(in: 0..<mutated.count, using: &rng)
                switch Int.random(in: 0..<4, using: &rng) {
                case 0: mutated[i] = UInt8.random(in: 0...255, using: &rng)
                case 1: mutated[i] ^= 1 << UInt8.random(in: 0..<8, using: &rng)
                case 2: mutated.insert(UInt8.random(in: 0...255, using: &rng), at: i)
                default: mutated.removeSubrange(i...)
                }
            }
            if expectAgrees(mutated, seed: seed) { mutatedRead += 1 }
        }
        #expect(plainRead == plain, "seed \(seed): \(plain - plainRead) plain envelopes declined")
        #expect(plain > 0 && mutatedRead > 0, "seed \(seed): \(plain) plain envelopes, \(mutatedRead) of 3000 mutated ones read")
    }

    @Test func declinesWhatTheFullDecodeMustJudge() {
        // Field 2 twice (protobuf-c keeps the last), an unknown field 8, field 2 as bytes, a
        // timeout beyond UInt32, a non-ASCII method, a truncated varint, a method with a NUL
        // (protobuf-c's C string would end there: SEED=450160070 of `agreesWithTheFullDecode`
        // found it) and one with another control byte.
        // Also a token and a key with a NUL, one of each with a byte from 0x80, and field 7 as bytes.
        for hexBytes in ["10011002", "4000", "1a03610062", "1a02c3a9", "3a0161", "12017a", "20808080801f", "0a01ff", "1080", "0a032f0061", "0a032f0a61",
                         "2a03610062", "2a0161" + "2a0161", "2a02c3a9"] {
            #expect(bytes(hex: hexBytes).withUnsafeBytes { V1.RequestHead($0) } == nil, "\(hexBytes)")
        }
        let empty = bytes(hex: "").withUnsafeBytes { V1.RequestHead($0) }
        #expect(empty?.method.isEmpty == true && empty?.payload.isEmpty == true && empty?.requestID == 0 && empty?.timeoutMs == 0)
    }

    /// `V1.layerIDRange(inPayload:)` against protobuf-c: whenever both read a (mutated) payload,
    /// they name the same layer (a NUL in the id made them differ: protobuf-c cuts there).
    @Test func layerIDRangeAgreesWithTheFullDecode() {
        let seed = testSeed("RequestHeadTests.layerIDRangeAgreesWithTheFullDecode")
        var rng = SplitMix64(seed: seed)
        var compared = 0
        for i in 0..<3_000 {
            var r = V1.GetTileRequest()
            r.layerID = ["fleet-1", "", "a", String(repeating: "x", count: 130)][i % 4]
            r.z = UInt32(rng.next() % 23)
            var wire = r.serializedBytes()
            if i % 3 == 0 {
                var second = V1.GetTileRequest()
                second.layerID = "second"
                wire += second.serializedBytes()
            }
            for _ in 0..<Int.random(in: 0...2, using: &rng) where !wire.isEmpty {
                let k = Int.random(in: 0..<wire.count, using: &rng)
                if Bool.random(using: &rng) { wire[k] = UInt8.random(in: 0...255, using: &rng) } else { wire.removeSubrange(k...) }
            }
            let range = wire.withUnsafeBytes { V1.layerIDRange(inPayload: $0) }
            guard let full = try? V1.GetTileRequest(serializedBytes: wire) else { continue }
            // Declining is safe (the access check refuses); reading another id than protobuf-c is not.
            guard let range else { continue }
            #expect(Array(wire[range]) == Array(full.layerID.utf8), "seed \(seed): \(hex(wire))")
            compared += 1
        }
        #expect(compared > 1_000, "seed \(seed): only \(compared) payloads compared")
    }
}

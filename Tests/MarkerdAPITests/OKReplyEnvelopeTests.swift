import MarkerdAPI
import MarkerdTestSupport
import Testing

/// `OKReplyEnvelope` (OK replies written straight into the reply buffer) against protobuf-c.
@Suite struct OKReplyEnvelopeTests {
    /// Seeded random request ids (0, small, 10-byte varints) and payload sizes (empty, 1 byte,
    /// around the 1- and 2-byte length varint limits, up to 300 KB): the same bytes as
    /// `serializedBytes()`, also when the payload is written in place
    /// (`write(requestID:payloadCount:into:payload:)`); error replies and OK replies with a message are left to protobuf-c.
    @Test func matchesProtobufC() throws {
        let seed = testSeed("OKReplyEnvelopeTests.matchesProtobufC")
        var rng = SplitMix64(seed: seed)
        let sizes = [0, 1, 127, 128, 16_383, 16_384, 300_000] + (0..<40).map { _ in Int(rng.next() % 70_000) }
        for size in sizes {
            var r = V1.Response()
            r.requestID = [0, 1, 300, UInt64.max, rng.next()][Int(rng.next() % 5)]
            r.payload = (0..<size).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let envelope = try #require(OKReplyEnvelope(r))
            #expect(envelope.size == envelope.bytes.count)
            let expected = r.serializedBytes()
            #expect(byteMismatch(envelope.bytes, expected) == nil, "payload \(size) B, request id \(r.requestID), seed \(seed)")
            // The same envelope around a payload written in place (inline GetClusters).
            let header = OKReplyEnvelope.headerSize(requestID: r.requestID, payloadCount: size)
            var filled = 0
            let streamed = [UInt8](unsafeUninitializedCapacity: header + size) { b, n in
                OKReplyEnvelope.write(requestID: r.requestID, payloadCount: size, into: UnsafeMutableRawBufferPointer(b)) { out in
                    filled += 1
                    #expect(out.count == size)
                    r.payload.withUnsafeBytes { out.copyMemory(from: $0) }
                }
                n = header + size
            }
            #expect(filled == (size == 0 ? 0 : 1))
            let same = streamed == expected
            #expect(same, "in place: payload \(size) B, request id \(r.requestID), seed \(seed)")
        }
        var failed = V1.Response()
        failed.code = .notFound
        failed.message = "no such layer"
        #expect(OKReplyEnvelope(failed) == nil)
        var noted = V1.Response()
        noted.message = "note"
        #expect(OKReplyEnvelope(noted) == nil)
    }
}

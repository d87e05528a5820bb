import MarkerdAPI
import MarkerdTestSupport
import Testing

/// `V1.Request.write(payloadCount:into:payload:)` (a client's envelope written straight into
/// the transport's message around a payload written in place) against protobuf-c.
@Suite struct RequestWriterTests {
    /// Seeded random envelopes (method, request id, idempotency key, timeout, auth token and
    /// min_sequence each absent or set, strings in several scripts and with a NUL byte, which protobuf-c cuts at)
    /// and payload sizes (empty, around the 1- and 2-byte length varint limits, up to 300 KB):
    /// the same bytes as `serializedBytes()`.
    @Test func matchesProtobufC() {
        let seed = testSeed("RequestWriterTests.matchesProtobufC")
        var rng = SplitMix64(seed: seed)
        let strings = ["", "/markerd.v1.MarkerService/UpsertMarkers", "0123456789abcdef0123456789abcdef", "東京 القاهرة",
                       "a\u{0}b", "\u{0}", String(repeating: "k", count: 200)]
        let sizes = [0, 1, 127, 128, 16_383, 16_384, 300_000] + (0..<40).map { _ in Int(rng.next() % 70_000) }
        for (round, size) in sizes.enumerated() {
            func string() -> String { strings[Int(rng.next() % UInt64(strings.count))] }
            var r = V1.Request()
            r.method = string()
            r.requestID = [0, 1, 300, UInt64.max, rng.next()][Int(rng.next() % 5)]
            r.idempotencyKey = string()
            r.timeoutMs = [0, 1, 60_000, UInt32.max][Int(rng.next() % 4)]
            r.authToken = string()
            r.minSequence = [0, 1, 300, UInt64.max][Int(rng.next() % 4)]
            let payload = (0..<size).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
            let n = r.serializedSize(payloadCount: size)
            var filled = 0
            let written = [UInt8](unsafeUninitializedCapacity: n) { b, count in
                r.write(payloadCount: size, into: UnsafeMutableRawBufferPointer(b)) { out in
                    filled += 1
                    #expect(out.count == size)
                    payload.withUnsafeBytes { out.copyMemory(from: $0) }
                }
                count = n
            }
            #expect(filled == (size == 0 ? 0 : 1))
            r.payload = payload
            #expect(byteMismatch(written, r.serializedBytes()) == nil, "seed \(seed) round \(round): payload \(size) B")
        }
    }
}

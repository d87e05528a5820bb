import MarkerdTestSupport
import Testing
@testable import MarkerdService

/// `MarkerWireEncoder.bytesBeforeNUL` (ids of up to 16 bytes tested as two words) against a
/// byte-by-byte search, on seeded random byte runs.
@Suite struct MarkerWireEncoderTests {
    /// Runs of 1...40 bytes at every offset of a buffer with 16 zero bytes after its last run
    /// (as `GatheredMarkers.ids`), bytes drawn mostly from {0, 1, 0x80, 0xFF} (the values the
    /// word test could confuse) and NULs at every position, or none.
    @Test func bytesBeforeNULMatchesAByteSearch() {
        let seed = testSeed("MarkerWireEncoderTests.bytesBeforeNULMatchesAByteSearch")
        var rng = SplitMix64(seed: seed)
        let tricky: [UInt8] = [0, 1, 0x7F, 0x80, 0x81, 0xFE, 0xFF]
        for _ in 0..<2_000 {
            var bytes: [UInt8] = []
            var ranges: [Range<Int>] = []
            for _ in 0..<Int(1 + rng.next() % 12) {
                let n = Int(1 + rng.next() % 40)
                let noNUL = rng.next() % 3 == 0
                let run = (0..<n).map { _ -> UInt8 in
                    let b = rng.next() % 2 == 0 ? tricky[Int(rng.next() % UInt64(tricky.count))] : UInt8(truncatingIfNeeded: rng.next())
                    return noNUL && b == 0 ? 0x30 : b
                }
                ranges.append(bytes.count..<bytes.count + n)
                bytes += run
            }
            bytes += repeatElement(0, count: 16)
            bytes.withUnsafeBufferPointer { ids in
                for r in ranges {
                    let expected = ids[r].firstIndex(of: 0).map { $0 - r.lowerBound } ?? r.count
                    #expect(MarkerWireEncoder.bytesBeforeNUL(ids, r) == expected, "seed \(seed): bytes \(Array(ids[r]))")
                }
            }
        }
    }
}

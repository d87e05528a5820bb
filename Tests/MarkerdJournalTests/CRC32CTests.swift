import MarkerdTestSupport
import Testing
@testable import MarkerdJournal

@Suite struct CRC32CTests {
    @Test func knownVectors() {
        #expect(CRC32C.checksum("123456789") == 0xE306_9283)
        #expect(CRC32C.checksum([UInt8]()) == 0)
        #expect(CRC32C.checksum([UInt8](repeating: 0, count: 32)) == 0x8A91_36AA)
        #expect(CRC32C.checksum([UInt8](repeating: 0xFF, count: 32)) == 0x62A8_AB43)
        #expect(CRC32C.checksum((0..<32).map { UInt8($0) }) == 0x46DD_794E)
        #expect(CRC32C.checksum("The quick brown fox jumps over the lazy dog") == 0x2262_0404)
    }

    @Test func matchesBitwiseOracleAndComposes() {
        var rng = SplitMix64(seed: testSeed())
        for _ in 0..<300 {
            let n = Int.random(in: 0..<200, using: &rng)
            let bytes = (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let crc = CRC32C.checksum(bytes)
            #expect(crc == CRC32C.bitwise(bytes))
            let cut = Int.random(in: 0...n, using: &rng)
            let a = Array(bytes[..<cut]), b = Array(bytes[cut...])
            #expect(b.withUnsafeBytes { CRC32C.update(CRC32C.checksum(a), $0) } == crc)
        }
    }
}

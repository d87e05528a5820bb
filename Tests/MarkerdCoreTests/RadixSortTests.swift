import MarkerdTestSupport
import Testing
@testable import MarkerdCore

@Suite struct RadixSortTests {
    /// `RadixSort.order` is the stable sort by key: small and large key ranges, few and many
    /// distinct keys, below and above the comparison-sort cutoff.
    @Test func orderIsStableSortByKey() {
        var rng = SplitMix64(seed: testSeed())
        for round in 0..<60 {
            let n = [0, 1, 5, 2047, 2048, 5000, 20000][round % 7]
            let bits = UInt64([1, 8, 23, 33, 47, 64][round % 6])
            let base = rng.next()
            let keys = (0..<n).map { _ in base &+ (bits == 64 ? rng.next() : rng.next() % (UInt64(1) << bits)) }
            let expected = (0..<n).sorted { (keys[$0], $0) < (keys[$1], $1) }.map(Int32.init)
            #expect(mismatch(RadixSort.order(keys), expected) == nil, "round \(round): n \(n), \(bits)-bit range")
        }
    }

    /// `RadixSort.sort` orders by the chosen bit range only (bits outside it ignored, ties in
    /// input order) for ranges at either end of the word and in its middle, digit widths that do
    /// and do not divide the range, and keys that share digits (skipped passes).
    @Test func sortIsStableByBitRange() {
        let seed = testSeed()
        var rng = SplitMix64(seed: seed)
        let cases: [(bits: Range<Int>, digit: Int)] = [(0..<64, 12), (32..<64, 16), (32..<64, 11), (5..<29, 11), (40..<41, 3), (20..<20, 8)]
        for round in 0..<48 {
            let (bits, digit) = cases[round % cases.count]
            let n = [0, 1, 2, 300, 4000][round % 5]
            // Few distinct field values (many ties) every other round; a shared high digit always.
            let keys = (0..<n).map { _ in round % 2 == 0 ? rng.next() % 8 << UInt64(bits.lowerBound) | rng.next() & 0xF : rng.next() & ~(UInt64(1) << 63) }
            let field = { (k: UInt64) in bits.isEmpty ? 0 : (k >> UInt64(bits.lowerBound)) & (bits.count == 64 ? .max : (1 << UInt64(bits.count)) - 1) }
            let expected = (0..<n).sorted { (field(keys[$0]), $0) < (field(keys[$1]), $1) }.map(Int32.init)
            var items = (0..<n).map { (key: keys[$0], index: Int32($0)) }
            RadixSort.sort(&items, bits: bits, maxDigitBits: digit) { $0.key }
            #expect(mismatch(items.map(\.index), expected) == nil, "seed \(seed) round \(round): bits \(bits), digits of \(digit)")
        }
    }
}

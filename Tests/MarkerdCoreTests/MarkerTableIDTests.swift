import MarkerdTestSupport
import Testing
@testable import MarkerdCore

/// `MarkerTable`'s ids (inline `IDCell`s up to 15 bytes, the arena beyond) against a dictionary
/// of the ids inserted, on seeded random sequences of inserts and removals: lookups, id reads,
/// comparisons and the arena's compaction.
@Suite struct MarkerTableIDTests {
    /// A random id: mostly around the inline limit (13...18 bytes), some short, some long (up to
    /// 256 bytes), some with NUL bytes or trailing zero bytes (which an inline cell pads with).
    static func randomID(_ rng: inout SplitMix64) -> [UInt8] {
        let n: Int
        switch rng.next() % 8 {
        case 0: n = 1 + Int(rng.next() % 4)
        case 1: n = 17 + Int(rng.next() % 240)
        default: n = 13 + Int(rng.next() % 6)
        }
        let alphabet: [UInt8] = rng.next() % 4 == 0 ? [0, 0x61] : Array(0x61...0x66)
        return (0..<n).map { _ in alphabet[Int(rng.next() % UInt64(alphabet.count))] }
    }

    @Test func idsMatchOracle() {
        let seed = testSeed("MarkerTableIDTests.idsMatchOracle")
        var rng = SplitMix64(seed: seed)
        var table = MarkerTable(seed: rng.next())
        var oracle: [[UInt8]: Int32] = [:]
        var compactions = 0
        for step in 0..<60_000 {
            // Mostly inserts, then mostly removals (garbage enough for the arena's compaction).
            if oracle.isEmpty || (rng.next() % 3 != 0) == (step < 40_000) {
                let id = Self.randomID(&rng)
                let (slot, created) = id.withUnsafeBufferPointer { table.findOrInsert(bytes: $0) }
                #expect(created == (oracle[id] == nil), "seed \(seed) step \(step)")
                if let old = oracle[id] { #expect(old == slot, "seed \(seed) step \(step)") }
                oracle[id] = slot
            } else {
                let (id, slot) = oracle.randomElement(using: &rng)!
                let arenaBefore = table.arena.count
                table.remove(slot)
                if table.arena.count < arenaBefore { compactions += 1 }
                oracle[id] = nil
            }
            if step % 5_000 == 4_999 || step < 50 {
                #expect(table.count == oracle.count)
                for (id, slot) in oracle {
                    // The alphabets are ASCII (NUL included): the String holds exactly these bytes.
                    let ok = table.find(String(decoding: id, as: UTF8.self)) == slot
                        && table.idBytes(slot) == id && table.idLength(slot) == id.count
                        && id.withUnsafeBufferPointer { table.idEquals(slot, $0) }
                        && table.ids[Int(slot)].isInline == (id.count <= IDCell.inlineCapacity)
                    #expect(ok, "seed \(seed) step \(step): id \(id) slot \(slot)")
                    if !ok { return }
                }
            }
        }
        // Every pair of a sample compares as its bytes do.
        let sample = Array(oracle.prefix(300))
        for (a, sa) in sample {
            for (b, sb) in sample.prefix(40) {
                let expected = a.lexicographicallyPrecedes(b) ? -1 : (a == b ? 0 : 1)
                #expect(table.compareIDs(sa, sb).signum() == expected, "seed \(seed): \(a) vs \(b)")
                #expect(table.compareID(sa, b).signum() == expected, "seed \(seed): \(a) vs \(b)")
                #expect(b.withUnsafeBufferPointer { table.idEquals(sa, $0) } == (a == b))
            }
        }
        #expect(compactions > 0, "seed \(seed): the arena was never compacted")
    }

    /// Ids that differ only in trailing zero bytes or in length are different ids, inline or not.
    @Test func trailingZerosAndLimits() {
        var table = MarkerTable(seed: 7)
        let ids: [[UInt8]] = [[0x61], [0x61, 0], [0x61, 0, 0], [0], [0, 0],
                              Array(repeating: 0x62, count: 14), Array(repeating: 0x62, count: 15),
                              Array(repeating: 0x62, count: 16), Array(repeating: 0x62, count: 15) + [0],
                              Array(repeating: 0, count: 15), Array(repeating: 0x63, count: 256)]
        var slots: [Int32] = []
        for id in ids {
            let (slot, created) = id.withUnsafeBufferPointer { table.findOrInsert(bytes: $0) }
            #expect(created)
            slots.append(slot)
        }
        for (id, slot) in zip(ids, slots) {
            #expect(table.idBytes(slot) == id)
            let (again, created) = id.withUnsafeBufferPointer { table.findOrInsert(bytes: $0) }
            #expect(!created && again == slot)
            #expect(table.ids[Int(slot)].isInline == (id.count <= 15))
        }
    }
}

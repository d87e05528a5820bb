import Foundation
@testable import MarkerdService
import MarkerdTestSupport
import Testing

/// `ArenaPrefaulter` (the GetClusters memo's arenas): it asks for pages ahead of use once the
/// arena holds `ahead / 2` bytes, never past the arena, and never changes the arena's bytes,
/// also while they are being written.
@Suite struct ArenaPrefaulterTests {
    @Test func asksAheadWithinTheArenaAndKeepsItsBytes() {
        let seed = testSeed("ArenaPrefaulterTests.asksAheadWithinTheArenaAndKeepsItsBytes")
        var rng = SplitMix64(seed: seed)
        let capacity = 3 * ArenaPrefaulter.ahead + 12_345
        let arena = UnsafeMutableRawBufferPointer.allocate(byteCount: capacity, alignment: 4096)
        defer { arena.deallocate() }
        final class Owner: Sendable {}
        var ahead = ArenaPrefaulter(base: arena.baseAddress, capacity: capacity)
        var used = 0, requests = 0
        while used < capacity {
            let before = ahead.requested
            let next = min(capacity, used + 1 + Int(rng.next() % 300_000))
            ahead.use(upTo: next, owner: Owner())
            if ahead.requested != before { requests += 1 }
            #expect(ahead.requested <= capacity)
            if next < ArenaPrefaulter.ahead / 2 {
                #expect(ahead.requested == 0, "a small arena is left alone (seed \(seed))")
            } else {
                #expect(ahead.requested >= min(capacity, next + ArenaPrefaulter.ahead / 2), "seed \(seed)")
            }
            // Written while earlier requests may still run: the bytes must stay as written.
            for i in used..<next { arena[i] = UInt8(truncatingIfNeeded: i &* 31 &+ 7) }
            used = next
        }
        ArenaPrefaulter.queue.sync {}
        #expect((0..<capacity).allSatisfy { arena[$0] == UInt8(truncatingIfNeeded: $0 &* 31 &+ 7) }, "seed \(seed)")
        // One request per `ahead / 2` bytes or more, not one per use.
        #expect(requests >= 2 && requests <= 7, "\(requests) requests (seed \(seed))")
        var none = ArenaPrefaulter()
        none.use(upTo: 100, owner: Owner())
        #expect(none.requested == 0)
    }
}

import Foundation
import MarkerdAPI
import MarkerdTestSupport
@testable import MarkerdService
import Synchronization
import Testing

/// The idempotency cache against a brute-force model: a list of every completed entry in the
/// order added (the newest entry of a key answers it), forgotten from the front while the
/// front one has expired or the entries count for more than the budget.
@Suite struct IdempotencyCacheTests {
    static let hour: Int64 = 3_600_000

    enum Outcome: Equatable {
        case proceed, replay([UInt8]), attached, conflict
        init(_ b: IdempotencyCache.Begin) {
            switch b {
            case .proceed: self = .proceed
            case .replay(let p): self = .replay(p)
            case .attached: self = .attached
            case .conflict: self = .conflict
            }
        }
    }

    struct Model {
        struct Entry { var key: String, digest: UInt64, at: Int64, payload: [UInt8] }
        var entries: [Entry] = []
        var pending: [String: (digest: UInt64, waiters: Int)] = [:]
        let ttl: Int64, maxBytes: Int

        static func cost(_ e: Entry) -> Int {
            Array(e.key.utf8).withUnsafeBytes { IdempotencyStore.storedKey($0).count } + e.payload.count + IdempotencyStore.overheadPerEntry
        }
        var bytes: Int { entries.reduce(0) { $0 + Self.cost($1) } }

        mutating func begin(_ key: String, _ digest: UInt64, now: Int64) -> Outcome {
            if let p = pending[key] {
                guard p.digest == digest else { return .conflict }
                pending[key]!.waiters += 1
                return .attached
            }
            if let e = entries.last(where: { $0.key == key }), now - e.at < ttl {
                return e.digest == digest ? .replay(e.payload) : .conflict
            }
            pending[key] = (digest, 0)
            return .proceed
        }

        mutating func add(_ e: Entry, now: Int64) {
            entries.append(e)
            evict(now: now)
        }

        mutating func evict(now: Int64) {
            while let first = entries.first, now - first.at >= ttl || bytes > maxBytes { entries.removeFirst() }
        }
    }

    @Test("a repeat within the TTL gets the first reply; an expired key is new; another request is a conflict")
    func ttl() {
        let clock = ManualClock(1_000 * Self.hour)
        let cache = IdempotencyCache(ttlMs: 24 * Self.hour, maxBytes: 1 << 20, clock: clock.read)
        let noWaiter: IdempotencyCache.Waiter = { _ in }
        #expect(Outcome(cache.begin(key: "k", digest: 7, waiter: noWaiter)) == .proceed)
        #expect(cache.complete(key: "k", payload: [1, 2, 3], atUnixMs: clock.now).isEmpty)
        clock.advance(24 * Self.hour - 1)
        #expect(Outcome(cache.begin(key: "k", digest: 7, waiter: noWaiter)) == .replay([1, 2, 3]))
        #expect(Outcome(cache.begin(key: "k", digest: 8, waiter: noWaiter)) == .conflict)
        clock.advance(1)
        // Expired: new for any request, and a new first reply.
        #expect(Outcome(cache.begin(key: "k", digest: 8, waiter: noWaiter)) == .proceed)
        #expect(Outcome(cache.begin(key: "k", digest: 8, waiter: noWaiter)) == .attached)
        #expect(cache.complete(key: "k", payload: [9], atUnixMs: clock.now).count == 1)
        #expect(Outcome(cache.begin(key: "k", digest: 8, waiter: noWaiter)) == .replay([9]))
        #expect(Outcome(cache.begin(key: "k", digest: 7, waiter: noWaiter)) == .conflict)
        // An entry restored already expired is not kept.
        cache.restore(key: "old", digest: 1, payload: [5], atUnixMs: clock.now - 24 * Self.hour)
        #expect(Outcome(cache.begin(key: "old", digest: 2, waiter: noWaiter)) == .proceed)
        #expect(cache.abandon(key: "old").isEmpty)
        // Expired entries are dropped as the clock passes them (at the next completion).
        clock.advance(24 * Self.hour)
        #expect(Outcome(cache.begin(key: "x", digest: 1, waiter: noWaiter)) == .proceed)
        _ = cache.complete(key: "x", payload: [], atUnixMs: clock.now)
        #expect(cache.usage.count == 1)
    }

    @Test("the byte budget forgets the oldest keys first")
    func budget() {
        let clock = ManualClock(0)
        let perEntry = 1 + 8 + 10 + IdempotencyStore.overheadPerEntry   // keys "key-0000", 10-byte payloads
        let cache = IdempotencyCache(ttlMs: Self.hour, maxBytes: 100 * perEntry, clock: clock.read)
        for i in 0..<250 {
            let key = "key-" + String(String(i).reversed()).padding(toLength: 4, withPad: "0", startingAt: 0)
            #expect(Outcome(cache.begin(key: key, digest: UInt64(i), waiter: { _ in })) == .proceed)
            _ = cache.complete(key: key, payload: [UInt8](repeating: UInt8(i), count: 10), atUnixMs: 0)
        }
        #expect(cache.usage.count == 100 && cache.usage.bytes == 100 * perEntry)
        for i in [0, 149] {
            let key = "key-" + String(String(i).reversed()).padding(toLength: 4, withPad: "0", startingAt: 0)
            #expect(Outcome(cache.begin(key: key, digest: 0, waiter: { _ in })) == .proceed, "\(i)")
        }
        for i in [150, 249] {
            let key = "key-" + String(String(i).reversed()).padding(toLength: 4, withPad: "0", startingAt: 0)
            #expect(Outcome(cache.begin(key: key, digest: UInt64(i), waiter: { _ in })) == .replay([UInt8](repeating: UInt8(i), count: 10)), "\(i)")
        }
    }

    @Test("random operations, restarts through the packed form included, agree with the model")
    func againstModel() throws {
        let seed = testSeed("IdempotencyCacheTests.againstModel")
        var rng = SplitMix64(seed: seed)
        let ttl: Int64 = 10_000, maxBytes = 12_000
        let clock = ManualClock(1_000_000)
        var cache = IdempotencyCache(ttlMs: ttl, maxBytes: maxBytes, clock: clock.read)
        var model = Model(ttl: ttl, maxBytes: maxBytes)
        let keys = (0..<600).map { i -> String in
            if i % 3 == 0 { return String(format: "%016llx%016llx", rng.next(), rng.next()) }  // kept as 16 bytes
            let length = Int(rng.next() % 40) + 1
            return "\(i)-" + String((0..<length).map { _ in Character(Unicode.Scalar(UInt8(97 + rng.next() % 26))) })
                + (i % 50 == 0 ? "é" : "")
        }
        /// One of `keys`, the same for a seed (a dictionary's order is not).
        func pick(_ keys: Dictionary<String, (digest: UInt64, waiters: Int)>.Keys) -> String? {
            keys.isEmpty ? nil : keys.sorted()[Int(rng.next() % UInt64(keys.count))]
        }
        func payload() -> [UInt8] { (0..<Int(rng.next() % 48)).map { _ in UInt8(truncatingIfNeeded: rng.next()) } }
        for step in 0..<40_000 {
            let r = rng.next() % 100
            let key = keys[Int(rng.next() % UInt64(keys.count))]
            let now = clock.now
            switch r {
            case 0..<50:
                let digest = rng.next() % 2
                let got = Outcome(cache.begin(key: key, digest: digest, waiter: { _ in }))
                let want = model.begin(key, digest, now: now)
                #expect(got == want, "step \(step) key \(key), seed \(seed)")
                if got != want { return }
            case 50..<80:
                guard let k = pick(model.pending.keys), let p = model.pending[k] else { continue }
                let e = Model.Entry(key: k, digest: p.digest, at: now - Int64(rng.next() % 50), payload: payload())
                model.pending[k] = nil
                model.add(e, now: now)
                let waiters = cache.complete(key: k, payload: e.payload, atUnixMs: e.at)
                #expect(waiters.count == p.waiters, "step \(step), seed \(seed)")
            case 80..<88:
                guard let k = pick(model.pending.keys), let p = model.pending[k] else { continue }
                model.pending[k] = nil
                #expect(cache.abandon(key: k).count == p.waiters, "step \(step), seed \(seed)")
            case 88..<93:
                // Journal replay: an entry restored as it was applied (maybe long ago).
                guard model.pending[key] == nil else { continue }
                let e = Model.Entry(key: key, digest: rng.next() % 2, at: now - Int64(rng.next() % UInt64(2 * ttl)), payload: payload())
                if now - e.at < ttl { model.add(e, now: now) }
                cache.restore(key: e.key, digest: e.digest, payload: e.payload, atUnixMs: e.at)
            case 93..<99:
                clock.advance(Int64(rng.next() % 2_000))
            case _ where step < 30_000:
                // No restarts at first: over 4,096 entries are forgotten, so the arrays compact.
                continue
            default:
                // A restart: pack in small chunks, restore into a new cache (in-flight keys are lost).
                let restarted = IdempotencyCache(ttlMs: ttl, maxBytes: maxBytes, clock: clock.read)
                var next: UInt64 = 0
                while let (bytes, after) = cache.packed(from: next, maxBytes: Int(rng.next() % 2_000)) {
                    try restarted.restore(packed: bytes[...])
                    next = after
                }
                cache = restarted
                model.pending = [:]
                model.evict(now: now)
                model.entries.removeAll { now - $0.at >= ttl }
            }
            #expect(cache.usage.bytes <= maxBytes)
        }
        #expect(cache.usage.count == model.entries.count, "seed \(seed)")
        #expect(cache.usage.bytes == model.bytes, "seed \(seed)")
    }

    @Test("keys of lowercase hex digits are stored as the bytes they spell; no two keys share a stored form")
    func storedKeys() {
        func stored(_ key: String) -> [UInt8] { Array(key.utf8).withUnsafeBytes { IdempotencyStore.storedKey($0) } }
        #expect(stored("0123abcd") == [128 + 4, 0x01, 0x23, 0xAB, 0xCD])
        #expect(stored("0123ABCD") == [8] + Array("0123ABCD".utf8))
        #expect(stored("abc") == [3] + Array("abc".utf8))
        #expect(stored("k") == [1, UInt8(ascii: "k")])
        let hex128 = String(repeating: "f0", count: 64)
        #expect(stored(hex128) == [192] + [UInt8](repeating: 0xF0, count: 64))
        let raw128 = String(repeating: "x", count: 128)
        #expect(stored(raw128) == [128] + Array(raw128.utf8))
        // Both forms answer through the cache.
        let clock = ManualClock(0)
        let cache = IdempotencyCache(ttlMs: Self.hour, maxBytes: 1 << 20, clock: clock.read)
        for (i, key) in ["0123abcd", "0123ABCD", "abc", hex128, raw128, "ab", "AB"].enumerated() {
            #expect(Outcome(cache.begin(key: key, digest: 1, waiter: { _ in })) == .proceed, "\(key)")
            _ = cache.complete(key: key, payload: [UInt8(i)], atUnixMs: 0)
        }
        for (i, key) in ["0123abcd", "0123ABCD", "abc", hex128, raw128, "ab", "AB"].enumerated() {
            #expect(Outcome(cache.begin(key: key, digest: 1, waiter: { _ in })) == .replay([UInt8(i)]), "\(key)")
        }
    }

    @Test("a snapshot section's packed keys are found in place, as protobuf-c decodes them")
    func packedSectionInPlace() {
        for packed: [UInt8] in [[], [1, 2, 3], [UInt8](repeating: 7, count: 300)] {
            var section = V1.SnapshotSection()
            section.section = .idempotencyKeys(V1.IdempotencyKeys(packed: packed))
            let bytes = section.serializedBytes()
            let range = bytes.withUnsafeBytes(V1.SnapshotSection.packedIdempotencyKeys)
            #expect(range.map { Array(bytes[$0]) } == packed)
            #expect(MarkerService.isIdempotencyKeysSection(bytes))
            // Anything else is declined: a trailing field, a cut, another section.
            #expect((bytes + [0x08, 0x01]).withUnsafeBytes(V1.SnapshotSection.packedIdempotencyKeys) == nil)
            #expect(bytes.dropLast().withUnsafeBytes(V1.SnapshotSection.packedIdempotencyKeys) == nil)
        }
        var footer = V1.SnapshotSection()
        footer.section = .footer(V1.SnapshotFooter(layers: 1, markers: 2))
        #expect(footer.serializedBytes().withUnsafeBytes(V1.SnapshotSection.packedIdempotencyKeys) == nil)
    }

    @Test("a packed keys section that is not found in place (here: with an unknown field) is decoded by protobuf-c")
    func packedSectionThroughProtobufC() throws {
        let clock = ManualClock()
        let source = IdempotencyCache(ttlMs: Self.hour, maxBytes: 1 << 20, clock: clock.read)
        _ = source.begin(key: "k", digest: 5, waiter: { _ in })
        _ = source.complete(key: "k", payload: [1, 2], atUnixMs: clock.now)
        let packed = try #require(source.packed(from: 0, maxBytes: 1 << 20)).bytes
        var keys = V1.IdempotencyKeys(packed: packed).serializedBytes()
        keys += [2 << 3, 1]   // field 2, varint 1: unknown to markerd
        let section = [7 << 3 | 2, UInt8(keys.count)] + keys
        #expect(section.withUnsafeBytes(V1.SnapshotSection.packedIdempotencyKeys) == nil)
        let s = MarkerService()
        try s.prepareSnapshotSection(section)()
        #expect(Outcome(s.idempotency.begin(key: "k", digest: 5, waiter: { _ in })) == .replay([1, 2]))
    }

    @Test("a damaged packed chunk is refused whole")
    func damagedChunk() throws {
        let clock = ManualClock(0)
        let cache = IdempotencyCache(ttlMs: Self.hour, maxBytes: 1 << 20, clock: clock.read)
        for i in 0..<3 {
            _ = cache.begin(key: "k\(i)", digest: 1, waiter: { _ in })
            _ = cache.complete(key: "k\(i)", payload: [UInt8(i)], atUnixMs: 0)
        }
        let packed = try #require(cache.packed(from: 0, maxBytes: 1 << 20)).bytes
        // Per entry: digest (8), time delta (1), length (1), key tag (1), "kN" (2), payload (1).
        #expect(packed.count == 3 * 14)
        let other = IdempotencyCache(ttlMs: Self.hour, maxBytes: 1 << 20, clock: clock.read)
        #expect(throws: IdempotencyStore.DamagedChunk.self) { try other.restore(packed: packed.dropLast()) }
        var emptyKey = packed
        emptyKey[10] = 0
        #expect(throws: IdempotencyStore.DamagedChunk.self) { try other.restore(packed: emptyKey[...]) }
        #expect(other.usage.count == 0)
        try other.restore(packed: packed[...])
        #expect(Outcome(other.begin(key: "k2", digest: 1, waiter: { _ in })) == .replay([2]))
    }
}

/// The completed entries of `IdempotencyCache`, packed: a key costs its bytes, its reply
/// payload's bytes and `overheadPerEntry` (33) more, in three arrays and no object per entry.
///
/// - `records`: one 24-byte `Record` per entry (request digest, time, where its bytes are), in
///   the order the entries were added, oldest first; the live ones are `records[head...]`.
/// - `arena`: each entry's bytes back to back in the same order: the key's length (1 byte, 1-255),
///   the key (UTF-8), the reply payload (the rest).
/// - `slots`: an open-addressing index (linear probing, at most half full) from a key to its
///   newest entry, holding entry numbers (32 bits of them); keys are hashed with the standard
///   library's `Hasher` (SipHash, seeded per process), so that clients cannot pick colliding keys.
///
/// Entries are numbered in the order they were added; removing the oldest entry advances
/// `firstNumber`. An entry added for a key that already has one (a key reused after it expired,
/// or restored twice: from the snapshot and again from the journal after it) takes over the
/// index slot; the older entry stays unindexed until it is the oldest and is removed.
struct IdempotencyStore {
    struct Record {
        var digest: UInt64
        var atUnixMs: Int64
        /// The entry's bytes: `arena[start ..< start + length]`.
        var start: UInt32
        var length: UInt32
    }

    /// What an entry is counted for besides its key and payload: its record (24 bytes), its
    /// length byte (1) and two index slots (8: the index is at most half full).
    static let overheadPerEntry = 33
    /// The longest key kept (its length is one byte).
    static let maxKeyBytes = 255
    /// Bytes of one entry in `packed` besides its arena bytes: digest (8), time (8), length (4).
    static let packedHeaderBytes = 20

    private var records: [Record] = []
    private var head = 0
    /// The number of `records[head]`.
    private(set) var firstNumber: UInt64 = 0
    private var arena: [UInt8] = []
    private var slots: [UInt32] = []
    private var indexed = 0
    private static let empty = UInt32.max
    /// The sum of every live entry's `length + overheadPerEntry`.
    private(set) var bytes = 0

    var count: Int { records.count - head }

    /// The oldest entry's time, nil when empty.
    var oldestAtUnixMs: Int64? { head < records.count ? records[head].atUnixMs : nil }

    /// The newest entry for `key`: its digest, time and reply payload.
    func find(_ key: UnsafeRawBufferPointer) -> (digest: UInt64, atUnixMs: Int64, payload: [UInt8])? {
        guard let (_, p) = slot(of: key) else { return nil }
        let r = records[p]
        let from = Int(r.start) + 1 + key.count, to = Int(r.start + r.length)
        return (r.digest, r.atUnixMs, Array(arena[from..<to]))
    }

    /// Adds an entry (the newest). Keys are 1-255 bytes (`maxKeyBytes`); the caller checks.
    mutating func append(key: UnsafeRawBufferPointer, digest: UInt64, atUnixMs: Int64, payload: UnsafeRawBufferPointer) {
        precondition((1...Self.maxKeyBytes).contains(key.count), "idempotency key of \(key.count) bytes")
        let length = 1 + key.count + payload.count
        records.append(Record(digest: digest, atUnixMs: atUnixMs, start: UInt32(arena.count), length: UInt32(length)))
        arena.append(UInt8(key.count))
        arena.append(contentsOf: key)
        arena.append(contentsOf: payload)
        bytes += length + Self.overheadPerEntry
        let number = UInt32(truncatingIfNeeded: firstNumber &+ UInt64(count - 1))
        if (indexed + 1) * 2 > slots.count { grow() }
        if let (i, _) = slot(of: key) {
            slots[i] = number
        } else {
            insert(number, hash: Self.hash(key))
            indexed += 1
        }
    }

    /// Removes the oldest entry (and its index slot, if it is its key's newest).
    mutating func removeOldest() {
        let r = records[head]
        if let (i, p) = withKey(of: head, { slot(of: $0) }), p == head { unindex(i) }
        bytes -= Int(r.length) + Self.overheadPerEntry
        head += 1
        firstNumber += 1
        if head == records.count {
            records.removeAll(keepingCapacity: true)
            arena.removeAll(keepingCapacity: true)
            head = 0
        } else if head >= 4096 && head * 2 >= records.count {
            compact()
        }
    }

    /// Moves the live records and bytes to the front of their arrays (amortized O(1) per removal).
    private mutating func compact() {
        let dead = Int(records[head].start)
        arena.removeFirst(dead)
        records.removeFirst(head)
        head = 0
        let shift = UInt32(dead)
        for i in records.indices { records[i].start -= shift }
    }

    // MARK: Packed form (snapshots)

    /// The entries numbered `from` onwards (from the oldest, if that one is gone), packed until
    /// the packed bytes reach `maxBytes` (at least one entry): per entry, little-endian, the
    /// request digest (8 bytes), the time (Unix ms, 8), the length `n` of its bytes (4), then its
    /// `n` bytes as in the arena (key length, key, payload). Returns the bytes and the number
    /// to continue from; nil when there is nothing from `from` on.
    func packed(from: UInt64, maxBytes: Int) -> (bytes: [UInt8], next: UInt64)? {
        var p = head + Int(from > firstNumber ? from - firstNumber : 0)
        guard p < records.count else { return nil }
        var out: [UInt8] = []
        while p < records.count && (out.isEmpty || out.count < maxBytes) {
            let r = records[p]
            withUnsafeBytes(of: r.digest.littleEndian) { out.append(contentsOf: $0) }
            withUnsafeBytes(of: r.atUnixMs.littleEndian) { out.append(contentsOf: $0) }
            withUnsafeBytes(of: r.length.littleEndian) { out.append(contentsOf: $0) }
            out.append(contentsOf: arena[Int(r.start)..<Int(r.start + r.length)])
            p += 1
        }
        return (out, firstNumber + UInt64(p - head))
    }

    /// A `packed` chunk that does not parse: lengths that overrun it, or an empty key.
    struct DamagedChunk: Error, CustomStringConvertible {
        var offset: Int
        var description: String { "idempotency keys section damaged at byte \(offset)" }
    }

    /// Adds the entries of a `packed` chunk for which `keep(atUnixMs)` is true, in order.
    /// - Throws: `DamagedChunk` (adding nothing) if the chunk does not parse.
    mutating func append(packed bytes: [UInt8], keep: (Int64) -> Bool) throws(DamagedChunk) {
        // Checked whole before anything is added.
        let damageAt: Int? = bytes.withUnsafeBytes { raw in
            var o = 0
            while o < raw.count {
                guard raw.count - o > Self.packedHeaderBytes else { return o }
                let n = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: o + 16, as: UInt32.self)))
                let body = o + Self.packedHeaderBytes
                guard n >= 2, n <= raw.count - body, raw[body] >= 1, Int(raw[body]) < n else { return o }
                o = body + n
            }
            return nil
        }
        if let damageAt { throw DamagedChunk(offset: damageAt) }
        bytes.withUnsafeBytes { raw in
            var o = 0
            while o < raw.count {
                let digest = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: o, as: UInt64.self))
                let at = Int64(littleEndian: raw.loadUnaligned(fromByteOffset: o + 8, as: Int64.self))
                let n = Int(UInt32(littleEndian: raw.loadUnaligned(fromByteOffset: o + 16, as: UInt32.self)))
                let body = o + Self.packedHeaderBytes
                if keep(at) {
                    let k = Int(raw[body])
                    append(key: UnsafeRawBufferPointer(rebasing: raw[body + 1 ..< body + 1 + k]), digest: digest, atUnixMs: at,
                           payload: UnsafeRawBufferPointer(rebasing: raw[body + 1 + k ..< body + n]))
                }
                o = body + n
            }
        }
    }

    // MARK: Index

    private static func hash(_ key: UnsafeRawBufferPointer) -> Int {
        var h = Hasher()
        h.combine(bytes: key)
        return h.finalize()
    }

    /// The position in `records` of entry `number`.
    @inline(__always) private func position(_ number: UInt32) -> Int {
        head + Int(number &- UInt32(truncatingIfNeeded: firstNumber))
    }

    private func withKey<T>(of p: Int, _ body: (UnsafeRawBufferPointer) -> T) -> T {
        let start = Int(records[p].start)
        return arena.withUnsafeBytes { a in
            body(UnsafeRawBufferPointer(rebasing: a[start + 1 ..< start + 1 + Int(a[start])]))
        }
    }

    /// The index slot of `key` and its entry's position in `records`.
    private func slot(of key: UnsafeRawBufferPointer) -> (slot: Int, position: Int)? {
        guard !slots.isEmpty else { return nil }
        let mask = slots.count - 1
        var i = Self.hash(key) & mask
        while slots[i] != Self.empty {
            let p = position(slots[i])
            if withKey(of: p, { $0.elementsEqual(key) }) { return (i, p) }
            i = (i + 1) & mask
        }
        return nil
    }

    private mutating func insert(_ number: UInt32, hash: Int) {
        let mask = slots.count - 1
        var i = hash & mask
        while slots[i] != Self.empty { i = (i + 1) & mask }
        slots[i] = number
    }

    private mutating func grow() {
        let old = slots
        slots = [UInt32](repeating: Self.empty, count: max(64, old.count * 2))
        for n in old where n != Self.empty {
            insert(n, hash: withKey(of: position(n), Self.hash))
        }
    }

    /// Empties slot `i`, moving later slots of its probe run back so that every key stays
    /// reachable from its home slot (deletion without tombstones).
    private mutating func unindex(_ i: Int) {
        let mask = slots.count - 1
        var hole = i
        var j = (i + 1) & mask
        while slots[j] != Self.empty {
            let home = withKey(of: position(slots[j]), Self.hash) & mask
            // slots[j] may move to the hole unless its home lies cyclically in (hole, j].
            if (j - home) & mask >= (j - hole) & mask {
                slots[hole] = slots[j]
                hole = j
            }
            j = (j + 1) & mask
        }
        slots[hole] = Self.empty
        indexed -= 1
    }
}

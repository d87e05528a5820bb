import MarkerdAPI
/// The completed entries of `IdempotencyCache`, packed: an entry costs its stored key, its reply
/// payload and `overheadPerEntry` (40) bytes, in three arrays and no object per entry.
///
/// - `records`: one 24-byte `Record` per entry (request digest, time, where its bytes are), in
///   the order the entries were added, oldest first; the live ones are `records[head...]`.
/// - `arena`: each entry's bytes back to back in the same order: its stored key (`storedKey`:
///   a tag byte, then the key, or for a key of lowercase hex digits the bytes they spell, half
///   the size: markerd's clients make keys of 32 hex digits), then the reply payload (the rest).
/// - `slots`: an open-addressing index (linear probing, at most half full) from a key to its
///   newest entry: per slot, 32 bits of the key's hash (`Hasher`, SipHash seeded per process, so
///   that clients cannot pick colliding keys) and 32 bits of the entry's number. Probing and
///   growing read only the slots; a key's bytes are compared when the hash bits match.
///
/// Entries are numbered in the order they were added; removing the oldest entry advances
/// `firstNumber`. An entry added for a key that already has one (a key reused after it expired,
/// or restored twice: from the snapshot and again from the journal after it) takes over the
/// index slot; the older entry stays unindexed until it is the oldest and is removed.
///
/// New entries are only copied in: the index takes them on, oldest first, at the next look-up
/// (`indexPending`), so that recovery (snapshot sections, journal records) does not wait for it.
struct IdempotencyStore {
    struct Record {
        var digest: UInt64
        var atUnixMs: Int64
        /// The entry's bytes: `arena[start ..< start + length]`.
        var start: UInt32
        var length: UInt32
    }

    /// What an entry is counted for besides its stored key (`storedKey`) and payload: its
    /// record (24 bytes) and two index slots (16: the index is at most half full).
    static let overheadPerEntry = 40
    /// The longest key kept, bytes.
    static let maxKeyBytes = 128

    private var records: [Record] = []
    private var head = 0
    /// The number of `records[head]`.
    private(set) var firstNumber: UInt64 = 0
    private var arena: [UInt8] = []
    /// `tag << 32 | number`, 0 when empty (`tag` has its lowest bit set).
    private var slots: [UInt64] = []
    private var indexed = 0
    /// Entries numbered below this (and from `firstNumber`) are in the index.
    private var indexedUntil: UInt64 = 0
    /// The sum of every live entry's `length + overheadPerEntry`.
    private(set) var bytes = 0

    var count: Int { records.count - head }

    /// The oldest entry's time, nil when empty.
    var oldestAtUnixMs: Int64? { head < records.count ? records[head].atUnixMs : nil }

    /// The newest entry for `key`: its digest, time and reply payload.
    mutating func find(_ key: UnsafeRawBufferPointer) -> (digest: UInt64, atUnixMs: Int64, payload: [UInt8])? {
        indexPending()
        let stored = Self.storedKey(key)
        guard let (_, p) = stored.withUnsafeBytes({ slot(of: $0, tag: Self.tag($0)) }) else { return nil }
        let r = records[p]
        return (r.digest, r.atUnixMs, Array(arena[Int(r.start) + stored.count ..< Int(r.start + r.length)]))
    }

    /// Adds an entry (the newest; indexed at the next look-up). Keys are 1-128 bytes
    /// (`maxKeyBytes`); the caller checks.
    mutating func append(key: UnsafeRawBufferPointer, digest: UInt64, atUnixMs: Int64, payload: UnsafeRawBufferPointer) {
        precondition((1...Self.maxKeyBytes).contains(key.count), "idempotency key of \(key.count) bytes")
        let start = arena.count
        Self.appendStoredKey(key, to: &arena)
        arena.append(contentsOf: payload)
        addRecord(digest: digest, atUnixMs: atUnixMs, start: start)
    }

    private mutating func addRecord(digest: UInt64, atUnixMs: Int64, start: Int) {
        let length = arena.count - start
        records.append(Record(digest: digest, atUnixMs: atUnixMs, start: UInt32(start), length: UInt32(length)))
        bytes += length + Self.overheadPerEntry
    }

    /// Indexes the entries added since the last call. Their slots are filled in the order of
    /// their home slots (a counting sort, stable, so a key's newer entry still comes after its
    /// older one and takes the slot over): a bulk of them, a restored snapshot's, then fills
    /// the index front to back instead of at random places (a cache miss each).
    mutating func indexPending() {
        let end = firstNumber + UInt64(count)
        guard indexedUntil < end else { return }
        indexedUntil = max(indexedUntil, firstNumber)
        let n = Int(end - indexedUntil)
        if (indexed + n) * 2 > slots.count { grow(toFit: indexed + n) }
        var pending: [UInt64] = []
        pending.reserveCapacity(n)
        for number in indexedUntil..<end {
            let tag = withKey(of: head + Int(number - firstNumber), Self.tag)
            pending.append(UInt64(tag) << 32 | UInt64(UInt32(truncatingIfNeeded: number)))
        }
        indexedUntil = end
        for s in sortedByHome(pending) {
            let tag = UInt32(truncatingIfNeeded: s >> 32)
            if let existing = withKey(of: position(s), { slot(of: $0, tag: tag)?.slot }) {
                slots[existing] = s
            } else {
                insert(s)
                indexed += 1
            }
        }
    }

    /// `slots` ordered by the top bits of their home slot (about one bucket per slot, at most
    /// 4,096), stably.
    private func sortedByHome(_ slots: [UInt64]) -> [UInt64] {
        guard slots.count > 1 else { return slots }
        let mask = self.slots.count - 1
        let levels = self.slots.count.trailingZeroBitCount
        let bits = min(12, levels, Int.bitWidth - 1 - slots.count.leadingZeroBitCount)
        var starts = [Int](repeating: 0, count: (1 << bits) + 1)
        for s in slots { starts[home(s, mask: mask) >> (levels - bits) + 1] += 1 }
        for b in 1..<starts.count { starts[b] += starts[b - 1] }
        var out = [UInt64](repeating: 0, count: slots.count)
        for s in slots {
            let b = home(s, mask: mask) >> (levels - bits)
            out[starts[b]] = s
            starts[b] += 1
        }
        return out
    }

    /// Removes the oldest entry (and its index slot, if it is its key's newest).
    mutating func removeOldest() {
        let r = records[head]
        if firstNumber < indexedUntil, let (i, p) = withKey(of: head, { slot(of: $0, tag: Self.tag($0)) }), p == head {
            unindex(i)
        }
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

    // MARK: Stored keys

    /// A key as the arena keeps it: a key of 2-128 lowercase hex digits, an even number of them,
    /// as tag `128 + n` and the `n` bytes they spell; any other key as tag `n` (its length,
    /// 1-128) and its bytes. One key has one stored form, and two keys never share one.
    static func storedKey(_ key: UnsafeRawBufferPointer) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(1 + key.count)
        appendStoredKey(key, to: &out)
        return out
    }

    static func appendStoredKey(_ key: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        @inline(__always) func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): c - UInt8(ascii: "a") + 10
            default: nil
            }
        }
        if key.count % 2 == 0, key.allSatisfy({ nibble($0) != nil }) {
            out.append(UInt8(128 + key.count / 2))
            var i = 0
            while i < key.count {
                out.append(nibble(key[i])! << 4 | nibble(key[i + 1])!)
                i += 2
            }
        } else {
            out.append(UInt8(key.count))
            out.append(contentsOf: key)
        }
    }

    /// The length of the stored key that starts with tag byte `tag` (tag included).
    @inline(__always) static func storedKeyLength(tag: UInt8) -> Int {
        1 + Int(tag > 128 ? tag - 128 : tag)
    }

    // MARK: Packed form (snapshots)

    /// The entries numbered `from` onwards (from the oldest, if that one is gone), packed until
    /// the packed bytes reach `maxBytes` (at least one entry). Per entry: the request digest
    /// (8 bytes, little-endian), the time minus the previous entry's (0 for the first) as a
    /// zigzag varint (Unix ms), the length `n` of its bytes as a varint, then its `n` bytes as
    /// in the arena (stored key, payload). Returns the bytes and the number to continue from;
    /// nil when there is nothing from `from` on.
    func packed(from: UInt64, maxBytes: Int) -> (bytes: [UInt8], next: UInt64)? {
        var p = head + Int(from > firstNumber ? from - firstNumber : 0)
        guard p < records.count else { return nil }
        var out: [UInt8] = []
        var previousAt: Int64 = 0
        while p < records.count && (out.isEmpty || out.count < maxBytes) {
            let r = records[p]
            withUnsafeBytes(of: r.digest.littleEndian) { out.append(contentsOf: $0) }
            let delta = r.atUnixMs &- previousAt
            ProtoWriter.appendVarint(UInt64(bitPattern: (delta << 1) ^ (delta >> 63)), to: &out)
            previousAt = r.atUnixMs
            ProtoWriter.appendVarint(UInt64(r.length), to: &out)
            out.append(contentsOf: arena[Int(r.start)..<Int(r.start + r.length)])
            p += 1
        }
        return (out, firstNumber + UInt64(p - head))
    }

    /// A `packed` chunk that does not parse: lengths that overrun it, a bad stored key.
    struct DamagedChunk: Error, CustomStringConvertible {
        var offset: Int
        var description: String { "idempotency keys section damaged at byte \(offset)" }
    }

    /// Copies in the entries of a `packed` chunk for which `keep(atUnixMs)` is true, in order
    /// (indexed later: `indexPending`).
    /// - Throws: `DamagedChunk` (adding nothing) if the chunk does not parse.
    mutating func append(packed bytes: ArraySlice<UInt8>, keep: (Int64) -> Bool) throws(DamagedChunk) {
        // Checked whole before anything is added.
        let damageAt: Int? = bytes.withUnsafeBytes { raw in
            var o = 0
            while o < raw.count {
                let entry = o
                o += 8
                guard o <= raw.count, Self.readVarint(raw, &o) != nil, let n = Self.readVarint(raw, &o),
                      n >= 2, n <= UInt64(raw.count - o), raw[o] != 0, raw[o] <= 192,
                      Self.storedKeyLength(tag: raw[o]) <= Int(n) else { return entry }
                o += Int(n)
            }
            return nil
        }
        if let damageAt { throw DamagedChunk(offset: damageAt) }
        bytes.withUnsafeBytes { raw in
            var o = 0
            var at: Int64 = 0
            while o < raw.count {
                let digest = UInt64(littleEndian: raw.loadUnaligned(fromByteOffset: o, as: UInt64.self))
                o += 8
                let z = Self.readVarint(raw, &o)!
                at &+= Int64(bitPattern: z >> 1) ^ -Int64(bitPattern: z & 1)
                let n = Int(Self.readVarint(raw, &o)!)
                if keep(at) {
                    let start = arena.count
                    arena.append(contentsOf: UnsafeRawBufferPointer(rebasing: raw[o ..< o + n]))
                    addRecord(digest: digest, atUnixMs: at, start: start)
                }
                o += n
            }
        }
    }

    /// The varint at `o` (advancing `o` past it); nil if it runs past the end or over 10 bytes.
    static func readVarint(_ raw: UnsafeRawBufferPointer, _ o: inout Int) -> UInt64? {
        var v: UInt64 = 0
        var shift: UInt64 = 0
        while o < raw.count && shift < 70 {
            let b = raw[o]
            o += 1
            v |= UInt64(b & 0x7F) << shift
            if b < 0x80 { return v }
            shift += 7
        }
        return nil
    }

    // MARK: Index

    /// 32 bits of the stored key's hash, lowest bit set (so that no slot in use is 0).
    private static func tag(_ stored: UnsafeRawBufferPointer) -> UInt32 {
        var h = Hasher()
        h.combine(bytes: stored)
        return UInt32(truncatingIfNeeded: UInt64(UInt(bitPattern: h.finalize())) >> 32) | 1
    }

    @inline(__always) private func home(_ slot: UInt64, mask: Int) -> Int {
        Int(truncatingIfNeeded: slot >> 33) & mask
    }

    /// The position in `records` of the entry in `slot`.
    @inline(__always) private func position(_ slot: UInt64) -> Int {
        head + Int(UInt32(truncatingIfNeeded: slot) &- UInt32(truncatingIfNeeded: firstNumber))
    }

    /// Calls `body` with the stored key of `records[p]`.
    private func withKey<T>(of p: Int, _ body: (UnsafeRawBufferPointer) -> T) -> T {
        let start = Int(records[p].start)
        return arena.withUnsafeBytes { a in
            body(UnsafeRawBufferPointer(rebasing: a[start ..< start + Self.storedKeyLength(tag: a[start])]))
        }
    }

    /// The index slot of the stored key `stored` (whose tag is `tag`) and its entry's position.
    private func slot(of stored: UnsafeRawBufferPointer, tag: UInt32) -> (slot: Int, position: Int)? {
        guard !slots.isEmpty else { return nil }
        let mask = slots.count - 1
        var i = Int(tag >> 1) & mask
        while slots[i] != 0 {
            if UInt32(truncatingIfNeeded: slots[i] >> 32) == tag {
                let p = position(slots[i])
                if withKey(of: p, { $0.elementsEqual(stored) }) { return (i, p) }
            }
            i = (i + 1) & mask
        }
        return nil
    }

    private mutating func insert(_ slot: UInt64) {
        let mask = slots.count - 1
        var i = home(slot, mask: mask)
        while slots[i] != 0 { i = (i + 1) & mask }
        slots[i] = slot
    }

    /// Doubles the index until `entries` keys fill at most half of it.
    private mutating func grow(toFit entries: Int) {
        var size = max(64, slots.count)
        while entries * 2 > size { size *= 2 }
        let old = slots
        slots = [UInt64](repeating: 0, count: size)
        for s in old where s != 0 { insert(s) }
    }

    /// Empties slot `i`, moving later slots of its probe run back so that every key stays
    /// reachable from its home slot (deletion without tombstones).
    private mutating func unindex(_ i: Int) {
        let mask = slots.count - 1
        var hole = i
        var j = (i + 1) & mask
        while slots[j] != 0 {
            // slots[j] may move to the hole unless its home lies cyclically in (hole, j].
            if (j - home(slots[j], mask: mask)) & mask >= (j - hole) & mask {
                slots[hole] = slots[j]
                hole = j
            }
            j = (j + 1) & mask
        }
        slots[hole] = 0
        indexed -= 1
    }
}

/// Struct-of-arrays marker storage with an id -> slot hash index and slot reuse.
///
/// Ids of up to 15 bytes live in the `ids` column itself, longer ones in one byte arena
/// (`IDCell`: a short id read costs one cache line of the table, not two); the id index is an
/// open-addressing table (linear probing, backward-shift deletion) keyed by a seeded 32-bit
/// hash that is also kept per slot. Each bucket holds a slot in its low 27 bits and 5 more bits
/// of the hash (`Bucket`), so probing past other ids rarely reads their `idHash` (a cache miss
/// each at millions of markers); a table holds at most `maxSlots` slots. Removed ids leave garbage in the arena, which
/// is compacted when it exceeds half of the arena (amortized O(1) per removal).
///
/// Fixed cost per marker: ids 16 + idHash 4 + x 4 + y 4 + zIndex 4 + flags 1 + style 4
/// = 37 bytes, plus the id index (4 bytes / load factor 0.375...0.75, about 6.7 bytes at 10M)
/// and, for an id of more than 15 bytes, its UTF-8 bytes in the arena (an id of up to 15
/// bytes costs nothing more: about what the 8-byte arena reference and the arena's bytes of
/// such an id cost before). The grid adds its own (see `GridIndex`).
struct MarkerTable: Sendable {
    static let maxIDBytes = 256
    /// Most slots a table holds (2^27 - 1, about 134 million markers per layer).
    static let maxSlots = Int(Bucket.slotMask)

    /// An id index bucket: `tag << 27 | slot`, the tag being the low 5 bits of the id's hash;
    /// `empty` (all ones: slot 2^27 - 1 is never used) marks a free bucket.
    enum Bucket {
        static let empty = UInt32.max
        static let slotMask: UInt32 = 1 << 27 - 1
        @inline(__always) static func make(_ slot: Int32, hash h: UInt32) -> UInt32 { h << 27 | UInt32(slot) }
        @inline(__always) static func slot(_ b: UInt32) -> Int32 { Int32(b & slotMask) }
        /// Whether bucket `b` may hold an id of hash `h` (its tag matches).
        @inline(__always) static func mayHold(_ b: UInt32, hash h: UInt32) -> Bool { (b ^ h << 27) <= slotMask }
    }

    var arena: [UInt8] = []
    var garbageBytes = 0
    var ids: [IDCell] = []       // free slots: next free slot in `lo` (or UInt64.max)
    var idHash: [UInt32] = []
    var x: [UInt32] = []
    var y: [UInt32] = []
    var zIndex: [Int32] = []
    var flags: [UInt8] = []      // 0 = free slot
    var style: [UInt32] = []
    // Internal (not private): MarkerTable+BulkIndex.swift builds the index in one pass.
    var freeHead: Int32 = -1
    var buckets: [UInt32] = Array(repeating: Bucket.empty, count: 16)
    var bucketShift: UInt32 = 28   // 32 - log2(buckets.count)
    var count = 0
    /// The seed of `hash(_:)`, fixed for the table's life (`removeAll` keeps it).
    let seed: UInt64

    init(seed: UInt64 = UInt64.random(in: 0...UInt64.max)) { self.seed = seed | 1 }

    var slotCount: Int { flags.count }

    // MARK: Ids

    @inline(__always) func hash(_ bytes: UnsafeBufferPointer<UInt8>) -> UInt32 { MarkerTable.hash(bytes, seed: seed) }

    /// A seeded 32-bit hash of id bytes (every bit of the input reaches every bit of the hash).
    @inline(__always) static func hash(_ bytes: UnsafeBufferPointer<UInt8>, seed: UInt64) -> UInt32 {
        var h: UInt64 = seed ^ 0xCBF2_9CE4_8422_2325
        var i = 0
        let n = bytes.count
        let base = bytes.baseAddress
        while i + 8 <= n {
            let w = UnsafeRawPointer(base! + i).loadUnaligned(as: UInt64.self)
            h = (h ^ w) &* 0x9E37_79B9_7F4A_7C15
            h ^= h >> 29
            i += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while i < n { tail |= UInt64(base![i]) << shift; shift += 8; i += 1 }
        h = (h ^ tail ^ UInt64(n)) &* 0xBF58_476D_1CE4_E5B9
        h ^= h >> 31
        h = h &* 0x94D0_49BB_1331_11EB
        h ^= h >> 32
        return UInt32(truncatingIfNeeded: h)
    }

    @inline(__always) func idLength(_ slot: Int32) -> Int { ids[Int(slot)].length }

    func idEquals(_ slot: Int32, _ bytes: UnsafeBufferPointer<UInt8>) -> Bool {
        let cell = ids[Int(slot)]
        if cell.isInline { return bytes.count <= IDCell.inlineCapacity && cell == IDCell(inline: bytes) }
        let n = cell.length
        guard n == bytes.count else { return false }
        let off = cell.arenaOffset
        return arena.withUnsafeBufferPointer { a in
            var i = 0
            while i + 8 <= n {
                if UnsafeRawPointer(a.baseAddress! + off + i).loadUnaligned(as: UInt64.self)
                    != UnsafeRawPointer(bytes.baseAddress! + i).loadUnaligned(as: UInt64.self) { return false }
                i += 8
            }
            while i < n { if a[off + i] != bytes[i] { return false }; i += 1 }
            return true
        }
    }

    func id(_ slot: Int32) -> String { withIDBytes(slot) { String(decoding: $0, as: UTF8.self) } }

    func idBytes(_ slot: Int32) -> [UInt8] { withIDBytes(slot) { Array($0) } }

    /// Byte-wise comparison of two ids: <0, 0, >0.
    func compareIDs(_ a: Int32, _ b: Int32) -> Int {
        withIDBytes(a) { pa in withIDBytes(b) { pb in MarkerTable.compareBytes(pa, pb) } }
    }

    /// Byte-wise comparison of a stored id with bytes: <0, 0, >0.
    func compareID(_ a: Int32, _ bytes: [UInt8]) -> Int {
        withIDBytes(a) { pa in bytes.withUnsafeBufferPointer { MarkerTable.compareBytes(pa, $0) } }
    }

    /// The slot of an id, or nil.
    func find(_ id: String) -> Int32? {
        var id = id
        return id.withUTF8 { find(bytes: $0, hash: hash($0)) }
    }

    func find(bytes: UnsafeBufferPointer<UInt8>, hash h: UInt32) -> Int32? {
        let mask = buckets.count - 1
        var i = Int(h >> bucketShift)
        // The cell an inline id of these bytes would have (`.zero`, which no inline cell
        // equals, for an id too long to be inline).
        let inline = bytes.count > 0 && bytes.count <= IDCell.inlineCapacity ? IDCell(inline: bytes) : .zero
        while true {
            let b = buckets[i]
            if b == Bucket.empty { return nil }
            if Bucket.mayHold(b, hash: h) {
                let s = Bucket.slot(b)
                // An inline id is compared in its cell at once (no read of `idHash`, another
                // cache miss); an arena id only when its whole hash matches too.
                let cell = ids[Int(s)]
                if cell.isInline ? cell == inline : idHash[Int(s)] == h && idEquals(s, bytes) { return s }
            }
            i = (i + 1) & mask
        }
    }

    /// Finds an id or creates a slot for it (flags set to `occupied`, other columns zero).
    /// Returns the slot and whether it was created. The id must be 1...256 bytes.
    mutating func findOrInsert(_ id: String) -> (slot: Int32, created: Bool) {
        var id = id
        return id.withUTF8 { findOrInsert(bytes: $0) }
    }

    /// `findOrInsert(_:)` for an id given as its UTF-8 bytes (1...256).
    mutating func findOrInsert(bytes: UnsafeBufferPointer<UInt8>) -> (slot: Int32, created: Bool) {
        findOrInsert(bytes: bytes, hash: hash(bytes))
    }

    /// `findOrInsert(bytes:)` with the id's `hash(_:)` already computed (see `touchHomes`).
    mutating func findOrInsert(bytes: UnsafeBufferPointer<UInt8>, hash h: UInt32) -> (slot: Int32, created: Bool) {
        if let s = find(bytes: bytes, hash: h) { return (s, false) }
        let slot = allocateSlot()
        ids[Int(slot)] = storeID(bytes)
        idHash[Int(slot)] = h
        count += 1
        if count * 4 > buckets.count * 3 { growBuckets() }
        insertBucket(slot, hash: h)
        return (slot, true)
    }

    mutating func allocateSlot() -> Int32 {
        if freeHead >= 0 {
            let s = freeHead
            let next = ids[Int(s)].lo
            freeHead = next == .max ? -1 : Int32(next)
            flags[Int(s)] = MarkerFlags.occupied
            x[Int(s)] = 0; y[Int(s)] = 0; zIndex[Int(s)] = 0; style[Int(s)] = 0
            return s
        }
        precondition(flags.count < MarkerTable.maxSlots, "marker table full (\(MarkerTable.maxSlots) markers)")
        let s = Int32(flags.count)
        ids.append(.zero); idHash.append(0); x.append(0); y.append(0); zIndex.append(0)
        flags.append(MarkerFlags.occupied); style.append(0)
        return s
    }

    /// Reads the home bucket of each of `hashes` (ids' `hash(_:)`), in a loop whose loads do not
    /// depend on each other, so that their cache misses overlap (some ten at a time) and the
    /// lookups of those ids that follow (`findOrInsert(bytes:hash:)`) find them in the cache:
    /// at millions of ids each home is a miss to main memory, which one lookup after another
    /// would wait for in turn. Changes nothing (`CacheTouch`).
    func touchHomes(_ hashes: UnsafeBufferPointer<UInt32>) {
        var sum: UInt32 = 0
        buckets.withUnsafeBufferPointer { b in
            for h in hashes { sum &+= b[Int(h >> bucketShift)] }
        }
        CacheTouch.keep(sum)
    }

    mutating func insertBucket(_ slot: Int32, hash h: UInt32) {
        let mask = buckets.count - 1
        var i = Int(h >> bucketShift)
        while buckets[i] != Bucket.empty { i = (i + 1) & mask }
        buckets[i] = Bucket.make(slot, hash: h)
    }

    /// Grows every column ahead (`Array.reserveGrowing`: 4x at a time) so that `additional` more
    /// slots fit without growing them again.
    mutating func reserveColumns(additional: Int) {
        ids.reserveGrowing(additional); idHash.reserveGrowing(additional); x.reserveGrowing(additional)
        y.reserveGrowing(additional); zIndex.reserveGrowing(additional); flags.reserveGrowing(additional)
        style.reserveGrowing(additional)
    }

    /// Grows the id index ahead so that `additional` more ids fit without growing it again.
    mutating func reserveIndex(additional: Int) {
        while (count + additional) * 4 > buckets.count * 3 { growBuckets() }
    }

    /// Doubles the bucket array. The ids go in in the old buckets' order: an old home h becomes
    /// 2h or 2h + 1, so the new homes come almost in ascending order and the probes walk the new
    /// array front to back, in cache, instead of one cache miss per id at millions of ids; the
    /// ids' hashes are read by slot (loads that do not depend on each other, so their misses
    /// overlap).
    private mutating func growBuckets() {
        let old = buckets
        let newCount = old.count * 2
        let shift = bucketShift - 1
        var grown = [UInt32](repeating: Bucket.empty, count: newCount)
        let mask = newCount - 1
        old.withUnsafeBufferPointer { ob in
            idHash.withUnsafeBufferPointer { hashes in
                grown.withUnsafeMutableBufferPointer { nb in
                    for b in ob where b != Bucket.empty {
                        let slot = Bucket.slot(b)
                        let h = hashes[Int(slot)]
                        var i = Int(h >> shift)
                        while nb[i] != Bucket.empty { i = (i + 1) & mask }
                        nb[i] = Bucket.make(slot, hash: h)
                    }
                }
            }
        }
        buckets = grown
        bucketShift = shift
    }

    /// Frees a slot (its id leaves the index; the slot goes to the free list).
    mutating func remove(_ slot: Int32) {
        let mask = buckets.count - 1
        var i = Int(idHash[Int(slot)] >> bucketShift)
        while Bucket.slot(buckets[i]) != slot { i = (i + 1) & mask }   // empty buckets hold no slot
        // Backward-shift deletion.
        var j = i
        while true {
            j = (j + 1) & mask
            let b = buckets[j]
            if b == Bucket.empty { break }
            let home = Int(idHash[Int(Bucket.slot(b))] >> bucketShift)
            // Move the bucket back into the hole at i unless its home lies cyclically in (i, j].
            let inRange = i <= j ? (home > i && home <= j) : (home > i || home <= j)
            if !inRange { buckets[i] = b; i = j }
        }
        buckets[i] = Bucket.empty
        release(slot)
        if garbageBytes > 65536 && garbageBytes * 2 > arena.count { compactArena() }
    }

    /// Frees an occupied slot that is out of the index: its arena bytes (if any) become
    /// garbage, the slot goes to the free list.
    mutating func release(_ slot: Int32) {
        let cell = ids[Int(slot)]
        if !cell.isInline { garbageBytes += cell.length }
        flags[Int(slot)] = 0
        ids[Int(slot)] = IDCell(lo: freeHead < 0 ? .max : UInt64(freeHead), hi: 0)
        freeHead = slot
        count -= 1
    }

    private mutating func compactArena() {
        var fresh: [UInt8] = []
        fresh.reserveCapacity(arena.count - garbageBytes)
        for s in 0..<flags.count where flags[s] != 0 && !ids[s].isInline {
            let off = ids[s].arenaOffset, n = ids[s].length
            ids[s] = IDCell(arenaOffset: fresh.count, length: n)
            fresh.append(contentsOf: arena[off..<off + n])
        }
        arena = fresh
        garbageBytes = 0
    }

    mutating func removeAll() { self = MarkerTable(seed: seed) }

    /// Bytes held by the arrays (capacity, not count), arena included.
    var approximateBytes: Int {
        arena.capacity + ids.capacity * 16 + (idHash.capacity + x.capacity + y.capacity + zIndex.capacity + style.capacity) * 4
            + flags.capacity + buckets.capacity * 4
    }
}

/// Bits of `MarkerTable.flags`.
enum MarkerFlags {
    static let occupied: UInt8 = 1
    static let visible: UInt8 = 2
    static let clickable: UInt8 = 4
    static let draggable: UInt8 = 8
    static let animating: UInt8 = 16
    static let hasAttributes: UInt8 = 32
    static let hasExtra: UInt8 = 64
    static let dragging: UInt8 = 128
}

/// Filling a new table without its id index, then indexing every slot in one pass (restoring a
/// snapshot): probing the index for each new id is a chain of cache misses per marker, while
/// indexing the slots in hash order walks the index once, front to back.
extension MarkerTable {
    /// True when no slot was ever indexed nor appended (a new table or one after `removeAll`).
    var isPristine: Bool { flags.isEmpty }

    /// Appends a slot for `id` (1...256 bytes) like `findOrInsert` would create one, without
    /// looking the id up or indexing it: `find` does not see it until `buildIndex()`. Only for
    /// tables whose every slot is unindexed (`isPristine` before the first append).
    mutating func appendUnindexed(_ id: String) -> Int32 {
        var id = id
        return id.withUTF8 { appendUnindexed($0) }
    }

    /// `appendUnindexed(_:)` for an id given as its UTF-8 bytes (1...256).
    mutating func appendUnindexed(_ bytes: UnsafeBufferPointer<UInt8>) -> Int32 {
        let slot = allocateSlot()
        ids[Int(slot)] = storeID(bytes)
        idHash[Int(slot)] = hash(bytes)
        count += 1
        return slot
    }

    /// Indexes every slot appended by `appendUnindexed` and returns the repeats: for an id
    /// appended more than once, each later slot with the first one, `(kept, repeated)` in
    /// ascending order of `repeated`. Repeated slots stay out of the index and stay occupied
    /// (the caller moves their data to the kept slot and frees them with `freeUnindexed`).
    /// The index ends up the size `findOrInsert` would have grown it to.
    ///
    /// Sorts (slot, hash) pairs by hash (two 16-bit radix passes, 8 bytes per slot of scratch
    /// twice), finds repeats among equal hashes, then inserts in hash order, so that linear
    /// probing walks the bucket array sequentially.
    mutating func buildIndex() -> [(kept: Int32, repeated: Int32)] {
        let n = flags.count
        var size = 16, shift: UInt32 = 28
        while n * 4 > size * 3 { size *= 2; shift -= 1 }
        buckets = Array(repeating: Bucket.empty, count: size)
        bucketShift = shift
        var pairs = [UInt64](repeating: 0, count: n)   // hash << 32 | slot
        for s in 0..<n { pairs[s] = UInt64(idHash[s]) << 32 | UInt64(s) }
        // Stable by the hash (bits 32...63): equal hashes stay in slot order.
        RadixSort.sort(&pairs, bits: 32..<64, maxDigitBits: 16) { $0 }
        var repeats: [(kept: Int32, repeated: Int32)] = []
        let mask = size - 1
        var groupStart = 0
        for k in 0..<n {
            let h = UInt32(truncatingIfNeeded: pairs[k] >> 32)
            let slot = Int32(truncatingIfNeeded: pairs[k] & 0xFFFF_FFFF)
            if k == 0 || UInt32(truncatingIfNeeded: pairs[k - 1] >> 32) != h { groupStart = k }
            // Equal hashes (a handful at most): compare ids with the earlier slots of the group.
            var firstEqual: Int32? = nil
            for j in groupStart..<k {
                let other = Int32(truncatingIfNeeded: pairs[j] & 0xFFFF_FFFF)
                if compareIDs(other, slot) == 0 { firstEqual = other; break }
            }
            if let kept = firstEqual {
                repeats.append((kept, slot))
                continue
            }
            var i = Int(h >> shift)
            while buckets[i] != Bucket.empty { i = (i + 1) & mask }
            buckets[i] = Bucket.make(slot, hash: h)
        }
        repeats.sort { $0.repeated < $1.repeated }
        return repeats
    }

    /// Frees a slot that is not in the index (a repeat `buildIndex` reported).
    mutating func freeUnindexed(_ slot: Int32) { release(slot) }
}

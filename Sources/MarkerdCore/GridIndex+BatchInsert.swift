/// Inserting many new entries at once (a bulk upsert of new markers): in spatial order rather
/// than the order they came in, so that consecutive inserts walk down through the same nodes
/// while those are still in cache (one by one in the given order, each insert of a large grid
/// is a chain of cache misses in the node table, one per level).
extension GridIndex {
    /// Inserts each `items[k]` (new slots, not in the index) like `insert(_:x:y:z:cls:)`, in the
    /// order of their class and the Morton code of their level-10 cell (a counting sort in two
    /// passes of 11 bits, each moving the items: read in sequence, written to their buckets; the
    /// inserts then read them in sequence too). Inserts alone give the same nodes and leaf
    /// contents in any order (a node splits exactly when its count passes `splitAbove`, and
    /// counts only grow); only the order of the entries inside a leaf differs.
    mutating func insert(_ items: [(entry: GridEntry, cls: UInt32)]) {
        guard items.count > 1 else {
            for (e, cls) in items { insert(e.slot, x: e.x, y: e.y, z: e.z, cls: cls) }
            return
        }
        // Key: class (2 bits) above the interleaved top 10 bits of y and x (20 bits).
        @inline(__always) func key(_ item: (entry: GridEntry, cls: UInt32)) -> Int {
            let x = Int(item.entry.x >> 22), y = Int(item.entry.y >> 22)
            var m = 0
            for b in 0..<10 { m |= (x >> b & 1) << (2 * b) | (y >> b & 1) << (2 * b + 1) }
            return Int(item.cls) << 20 | m
        }
        var sorted = items
        var scratch = items
        for shift in [0, 11] {
            var starts = [Int32](repeating: 0, count: 2_049)
            for item in sorted { starts[(key(item) >> shift & 2_047) + 1] += 1 }
            for d in 0..<2_048 { starts[d + 1] += starts[d] }
            scratch.withUnsafeMutableBufferPointer { out in
                for item in sorted {
                    let d = key(item) >> shift & 2_047
                    out[Int(starts[d])] = item
                    starts[d] += 1
                }
            }
            swap(&sorted, &scratch)
        }
        for (e, cls) in sorted { insert(e.slot, x: e.x, y: e.y, z: e.z, cls: cls) }
    }
}

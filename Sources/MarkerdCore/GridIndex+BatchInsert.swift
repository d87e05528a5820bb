/// Inserting many new entries at once (a bulk upsert of new markers): in spatial order rather
/// than the order they came in, so that consecutive inserts walk down through the same nodes
/// while those are still in cache (one by one in the given order, each insert of a large grid
/// is a chain of cache misses in the node table, one per level).
extension GridIndex {
    /// Inserts each `items[k]` (new slots, not in the index) like `insert(_:x:y:z:cls:)`, in the
    /// order of their class and the Morton code of their level-6 cell (one counting-sort pass
    /// that moves the items, so the inserts then read them in sequence). Inserts alone give the
    /// same nodes and leaf contents in any order (a node splits exactly when its count passes
    /// `splitAbove`, and counts only grow); only the order of the entries inside a leaf differs.
    mutating func insert(_ items: [(entry: GridEntry, cls: UInt32)]) {
        guard items.count > 1 else {
            for (e, cls) in items { insert(e.slot, x: e.x, y: e.y, z: e.z, cls: cls) }
            return
        }
        // Key: class (2 bits) above the interleaved top 6 bits of y and x (12 bits).
        @inline(__always) func key(_ item: (entry: GridEntry, cls: UInt32)) -> Int {
            let x = Int(item.entry.x >> 26), y = Int(item.entry.y >> 26)
            var m = 0
            for b in 0..<6 { m |= (x >> b & 1) << (2 * b) | (y >> b & 1) << (2 * b + 1) }
            return Int(item.cls) << 12 | m
        }
        var starts = [Int32](repeating: 0, count: 3 << 12 + 1)
        for item in items { starts[key(item) + 1] += 1 }
        for d in 0..<3 << 12 { starts[d + 1] += starts[d] }
        let sorted = [(entry: GridEntry, cls: UInt32)](unsafeUninitializedCapacity: items.count) { out, n in
            for item in items {
                let d = key(item)
                (out.baseAddress! + Int(starts[d])).initialize(to: item)
                starts[d] += 1
            }
            n = items.count
        }
        for (e, cls) in sorted { insert(e.slot, x: e.x, y: e.y, z: e.z, cls: cls) }
    }
}

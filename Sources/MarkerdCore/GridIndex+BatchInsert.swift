/// Inserting many new entries at once (a bulk upsert of new markers): in spatial order rather
/// than the order they came in, so that consecutive inserts walk down through the same nodes
/// while those are still in cache (one by one in the given order, each insert of a large grid
/// is a chain of cache misses in the node table, one per level).
extension GridIndex {
    /// Inserts each `items[k]` (new slots, not in the index) like `insert(_:x:y:z:cls:)`, in the
    /// order of their class and the Morton code of their level-10 cell (a counting sort in two
    /// passes). Inserts alone give the same nodes and leaf contents in any order (a node splits
    /// exactly when its count passes `splitAbove`, and counts only grow); only the order of the
    /// entries inside a leaf differs.
    mutating func insert(_ items: [(entry: GridEntry, cls: UInt32)]) {
        guard items.count > 1 else {
            for (e, cls) in items { insert(e.slot, x: e.x, y: e.y, z: e.z, cls: cls) }
            return
        }
        // Key: class (2 bits) above the interleaved top 10 bits of y and x (20 bits).
        func key(_ k: Int) -> Int {
            let e = items[k].entry
            var m = 0
            for b in 0..<10 {
                m |= Int((e.x >> UInt32(22 + b)) & 1) << (2 * b) | Int((e.y >> UInt32(22 + b)) & 1) << (2 * b + 1)
            }
            return Int(items[k].cls) << 20 | m
        }
        let keys = (0..<items.count).map(key)
        var order = Array(0..<items.count), scratch = order
        for shift in [0, 11] {
            var starts = [Int](repeating: 0, count: 2_049)
            for k in order { starts[((keys[k] >> shift) & 2_047) + 1] += 1 }
            for d in 0..<2_048 { starts[d + 1] += starts[d] }
            for k in order {
                let d = (keys[k] >> shift) & 2_047
                scratch[starts[d]] = k
                starts[d] += 1
            }
            swap(&order, &scratch)
        }
        for k in order {
            let (e, cls) = items[k]
            insert(e.slot, x: e.x, y: e.y, z: e.z, cls: cls)
        }
    }
}

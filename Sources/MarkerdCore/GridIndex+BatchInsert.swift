/// Inserting many new entries at once (a bulk upsert of new markers): in spatial order rather
/// than the order they came in, so that consecutive inserts walk down through the same nodes
/// while those are still in cache (one by one in the given order, each insert of a large grid
/// is a chain of cache misses in the node table, one per level).
extension GridIndex {
    /// Inserts each `items[k]` (new slots, not in the index) like `insert(_:x:y:z:cls:)`, in the
    /// order of their class and the Morton code of their level-10 cell (`insertOrderKey`; an LSD
    /// radix sort of the keys in two passes of 11 bits, `RestoreBatch.Layout.radixSort`, ties in
    /// the given order). Inserts alone give the same nodes and leaf
    /// contents in any order (a node splits exactly when its count passes `splitAbove`, and
    /// counts only grow); only the order of the entries inside a leaf differs.
    /// `sorted`: the items already come in that order (`RestoreBatch.Layout.grid`), not sorted again.
    mutating func insert(_ items: [(entry: GridEntry, cls: UInt32)], sorted presorted: Bool = false) {
        guard items.count > 1 else {
            for (e, cls) in items { insert(e.slot, x: e.x, y: e.y, z: e.z, cls: cls) }
            return
        }
        // Room ahead (`Array.reserveGrowing`, 4x at a time): a slot's `pos` and `leafLevel`, and
        // about two run entries per new entry (a run moves to one of twice the size when full).
        let slots = 1 + Int(items.lazy.map(\.entry.slot).max()!)
        if slots > pos.count {
            pos.reserveGrowing(slots - pos.count)
            leafLevel.reserveGrowing(slots - leafLevel.count)
        }
        entries.reserveGrowing(2 * items.count)
        blockNext.reserveGrowing(2 * items.count / GridIndex.blockSize)
        let sorted = presorted ? items : RestoreBatch.Layout.radixSort(items.enumerated().map { k, item in
            GridIndex.insertOrderKey(x: item.entry.x, y: item.entry.y, cls: item.cls) << 32 | UInt64(k)
        }, passes: [(32, 11), (43, 11)]).map { items[Int($0)] }
        for (e, cls) in sorted { insert(e.slot, x: e.x, y: e.y, z: e.z, cls: cls) }
    }

    /// The order of `insert(_:)`: class (2 bits) above the interleaved top 10 bits of y and x
    /// (the Morton code of the level-10 cell, 20 bits).
    @inline(__always) static func insertOrderKey(x: UInt32, y: UInt32, cls: UInt32) -> UInt64 {
        UInt64(cls) << 20 | SpatialKey.morton(x: x >> 22, y: y >> 22)
    }
}

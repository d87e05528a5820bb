/// Upserting a batch of plain markers given in columns (`RestoreBatch`: decoded straight from an
/// UpsertMarkersRequest or a snapshot chunk), without building a `MarkerRecord` per marker.
extension MarkerLayer {
    /// Upserts like `upsert(_:now:)` would upsert `batch.record(i)` for every `i` in order (same
    /// table, grid, counters, drags, clusters and version; a repeated id is applied in order,
    /// the last one wins, counted as updated). Never fails: `RestoreBatch.append` already
    /// refused what `MarkerLayer.validate` rejects and validated each distinct style.
    /// Each distinct style is retained once with its count, before any old style is released.
    public mutating func upsert(_ batch: RestoreBatch, now: Int64) -> UpsertResult {
        upsert(batch, now: now, deferIndexes: false)
    }

    /// `upsert(_:now:)`, or with `deferIndexes` (see MarkerLayer+Restore.swift) every marker in
    /// a new slot that neither the id index nor the grid lists yet.
    mutating func upsert(_ batch: RestoreBatch, now: Int64, deferIndexes: Bool) -> UpsertResult {
        // Styles in order of first use, as marker-by-marker retains would number them.
        let styleIndex = batch.styles.indices.map { batch.styleUses[$0] == 0 ? 0 : styles.retain(batch.styles[$0], times: batch.styleUses[$0]) }
        var created = 0
        // Every id looked up first in a short loop whose iterations do not depend on each
        // other, so the processor overlaps their cache misses in the id index (one lookup at a
        // time waits for each miss in turn); new ids then find their buckets in cache.
        var hashes: [UInt32] = []
        var found: [Int32] = []
        if !deferIndexes {
            table.reserveIndex(additional: batch.count)
            (hashes, found) = batch.idBytes.withUnsafeBufferPointer { ids in
                var hashes = [UInt32](repeating: 0, count: batch.count), found = [Int32](repeating: -1, count: batch.count)
                var start = 0
                for (i, e) in batch.entries.enumerated() {
                    let id = UnsafeBufferPointer(rebasing: ids[start..<Int(e.idEnd)])
                    start = Int(e.idEnd)
                    let h = table.hash(id)
                    hashes[i] = h
                    found[i] = table.find(bytes: id, hash: h) ?? -1
                }
                return (hashes, found)
            }
        }
        batch.idBytes.withUnsafeBufferPointer { ids in
            batch.entries.withUnsafeBufferPointer { entries in
                var start = 0
                for (i, e) in entries.enumerated() {
                    let end = Int(e.idEnd)
                    let id = UnsafeBufferPointer(rebasing: ids[start..<end])
                    let (slot, isNew) = deferIndexes ? (table.appendUnindexed(id), true)
                        : found[i] >= 0 ? (found[i], false) : table.findOrInsert(bytes: id, hash: hashes[i])  // ids repeated in the batch: found now
                    start = end
                    var f = MarkerFlags.occupied
                    if e.flags & RestoreBatch.visible != 0 { f |= MarkerFlags.visible }
                    if e.flags & RestoreBatch.clickable != 0 { f |= MarkerFlags.clickable }
                    if e.flags & RestoreBatch.draggable != 0 { f |= MarkerFlags.draggable }
                    var extra: [UInt8] = []
                    if !batch.extras.isEmpty, let x = batch.extras[Int32(i)] { extra = x; f |= MarkerFlags.hasExtra }
                    if isNew { created += 1 }
                    store(slot, isNew: isNew, at: e.world, z: e.zIndex, style: styleIndex[Int(e.style)], flags: f,
                          animation: nil, attributes: [:], extra: extra, indexGrid: !deferIndexes)
                }
            }
        }
        if batch.count > 0 { version &+= 1 }
        return UpsertResult(created: created, updated: batch.count - created)
    }
}

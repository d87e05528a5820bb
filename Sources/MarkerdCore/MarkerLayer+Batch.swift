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
        if !deferIndexes { table.reserveIndex(additional: batch.count) }
        // New markers go into the grid after the loop, in spatial order (`GridIndex.insert(_:)`).
        // Slots created here are numbered from `firstNew` up when no freed slot is reused (else
        // no deferral), so an id repeated in the batch is seen and the pending inserts go in first.
        let sortGrid = !deferIndexes && table.freeHead < 0 && batch.count > 1
        let firstNew = table.slotCount
        var pending: [(entry: GridEntry, cls: UInt32)] = []
        if sortGrid { pending.reserveCapacity(batch.count) }
        batch.idBytes.withUnsafeBufferPointer { ids in
            batch.entries.withUnsafeBufferPointer { entries in
                var start = 0
                for (i, e) in entries.enumerated() {
                    let end = Int(e.idEnd)
                    let id = UnsafeBufferPointer(rebasing: ids[start..<end])
                    let (slot, isNew) = deferIndexes ? (table.appendUnindexed(id), true) : table.findOrInsert(bytes: id)
                    start = end
                    var f = MarkerFlags.occupied
                    if e.flags & RestoreBatch.visible != 0 { f |= MarkerFlags.visible }
                    if e.flags & RestoreBatch.clickable != 0 { f |= MarkerFlags.clickable }
                    if e.flags & RestoreBatch.draggable != 0 { f |= MarkerFlags.draggable }
                    var extra: [UInt8] = []
                    if !batch.extras.isEmpty, let x = batch.extras[Int32(i)] { extra = x; f |= MarkerFlags.hasExtra }
                    if isNew {
                        created += 1
                        if sortGrid { pending.append((GridEntry(x: e.world.x, y: e.world.y, z: e.zIndex, slot: slot), MarkerLayer.gridClass(f))) }
                    } else if Int(slot) >= firstNew && !pending.isEmpty {
                        grid.insert(pending)
                        pending.removeAll(keepingCapacity: true)
                    }
                    store(slot, isNew: isNew, at: e.world, z: e.zIndex, style: styleIndex[Int(e.style)], flags: f,
                          animation: nil, attributes: [:], extra: extra, indexGrid: !deferIndexes && !sortGrid)
                }
            }
        }
        grid.insert(pending)
        if batch.count > 0 { version &+= 1 }
        return UpsertResult(created: created, updated: batch.count - created)
    }
}

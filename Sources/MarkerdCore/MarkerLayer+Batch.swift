/// Upserting a batch of plain markers given in columns (`RestoreBatch`: decoded straight from an
/// UpsertMarkersRequest or a snapshot chunk), without building a `MarkerRecord` per marker.
extension MarkerLayer {
    /// Upserts like `upsert(_:now:)` would upsert `batch.record(i)` for every `i` in order (same
    /// table, grid, counters, drags, clusters and version; a repeated id is applied in order,
    /// the last one wins, counted as updated). Never fails: `RestoreBatch.append` already
    /// refused what `MarkerLayer.validate` rejects and validated each distinct style.
    /// Each distinct style is retained once with its count, before any old style is released.
    ///
    /// - spatialSlots: number the new markers' slots in their spatial order (`spatialSlots(_:)`)
    ///   rather than in the batch's order (default true). Slot order is the order of
    ///   `forEachMarker` and of snapshot clustering's input, and supercluster's clusters depend on
    ///   their input order: a layer clustered that way passes false to keep the order given.
    public mutating func upsert(_ batch: RestoreBatch, now: Int64, spatialSlots: Bool = true) -> UpsertResult {
        upsert(batch, now: now, deferIndexes: false, spatialSlots: spatialSlots)
    }

    /// `upsert(_:now:spatialSlots:)`, or with `deferIndexes` (see MarkerLayer+Restore.swift) every
    /// marker in a new slot that neither the id index nor the grid lists yet, in the batch's order.
    mutating func upsert(_ batch: RestoreBatch, now: Int64, deferIndexes: Bool, spatialSlots spatial: Bool = true) -> UpsertResult {
        // Styles in order of first use, as marker-by-marker retains would number them.
        let styleIndex = batch.styles.indices.map { batch.styleUses[$0] == 0 ? 0 : styles.retain(batch.styles[$0], times: batch.styleUses[$0]) }
        var createdCount = 0
        if !deferIndexes { table.reserveIndex(additional: batch.count) }
        // New markers go into the grid after the loop, in spatial order (`GridIndex.insert(_:)`).
        // Slots created here are numbered from `firstNew` up when no freed slot is reused (else
        // no deferral), so an id repeated in the batch is seen and the pending inserts go in first.
        let sortGrid = !deferIndexes && table.freeHead < 0 && batch.count > 1
        let firstNew = table.slotCount
        // In that case the slots are found or created first, new ones numbered in the markers'
        // spatial order (`spatialSlots`); the loop below still applies the markers in the order
        // given (so a repeated id's last marker wins, and its first one creates it).
        let slots = sortGrid && spatial ? spatialSlots(batch) : []
        var created = [Bool](repeating: false, count: table.slotCount - firstNew)
        var pending: [(entry: GridEntry, cls: UInt32)] = []
        if sortGrid { pending.reserveCapacity(batch.count) }
        batch.idBytes.withUnsafeBufferPointer { ids in
            batch.entries.withUnsafeBufferPointer { entries in
                var start = 0
                for (i, e) in entries.enumerated() {
                    let end = Int(e.idEnd)
                    let id = UnsafeBufferPointer(rebasing: ids[start..<end])
                    let slot: Int32, isNew: Bool
                    if !slots.isEmpty {
                        // New: the first time (in the batch's order) a slot created by `spatialSlots` comes.
                        slot = slots[i]
                        let k = Int(slot) - firstNew
                        isNew = k >= 0 && !created[k]
                        if isNew { created[k] = true }
                    } else {
                        (slot, isNew) = deferIndexes ? (table.appendUnindexed(id), true) : table.findOrInsert(bytes: id)
                    }
                    start = end
                    var f = MarkerFlags.occupied
                    if e.flags & RestoreBatch.visible != 0 { f |= MarkerFlags.visible }
                    if e.flags & RestoreBatch.clickable != 0 { f |= MarkerFlags.clickable }
                    if e.flags & RestoreBatch.draggable != 0 { f |= MarkerFlags.draggable }
                    var extra: [UInt8] = []
                    if !batch.extras.isEmpty, let x = batch.extras[Int32(i)] { extra = x; f |= MarkerFlags.hasExtra }
                    if isNew {
                        createdCount += 1
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
        return UpsertResult(created: createdCount, updated: batch.count - createdCount)
    }

    /// The slot of each marker of `batch` (`MarkerTable.findOrInsert`), looked up and created in
    /// the spatial order of the markers (the Morton order of their level-16 cells, about 600 m
    /// at the equator; ties in batch order), so the slots a batch creates are numbered in that
    /// order. Why: a query page lists markers of one area, and reading their table rows (flags,
    /// style, id reference, id bytes: see `gather`) then touches a few neighbouring rows of
    /// each batch instead of one cache line per marker and column. Call with no freed slot to
    /// reuse (`table.freeHead < 0`): then the new slots are exactly those from `slotCount` up.
    private mutating func spatialSlots(_ batch: RestoreBatch) -> [Int32] {
        let n = batch.count
        // LSD radix sort of (cell key << 32 | index) by the key's 32 bits, 11 + 11 + 10 per pass.
        var items = batch.entries.enumerated().map { i, e in
            SpatialKey.morton(x: e.world.x >> 16, y: e.world.y >> 16) << 32 | UInt64(i)
        }
        var scratch = items
        for (shift, bits) in [(32, 11), (43, 11), (54, 10)] {
            let mask = (1 << bits) - 1
            var starts = [Int](repeating: 0, count: mask + 2)
            for v in items { starts[Int(v >> UInt64(shift)) & mask + 1] += 1 }
            for d in 0...mask { starts[d + 1] += starts[d] }
            for v in items {
                let d = Int(v >> UInt64(shift)) & mask
                scratch[starts[d]] = v
                starts[d] += 1
            }
            swap(&items, &scratch)
        }
        // The ids are hashed and their home buckets read `touchChunk` at a time ahead of the
        // lookups (`MarkerTable.touchHomes`): at millions of markers each home is a cache miss.
        var slots = [Int32](repeating: 0, count: n)
        table.reserveIndex(additional: n)   // no growth between a chunk's touch and its lookups
        var hashes = [UInt32](repeating: 0, count: Self.touchChunk)
        batch.idBytes.withUnsafeBufferPointer { ids in
            batch.entries.withUnsafeBufferPointer { entries in
                @inline(__always) func id(_ i: Int) -> UnsafeBufferPointer<UInt8> {
                    UnsafeBufferPointer(rebasing: ids[(i == 0 ? 0 : Int(entries[i - 1].idEnd))..<Int(entries[i].idEnd)])
                }
                hashes.withUnsafeMutableBufferPointer { hashes in
                    var from = 0
                    while from < n {
                        let chunk = items[from..<Swift.min(n, from + Self.touchChunk)]
                        for (k, v) in chunk.enumerated() { hashes[k] = table.hash(id(Int(truncatingIfNeeded: v & 0xFFFF_FFFF))) }
                        table.touchHomes(UnsafeBufferPointer(rebasing: hashes[0..<chunk.count]))
                        for (k, v) in chunk.enumerated() {
                            let i = Int(truncatingIfNeeded: v & 0xFFFF_FFFF)
                            slots[i] = table.findOrInsert(bytes: id(i), hash: hashes[k]).slot
                        }
                        from += chunk.count
                    }
                }
            }
        }
        return slots
    }

    /// Ids `spatialSlots` hashes and touches the home buckets of before looking them up.
    static let touchChunk = 32
}

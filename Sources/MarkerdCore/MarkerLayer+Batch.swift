/// Upserting a batch of plain markers given in columns (`MarkerBatch`: decoded straight from an
/// UpsertMarkersRequest or a snapshot chunk), without building a `MarkerRecord` per marker.
extension MarkerLayer {
    /// The seed of the layer's id hashes, fixed for the layer's life: what
    /// `MarkerBatch.prepareLayout(idHashSeed:)` takes for a batch to be upserted into it.
    public var idHashSeed: UInt64 { table.seed }

    /// Upserts like `upsert(_:now:)` would upsert `batch.record(i)` for every `i` in order (same
    /// table, grid, counters, drags, clusters and version; a repeated id is applied in order,
    /// the last one wins, counted as updated). Never fails: `MarkerBatch.append` already
    /// refused what `MarkerLayer.validate` rejects and validated each distinct style.
    /// Each distinct style is retained once with its count, before any old style is released.
    ///
    /// - spatialSlots: number the new markers' slots in their spatial order (`spatialSlots(_:)`)
    ///   rather than in the batch's order (default true). Slot order is the order of
    ///   `forEachMarker` and of snapshot clustering's input, and supercluster's clusters depend on
    ///   their input order: a layer clustered that way passes false to keep the order given.
    ///
    /// - alongside: a way to run work on a second thread (`ConcurrentWork`). With it, a batch of
    ///   at least `concurrentUpsertAbove` markers that are likely all new (no id of a sample of
    ///   them is in the layer) has its grid inserts made on the second thread while this one
    ///   files the ids and columns, numbering each new marker's slot ahead as it will be if all
    ///   are new. When some are not, those grid inserts are taken out again and the batch goes
    ///   on as without it. Either way the layer ends up as without it; with all new, exactly so
    ///   (same slots, grid nodes and entry order).
    public mutating func upsert(_ batch: MarkerBatch, now: Int64, spatialSlots: Bool = true,
                                alongside helper: (any ConcurrentWork)? = nil) -> UpsertResult {
        upsert(batch, now: now, deferIndexes: false, spatialSlots: spatialSlots, alongside: helper)
    }

    /// Batches of at least this many markers take `upsert(_:now:spatialSlots:alongside:)`'s
    /// second thread (4,096: below that the hand-over costs more than it saves).
    public static let concurrentUpsertAbove = 4096

    /// `upsert(_:now:spatialSlots:)`, or with `deferIndexes` (see MarkerLayer+Restore.swift) every
    /// marker in a new slot that neither the id index nor the grid lists yet, in the batch's order.
    mutating func upsert(_ batch: MarkerBatch, now: Int64, deferIndexes: Bool, spatialSlots spatial: Bool = true,
                         alongside helper: (any ConcurrentWork)? = nil) -> UpsertResult {
        // Styles in order of first use, as marker-by-marker retains would number them.
        let styleIndex = batch.styles.indices.map { batch.styleUses[$0] == 0 ? 0 : styles.retain(batch.styles[$0], times: batch.styleUses[$0]) }
        var createdCount = 0
        if !deferIndexes { table.reserveIndex(additional: batch.count) }
        if table.freeHead < 0 { table.reserveColumns(additional: batch.count) }
        // New markers go into the grid after the loop, in spatial order (`GridIndex.insert(_:)`).
        // Slots created here are numbered from `firstNew` up when no freed slot is reused (else
        // no deferral), so an id repeated in the batch is seen and the pending inserts go in first.
        let sortGrid = !deferIndexes && table.freeHead < 0 && batch.count > 1
        let firstNew = table.slotCount
        // In that case the slots are found or created first, new ones numbered in the markers'
        // spatial order (`spatialSlots`); the loop below still applies the markers in the order
        // given (so a repeated id's last marker wins, and its first one creates it).
        var slots: [Int32] = [], layout: MarkerBatch.Layout? = nil
        if sortGrid && spatial, let helper, batch.count >= Self.concurrentUpsertAbove,
           let prepared = batch.layout, prepared.idHashSeed == table.seed, likelyAllNew(prepared) {
            switch concurrentSlotsAndGrid(batch, prepared, firstNew: firstNew, styleIndex: styleIndex, helper) {
            case .done:
                version &+= 1
                return UpsertResult(created: batch.count, updated: 0)
            case .notAllNew(let s):
                (slots, layout) = (s, prepared)
            }
        } else if sortGrid && spatial {
            (slots, layout) = spatialSlots(batch)
        }
        var created = [Bool](repeating: false, count: table.slotCount - firstNew)
        var pending: [(entry: GridEntry, cls: UInt32)] = []
        if sortGrid { pending.reserveCapacity(batch.count) }
        // With a layout and no pending inserts made early: where marker i's entry is in `pending`
        // (-1: none), for inserting them in the layout's spatial order, with no sort here.
        var pendingAt = layout == nil ? [] : [Int32](repeating: -1, count: batch.count)
        batch.idBytes.withUnsafeBufferPointer { ids in
            batch.withAttributes { attributes in
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
                        let (f, extra) = Self.flagsAndExtra(batch, i)
                        if isNew {
                            createdCount += 1
                            if sortGrid {
                                if !pendingAt.isEmpty { pendingAt[i] = Int32(pending.count) }
                                pending.append((GridEntry(x: e.world.x, y: e.world.y, z: e.zIndex, slot: slot), MarkerLayer.gridClass(f)))
                            }
                        } else if Int(slot) >= firstNew && !pending.isEmpty {
                            grid.insert(pending)
                            pending.removeAll(keepingCapacity: true)
                            pendingAt = []
                        }
                        store(slot, isNew: isNew, at: e.world, z: e.zIndex, style: styleIndex[Int(e.style)], flags: f,
                              animation: nil, attributes: attributes(i),
                              extra: extra, label: nil, indexGrid: !deferIndexes && !sortGrid)
                    }
                }
            }
        }
        if let layout, !pendingAt.isEmpty {
            grid.insert(layout.spatial.compactMap { i in pendingAt[Int(i)] < 0 ? nil : pending[Int(pendingAt[Int(i)])] }, sorted: true)
        } else {
            grid.insert(pending)
        }
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
    /// Also returns the layout used: the batch's own (`MarkerBatch.prepareLayout`) when made
    /// for this layer's id hash seed, else one computed here.
    private mutating func spatialSlots(_ batch: MarkerBatch) -> ([Int32], MarkerBatch.Layout?) {
        let n = batch.count
        let layout = batch.layout.flatMap { $0.idHashSeed == table.seed ? $0 : nil }
            ?? MarkerBatch.Layout(batch, idHashSeed: table.seed)
        // The home buckets of `touchChunk` ids are read ahead of their lookups
        // (`MarkerTable.touchHomes`): at millions of markers each home is a cache miss.
        var slots = [Int32](repeating: 0, count: n)
        table.reserveIndex(additional: n)   // no growth between a chunk's touch and its lookups
        layout.ids.withUnsafeBufferPointer { ids in
            layout.hashes.withUnsafeBufferPointer { hashes in
                layout.idEnds.withUnsafeBufferPointer { ends in
                    var from = 0
                    while from < n {
                        let to = Swift.min(n, from + Self.touchChunk)
                        table.touchHomes(UnsafeBufferPointer(rebasing: hashes[from..<to]))
                        for k in from..<to {
                            let id = UnsafeBufferPointer(rebasing: ids[(k == 0 ? 0 : Int(ends[k - 1]))..<Int(ends[k])])
                            slots[Int(layout.spatial[k])] = table.findOrInsert(bytes: id, hash: hashes[k]).slot
                        }
                        from = to
                    }
                }
            }
        }
        return (slots, layout)
    }

    /// Ids `spatialSlots` touches the home buckets of before looking them up.
    static let touchChunk = 32

    /// Ids of a batch `likelyAllNew` looks up.
    static let newSample = 16

    /// Whether none of `newSample` ids spread over the batch (its layout's spatial order) is in
    /// the layer: the gate of the concurrent upsert, whose grid inserts are wasted (and undone)
    /// when some id is. True at once for an empty layer.
    private func likelyAllNew(_ layout: MarkerBatch.Layout) -> Bool {
        let n = layout.spatial.count
        guard table.count > 0, n > 0 else { return true }
        return layout.ids.withUnsafeBufferPointer { ids in
            for j in 0..<Self.newSample {
                let k = j * n / Self.newSample
                let start = k == 0 ? 0 : Int(layout.idEnds[k - 1])
                let id = UnsafeBufferPointer(rebasing: ids[start..<Int(layout.idEnds[k])])
                if table.find(bytes: id, hash: layout.hashes[k]) != nil { return false }
            }
            return true
        }
    }

    private enum ConcurrentUpsert {
        /// Every marker was new: the batch is applied (but for the version).
        case done
        /// Some were not: the grid is as before; the ids are filed, with these slots (as
        /// `spatialSlots` returns them); the rest of the upsert is still to be done.
        case notAllNew([Int32])
    }

    /// The concurrent upsert (see `upsert(_:now:spatialSlots:alongside:)`): the grid moves out of
    /// the layer to `helper`'s thread, which inserts every marker's entry in the layout's spatial
    /// order with the slot it gets if all are new (the k-th in spatial order: `firstNew` + k,
    /// as `spatialSlots` numbers them); this thread files the ids (`spatialSlots`) and, when
    /// they were all new, stores the columns. When some were not, the entries are removed again.
    private mutating func concurrentSlotsAndGrid(_ batch: MarkerBatch, _ layout: MarkerBatch.Layout, firstNew: Int,
                                                 styleIndex: [UInt32], _ helper: any ConcurrentWork) -> ConcurrentUpsert {
        let n = batch.count
        var moved = grid
        grid = GridIndex()
        var slots: [Int32] = []
        var allNew = false
        withUnsafeMutablePointer(to: &moved) { g in
            helper.run({
                slots = spatialSlots(batch).0
                allNew = table.slotCount == firstNew + n
                if allNew { storeNew(batch, slots: slots, styleIndex: styleIndex) }
            }, alongside: {
                g.pointee.insert(Self.predictedEntries(batch, layout, firstNew: firstNew), sorted: true)
            })
        }
        grid = moved
        if allNew { return .done }
        for (k, i) in layout.spatial.enumerated() {
            let e = batch.entries[Int(i)]
            grid.remove(Int32(firstNew + k), x: e.world.x, y: e.world.y, cls: MarkerLayer.gridClass(Self.flagsAndExtra(batch, Int(i)).0))
        }
        return .notAllNew(slots)
    }

    /// Every marker's grid entry in `layout.spatial` order, each with the slot it gets when all
    /// are new (the k-th in that order: `firstNew` + k).
    private static func predictedEntries(_ batch: MarkerBatch, _ layout: MarkerBatch.Layout,
                                         firstNew: Int) -> [(entry: GridEntry, cls: UInt32)] {
        layout.spatial.enumerated().map { k, i in
            let e = batch.entries[Int(i)]
            return (GridEntry(x: e.world.x, y: e.world.y, z: e.zIndex, slot: Int32(firstNew + k)),
                    MarkerLayer.gridClass(flagsAndExtra(batch, Int(i)).0))
        }
    }

    /// Marker `i`'s flags as `upsert` stores them, and its extra bytes.
    @inline(__always) private static func flagsAndExtra(_ batch: MarkerBatch, _ i: Int) -> (UInt8, [UInt8]) {
        var f = batch.entries[i].markerFlags
        if batch.hasAttributes(i) { f |= MarkerFlags.hasAttributes }
        guard !batch.extras.isEmpty, let x = batch.extras[Int32(i)] else { return (f, []) }
        return (f | MarkerFlags.hasExtra, x)
    }

    /// `upsert`'s loop for a batch whose markers all got new slots (`slots`) with their grid
    /// entries inserted already: the columns, counters, attributes and extras.
    private mutating func storeNew(_ batch: MarkerBatch, slots: [Int32], styleIndex: [UInt32]) {
        batch.withAttributes { attributes in
            for (i, e) in batch.entries.enumerated() {
                let (f, extra) = Self.flagsAndExtra(batch, i)
                store(slots[i], isNew: true, at: e.world, z: e.zIndex, style: styleIndex[Int(e.style)], flags: f,
                      animation: nil, attributes: attributes(i),
                      extra: extra, label: nil, indexGrid: false)
            }
        }
    }
}

/// Runs two pieces of work at once, on two threads, and returns when both are done: what
/// `MarkerLayer.upsert(_:now:spatialSlots:alongside:)` hands its grid inserts to. The core
/// starts no threads; the service gives one of its own.
public protocol ConcurrentWork: Sendable {
    /// Runs `here` on the calling thread and `there` on another one (or on the calling thread
    /// too, after `here`, when no other one has started it by then); returns when both are done.
    func run(_ here: () -> Void, alongside there: () -> Void)
}

/// Restoring a snapshot into a new layer: markers go into the marker table batch by batch
/// without being looked up, and the id index and the grid are built once at the end
/// (`MarkerTable.buildIndex`, `GridIndex.bulkLoad`) instead of marker by marker, which is
/// several times faster for millions of markers.
extension MarkerLayer {
    /// True while restored markers wait for `finishRestore()`: the layer holds markers but its
    /// grid was never touched (only `restore` leaves a layer so).
    public var hasDeferredGrid: Bool { table.count > 0 && grid.isPristine }

    /// Upserts like `upsert(_:now:)` (same validation and errors, same table, styles,
    /// animations, counters and version), with the positions already projected if `world` is
    /// given (`world[i]` must be `WorldPoint(markers[i].position)`). Into a new layer (nothing
    /// upserted yet, no clusters) or one that only `restore` filled so far, every marker takes a
    /// new slot and the id index and grid wait for `finishRestore()`, which resolves ids given
    /// more than once (the last one wins, as with upserts); the result then counts every marker
    /// as created. Otherwise this is a plain upsert. Until `finishRestore()`, nothing but
    /// `restore` may change the layer and nothing may query it.
    public mutating func restore(_ markers: [MarkerRecord], world: [WorldPoint]?, now: Int64) throws(MarkerdCoreError) -> UpsertResult {
        let deferIndexes = clusters == nil && grid.isPristine && (table.isPristine || hasDeferredGrid)
        return try upsert(markers, world: world, now: now, deferIndexes: deferIndexes)
    }

    /// `restore(_:world:now:)` for a batch in columns (same result as restoring
    /// `batch.record(i)` for every `i`, with their projected positions): into a layer that defers its indexes
    /// it fills the table column by column and retains each distinct style once with its count,
    /// without building records. New slots follow the batch's order (a snapshot lists a layer in
    /// slot order, which the restore keeps).
    public mutating func restore(_ batch: MarkerBatch, now: Int64) -> UpsertResult {
        upsert(batch, now: now, deferIndexes: clusters == nil && grid.isPristine && (table.isPristine || hasDeferredGrid),
               spatialSlots: false)
    }

    /// Builds the id index and grid of the markers `restore` left without (nothing if there
    /// are none). An id restored more than once keeps its first slot with the data of its last
    /// restore; the later slots are freed. The grid is the one inserting the markers one by one
    /// would give, up to the order of entries inside a leaf (see `GridIndex.bulkLoad`).
    public mutating func finishRestore() {
        guard hasDeferredGrid else { return }
        for (kept, repeated) in table.buildIndex() { moveRestored(repeated, onto: kept) }
        var byClass: [[GridEntry]] = [[], [], []]
        var sizes = [0, 0, 0]
        for s in 0..<table.slotCount where table.flags[s] != 0 { sizes[Int(MarkerLayer.gridClass(table.flags[s]))] += 1 }
        for c in 0..<3 { byClass[c].reserveCapacity(sizes[c]) }
        for s in 0..<table.slotCount where table.flags[s] != 0 {
            byClass[Int(MarkerLayer.gridClass(table.flags[s]))].append(
                GridEntry(x: table.x[s], y: table.y[s], z: table.zIndex[s], slot: Int32(s)))
        }
        grid.bulkLoad(&byClass)
    }

    /// Gives slot `kept` the marker restored later into `repeated` (same id) and frees
    /// `repeated`, as if the later restore had updated `kept`.
    private mutating func moveRestored(_ repeated: Int32, onto kept: Int32) {
        let k = Int(kept), r = Int(repeated)
        account(table.flags[k], -1)
        styles.release(table.style[k])
        table.x[k] = table.x[r]; table.y[k] = table.y[r]; table.zIndex[k] = table.zIndex[r]
        table.flags[k] = table.flags[r]; table.style[k] = table.style[r]
        attributes.move(from: repeated, to: kept)
        extras[kept] = extras.removeValue(forKey: repeated)
        setLabel(kept, labels.removeValue(forKey: repeated))
        // The heap keeps stale entries for both slots: expiry skips entries whose seq differs.
        animations[kept] = nil
        if let a = animations.removeValue(forKey: repeated) {
            animationSeq &+= 1
            animations[kept] = AnimationState(kind: a.kind, endsAt: a.endsAt, seq: animationSeq)
            animationHeap.push(.init(endsAt: a.endsAt, slot: kept, seq: animationSeq))
        }
        table.freeUnindexed(repeated)
    }
}

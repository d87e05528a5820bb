/// Restoring a snapshot into a new layer: markers go into the marker table batch by batch and
/// the grid is built once, bottom-up, at the end (`GridIndex.bulkLoad`) instead of marker by
/// marker, which is several times faster for millions of markers.
extension MarkerLayer {
    /// True while restored markers wait for `finishRestore()` to build their grid: the layer
    /// holds markers but its grid was never touched (only `restore` leaves a layer so).
    public var hasDeferredGrid: Bool { table.count > 0 && grid.isPristine }

    /// Upserts like `upsert(_:now:)` (same validation, errors, table, styles, animations,
    /// counters and version), with the positions already projected if `world` is given
    /// (`world[i]` must be `WorldPoint(markers[i].position)`). Into a layer whose grid was never
    /// touched and that keeps no clusters, the grid is left for `finishRestore()`; otherwise
    /// this is a plain upsert. Until `finishRestore()`, nothing but `restore` may change the
    /// layer and no query may run on it.
    public mutating func restore(_ markers: [MarkerRecord], world: [WorldPoint]?, now: Int64) throws(MarkerdCoreError) -> UpsertResult {
        try upsert(markers, world: world, now: now, gridDeferred: grid.isPristine && clusters == nil)
    }

    /// Builds the grid of the markers `restore` left without one (nothing if there are none).
    /// The grid is the one inserting them one by one would give, up to the order of entries
    /// inside a leaf (see `GridIndex.bulkLoad`).
    public mutating func finishRestore() {
        guard hasDeferredGrid else { return }
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
}

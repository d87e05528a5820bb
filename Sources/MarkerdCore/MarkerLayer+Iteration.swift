extension MarkerLayer {
    /// Markers in slot order, starting at `fromSlot`, at most `limit` of them, and the slot to
    /// continue from (nil when done). For snapshots: call it repeatedly, releasing the layer's
    /// lock between calls; a marker that does not change between calls is returned exactly once.
    public func markers(fromSlot: Int, limit: Int) -> (markers: [MarkerRecord], next: Int?) {
        var out: [MarkerRecord] = []
        out.reserveCapacity(Swift.min(limit, table.count))
        var slot = Swift.max(0, fromSlot)
        let end = table.slotCount
        while slot < end && out.count < limit {
            if table.flags[slot] != 0 { out.append(record(Int32(slot))) }
            slot += 1
        }
        return (out, slot < end ? slot : nil)
    }
}

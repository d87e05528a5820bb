extension MarkerLayer {
    /// Markers in slot order, starting at `fromSlot`, at most `limit` of them, and the slot to
    /// continue from (nil when done). For snapshots and ListMarkers: call it repeatedly, releasing
    /// the layer's lock between calls; a marker that stays in the layer between calls (moved or
    /// updated or not: a marker keeps its slot until it is removed) is returned exactly once.
    /// `maxSlots` bounds the slots looked at (free ones too), so the work of one call is bounded
    /// even in a mostly empty table: the call may then return fewer than `limit` markers, or
    /// none, with a slot to continue from.
    public func markers(fromSlot: Int, limit: Int, maxSlots: Int = .max) -> (markers: [MarkerRecord], next: Int?) {
        var out: [MarkerRecord] = []
        out.reserveCapacity(Swift.min(limit, table.count))
        var slot = Swift.max(0, fromSlot)
        let end = table.slotCount
        let scanEnd = maxSlots >= end - slot ? end : slot + maxSlots
        while slot < scanEnd && out.count < limit {
            if table.flags[slot] != 0 { out.append(record(Int32(slot))) }
            slot += 1
        }
        return (out, slot < end ? slot : nil)
    }
}

extension MarkerLayer {
    /// The value of attribute `key` of the marker in `slot`, or nil when it has none. The one way
    /// label resolution (and other per-attribute readers) read attributes, whatever their storage.
    /// Cost: O(1) expected (two hash lookups).
    func attributeValue(_ key: String, slot: Int32) -> String? {
        guard table.flags[Int(slot)] & MarkerFlags.hasAttributes != 0 else { return nil }
        return attributes[slot]?[key]
    }
}

extension MarkerLayer {
    /// The slot of the marker `id`, or nil. Slots name markers within the layer until they are
    /// removed (then they are reused).
    public func slot(id: String) -> Int32? { table.find(id) }

    /// The marker in `slot` (a slot in use).
    public func record(slot: Int32) -> MarkerRecord { record(slot) }
}

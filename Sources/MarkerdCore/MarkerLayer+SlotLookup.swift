extension MarkerLayer {
    /// The marker in `slot` (a slot in use, e.g. from `slot(id:)` or a placed label).
    public func marker(slot: Int32) -> MarkerRecord { record(slot) }
}

extension MarkerLayer {
    /// The stored world position of the marker in `slot` (a slot in use).
    public func worldPosition(slot: Int32) -> WorldPoint { WorldPoint(x: table.x[Int(slot)], y: table.y[Int(slot)]) }
}

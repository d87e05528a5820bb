extension MarkerLayer {
    /// The marker in `slot` (a slot in use, e.g. from `slot(id:)` or a placed label).
    public func marker(slot: Int32) -> MarkerRecord { record(slot) }
}

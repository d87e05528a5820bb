/// Identifies a drag session within a layer. Its string form is "drag-<n>".
public struct DragID: Hashable, Sendable, CustomStringConvertible {
    public let rawValue: UInt64
    public init(rawValue: UInt64) { self.rawValue = rawValue }
    /// Parses "drag-<n>"; nil otherwise.
    public init?(_ string: String) {
        guard string.hasPrefix("drag-"), let n = UInt64(string.dropFirst(5)) else { return nil }
        rawValue = n
    }
    public var description: String { "drag-\(rawValue)" }
}

struct DragSession: Sendable {
    var slot: Int32
    var start: WorldPoint
}

extension MarkerLayer {
    /// Starts dragging a marker. Throws `.markerNotFound`, `.notDraggable` (FAILED_PRECONDITION)
    /// or `.alreadyDragging` (ABORTED). Does not change the version. Drag ids are assigned in
    /// sequence per layer, so replaying the same operations yields the same ids.
    public mutating func beginDrag(id: String) throws(MarkerdCoreError) -> (dragID: DragID, marker: MarkerRecord) {
        guard let slot = table.find(id) else { throw .markerNotFound(id: id) }
        let s = Int(slot)
        let f = table.flags[s]
        if f & MarkerFlags.draggable == 0 { throw .notDraggable(id: id) }
        if f & MarkerFlags.dragging != 0, let d = dragOfSlot[slot] { throw .alreadyDragging(id: id, dragID: d) }
        let d = DragID(rawValue: nextDragNumber)
        nextDragNumber &+= 1
        drags[d] = DragSession(slot: slot, start: WorldPoint(x: table.x[s], y: table.y[s]))
        dragOfSlot[slot] = d
        table.flags[s] = f | MarkerFlags.dragging
        return (d, record(slot))
    }

    /// Moves the dragged marker: O(1) (two hash lookups and a grid move). Version + 1.
    /// Throws `.dragNotFound` or `.invalidArgument` for a bad position.
    public mutating func dragTo(_ drag: DragID, _ position: LatLng) throws(MarkerdCoreError) {
        try position.validate(field: "position (\(drag))")
        guard let session = drags[drag] else { throw .dragNotFound(drag) }
        moveSlot(session.slot, to: WorldPoint(position))
        version &+= 1
    }

    /// Ends a drag at `final` (nil: where the last `dragTo` left it). Returns the marker.
    /// Version + 1. Throws `.dragNotFound` or `.invalidArgument`.
    public mutating func endDrag(_ drag: DragID, at final: LatLng? = nil) throws(MarkerdCoreError) -> MarkerRecord {
        if let final { try final.validate(field: "position (\(drag))") }
        guard let session = drags[drag] else { throw .dragNotFound(drag) }
        if let final { moveSlot(session.slot, to: WorldPoint(final)) }
        dropDragSession(session.slot)
        version &+= 1
        return record(session.slot)
    }

    /// Cancels a drag: the marker goes back to where it was when the drag began. Version + 1.
    /// Throws `.dragNotFound`.
    public mutating func cancelDrag(_ drag: DragID) throws(MarkerdCoreError) -> MarkerRecord {
        guard let session = drags[drag] else { throw .dragNotFound(drag) }
        moveSlot(session.slot, to: session.start)
        dropDragSession(session.slot)
        version &+= 1
        return record(session.slot)
    }

    /// The id the next `beginDrag` assigns.
    public var nextDragID: DragID { DragID(rawValue: nextDragNumber) }

    /// The marker id of an open drag, or nil.
    public func draggedMarkerID(_ drag: DragID) -> String? {
        drags[drag].map { table.id($0.slot) }
    }

    /// Open drag sessions.
    public var activeDragCount: Int { drags.count }

    /// The open drag sessions by id: the dragged marker's id and where it was when the drag
    /// began (for cluster snapshots).
    public var openDrags: [(id: DragID, markerID: String, start: WorldPoint)] {
        drags.sorted { $0.key.rawValue < $1.key.rawValue }.map { ($0.key, table.id($0.value.slot), $0.value.start) }
    }

    /// Reopens a drag session a snapshot recorded (`openDrags`), after the layer's markers
    /// (it finishes their restore first: the id index is built there). Throws `.markerNotFound`.
    public mutating func restoreDrag(_ d: DragID, markerID: String, start: WorldPoint) throws(MarkerdCoreError) {
        finishRestore()
        guard let slot = table.find(markerID) else { throw .markerNotFound(id: markerID) }
        drags[d] = DragSession(slot: slot, start: start)
        dragOfSlot[slot] = d
        table.flags[Int(slot)] |= MarkerFlags.dragging
    }

    mutating func dropDragSession(_ slot: Int32) {
        if let d = dragOfSlot.removeValue(forKey: slot) { drags[d] = nil }
        table.flags[Int(slot)] &= ~MarkerFlags.dragging
    }
}

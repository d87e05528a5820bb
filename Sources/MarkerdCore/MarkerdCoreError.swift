/// Every error MarkerdCore throws. Messages name the marker and/or the field at fault.
///
/// Suggested mapping to API status codes (done by the service):
/// - `.invalidArgument`, `.invalidPageToken` -> INVALID_ARGUMENT
/// - `.markerNotFound`, `.dragNotFound` -> NOT_FOUND
/// - `.notDraggable` -> FAILED_PRECONDITION
/// - `.alreadyDragging` -> ABORTED
public enum MarkerdCoreError: Error, Equatable, Sendable, CustomStringConvertible {
    /// A field failed validation. `field` names it, e.g. `markers[3] (id "bus-7").position.latitude`.
    case invalidArgument(field: String, reason: String)
    /// A page token that this module did not produce (or from an incompatible version).
    case invalidPageToken(String)
    /// No marker with this id exists in the layer.
    case markerNotFound(id: String)
    /// `beginDrag` on a marker that is not draggable.
    case notDraggable(id: String)
    /// `beginDrag` on a marker that already has an open drag session.
    case alreadyDragging(id: String, dragID: DragID)
    /// The drag session does not exist (never began, ended, cancelled, or its marker was removed).
    case dragNotFound(DragID)

    public var description: String {
        switch self {
        case let .invalidArgument(field, reason): return "invalid \(field): \(reason)"
        case let .invalidPageToken(token): return "invalid page token \"\(token.prefix(64))\""
        case let .markerNotFound(id): return "marker \"\(id)\" not found"
        case let .notDraggable(id): return "marker \"\(id)\" is not draggable"
        case let .alreadyDragging(id, dragID): return "marker \"\(id)\" is already being dragged (\(dragID))"
        case let .dragNotFound(dragID): return "drag \(dragID) not found"
        }
    }
}

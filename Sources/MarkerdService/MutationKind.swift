/// The mutating methods. Each needs an idempotency key; all but BeginDrag and CancelDrag are
/// journaled (drag sessions live in memory only; EndDrag is journaled as the move it makes).
public enum MutationKind: String, CaseIterable, Sendable {
    case createLayer = "CreateLayer"
    case deleteLayer = "DeleteLayer"
    case registerIcon = "RegisterIcon"
    case upsertMarkers = "UpsertMarkers"
    case updateMarkers = "UpdateMarkers"
    case removeMarkers = "RemoveMarkers"
    case clearLayer = "ClearLayer"
    case moveMarkers = "MoveMarkers"
    case beginDrag = "BeginDrag"
    case endDrag = "EndDrag"
    case cancelDrag = "CancelDrag"
    case createFence = "CreateFence"
    case deleteFence = "DeleteFence"

    public static let prefix = "/markerd.v1.MarkerService/"

    /// "/markerd.v1.MarkerService/UpsertMarkers".
    public var methodName: String { Self.prefix + rawValue }

    /// The kind for a full method name, e.g. from a journal record.
    public init?(methodName: String) {
        guard methodName.hasPrefix(Self.prefix) else { return nil }
        self.init(rawValue: String(methodName.dropFirst(Self.prefix.count)))
    }
}

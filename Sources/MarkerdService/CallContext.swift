/// What the server knows about one call besides its payload.
public struct CallContext: Sendable {
    /// Full method name, e.g. "/markerd.v1.MarkerService/UpsertMarkers".
    public var method: String
    /// Required for mutations (see `Request.idempotency_key`); empty for reads.
    public var idempotencyKey: String
    /// When the call must have been applied by; `nil` = no deadline. Measured on the
    /// monotonic clock from the moment the request was received.
    public var deadline: ContinuousClock.Instant?
    /// The layers the caller may read (its token's, with `--auth-file`): ListLayers lists only
    /// those. nil: every layer.
    public var mayRead: (@Sendable (String) -> Bool)?

    public init(method: String, idempotencyKey: String = "", deadline: ContinuousClock.Instant? = nil,
                mayRead: (@Sendable (String) -> Bool)? = nil) {
        self.method = method
        self.idempotencyKey = idempotencyKey
        self.deadline = deadline
        self.mayRead = mayRead
    }

    /// Throws DEADLINE_EXCEEDED when the deadline has passed; call before doing the work.
    public func checkDeadline() throws(RPCError) {
        if let deadline, ContinuousClock.now >= deadline {
            throw .deadlineExceeded("deadline expired before \(shortMethod) was applied")
        }
    }

    /// "UpsertMarkers" for "/markerd.v1.MarkerService/UpsertMarkers".
    public var shortMethod: Substring {
        method.split(separator: "/").last ?? Substring(method)
    }
}

import MarkerdAPI

/// A failed call: a gRPC canonical status code and a message for the caller.
///
/// Every method of ``MarkerService`` throws this type only; the server copies `code` and
/// `message` into the response envelope.
public struct RPCError: Error, Equatable, CustomStringConvertible, Sendable {
    public var code: V1.Code
    public var message: String

    public init(_ code: V1.Code, _ message: String) {
        self.code = code
        self.message = message
    }

    public var description: String { "\(code.name): \(message)" }

    public static func invalidArgument(_ message: String) -> RPCError { RPCError(.invalidArgument, message) }
    public static func notFound(_ message: String) -> RPCError { RPCError(.notFound, message) }
    public static func alreadyExists(_ message: String) -> RPCError { RPCError(.alreadyExists, message) }
    public static func failedPrecondition(_ message: String) -> RPCError { RPCError(.failedPrecondition, message) }
    public static func aborted(_ message: String) -> RPCError { RPCError(.aborted, message) }
    public static func deadlineExceeded(_ message: String) -> RPCError { RPCError(.deadlineExceeded, message) }
    public static func unavailable(_ message: String) -> RPCError { RPCError(.unavailable, message) }
    public static func `internal`(_ message: String) -> RPCError { RPCError(.internal, message) }
    public static func resourceExhausted(_ message: String) -> RPCError { RPCError(.resourceExhausted, message) }
}

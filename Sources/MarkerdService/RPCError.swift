import MarkerdAPI

/// A failed call: a gRPC canonical status code, a message for the caller and, for invalid
/// arguments, the request fields at fault.
///
/// Every method of ``MarkerService`` throws this type only; the server copies `code`, `message`
/// and `fieldViolations` into the response envelope.
public struct RPCError: Error, Equatable, CustomStringConvertible, Sendable {
    public var code: V1.Code
    public var message: String
    /// The request fields at fault (`Response.field_violations`); empty unless the error names one.
    public var fieldViolations: [V1.FieldViolation]

    public init(_ code: V1.Code, _ message: String, fieldViolations: [V1.FieldViolation] = []) {
        self.code = code
        self.message = message
        self.fieldViolations = fieldViolations
    }

    public var description: String { "\(code.name): \(message)" }

    public static func invalidArgument(_ message: String) -> RPCError { RPCError(.invalidArgument, message) }
    /// INVALID_ARGUMENT naming `field`, the path of the field at fault in the request message
    /// (e.g. "markers[2].position.latitude"); its violation's description is `message`.
    public static func invalidArgument(_ message: String, field: String) -> RPCError {
        RPCError(.invalidArgument, message, fieldViolations: [V1.FieldViolation(field: field, description: message)])
    }
    public static func notFound(_ message: String) -> RPCError { RPCError(.notFound, message) }
    public static func alreadyExists(_ message: String) -> RPCError { RPCError(.alreadyExists, message) }
    public static func failedPrecondition(_ message: String) -> RPCError { RPCError(.failedPrecondition, message) }
    public static func aborted(_ message: String) -> RPCError { RPCError(.aborted, message) }
    public static func deadlineExceeded(_ message: String) -> RPCError { RPCError(.deadlineExceeded, message) }
    public static func unavailable(_ message: String) -> RPCError { RPCError(.unavailable, message) }
    public static func `internal`(_ message: String) -> RPCError { RPCError(.internal, message) }
    public static func resourceExhausted(_ message: String) -> RPCError { RPCError(.resourceExhausted, message) }
}

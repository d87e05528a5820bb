internal import CNNG

/// A failed NNG operation: nng's status code, nng's text for it (`nng_strerror`), and which
/// operation failed.
///
/// Equality (and hashing) compares only ``code``, so callers branch with the static members:
/// `catch let error where error == .timedOut` or `switch error { case .closed: ... }`.
public struct NNGError: Error, Hashable, CustomStringConvertible, Sendable {
    /// nng's status code (`NNG_E*`; may carry the `NNG_ESYSERR` / `NNG_ETRANERR` bits).
    public let code: Int32
    /// The failing operation, e.g. `"nng_listener_start(tcp://127.0.0.1:7450)"`. Empty for the
    /// static members.
    public let operation: String

    public init(code: Int32, operation: String = "") {
        self.code = code
        self.operation = operation
    }

    /// nng's human-readable text for ``code``.
    public var message: String { String(cString: nng_strerror(code)) }

    /// For `NNG_ESYSERR` codes, the underlying `errno`; otherwise nil.
    public var systemErrno: Int32? {
        let sys = Int32(cnng_errno(NNG_ESYSERR))
        return code & sys != 0 ? code & ~sys : nil
    }

    public var description: String {
        operation.isEmpty ? "nng error \(code): \(message)" : "\(operation): \(message) (nng error \(code))"
    }

    public static func == (lhs: NNGError, rhs: NNGError) -> Bool { lhs.code == rhs.code }
    public func hash(into hasher: inout Hasher) { hasher.combine(code) }

    private static func code(_ e: nng_errno_enum) -> NNGError { NNGError(code: Int32(cnng_errno(e))) }

    public static let interrupted = code(NNG_EINTR)
    public static let outOfMemory = code(NNG_ENOMEM)
    public static let invalidArgument = code(NNG_EINVAL)
    public static let busy = code(NNG_EBUSY)
    /// An aio or receive timeout expired (`NNG_ETIMEDOUT`).
    public static let timedOut = code(NNG_ETIMEDOUT)
    public static let connectionRefused = code(NNG_ECONNREFUSED)
    /// The socket, context or client was closed (`NNG_ECLOSED`).
    public static let closed = code(NNG_ECLOSED)
    public static let tryAgain = code(NNG_EAGAIN)
    public static let notSupported = code(NNG_ENOTSUP)
    /// Listening address already in use (`NNG_EADDRINUSE`).
    public static let addressInUse = code(NNG_EADDRINUSE)
    /// Operation not valid in the current state (`NNG_ESTATE`), e.g. starting a server twice.
    public static let invalidState = code(NNG_ESTATE)
    public static let notFound = code(NNG_ENOENT)
    public static let protocolError = code(NNG_EPROTO)
    public static let unreachable = code(NNG_EUNREACHABLE)
    /// Malformed or unsupported URL (`NNG_EADDRINVAL`).
    public static let addressInvalid = code(NNG_EADDRINVAL)
    public static let permissionDenied = code(NNG_EPERM)
    /// Message larger than the receive limit (`NNG_EMSGSIZE`).
    public static let messageTooLarge = code(NNG_EMSGSIZE)
    public static let connectionAborted = code(NNG_ECONNABORTED)
    public static let connectionReset = code(NNG_ECONNRESET)
    /// The operation was cancelled (`NNG_ECANCELED`).
    public static let canceled = code(NNG_ECANCELED)
    /// The peer shut the connection down (`NNG_ECONNSHUT`).
    public static let connectionShutdown = code(NNG_ECONNSHUT)
    public static let internalError = code(NNG_EINTERNAL)
    /// A TLS handshake failed (`NNG_ECRYPTO`), e.g. a server certificate the client does not
    /// trust, an expired one, or a server that wants a client certificate.
    public static let cryptographic = code(NNG_ECRYPTO)
    /// The peer could not be authenticated (`NNG_EPEERAUTH`).
    public static let peerAuthentication = code(NNG_EPEERAUTH)
}

/// Turns an nng status into a throw: 0 returns, anything else throws ``NNGError``.
@inline(__always)
func nngCheck(_ status: Int32, _ operation: @autoclosure () -> String) throws(NNGError) {
    if status != 0 { throw NNGError(code: status, operation: operation()) }
}

/// Milliseconds for nng (`nng_duration`), rounded up so a positive duration never becomes 0
/// (which nng treats as "poll"); negative durations become 0; huge ones clamp to `Int32.max`.
func nngMilliseconds(_ duration: Duration) -> Int32 {
    let (seconds, attoseconds) = duration.components
    if seconds < 0 || (seconds == 0 && attoseconds <= 0) { return 0 }
    if seconds >= Int64(Int32.max / 1000) { return Int32.max }
    let ms = seconds * 1000 + (attoseconds + 999_999_999_999_999) / 1_000_000_000_000_000
    return Int32(min(ms, Int64(Int32.max)))
}

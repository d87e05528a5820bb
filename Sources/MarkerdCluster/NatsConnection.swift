internal import CNats
import Glibc

/// A failed NATS or JetStream call: the library's status code and its text.
public struct NatsError: Error, CustomStringConvertible, Sendable {
    /// The `natsStatus` value (`NATS_OK` is 0, never an error).
    public let status: Int32
    /// What was being done, e.g. "connect to nats://127.0.0.1:4222".
    public let operation: String
    /// The library's text for `status`, plus its last error detail when it has one.
    public let message: String

    public var description: String { "NATS: \(operation) failed: \(message)" }

    init(_ s: natsStatus, _ operation: String) {
        self.status = Int32(bitPattern: s.rawValue)
        self.operation = operation
        var text = String(cString: natsStatus_GetText(s))
        var last = NATS_OK
        if let detail = nats_GetLastError(&last), last == s {
            let d = String(cString: detail)
            if !d.isEmpty && d != text { text += " (\(d))" }
        }
        self.message = text
    }

    /// Throws when `s` is not `NATS_OK`.
    static func check(_ s: natsStatus, _ operation: @autoclosure () -> String) throws(NatsError) {
        if s != NATS_OK { throw NatsError(s, operation()) }
    }
}

/// One connection to a NATS cluster with its JetStream context.
///
/// The client reconnects by itself (to any of `servers`, forever, every `reconnectWaitMs`) and
/// buffers publishes while it does; JetStream calls made meanwhile fail with a timeout, which
/// callers treat as "not acknowledged". Thread-safe (libnats locks internally). `close()` is
/// idempotent and also runs on deinit.
public final class NatsConnection: @unchecked Sendable {
    /// The library's connection; valid until `close()`.
    let connection: OpaquePointer
    /// The JetStream context over `connection`.
    let jetStream: OpaquePointer
    private var closed = false

    /// Connects to the first reachable of `servers` (`nats://host:port`, several for a cluster).
    ///
    /// - Parameters:
    ///   - name: the client name the servers show (`markerd-<node>`).
    ///   - timeoutMs: how long a JetStream call waits for its acknowledgement (default 5,000 ms).
    ///   - reconnectWaitMs: pause between reconnect attempts (default 250 ms).
    /// - Throws: `NatsError` when no server answers.
    public init(servers: [String], name: String, timeoutMs: Int64 = 5_000, reconnectWaitMs: Int64 = 250) throws(NatsError) {
        var opts: OpaquePointer?
        try NatsError.check(natsOptions_Create(&opts), "create NATS options")
        defer { natsOptions_Destroy(opts) }
        var cStrings = servers.map { strdup($0) }
        defer { cStrings.forEach { free($0) } }
        let s = cStrings.withUnsafeMutableBufferPointer { buf in
            buf.baseAddress!.withMemoryRebound(to: UnsafePointer<CChar>?.self, capacity: buf.count) {
                natsOptions_SetServers(opts, $0, Int32(buf.count))
            }
        }
        try NatsError.check(s, "set NATS servers \(servers)")
        try NatsError.check(natsOptions_SetName(opts, name), "set NATS client name")
        try NatsError.check(natsOptions_SetMaxReconnect(opts, -1), "set NATS reconnects")
        try NatsError.check(natsOptions_SetReconnectWait(opts, reconnectWaitMs), "set NATS reconnect wait")
        var nc: OpaquePointer?
        try NatsError.check(natsConnection_Connect(&nc, opts), "connect to \(servers.joined(separator: ","))")
        var jsOpts = jsOptions()
        jsOptions_Init(&jsOpts)
        jsOpts.Wait = timeoutMs
        var js: OpaquePointer?
        let j = natsConnection_JetStream(&js, nc, &jsOpts)
        if j != NATS_OK { natsConnection_Destroy(nc); throw NatsError(j, "open JetStream context") }
        self.connection = nc!
        self.jetStream = js!
    }

    /// Closes the connection (pending publishes are flushed first by the library). Idempotent.
    public func close() {
        guard !closed else { return }
        closed = true
        jsCtx_Destroy(jetStream)
        natsConnection_Close(connection)
        natsConnection_Destroy(connection)
    }

    deinit { close() }
}

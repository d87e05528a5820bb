internal import CNNG
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Dispatch
import Synchronization

/// Settings for ``NNGHTTPServer``.
public struct HTTPServerConfiguration: Sendable, Equatable {
    /// Where to listen: `"127.0.0.1:8080"`, `"[::1]:8080"`, `"localhost:8080"` or the same with an
    /// `http://` prefix. Port 0 picks a free port: read it back from ``NNGHTTPServer/boundPort``.
    public var address: String
    /// The path tree served (every path at or below it; others get `404 Not Found`). Default
    /// `"/"`: everything.
    public var pathPrefix: String
    /// Methods handed to the handler; any other is answered `405 Method Not Allowed` (with an
    /// `Allow` header and ``defaultHeaders``) without calling the handler. nil: every method.
    /// Default GET and HEAD.
    public var allowedMethods: [String]?
    /// Added to every response the server sends on the handler's behalf or that the handler
    /// sends (a handler header of the same name wins), e.g. `Access-Control-Allow-Origin: *`.
    public var defaultHeaders: [HTTPHeader]
    /// Largest request body read (then discarded: handlers see no body). A longer one is
    /// answered `413 Content Too Large` and the connection closed. Default 64 KiB.
    public var maxRequestBodyBytes: Int
    /// Longest request line (method, target, version) in bytes; a longer one is answered
    /// `414 URI Too Long` and the connection closed. Default 8 KiB.
    public var maxRequestLineBytes: Int
    /// Largest header section (all header field lines) in bytes; a larger one is answered
    /// `431 Request Header Fields Too Large` and the connection closed. Default 32 KiB.
    public var maxHeaderBytes: Int
    /// How long a client may take to send a whole request (head and body) once its first byte
    /// has arrived; then it is answered `408 Request Timeout` and the connection closed (this
    /// bounds slowloris clients). Default 10 s.
    public var headerTimeout: Duration
    /// How long a connection may sit without a request in progress (after it was opened or after
    /// the last response) before the server closes it without a response; also how long
    /// writing a response may stall (a client that stops reading). Default 60 s.
    public var idleTimeout: Duration
    /// Connections open at once (each has a thread of its own while open). One over it is
    /// answered `503 Service Unavailable` and closed (just closed while 64 such answers are
    /// already being written). Default 1024.
    public var maxConnections: Int

    public init(address: String = "127.0.0.1:8080", pathPrefix: String = "/",
                allowedMethods: [String]? = ["GET", "HEAD"],
                defaultHeaders: [HTTPHeader] = [], maxRequestBodyBytes: Int = 64 << 10,
                maxRequestLineBytes: Int = 8 << 10, maxHeaderBytes: Int = 32 << 10,
                headerTimeout: Duration = .seconds(10), idleTimeout: Duration = .seconds(60),
                maxConnections: Int = 1024, tls: TLSServerFiles? = nil) {
        self.address = address
        self.tls = tls
        self.pathPrefix = pathPrefix
        self.allowedMethods = allowedMethods
        self.defaultHeaders = defaultHeaders
        self.maxRequestBodyBytes = maxRequestBodyBytes
        self.maxRequestLineBytes = maxRequestLineBytes
        self.maxHeaderBytes = maxHeaderBytes
        self.headerTimeout = headerTimeout
        self.idleTimeout = idleTimeout
        self.maxConnections = maxConnections
    }

    /// Serve HTTPS with this certificate (TLS 1.2 through nng's mbedTLS); nil (the default):
    /// plain HTTP. Read at ``NNGHTTPServer/start()`` and again at ``NNGHTTPServer/reloadTLS()``.
    public var tls: TLSServerFiles?

    /// `address` as a URL: `http://host:port`, or `https://host:port` with ``tls``.
    public var url: String { (tls == nil ? "http://" : "https://") + hostPort }

    /// `address` without an `http://` or `https://` prefix.
    var hostPort: String {
        for prefix in ["http://", "https://"] where address.hasPrefix(prefix) { return String(address.dropFirst(prefix.count)) }
        return address
    }

    var headLimits: HTTPRequestHead.Limits {
        HTTPRequestHead.Limits(requestLineBytes: maxRequestLineBytes, headerBytes: maxHeaderBytes)
    }
}

/// Receives every request of an ``NNGHTTPServer``.
public protocol HTTPRequestHandler: Sendable {
    /// Called on the server's handler queue (never on an nng thread), once per request. Respond
    /// with ``HTTPResponder/respond(_:)`` now or later, from any thread. A responder dropped
    /// without a response answers `500 Internal Server Error`.
    func handle(_ request: HTTPRequest, responder: HTTPResponder)
}

/// A closure as an ``HTTPRequestHandler``.
public struct HTTPHandlerClosure: HTTPRequestHandler {
    let body: @Sendable (HTTPRequest, HTTPResponder) -> Void
    public init(_ body: @escaping @Sendable (HTTPRequest, HTTPResponder) -> Void) { self.body = body }
    public func handle(_ request: HTTPRequest, responder: HTTPResponder) { body(request, responder) }
}

/// Counters of an ``NNGHTTPServer`` since ``NNGHTTPServer/start()``.
public struct HTTPServerStatistics: Sendable, Equatable {
    /// Requests read completely (including those answered 404, 405 or 503 by the server).
    public var received: Int
    /// Responses written or being written (by handlers, the 404/405/503 paths, dropped
    /// responders and stop; not the ``refused`` ones).
    public var responded: Int
    /// Requests answered 405 without calling the handler.
    public var methodNotAllowed: Int
    /// Requests answered 500 because their responder was dropped without a response.
    public var dropped: Int
    /// Requests answered 503 by ``NNGHTTPServer/stop(drainTimeout:)`` (still pending after the
    /// drain) or because they arrived while stopping.
    public var answeredByStop: Int
    /// Requests currently handed to the handler and not yet responded to.
    public var inFlight: Int
    /// Requests the server refused before they were complete, then closed the connection:
    /// malformed (400), too long (413, 414, 431), a transfer coding (501), a version other than
    /// HTTP/1.x (505), or too many connections (503).
    public var refused: Int
    /// Connections closed by ``HTTPServerConfiguration/headerTimeout`` (answered 408).
    public var headerTimeouts: Int
    /// Connections closed by ``HTTPServerConfiguration/idleTimeout`` (idle, or a stalled write).
    public var idleTimeouts: Int
    /// Connections open now.
    public var connections: Int
}

/// The way to answer one ``HTTPRequest``: call ``respond(_:)`` once, from any thread.
public final class HTTPResponder: Sendable {
    let core: HTTPServerCore
    let id: UInt64
    private let done = Atomic<Bool>(false)

    init(core: HTTPServerCore, id: UInt64) {
        self.core = core
        self.id = id
    }

    deinit {
        if !done.load(ordering: .acquiring) {
            core.dropped.add(1, ordering: .relaxed)
            _ = core.complete(id, .text(500, "no response\n"))
        }
    }

    /// Sends `response`. Returns false (and does nothing) if already responded or if the server
    /// answered the request itself meanwhile (stopped). Never blocks on the network.
    @discardableResult
    public func respond(_ response: HTTPResponse) -> Bool {
        guard done.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return false }
        return core.complete(id, response)
    }
}

/// Where a connection thread waits for the response to its request.
final class ResponseSlot: Sendable {
    private let value = Mutex<HTTPResponse?>(nil)
    private let ready = DispatchSemaphore(value: 0)

    func fill(_ response: HTTPResponse) {
        value.withLock { $0 = response }
        ready.signal()
    }

    func wait() -> HTTPResponse {
        ready.wait()
        return value.withLock { $0 } ?? .text(500, "no response\n")
    }
}

/// Shared by the server, its connections and responders: pending requests, live connections,
/// counters.
final class HTTPServerCore: @unchecked Sendable {
    let configuration: HTTPServerConfiguration
    let handler: any HTTPRequestHandler
    let queue: DispatchQueue
    private let lock = ConditionLock()
    private var pending: [UInt64: ResponseSlot] = [:]          // guarded by lock: request id -> its slot
    private var nextID: UInt64 = 0                              // guarded by lock
    private var accepting = true                                // guarded by lock
    private var connections: [ObjectIdentifier: HTTPConnection] = [:]  // guarded by lock
    let received = Atomic<Int>(0)
    let responded = Atomic<Int>(0)
    let methodNotAllowed = Atomic<Int>(0)
    let dropped = Atomic<Int>(0)
    let answeredByStop = Atomic<Int>(0)
    let refused = Atomic<Int>(0)
    let headerTimeouts = Atomic<Int>(0)
    let idleTimeouts = Atomic<Int>(0)
    /// Connections over the limit being answered 503 now (each by a thread for at most ~3 s).
    let refusing = Atomic<Int>(0)
    static let maxRefusing = 64
    private let allowed: Set<String>?
    private let allowHeader: String
    private let prefix: String

    init(configuration: HTTPServerConfiguration, handler: any HTTPRequestHandler, queue: DispatchQueue) {
        self.configuration = configuration
        self.handler = handler
        self.queue = queue
        self.allowed = configuration.allowedMethods.map(Set.init)
        self.allowHeader = (configuration.allowedMethods ?? []).joined(separator: ", ")
        self.prefix = configuration.pathPrefix.hasSuffix("/") ? String(configuration.pathPrefix.dropLast())
                                                                : configuration.pathPrefix
    }

    var inFlight: Int { lock.withLock { pending.count } }
    var connectionCount: Int { lock.withLock { connections.count } }
    var isStopping: Bool { lock.withLock { !accepting } }

    /// Registers a new connection; false when stopping or at ``HTTPServerConfiguration/maxConnections``.
    func admit(_ connection: HTTPConnection) -> Bool {
        lock.withLock {
            guard accepting, connections.count < configuration.maxConnections else { return false }
            connections[ObjectIdentifier(connection)] = connection
            return true
        }
    }

    /// Forgets a connection (its thread is about to free the stream). After this, stop no longer touches it.
    func remove(_ connection: HTTPConnection) {
        lock.withLock {
            connections[ObjectIdentifier(connection)] = nil
            if connections.isEmpty { lock.broadcast() }
        }
    }

    /// Answers one complete request: 404 outside the path prefix, 405 for a method not allowed,
    /// 503 while stopping, otherwise the handler's response. Blocks the connection's thread
    /// until the response exists.
    func respond(to request: HTTPRequest) -> HTTPResponse {
        received.add(1, ordering: .relaxed)
        let path = request.path
        guard prefix.isEmpty || path == prefix || path.hasPrefix(prefix + "/") else {
            return .text(404, "not found\n")
        }
        let slot = ResponseSlot()
        let id: UInt64? = lock.withLock {
            guard accepting else { return nil }
            nextID &+= 1
            pending[nextID] = slot
            return nextID
        }
        guard let id else {
            answeredByStop.add(1, ordering: .relaxed)
            return .text(503, "server stopping\n")
        }
        hand(request, to: HTTPResponder(core: self, id: id))
        return slot.wait()
    }

    /// Gives the request to the handler, or answers 405. Holds no reference to `responder`
    /// once it returns, so a responder the handler drops answers 500 at once.
    private func hand(_ request: HTTPRequest, to responder: consuming HTTPResponder) {
        if let allowed, !allowed.contains(request.method) {
            methodNotAllowed.add(1, ordering: .relaxed)
            responder.respond(.text(405, "method \(request.method) not allowed\n", headers: [HTTPHeader("Allow", allowHeader)]))
        } else {
            let handler = self.handler
            let r = responder
            queue.async { handler.handle(request, responder: r) }
        }
    }

    /// Answers request `id` if it is still pending. Returns false if it was answered already.
    func complete(_ id: UInt64, _ response: HTTPResponse) -> Bool {
        let slot: ResponseSlot? = lock.withLock {
            let slot = pending.removeValue(forKey: id)
            if pending.isEmpty { lock.broadcast() }
            return slot
        }
        guard let slot else { return false }
        slot.fill(response)
        return true
    }

    /// Stop accepting, close idle connections, wait up to `timeout` for pending requests,
    /// answer the rest with 503, then give connections `flushGrace` to write their last
    /// responses before closing every one still open.
    func drain(timeout: Duration) {
        let deadline = ContinuousClock.now + timeout
        let leftover: [ResponseSlot] = lock.withLock {
            accepting = false
            for c in connections.values { c.closeIfIdle() }
            while !pending.isEmpty {
                let left = deadline - .now
                if left <= .zero { break }
                _ = lock.wait(timeout: left)
            }
            defer { pending = [:] }
            return Array(pending.values)
        }
        for slot in leftover {
            answeredByStop.add(1, ordering: .relaxed)
            slot.fill(.text(503, "server stopping\n"))
        }
        lock.withLock {
            let until = ContinuousClock.now + Self.flushGrace
            while !connections.isEmpty {
                let left = until - .now
                if left <= .zero { break }
                _ = lock.wait(timeout: left)
            }
            for c in connections.values { c.close() }
        }
    }

    /// How long stop lets connections finish writing their last response.
    static let flushGrace: Duration = .seconds(1)
}

/// An HTTP/1.1 server on nng's TCP streams (libnng 1.5.2): nng accepts and moves the bytes, this
/// type reads and checks each request itself (nng's own HTTP server closes the connection
/// without a status when a request line or header exceeds its 8 KiB buffer, and never times a
/// client out). One thread per connection reads a request, hands an ``HTTPRequest`` to the
/// ``HTTPRequestHandler`` on a dispatch queue, waits for the ``HTTPResponder``'s answer (given
/// from any thread, at any time) and writes it; keep-alive and pipelined requests are served in
/// order.
///
/// What clients see besides the handler's responses: `400` for a malformed request, `404`
/// outside ``HTTPServerConfiguration/pathPrefix``, `405` for a method not allowed, `408` after
/// ``HTTPServerConfiguration/headerTimeout``, `413`/`414`/`431` past the size limits, `501` for
/// a request with `Transfer-Encoding`, `503` while stopping or over
/// ``HTTPServerConfiguration/maxConnections``, `505` for HTTP versions other than 1.0 and 1.1.
/// Every one of those but 404 and 405 closes the connection after the response; an idle
/// connection is closed without one after ``HTTPServerConfiguration/idleTimeout``.
///
/// Thread-safe. `start()` and `stop(drainTimeout:)` must not be called from a handler.
public final class NNGHTTPServer: @unchecked Sendable {
    private enum Lifecycle { case new, running, stopped }

    public let configuration: HTTPServerConfiguration
    private let core: HTTPServerCore
    private let lock = ConditionLock()
    private var lifecycle = Lifecycle.new          // guarded by lock
    private var listener: OpaquePointer?           // guarded by lock: nng_stream_listener *
    private var acceptThreadDone: DispatchSemaphore?  // guarded by lock
    private var port = 0                           // guarded by lock

    /// - Parameters:
    ///   - queue: where `handler` runs. Default: a concurrent queue of its own.
    public init(configuration: HTTPServerConfiguration, queue: DispatchQueue? = nil,
                handler: any HTTPRequestHandler) {
        self.configuration = configuration
        self.core = HTTPServerCore(
            configuration: configuration, handler: handler,
            queue: queue ?? DispatchQueue(label: "markerd.http", qos: .userInitiated, attributes: .concurrent))
    }

    deinit { stop(drainTimeout: .zero) }

    /// The bound TCP port (the chosen one when the address said port 0). 0 before `start()`.
    public var boundPort: Int { lock.withLock { port } }

    /// `http://host:port` (`https://` with TLS) as bound (port 0 replaced by the bound port).
    /// Empty before `start()`.
    public var boundURL: String {
        lock.withLock {
            guard port != 0 else { return "" }
            let url = configuration.url
            guard let colon = url.lastIndex(of: ":"), url[url.index(after: colon)...].allSatisfy(\.isNumber) else {
                return url
            }
            return String(url[..<colon]) + ":" + String(port)
        }
    }

    public var statistics: HTTPServerStatistics {
        HTTPServerStatistics(received: core.received.load(ordering: .relaxed),
                             responded: core.responded.load(ordering: .relaxed),
                             methodNotAllowed: core.methodNotAllowed.load(ordering: .relaxed),
                             dropped: core.dropped.load(ordering: .relaxed),
                             answeredByStop: core.answeredByStop.load(ordering: .relaxed),
                             inFlight: core.inFlight,
                             refused: core.refused.load(ordering: .relaxed),
                             headerTimeouts: core.headerTimeouts.load(ordering: .relaxed),
                             idleTimeouts: core.idleTimeouts.load(ordering: .relaxed),
                             connections: core.connectionCount)
    }

    /// Listens and starts serving. Throws ``NNGError``: `.addressInvalid` for an address nng
    /// cannot parse or resolve, `.addressInUse` when the port is taken (by this process too),
    /// `.invalidArgument` for a bad path prefix or limit, `.invalidState` if started twice, a file
    /// or mbedTLS error for unreadable or invalid certificate files. On a throw nothing stays open.
    public func start() throws(NNGError) {
        lock.lock()
        defer { lock.unlock() }
        guard lifecycle == .new else { throw NNGError(code: NNGError.invalidState.code, operation: "NNGHTTPServer.start") }
        let config = configuration
        guard config.pathPrefix.hasPrefix("/"), config.maxRequestBodyBytes >= 0, config.maxRequestLineBytes > 0,
              config.maxHeaderBytes > 0, config.headerTimeout > .zero, config.idleTimeout > .zero,
              config.maxConnections > 0 else {
            throw NNGError(code: NNGError.invalidArgument.code, operation: "NNGHTTPServer.start(configuration)")
        }
        let tlsConfig = try config.tls.map { files throws(NNGError) in try TLSConfig(server: files) }
        let tcpURL = (tlsConfig == nil ? "tcp://" : "tls+tcp://") + config.hostPort
        var l: OpaquePointer?
        try nngCheck(nng_stream_listener_alloc(&l, tcpURL), "nng_stream_listener_alloc(\(tcpURL))")
        guard let l else { throw NNGError(code: NNGError.internalError.code, operation: "nng_stream_listener_alloc") }
        var bound: Int32 = 0
        do throws(NNGError) {
            if let tlsConfig {
                try nngCheck(nng_stream_listener_set_ptr(l, NNG_OPT_TLS_CONFIG, UnsafeMutableRawPointer(tlsConfig.pointer)),
                             "nng_stream_listener_set_ptr(\(tcpURL), \(NNG_OPT_TLS_CONFIG))")
            }
            try nngCheck(nng_stream_listener_listen(l), "nng_stream_listener_listen(\(tcpURL))")
            try nngCheck(nng_stream_listener_get_int(l, NNG_OPT_TCP_BOUND_PORT, &bound), "nng_stream_listener_get_int(bound port)")
        } catch {
            nng_stream_listener_free(l)
            throw error
        }
        let done = DispatchSemaphore(value: 0)
        let core = self.core
        let listenerBits = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(l)))
        guard detachThread(stackSize: 512 << 10, {
            Self.acceptLoop(OpaquePointer(bitPattern: listenerBits)!, core: core)
            done.signal()
        }) else {
            nng_stream_listener_free(l)
            throw NNGError(code: NNGError.outOfMemory.code, operation: "NNGHTTPServer.start: accept thread")
        }
        listener = l
        acceptThreadDone = done
        port = Int(bound)
        lifecycle = .running
    }

    /// Accepts until the listener is closed; each connection gets a thread of its own.
    private static func acceptLoop(_ listener: OpaquePointer, core: HTTPServerCore) {
        var aio: OpaquePointer?
        guard nng_aio_alloc(&aio, nil, nil) == 0, let aio else { return }
        defer { nng_aio_free(aio) }
        while true {
            nng_stream_listener_accept(listener, aio)
            nng_aio_wait(aio)
            let rv = nng_aio_result(aio)
            if rv == NNGError.closed.code { return }
            guard rv == 0, let raw = nng_aio_get_output(aio, 0) else {
                if core.isStopping { return }
                // E.g. out of file descriptors for a moment: keep serving, without spinning.
                nng_msleep(10)
                continue
            }
            let connection = HTTPConnection(stream: OpaquePointer(raw), core: core)
            guard core.admit(connection) else {
                core.refused.add(1, ordering: .relaxed)
                // On a short-lived thread of its own (the refusal lingers until the client has read
                // it), at most `maxRefusing` at once; past that the connection is just closed.
                guard core.refusing.add(1, ordering: .relaxed).newValue <= HTTPServerCore.maxRefusing else {
                    core.refusing.subtract(1, ordering: .relaxed)
                    connection.free()
                    continue
                }
                let response = HTTPResponse.text(503, core.isStopping ? "server stopping\n" : "too many connections\n")
                if !detachThread(stackSize: 128 << 10, {
                    connection.refuse(response)
                    core.refusing.subtract(1, ordering: .relaxed)
                }) {
                    core.refusing.subtract(1, ordering: .relaxed)
                    connection.free()
                }
                continue
            }
            if !detachThread(stackSize: 512 << 10, { connection.run() }) {
                core.remove(connection)
                connection.free()
            }
        }
    }

    /// Reads ``HTTPServerConfiguration/tls``'s files again and gives the listener the new
    /// certificate: connections accepted from now on use it, open ones keep theirs (see
    /// ``NNGReplyServer/reloadTLS()``). Throws, keeping the old certificate, when a file cannot
    /// be read or mbedTLS refuses it. Does nothing without TLS or when not running.
    public func reloadTLS() throws(NNGError) {
        lock.lock()
        defer { lock.unlock() }
        guard lifecycle == .running, let l = listener, let files = configuration.tls else { return }
        let fresh = try TLSConfig(server: files)
        try nngCheck(nng_stream_listener_set_ptr(l, NNG_OPT_TLS_CONFIG, UnsafeMutableRawPointer(fresh.pointer)),
                     "nng_stream_listener_set_ptr(\(NNG_OPT_TLS_CONFIG))")
        consumeArmedAccept(host: urlHost(configuration.url), port: port)
    }

    /// Stops taking requests: closes the listener and idle connections, waits up to
    /// `drainTimeout` for handlers to respond, answers the rest `503 Service Unavailable`, gives
    /// connections up to 1 s to write their last responses (each with `Connection: close`), then
    /// closes every connection. Later ``HTTPResponder/respond(_:)`` calls return false.
    /// Idempotent; blocks the caller.
    public func stop(drainTimeout: Duration = .seconds(5)) {
        lock.lock()
        defer { lock.unlock() }
        guard lifecycle == .running, let l = listener else { lifecycle = .stopped; return }
        lifecycle = .stopped
        nng_stream_listener_close(l)
        acceptThreadDone?.wait()
        nng_stream_listener_free(l)
        listener = nil
        core.drain(timeout: drainTimeout)
    }
}

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
    /// The path tree served (every path at or below it). Default `"/"`: everything.
    public var pathPrefix: String
    /// Methods handed to the handler; any other is answered `405 Method Not Allowed` (with an
    /// `Allow` header and ``defaultHeaders``) without calling the handler. nil: every method.
    /// Default GET and HEAD.
    public var allowedMethods: [String]?
    /// Request headers copied into ``HTTPRequest/headers`` (nng 1.5 cannot list them all).
    /// Default Host, If-None-Match, Origin, Accept, User-Agent.
    public var capturedHeaders: [String]
    /// Added to every response the server sends on the handler's behalf or that the handler
    /// sends (a handler header of the same name wins), e.g. `Access-Control-Allow-Origin: *`.
    public var defaultHeaders: [HTTPHeader]
    /// Largest request body read (then discarded: handlers see no body). A longer one gets nng's
    /// `400 Bad Request`. Default 64 KiB.
    public var maxRequestBodyBytes: Int

    public init(address: String = "127.0.0.1:8080", pathPrefix: String = "/",
                allowedMethods: [String]? = ["GET", "HEAD"],
                capturedHeaders: [String] = ["Host", "If-None-Match", "Origin", "Accept", "User-Agent"],
                defaultHeaders: [HTTPHeader] = [], maxRequestBodyBytes: Int = 64 << 10) {
        self.address = address
        self.pathPrefix = pathPrefix
        self.allowedMethods = allowedMethods
        self.capturedHeaders = capturedHeaders
        self.defaultHeaders = defaultHeaders
        self.maxRequestBodyBytes = maxRequestBodyBytes
    }

    /// `address` as an nng URL (`http://host:port`).
    public var url: String { address.hasPrefix("http://") ? address : "http://" + address }
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
    /// Requests nng handed to the server (including those answered 405 or 503 by the server).
    public var received: Int
    /// Responses handed to nng (by handlers, the 405/503 paths, dropped responders and stop).
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

/// Shared by the server, its responders and the nng handler (whose data pointer retains it).
final class HTTPServerCore: @unchecked Sendable {
    let configuration: HTTPServerConfiguration
    let handler: any HTTPRequestHandler
    let queue: DispatchQueue
    private let lock = ConditionLock()
    private var pending: [UInt64: OpaquePointer] = [:]  // guarded by lock: request id -> handler aio
    private var nextID: UInt64 = 0                      // guarded by lock
    private var accepting = true                        // guarded by lock
    let received = Atomic<Int>(0)
    let responded = Atomic<Int>(0)
    let methodNotAllowed = Atomic<Int>(0)
    let dropped = Atomic<Int>(0)
    let answeredByStop = Atomic<Int>(0)
    /// When the last response was handed to nng (stop gives its write a moment to flush).
    let lastFinish = Mutex<ContinuousClock.Instant?>(nil)
    private let allowed: Set<String>?
    private let allowHeader: String

    init(configuration: HTTPServerConfiguration, handler: any HTTPRequestHandler, queue: DispatchQueue) {
        self.configuration = configuration
        self.handler = handler
        self.queue = queue
        self.allowed = configuration.allowedMethods.map(Set.init)
        self.allowHeader = (configuration.allowedMethods ?? []).joined(separator: ", ")
    }

    var inFlight: Int { lock.withLock { pending.count } }

    /// The nng handler callback, on an nng thread: copy the request out, register the aio, hand
    /// off to the queue. Never blocks (one short lock).
    func received(aio: OpaquePointer) {
        received.add(1, ordering: .relaxed)
        guard let reqRaw = nng_aio_get_input(aio, 0) else {
            nng_aio_finish(aio, cnng_errno(NNG_EINVAL))
            return
        }
        let req = OpaquePointer(reqRaw)
        let method = nng_http_req_get_method(req).map { String(cString: $0) } ?? ""
        let target = nng_http_req_get_uri(req).map { String(cString: $0) } ?? "/"
        var headers: [String: String] = [:]
        for name in configuration.capturedHeaders {
            if let v = nng_http_req_get_header(req, name) { headers[name.lowercased()] = String(cString: v) }
        }
        let request = HTTPRequest(method: method, target: target, headers: headers)

        lock.lock()
        guard accepting else {
            lock.unlock()
            answeredByStop.add(1, ordering: .relaxed)
            finish(aio, .text(503, "server stopping\n"))
            return
        }
        nextID &+= 1
        let id = nextID
        pending[id] = aio
        lock.unlock()

        let responder = HTTPResponder(core: self, id: id)
        if let allowed, !allowed.contains(method) {
            methodNotAllowed.add(1, ordering: .relaxed)
            responder.respond(.text(405, "method \(method) not allowed\n", headers: [HTTPHeader("Allow", allowHeader)]))
            return
        }
        let handler = self.handler
        queue.async { handler.handle(request, responder: responder) }
    }

    /// Answers request `id` if it is still pending. Returns false if it was answered already.
    func complete(_ id: UInt64, _ response: HTTPResponse) -> Bool {
        let aio: OpaquePointer? = lock.withLock {
            let aio = pending.removeValue(forKey: id)
            if pending.isEmpty { lock.broadcast() }
            return aio
        }
        guard let aio else { return false }
        finish(aio, response)
        return true
    }

    /// Builds the nng response and completes the handler aio (exactly once per aio).
    private func finish(_ aio: OpaquePointer, _ response: HTTPResponse) {
        var res: OpaquePointer?
        guard nng_http_res_alloc(&res) == 0, let res else {
            nng_aio_finish(aio, cnng_errno(NNG_ENOMEM))
            return
        }
        var ok = nng_http_res_set_status(res, UInt16(clamping: min(max(response.status, 100), 599))) == 0
        var headers = configuration.defaultHeaders
        for h in response.headers {
            headers.removeAll { $0.name.caseInsensitiveEquals(h.name) }
            headers.append(h)
        }
        for h in headers where ok {
            ok = nng_http_res_set_header(res, h.name, h.value) == 0
        }
        if ok {
            if response.body.isEmpty {
                // nng cannot copy 0 bytes (allocation of 0 fails); say Content-Length: 0 ourselves
                // so keep-alive clients know the body ended (never on 1xx, 204, 304).
                if response.status >= 200 && response.status != 204 && response.status != 304 {
                    ok = nng_http_res_set_header(res, "Content-Length", "0") == 0
                }
            } else {
                ok = response.body.withUnsafeBytes { b in nng_http_res_copy_data(res, b.baseAddress, b.count) == 0 }
            }
        }
        guard ok else {
            nng_http_res_free(res)
            nng_aio_finish(aio, cnng_errno(NNG_ENOMEM))
            return
        }
        responded.add(1, ordering: .relaxed)
        lastFinish.withLock { $0 = .now }
        nng_aio_set_output(aio, 0, UnsafeMutableRawPointer(res))
        nng_aio_finish(aio, 0)
    }

    /// Stop accepting, wait up to `timeout` for pending requests, answer the rest with 503.
    func drain(timeout: Duration) {
        let deadline = ContinuousClock.now + timeout
        let leftover: [OpaquePointer] = lock.withLock {
            accepting = false
            while !pending.isEmpty {
                let left = deadline - .now
                if left <= .zero { break }
                _ = lock.wait(timeout: left)
            }
            defer { pending = [:] }
            return Array(pending.values)
        }
        for aio in leftover {
            answeredByStop.add(1, ordering: .relaxed)
            finish(aio, .text(503, "server stopping\n"))
        }
        // nng_http_server_stop closes connections at once, cutting writes still in progress;
        // give responses handed to nng in the last moment a short grace to reach the socket.
        if let last = lastFinish.withLock({ $0 }) {
            let until = last + Self.flushGrace
            if until > .now {
                let (secs, attos) = (until - .now).components
                usleep(useconds_t(secs * 1_000_000 + attos / 1_000_000_000_000))
            }
        }
    }

    static let flushGrace: Duration = .milliseconds(100)
}

/// Servers held by some ``NNGHTTPServer`` in this process. nng 1.5 hands out one shared server
/// per host:port (and per unstarted port 0), so holds and starts are serialized here and a
/// server already held is refused with `.addressInUse`.
private let heldServers = Mutex<Set<UInt>>([])

/// An HTTP/1.1 server on nng's supplemental HTTP server (libnng 1.5.2): one handler for a path
/// tree; each request is copied into an ``HTTPRequest`` on nng's thread and handed to the
/// ``HTTPRequestHandler`` on a dispatch queue; the handler answers through an ``HTTPResponder``
/// from any thread, at any time.
///
/// Thread-safe. `start()` and `stop(drainTimeout:)` must not be called from a handler.
public final class NNGHTTPServer: @unchecked Sendable {
    private enum Lifecycle { case new, running, stopped }

    public let configuration: HTTPServerConfiguration
    private let core: HTTPServerCore
    private let lock = ConditionLock()
    private var lifecycle = Lifecycle.new   // guarded by lock
    private var server: OpaquePointer?      // guarded by lock: nng_http_server *
    private var port = 0                    // guarded by lock

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

    /// `http://host:port` as bound (port 0 replaced by the bound port). Empty before `start()`.
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
                             inFlight: core.inFlight)
    }

    /// Listens and starts serving. Throws ``NNGError``: `.addressInvalid` for an address nng
    /// cannot parse or resolve, `.addressInUse` when the port is taken (by this process too),
    /// `.invalidArgument` for a bad path prefix, `.invalidState` if started twice. On a throw
    /// nothing stays open.
    public func start() throws(NNGError) {
        lock.lock()
        defer { lock.unlock() }
        guard lifecycle == .new else { throw NNGError(code: NNGError.invalidState.code, operation: "NNGHTTPServer.start") }
        let config = configuration
        guard config.pathPrefix.hasPrefix("/"), config.maxRequestBodyBytes >= 0 else {
            throw NNGError(code: NNGError.invalidArgument.code, operation: "NNGHTTPServer.start(configuration)")
        }
        var url: UnsafeMutablePointer<nng_url>?
        try nngCheck(nng_url_parse(&url, config.url), "nng_url_parse(\(config.url))")
        defer { nng_url_free(url) }

        var handler: OpaquePointer?
        try nngCheck(nng_http_handler_alloc(&handler, config.pathPrefix, { aio in
            guard let aio else { return }
            guard let h = nng_aio_get_input(aio, 1), let data = nng_http_handler_get_data(OpaquePointer(h)) else {
                nng_aio_finish(aio, cnng_errno(NNG_EINTERNAL))
                return
            }
            Unmanaged<HTTPServerCore>.fromOpaque(data).takeUnretainedValue().received(aio: aio)
        }), "nng_http_handler_alloc(\(config.pathPrefix))")
        let retained = Unmanaged.passRetained(core).toOpaque()
        do throws(NNGError) {
            try nngCheck(nng_http_handler_set_data(handler, retained, { data in
                if let data { Unmanaged<HTTPServerCore>.fromOpaque(data).release() }
            }), "nng_http_handler_set_data")
        } catch {
            Unmanaged<HTTPServerCore>.fromOpaque(retained).release()
            nng_http_handler_free(handler)
            throw error
        }
        // From here the handler owns the retain on core (released by nng when it frees the handler).
        do throws(NNGError) {
            try nngCheck(nng_http_handler_set_method(handler, nil), "nng_http_handler_set_method(any)")
            try nngCheck(nng_http_handler_set_tree(handler), "nng_http_handler_set_tree")
            try nngCheck(nng_http_handler_collect_body(handler, true, config.maxRequestBodyBytes),
                         "nng_http_handler_collect_body")
        } catch {
            nng_http_handler_free(handler)
            throw error
        }

        let (heldKey, boundPort): (UInt, Int) = try heldServers.withLock { (set) throws(NNGError) in
            var s: OpaquePointer?
            do throws(NNGError) {
                try nngCheck(nng_http_server_hold(&s, url), "nng_http_server_hold(\(config.url))")
            } catch {
                nng_http_handler_free(handler)
                throw error
            }
            guard let s else { throw NNGError(code: NNGError.internalError.code, operation: "nng_http_server_hold") }
            let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(s)))
            guard !set.contains(key) else {
                nng_http_server_release(s)
                nng_http_handler_free(handler)
                throw NNGError(code: NNGError.addressInUse.code, operation: "nng_http_server_hold(\(config.url)): held by another NNGHTTPServer")
            }
            do throws(NNGError) {
                try nngCheck(nng_http_server_add_handler(s, handler), "nng_http_server_add_handler(\(config.pathPrefix))")
            } catch {
                nng_http_handler_free(handler)
                nng_http_server_release(s)
                throw error
            }
            // The server owns the handler now.
            do throws(NNGError) {
                try nngCheck(nng_http_server_start(s), "nng_http_server_start(\(config.url))")
            } catch {
                nng_http_server_release(s)
                throw error
            }
            var sa = nng_sockaddr()
            var bound = 0
            if nng_http_server_get_addr(s, &sa) == 0 {
                switch Int32(sa.s_family) {
                case Int32(NNG_AF_INET.rawValue): bound = Int(UInt16(bigEndian: sa.s_in.sa_port))
                case Int32(NNG_AF_INET6.rawValue): bound = Int(UInt16(bigEndian: sa.s_in6.sa_port))
                default: break
                }
            }
            set.insert(key)
            return (key, bound)
        }
        server = OpaquePointer(bitPattern: heldKey)
        port = boundPort
        lifecycle = .running
    }

    /// Stops taking requests (new ones get 503 until the listener closes), waits up to
    /// `drainTimeout` for handlers to respond, answers the rest `503 Service Unavailable`, gives
    /// responses handed to nng within the last 100 ms that long to be written, then closes the
    /// listener and every connection (nng's stop is a hard close). Later ``HTTPResponder/respond(_:)`` calls return
    /// false. Idempotent; blocks the caller.
    public func stop(drainTimeout: Duration = .seconds(5)) {
        lock.lock()
        defer { lock.unlock() }
        guard lifecycle == .running, let s = server else { lifecycle = .stopped; return }
        lifecycle = .stopped
        core.drain(timeout: drainTimeout)
        nng_http_server_stop(s)
        let key = UInt(bitPattern: Int(bitPattern: UnsafeRawPointer(s)))
        heldServers.withLock { set in
            set.remove(key)
            nng_http_server_release(s)
        }
        server = nil
    }
}

internal import CNNG
import Synchronization

/// Settings for ``NNGReplyServer``.
public struct ServerConfiguration: Sendable, Equatable {
    /// URLs to listen on (`tcp://host:port`, `tls+tcp://host:port`, `ipc:///path`,
    /// `inproc://name`); at least one. A tcp port of 0 picks a free port: read it back from
    /// ``NNGReplyServer/boundURLs``.
    public var listenURLs: [String]
    /// The certificate of the `tls+tcp://` listeners (required when there is one, unused
    /// otherwise). Read at ``NNGReplyServer/start()`` and again at
    /// ``NNGReplyServer/reloadTLS()``.
    public var tls: TLSServerFiles?
    /// Requests served concurrently: one nng context (with one aio) each. At least 1.
    public var contexts: Int
    /// Largest request body accepted, in bytes. nng's `NNG_OPT_RECVMAXSZ` is set to this plus
    /// ``nngHeaderAllowance`` (the REQ/REP backtrace travels in the same wire message): a peer
    /// that sends more is disconnected by nng; a body that fits the allowance but exceeds this
    /// limit is dropped without a reply. Either way the server keeps serving everyone else.
    /// Must be > 0.
    public var maxMessageBytes: Int

    public init(listenURLs: [String] = ["tcp://127.0.0.1:7450"], contexts: Int = 64,
                maxMessageBytes: Int = 64 << 20, tls: TLSServerFiles? = nil) {
        self.listenURLs = listenURLs
        self.tls = tls
        self.contexts = contexts
        self.maxMessageBytes = maxMessageBytes
    }
}

/// Bytes added to `NNG_OPT_RECVMAXSZ` on top of a body limit, for the REQ/REP header (4 bytes
/// per hop: request id plus any device hops).
public let nngHeaderAllowance = 64

/// Receives every request of an ``NNGReplyServer``.
public protocol RequestHandler: Sendable {
    /// Called on an nng callback thread, once per request. It MUST NOT block: hand the request
    /// to other work (a queue, a task) and return. Reply with ``IncomingRequest/respond(_:)``
    /// from any thread, any time later. A request that is dropped without a reply frees its
    /// context again (the client then times out).
    func handle(_ request: IncomingRequest)
}

/// Counters of an ``NNGReplyServer`` since ``NNGReplyServer/start()``.
public struct ServerStatistics: Sendable, Equatable {
    /// Requests handed to the handler.
    public var received: Int
    /// Replies handed to nng.
    public var responded: Int
    /// Requests dropped without a reply (never responded, or reply allocation failed).
    public var abandoned: Int
    /// Failed receives or sends other than shutdown (the context was re-armed).
    public var transientErrors: Int
    /// Requests whose body exceeded `maxMessageBytes` but fit nng's limit; dropped unanswered.
    public var oversize: Int
}

/// One request received by an ``NNGReplyServer``; reply exactly once with `respond`.
public final class IncomingRequest: @unchecked Sendable {
    // The request nng_msg is owned by this object until respond() or deinit frees it.
    private let message: OpaquePointer
    private let context: ReplyContext
    private let generation: UInt64
    private let claimed = Atomic<Bool>(false)  // set by the first respond()

    /// When nng handed the request to the server.
    public let receivedAt: ContinuousClock.Instant

    /// The request bytes. Valid until `respond` returns (including inside its `write` closure);
    /// do not read it concurrently with `respond`.
    public var body: UnsafeRawBufferPointer {
        UnsafeRawBufferPointer(start: nng_msg_body(message), count: nng_msg_len(message))
    }

    init(message: OpaquePointer, context: ReplyContext, generation: UInt64) {
        self.message = message
        self.context = context
        self.generation = generation
        self.receivedAt = .now
    }

    deinit {
        if !claimed.load(ordering: .acquiring) {
            nng_msg_free(message)
            context.abandon(generation)
        }
    }

    /// Replies with `size` bytes that `write` fills in place (no extra copy); `body` is still
    /// readable inside `write`. Call exactly once, from any thread. Returns false (and does
    /// nothing) if already responded, or the server has closed, or nng could not allocate the
    /// reply (then the request is dropped and the client times out).
    @discardableResult
    public func respond(size: Int, write: (UnsafeMutableRawBufferPointer) -> Void) -> Bool {
        guard claimed.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return false }
        var reply: OpaquePointer?
        guard size >= 0, nng_msg_alloc(&reply, size) == 0, let reply else {
            nng_msg_free(message)
            context.abandon(generation)
            return false
        }
        write(UnsafeMutableRawBufferPointer(start: nng_msg_body(reply), count: size))
        nng_msg_free(message)
        return context.send(reply, generation: generation)
    }

    /// Replies with a copy of `bytes`. See ``respond(size:write:)``.
    @discardableResult
    public func respond(_ bytes: [UInt8]) -> Bool {
        respond(size: bytes.count) { out in
            bytes.withUnsafeBytes { out.copyMemory(from: $0) }
        }
    }

    /// Replies with a copy of `bytes`. See ``respond(size:write:)``.
    @discardableResult
    public func respond(bytes: UnsafeRawBufferPointer) -> Bool {
        respond(size: bytes.count) { out in out.copyMemory(from: bytes) }
    }
}

/// Shared by the server and its contexts: the handler, the stop flag, the busy count.
final class ReplyServerCore: @unchecked Sendable {
    let handler: any RequestHandler
    let maxBodyBytes: Int
    let lock = ConditionLock()
    private var stopping = false  // guarded by lock
    private var busy = 0          // guarded by lock: contexts in .handling or .sending
    let received = Atomic<Int>(0)
    let responded = Atomic<Int>(0)
    let abandoned = Atomic<Int>(0)
    let transientErrors = Atomic<Int>(0)
    let oversize = Atomic<Int>(0)

    init(handler: any RequestHandler, maxBodyBytes: Int) {
        self.handler = handler
        self.maxBodyBytes = maxBodyBytes
    }

    var isStopping: Bool { lock.withLock { stopping } }
    func beginStopping() { lock.withLock { stopping = true } }

    func adjustBusy(_ delta: Int) {
        lock.withLock {
            busy += delta
            if busy == 0 { lock.broadcast() }
        }
    }

    /// Waits until no context is handling or sending, or `timeout` passes. Returns the number
    /// still busy.
    func waitUntilIdle(timeout: Duration) -> Int {
        let deadline = ContinuousClock.now + timeout
        return lock.withLock {
            while busy > 0 {
                let left = deadline - .now
                if left <= .zero { break }
                _ = lock.wait(timeout: left)
            }
            return busy
        }
    }
}

/// One nng context + aio and its state machine (nng demo/async/server.c):
///
///     idle --arm--> receiving --message--> handling --respond--> sending --done--> receiving
///                   receiving --transient error--> receiving (re-armed)
///                   handling  --dropped unanswered--> receiving
///     any --stop--> parked (no re-arm) ; any --socket closed--> closed
///
/// All transitions happen in `transition` callers under `lock`; nng operations are started
/// outside the lock (nng may complete an operation before returning), bracketed by
/// `issuing` so teardown never frees the aio while another thread is starting an operation.
final class ReplyContext: @unchecked Sendable {
    enum State: Equatable {
        case idle, receiving, handling(UInt64), sending, parked, closed
        var isBusy: Bool {
            switch self {
            case .handling, .sending: return true
            default: return false
            }
        }
    }

    private enum Action { case none, receive, send(OpaquePointer) }

    let core: ReplyServerCore
    private let lock = ConditionLock()
    private var state: State = .idle     // guarded by lock
    private var generation: UInt64 = 0   // guarded by lock
    private var issuing = 0              // guarded by lock: threads inside nng_ctx_recv/send
    var ctx = nng_ctx()
    var aio: OpaquePointer?              // set once before arm(), freed by the server after close

    init(core: ReplyServerCore) { self.core = core }

    /// Sets the state (lock held) and keeps the core's busy count in step.
    private func transition(to new: State) {
        let wasBusy = state.isBusy
        state = new
        if wasBusy != new.isBusy { core.adjustBusy(new.isBusy ? 1 : -1) }
    }

    /// Starts an nng operation outside the lock; `issuing` keeps teardown waiting meanwhile.
    /// Called with the lock held; returns with it released.
    private func perform(_ action: Action) {
        if case .none = action { lock.unlock(); return }
        issuing += 1
        lock.unlock()
        switch action {
        case .none: break
        case .receive: nng_ctx_recv(ctx, aio)
        case .send(let msg):
            nng_aio_set_msg(aio, msg)
            nng_ctx_send(ctx, aio)
        }
        lock.lock()
        issuing -= 1
        if issuing == 0 { lock.broadcast() }
        lock.unlock()
    }

    /// After a receive or send ends: re-arm, park when stopping, or end when closed.
    private func nextAfterCompletion() -> Action {
        if core.isStopping { transition(to: .parked); return .none }
        transition(to: .receiving)
        return .receive
    }

    /// idle -> receiving.
    func arm() {
        lock.lock()
        guard state == .idle else { lock.unlock(); return }
        transition(to: .receiving)
        perform(.receive)
    }

    /// The aio callback. May run concurrently with itself (nng dispatches a completion while an
    /// earlier callback of the same aio still runs) and with respond(): everything goes through
    /// the lock.
    func aioCompleted() {
        lock.lock()
        let result = nng_aio_result(aio)
        switch state {
        case .receiving:
            if result == 0, let msg = nng_aio_get_msg(aio) {
                nng_aio_set_msg(aio, nil)
                if nng_msg_len(msg) > core.maxBodyBytes {
                    nng_msg_free(msg)
                    core.oversize.add(1, ordering: .relaxed)
                    perform(nextAfterCompletion())
                    return
                }
                generation &+= 1
                let gen = generation
                transition(to: .handling(gen))
                lock.unlock()
                core.received.add(1, ordering: .relaxed)
                let request = IncomingRequest(message: msg, context: self, generation: gen)
                core.handler.handle(request)
                return
            }
            if result == NNGError.closed.code {
                transition(to: .closed)
                lock.unlock()
                return
            }
            if result != NNGError.canceled.code || !core.isStopping {
                core.transientErrors.add(1, ordering: .relaxed)
            }
            perform(nextAfterCompletion())
        case .sending:
            if result != 0 {
                if let msg = nng_aio_get_msg(aio) { nng_msg_free(msg) }
                nng_aio_set_msg(aio, nil)
            }
            if result == NNGError.closed.code {
                transition(to: .closed)
                lock.unlock()
                return
            }
            if result != 0 && !core.isStopping { core.transientErrors.add(1, ordering: .relaxed) }
            perform(nextAfterCompletion())
        case .closed, .parked, .idle, .handling:
            // Late completion after teardown (or a cancelled op): release what nng hands back.
            if result != 0, let msg = nng_aio_get_msg(aio) {
                nng_aio_set_msg(aio, nil)
                nng_msg_free(msg)
            }
            lock.unlock()
        }
    }

    /// handling(gen) -> sending. Takes ownership of `reply`.
    func send(_ reply: OpaquePointer, generation gen: UInt64) -> Bool {
        lock.lock()
        guard state == .handling(gen) else {
            lock.unlock()
            nng_msg_free(reply)
            return false
        }
        transition(to: .sending)
        core.responded.add(1, ordering: .relaxed)
        perform(.send(reply))
        return true
    }

    /// handling(gen) -> receiving (or parked): the request was dropped without a reply.
    func abandon(_ gen: UInt64) {
        lock.lock()
        guard state == .handling(gen) else { lock.unlock(); return }
        core.abandoned.add(1, ordering: .relaxed)
        perform(nextAfterCompletion())
    }

    /// Stop receiving: cancel a pending receive. Holding the lock guarantees the aio is not
    /// sending meanwhile (nng_aio_cancel only schedules the callback, it never runs it inline).
    func cancelReceive() {
        lock.withLock {
            if state == .receiving { nng_aio_cancel(aio) }
            if state == .idle { state = .parked }
        }
    }

    /// Final state before the aio is stopped and freed: no operation can start afterwards.
    func markClosed() {
        lock.withLock {
            transition(to: .closed)
            while issuing > 0 { lock.wait() }
        }
    }
}

/// An asynchronous NNG REP server: one `rep0` socket, N contexts each with its own aio and
/// state machine, listening on one or more URLs.
///
/// Thread-safe. `start()` and `stop(drainTimeout:)` must not be called from a handler or any
/// nng callback.
public final class NNGReplyServer: @unchecked Sendable {
    private enum Lifecycle { case new, running, drained, stopped }

    public let configuration: ServerConfiguration
    private let core: ReplyServerCore
    private let lock = ConditionLock()
    private var lifecycle = Lifecycle.new      // guarded by lock
    private var socket = nng_socket()           // guarded by lock (written in start)
    private var contexts: [ReplyContext] = []   // guarded by lock
    private var bound: [String] = []            // guarded by lock
    private var ports: [Int] = []               // guarded by lock
    private var tlsListeners: [(listener: nng_listener, host: String, port: Int)] = []  // guarded by lock

    public init(configuration: ServerConfiguration = ServerConfiguration(), handler: any RequestHandler) {
        self.configuration = configuration
        self.core = ReplyServerCore(handler: handler, maxBodyBytes: configuration.maxMessageBytes)
    }

    deinit {
        if lifecycle == .drained {
            // The socket stays open (see drain): keep the contexts alive for any late callback.
            for context in contexts { _ = Unmanaged.passRetained(context) }
            return
        }
        stop(drainTimeout: .zero)
    }

    /// The listen URLs as bound, with a tcp port of 0 replaced by the port the kernel chose.
    /// Empty before `start()`.
    public var boundURLs: [String] { lock.withLock { bound } }

    /// The bound tcp ports, in listen-URL order (non-tcp listeners are skipped).
    public var boundTCPPorts: [Int] { lock.withLock { ports } }

    public var statistics: ServerStatistics {
        ServerStatistics(received: core.received.load(ordering: .relaxed),
                         responded: core.responded.load(ordering: .relaxed),
                         abandoned: core.abandoned.load(ordering: .relaxed),
                         transientErrors: core.transientErrors.load(ordering: .relaxed),
                         oversize: core.oversize.load(ordering: .relaxed))
    }

    /// Opens the socket, sets the receive limit, creates the contexts, starts every listener
    /// and then begins receiving. Throws ``NNGError`` (`.addressInUse`, `.addressInvalid`,
    /// `.invalidArgument` for a bad configuration or a `tls+tcp://` URL without
    /// ``ServerConfiguration/tls``, `.invalidState` if started twice, a file or mbedTLS error for
    /// unreadable or invalid certificate files, see ``reloadTLS()``); on a throw nothing stays open.
    public func start() throws(NNGError) {
        lock.lock()
        defer { lock.unlock() }
        guard lifecycle == .new else { throw NNGError(code: NNGError.invalidState.code, operation: "NNGReplyServer.start") }
        let config = configuration
        guard !config.listenURLs.isEmpty, config.contexts > 0, config.maxMessageBytes > 0 else {
            throw NNGError(code: NNGError.invalidArgument.code, operation: "NNGReplyServer.start(configuration)")
        }
        let tlsConfig: TLSConfig?
        if config.listenURLs.contains(where: { $0.hasPrefix("tls+") }) {
            guard let files = config.tls else {
                throw NNGError(code: NNGError.invalidArgument.code, operation: "NNGReplyServer.start: tls+tcp:// needs certificate files")
            }
            tlsConfig = try TLSConfig(server: files)
        } else {
            tlsConfig = nil
        }
        var sock = nng_socket()
        try nngCheck(nng_rep0_open(&sock), "nng_rep0_open")
        var made: [ReplyContext] = []
        do throws(NNGError) {
            try nngCheck(nng_socket_set_size(sock, NNG_OPT_RECVMAXSZ,
                                                 config.maxMessageBytes.addingReportingOverflow(nngHeaderAllowance).partialValue),
                         "nng_socket_set_size(\(NNG_OPT_RECVMAXSZ))")
            for _ in 0..<config.contexts {
                let context = ReplyContext(core: core)
                made.append(context)
                try nngCheck(nng_ctx_open(&context.ctx, sock), "nng_ctx_open")
                var aio: OpaquePointer?
                try nngCheck(nng_aio_alloc(&aio, { arg in
                    guard let arg else { return }
                    Unmanaged<ReplyContext>.fromOpaque(arg).takeUnretainedValue().aioCompleted()
                }, Unmanaged.passUnretained(context).toOpaque()), "nng_aio_alloc")
                context.aio = aio
            }
            var urls: [String] = []
            var tcpPorts: [Int] = []
            var tls: [(listener: nng_listener, host: String, port: Int)] = []
            for url in config.listenURLs {
                var listener = nng_listener()
                try nngCheck(nng_listener_create(&listener, sock, url), "nng_listener_create(\(url))")
                if url.hasPrefix("tls+"), let tlsConfig {
                    try nngCheck(nng_listener_set_ptr(listener, NNG_OPT_TLS_CONFIG, UnsafeMutableRawPointer(tlsConfig.pointer)),
                                 "nng_listener_set_ptr(\(url), \(NNG_OPT_TLS_CONFIG))")
                }
                try nngCheck(nng_listener_start(listener, 0), "nng_listener_start(\(url))")
                var port: Int32 = 0
                if nng_listener_get_int(listener, NNG_OPT_TCP_BOUND_PORT, &port) == 0 {
                    tcpPorts.append(Int(port))
                    urls.append(Self.replacingZeroPort(url, with: Int(port)))
                    if url.hasPrefix("tls+") { tls.append((listener, urlHost(url), Int(port))) }
                } else {
                    urls.append(url)
                }
            }
            socket = sock
            contexts = made
            bound = urls
            ports = tcpPorts
            tlsListeners = tls
            lifecycle = .running
        } catch {
            Self.teardown(made, socket: sock)
            throw error
        }
        for context in made { context.arm() }
    }

    /// Reads ``ServerConfiguration/tls``'s files again and gives the `tls+tcp://` listeners the
    /// new certificate: connections made from now on use it, connections already open keep
    /// theirs (nng 1.5.2 cannot change a TLS config in use, but a listener's config can be
    /// replaced while it runs; see ``consumeArmedAccept(host:port:)`` for the one accept nng
    /// has already prepared). Throws, keeping the old certificate, when a file cannot be read
    /// or mbedTLS refuses it (e.g. a key that is not PEM). Does nothing without TLS listeners
    /// or before ``start()``.
    public func reloadTLS() throws(NNGError) {
        lock.lock()
        defer { lock.unlock() }
        guard lifecycle == .running, !tlsListeners.isEmpty, let files = configuration.tls else { return }
        let fresh = try TLSConfig(server: files)
        for entry in tlsListeners {
            try nngCheck(nng_listener_set_ptr(entry.listener, NNG_OPT_TLS_CONFIG, UnsafeMutableRawPointer(fresh.pointer)),
                         "nng_listener_set_ptr(\(NNG_OPT_TLS_CONFIG))")
        }
        for entry in tlsListeners { consumeArmedAccept(host: entry.host, port: entry.port) }
    }

    /// Stops receiving new requests, waits up to `drainTimeout` for requests already handed to
    /// the handler to be responded to and sent, then closes the socket (unsent replies are
    /// dropped; their clients see a timeout or a closed connection). Idempotent; blocks the
    /// caller; must not be called from a handler or nng callback.
    public func stop(drainTimeout: Duration = .seconds(5)) {
        lock.lock()
        defer { lock.unlock() }
        guard lifecycle == .running else { lifecycle = .stopped; return }
        lifecycle = .stopped
        core.beginStopping()
        for context in contexts { context.cancelReceive() }
        _ = core.waitUntilIdle(timeout: drainTimeout)
        Self.teardown(contexts, socket: socket)
        contexts = []
    }

    /// Stops receiving new requests and waits up to `timeout` for requests already handed to
    /// the handler to be responded to and sent - like `stop` - but leaves the socket open.
    /// For a process that is about to exit: nng 1.5 can panic when a REP socket is closed while
    /// peers are disconnecting (nanomsg/nng#2110, "pthread_mutex_lock: Invalid argument"), and
    /// the kernel closes the connections at exit anyway. Idempotent; blocks the caller.
    public func drain(timeout: Duration) {
        lock.lock()
        defer { lock.unlock() }
        guard lifecycle == .running else { return }
        lifecycle = .drained
        core.beginStopping()
        for context in contexts { context.cancelReceive() }
        _ = core.waitUntilIdle(timeout: timeout)
    }

    /// Marks every context closed (so no thread can start an nng operation on it any more, and
    /// none is still starting one), then closes the socket, then stops and frees every aio.
    /// The order matters: `nng_ctx_send` racing `nng_close` uses the freed socket and nng
    /// panics ("pthread_mutex_lock: Invalid argument").
    private static func teardown(_ contexts: [ReplyContext], socket: nng_socket) {
        for context in contexts { context.markClosed() }
        nng_close(socket)
        for context in contexts where context.aio != nil { nng_aio_stop(context.aio) }
        for context in contexts where context.aio != nil {
            nng_aio_free(context.aio)
            context.aio = nil
        }
    }

    static func replacingZeroPort(_ url: String, with port: Int) -> String {
        guard url.hasPrefix("tcp") || url.hasPrefix("tls+tcp"), url.hasSuffix(":0") else { return url }
        return String(url.dropLast()) + String(port)
    }
}

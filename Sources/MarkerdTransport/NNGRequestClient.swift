internal import CNNG

/// Settings for ``NNGRequestClient``.
public struct ClientConfiguration: Sendable, Equatable {
    /// The server URL to dial (`tcp://...`, `tls+tcp://...`, `ipc://...`, `inproc://...`).
    public var url: String
    /// TLS settings for a `tls+tcp://` URL (ignored for others). nil with a `tls+tcp://` URL:
    /// no CA, so no server is trusted.
    public var tls: TLSClientFiles?
    /// Largest reply body accepted, in bytes (`NNG_OPT_RECVMAXSZ` is this plus
    /// ``nngHeaderAllowance``); a bigger reply drops the connection and the call times out.
    /// Must be > 0. Default 64 MiB.
    public var maxMessageBytes: Int
    /// How long a request waits for its reply before nng sends it again
    /// (`NNG_OPT_REQ_RESENDTIME`). nil keeps nng's default (60 s).
    public var resendTime: Duration?
    /// Idle contexts kept for reuse; more concurrent callers open extra ones, closed after use.
    public var maxIdleContexts: Int

    public init(url: String, maxMessageBytes: Int = 64 << 20, resendTime: Duration? = nil,
                maxIdleContexts: Int = 16, tls: TLSClientFiles? = nil) {
        self.url = url
        self.tls = tls
        self.maxMessageBytes = maxMessageBytes
        self.resendTime = resendTime
        self.maxIdleContexts = maxIdleContexts
    }
}

/// A REQ client for one URL. Thread-safe: concurrent calls each use their own nng context,
/// so replies never cross. The dial is non-blocking, so a client may start before its server;
/// requests wait (up to their timeout) for the connection.
public final class NNGRequestClient: @unchecked Sendable {
    /// One nng context and a callback-less aio used with nng_aio_wait.
    private final class Slot {
        var ctx = nng_ctx()
        var aio: OpaquePointer?
        deinit {
            if let aio { nng_aio_free(aio) }
            nng_ctx_close(ctx)  // ECLOSED once the socket is closed: harmless
        }
    }

    public let configuration: ClientConfiguration
    private var socket = nng_socket()     // written once in init
    private let lock = ConditionLock()
    private var idle: [Slot] = []         // guarded by lock
    private var asyncIdle: [AsyncCallSlot] = []  // guarded by lock
    private var closed = false            // guarded by lock

    /// Opens the socket and starts dialing. Throws for a bad URL or configuration
    /// (`.addressInvalid`, `.invalidArgument`, `.notSupported`, unreadable or invalid TLS files).
    ///
    /// A `tls+tcp://` URL is dialed once synchronously first, so that a failed TLS handshake
    /// throws here instead of making every call time out: `.cryptographic` (or
    /// `.peerAuthentication`) for a server certificate not signed by ``TLSClientFiles/caFile``,
    /// expired, or for another name, or a client certificate the server refuses;
    /// `.connectionShutdown` (or `.connectionReset`) when the server closes the connection in
    /// the handshake, as a server that requires a client certificate does when none is given.
    /// Any other failure (e.g. `.connectionRefused`: the server is not up yet) falls back to
    /// dialing in the background like `tcp://`. That first dial waits as long as a TCP connect does (an
    /// unreachable host that drops packets: the kernel's SYN retries, about two minutes).
    public init(configuration: ClientConfiguration) throws(NNGError) {
        self.configuration = configuration
        guard configuration.maxMessageBytes > 0, configuration.maxIdleContexts >= 0 else {
            throw NNGError(code: NNGError.invalidArgument.code, operation: "NNGRequestClient(configuration)")
        }
        var sock = nng_socket()
        try nngCheck(nng_req0_open(&sock), "nng_req0_open")
        do throws(NNGError) {
            try nngCheck(nng_socket_set_size(sock, NNG_OPT_RECVMAXSZ,
                                             configuration.maxMessageBytes.addingReportingOverflow(nngHeaderAllowance).partialValue),
                         "nng_socket_set_size(\(NNG_OPT_RECVMAXSZ))")
            if let resend = configuration.resendTime {
                try nngCheck(nng_socket_set_ms(sock, NNG_OPT_REQ_RESENDTIME, nngMilliseconds(resend)),
                             "nng_socket_set_ms(\(NNG_OPT_REQ_RESENDTIME))")
            }
            if configuration.url.hasPrefix("tls+") {
                try Self.dialTLS(sock, configuration)
            } else {
                try nngCheck(nng_dial(sock, configuration.url, nil, cnng_flag_nonblock()),
                             "nng_dial(\(configuration.url))")
            }
        } catch {
            nng_close(sock)
            throw error
        }
        socket = sock
    }

    /// Dials `configuration.url` (tls+tcp://) with its TLS settings: see ``init(configuration:)``.
    private static func dialTLS(_ sock: nng_socket, _ configuration: ClientConfiguration) throws(NNGError) {
        let url = configuration.url
        let files = configuration.tls ?? TLSClientFiles()
        let config = try TLSConfig(client: files, host: urlHost(url))
        var dialer = nng_dialer()
        try nngCheck(nng_dialer_create(&dialer, sock, url), "nng_dialer_create(\(url))")
        try nngCheck(nng_dialer_set_ptr(dialer, NNG_OPT_TLS_CONFIG, UnsafeMutableRawPointer(config.pointer)),
                     "nng_dialer_set_ptr(\(url), \(NNG_OPT_TLS_CONFIG))")
        let first = nng_dialer_start(dialer, 0)
        if first == 0 { return }
        let error = NNGError(code: first, operation: "TLS dial \(url) (server name \(files.serverName ?? urlHost(url)))")
        if [.cryptographic, .peerAuthentication, .connectionShutdown, .connectionReset].contains(error) { throw error }
        try nngCheck(nng_dialer_start(dialer, cnng_flag_nonblock()), "nng_dialer_start(\(url))")
    }

    /// Convenience for `init(configuration: ClientConfiguration(url: url))`.
    public convenience init(url: String) throws(NNGError) {
        try self.init(configuration: ClientConfiguration(url: url))
    }

    deinit { close() }

    /// Closes the socket. Calls in progress end with `.closed`; later calls throw `.closed`.
    /// Idempotent.
    public func close() {
        let slots: ([Slot], [AsyncCallSlot])? = lock.withLock {
            if closed { return nil }
            closed = true
            defer { idle = []; asyncIdle = [] }
            return (idle, asyncIdle)
        }
        guard let slots else { return }
        nng_close(socket)
        for slot in slots.1 { slot.destroy() }
        _ = slots  // sync slots freed here, after the socket
    }

    func acquireAsyncSlot() throws(NNGError) -> AsyncCallSlot {
        let reused: AsyncCallSlot? = try lock.withLock { () throws(NNGError) -> AsyncCallSlot? in
            if closed { throw NNGError(code: NNGError.closed.code, operation: "NNGRequestClient.asyncCall") }
            return asyncIdle.popLast()
        }
        if let reused { return reused }
        return try AsyncCallSlot(socket: socket, resendTime: configuration.resendTime)
    }

    /// Returns a finished slot to the pool (or frees it). Never called from an nng callback.
    func releaseAsyncSlot(_ slot: AsyncCallSlot) {
        let kept = lock.withLock {
            guard !closed && asyncIdle.count < configuration.maxIdleContexts else { return false }
            asyncIdle.append(slot)
            return true
        }
        if !kept { slot.destroy() }
    }

    private func acquire() throws(NNGError) -> Slot {
        let reused: Slot? = try lock.withLock { () throws(NNGError) -> Slot? in
            if closed { throw NNGError(code: NNGError.closed.code, operation: "NNGRequestClient.call") }
            return idle.popLast()
        }
        if let reused { return reused }
        let slot = Slot()
        try nngCheck(nng_ctx_open(&slot.ctx, socket), "nng_ctx_open")
        if let resend = configuration.resendTime {
            try nngCheck(nng_ctx_set_ms(slot.ctx, NNG_OPT_REQ_RESENDTIME, nngMilliseconds(resend)),
                         "nng_ctx_set_ms(\(NNG_OPT_REQ_RESENDTIME))")
        }
        try nngCheck(nng_aio_alloc(&slot.aio, nil, nil), "nng_aio_alloc")
        return slot
    }

    private func release(_ slot: Slot) {
        lock.withLock {
            if !closed && idle.count < configuration.maxIdleContexts { idle.append(slot) }
        }
    }

    /// Sends a request of `requestSize` bytes that `write` fills in place, waits for the reply
    /// and passes its bytes to `read` (valid only inside `read`). Blocks the calling thread for
    /// at most about `timeout`. Throws `.timedOut`, `.closed` (client closed), or another
    /// ``NNGError``.
    public func call<R>(requestSize: Int, timeout: Duration,
                        write: (UnsafeMutableRawBufferPointer) -> Void,
                        read: (UnsafeRawBufferPointer) -> R) throws(NNGError) -> R {
        let deadline = ContinuousClock.now + timeout
        let slot = try acquire()
        defer { release(slot) }
        guard let aio = slot.aio else { throw NNGError.internalError }

        var request: OpaquePointer?
        try nngCheck(nng_msg_alloc(&request, max(0, requestSize)), "nng_msg_alloc")
        write(UnsafeMutableRawBufferPointer(start: nng_msg_body(request), count: max(0, requestSize)))

        func remaining() throws(NNGError) -> Int32 {
            let ms = nngMilliseconds(deadline - .now)
            if ms <= 0 { throw NNGError(code: NNGError.timedOut.code, operation: "NNGRequestClient.call") }
            return ms
        }
        let sendTimeout: Int32
        do throws(NNGError) { sendTimeout = try remaining() } catch { nng_msg_free(request); throw error }
        nng_aio_set_timeout(aio, sendTimeout)
        nng_aio_set_msg(aio, request)
        nng_ctx_send(slot.ctx, aio)
        nng_aio_wait(aio)
        let sent = nng_aio_result(aio)
        if sent != 0 {
            if let msg = nng_aio_get_msg(aio) { nng_msg_free(msg) }  // still ours on failure
            nng_aio_set_msg(aio, nil)
            throw NNGError(code: sent, operation: "nng_ctx_send(\(configuration.url))")
        }

        nng_aio_set_timeout(aio, try remaining())
        nng_ctx_recv(slot.ctx, aio)
        nng_aio_wait(aio)
        let got = nng_aio_result(aio)
        if got != 0 { throw NNGError(code: got, operation: "nng_ctx_recv(\(configuration.url))") }
        guard let reply = nng_aio_get_msg(aio) else { throw NNGError.internalError }
        nng_aio_set_msg(aio, nil)
        defer { nng_msg_free(reply) }
        return read(UnsafeRawBufferPointer(start: nng_msg_body(reply), count: nng_msg_len(reply)))
    }

    /// Sends `request` and returns the reply bytes. See ``call(requestSize:timeout:write:read:)``.
    public func call(_ request: [UInt8], timeout: Duration) throws(NNGError) -> [UInt8] {
        try call(requestSize: request.count, timeout: timeout,
                 write: { out in request.withUnsafeBytes { out.copyMemory(from: $0) } },
                 read: { Array($0.bindMemory(to: UInt8.self)) })
    }
}

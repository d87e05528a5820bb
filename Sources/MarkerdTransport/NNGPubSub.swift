internal import CNNG

/// An NNG PUB socket listening on one or more URLs (`tcp://host:port`, `ipc:///path`): every
/// message sent goes to every connected subscriber whose subscriptions match its first bytes.
/// Sending never blocks: a subscriber whose queue is full (it reads too slowly) misses messages
/// (nng's pub0 drops them, it does not wait). Thread-safe.
public final class NNGPublisher: @unchecked Sendable {
    private let socket: nng_socket
    /// The listen URLs as bound (a tcp port 0 resolved to the real port).
    public let boundURLs: [String]

    /// Opens the socket and starts every listener.
    /// - Parameter sendBufferMessages: messages queued per subscriber before nng drops the
    ///   newest for it (`NNG_OPT_SENDBUF`, 0-8192). Default 1024.
    /// - Throws: `.invalidArgument` for an empty list, a `tls+` URL (not supported) or a bad
    ///   buffer size, `.addressInvalid` / `.addressInUse` for a URL that cannot be listened on;
    ///   on a throw nothing stays open.
    public init(listenURLs: [String], sendBufferMessages: Int = 1024) throws(NNGError) {
        guard !listenURLs.isEmpty, !listenURLs.contains(where: { $0.hasPrefix("tls+") }),
              (0...8192).contains(sendBufferMessages) else {
            throw NNGError(code: NNGError.invalidArgument.code, operation: "NNGPublisher: listen URLs \(listenURLs) (tcp:// or ipc://), send buffer \(sendBufferMessages)")
        }
        var sock = nng_socket()
        try nngCheck(nng_pub0_open(&sock), "nng_pub0_open")
        var urls: [String] = []
        do throws(NNGError) {
            try nngCheck(nng_socket_set_int(sock, NNG_OPT_SENDBUF, Int32(sendBufferMessages)), "nng_socket_set_int(\(NNG_OPT_SENDBUF))")
            for url in listenURLs {
                var listener = nng_listener()
                try nngCheck(nng_listener_create(&listener, sock, url), "nng_listener_create(\(url))")
                try nngCheck(nng_listener_start(listener, 0), "nng_listener_start(\(url))")
                var port: Int32 = 0
                let bound = url.hasPrefix("tcp://") && nng_listener_get_int(listener, NNG_OPT_TCP_BOUND_PORT, &port) == 0
                urls.append(bound ? NNGReplyServer.replacingZeroPort(url, with: Int(port)) : url)
            }
        } catch {
            nng_close(sock)
            throw error
        }
        socket = sock
        boundURLs = urls
    }

    deinit { nng_close(socket) }

    /// Sends `message` (its first bytes are the topic subscribers match). Never blocks.
    /// - Throws: `.closed` after `close()`.
    public func send(_ message: [UInt8]) throws(NNGError) {
        let status = message.withUnsafeBytes { nng_send(socket, UnsafeMutableRawPointer(mutating: $0.baseAddress), $0.count, cnng_flag_nonblock()) }
        // pub0 accepts every message (it drops per subscriber); EAGAIN is not expected.
        try nngCheck(status, "nng_send(pub)")
    }

    /// Closes the socket and its listeners. Idempotent.
    public func close() { nng_close(socket) }
}

/// An NNG SUB socket dialing one publisher (reconnecting on its own when the connection drops,
/// without replaying what was missed). Receives only messages whose first bytes match one of
/// its topics. For tests, marker-bench and the Swift client's subscriber.
public final class NNGSubscriber: @unchecked Sendable {
    private let socket: nng_socket

    /// Opens the socket, subscribes to `topics` (an empty topic takes every message) and starts
    /// dialing `url` in the background (the publisher may come up later).
    /// - Parameter receiveTimeout: how long `receive()` waits; nil waits forever.
    /// - Throws: `.addressInvalid` for a bad URL, `.invalidArgument` for a bad option.
    public init(url: String, topics: [[UInt8]], receiveTimeout: Duration? = nil) throws(NNGError) {
        var sock = nng_socket()
        try nngCheck(nng_sub0_open(&sock), "nng_sub0_open")
        do throws(NNGError) {
            for topic in topics {
                try nngCheck(topic.withUnsafeBytes { nng_socket_set(sock, NNG_OPT_SUB_SUBSCRIBE, $0.baseAddress, $0.count) },
                             "nng_socket_set(\(NNG_OPT_SUB_SUBSCRIBE))")
            }
            if let receiveTimeout {
                try nngCheck(nng_socket_set_ms(sock, NNG_OPT_RECVTIMEO, nngMilliseconds(receiveTimeout)), "nng_socket_set_ms(\(NNG_OPT_RECVTIMEO))")
            }
            try nngCheck(nng_dial(sock, url, nil, cnng_flag_nonblock()), "nng_dial(\(url))")
        } catch {
            nng_close(sock)
            throw error
        }
        socket = sock
    }

    deinit { nng_close(socket) }

    /// The next message (topic included). Blocks up to the receive timeout.
    /// - Throws: `.timedOut`, or `.closed` once `close()` was called.
    public func receive() throws(NNGError) -> [UInt8] {
        var msg: OpaquePointer?
        try nngCheck(nng_recvmsg(socket, &msg, 0), "nng_recvmsg(sub)")
        defer { nng_msg_free(msg) }
        let n = nng_msg_len(msg)
        guard n > 0, let body = nng_msg_body(msg) else { return [] }
        return Array(UnsafeRawBufferPointer(start: body, count: n))
    }

    /// Closes the socket: a `receive()` in progress throws `.closed`. Idempotent.
    public func close() { nng_close(socket) }
}

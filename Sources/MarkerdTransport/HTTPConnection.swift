internal import CNNG
#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Synchronization

/// Runs `body` on a new detached thread with a stack of `stackSize` bytes. Returns false (and
/// does not run it) if the system refuses the thread.
func detachThread(stackSize: Int, _ body: @escaping @Sendable () -> Void) -> Bool {
    final class Box { let body: @Sendable () -> Void; init(_ b: @escaping @Sendable () -> Void) { body = b } }
    var attr = pthread_attr_t()
    pthread_attr_init(&attr)
    defer { pthread_attr_destroy(&attr) }
    pthread_attr_setdetachstate(&attr, Int32(PTHREAD_CREATE_DETACHED))
    pthread_attr_setstacksize(&attr, stackSize)
    let box = Unmanaged.passRetained(Box(body))
    #if canImport(Darwin)
    var thread: pthread_t?
    #else
    var thread = pthread_t()
    #endif
    let rc = pthread_create(&thread, &attr, { arg in
        let box = Unmanaged<Box>.fromOpaque(arg!).takeRetainedValue()
        box.body()
        return nil
    }, box.toOpaque())
    if rc != 0 { box.release() }
    return rc == 0
}

/// One accepted connection of an ``NNGHTTPServer``, served by a thread of its own
/// (``run()``): read a request head (bounded in bytes and time), discard its body, get the
/// response from the core, write it, repeat until either side closes.
final class HTTPConnection: @unchecked Sendable {
    private let stream: OpaquePointer          // nng_stream *, freed by run() after core.remove(self)
    private let core: HTTPServerCore
    private let state = Mutex<(busy: Bool, closed: Bool, streaming: HTTPBodyStream?)>((false, false, nil))
    private var buffer: [UInt8] = []           // only run()'s thread: bytes read and not yet consumed
    private var searched = 0                   // only run()'s thread: buffer prefix known to hold no head end

    init(stream: OpaquePointer, core: HTTPServerCore) {
        self.stream = stream
        self.core = core
    }

    /// Closes the stream unless a request is being answered (stop: idle connections go first).
    func closeIfIdle() {
        state.withLock {
            guard !$0.busy, !$0.closed else { return }
            $0.closed = true
            nng_stream_close(stream)
        }
    }

    /// Closes the stream now; the connection's thread then sees its read or write fail.
    func close() {
        let streaming = state.withLock { s -> HTTPBodyStream? in
            guard !s.closed else { return nil }
            s.closed = true
            nng_stream_close(stream)
            return s.streaming
        }
        streaming?.close()
    }

    /// Answers `response` with `Connection: close` (a stalled write gives up after 1 s), lets
    /// the client read it, then frees the stream: for connections never admitted.
    func refuse(_ response: HTTPResponse) {
        defer { free() }
        guard let io = IO(stream: stream) else { return }
        defer { io.free() }
        if io.write(serialize(response, headOnly: false, close: true), timeout: .seconds(1)) == .data {
            io.lingeringClose()
        }
    }

    /// Frees the stream of a connection that has no thread (never admitted, or no thread left).
    func free() { nng_stream_free(stream) }

    /// The connection's thread: serves requests until the client closes, a timeout, a refused
    /// request or stop. Frees the stream at the end.
    func run() {
        defer {
            core.remove(self)
            // A streamed body's close (`HTTPBodyStream.onClose`, any thread) finds it closed.
            state.withLock { $0.closed = true }
            free()
        }
        guard let io = IO(stream: stream) else { return }
        defer { io.free() }
        let config = core.configuration
        while true {
            // The head: idle timeout until its first byte, header timeout from then on.
            var deadline: ContinuousClock.Instant? = buffer.isEmpty ? nil : .now + config.headerTimeout
            let head: HTTPRequestHead
            readHead: while true {
                let result: HTTPRequestHead.ParseResult =
                    headEndBuffered() || buffer.count > config.maxRequestLineBytes + config.maxHeaderBytes + 2
                    ? HTTPRequestHead.parse(buffer[...], limits: config.headLimits) : .incomplete
                switch result {
                case .complete(let h, let length):
                    consume(length)
                    head = h
                    break readHead
                case .failed(let failure):
                    // The method is known even when the rest of the head is refused.
                    let isHead = buffer.drop(while: { $0 == 13 || $0 == 10 }).starts(with: "HEAD ".utf8)
                    return refuse(failure.status, failure.message, io: io, headOnly: isHead)
                case .incomplete:
                    switch io.read(into: &buffer, until: deadline ?? .now + config.idleTimeout) {
                    case .data:
                        if deadline == nil { deadline = .now + config.headerTimeout }
                    case .timedOut:
                        guard deadline != nil else {
                            core.idleTimeouts.add(1, ordering: .relaxed)
                            return
                        }
                        core.headerTimeouts.add(1, ordering: .relaxed)
                        return refuse(408, "request not received within \(config.headerTimeout)", io: io, counted: false)
                    case .closed:
                        return
                    }
                }
            }
            // The body: refused or read and dropped, within the same deadline.
            let isHead = head.method == "HEAD"
            if head.field("transfer-encoding") != nil {
                return refuse(501, "request bodies with Transfer-Encoding are not supported", io: io, headOnly: isHead)
            }
            if let text = head.field("content-length") {
                guard !text.isEmpty, text.utf8.count <= 18, text.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }),
                      let length = Int(text) else {
                    return refuse(400, "Content-Length \"\(text)\" is not one decimal number", io: io, headOnly: isHead)
                }
                guard length <= config.maxRequestBodyBytes else {
                    return refuse(413, "request body larger than \(config.maxRequestBodyBytes) bytes", io: io, headOnly: isHead)
                }
                var left = length
                while true {
                    let n = min(left, buffer.count)
                    consume(n)
                    left -= n
                    if left == 0 { break }
                    switch io.read(into: &buffer, until: deadline ?? .now + config.headerTimeout) {
                    case .data: continue
                    case .timedOut:
                        core.headerTimeouts.add(1, ordering: .relaxed)
                        return refuse(408, "request body not received within \(config.headerTimeout)", io: io,
                                      counted: false, headOnly: isHead)
                    case .closed: return
                    }
                }
            }
            if head.minorVersion == 1, head.field("host") == nil {
                return refuse(400, "HTTP/1.1 request without Host", io: io, headOnly: isHead)
            }

            var headers: [String: String] = [:]
            for f in head.fields { headers[f.name] = headers[f.name].map { $0 + ", " + f.value } ?? f.value }
            let request = HTTPRequest(method: head.method, target: head.target, headers: headers)
            let wantsClose = head.minorVersion == 0
                || (head.field("connection") ?? "").split(separator: ",").contains {
                    $0.lowercased().split(separator: " ").contains("close")
                }
            state.withLock { $0.busy = true }
            let response = core.respond(to: request)
            if let body = response.bodyStream {
                defer { body.close() }
                if !isHead { return stream(response, body, io: io) }
            }
            let closing = wantsClose || core.isStopping
            core.responded.add(1, ordering: .relaxed)
            let written = io.write(serialize(response, headOnly: isHead, close: closing),
                                   timeout: config.idleTimeout)
            state.withLock { $0.busy = false }
            switch written {
            case .data: break
            case .timedOut:
                core.idleTimeouts.add(1, ordering: .relaxed)
                return
            case .closed: return
            }
            if closing {
                // Bytes after a request that asked to close (a pipelined request) would make the
                // close a reset that can destroy the response before the client reads it.
                if !buffer.isEmpty { io.lingeringClose() }
                return
            }
        }
    }

    /// Writes the head of a streamed response, then its bytes as they come (see
    /// ``HTTPBodyStream``) until either side closes; a write that takes longer than the idle
    /// timeout drops the client, and so does the stream's closing (a write in progress is cut).
    private func stream(_ response: HTTPResponse, _ body: HTTPBodyStream, io: IO) {
        state.withLock { $0.streaming = body }
        let closedMeanwhile = state.withLock { $0.closed }
        if closedMeanwhile { return }
        // Closed by the handler or as too slow: close the connection now, even mid-write.
        body.onClose { [weak self] in self?.close() }
        var head = serialize(response, headOnly: true, close: true)
        // No Content-Length: the body ends with the connection.
        if let range = head.firstRange(of: Array("Content-Length: 0\r\n".utf8)) { head.removeSubrange(range) }
        var chunk: [UInt8]? = head
        while let bytes = chunk {
            switch io.write(bytes, timeout: core.configuration.idleTimeout) {
            case .data: chunk = body.next()
            case .timedOut:
                core.idleTimeouts.add(1, ordering: .relaxed)
                return
            case .closed: return
            }
        }
    }

    /// Writes a refusal with `Connection: close` (without its body when answering a HEAD
    /// request), then lets the client read it before closing.
    private func refuse(_ status: Int, _ message: String, io: IO, counted: Bool = true, headOnly: Bool = false) {
        if counted { core.refused.add(1, ordering: .relaxed) }
        let response = HTTPResponse.text(status, message + "\n")
        if io.write(serialize(response, headOnly: headOnly, close: true), timeout: core.configuration.idleTimeout) == .data {
            io.lingeringClose()
        }
    }

    /// Whether the buffer holds the end of a head (an empty line after a line), searching only
    /// bytes not searched before (so a client sending a byte at a time costs linear time).
    private func headEndBuffered() -> Bool {
        let lf = UInt8(ascii: "\n"), cr = UInt8(ascii: "\r")
        var i = max(searched, 1)
        while i < buffer.count {
            if buffer[i] == lf && (buffer[i - 1] == lf || (i >= 2 && buffer[i - 1] == cr && buffer[i - 2] == lf)) {
                return true
            }
            i += 1
        }
        searched = buffer.count
        return false
    }

    private func consume(_ n: Int) {
        guard n > 0 else { return }
        buffer.removeFirst(n)
        searched = 0
    }

    /// The response's bytes: status line, the configuration's default headers merged with the
    /// response's (`Content-Length`, `Connection` and `Transfer-Encoding` are the server's),
    /// `Content-Length` (not for 1xx, 204, 304), then the body unless `headOnly` or 204/304.
    private func serialize(_ response: HTTPResponse, headOnly: Bool, close: Bool) -> [UInt8] {
        let status = min(max(response.status, 100), 599)
        var headers = core.configuration.defaultHeaders
        for h in response.headers {
            headers.removeAll { $0.name.caseInsensitiveEquals(h.name) }
            headers.append(h)
        }
        let reserved = ["content-length", "connection", "transfer-encoding"]
        var text = "HTTP/1.1 \(status) \(Self.reason(status))\r\n"
        for h in headers where !reserved.contains(h.name.lowercased()) && Self.isToken(h.name) {
            // A value never ends the line early (no CR, LF or NUL from a handler reaches the wire).
            let breaksLine = h.value.utf8.contains { $0 == 13 || $0 == 10 || $0 == 0 }
            let value = breaksLine ? String(decoding: h.value.utf8.map { $0 == 13 || $0 == 10 || $0 == 0 ? 32 : $0 }, as: UTF8.self)
                                   : h.value
            text += "\(h.name): \(value)\r\n"
        }
        let bodyless = status < 200 || status == 204 || status == 304
        if !bodyless { text += "Content-Length: \(response.body.count)\r\n" }
        if close { text += "Connection: close\r\n" }
        text += "\r\n"
        var out = Array(text.utf8)
        if !bodyless && !headOnly { out += response.body }
        return out
    }

    private static func isToken(_ name: String) -> Bool {
        !name.isEmpty && name.utf8.allSatisfy { b in
            (b >= 0x30 && b <= 0x39) || (b >= 0x41 && b <= 0x5A) || (b >= 0x61 && b <= 0x7A) || "!#$%&'*+-.^_`|~".utf8.contains(b)
        }
    }

    /// The reason phrase of a status (RFC 9110 section 15).
    static func reason(_ status: Int) -> String {
        switch status {
        case 200: "OK"
        case 204: "No Content"
        case 301: "Moved Permanently"
        case 302: "Found"
        case 307: "Temporary Redirect"
        case 304: "Not Modified"
        case 400: "Bad Request"
        case 403: "Forbidden"
        case 404: "Not Found"
        case 405: "Method Not Allowed"
        case 408: "Request Timeout"
        case 413: "Content Too Large"
        case 414: "URI Too Long"
        case 431: "Request Header Fields Too Large"
        case 500: "Internal Server Error"
        case 501: "Not Implemented"
        case 503: "Service Unavailable"
        case 505: "HTTP Version Not Supported"
        default: status < 300 ? "OK" : status < 400 ? "Redirect" : status < 500 ? "Client Error" : "Server Error"
        }
    }
}

/// Synchronous reads and writes on an nng stream with one aio and a 16 KiB read buffer.
private struct IO {
    enum Outcome: Equatable { case data, timedOut, closed }

    let stream: OpaquePointer
    let aio: OpaquePointer
    let chunk: UnsafeMutableRawBufferPointer

    init?(stream: OpaquePointer) {
        var a: OpaquePointer?
        guard nng_aio_alloc(&a, nil, nil) == 0, let a else { return nil }
        self.stream = stream
        self.aio = a
        self.chunk = .allocate(byteCount: 16 << 10, alignment: 16)
    }

    func free() {
        nng_aio_free(aio)
        chunk.deallocate()
    }

    /// Appends what one receive brings (at most 16 KiB) to `buffer`.
    func read(into buffer: inout [UInt8], until deadline: ContinuousClock.Instant) -> Outcome {
        let left = deadline - .now
        guard left > .zero else { return .timedOut }
        var iov = nng_iov(iov_buf: chunk.baseAddress, iov_len: chunk.count)
        guard nng_aio_set_iov(aio, 1, &iov) == 0 else { return .closed }
        nng_aio_set_timeout(aio, nngMilliseconds(left))
        nng_stream_recv(stream, aio)
        nng_aio_wait(aio)
        let rv = nng_aio_result(aio)
        if rv == NNGError.timedOut.code { return .timedOut }
        let n = nng_aio_count(aio)
        guard rv == 0, n > 0 else { return .closed }
        buffer.append(contentsOf: UnsafeRawBufferPointer(rebasing: chunk[..<n]))
        return .data
    }

    /// Writes all of `bytes`; each send may stall at most `timeout`.
    func write(_ bytes: [UInt8], timeout: Duration) -> Outcome {
        bytes.withUnsafeBytes { all in
            var sent = 0
            while sent < all.count {
                var iov = nng_iov(iov_buf: UnsafeMutableRawPointer(mutating: all.baseAddress! + sent), iov_len: all.count - sent)
                guard nng_aio_set_iov(aio, 1, &iov) == 0 else { return .closed }
                nng_aio_set_timeout(aio, nngMilliseconds(timeout))
                nng_stream_send(stream, aio)
                nng_aio_wait(aio)
                let rv = nng_aio_result(aio)
                if rv == NNGError.timedOut.code { return .timedOut }
                guard rv == 0 else { return .closed }
                sent += nng_aio_count(aio)
            }
            return .data
        }
    }

    /// Before closing after a response: reads and drops what the client still sends (the rest
    /// of an oversized request) until it closes or pauses for 250 ms, at most 2 s and 4 MiB, so
    /// that closing does not reset the connection before the client has read the response.
    func lingeringClose() {
        let until = ContinuousClock.now + .seconds(2)
        var dropped = 0
        var scratch: [UInt8] = []
        while dropped < 4 << 20 {
            scratch.removeAll(keepingCapacity: true)
            guard read(into: &scratch, until: min(until, .now + .milliseconds(250))) == .data else { return }
            dropped += scratch.count
        }
    }
}

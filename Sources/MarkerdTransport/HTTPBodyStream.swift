/// A response body written as it is produced (Server-Sent Events): the handler answers with an
/// ``HTTPResponse`` whose ``HTTPResponse/bodyStream`` is set, then calls ``write(_:)`` from any
/// thread whenever it has bytes. The connection sends the head without `Content-Length`, with
/// `Connection: close`, then the bytes as they come, and `keepAlive` bytes whenever nothing
/// came for `keepAliveEvery`; the body ends when either side closes.
///
/// ``write(_:)`` never waits: past `maxBufferedBytes` not yet sent (a client reading too slowly)
/// the stream is closed and the client dropped. Thread-safe.
public final class HTTPBodyStream: @unchecked Sendable, Equatable {
    private let lock = ConditionLock()
    private var queued: [UInt8] = []     // guarded by lock
    private var closed = false           // guarded by lock
    private var onClose: [@Sendable () -> Void] = []  // guarded by lock
    public let maxBufferedBytes: Int
    public let keepAliveEvery: Duration
    public let keepAlive: [UInt8]

    /// - Parameters:
    ///   - maxBufferedBytes: bytes queued for a slow client before it is dropped. Default 1 MiB.
    ///   - keepAliveEvery: the longest silence; then `keepAlive` is sent. Default 15 s.
    ///   - keepAlive: bytes that mean nothing to the client (an SSE comment: ":\n\n").
    public init(maxBufferedBytes: Int = 1 << 20, keepAliveEvery: Duration = .seconds(15), keepAlive: [UInt8] = Array(":\n\n".utf8)) {
        self.maxBufferedBytes = maxBufferedBytes
        self.keepAliveEvery = keepAliveEvery
        self.keepAlive = keepAlive
    }

    public static func == (a: HTTPBodyStream, b: HTTPBodyStream) -> Bool { a === b }

    /// Queues `bytes`. Returns false when the stream is closed, or closes it and returns false
    /// when the client is too far behind.
    @discardableResult
    public func write(_ bytes: [UInt8]) -> Bool {
        let (written, handlers) = lock.withLock { () -> (Bool, [@Sendable () -> Void]) in
            if closed { return (false, []) }
            if queued.count + bytes.count > maxBufferedBytes { return (false, closeLocked()) }
            queued += bytes
            lock.broadcast()
            return (true, [])
        }
        handlers.forEach { $0() }
        return written
    }

    /// Ends the body (the connection closes). Idempotent.
    public func close() {
        let handlers = lock.withLock { closed ? [] : closeLocked() }
        handlers.forEach { $0() }
    }

    /// Called once when the stream closes (by the handler, the client, a slow read or stop);
    /// at once when it is closed already.
    public func onClose(_ body: @escaping @Sendable () -> Void) {
        let now = lock.withLock { () -> Bool in
            if closed { return true }
            onClose.append(body)
            return false
        }
        if now { body() }
    }

    public var isClosed: Bool { lock.withLock { closed } }

    private func closeLocked() -> [@Sendable () -> Void] {
        closed = true
        lock.broadcast()
        defer { onClose = [] }
        return onClose
    }

    /// For the connection's thread: the bytes queued, `keepAlive` after `keepAliveEvery` without
    /// any, nil once closed.
    func next() -> [UInt8]? {
        lock.withLock {
            if queued.isEmpty && !closed { _ = lock.wait(timeout: keepAliveEvery) }
            if closed { return nil }
            if queued.isEmpty { return keepAlive }
            defer { queued = [] }
            return queued
        }
    }
}

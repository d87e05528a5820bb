#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation
import Synchronization

/// A deliberately small HTTP/1.1 server on 127.0.0.1 (a free port) for tests of outgoing
/// requests (webhooks): one request per connection, read by its `Content-Length`, answered with
/// the next status of `statuses` (then 200) and closed. Keeps every request it read.
public final class RawHTTPReceiver: Sendable {
    public struct Request: Sendable {
        public var requestLine: String
        /// Header names lowercased.
        public var headers: [String: String]
        public var body: [UInt8]
    }

    public let port: Int
    private let fd: Int32
    private let state: Mutex<(statuses: [Int], requests: [Request], stopped: Bool)>

    /// Listens and starts accepting on a background thread.
    public init(statuses: [Int] = []) throws {
        let s = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard s >= 0 else { throw RawHTTPError(description: "socket: errno \(errno)") }
        var one: Int32 = 1
        setsockopt(s, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        let bound = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(s, $0, len) == 0 && listen(s, 16) == 0 && getsockname(s, $0, &len) == 0 }
        }
        guard bound else {
            close(s)
            throw RawHTTPError(description: "bind/listen: errno \(errno)")
        }
        fd = s
        port = Int(UInt16(bigEndian: addr.sin_port))
        state = Mutex((statuses, [], false))
        Thread.detachNewThread { [self] in acceptLoop() }
    }

    /// The requests read so far, in order.
    public var requests: [Request] { state.withLock { $0.requests } }

    /// Stops accepting (the listening socket is closed).
    public func stop() {
        state.withLock { $0.stopped = true }
        shutdown(fd, Int32(SHUT_RDWR))
        close(fd)
    }

    private func acceptLoop() {
        while true {
            let c = accept(fd, nil, nil)
            if c < 0 {
                if state.withLock({ $0.stopped }) { return }
                continue
            }
            serve(c)
            close(c)
        }
    }

    private func serve(_ c: Int32) {
        var tv = timeval(tv_sec: 10, tv_usec: 0)
        setsockopt(c, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var data: [UInt8] = []
        var buffer = [UInt8](repeating: 0, count: 4096)
        let end = Array("\r\n\r\n".utf8)
        var headerEnd: Int? = nil
        var needed = Int.max
        while data.count < needed {
            let n = buffer.withUnsafeMutableBytes { recv(c, $0.baseAddress, $0.count, 0) }
            guard n > 0 else { return }
            data += buffer[..<n]
            if headerEnd == nil, let r = data.indices.dropLast(3).first(where: { Array(data[$0..<$0 + 4]) == end }) {
                headerEnd = r + 4
                let head = String(decoding: data[..<r], as: UTF8.self).components(separatedBy: "\r\n")
                let length = head.dropFirst().compactMap { line -> Int? in
                    let p = line.split(separator: ":", maxSplits: 1)
                    return p.count == 2 && p[0].lowercased() == "content-length" ? Int(p[1].trimmingCharacters(in: .whitespaces)) : nil
                }.first ?? 0
                needed = r + 4 + length
            }
        }
        guard let headerEnd else { return }
        let head = String(decoding: data[..<(headerEnd - 4)], as: UTF8.self).components(separatedBy: "\r\n")
        var headers: [String: String] = [:]
        for line in head.dropFirst() {
            let p = line.split(separator: ":", maxSplits: 1)
            if p.count == 2 { headers[p[0].lowercased()] = p[1].trimmingCharacters(in: .whitespaces) }
        }
        let status = state.withLock { s -> Int in
            s.requests.append(Request(requestLine: head.first ?? "", headers: headers, body: Array(data[headerEnd..<needed])))
            return s.statuses.isEmpty ? 200 : s.statuses.removeFirst()
        }
        let reply = Array("HTTP/1.1 \(status) X\r\nContent-Length: 0\r\nConnection: close\r\n\r\n".utf8)
        _ = reply.withUnsafeBytes { send(c, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
    }
}

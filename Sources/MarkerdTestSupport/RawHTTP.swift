#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A deliberately small HTTP/1.1 client over a raw TCP socket (one request per connection,
/// `Connection: close`, the response read by its `Content-Length`, or to EOF without one), so
/// the tests see exactly what the server sent.
public struct RawHTTPResponse: Sendable {
    public var status: Int
    public var reason: String
    /// Header names lowercased; a repeated header keeps the last value.
    public var headers: [String: String]
    public var headerLines: [String]
    public var body: [UInt8]
    public var text: String { String(decoding: body, as: UTF8.self) }
    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

public struct RawHTTPError: Error, CustomStringConvertible {
    public var description: String
}

/// A raw TCP connection to 127.0.0.1, for tests that send a request in pieces, pipeline
/// several, or hold a connection idle, and see exactly what the server sends back.
public final class RawConnection {
    public let fd: Int32

    /// Connects to 127.0.0.1:`port`; reads time out after `timeoutSeconds`.
    public init(port: Int, timeoutSeconds: Int = 20) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawHTTPError(description: "socket: errno \(errno)") }
        var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else {
            let e = errno
            close(fd)
            throw RawHTTPError(description: "connect to port \(port): errno \(e)")
        }
    }

    deinit { close(fd) }

    /// Sends all of `bytes`. Throws when the server closed or reset the connection.
    public func send(_ bytes: [UInt8]) throws {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw RawHTTPError(description: "send after \(sent) bytes: errno \(errno)") }
            sent += n
        }
    }

    public func send(_ text: String) throws { try send(Array(text.utf8)) }

    /// Reads until the server closes the connection. Throws if the read timeout passes first,
    /// or on a reset before any byte arrived.
    public func readToEOF() throws -> [UInt8] {
        var data: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { return data }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == ECONNRESET && !data.isEmpty { return data }
                throw RawHTTPError(description: "recv after \(data.count) bytes: errno \(errno)")
            }
            data.append(contentsOf: buf[0..<n])
        }
    }

    /// Reads one response to a `method` request: its head, then `Content-Length` body bytes
    /// (none for HEAD, 1xx, 204 and 304), or everything until the server closes when there is no
    /// length. Bytes after it stay unread.
    public func readResponse(method: String) throws -> RawHTTPResponse {
        var data: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        func more() throws -> Bool {
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n > 0 { data.append(contentsOf: buf[0..<n]); return true }
            if n == 0 || (errno == ECONNRESET && !data.isEmpty) { return false }
            if errno == EINTR { return true }
            throw RawHTTPError(description: "recv after \(data.count) bytes: errno \(errno)")
        }
        let sep: [UInt8] = [13, 10, 13, 10]
        var headEnd: Int?
        while headEnd == nil {
            headEnd = data.count < 4 ? nil : (0...(data.count - 4)).first { data[$0..<$0 + 4].elementsEqual(sep) }
            if headEnd == nil, try !more() { break }
        }
        guard let headEnd else { return try RawHTTP.parse(data, method: method) }
        let head = try RawHTTP.parse(Array(data[..<(headEnd + 4)]), method: method)
        let length = method == "HEAD" || head.status < 200 || head.status == 204 || head.status == 304
            ? 0 : head.header("Content-Length").flatMap(Int.init)
        while length.map({ data.count < headEnd + 4 + $0 }) ?? true, try more() {}
        return try RawHTTP.parse(data, method: method)
    }

    /// The bytes one read returns (waiting up to the read timeout): empty when the server closed.
    /// For streamed bodies (Server-Sent Events).
    public func readSome() throws -> [UInt8] {
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n >= 0 { return Array(buf[0..<n]) }
            if errno != EINTR { throw RawHTTPError(description: "recv: errno \(errno)") }
        }
    }

    /// Whether the server has sent something or closed within `milliseconds`.
    public func readable(withinMilliseconds milliseconds: Int32) -> Bool {
        var p = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
        return poll(&p, 1, milliseconds) > 0
    }
}

public enum RawHTTP {
    /// Sends one request to 127.0.0.1:`port` and reads the whole response. Throws on connect or
    /// protocol failure (including the server closing without a response).
    public static func request(port: Int, _ method: String = "GET", _ target: String,
                        headers: [(String, String)] = [], host: String? = nil,
                        timeoutSeconds: Int = 20) throws -> RawHTTPResponse {
        let connection = try RawConnection(port: port, timeoutSeconds: timeoutSeconds)
        var head = "\(method) \(target) HTTP/1.1\r\nHost: \(host ?? "127.0.0.1:\(port)")\r\nConnection: close\r\n"
        for (k, v) in headers { head += "\(k): \(v)\r\n" }
        head += "\r\n"
        try connection.send(head)
        return try connection.readResponse(method: method)
    }

    public static func parse(_ data: [UInt8], method: String) throws -> RawHTTPResponse {
        let sep: [UInt8] = [13, 10, 13, 10]
        guard let end = (0...(max(0, data.count - 4))).first(where: { data.count >= 4 && Array(data[$0..<$0 + 4]) == sep }) else {
            throw RawHTTPError(description: "no header end in \(data.count) bytes: \(String(decoding: data, as: UTF8.self))")
        }
        let lines = String(decoding: data[0..<end], as: UTF8.self).components(separatedBy: "\r\n")
        let statusParts = lines[0].split(separator: " ", maxSplits: 2)
        guard statusParts.count >= 2, let status = Int(statusParts[1]) else {
            throw RawHTTPError(description: "bad status line \(lines[0])")
        }
        var headers: [String: String] = [:]
        for line in lines.dropFirst() {
            guard let colon = line.firstIndex(of: ":") else { continue }
            headers[line[..<colon].lowercased()] = line[line.index(after: colon)...].trimmingCharacters(in: .whitespaces)
        }
        var body = Array(data[(end + 4)...])
        if method != "HEAD", let cl = headers["content-length"].flatMap(Int.init), body.count > cl {
            body = Array(body[0..<cl])
        }
        return RawHTTPResponse(status: status, reason: statusParts.count > 2 ? String(statusParts[2]) : "",
                               headers: headers, headerLines: Array(lines.dropFirst()), body: body)
    }
}

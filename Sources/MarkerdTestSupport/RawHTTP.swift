#if canImport(Glibc)
import Glibc
#elseif canImport(Darwin)
import Darwin
#endif
import Foundation

/// A deliberately small HTTP/1.1 client over a raw TCP socket (one request per connection,
/// `Connection: close`, read to EOF), so the tests see exactly what the server sent.
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

public enum RawHTTP {
    /// Sends one request to 127.0.0.1:`port` and reads the whole response. Throws on connect or
    /// protocol failure (including the server closing without a response).
    public static func request(port: Int, _ method: String = "GET", _ target: String,
                        headers: [(String, String)] = [], host: String? = nil,
                        timeoutSeconds: Int = 20) throws -> RawHTTPResponse {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw RawHTTPError(description: "socket: errno \(errno)") }
        defer { close(fd) }
        var tv = timeval(tv_sec: timeoutSeconds, tv_usec: 0)
        setsockopt(fd, SOL_SOCKET, SO_RCVTIMEO, &tv, socklen_t(MemoryLayout<timeval>.size))
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = in_port_t(UInt16(port).bigEndian)
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        let rc = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard rc == 0 else { throw RawHTTPError(description: "connect to port \(port): errno \(errno)") }
        var head = "\(method) \(target) HTTP/1.1\r\nHost: \(host ?? "127.0.0.1:\(port)")\r\nConnection: close\r\n"
        for (k, v) in headers { head += "\(k): \(v)\r\n" }
        head += "\r\n"
        let out = Array(head.utf8)
        var sent = 0
        while sent < out.count {
            let n = out[sent...].withUnsafeBytes { send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard n > 0 else { throw RawHTTPError(description: "send: errno \(errno)") }
            sent += n
        }
        var data: [UInt8] = []
        var buf = [UInt8](repeating: 0, count: 65536)
        while true {
            let n = buf.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            if n == 0 { break }
            if n < 0 {
                if errno == EINTR { continue }
                if errno == ECONNRESET && !data.isEmpty { break }
                throw RawHTTPError(description: "recv after \(data.count) bytes: errno \(errno)")
            }
            data.append(contentsOf: buf[0..<n])
        }
        return try parse(data, method: method)
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

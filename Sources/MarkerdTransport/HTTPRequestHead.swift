/// The request line and header fields of one HTTP/1.x request, as parsed by
/// ``HTTPRequestHead/parse(_:limits:)``.
struct HTTPRequestHead: Equatable {
    var method: String
    /// The request target as sent (origin form `/path?query`; an absolute-form target
    /// `http://host/path` is reduced to its path and query).
    var target: String
    /// 0 for HTTP/1.0, 1 for HTTP/1.1.
    var minorVersion: Int
    /// Header fields in order, names lowercased, values without surrounding whitespace.
    var fields: [(name: String, value: String)]

    static func == (a: HTTPRequestHead, b: HTTPRequestHead) -> Bool {
        a.method == b.method && a.target == b.target && a.minorVersion == b.minorVersion
            && a.fields.map(\.name) == b.fields.map(\.name) && a.fields.map(\.value) == b.fields.map(\.value)
    }

    /// The value of field `name` (lowercase); repeated fields joined with ", " (RFC 9110 5.3).
    func field(_ name: String) -> String? {
        let values = fields.filter { $0.name == name }.map(\.value)
        return values.isEmpty ? nil : values.joined(separator: ", ")
    }

    /// Size limits of a request head. Exceeding one is answered by the server, never the handler.
    struct Limits: Equatable {
        /// Longest request line (method, target and version), in bytes, without its CRLF. Longer:
        /// `414 URI Too Long`.
        var requestLineBytes: Int
        /// Largest header section (every field line with its CRLF, after the request line), in
        /// bytes. Larger: `431 Request Header Fields Too Large`.
        var headerBytes: Int
    }

    /// Why a head was refused: the status the server answers (then it closes the connection).
    struct Failure: Error, Equatable {
        var status: Int
        var message: String
    }

    enum ParseResult: Equatable {
        /// More bytes are needed (none of the limits is exceeded yet).
        case incomplete
        /// A head of `length` bytes (up to and including the empty line; leading empty lines
        /// included) starts the buffer.
        case complete(HTTPRequestHead, length: Int)
        case failed(Failure)
    }

    /// Parses the head at the start of `bytes` (RFC 9112 sections 2-5): CRLF or bare LF line
    /// ends, at most one leading empty line per CRLF skipped, no obsolete line folding, a target
    /// of visible ASCII only (percent-encode the rest), field names of token characters, values
    /// without control characters other than tab. Fails with 400 (malformed), 414, 431 or
    /// 505 (a version other than HTTP/1.0 and HTTP/1.1).
    static func parse(_ bytes: ArraySlice<UInt8>, limits: Limits) -> ParseResult {
        var i = bytes.startIndex
        while i < bytes.endIndex, bytes[i] == cr || bytes[i] == lf { i += 1 }  // empty lines before a request
        // Leading empty lines count against the request line's limit, so they cannot grow the buffer without end.
        guard let lineEnd = bytes[i...].firstIndex(of: lf) else {
            return bytes.count > limits.requestLineBytes
                ? .failed(Failure(status: 414, message: "request line longer than \(limits.requestLineBytes) bytes"))
                : .incomplete
        }
        let requestLine = trimCR(bytes[i..<lineEnd])
        guard lineEnd - bytes.startIndex <= limits.requestLineBytes + 1 else {
            return .failed(Failure(status: 414, message: "request line longer than \(limits.requestLineBytes) bytes"))
        }
        let headerStart = lineEnd + 1
        var fieldLines: [ArraySlice<UInt8>] = []
        var j = headerStart
        while true {
            guard let end = bytes[j...].firstIndex(of: lf) else {
                return bytes.endIndex - headerStart > limits.headerBytes
                    ? .failed(Failure(status: 431, message: "header fields larger than \(limits.headerBytes) bytes"))
                    : .incomplete
            }
            if end + 1 - headerStart > limits.headerBytes {
                return .failed(Failure(status: 431, message: "header fields larger than \(limits.headerBytes) bytes"))
            }
            let line = trimCR(bytes[j..<end])
            j = end + 1
            if line.isEmpty { break }
            fieldLines.append(line)
        }
        switch requestHead(requestLine, fieldLines) {
        case .success(let head): return .complete(head, length: j - bytes.startIndex)
        case .failure(let failure): return .failed(failure)
        }
    }

    private static func requestHead(_ line: ArraySlice<UInt8>, _ fieldLines: [ArraySlice<UInt8>])
        -> Result<HTTPRequestHead, Failure> {
        let parts = line.split(separator: space, omittingEmptySubsequences: false)
        guard parts.count == 3, !parts[0].isEmpty, parts[0].allSatisfy(isTokenByte) else {
            return .failure(Failure(status: 400, message: "malformed request line"))
        }
        let version = parts[2]
        guard version.count == 8, version.starts(with: Array("HTTP/".utf8)),
              isDigit(version[version.startIndex + 5]), version[version.startIndex + 6] == UInt8(ascii: "."),
              isDigit(version[version.startIndex + 7]) else {
            return .failure(Failure(status: 400, message: "malformed HTTP version"))
        }
        let major = version[version.startIndex + 5] - UInt8(ascii: "0")
        let minor = version[version.startIndex + 7] - UInt8(ascii: "0")
        guard major == 1, minor <= 1 else {
            return .failure(Failure(status: 505, message: "only HTTP/1.0 and HTTP/1.1 are served"))
        }
        let rawTarget = parts[1]
        guard !rawTarget.isEmpty, rawTarget.allSatisfy({ $0 > 0x20 && $0 < 0x7F }) else {
            return .failure(Failure(status: 400, message: "request target must be visible ASCII (percent-encode other bytes)"))
        }
        var target = String(decoding: rawTarget, as: UTF8.self)
        if !target.hasPrefix("/") {
            // Absolute form (RFC 9112 3.2.2): keep the path and query.
            let lower = target.lowercased()
            let scheme = lower.hasPrefix("http://") ? 7 : lower.hasPrefix("https://") ? 8 : 0
            guard scheme > 0 else {
                return .failure(Failure(status: 400, message: "request target must start with / or http://"))
            }
            let afterAuthority = target.dropFirst(scheme)
            if let slash = afterAuthority.firstIndex(where: { $0 == "/" || $0 == "?" }) {
                target = afterAuthority[slash] == "/" ? String(afterAuthority[slash...]) : "/" + afterAuthority[slash...]
            } else {
                target = "/"
            }
        }
        var fields: [(name: String, value: String)] = []
        fields.reserveCapacity(fieldLines.count)
        for line in fieldLines {
            guard let colon = line.firstIndex(of: UInt8(ascii: ":")), colon > line.startIndex,
                  line[..<colon].allSatisfy(isTokenByte) else {
                return .failure(Failure(status: 400, message: "malformed header field line"))
            }
            var value = line[(colon + 1)...]
            while let f = value.first, f == space || f == tab { value = value.dropFirst() }
            while let l = value.last, l == space || l == tab { value = value.dropLast() }
            guard value.allSatisfy({ $0 == tab || ($0 >= 0x20 && $0 != 0x7F) }) else {
                return .failure(Failure(status: 400, message: "control character in a header field value"))
            }
            fields.append((String(decoding: line[..<colon], as: UTF8.self).lowercased(),
                           String(decoding: value, as: UTF8.self)))
        }
        return .success(HTTPRequestHead(method: String(decoding: parts[0], as: UTF8.self), target: target,
                                        minorVersion: Int(minor), fields: fields))
    }

    private static let cr = UInt8(ascii: "\r"), lf = UInt8(ascii: "\n")
    private static let space = UInt8(ascii: " "), tab = UInt8(ascii: "\t")

    private static func trimCR(_ line: ArraySlice<UInt8>) -> ArraySlice<UInt8> {
        line.last == cr ? line.dropLast() : line
    }

    private static func isDigit(_ b: UInt8) -> Bool { b >= 0x30 && b <= 0x39 }

    /// tchar of RFC 9110 5.6.2.
    private static func isTokenByte(_ b: UInt8) -> Bool {
        switch b {
        case 0x30...0x39, 0x41...0x5A, 0x61...0x7A: true
        case UInt8(ascii: "!"), UInt8(ascii: "#"), UInt8(ascii: "$"), UInt8(ascii: "%"), UInt8(ascii: "&"),
             UInt8(ascii: "'"), UInt8(ascii: "*"), UInt8(ascii: "+"), UInt8(ascii: "-"), UInt8(ascii: "."),
             UInt8(ascii: "^"), UInt8(ascii: "_"), UInt8(ascii: "`"), UInt8(ascii: "|"), UInt8(ascii: "~"): true
        default: false
        }
    }
}

/// One HTTP header line of an ``HTTPResponse``.
public struct HTTPHeader: Sendable, Equatable {
    public var name: String
    public var value: String

    public init(_ name: String, _ value: String) {
        self.name = name
        self.value = value
    }
}

/// A request received by ``NNGHTTPServer`` (its own copy: valid for as long as the handler likes).
public struct HTTPRequest: Sendable, Equatable {
    /// The method as sent, e.g. `"GET"`, `"HEAD"`.
    public var method: String
    /// The request target as sent: path plus `?query` if any (not percent-decoded; an
    /// absolute-form target `http://host/p?q` is reduced to `/p?q`).
    public var target: String
    /// Every header field, keyed by lowercased name; a repeated field's values joined by ", ".
    /// Bytes that are not UTF-8 are replaced by U+FFFD.
    public var headers: [String: String]
    /// When the server had read the whole request.
    public var receivedAt: ContinuousClock.Instant

    public init(method: String, target: String, headers: [String: String] = [:],
                receivedAt: ContinuousClock.Instant = .now) {
        self.method = method
        self.target = target
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { a, _ in a })
        self.receivedAt = receivedAt
    }

    /// The target without its query, still percent-encoded.
    public var path: String {
        if let q = target.firstIndex(of: "?") { return String(target[..<q]) }
        return target
    }

    /// The part after `?`, or nil when there is none.
    public var query: String? {
        guard let q = target.firstIndex(of: "?") else { return nil }
        return String(target[target.index(after: q)...])
    }

    /// The value of a captured header (case-insensitive name), or nil.
    public func header(_ name: String) -> String? { headers[name.lowercased()] }
}

/// A response for ``HTTPResponder/respond(_:)``.
///
/// `Content-Length` is set by nng from `body`. For a HEAD request nng sends the headers of the
/// full response (including that `Content-Length`) and drops the body, so handlers answer HEAD
/// exactly like GET.
public struct HTTPResponse: Sendable, Equatable {
    /// Status code, 100-599.
    public var status: Int
    /// Headers in order; a later header with the same name replaces an earlier one.
    public var headers: [HTTPHeader]
    public var body: [UInt8]
    /// Set for a body sent as it is produced (`body` is then ignored): see ``HTTPBodyStream``.
    public var bodyStream: HTTPBodyStream?

    public init(status: Int, headers: [HTTPHeader] = [], body: [UInt8] = [], bodyStream: HTTPBodyStream? = nil) {
        self.status = status
        self.headers = headers
        self.body = body
        self.bodyStream = bodyStream
    }

    /// A `text/plain; charset=utf-8` response.
    public static func text(_ status: Int, _ text: String, headers: [HTTPHeader] = []) -> HTTPResponse {
        HTTPResponse(status: status, headers: [HTTPHeader("Content-Type", "text/plain; charset=utf-8")] + headers,
                     body: Array(text.utf8))
    }

    /// The value of the last header called `name` (case-insensitive), or nil.
    public func header(_ name: String) -> String? {
        headers.last { $0.name.caseInsensitiveEquals(name) }?.value
    }

    /// Sets `name` to `value`, replacing every header of that name.
    public mutating func setHeader(_ name: String, _ value: String) {
        headers.removeAll { $0.name.caseInsensitiveEquals(name) }
        headers.append(HTTPHeader(name, value))
    }
}

extension String {
    func caseInsensitiveEquals(_ other: String) -> Bool {
        utf8.count == other.utf8.count && lowercased() == other.lowercased()
    }
}

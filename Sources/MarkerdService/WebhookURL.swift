/// A webhook address: `http://HOST:PORT/PATH` (or `http://HOST/PATH`, port 80). HTTPS is not
/// supported: markerd POSTs to a collector next to it, and the HMAC signature authenticates
/// the body.
public struct WebhookURL: Hashable, Sendable {
    /// A host name or IPv4 address (no user info, no IPv6 literal).
    public var host: String
    public var port: UInt16
    /// Starts with "/"; the query string, if any, included.
    public var path: String

    /// Parses `text`; nil when it is not such a URL.
    public init?(_ text: String) {
        guard text.hasPrefix("http://") else { return nil }
        let rest = text.dropFirst(7)
        let slash = rest.firstIndex(of: "/") ?? rest.endIndex
        let authority = rest[..<slash]
        path = slash == rest.endIndex ? "/" : String(rest[slash...])
        let hostPart: Substring
        if let colon = authority.firstIndex(of: ":") {
            guard let p = UInt16(authority[authority.index(after: colon)...]), p > 0 else { return nil }
            port = p
            hostPart = authority[..<colon]
        } else {
            port = 80
            hostPart = authority
        }
        guard !hostPart.isEmpty, hostPart.utf8.count <= 253,
              hostPart.utf8.allSatisfy({ $0 == UInt8(ascii: ".") || $0 == UInt8(ascii: "-") || ($0 >= 48 && $0 <= 57) || ($0 | 0x20 >= 97 && $0 | 0x20 <= 122) }),
              path.utf8.allSatisfy({ $0 > 32 && $0 < 127 })
        else { return nil }
        host = String(hostPart)
    }
}

extension MarkerdConfiguration {
    /// Redis's protected mode: without ``authFile`` markerd serves only loopback, `ipc://` and
    /// `inproc://` unless ``allowAnonymous``. The message naming the first address that breaks
    /// the rule and the flags that allow it, or nil when the configuration keeps it.
    public func protectedModeViolation() -> String? {
        guard !allowAnonymous else { return nil }
        var open: [String] = []
        if authFile == nil {
            open += listenURLs.filter { !Self.isLocal(url: $0) }
            open += [httpAddress, httpsAddress].compactMap { $0 }.filter { !Self.isLoopback(hostPort: $0) }
        }
        // The operators' gateway never asks for a token.
        open += [opsHTTPAddress].compactMap { $0 }.filter { !Self.isLoopback(hostPort: $0) }
        guard let first = open.first else { return nil }
        if authFile == nil {
            return "refusing to serve \(first) without authentication: give --auth-file PATH (tokens, see `markerd token add`), "
                + "listen on loopback (127.0.0.1, ::1) or ipc://, or pass --allow-anonymous to serve it open to anyone who can reach it"
        }
        return "refusing to serve --ops-http \(first): it answers without tokens; bind it to loopback or pass --allow-anonymous"
    }

    /// `ipc://`, `inproc://` or a loopback host (`tcp://127.0.0.1:7450`, `tls+tcp://[::1]:7450`).
    static func isLocal(url: String) -> Bool {
        if url.hasPrefix("ipc://") || url.hasPrefix("inproc://") { return true }
        guard let scheme = url.range(of: "://") else { return false }
        return isLoopback(hostPort: String(url[scheme.upperBound...]))
    }

    /// Whether `host:port`'s host is `localhost`, an IPv4 address in 127.0.0.0/8 or `[::1]`.
    /// An empty host, `*`, `0.0.0.0` or any other name is not (it may reach other machines).
    static func isLoopback(hostPort: String) -> Bool {
        var text = Substring(hostPort)
        if text.hasPrefix("http://") { text = text.dropFirst("http://".count) }
        guard let colon = text.lastIndex(of: ":") else { return false }
        var host = text[..<colon]
        if host.hasPrefix("["), host.hasSuffix("]") { host = host.dropFirst().dropLast() }
        if host == "localhost" || host == "::1" { return true }
        let octets = host.split(separator: ".", omittingEmptySubsequences: false)
        return octets.count == 4 && octets[0] == "127" && octets.allSatisfy { UInt8($0) != nil }
    }
}

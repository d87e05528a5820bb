import Foundation

/// What a token may do: `read` (queries, tiles, hit-tests, stats, signed tile URLs), `write`
/// (upserts, moves, drags, removals, clears, icons) and `admin` (creating and deleting layers,
/// snapshots of the data). Independent: `admin` does not imply `read` or `write`.
public struct Scopes: OptionSet, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }

    public static let read = Scopes(rawValue: 1)
    public static let write = Scopes(rawValue: 2)
    public static let admin = Scopes(rawValue: 4)

    static let names: [(String, Scopes)] = [("read", .read), ("write", .write), ("admin", .admin)]

    /// Parses `read,write,admin` (any non-empty subset, any order); nil for an unknown or empty name.
    public init?(list: some StringProtocol) {
        var scopes = Scopes()
        for name in list.split(separator: ",", omittingEmptySubsequences: false) {
            guard let scope = Self.names.first(where: { $0.0 == name })?.1 else { return nil }
            scopes.insert(scope)
        }
        guard !scopes.isEmpty else { return nil }
        self = scopes
    }

    /// `read,write`: the names in the order read, write, admin.
    public var description: String {
        Self.names.filter { contains($0.1) }.map(\.0).joined(separator: ",")
    }
}

/// A layer id pattern: layer-id characters (`A-Z a-z 0-9 . _ -`) and `*`, which stands for any
/// run of characters (`fleet-*`, `*-public`, `*`). Matches whole ids, byte for byte.
public struct LayerPattern: Sendable, Equatable, CustomStringConvertible {
    public let description: String
    private let bytes: [UInt8]

    /// nil unless `text` is 1-128 bytes of layer-id characters and `*`.
    public init?(_ text: some StringProtocol) {
        let utf8 = Array(text.utf8)
        guard (1...128).contains(utf8.count), utf8.allSatisfy({ LayerPattern.isLayerByte($0) || $0 == 42 }) else { return nil }
        description = String(text)
        bytes = utf8
    }

    /// `A-Z a-z 0-9 . _ -`, the bytes of layer ids (CreateLayerRequest.layer_id).
    static func isLayerByte(_ b: UInt8) -> Bool {
        (48...57).contains(b) || (65...90).contains(b) || (97...122).contains(b) || b == 46 || b == 95 || b == 45
    }

    /// Whether the whole of `layer` (UTF-8 bytes) matches (greedy `*` with backtracking: linear
    /// in practice, at most |pattern| x |layer| steps).
    public func matches(_ layer: UnsafeRawBufferPointer) -> Bool {
        bytes.withUnsafeBufferPointer { p in
            var i = 0, j = 0
            var star = -1, resume = 0
            while j < layer.count {
                if i < p.count && p[i] == 42 {
                    star = i; resume = j; i += 1
                } else if i < p.count && p[i] == layer[j] {
                    i += 1; j += 1
                } else if star >= 0 {
                    i = star + 1; resume += 1; j = resume
                } else {
                    return false
                }
            }
            while i < p.count && p[i] == 42 { i += 1 }
            return i == p.count
        }
    }

    public func matches(_ layer: String) -> Bool {
        var layer = layer
        return layer.withUTF8 { matches(UnsafeRawBufferPointer($0)) }
    }
}

/// A token's quotas (the optional `rps=`, `bps=` and `expensive=` fields of its line); nil is
/// no limit.
public struct Limits: Sendable, Equatable {
    /// Requests per second (a token bucket holding `max(1, rps)`: a second's burst). Decimals allowed.
    public var requestsPerSecond: Double?
    /// Request plus reply bytes per second (a request is let in while the bucket is not in
    /// debt; its bytes and its reply's are then taken, possibly into debt).
    public var bytesPerSecond: Double?
    /// Expensive requests (renders, point tiles, clusters, viewport pages, snapshots) that may
    /// be in flight at once on the worker threads.
    public var concurrentExpensive: Int?

    public init(requestsPerSecond: Double? = nil, bytesPerSecond: Double? = nil, concurrentExpensive: Int? = nil) {
        self.requestsPerSecond = requestsPerSecond
        self.bytesPerSecond = bytesPerSecond
        self.concurrentExpensive = concurrentExpensive
    }

    public var isUnlimited: Bool { requestsPerSecond == nil && bytesPerSecond == nil && concurrentExpensive == nil }

    /// ` rps=10 bps=1048576 expensive=2` (the fields set, each with a leading space).
    public var fields: String {
        var out = ""
        if let r = requestsPerSecond { out += " rps=\(Self.number(r))" }
        if let b = bytesPerSecond { out += " bps=\(Self.number(b))" }
        if let e = concurrentExpensive { out += " expensive=\(e)" }
        return out
    }

    private static func number(_ v: Double) -> String { v == v.rounded() && v < 1e15 ? String(Int64(v)) : String(v) }

    /// Sets the field `key=value` (`rps`, `bps`, `expensive`); throws naming what is wrong.
    public mutating func set(_ field: some StringProtocol) throws(AuthError) {
        let parts = field.split(separator: "=", maxSplits: 1)
        guard parts.count == 2 else { throw AuthError("\"\(field)\" is not rps=N, bps=N or expensive=N") }
        switch parts[0] {
        case "rps", "bps":
            guard let v = Double(parts[1]), v.isFinite, v > 0 else {
                throw AuthError("\(parts[0])=\(parts[1]): needs a number above 0")
            }
            if parts[0] == "rps" { requestsPerSecond = v } else { bytesPerSecond = v }
        case "expensive":
            guard let v = Int(parts[1]), v >= 1 else { throw AuthError("expensive=\(parts[1]): needs a whole number >= 1") }
            concurrentExpensive = v
        default:
            throw AuthError("unknown field \"\(parts[0])\" (expected rps, bps or expensive)")
        }
    }
}

/// One token of an auth file: its name (what logs and the audit trail show), the SHA-256 of the
/// token (the token itself is never stored), its scopes, the layers it may use and its quotas.
public struct TokenRecord: Sendable, Equatable {
    public var name: String
    /// SHA-256 of the token's bytes (32 bytes).
    public var digest: [UInt8]
    public var scopes: Scopes
    public var layers: [LayerPattern]
    public var limits: Limits

    public init(name: String, digest: [UInt8], scopes: Scopes, layers: [LayerPattern], limits: Limits = Limits()) {
        self.name = name
        self.digest = digest
        self.scopes = scopes
        self.layers = layers
        self.limits = limits
    }

    /// Token names: 1-64 bytes of `A-Z a-z 0-9 . _ - @`.
    public static func isValidName(_ name: some StringProtocol) -> Bool {
        (1...64).contains(name.utf8.count) && name.utf8.allSatisfy { LayerPattern.isLayerByte($0) || $0 == 64 }
    }

    /// The auth file line of this token.
    public var line: String {
        "token \(name) \(Crypto.hex(digest)) \(scopes) \(layers.map(\.description).joined(separator: ","))\(limits.fields)"
    }
}

/// markerd's auth file (`--auth-file`), a text file of lines:
///
///     # comment (a line starting with #; blank lines are ignored too)
///     token NAME SHA256-HEX SCOPES LAYERS [rps=N] [bps=N] [expensive=N]
///     public LAYERS
///
/// `token`: one token per line (fields separated by spaces or tabs): a unique name (1-64 bytes of
/// `A-Z a-z 0-9 . _ - @`), the SHA-256 of the token in hex (64 digits, unique), its scopes
/// (`read`, `write`, `admin`, comma-separated) and the layers it may use (``LayerPattern``s,
/// comma-separated, e.g. `fleet-*,depots`), then optionally its quotas (``Limits``). `public`:
/// layers the HTTP gateway serves without a
/// token (any number of such lines). `markerd token add|list|revoke` edit the file.
public struct AuthFile: Sendable, Equatable {
    public var tokens: [TokenRecord] = []
    public var publicLayers: [LayerPattern] = []

    public init(tokens: [TokenRecord] = [], publicLayers: [LayerPattern] = []) {
        self.tokens = tokens
        self.publicLayers = publicLayers
    }

    /// Parses the text of an auth file. Throws naming the first bad line (1-based).
    public static func parse(_ text: String) throws(AuthError) -> AuthFile {
        var file = AuthFile()
        var names = Set<String>(), digests = Set<[UInt8]>()
        for (index, raw) in text.split(separator: "\n", omittingEmptySubsequences: false).enumerated() {
            func fail(_ message: String) -> AuthError { AuthError("line \(index + 1): \(message)") }
            let fields = raw.split(whereSeparator: { $0 == " " || $0 == "\t" || $0 == "\r" })
            guard let keyword = fields.first, !keyword.hasPrefix("#") else { continue }
            switch keyword {
            case "token":
                guard fields.count >= 5 else {
                    throw fail("a token line is `token NAME SHA256-HEX SCOPES LAYERS [rps=N] [bps=N] [expensive=N]`, got \(fields.count) fields")
                }
                let name = String(fields[1])
                guard TokenRecord.isValidName(name) else {
                    throw fail("token name \"\(name)\" is not 1-64 bytes of A-Z a-z 0-9 . _ - @")
                }
                guard names.insert(name).inserted else { throw fail("token name \"\(name)\" appears twice") }
                guard fields[2].utf8.count == 64, let digest = Crypto.bytes(hex: fields[2]) else {
                    throw fail("token \(name): \"\(fields[2])\" is not a SHA-256 in hex (64 digits)")
                }
                guard digests.insert(digest).inserted else { throw fail("token \(name): the same token hash as an earlier line") }
                guard let scopes = Scopes(list: fields[3]) else {
                    throw fail("token \(name): scopes \"\(fields[3])\" are not a comma-separated list of read, write, admin")
                }
                let layers = try patterns(fields[4], fail)
                var limits = Limits()
                for field in fields.dropFirst(5) {
                    do { try limits.set(field) } catch { throw fail("token \(name): \(error.description)") }
                }
                file.tokens.append(TokenRecord(name: name, digest: digest, scopes: scopes, layers: layers, limits: limits))
            case "public":
                guard fields.count == 2 else { throw fail("a public line is `public LAYERS`, got \(fields.count) fields") }
                file.publicLayers += try patterns(fields[1], fail)
            default:
                throw fail("unknown keyword \"\(keyword)\" (expected token or public)")
            }
        }
        return file
    }

    private static func patterns(_ text: Substring, _ fail: (String) -> AuthError) throws(AuthError) -> [LayerPattern] {
        var out: [LayerPattern] = []
        for piece in text.split(separator: ",", omittingEmptySubsequences: false) {
            guard let p = LayerPattern(piece) else {
                throw fail("layer pattern \"\(piece)\" is not 1-128 bytes of A-Z a-z 0-9 . _ - and *")
            }
            out.append(p)
        }
        return out
    }

    /// Reads and parses the file at `path`; errors name the path (and line).
    public static func load(path: String) throws(AuthError) -> AuthFile {
        let text: String
        do {
            text = try String(contentsOfFile: path, encoding: .utf8)
        } catch {
            throw AuthError("cannot read auth file \(path): \(error.localizedDescription)")
        }
        do {
            return try parse(text)
        } catch {
            throw AuthError("auth file \(path), \(error.description)")
        }
    }
}

import Synchronization

/// What a valid token may do: its name and the scopes, layers and quotas of its auth file line.
public struct Grant: Sendable, Equatable {
    public let name: String
    public let scopes: Scopes
    public let layers: [LayerPattern]
    public let limits: Limits

    public init(name: String, scopes: Scopes, layers: [LayerPattern], limits: Limits = Limits()) {
        self.name = name
        self.scopes = scopes
        self.layers = layers
        self.limits = limits
    }

    /// Whether the token has `scope` and, when `layer` (the layer id's UTF-8 bytes) is given,
    /// one of its patterns matches it.
    public func allows(_ scope: Scopes, layer: UnsafeRawBufferPointer?) -> Bool {
        guard scopes.contains(scope) else { return false }
        guard let layer else { return true }
        return layers.contains { $0.matches(layer) }
    }

    public func allows(_ scope: Scopes, layer: String) -> Bool {
        var layer = layer
        return layer.withUTF8 { allows(scope, layer: UnsafeRawBufferPointer($0)) }
    }
}

/// The tokens of an auth file, looked up by the token a request presents: the token's SHA-256
/// is looked up by its first 8 bytes (which tell an attacker nothing about stored tokens: it
/// cannot choose a digest) and compared whole, in constant time. Valid tokens are then remembered by
/// their bytes (in memory only; at most ``cacheLimit``), so a known token costs a hash of its
/// bytes (SipHash, seeded per process) and a constant-time compare instead of SHA-256 (about
/// 1 µs with mbedTLS). Invalid tokens are never remembered.
///
/// ``reload()`` re-reads the file: a file that does not parse keeps the tokens loaded before
/// and throws; a good one replaces them and forgets every remembered token at once (a revoked
/// token fails from the next request on). Thread-safe; lookups never wait for a reload's I/O.
public final class Authenticator: Sendable {
    /// The auth file.
    public let path: String
    /// Tokens remembered by their bytes at most; past it the memory is emptied.
    public static let cacheLimit = 4096

    private struct Remembered { let token: [UInt8]; let grant: Grant }
    private struct State {
        var file: AuthFile
        /// The first 8 bytes of each token's digest -> its indices in `file.tokens`.
        var byDigest: [UInt64: [Int]]
        /// Token-bytes hash -> the valid tokens with that hash.
        var cache: [Int: [Remembered]] = [:]
        var cached = 0
        var generation = 0
    }
    private let state: Mutex<State>

    /// Loads `path`. Throws ``AuthError`` naming the file and the bad line.
    public init(path: String) throws(AuthError) {
        self.path = path
        state = Mutex(Self.state(try AuthFile.load(path: path)))
    }

    private static func state(_ file: AuthFile) -> State {
        var index: [UInt64: [Int]] = [:]
        for (i, t) in file.tokens.enumerated() { index[prefix(t.digest), default: []].append(i) }
        return State(file: file, byDigest: index)
    }

    private static func prefix(_ digest: [UInt8]) -> UInt64 {
        digest.prefix(8).reduce(0) { $0 << 8 | UInt64($1) }
    }

    /// A table from an already-parsed file (tests, benchmarks); ``reload()`` reads `path`.
    public init(file: AuthFile, path: String = "") {
        self.path = path
        state = Mutex(Self.state(file))
    }

    /// Re-reads the auth file; on error keeps the current tokens and throws. Returns the number
    /// of tokens loaded.
    @discardableResult
    public func reload() throws(AuthError) -> Int {
        let file = try AuthFile.load(path: path)
        var fresh = Self.state(file)
        state.withLock { s in
            fresh.generation = s.generation + 1
            s = fresh
        }
        return file.tokens.count
    }

    /// The current file's contents.
    public var file: AuthFile { state.withLock { $0.file } }

    /// Whether the HTTP gateway serves `layer` without a token (a `public` line matches it).
    public func isPublic(_ layer: String) -> Bool {
        let patterns = state.withLock { $0.file.publicLayers }
        return patterns.contains { $0.matches(layer) }
    }

    /// The grant of `token` (its bytes as sent), or nil if no token of the file has its hash.
    public func grant(token: UnsafeRawBufferPointer) -> Grant? {
        guard !token.isEmpty else { return nil }
        var hasher = Hasher()
        hasher.combine(bytes: token)
        let key = hasher.finalize()
        let (known, generation) = state.withLock { s -> (Grant?, Int) in
            let hit = s.cache[key]?.first { r in r.token.withUnsafeBytes { Crypto.constantTimeEqual($0, token) } }
            return (hit?.grant, s.generation)
        }
        if let known { return known }
        let digest = Crypto.sha256(token)
        return state.withLock { s -> Grant? in
            let candidates = s.byDigest[Self.prefix(digest)] ?? []
            guard let found = candidates.map({ s.file.tokens[$0] }).first(where: { Crypto.constantTimeEqual($0.digest, digest) }) else {
                return nil
            }
            let grant = Grant(name: found.name, scopes: found.scopes, layers: found.layers, limits: found.limits)
            // Remember it only if the file was not reloaded meanwhile (the token may be revoked).
            if s.generation == generation {
                if s.cached >= Self.cacheLimit { s.cache = [:]; s.cached = 0 }
                s.cache[key, default: []].append(Remembered(token: Array(token), grant: grant))
                s.cached += 1
            }
            return grant
        }
    }

    public func grant(token: String) -> Grant? {
        var token = token
        return token.withUTF8 { grant(token: UnsafeRawBufferPointer($0)) }
    }
}

import Foundation

/// Signed tile URLs: a path prefix `/t/{expiry}.{signature}` in front of a layer's tile,
/// TileJSON, viewport and hit-test paths, so that a URL template of HERE, MapLibre or Leaflet
/// (which cannot always add headers) carries its own permission to read one layer until
/// `expiry`, without a query string.
///
/// `expiry` is Unix seconds (decimal); `signature` is base64url (no padding, 43 characters) of
/// HMAC-SHA256 under the server's key of `markerd-tile-v1 LF layer LF expiry LF read`. The key
/// (`--tile-signing-key-file`) is the file's bytes with surrounding white space removed, at least
/// 32 bytes; markerd writes a random one (64 hex digits) when the file is missing.
public struct TileSigner: Sendable, Equatable {
    private let key: [UInt8]

    /// The key must be at least 32 bytes.
    public init(key: [UInt8]) throws(AuthError) {
        guard key.count >= 32 else { throw AuthError("a tile signing key needs at least 32 bytes, got \(key.count)") }
        self.key = key
    }

    /// Reads the key at `path`, creating the file (mode 0600, 32 random bytes as 64 hex digits)
    /// when it does not exist. Throws naming the path.
    public static func loadOrCreate(path: String) throws(AuthError) -> TileSigner {
        if !FileManager.default.fileExists(atPath: path) {
            let key = Crypto.hex(try Crypto.randomBytes(32)) + "\n"
            guard FileManager.default.createFile(atPath: path, contents: Data(key.utf8), attributes: [.posixPermissions: 0o600]) else {
                throw AuthError("cannot create tile signing key file \(path) (\(String(cString: strerror(errno))))")
            }
        }
        guard let data = FileManager.default.contents(atPath: path) else {
            throw AuthError("cannot read tile signing key file \(path)")
        }
        var bytes = [UInt8](data)
        while let last = bytes.last, last == 10 || last == 13 || last == 32 || last == 9 { bytes.removeLast() }
        while let first = bytes.first, first == 10 || first == 13 || first == 32 || first == 9 { bytes.removeFirst() }
        do {
            return try TileSigner(key: bytes)
        } catch {
            throw AuthError("tile signing key file \(path): \(error.description)")
        }
    }

    /// The signature of read access to `layer` until `expiry` (Unix seconds).
    public func signature(layer: String, expiry: Int64) -> String {
        Crypto.base64url(Crypto.hmacSHA256(key: key, message: Array("markerd-tile-v1\n\(layer)\n\(expiry)\nread".utf8)))
    }

    /// `/t/{expiry}.{signature}`: the prefix of `layer`'s signed paths.
    public func prefix(layer: String, expiry: Int64) -> String {
        "/t/\(expiry).\(signature(layer: layer, expiry: expiry))"
    }

    /// Why a signed path is refused.
    public enum Refusal: Error, Equatable, Sendable {
        case expired
        case forged
    }

    /// Checks a prefix's `expiry` and `signature` for `layer` at `now` (Unix seconds): nil when
    /// valid (the signature compared in constant time), else why not.
    public func check(layer: String, expiry: Int64, signature: Substring, now: Int64) -> Refusal? {
        let good = Crypto.constantTimeEqual(Array(signature.utf8), Array(self.signature(layer: layer, expiry: expiry).utf8))
        guard good else { return .forged }
        return expiry > now ? nil : .expired
    }
}

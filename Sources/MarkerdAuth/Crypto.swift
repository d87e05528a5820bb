private import CMbedCrypto
import Glibc

/// SHA-256, HMAC-SHA256 (libmbedcrypto), random bytes (getrandom(2)), constant-time comparison,
/// hex and base64url: the primitives markerd's tokens and signed tile URLs are built on.
public enum Crypto {
    /// The SHA-256 digest (32 bytes) of `bytes`.
    public static func sha256(_ bytes: UnsafeRawBufferPointer) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: 32) { out, count in
            // Cannot fail for SHA-256 (mbedTLS returns an error only for a bad context).
            _ = cmbed_sha256(bytes.baseAddress, bytes.count, out.baseAddress)
            count = 32
        }
    }

    public static func sha256(_ bytes: [UInt8]) -> [UInt8] { bytes.withUnsafeBytes { sha256($0) } }

    /// HMAC-SHA256 (RFC 2104) of `message` under `key`: 32 bytes.
    public static func hmacSHA256(key: [UInt8], message: [UInt8]) -> [UInt8] {
        [UInt8](unsafeUninitializedCapacity: 32) { out, count in
            key.withUnsafeBytes { k in
                message.withUnsafeBytes { m in
                    _ = cmbed_hmac_sha256(k.baseAddress, k.count, m.baseAddress, m.count, out.baseAddress)
                }
            }
            count = 32
        }
    }

    /// Whether `a` and `b` hold the same bytes, in time that depends only on their lengths.
    public static func constantTimeEqual(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Bool {
        guard a.count == b.count else { return false }
        var difference: UInt8 = 0
        for i in 0..<a.count { difference |= a[i] ^ b[i] }
        return difference == 0
    }

    public static func constantTimeEqual(_ a: [UInt8], _ b: [UInt8]) -> Bool {
        a.withUnsafeBytes { a in b.withUnsafeBytes { b in constantTimeEqual(a, b) } }
    }

    /// `count` bytes from the kernel's CSPRNG (getrandom(2), blocking only until the pool is
    /// initialised at boot). Throws ``AuthError`` when the call fails (e.g. ENOSYS).
    public static func randomBytes(_ count: Int) throws(AuthError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: count)
        var filled = 0
        while filled < count {
            let n = out.withUnsafeMutableBytes { cmbed_getrandom($0.baseAddress! + filled, count - filled) }
            if n < 0 {
                if errno == EINTR { continue }
                throw AuthError("getrandom failed: \(String(cString: strerror(errno)))")
            }
            filled += n
        }
        return out
    }

    /// Lowercase hex.
    public static func hex(_ bytes: [UInt8]) -> String {
        let digits = Array("0123456789abcdef".utf8)
        var out = [UInt8]()
        out.reserveCapacity(bytes.count * 2)
        for b in bytes {
            out.append(digits[Int(b >> 4)])
            out.append(digits[Int(b & 15)])
        }
        return String(decoding: out, as: UTF8.self)
    }

    /// The bytes of a hex string (either case), or nil if it is not an even number of hex digits.
    public static func bytes(hex text: some StringProtocol) -> [UInt8]? {
        let utf8 = Array(text.utf8)
        guard utf8.count % 2 == 0 else { return nil }
        func nibble(_ c: UInt8) -> UInt8? {
            switch c {
            case 48...57: c - 48
            case 97...102: c - 87
            case 65...70: c - 55
            default: nil
            }
        }
        var out = [UInt8]()
        out.reserveCapacity(utf8.count / 2)
        var i = 0
        while i < utf8.count {
            guard let hi = nibble(utf8[i]), let lo = nibble(utf8[i + 1]) else { return nil }
            out.append(hi << 4 | lo)
            i += 2
        }
        return out
    }

    /// base64url (RFC 4648 §5) without padding: only `A-Z a-z 0-9 - _`, safe in URL paths.
    public static func base64url(_ bytes: [UInt8]) -> String {
        let alphabet = Array("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_".utf8)
        var out = [UInt8]()
        out.reserveCapacity((bytes.count * 4 + 2) / 3)
        var i = 0
        while i < bytes.count {
            let n = min(3, bytes.count - i)
            var v = UInt32(bytes[i]) << 16
            if n > 1 { v |= UInt32(bytes[i + 1]) << 8 }
            if n > 2 { v |= UInt32(bytes[i + 2]) }
            for k in 0...n { out.append(alphabet[Int(v >> UInt32(18 - 6 * k) & 63)]) }
            i += 3
        }
        return String(decoding: out, as: UTF8.self)
    }
}

/// A failure of markerd's authentication machinery (random source, key files), with a message
/// that names what failed.
public struct AuthError: Error, CustomStringConvertible, Equatable, Sendable {
    public var description: String
    public init(_ description: String) { self.description = description }
}

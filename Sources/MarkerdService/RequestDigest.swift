/// A stable 64-bit digest of a method name and its payload, stored with idempotency keys so that
/// a key reused for a different request (another method, or another payload) is detected.
/// Journals and snapshots store it, so the function must never change (a test pins its values);
/// it reads the bytes as little-endian words on every host. About 1 ns per byte.
public enum RequestDigest {
    public static func digest(method: String, payload: UnsafeRawBufferPointer) -> UInt64 {
        var h: UInt64 = 0x9E37_79B9_7F4A_7C15 ^ UInt64(truncatingIfNeeded: payload.count)
        var m = method
        m.withUTF8 { h = mix(h, bytes: UnsafeRawBufferPointer($0)) }
        h = mix(h, bytes: payload)
        return finalize(h)
    }

    public static func digest(method: String, payload: [UInt8]) -> UInt64 {
        payload.withUnsafeBytes { digest(method: method, payload: $0) }
    }

    private static func mix(_ seed: UInt64, bytes: UnsafeRawBufferPointer) -> UInt64 {
        var h = seed
        var i = 0
        let n = bytes.count
        while i + 8 <= n {
            let w = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            h = (h ^ (w &* 0xBF58_476D_1CE4_E5B9)).rotateLeft(27) &* 0x94D0_49BB_1331_11EB &+ 0x632B_E59B_D9B4_E019
            i += 8
        }
        var tail: UInt64 = 0
        var shift: UInt64 = 0
        while i < n {
            tail |= UInt64(bytes[i]) << shift
            shift += 8
            i += 1
        }
        h = (h ^ (tail &* 0xBF58_476D_1CE4_E5B9) ^ UInt64(n)).rotateLeft(31) &* 0x94D0_49BB_1331_11EB
        return h
    }

    private static func finalize(_ x: UInt64) -> UInt64 {
        var z = x
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

extension UInt64 {
    @inline(__always) fileprivate func rotateLeft(_ n: UInt64) -> UInt64 { (self << n) | (self >> (64 - n)) }
}

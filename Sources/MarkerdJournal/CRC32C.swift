/// CRC-32C (Castagnoli, reflected polynomial 0x82F63B78), as used by iSCSI, ext4, LevelDB and
/// RocksDB. Table-driven, slicing-by-8, pure Swift (no hardware `crc32` instruction: that
/// would need a C intrinsic). Check value: `CRC32C.checksum("123456789")` == 0xE3069283.
public enum CRC32C {
    /// The CRC-32C of `bytes`.
    @inlinable
    public static func checksum(_ bytes: UnsafeRawBufferPointer) -> UInt32 {
        update(0, bytes)
    }

    /// The CRC-32C of `bytes`.
    public static func checksum(_ bytes: [UInt8]) -> UInt32 {
        bytes.withUnsafeBytes { update(0, $0) }
    }

    /// The CRC-32C of the UTF-8 bytes of `string`.
    public static func checksum(_ string: String) -> UInt32 {
        checksum(Array(string.utf8))
    }

    /// Continues a CRC: `update(checksum(a), b) == checksum(a + b)`. Start with 0.
    public static func update(_ crc: UInt32, _ bytes: UnsafeRawBufferPointer) -> UInt32 {
        crc32cTables.withUnsafeBufferPointer { t in
            var c = ~crc
            var i = 0
            let n = bytes.count
            while n - i >= 8 {
                let v = UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: i, as: UInt64.self)) ^ UInt64(c)
                c = t[7 * 256 + Int(v & 0xFF)]
                    ^ t[6 * 256 + Int((v >> 8) & 0xFF)]
                    ^ t[5 * 256 + Int((v >> 16) & 0xFF)]
                    ^ t[4 * 256 + Int((v >> 24) & 0xFF)]
                    ^ t[3 * 256 + Int((v >> 32) & 0xFF)]
                    ^ t[2 * 256 + Int((v >> 40) & 0xFF)]
                    ^ t[1 * 256 + Int((v >> 48) & 0xFF)]
                    ^ t[Int(v >> 56)]
                i += 8
            }
            while i < n {
                c = t[Int((c ^ UInt32(bytes[i])) & 0xFF)] ^ (c >> 8)
                i += 1
            }
            return ~c
        }
    }

    /// Continues a CRC over the 8 little-endian bytes of `value`.
    @inlinable
    public static func update(_ crc: UInt32, littleEndian value: UInt64) -> UInt32 {
        withUnsafeBytes(of: value.littleEndian) { update(crc, $0) }
    }

    /// Bitwise reference implementation (slow); the oracle for tests.
    static func bitwise(_ bytes: [UInt8]) -> UInt32 {
        var c: UInt32 = 0xFFFF_FFFF
        for b in bytes {
            c ^= UInt32(b)
            for _ in 0..<8 { c = (c & 1) != 0 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
        }
        return ~c
    }
}

/// 8 tables of 256 entries: table k maps a byte to its CRC contribution k bytes further on.
private let crc32cTables: [UInt32] = {
    var t = [UInt32](repeating: 0, count: 8 * 256)
    for i in 0..<256 {
        var c = UInt32(i)
        for _ in 0..<8 { c = (c & 1) != 0 ? (c >> 1) ^ 0x82F6_3B78 : c >> 1 }
        t[i] = c
    }
    for k in 1..<8 {
        for i in 0..<256 {
            let prev = t[(k - 1) * 256 + i]
            t[k * 256 + i] = (prev >> 8) ^ t[Int(prev & 0xFF)]
        }
    }
    return t
}()

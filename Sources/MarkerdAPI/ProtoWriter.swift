/// Writes protobuf wire bytes at a cursor: the one implementation of varints, keys and fixed-size
/// fields for the hand-written encoders that write a message straight into its destination (the
/// bulk-load request, the request envelope, OK reply envelopes and inline tile replies here;
/// MarkerdService's marker and cluster writers, which read the layer's columns). They write fields
/// in number order as protobuf-c does, so their bytes equal protobuf-c's (each has a test). The
/// caller sizes the buffer exactly first (`varintSize`, `lengthDelimited`, `stringField`); nothing
/// is checked while writing.
public struct ProtoWriter {
    /// Where the next byte goes.
    public var at: UnsafeMutablePointer<UInt8>

    @inlinable public init(_ start: UnsafeMutablePointer<UInt8>) { at = start }

    @inlinable public init(_ start: UnsafeMutableRawPointer) { at = start.assumingMemoryBound(to: UInt8.self) }

    /// Bytes written since `start`.
    @inlinable public func written(from start: UnsafeMutablePointer<UInt8>) -> Int { at - start }

    /// Bytes of `v` as a varint (1-10).
    @inlinable public static func varintSize(_ v: UInt64) -> Int { v == 0 ? 1 : (64 - v.leadingZeroBitCount + 6) / 7 }

    /// A length-delimited field of fields 1...15 (a one-byte key): key + length + `n` bytes.
    @inlinable public static func lengthDelimited(_ n: Int) -> Int { 1 + varintSize(UInt64(n)) + n }

    /// A plain string field of fields 1...15: nothing when empty.
    @inlinable public static func stringField(_ s: String) -> Int { s.isEmpty ? 0 : lengthDelimited(s.utf8.count) }

    @inlinable public mutating func byte(_ b: UInt8) { Self.write(byte: b, at: &at) }

    /// The key of field `field` (1...15) with wire type `wireType` (0 varint, 1 fixed64, 2
    /// length-delimited, 5 fixed32).
    @inlinable public mutating func key(_ field: UInt8, _ wireType: UInt8) { byte(field << 3 | wireType) }

    @inlinable public mutating func varint(_ value: UInt64) { Self.write(varint: value, at: &at) }

    @inlinable public mutating func fixed32(_ v: UInt32) {
        UnsafeMutableRawPointer(at).storeBytes(of: v.littleEndian, as: UInt32.self)
        at += 4
    }

    @inlinable public mutating func fixed64(_ v: UInt64) {
        UnsafeMutableRawPointer(at).storeBytes(of: v.littleEndian, as: UInt64.self)
        at += 8
    }

    @inlinable public mutating func bytes(_ b: [UInt8]) {
        b.withUnsafeBufferPointer { bytes($0) }
    }

    @inlinable public mutating func bytes(_ b: UnsafeBufferPointer<UInt8>) { Self.write(b, at: &at) }

    /// A string field (fields 1...15) that is encoded even when empty (optional or oneof strings).
    @inlinable public mutating func presentString(_ field: UInt8, _ s: String) {
        key(field, 2)
        var s = s
        s.withUTF8 { u in
            varint(UInt64(u.count))
            bytes(u)
        }
    }

    /// A plain string field (fields 1...15): nothing when empty.
    @inlinable public mutating func string(_ field: UInt8, _ s: String) {
        if !s.isEmpty { presentString(field, s) }
    }

    // The same at a bare pointer, for writers that keep their cursor in a local.

    @inlinable public static func write(byte: UInt8, at w: inout UnsafeMutablePointer<UInt8>) {
        w.pointee = byte
        w += 1
    }

    @inlinable public static func write(varint: UInt64, at w: inout UnsafeMutablePointer<UInt8>) {
        var v = varint
        while v >= 0x80 {
            write(byte: UInt8(truncatingIfNeeded: v) | 0x80, at: &w)
            v >>= 7
        }
        write(byte: UInt8(v), at: &w)
    }

    @inlinable public static func write(_ bytes: UnsafeBufferPointer<UInt8>, at w: inout UnsafeMutablePointer<UInt8>) {
        guard let base = bytes.baseAddress else { return }
        w.update(from: base, count: bytes.count)
        w += bytes.count
    }

    @inlinable public static func write(_ bytes: [UInt8], at w: inout UnsafeMutablePointer<UInt8>) {
        bytes.withUnsafeBufferPointer { write($0, at: &w) }
    }

    /// A double field: the one-byte `tag` (key), then the value's 8 bytes.
    @inlinable public static func write(double v: Double, tag: UInt8, at w: inout UnsafeMutablePointer<UInt8>) {
        write(byte: tag, at: &w)
        UnsafeMutableRawPointer(w).storeBytes(of: v.bitPattern.littleEndian, as: UInt64.self)
        w += 8
    }

    // Appending to an array, for small messages built field by field.

    @inlinable public static func appendVarint(_ v: UInt64, to out: inout [UInt8]) {
        var v = v
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    @inlinable public static func appendTag(_ field: Int, wireType: Int, to out: inout [UInt8]) {
        appendVarint(UInt64(field << 3 | wireType), to: &out)
    }

    /// A double field: the one-byte `tag` (key), then the value's 8 bytes.
    @inlinable public static func appendDouble(_ v: Double, tag: UInt8, to out: inout [UInt8]) {
        out.append(tag)
        withUnsafeBytes(of: v.bitPattern.littleEndian) { out.append(contentsOf: $0) }
    }
}

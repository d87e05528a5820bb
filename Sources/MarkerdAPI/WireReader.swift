/// A bounds-checked cursor over protobuf wire bytes (`decodeMarkersChunk`); every read returns
/// nil when the bytes end early or are out of what it accepts.
struct WireReader {
    let bytes: UnsafeRawBufferPointer
    private var at: Int
    private let end: Int

    init(_ bytes: UnsafeRawBufferPointer) { self.init(bytes, 0..<bytes.count) }

    init(_ bytes: UnsafeRawBufferPointer, _ range: Range<Int>) {
        self.bytes = bytes
        at = range.lowerBound
        end = range.upperBound
    }

    var atEnd: Bool { at >= end }

    /// Where the next read starts.
    var position: Int { at }

    /// A varint of at most 10 bytes.
    mutating func varint() -> UInt64? {
        var v: UInt64 = 0
        var shift: UInt64 = 0
        while at < end && shift < 70 {
            let b = bytes[at]
            at += 1
            v |= UInt64(b & 0x7F) << shift
            if b < 0x80 { return v }
            shift += 7
        }
        return nil
    }

    /// A field key (field number << 3 | wire type) of at most 5 bytes.
    mutating func key() -> UInt64? {
        guard let k = varint(), k <= UInt64(UInt32.max) else { return nil }
        return k
    }

    mutating func fixed32() -> UInt32? {
        guard end - at >= 4 else { return nil }
        defer { at += 4 }
        return UInt32(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt32.self))
    }

    mutating func fixed64() -> UInt64? {
        guard end - at >= 8 else { return nil }
        defer { at += 8 }
        return UInt64(littleEndian: bytes.loadUnaligned(fromByteOffset: at, as: UInt64.self))
    }

    /// Skips the value of a varint, fixed64 or fixed32 field (`wireType` 0, 1 or 5); false when it
    /// is cut short or the wire type is another (groups: no markerd message has them).
    mutating func skipScalar(wireType: UInt64) -> Bool {
        switch wireType {
        case 0: varint() != nil
        case 1: fixed64() != nil
        case 5: fixed32() != nil
        default: false
        }
    }

    /// The byte range of a length-delimited value (skipped over).
    mutating func lengthDelimited() -> Range<Int>? {
        guard let n = varint(), n <= UInt64(end - at) else { return nil }
        let r = at..<at + Int(n)
        at += Int(n)
        return r
    }

    /// How many of the remaining fields are length-delimited with `key`, up to the first that
    /// is not length-delimited (a capacity hint; moves to the end).
    mutating func countFields(key wanted: UInt64) -> Int {
        var n = 0
        while !atEnd, let k = key(), k & 7 == 2, lengthDelimited() != nil {
            if k == wanted { n += 1 }
        }
        return n
    }

    /// The bytes at `range` as a string: nil unless valid UTF-8 without NUL bytes.
    func string(_ range: Range<Int>) -> String? {
        let slice = UnsafeRawBufferPointer(rebasing: bytes[range])
        var ascii = true
        for b in slice {
            if b == 0 { return nil }
            if b >= 0x80 { ascii = false }
        }
        return ascii ? String(decoding: slice, as: UTF8.self) : String(validating: slice, as: UTF8.self)
    }
}

extension UnsafeRawBufferPointer {
    /// Whether the bytes at `a` and `b` are the same.
    func same(_ a: Range<Int>, _ b: Range<Int>) -> Bool {
        a.count == b.count && (a.isEmpty || memcmpEqual(baseAddress! + a.lowerBound, baseAddress! + b.lowerBound, a.count))
    }

    private func memcmpEqual(_ p: UnsafeRawPointer, _ q: UnsafeRawPointer, _ n: Int) -> Bool {
        var i = 0
        while i + 8 <= n {
            if p.loadUnaligned(fromByteOffset: i, as: UInt64.self) != q.loadUnaligned(fromByteOffset: i, as: UInt64.self) { return false }
            i += 8
        }
        while i < n {
            if p.load(fromByteOffset: i, as: UInt8.self) != q.load(fromByteOffset: i, as: UInt8.self) { return false }
            i += 1
        }
        return true
    }
}

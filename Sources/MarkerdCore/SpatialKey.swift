/// The order of QueryViewport pages: the Morton (Z-order) key of the marker's stored world
/// position ascending, then id bytes ascending (only exact duplicates of a position tie on the
/// key). The grid walks its nodes in this order (`GridIndex.SpatialWalk`), so a page is the
/// first `limit` markers of the viewport in a walk that stops there, instead of every marker
/// in view sorted by draw order.
///
/// Paging: a page token holds the last returned marker's key (stateless: no server state, no
/// layer version). The next page holds the markers in view whose key is greater, at the time
/// it is asked for. So when the layer does not change between pages, the pages together hold
/// every marker in view exactly once; when it does, every marker that stays in view and does
/// not move or change in between still comes exactly once, while one that moves (or appears,
/// or disappears) during the paging comes once, twice (moved from before the token to after
/// it) or not at all (the other way), as in any stateless cursor over changing data.
public struct SpatialKey: Hashable, Sendable, Comparable {
    /// `SpatialKey.morton(x:y:)` of the stored world position.
    public var morton: UInt64
    public var id: [UInt8]

    public init(morton: UInt64, id: [UInt8]) { self.morton = morton; self.id = id }

    public init(point: WorldPoint, id: [UInt8]) { self.init(morton: SpatialKey.morton(x: point.x, y: point.y), id: id) }

    /// The bits of `y` and `x` interleaved, y above x at each position: a grid node (an aligned
    /// square) holds a contiguous range of keys, from its corner (x0, y0) to its corner (x1, y1).
    @inline(__always) public static func morton(x: UInt32, y: UInt32) -> UInt64 { spread(x) | spread(y) << 1 }

    /// The 32 bits of `v` at the even bit positions of the result.
    @inline(__always) static func spread(_ v: UInt32) -> UInt64 {
        var x = UInt64(v)
        x = (x | x << 16) & 0x0000_FFFF_0000_FFFF
        x = (x | x << 8) & 0x00FF_00FF_00FF_00FF
        x = (x | x << 4) & 0x0F0F_0F0F_0F0F_0F0F
        x = (x | x << 2) & 0x3333_3333_3333_3333
        x = (x | x << 1) & 0x5555_5555_5555_5555
        return x
    }

    public static func < (a: SpatialKey, b: SpatialKey) -> Bool {
        if a.morton != b.morton { return a.morton < b.morton }
        return a.id.lexicographicallyPrecedes(b.id)
    }

    /// A stateless page token: "s1.<hex Morton key>.<hex id>".
    public var pageToken: String {
        "s1.\(String(morton, radix: 16)).\(String(decoding: HexBytes.encode(id), as: UTF8.self))"
    }

    /// Parses a `pageToken`; throws `.invalidPageToken` (also for tokens of other formats,
    /// such as the draw-order tokens of older servers).
    public init(pageToken: String) throws(MarkerdCoreError) {
        let parts = pageToken.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 3, parts[0] == "s1", parts[1].utf8.count <= 16, let key = UInt64(parts[1], radix: 16),
              parts[2].utf8.count <= 2 * MarkerTable.maxIDBytes, let id = HexBytes.decode(parts[2].utf8)
        else { throw .invalidPageToken(pageToken) }
        self.init(morton: key, id: id)
    }
}

/// Lower-case hexadecimal for page tokens.
enum HexBytes {
    static let digits = Array("0123456789abcdef".utf8)

    static func encode(_ bytes: [UInt8]) -> [UInt8] {
        var h: [UInt8] = []
        h.reserveCapacity(bytes.count * 2)
        for b in bytes { h.append(digits[Int(b >> 4)]); h.append(digits[Int(b & 15)]) }
        return h
    }

    /// Nil for an odd length or a character other than 0-9, a-f.
    static func decode<S: Sequence>(_ text: S) -> [UInt8]? where S.Element == UInt8 {
        var bytes: [UInt8] = []
        var hi: UInt8? = nil
        for c in text {
            let v: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): v = c - UInt8(ascii: "a") + 10
            default: return nil
            }
            if let h = hi { bytes.append(h << 4 | v); hi = nil } else { hi = v }
        }
        return hi == nil ? bytes : nil
    }
}

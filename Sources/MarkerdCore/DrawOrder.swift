/// The draw order shared by tiles, viewport queries and hit-tests: z-index ascending, then
/// world y ascending (latitude descending: southern markers are drawn over northern ones), then
/// id bytes ascending. Later in the order = drawn on top. Hit-tests return the reverse.
/// (The y compared is the stored world y, so two latitudes closer than 1 world unit tie and
/// fall back to the id.)
public struct DrawKey: Hashable, Sendable, Comparable {
    public var zIndex: Int32
    public var worldY: UInt32
    public var id: [UInt8]

    public init(zIndex: Int32, worldY: UInt32, id: [UInt8]) {
        self.zIndex = zIndex; self.worldY = worldY; self.id = id
    }

    public static func < (a: DrawKey, b: DrawKey) -> Bool {
        if a.zIndex != b.zIndex { return a.zIndex < b.zIndex }
        if a.worldY != b.worldY { return a.worldY < b.worldY }
        return a.id.lexicographicallyPrecedes(b.id)
    }

    /// A stateless page token: "k1.<z>.<y>.<hex id>". The next page holds the markers after
    /// this key in draw order, so pages stay consistent even if the layer changes in between.
    public var pageToken: String {
        let hex = "0123456789abcdef".utf8.map { $0 }
        var h: [UInt8] = []
        h.reserveCapacity(id.count * 2)
        for b in id { h.append(hex[Int(b >> 4)]); h.append(hex[Int(b & 15)]) }
        return "k1.\(zIndex).\(worldY).\(String(decoding: h, as: UTF8.self))"
    }

    /// Parses a `pageToken`; throws `.invalidPageToken`.
    public init(pageToken: String) throws(MarkerdCoreError) {
        let parts = pageToken.split(separator: ".", omittingEmptySubsequences: false)
        guard parts.count == 4, parts[0] == "k1", let z = Int32(parts[1]), let y = UInt32(parts[2]),
              parts[3].utf8.count % 2 == 0, parts[3].utf8.count <= 2 * MarkerTable.maxIDBytes
        else { throw .invalidPageToken(pageToken) }
        var bytes: [UInt8] = []
        var hi: UInt8? = nil
        for c in parts[3].utf8 {
            let v: UInt8
            switch c {
            case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0")
            case UInt8(ascii: "a")...UInt8(ascii: "f"): v = c - UInt8(ascii: "a") + 10
            default: throw .invalidPageToken(pageToken)
            }
            if let h = hi { bytes.append(h << 4 | v); hi = nil } else { hi = v }
        }
        self.init(zIndex: z, worldY: y, id: bytes)
    }
}

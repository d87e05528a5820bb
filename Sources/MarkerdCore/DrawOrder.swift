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
}

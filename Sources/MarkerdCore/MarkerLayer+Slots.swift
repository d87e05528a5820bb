/// A marker's place in its layer's table, as returned by `viewportPage`. Valid until the layer
/// next changes (a removed marker's slot is reused).
public struct MarkerSlot: Hashable, Sendable {
    let raw: Int32
    init(_ raw: Int32) { self.raw = raw }
}

/// The scalar fields of a stored marker (see `MarkerLayer.basics(_:)`).
public struct MarkerBasics: Sendable, Equatable {
    public var zIndex: Int32
    public var visible: Bool
    public var clickable: Bool
    public var draggable: Bool
    /// Index of the marker's icon style in `MarkerLayer.styles` (`StyleTable.style(at:)`).
    public var styleIndex: UInt32
    /// The marker has an animation, attributes or extra bytes: read them from `record(_:)`.
    public var hasPayload: Bool
}

/// Per-field reads of markers by slot, for encoders that would otherwise build a whole
/// `MarkerRecord` (an id `String`, a style copy, dictionaries) per marker. Each read returns
/// exactly what `record(_:)` holds in the same field.
extension MarkerLayer {
    /// The full stored record (as `marker(id:)`).
    public func record(_ slot: MarkerSlot) -> MarkerRecord { record(slot.raw) }

    /// Calls `body` with the id's UTF-8 bytes (valid only inside `body`).
    public func withIDBytes<R>(_ slot: MarkerSlot, _ body: (UnsafeBufferPointer<UInt8>) throws -> R) rethrows -> R {
        let off = table.idOffset(slot.raw), n = table.idLength(slot.raw)
        return try table.arena.withUnsafeBufferPointer { try body(UnsafeBufferPointer(rebasing: $0[off..<off + n])) }
    }

    /// The position as `record(_:).position` (degrees, rounded to 7 decimals).
    public func position(_ slot: MarkerSlot) -> LatLng {
        WorldPoint(x: table.x[Int(slot.raw)], y: table.y[Int(slot.raw)]).latLng
    }

    /// z-index, flags and style index.
    public func basics(_ slot: MarkerSlot) -> MarkerBasics {
        let s = Int(slot.raw)
        let f = table.flags[s]
        let payload = MarkerFlags.animating | MarkerFlags.hasAttributes | MarkerFlags.hasExtra
        return MarkerBasics(zIndex: table.zIndex[s], visible: f & MarkerFlags.visible != 0, clickable: f & MarkerFlags.clickable != 0,
                            draggable: f & MarkerFlags.draggable != 0, styleIndex: table.style[s], hasPayload: f & payload != 0)
    }
}

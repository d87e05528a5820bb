import MarkerdAPI
import MarkerdCore

/// Writes stored markers as protobuf `Marker` submessages straight from a layer, byte for byte
/// what `MarkerConversion.apiMarker(layer.record(slot)).serializedBytes()` gives, without the
/// `MarkerRecord` / `V1.Marker` / protobuf-c message built per marker on that path (most of a
/// 1000-marker QueryViewport's server time).
///
/// Fields in field-number order as protobuf-c writes them: id (1; cut at a NUL, as protobuf-c
/// does), position (2; a zero coordinate is not written), the icon and anchor (3 or 4, and 5:
/// encoded once per style by the regular encoder and reused), z_index (6, unless 0), clickable
/// (7), draggable (8), visible (10). A marker with an animation, attributes or extra bytes goes
/// through the regular encoder whole (field 9 sits between 8 and 10, and such markers are rare).
/// One encoder per reply: the style cache assumes the layer does not change in between.
struct MarkerWireEncoder {
    /// Encoded icon + anchor fields by style index (nil: not encoded yet). An array, not a
    /// dictionary: looked up once per marker.
    private var styleFields: [[UInt8]?] = []

    /// Appends the markers of `slots` as repeated field `field` (length-delimited) of the
    /// enclosing message.
    mutating func append(_ slots: [MarkerSlot], field: Int, of layer: MarkerLayer, to out: inout [UInt8]) {
        let gathered = layer.gather(slots)   // one pass over the table (see `MarkerLayer.gather`)
        out.reserveCapacity(out.count + slots.count * 64)
        gathered.ids.withUnsafeBufferPointer { ids in
            for (slot, basics) in zip(slots, gathered.basics) {
                append(slot, basics, UnsafeBufferPointer(rebasing: ids[basics.idRange]), field: field, of: layer, to: &out)
            }
        }
    }

    private mutating func append(_ slot: MarkerSlot, _ basics: MarkerBasics, _ idBytes: UnsafeBufferPointer<UInt8>, field: Int,
                                 of layer: MarkerLayer, to out: inout [UInt8]) {
        if basics.hasPayload {
            let bytes = MarkerConversion.apiMarker(layer.record(slot)).serializedBytes()
            Self.appendTag(field, wireType: 2, to: &out)
            Self.appendVarint(UInt64(bytes.count), to: &out)
            out.append(contentsOf: bytes)
            return
        }
        let i = Int(basics.styleIndex)
        let style = i < styleFields.count ? styleFields[i] ?? encodeStyle(basics.styleIndex, of: layer) : encodeStyle(basics.styleIndex, of: layer)
        let p = layer.world(slot).fastLatLng  // == layer.position(slot), bit for bit
        let id = UnsafeBufferPointer(rebasing: idBytes[..<(idBytes.firstIndex(of: 0) ?? idBytes.count)])
        let positionSize = (p.latitude != 0 ? 9 : 0) + (p.longitude != 0 ? 9 : 0)
        let z = UInt64(bitPattern: Int64(basics.zIndex))
        var size = style.count + 6   // clickable, draggable, visible: tag + 1 byte each
        if !id.isEmpty { size += 1 + Self.varintSize(UInt64(id.count)) + id.count }
        size += 2 + positionSize     // position is always set
        if z != 0 { size += 1 + Self.varintSize(z) }
        Self.appendTag(field, wireType: 2, to: &out)
        Self.appendVarint(UInt64(size), to: &out)
        if !id.isEmpty {
            out.append(0x0A)
            Self.appendVarint(UInt64(id.count), to: &out)
            out.append(contentsOf: id)
        }
        out.append(0x12)
        out.append(UInt8(positionSize))
        if p.latitude != 0 { Self.appendDouble(p.latitude, tag: 0x09, to: &out) }
        if p.longitude != 0 { Self.appendDouble(p.longitude, tag: 0x11, to: &out) }
        out.append(contentsOf: style)
        if z != 0 {
            out.append(0x30)
            Self.appendVarint(z, to: &out)
        }
        out.append(0x38)
        out.append(basics.clickable ? 1 : 0)
        out.append(0x40)
        out.append(basics.draggable ? 1 : 0)
        out.append(0x50)
        out.append(basics.visible ? 1 : 0)
    }

    /// The icon and anchor fields of a style, as the regular encoder writes them.
    private mutating func encodeStyle(_ index: UInt32, of layer: MarkerLayer) -> [UInt8] {
        let full = MarkerConversion.apiMarker(MarkerRecord(id: "", position: LatLng(latitude: 0, longitude: 0),
                                                           style: layer.styles.style(at: index)))
        var m = V1.Marker()
        m.icon = full.icon
        m.anchor = full.anchor
        let bytes = m.serializedBytes()
        if Int(index) >= styleFields.count { styleFields.append(contentsOf: repeatElement(nil, count: Int(index) + 1 - styleFields.count)) }
        styleFields[Int(index)] = bytes
        return bytes
    }

    static func varintSize(_ v: UInt64) -> Int { v == 0 ? 1 : (64 - v.leadingZeroBitCount + 6) / 7 }

    static func appendVarint(_ v: UInt64, to out: inout [UInt8]) {
        var v = v
        while v >= 0x80 {
            out.append(UInt8(truncatingIfNeeded: v) | 0x80)
            v >>= 7
        }
        out.append(UInt8(v))
    }

    static func appendTag(_ field: Int, wireType: Int, to out: inout [UInt8]) {
        appendVarint(UInt64(field << 3 | wireType), to: &out)
    }

    static func appendDouble(_ v: Double, tag: UInt8, to out: inout [UInt8]) {
        out.append(tag)
        withUnsafeBytes(of: v.bitPattern.littleEndian) { out.append(contentsOf: $0) }
    }
}

import MarkerdAPI
import MarkerdCore
import Synchronization

/// Writes stored markers as protobuf `Marker` submessages straight from a layer, byte for byte
/// what `MarkerConversion.apiMarker(layer.record(slot)).serializedBytes()` gives, without the
/// `MarkerRecord` / `V1.Marker` / protobuf-c message built per marker on that path (most of a
/// 1000-marker QueryViewport's server time).
///
/// Fields in field-number order as protobuf-c writes them: id (1; cut at a NUL, as protobuf-c
/// does), position (2; a zero coordinate is not written), the icon and anchor (3 or 4, and 5:
/// encoded once per style by the regular encoder and reused), z_index (6, unless 0), clickable
/// (7), draggable (8), visible (10), attributes (11: the layer's stored encoding, which is
/// protobuf-c's, copied as it is). A marker with an animation or extra bytes goes through the
/// regular encoder whole (field 9 sits between 8 and 10, and such markers are rare).
/// One encoder per reply: the style cache assumes the layer does not change in between.
struct MarkerWireEncoder {
    /// Encoded icon + anchor fields of the styles seen so far, back to back (`styleRanges`).
    private var styleBytes: [UInt8] = []
    /// Where each style's fields are in `styleBytes`, by style index (nil: not encoded yet). An
    /// array, not a dictionary: looked up once per marker.
    private var styleRanges: [Range<Int>?] = []

    /// What the second pass writes for one marker: the submessage's size, and its id's length
    /// (cut at a NUL) and position, or (`regular`) the index of its bytes from the regular encoder.
    fileprivate struct Planned {
        var size: Int
        var idCount: Int
        var position: LatLng
        var regular: Int
        /// The marker's encoded attributes in `Plan.attributes` (empty: none).
        var attributes: Range<Int>
    }

    /// The markers of a reply, sized and ready to write (`plan`, then `write(_:into:)`).
    struct Plan {
        fileprivate let gathered: GatheredMarkers
        fileprivate let planned: [Planned]
        fileprivate let regular: [[UInt8]]
        /// The markers' encoded attributes, copied from the layer (the plan outlives its lock).
        fileprivate let attributes: [UInt8]
        fileprivate let tag: UInt64
        /// Bytes `write(_:into:)` writes.
        let byteCount: Int
    }

    /// Appends the markers of `slots` as repeated field `field` (length-delimited) of the
    /// enclosing message: `plan`, then `write` into uninitialised space after the bytes so far
    /// (appending `byteCount` zeros first cost a generic append and a memset of the reply).
    mutating func append(_ slots: [MarkerSlot], field: Int, of layer: MarkerLayer, to out: inout [UInt8]) {
        let plan = self.plan(slots, field: field, of: layer)
        let head = out, start = head.count
        out = [UInt8](unsafeUninitializedCapacity: start + plan.byteCount) { buffer, count in
            if start > 0 { head.withUnsafeBufferPointer { buffer.baseAddress!.initialize(from: $0.baseAddress!, count: start) } }
            write(plan, into: buffer.baseAddress! + start)
            count = start + plan.byteCount
        }
    }

    /// The markers of `slots` as repeated field `field` (length-delimited), sized: the table read
    /// in one pass by `MarkerLayer.gather`, each marker's submessage size computed, and the rare
    /// markers with a payload encoded by the regular encoder. `write(_:into:)` then writes every
    /// byte through one pointer (appending field by field to an array checked its capacity and
    /// uniqueness and retained the style's bytes for each of a page's thousands of fields), into
    /// a reply array or straight into the network's reply buffer; it reads the plan and this
    /// encoder's style cache, not the layer.
    mutating func plan(_ slots: [MarkerSlot], field: Int, of layer: MarkerLayer) -> Plan {
        let gathered = layer.gather(slots)
        let tag = UInt64(field << 3 | 2)
        var regular: [[UInt8]] = []
        var attributes: [UInt8] = []
        var plan: [Planned] = []
        plan.reserveCapacity(slots.count)
        var total = 0
        // Positions first, in a loop of their own: each is a chain of dependent arithmetic
        // (~100 cycles), independent from marker to marker, and a small loop body lets the
        // processor run several markers' chains at once (in the loop below it ran about one).
        let positions = [LatLng](unsafeUninitializedCapacity: slots.count) { out, count in
            for (i, slot) in slots.enumerated() { out.initializeElement(at: i, to: layer.world(slot).fastLatLng) }  // == layer.position(slot), bit for bit
            count = slots.count
        }
        gathered.ids.withUnsafeBufferPointer { ids in
            for (k, (slot, basics)) in zip(slots, gathered.basics).enumerated() {
                var p = Planned(size: 0, idCount: 0, position: LatLng(latitude: 0, longitude: 0), regular: -1, attributes: 0..<0)
                if basics.hasPayload {
                    let bytes = MarkerConversion.apiMarker(layer.record(slot)).serializedBytes()
                    p.size = bytes.count
                    p.regular = regular.count
                    regular.append(bytes)
                } else {
                    p.idCount = Self.bytesBeforeNUL(ids, basics.idRange)
                    p.position = positions[k]
                    p.size = Self.bodySize(idCount: p.idCount, position: p.position, zIndex: basics.zIndex,
                                           styleCount: styleRange(basics.styleIndex, of: layer).count)
                    if basics.hasAttributes {
                        let from = attributes.count
                        layer.withEncodedAttributes(slot) { attributes.append(contentsOf: $0.assumingMemoryBound(to: UInt8.self)) }
                        p.attributes = from..<attributes.count
                        p.size += p.attributes.count
                    }
                }
                total += ProtoWriter.varintSize(tag) + ProtoWriter.varintSize(UInt64(p.size)) + p.size
                plan.append(p)
            }
        }
        return Plan(gathered: gathered, planned: plan, regular: regular, attributes: attributes, tag: tag, byteCount: total)
    }

    /// Writes `plan`'s markers, exactly `plan.byteCount` bytes from `start` (which need not be
    /// initialised).
    func write(_ plan: Plan, into start: UnsafeMutablePointer<UInt8>) {
        var w = start
        let tag = plan.tag, regular = plan.regular
        plan.gathered.ids.withUnsafeBufferPointer { ids in
            plan.attributes.withUnsafeBufferPointer { attributes in
                styleBytes.withUnsafeBufferPointer { styles in
                    for (p, basics) in zip(plan.planned, plan.gathered.basics) {
                        ProtoWriter.write(varint: tag, at: &w)
                        ProtoWriter.write(varint: UInt64(p.size), at: &w)
                        if p.regular >= 0 {
                            ProtoWriter.write(regular[p.regular], at: &w)
                            continue
                        }
                        let id = UnsafeBufferPointer(rebasing: ids[basics.idRange.lowerBound..<basics.idRange.lowerBound + p.idCount])
                        Self.writeBody(p, basics, id: id, style: UnsafeBufferPointer(rebasing: styles[styleRanges[Int(basics.styleIndex)]!]),
                                       at: &w)
                        ProtoWriter.write(UnsafeBufferPointer(rebasing: attributes[p.attributes]), at: &w)
                    }
                }
            }
        }
        precondition(w == start + plan.byteCount, "marker encoding wrote \(w - start) of \(plan.byteCount) bytes")
    }

    /// How many bytes of `ids[range]` come before its first NUL (all of them when none). Ids of
    /// up to 16 bytes are tested as two 8-byte words (`GatheredMarkers.ids` has 16 zero bytes
    /// after the last id), the bytes past the id set to 0xFF: a byte loop over every id cost
    /// more than the rest of the first pass.
    static func bytesBeforeNUL(_ ids: UnsafeBufferPointer<UInt8>, _ range: Range<Int>) -> Int {
        let n = range.count
        guard n <= 16, range.lowerBound + 16 <= ids.count else {
            let id = UnsafeBufferPointer(rebasing: ids[range])
            return id.firstIndex(of: 0).map { $0 - id.startIndex } ?? n
        }
        let from = UnsafeRawPointer(ids.baseAddress! + range.lowerBound)
        // Bytes at or past n forced to 0xFF (not NUL).
        let low = UInt64(littleEndian: from.loadUnaligned(as: UInt64.self)) | (n >= 8 ? 0 : ~0 << UInt64(8 * n))
        let high = UInt64(littleEndian: from.loadUnaligned(fromByteOffset: 8, as: UInt64.self)) | (n <= 8 ? ~0 : ~0 << UInt64(8 * (n - 8)))
        // The lowest byte flagged by (v - 0x01...) & ~v & 0x80... is v's lowest zero byte.
        @inline(__always) func zeros(_ v: UInt64) -> UInt64 { (v &- 0x0101_0101_0101_0101) & ~v & 0x8080_8080_8080_8080 }
        let z0 = zeros(low), z1 = zeros(high)
        if z0 != 0 { return z0.trailingZeroBitCount / 8 }
        if z1 != 0 { return 8 + z1.trailingZeroBitCount / 8 }
        return n
    }

    /// Size of a plain marker's submessage (fields as `writeBody` writes them).
    private static func bodySize(idCount: Int, position p: LatLng, zIndex: Int32, styleCount: Int) -> Int {
        let positionSize = (p.latitude != 0 ? 9 : 0) + (p.longitude != 0 ? 9 : 0)
        let z = UInt64(bitPattern: Int64(zIndex))
        var size = styleCount + 6   // clickable, draggable, visible: tag + 1 byte each
        if idCount > 0 { size += 1 + ProtoWriter.varintSize(UInt64(idCount)) + idCount }
        size += 2 + positionSize     // position is always set
        if z != 0 { size += 1 + ProtoWriter.varintSize(z) }
        return size
    }

    /// Writes a plain marker's fields, in field-number order.
    @inline(__always)
    private static func writeBody(_ p: Planned, _ basics: MarkerBasics, id: UnsafeBufferPointer<UInt8>, style: UnsafeBufferPointer<UInt8>,
                                  at w: inout UnsafeMutablePointer<UInt8>) {
        if !id.isEmpty {
            ProtoWriter.write(byte: 0x0A, at: &w)
            ProtoWriter.write(varint: UInt64(id.count), at: &w)
            ProtoWriter.write(id, at: &w)
        }
        ProtoWriter.write(byte: 0x12, at: &w)
        ProtoWriter.write(byte: UInt8((p.position.latitude != 0 ? 9 : 0) + (p.position.longitude != 0 ? 9 : 0)), at: &w)
        if p.position.latitude != 0 { ProtoWriter.write(double: p.position.latitude, tag: 0x09, at: &w) }
        if p.position.longitude != 0 { ProtoWriter.write(double: p.position.longitude, tag: 0x11, at: &w) }
        ProtoWriter.write(style, at: &w)
        let z = UInt64(bitPattern: Int64(basics.zIndex))
        if z != 0 {
            ProtoWriter.write(byte: 0x30, at: &w)
            ProtoWriter.write(varint: z, at: &w)
        }
        ProtoWriter.write(byte: 0x38, at: &w); ProtoWriter.write(byte: basics.clickable ? 1 : 0, at: &w)
        ProtoWriter.write(byte: 0x40, at: &w); ProtoWriter.write(byte: basics.draggable ? 1 : 0, at: &w)
        ProtoWriter.write(byte: 0x50, at: &w); ProtoWriter.write(byte: basics.visible ? 1 : 0, at: &w)
    }

    /// Where a style's icon and anchor fields are in `styleBytes` (on first use per reply, from
    /// `encodedStyle`).
    private mutating func styleRange(_ index: UInt32, of layer: MarkerLayer) -> Range<Int> {
        if Int(index) < styleRanges.count, let r = styleRanges[Int(index)] { return r }
        let bytes = Self.encodedStyle(layer.styles.style(at: index))
        if Int(index) >= styleRanges.count { styleRanges.append(contentsOf: repeatElement(nil, count: Int(index) + 1 - styleRanges.count)) }
        let r = styleBytes.count..<styleBytes.count + bytes.count
        styleBytes += bytes
        styleRanges[Int(index)] = r
        return r
    }

    /// Styles' icon and anchor fields as the regular encoder writes them, shared by all
    /// replies (building a `V1.Marker` and running protobuf-c for them took a few µs of every
    /// reply). Emptied when it reaches `styleCacheLimit` styles (labels make styles unbounded).
    private static let styleCache = Mutex<[IconStyle: [UInt8]]>([:])
    static let styleCacheLimit = 1024

    /// A style's icon and anchor fields, encoded by the regular encoder (cached).
    static func encodedStyle(_ style: IconStyle) -> [UInt8] {
        if let bytes = styleCache.withLock({ $0[style] }) { return bytes }
        let full = MarkerConversion.apiMarker(MarkerRecord(id: "", position: LatLng(latitude: 0, longitude: 0), style: style))
        var m = V1.Marker()
        m.icon = full.icon
        m.anchor = full.anchor
        let bytes = m.serializedBytes()
        styleCache.withLock { cache in
            if cache.count >= styleCacheLimit { cache.removeAll() }
            cache[style] = bytes
        }
        return bytes
    }
}

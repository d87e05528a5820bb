/// Plain markers (no animation) in columns rather than as `MarkerRecord`s: a
/// snapshot chunk being restored or an UpsertMarkers batch (`MarkerLayer.upsert(_:now:)` of a
/// batch). Loading millions of markers spends much of its time copying, retaining and releasing
/// records, and such markers mostly share one style.
///
/// Marker `i` is `entries[i]` (position, projected position, z-index, style `styles[style]`,
/// visible / clickable / draggable bits), its id `idBytes` up to `entries[i].idEnd` (from the
/// previous marker's end), its attributes `attributeBytes` in `attributeRange(i)` (canonical,
/// `AttributeEncoding`: as the wire brought them when they were sorted, which the layer stores
/// as they are) and its extra bytes `extras[i]` (absent: none). Build it with `append`, which
/// checks what `MarkerLayer.validate` checks and refuses
/// (returns false) what it would reject, so that the caller can take the record path for its
/// error message.
public struct MarkerBatch: Sendable {
    public static let visible: UInt8 = 1
    public static let clickable: UInt8 = 2
    public static let draggable: UInt8 = 4

    /// One marker's fixed-size columns.
    public struct Entry: Sendable {
        /// End offset of the id in `idBytes`.
        public var idEnd: UInt32
        public var zIndex: Int32
        /// Index into `styles`.
        public var style: UInt32
        /// `MarkerBatch.visible` | `.clickable` | `.draggable`.
        public var flags: UInt8
        public var position: LatLng
        public var world: WorldPoint

        /// The table's flags of a marker stored from this entry (`MarkerFlags`: occupied, and
        /// visible, clickable, draggable as given; `hasExtra` is the upsert's to add).
        @inline(__always) var markerFlags: UInt8 {
            var f = MarkerFlags.occupied
            if flags & MarkerBatch.visible != 0 { f |= MarkerFlags.visible }
            if flags & MarkerBatch.clickable != 0 { f |= MarkerFlags.clickable }
            if flags & MarkerBatch.draggable != 0 { f |= MarkerFlags.draggable }
            return f
        }
    }

    public private(set) var idBytes: [UInt8] = []
    public private(set) var entries: [Entry] = []
    /// Distinct styles in order of first use; each validated once.
    public private(set) var styles: [IconStyle] = []
    /// How many markers use each style.
    public private(set) var styleUses: [UInt32] = []
    /// Non-empty extra bytes by marker index.
    public private(set) var extras: [Int32: [UInt8]] = [:]
    /// The markers' encoded attributes (`AttributeEncoding`), back to back.
    public private(set) var attributeBytes: [UInt8] = []
    /// End of each marker's attributes in `attributeBytes` (from the previous marker's end);
    /// empty while no marker of the batch has any.
    private var attributeEnds: [Int] = []
    /// Bytes `attributeBytes` reserves when the first attributes come (`init`'s hint).
    private var attributeCapacity = 0
    private var styleIndex: [IconStyle: UInt32] = [:]
    /// Orders and id hashes computed ahead of the upsert (`prepareLayout(idHashSeed:)`); nil
    /// until then, and again after any `append`.
    public internal(set) var layout: Layout? = nil

    /// A batch with room for `capacity` markers and, once a marker with attributes comes,
    /// `attributeBytes` bytes of encoded attributes (a hint, e.g. the size of the request the
    /// batch is decoded from: room never written costs no memory, and growing by copies does).
    public init(capacity: Int = 0, attributeBytes: Int = 0) {
        idBytes.reserveCapacity(capacity * 8)
        entries.reserveCapacity(capacity)
        attributeCapacity = attributeBytes
    }

    public var count: Int { entries.count }

    func idStart(_ i: Int) -> Int { i == 0 ? 0 : Int(entries[i - 1].idEnd) }

    /// Where marker `i`'s encoded attributes are in `attributeBytes` (empty: none).
    @inline(__always) public func attributeRange(_ i: Int) -> Range<Int> {
        attributeEnds.isEmpty ? 0..<0 : (i == 0 ? 0 : attributeEnds[i - 1])..<attributeEnds[i]
    }

    /// The index of `style` in `styles`, adding it (after validating it) if new; nil when
    /// `IconStyle.validate` rejects it. `hint` is tried first (e.g. the previous marker's).
    public mutating func styleIndex(_ style: IconStyle, hint: UInt32?) -> UInt32? {
        if let h = hint, styles[Int(h)] == style { return h }
        if let i = styleIndex[style] { return i }
        guard (try? style.validate(field: "icon")) != nil else { return nil }
        let i = UInt32(styles.count)
        styles.append(style)
        styleUses.append(0)
        styleIndex[style] = i
        return i
    }

    /// Appends a marker whose style is `styles[style]` (from `styleIndex`); false, leaving the
    /// batch unchanged, when `MarkerLayer.validate` would reject it (id not 1-256 bytes,
    /// position invalid), when `AttributeEncoding.appendCanonical` declines `attributes` (the
    /// wire bytes of the marker's field 11 entries, back to back; empty: none), or when the
    /// bytes of the attributes' keys and values plus `extra` are more than `maxPayloadBytes`
    /// (default: no limit).
    public mutating func append(id: String, position: LatLng, style: UInt32, zIndex z: Int32,
                                visible: Bool, clickable: Bool, draggable: Bool, extra: [UInt8],
                                attributes: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
                                maxPayloadBytes: Int = .max) -> Bool {
        var id = id
        let n = id.utf8.count
        guard n >= 1, n <= MarkerTable.maxIDBytes, position.isValid, extra.count <= maxPayloadBytes else { return false }
        if !attributes.isEmpty {
            if attributeBytes.capacity == 0 { attributeBytes.reserveCapacity(Swift.max(attributeCapacity, attributes.count)) }
            let before = attributeBytes.count
            guard let payload = AttributeEncoding.appendCanonical(attributes, to: &attributeBytes) else { return false }
            guard payload + extra.count <= maxPayloadBytes else {
                attributeBytes.removeSubrange(before...)
                return false
            }
        }
        if !attributes.isEmpty || !attributeEnds.isEmpty {
            if attributeEnds.isEmpty { attributeEnds = Array(repeating: 0, count: entries.count) }
            attributeEnds.append(attributeBytes.count)
        }
        id.withUTF8 { idBytes.append(contentsOf: $0) }
        layout = nil
        entries.append(Entry(idEnd: UInt32(idBytes.count), zIndex: z, style: style,
                             flags: (visible ? Self.visible : 0) | (clickable ? Self.clickable : 0) | (draggable ? Self.draggable : 0),
                             position: position, world: WorldPoint(position)))
        styleUses[Int(style)] += 1
        if !extra.isEmpty { extras[Int32(entries.count - 1)] = extra }
        return true
    }

    /// Marker `i`'s id.
    public func id(_ i: Int) -> String {
        idBytes.withUnsafeBufferPointer { String(decoding: UnsafeBufferPointer(rebasing: $0[idStart(i)..<Int(entries[i].idEnd)]), as: UTF8.self) }
    }

    /// Marker `i` as a record.
    public func record(_ i: Int) -> MarkerRecord {
        let e = entries[i]
        let f = e.flags
        return MarkerRecord(id: id(i), position: e.position, style: styles[Int(e.style)], zIndex: e.zIndex,
                            visible: f & Self.visible != 0, clickable: f & Self.clickable != 0,
                            draggable: f & Self.draggable != 0,
                            attributes: attributeBytes.withUnsafeBytes { AttributeEncoding.decode(UnsafeRawBufferPointer(rebasing: $0[attributeRange(i)])) },
                            extra: extras[Int32(i)] ?? [])
    }
}

extension MarkerBatch {
    /// The index of the first marker whose id an earlier marker of the batch already has, or
    /// nil when every id is distinct. Costs one pass over the ids with a scratch open-addressing
    /// table of marker indexes keyed by a hash of the id bytes (no `String`s), 4 bytes per
    /// slot at load factor <= 1/2 (`MarkerTable.hash`).
    public func firstRepeatedID() -> Int? {
        guard count > 1 else { return nil }
        var size = 4
        while size < 2 * count { size *= 2 }
        let mask = size - 1
        var table = [Int32](repeating: -1, count: size)
        return idBytes.withUnsafeBufferPointer { ids -> Int? in
            func id(_ i: Int) -> UnsafeBufferPointer<UInt8> { UnsafeBufferPointer(rebasing: ids[idStart(i)..<Int(entries[i].idEnd)]) }
            for i in 0..<count {
                let bytes = id(i)
                var at = Int(MarkerTable.hash(bytes, seed: 1)) & mask
                while true {
                    let j = table[at]
                    if j < 0 { table[at] = Int32(i); break }
                    if bytes.elementsEqual(id(Int(j))) { return i }
                    at = (at + 1) & mask
                }
            }
            return nil
        }
    }
}

/// Plain markers (no animation) in columns rather than as `MarkerRecord`s: a
/// snapshot chunk being restored or an UpsertMarkers batch (`MarkerLayer.upsert(_:now:)` of a
/// batch). Loading millions of markers spends much of its time copying, retaining and releasing
/// records, and such markers mostly share one style.
///
/// Marker `i` is `entries[i]` (position, projected position, z-index, style `styles[style]`,
/// visible / clickable / draggable bits), its id `idBytes` up to `entries[i].idEnd` (from the
/// previous marker's end), its attributes `withAttributes { $0(i) }` (canonical,
/// `AttributeEncoding`: a range of `attributeSource`, the bytes the batch is decoded from, when
/// the wire brought them sorted, which the layer stores as they are; else re-encoded into the
/// batch's own bytes) and its extra bytes `extras[i]` (absent: none). Build it with `append`, which
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
    /// The bytes the batch is decoded from (a request's payload, a snapshot section; shared,
    /// not copied): canonical attributes stay there (`append(...attributesAt:...)`).
    public let attributeSource: [UInt8]
    /// Attributes re-encoded because they did not come canonical in `attributeSource` (or came
    /// from elsewhere: `append(...attributes:...)`), back to back.
    private var ownAttributeBytes: [UInt8] = []
    /// Where each marker's attributes are, `start << 32 | end`, in the bytes of
    /// `attributeSource` followed by `ownAttributeBytes` (start == end: none); empty while no
    /// marker of the batch has any.
    private var attributeRanges: [UInt64] = []
    private var styleIndex: [IconStyle: UInt32] = [:]
    /// Orders and id hashes computed ahead of the upsert (`prepareLayout(idHashSeed:)`); nil
    /// until then, and again after any `append`.
    public internal(set) var layout: Layout? = nil

    /// A batch with room for `capacity` markers, decoded from `attributeSource` (whose
    /// canonical attributes it keeps as ranges instead of copies; at most 4 GiB - 1: a request
    /// or snapshot section is far smaller).
    public init(capacity: Int = 0, attributeSource: [UInt8] = []) {
        precondition(attributeSource.count < 1 << 32, "a batch's source of \(attributeSource.count) bytes")
        idBytes.reserveCapacity(capacity * 8)
        entries.reserveCapacity(capacity)
        self.attributeSource = attributeSource
    }

    public var count: Int { entries.count }

    func idStart(_ i: Int) -> Int { i == 0 ? 0 : Int(entries[i - 1].idEnd) }

    /// Whether marker `i` has attributes.
    @inline(__always) public func hasAttributes(_ i: Int) -> Bool {
        !attributeRanges.isEmpty && attributeRanges[i] >> 32 != attributeRanges[i] & 0xFFFF_FFFF
    }

    /// Calls `body` with a function that gives marker `i`'s encoded attributes (empty: none),
    /// valid only inside `body`.
    @inline(__always) public func withAttributes<R>(_ body: ((Int) -> UnsafeRawBufferPointer) -> R) -> R {
        attributeSource.withUnsafeBytes { source in
            ownAttributeBytes.withUnsafeBytes { own in
                attributeRanges.withUnsafeBufferPointer { ranges in
                    body { i in
                        guard !ranges.isEmpty else { return UnsafeRawBufferPointer(start: nil, count: 0) }
                        let start = Int(ranges[i] >> 32), end = Int(ranges[i] & 0xFFFF_FFFF)
                        return start >= source.count
                            ? UnsafeRawBufferPointer(rebasing: own[start - source.count..<end - source.count])
                            : UnsafeRawBufferPointer(rebasing: source[start..<end])
                    }
                }
            }
        }
    }

    /// Marker `i`'s encoded attributes (empty: none).
    public func encodedAttributes(_ i: Int) -> [UInt8] { withAttributes { Array($0(i)) } }

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

    /// Appends a marker whose style is `styles[style]` (from `styleIndex`) and whose attributes
    /// are the wire bytes of its field 11 entries, back to back, at `attributesAt` of
    /// `attributeSource` (empty: none): kept there when canonical, else re-encoded. False,
    /// leaving the batch unchanged, when `MarkerLayer.validate` would reject the marker (id not
    /// 1-256 bytes, position invalid), when `AttributeEncoding.appendCanonical` declines its
    /// attributes (not UTF-8, a NUL, an empty key, other fields: see there), or when the bytes
    /// of the attributes' keys and values plus `extra` are more than `maxPayloadBytes`
    /// (default: no limit).
    public mutating func append(id: String, position: LatLng, style: UInt32, zIndex z: Int32,
                                visible: Bool, clickable: Bool, draggable: Bool, extra: [UInt8],
                                attributesAt range: Range<Int>, maxPayloadBytes: Int = .max) -> Bool {
        precondition(range.lowerBound >= 0 && range.upperBound <= attributeSource.count, "attributes at \(range) of \(attributeSource.count) bytes")
        guard !range.isEmpty else {
            return append(id: id, position: position, style: style, zIndex: z, visible: visible, clickable: clickable,
                          draggable: draggable, extra: extra, attributes: UnsafeRawBufferPointer(start: nil, count: 0), maxPayloadBytes: maxPayloadBytes)
        }
        guard let checked = attributeSource.withUnsafeBytes({ AttributeEncoding.check(UnsafeRawBufferPointer(rebasing: $0[range])) }) else { return false }
        guard checked.canonical else {
            return attributeSource.withUnsafeBytes {
                append(id: id, position: position, style: style, zIndex: z, visible: visible, clickable: clickable,
                       draggable: draggable, extra: extra, attributes: UnsafeRawBufferPointer(rebasing: $0[range]), maxPayloadBytes: maxPayloadBytes)
            }
        }
        return checked.payload + extra.count <= maxPayloadBytes
            && appendChecked(id: id, position: position, style: style, zIndex: z, visible: visible, clickable: clickable,
                             draggable: draggable, extra: extra, attributes: range)
    }

    /// `append(...attributesAt:...)` of attributes that are not in `attributeSource`
    /// (`attributes`: field 11 entries, back to back; empty: none), copied into the batch
    /// in canonical form.
    public mutating func append(id: String, position: LatLng, style: UInt32, zIndex z: Int32,
                                visible: Bool, clickable: Bool, draggable: Bool, extra: [UInt8],
                                attributes: UnsafeRawBufferPointer = UnsafeRawBufferPointer(start: nil, count: 0),
                                maxPayloadBytes: Int = .max) -> Bool {
        guard extra.count <= maxPayloadBytes else { return false }
        let before = ownAttributeBytes.count
        if !attributes.isEmpty {
            guard let payload = AttributeEncoding.appendCanonical(attributes, to: &ownAttributeBytes) else { return false }
            guard payload + extra.count <= maxPayloadBytes else {
                ownAttributeBytes.removeSubrange(before...)
                return false
            }
            precondition(attributeSource.count + ownAttributeBytes.count < 1 << 32, "a batch's attributes over 4 GiB")
        }
        let start = attributeSource.count + before
        guard appendChecked(id: id, position: position, style: style, zIndex: z, visible: visible, clickable: clickable,
                            draggable: draggable, extra: extra, attributes: start..<attributeSource.count + ownAttributeBytes.count) else {
            ownAttributeBytes.removeSubrange(before...)
            return false
        }
        return true
    }

    /// Appends a marker whose attributes are checked already and at `attributes` of the
    /// source and own bytes (empty: none); false when `MarkerLayer.validate` would reject it.
    private mutating func appendChecked(id: String, position: LatLng, style: UInt32, zIndex z: Int32,
                                        visible: Bool, clickable: Bool, draggable: Bool, extra: [UInt8],
                                        attributes: Range<Int>) -> Bool {
        var id = id
        let n = id.utf8.count
        guard n >= 1, n <= MarkerTable.maxIDBytes, position.isValid else { return false }
        if !attributes.isEmpty || !attributeRanges.isEmpty {
            if attributeRanges.isEmpty {
                attributeRanges.reserveCapacity(entries.capacity)
                attributeRanges.append(contentsOf: repeatElement(0, count: entries.count))
            }
            attributeRanges.append(UInt64(attributes.lowerBound) << 32 | UInt64(attributes.upperBound))
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
                            attributes: withAttributes { AttributeEncoding.decode($0(i)) },
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

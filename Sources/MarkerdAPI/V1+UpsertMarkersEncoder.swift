extension V1.UpsertMarkersRequest {
    /// The request's protobuf bytes written directly from the Swift values, without protobuf-c
    /// (clients encode millions of markers on bulk loads; this is several times cheaper):
    /// byte for byte what `serializedBytes()` gives. Handles plain requests (no marker with an
    /// `animation`, no string containing a NUL byte, which protobuf-c would cut; attributes in
    /// ascending key order, as protobuf-c writes them) and returns nil for anything else: then
    /// use `serializedBytes()`.
    public func serializedPlainBytes() -> [UInt8]? {
        Self.serializedPlainBytes(layerID: layerID, markers: markers[...])
    }

    /// `serializedPlainBytes()` of a request of `layerID` and `markers`, without building that
    /// request: the markers are read in place, not copied into one (`BulkLoader` sends slices of
    /// its caller's array). Nil for what `serializedPlainBytes()` does not handle.
    public static func serializedPlainBytes(layerID: String, markers: ArraySlice<V1.Marker>) -> [UInt8]? {
        guard !PlainWriter.hasNUL(layerID) else { return nil }
        return markers.withUnsafeBufferPointer { ms -> [UInt8]? in
            // Each marker's size is measured once: it is the length written before the marker.
            // Its attributes are encoded (sorted) once while measuring, then copied as they are.
            var sizes = [Int](repeating: 0, count: ms.count)
            var attributes = SortedAttributes(markers: ms.count)
            var size = PlainWriter.stringField(layerID)
            for i in ms.indices {
                guard let n = plainSize(ms[i], &attributes) else { return nil }
                sizes[i] = n
                size += PlainWriter.lengthDelimited(n)
            }
            return [UInt8](unsafeUninitializedCapacity: size) { buffer, count in
                var w = PlainWriter(buffer.baseAddress!)
                w.string(1, layerID)
                attributes.bytes.withUnsafeBufferPointer { encoded in
                    for i in ms.indices {
                        w.key(2, 2)
                        w.varint(UInt64(sizes[i]))
                        write(ms[i], UnsafeBufferPointer(rebasing: encoded[attributes.range(i)]), &w)
                    }
                }
                count = w.written(from: buffer.baseAddress!)
                precondition(count == size, "plain encoder wrote \(count) bytes, expected \(size)")
            }
        }
    }

    /// A plain marker's encoded size (without its key and length), or nil when it is not plain
    /// (an `animation` or a `label`) or a string holds a NUL byte. Appends the marker's
    /// attributes, encoded, to `attributes`.
    private static func plainSize(_ m: V1.Marker, _ attributes: inout SortedAttributes) -> Int? {
        guard m.animation == nil, m.label == nil, !PlainWriter.hasNUL(m.id) else { return nil }
        var n = PlainWriter.stringField(m.id)
        if let p = m.position { n += PlainWriter.lengthDelimited(latLngSize(p)) }
        switch m.icon {
        case .pin(let pin)?:
            if let label = pin.label, PlainWriter.hasNUL(label) { return nil }
            n += PlainWriter.lengthDelimited(pinSize(pin))
        case .iconID(let id)?:
            guard !PlainWriter.hasNUL(id) else { return nil }
            n += PlainWriter.lengthDelimited(id.utf8.count)
        case nil:
            break
        }
        if let a = m.anchor { n += PlainWriter.lengthDelimited((a.x != 0 ? 5 : 0) + (a.y != 0 ? 5 : 0)) }
        if m.zIndex != 0 { n += 1 + PlainWriter.varintSize(UInt64(bitPattern: Int64(m.zIndex))) }
        if m.clickable != nil { n += 2 }
        if m.draggable != nil { n += 2 }
        if m.visible != nil { n += 2 }
        guard let a = attributes.append(m.attributes) else { return nil }
        n += a
        if !m.extra.isEmpty { n += PlainWriter.lengthDelimited(m.extra.count) }
        return n
    }

    private static func pinSize(_ pin: V1.DefaultPin) -> Int {
        var s = 0
        if let v = pin.fillColor { s += 1 + PlainWriter.varintSize(UInt64(v)) }
        if let v = pin.strokeColor { s += 1 + PlainWriter.varintSize(UInt64(v)) }
        if pin.strokeWidth != nil { s += 5 }
        if pin.scale != nil { s += 5 }
        if let l = pin.label { s += PlainWriter.lengthDelimited(l.utf8.count) }
        if let v = pin.labelColor { s += 1 + PlainWriter.varintSize(UInt64(v)) }
        if pin.labelSize != nil { s += 5 }
        return s
    }

    private static func latLngSize(_ p: V1.LatLng) -> Int { (p.latitude != 0 ? 9 : 0) + (p.longitude != 0 ? 9 : 0) }

    /// Writes a plain marker's fields (as `plainSize` measured them), in field-number order as
    /// protobuf-c does.
    private static func write(_ m: V1.Marker, _ attributes: UnsafeBufferPointer<UInt8>, _ w: inout PlainWriter) {
        w.string(1, m.id)
        if let p = m.position {
            w.key(2, 2)
            w.varint(UInt64(latLngSize(p)))
            if p.latitude != 0 { w.key(1, 1); w.fixed64(p.latitude.bitPattern) }
            if p.longitude != 0 { w.key(2, 1); w.fixed64(p.longitude.bitPattern) }
        }
        switch m.icon {
        case .pin(let pin)?:
            w.key(3, 2)
            w.varint(UInt64(pinSize(pin)))
            if let v = pin.fillColor { w.key(1, 0); w.varint(UInt64(v)) }
            if let v = pin.strokeColor { w.key(2, 0); w.varint(UInt64(v)) }
            if let v = pin.strokeWidth { w.key(3, 5); w.fixed32(v.bitPattern) }
            if let v = pin.scale { w.key(4, 5); w.fixed32(v.bitPattern) }
            if let l = pin.label { w.presentString(5, l) }
            if let v = pin.labelColor { w.key(6, 0); w.varint(UInt64(v)) }
            if let v = pin.labelSize { w.key(7, 5); w.fixed32(v.bitPattern) }
        case .iconID(let id)?:
            w.presentString(4, id)
        case nil:
            break
        }
        if let a = m.anchor {
            w.key(5, 2)
            w.varint(UInt64((a.x != 0 ? 5 : 0) + (a.y != 0 ? 5 : 0)))
            if a.x != 0 { w.key(1, 5); w.fixed32(a.x.bitPattern) }
            if a.y != 0 { w.key(2, 5); w.fixed32(a.y.bitPattern) }
        }
        if m.zIndex != 0 { w.key(6, 0); w.varint(UInt64(bitPattern: Int64(m.zIndex))) }
        if let v = m.clickable { w.key(7, 0); w.byte(v ? 1 : 0) }
        if let v = m.draggable { w.key(8, 0); w.byte(v ? 1 : 0) }
        if let v = m.visible { w.key(10, 0); w.byte(v ? 1 : 0) }
        w.bytes(attributes)
        if !m.extra.isEmpty {
            w.key(12, 2)
            w.varint(UInt64(m.extra.count))
            w.bytes(m.extra)
        }
    }
}

/// Writes protobuf wire bytes at a cursor (`V1.UpsertMarkersRequest.serializedPlainBytes`); the
/// caller sized the buffer exactly.
private struct PlainWriter {
    var at: UnsafeMutablePointer<UInt8>

    init(_ start: UnsafeMutablePointer<UInt8>) { at = start }

    func written(from start: UnsafeMutablePointer<UInt8>) -> Int { at - start }

    /// Whether `s` holds a NUL byte (protobuf-c cuts strings there). Reads the UTF-8 in place
    /// (a generic search of `utf8` walked small strings byte by byte through their view).
    @inline(__always) static func hasNUL(_ s: String) -> Bool {
        s.utf8.withContiguousStorageIfAvailable { $0.contains(0) } ?? s.utf8.contains(0)
    }

    static func varintSize(_ v: UInt64) -> Int { v == 0 ? 1 : (64 - v.leadingZeroBitCount + 6) / 7 }

    /// Key (fields 1...15: one byte) + length + `n` bytes.
    static func lengthDelimited(_ n: Int) -> Int { 1 + varintSize(UInt64(n)) + n }

    /// A plain string field: nothing when empty.
    static func stringField(_ s: String) -> Int { s.isEmpty ? 0 : lengthDelimited(s.utf8.count) }

    @inline(__always) mutating func byte(_ b: UInt8) { at.pointee = b; at += 1 }

    @inline(__always) mutating func key(_ field: UInt8, _ wireType: UInt8) { byte(field << 3 | wireType) }

    @inline(__always) mutating func varint(_ value: UInt64) {
        var v = value
        while v >= 0x80 { byte(UInt8(truncatingIfNeeded: v) | 0x80); v >>= 7 }
        byte(UInt8(v))
    }

    mutating func fixed32(_ v: UInt32) {
        UnsafeMutableRawPointer(at).storeBytes(of: v.littleEndian, as: UInt32.self)
        at += 4
    }

    mutating func fixed64(_ v: UInt64) {
        UnsafeMutableRawPointer(at).storeBytes(of: v.littleEndian, as: UInt64.self)
        at += 8
    }

    mutating func bytes(_ b: [UInt8]) {
        b.withUnsafeBufferPointer { bytes($0) }
    }

    mutating func bytes(_ b: UnsafeBufferPointer<UInt8>) {
        if let base = b.baseAddress { at.update(from: base, count: b.count) }
        at += b.count
    }

    /// A string field that is encoded even when empty (optional or oneof strings).
    mutating func presentString(_ field: UInt8, _ s: String) {
        key(field, 2)
        var s = s
        s.withUTF8 { u in
            varint(UInt64(u.count))
            if let base = u.baseAddress { at.update(from: base, count: u.count) }
            at += u.count
        }
    }

    /// A plain string field: nothing when empty.
    mutating func string(_ field: UInt8, _ s: String) {
        if !s.isEmpty { presentString(field, s) }
    }
}

/// The attributes of a batch's markers as protobuf-c writes them (`Marker.attributes`, field
/// 11: one entry per key, `0x5A len 0x0A klen key 0x12 vlen value`, keys in ascending byte
/// order), back to back, marker after marker. Each marker's entries are written in the
/// dictionary's order and then, when that is not sorted already, reordered by their key bytes:
/// no allocation per marker, no `String` comparisons.
private struct SortedAttributes {
    private(set) var bytes: [UInt8] = []
    /// End of each marker's entries in `bytes` (from the previous marker's end).
    private var ends: [Int] = []
    /// The current marker's entries: where each starts in `bytes`, and where its key is.
    private var entries: [(start: Int, key: Range<Int>)] = []
    /// Scratch of `reorder`, kept for the next marker.
    private var order: [Int] = []
    private var reordered: [UInt8] = []

    init(markers: Int) { ends.reserveCapacity(markers) }

    /// Where marker `i`'s entries are in `bytes`.
    func range(_ i: Int) -> Range<Int> { (i == 0 ? 0 : ends[i - 1])..<ends[i] }

    /// Appends the entries of `attributes` as the next marker's; their size in bytes, or nil
    /// (then the batch is not encoded) when a key or value holds a NUL byte.
    mutating func append(_ attributes: [String: String]) -> Int? {
        let start = bytes.count
        entries.removeAll(keepingCapacity: true)
        var sorted = true
        for (k, v) in attributes {
            var k = k, v = v
            guard let entry = k.withUTF8({ kb in v.withUTF8 { vb in appendEntry(kb, vb) } }) else { return nil }
            if sorted, let last = entries.last { sorted = less(last.key, entry.key) }
            entries.append(entry)
        }
        if !sorted { reorder(from: start) }
        ends.append(bytes.count)
        return bytes.count - start
    }

    /// Writes one entry; where it starts and where its key is, or nil when a string holds a NUL.
    private mutating func appendEntry(_ key: UnsafeBufferPointer<UInt8>, _ value: UnsafeBufferPointer<UInt8>) -> (start: Int, key: Range<Int>)? {
        guard !key.contains(0), !value.contains(0) else { return nil }
        let start = bytes.count
        bytes.append(11 << 3 | 2)
        appendVarint(2 + PlainWriter.varintSize(UInt64(key.count)) + key.count + PlainWriter.varintSize(UInt64(value.count)) + value.count)
        bytes.append(1 << 3 | 2)
        appendVarint(key.count)
        let keyStart = bytes.count
        bytes.append(contentsOf: key)
        bytes.append(2 << 3 | 2)
        appendVarint(value.count)
        bytes.append(contentsOf: value)
        return (start, keyStart..<keyStart + key.count)
    }

    private mutating func appendVarint(_ v: Int) {
        var v = v
        while v >= 0x80 { bytes.append(UInt8(truncatingIfNeeded: v) | 0x80); v >>= 7 }
        bytes.append(UInt8(v))
    }

    /// Whether key `a`'s bytes come before key `b`'s (a prefix first).
    private func less(_ a: Range<Int>, _ b: Range<Int>) -> Bool {
        bytes.withUnsafeBufferPointer { p in
            for (i, j) in zip(a, b) where p[i] != p[j] { return p[i] < p[j] }
            return a.count < b.count
        }
    }

    /// Puts the current marker's entries (from `start` on) in key order; its keys are distinct
    /// (a dictionary's).
    private mutating func reorder(from start: Int) {
        let end = bytes.count
        var order = self.order   // taken out of `self` while `less` reads it; kept for its capacity
        self.order = []
        order.removeAll(keepingCapacity: true)
        order.append(contentsOf: entries.indices)
        order.sort { less(entries[$0].key, entries[$1].key) }
        reordered.removeAll(keepingCapacity: true)
        for i in order {
            reordered.append(contentsOf: bytes[entries[i].start..<(i + 1 < entries.count ? entries[i + 1].start : end)])
        }
        bytes.replaceSubrange(start..<end, with: reordered)
        self.order = order
    }
}

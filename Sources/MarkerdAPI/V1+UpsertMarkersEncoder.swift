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
        guard let plain = PlainEncoding(layerID: layerID, markers: markers, scratch: EncodingScratch()) else { return nil }
        return [UInt8](unsafeUninitializedCapacity: plain.size) { buffer, count in
            plain.write(into: UnsafeMutableRawBufferPointer(buffer))
            count = plain.size
        }
    }

    /// A plain request of `layerID` and `markers` measured, to be written where the caller
    /// wants it (`MarkerdClient` writes it straight into the transport's message): `size`
    /// bytes, byte for byte `serializedPlainBytes(layerID:markers:)`. Each marker's attributes
    /// are encoded once, while measuring, into `scratch` (one walk of each dictionary), and
    /// copied from there by `write(into:)`.
    public struct PlainEncoding {
        /// Bytes `write(into:)` writes.
        public let size: Int
        private let layerID: String
        private let markers: ArraySlice<V1.Marker>
        /// Each marker's size: the length written before it.
        private let sizes: [Int]
        /// The markers' attribute entries, sorted, back to back; marker `i`'s end at
        /// `attributeEnds[i]` (empty while no marker has attributes).
        private let scratch: EncodingScratch
        private let attributeEnds: [Int]
        /// The markers' attributes as columns (row `i` is `markers[i]`'s), or nil.
        private let columns: AttributeColumns?

        /// Measures the request, encoding the markers' attributes into `scratch` (which the
        /// encoding uses until it is written: one encoding at a time per scratch); nil for what
        /// `serializedPlainBytes()` does not handle.
        ///
        /// With `columns`, row `i` of the columns holds the attributes of `markers[i]` (the
        /// slice's own indices: a batch of the array the columns were read with), written
        /// straight from the columns; nil also when a marker has attributes of its own, a key or
        /// value holds a NUL (then send `columns.merged(into: markers)`). The columns must have
        /// a row for each marker (at least `markers.endIndex` rows).
        public init?(layerID: String, markers: ArraySlice<V1.Marker>, columns: AttributeColumns? = nil, scratch: EncodingScratch) {
            guard !hasNUL(layerID) else { return nil }
            if let columns {
                precondition(columns.keys.isEmpty || columns.rowCount >= markers.endIndex, "attribute columns have \(columns.rowCount) rows, markers end at \(markers.endIndex)")
                if columns.hasNUL { return nil }
            }
            var size = ProtoWriter.stringField(layerID)
            var sizes = [Int](repeating: 0, count: markers.count)
            var ends: [Int] = []
            var sorter = AttributeSorter()
            // Each marker is read in place, field by field (a `V1.Marker` passed by value is
            // copied first, retaining and releasing all of its strings).
            let measure = { (cells: AttributeColumns.Cells?) in markers.withUnsafeBufferPointer { ms -> Bool in
                var used = 0
                for i in ms.indices {
                    let m = ms.baseAddress! + i
                    guard var n = plainSize(m) else { return false }
                    if let cells {
                        guard m.pointee.attributes.isEmpty else { return false }
                        n += cells.encodedSize(row: markers.startIndex + i)
                    } else if !m.pointee.attributes.isEmpty {
                        if ends.isEmpty { ends = [Int](repeating: 0, count: ms.count) }
                        guard let end = sorter.write(m.pointee.attributes, to: scratch, at: used) else { return false }
                        n += end - used
                        used = end
                    }
                    if !ends.isEmpty { ends[i] = used }
                    sizes[i] = n
                    size += ProtoWriter.lengthDelimited(n)
                }
                return true
            } }
            guard columns.map({ $0.withCells { measure($0) } }) ?? measure(nil) else { return nil }
            self.size = size
            self.layerID = layerID
            self.markers = markers
            self.sizes = sizes
            self.scratch = scratch
            self.attributeEnds = ends
            self.columns = columns
        }

        /// Writes the request into `out` (exactly `size` bytes).
        public func write(into out: UnsafeMutableRawBufferPointer) {
            precondition(out.count == size, "plain request buffer is \(out.count) bytes, expected \(size)")
            guard size > 0 else { return }
            let start = out.baseAddress!.assumingMemoryBound(to: UInt8.self)
            var w = ProtoWriter(start)
            w.string(1, layerID)
            markers.withUnsafeBufferPointer { ms in
                if let columns {
                    columns.withCells { cells in
                        for i in ms.indices {
                            w.key(2, 2)
                            w.varint(UInt64(sizes[i]))
                            V1.UpsertMarkersRequest.writeFields(ms.baseAddress! + i, &w)
                            cells.write(row: markers.startIndex + i, &w)
                            V1.UpsertMarkersRequest.writeExtra(ms.baseAddress! + i, &w)
                        }
                    }
                    return
                }
                for i in ms.indices {
                    w.key(2, 2)
                    w.varint(UInt64(sizes[i]))
                    let attributes = attributeEnds.isEmpty ? 0..<0 : (i == 0 ? 0 : attributeEnds[i - 1])..<attributeEnds[i]
                    V1.UpsertMarkersRequest.writeFields(ms.baseAddress! + i, &w)
                    w.bytes(scratch.bytes(attributes).assumingMemoryBound(to: UInt8.self))
                    V1.UpsertMarkersRequest.writeExtra(ms.baseAddress! + i, &w)
                }
            }
            let count = w.written(from: start)
            precondition(count == size, "plain encoder wrote \(count) bytes, expected \(size)")
        }
    }

    /// A plain marker's encoded size (without its key and length, and without its attributes,
    /// which `AttributeSorter` measures as it writes them), or nil when it is not plain (an
    /// `animation` or a `label`) or a string holds a NUL byte.
    fileprivate static func plainSize(_ m: UnsafePointer<V1.Marker>) -> Int? {
        guard m.pointee.animation == nil, m.pointee.label == nil, !hasNUL(m.pointee.id) else { return nil }
        var n = ProtoWriter.stringField(m.pointee.id)
        if let p = m.pointee.position { n += ProtoWriter.lengthDelimited(latLngSize(p)) }
        switch m.pointee.icon {
        case .pin(let pin)?:
            if let label = pin.label, hasNUL(label) { return nil }
            n += ProtoWriter.lengthDelimited(pinSize(pin))
        case .iconID(let id)?:
            guard !hasNUL(id) else { return nil }
            n += ProtoWriter.lengthDelimited(id.utf8.count)
        case nil:
            break
        }
        if let a = m.pointee.anchor { n += ProtoWriter.lengthDelimited((a.x != 0 ? 5 : 0) + (a.y != 0 ? 5 : 0)) }
        if m.pointee.zIndex != 0 { n += 1 + ProtoWriter.varintSize(UInt64(bitPattern: Int64(m.pointee.zIndex))) }
        if m.pointee.clickable != nil { n += 2 }
        if m.pointee.draggable != nil { n += 2 }
        if m.pointee.visible != nil { n += 2 }
        if !m.pointee.extra.isEmpty { n += ProtoWriter.lengthDelimited(m.pointee.extra.count) }
        return n
    }

    private static func pinSize(_ pin: V1.DefaultPin) -> Int {
        var s = 0
        if let v = pin.fillColor { s += 1 + ProtoWriter.varintSize(UInt64(v)) }
        if let v = pin.strokeColor { s += 1 + ProtoWriter.varintSize(UInt64(v)) }
        if pin.strokeWidth != nil { s += 5 }
        if pin.scale != nil { s += 5 }
        if let l = pin.label { s += ProtoWriter.lengthDelimited(l.utf8.count) }
        if let v = pin.labelColor { s += 1 + ProtoWriter.varintSize(UInt64(v)) }
        if pin.labelSize != nil { s += 5 }
        return s
    }

    private static func latLngSize(_ p: V1.LatLng) -> Int { (p.latitude != 0 ? 9 : 0) + (p.longitude != 0 ? 9 : 0) }

    /// Writes a plain marker's fields 1-10 (as `plainSize` measured them), in field-number order
    /// as protobuf-c does; its attributes (field 11) and then `writeExtra` follow.
    fileprivate static func writeFields(_ m: UnsafePointer<V1.Marker>, _ w: inout ProtoWriter) {
        w.string(1, m.pointee.id)
        if let p = m.pointee.position {
            w.key(2, 2)
            w.varint(UInt64(latLngSize(p)))
            if p.latitude != 0 { w.key(1, 1); w.fixed64(p.latitude.bitPattern) }
            if p.longitude != 0 { w.key(2, 1); w.fixed64(p.longitude.bitPattern) }
        }
        switch m.pointee.icon {
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
        if let a = m.pointee.anchor {
            w.key(5, 2)
            w.varint(UInt64((a.x != 0 ? 5 : 0) + (a.y != 0 ? 5 : 0)))
            if a.x != 0 { w.key(1, 5); w.fixed32(a.x.bitPattern) }
            if a.y != 0 { w.key(2, 5); w.fixed32(a.y.bitPattern) }
        }
        if m.pointee.zIndex != 0 { w.key(6, 0); w.varint(UInt64(bitPattern: Int64(m.pointee.zIndex))) }
        if let v = m.pointee.clickable { w.key(7, 0); w.byte(v ? 1 : 0) }
        if let v = m.pointee.draggable { w.key(8, 0); w.byte(v ? 1 : 0) }
        if let v = m.pointee.visible { w.key(10, 0); w.byte(v ? 1 : 0) }
    }

    /// Writes a plain marker's `extra` (field 12), after its attributes.
    @inline(__always) fileprivate static func writeExtra(_ m: UnsafePointer<V1.Marker>, _ w: inout ProtoWriter) {
        if !m.pointee.extra.isEmpty {
            w.key(12, 2)
            w.varint(UInt64(m.pointee.extra.count))
            w.bytes(m.pointee.extra)
        }
    }
}

/// Whether `s` holds a NUL byte (protobuf-c cuts strings there). Reads the UTF-8 in place (a
/// generic search of `utf8` walked small strings byte by byte through their view).
@inline(__always) private func hasNUL(_ s: String) -> Bool {
    s.utf8.withContiguousStorageIfAvailable { $0.contains(0) } ?? s.utf8.contains(0)
}

/// Bytes reused from one `V1.UpsertMarkersRequest.PlainEncoding` to the next (a client keeps
/// a few, `MarkerdClient`): a bulk load encodes each batch's attributes into memory that earlier
/// batches faulted in already, rather than into fresh pages (about 3 MB per 50,000 markers with
/// three attributes). Grows by doubling and keeps its size; used by one encoding at a time.
public final class EncodingScratch: @unchecked Sendable {
    fileprivate private(set) var base: UnsafeMutableRawPointer? = nil
    private var capacity = 0

    public init() {}

    deinit { base?.deallocate() }

    /// Room for `count` bytes from the start, keeping the bytes before `keeping`.
    @inline(__always) fileprivate func reserve(_ count: Int, keeping: Int) {
        if count > capacity { grow(count, keeping: keeping) }
    }

    private func grow(_ count: Int, keeping: Int) {
        let grown = Swift.max(count, 2 * capacity, 1 << 16)
        let fresh = UnsafeMutableRawPointer.allocate(byteCount: grown, alignment: 16)
        if let base, keeping > 0 { fresh.copyMemory(from: base, byteCount: keeping) }
        base?.deallocate()
        base = fresh
        capacity = grown
    }

    fileprivate func bytes(_ range: Range<Int>) -> UnsafeRawBufferPointer {
        range.isEmpty ? UnsafeRawBufferPointer(start: nil, count: 0) : UnsafeRawBufferPointer(start: base! + range.lowerBound, count: range.count)
    }
}

/// Writes a marker's attributes as protobuf-c does (`Marker.attributes`, field 11: one entry
/// per key, `0x5A len 0x0A klen key 0x12 vlen value`, keys in ascending byte order) into an
/// `EncodingScratch`: the entries in the dictionary's order and then, when that is not sorted
/// already, reordered in place by their key bytes (through a scratch buffer on the stack for
/// small markers). No allocation per marker, no `String` comparisons.
private struct AttributeSorter {
    /// Where an entry is, as offsets into the scratch (which may move as it grows).
    private struct Entry {
        var start: Int
        var count: Int
        var key: Int
        var keyCount: Int
    }

    /// The marker's entries as written (the first `written`; the array is reused).
    private var entries: [Entry] = []
    private var written = 0

    /// Writes the entries of `attributes` into `scratch` from `start`; the end of the last, or
    /// nil when a key or value holds a NUL (protobuf-c would cut it).
    mutating func write(_ attributes: [String: String], to scratch: EncodingScratch, at start: Int) -> Int? {
        written = 0
        var end = start
        var sorted = true
        for (k, v) in attributes {
            var k = k, v = v
            let entry = k.withUTF8 { kb in
                v.withUTF8 { vb -> Entry in
                    let inner = ProtoWriter.lengthDelimited(kb.count) + ProtoWriter.lengthDelimited(vb.count)
                    scratch.reserve(end + ProtoWriter.lengthDelimited(inner), keeping: end)
                    let at = scratch.base!.assumingMemoryBound(to: UInt8.self) + end
                    var w = ProtoWriter(at)
                    w.key(11, 2)
                    w.varint(UInt64(inner))
                    w.key(1, 2)
                    w.varint(UInt64(kb.count))
                    let key = end + w.written(from: at)
                    w.bytes(kb)
                    w.key(2, 2)
                    w.varint(UInt64(vb.count))
                    w.bytes(vb)
                    return Entry(start: end, count: w.written(from: at), key: key, keyCount: kb.count)
                }
            }
            end += entry.count
            if sorted && written > 0 { sorted = Self.less(entries[written - 1], entry, scratch.base!) }
            if written < entries.count { entries[written] = entry } else { entries.append(entry) }
            written += 1
        }
        // NUL bytes, which protobuf-c would cut strings at, looked for in all of the entries
        // at once, 8 bytes at a time (a scan of each string was a quarter of this function);
        // a zero byte there may also be an empty value's length: then each string is looked at.
        if Self.hasZeroByte(UnsafeRawBufferPointer(start: scratch.base! + start, count: end - start)),
           attributes.contains(where: { hasNUL($0.key) || hasNUL($0.value) }) {
            return nil
        }
        if !sorted { reorder(scratch.base!, start, end - start) }
        return end
    }

    /// Whether `b` holds a zero byte.
    @inline(__always) private static func hasZeroByte(_ b: UnsafeRawBufferPointer) -> Bool {
        let n = b.count
        var i = 0
        while i + 8 <= n {
            let w = b.loadUnaligned(fromByteOffset: i, as: UInt64.self)
            if (w &- 0x0101_0101_0101_0101) & ~w & 0x8080_8080_8080_8080 != 0 { return true }
            i += 8
        }
        while i < n {
            if b[i] == 0 { return true }
            i += 1
        }
        return false
    }

    /// Whether `a`'s key comes before `b`'s (byte order, a prefix first).
    @inline(__always) private static func less(_ a: Entry, _ b: Entry, _ base: UnsafeMutableRawPointer) -> Bool {
        let ak = base.assumingMemoryBound(to: UInt8.self) + a.key, bk = base.assumingMemoryBound(to: UInt8.self) + b.key
        for i in 0..<Swift.min(a.keyCount, b.keyCount) where ak[i] != bk[i] { return ak[i] < bk[i] }
        return a.keyCount < b.keyCount
    }

    /// Puts the `count` bytes of entries written from `start` in key order (their keys are
    /// distinct: a dictionary's). Insertion sort for the usual handful, else the library's.
    private mutating func reorder(_ base: UnsafeMutableRawPointer, _ start: Int, _ count: Int) {
        let n = written
        entries.withUnsafeMutableBufferPointer { all in
            var e = UnsafeMutableBufferPointer(rebasing: all[0..<n])
            if n <= 16 {
                for i in 1..<n {
                    let x = e[i]
                    var j = i
                    while j > 0 && Self.less(x, e[j - 1], base) { e[j] = e[j - 1]; j -= 1 }
                    e[j] = x
                }
            } else {
                e.sort { Self.less($0, $1, base) }
            }
            withUnsafeTemporaryAllocation(of: UInt8.self, capacity: count) { scratch in
                var at = scratch.baseAddress!
                for x in e {
                    at.update(from: base.assumingMemoryBound(to: UInt8.self) + x.start, count: x.count)
                    at += x.count
                }
                (base + start).copyMemory(from: scratch.baseAddress!, byteCount: count)
            }
        }
    }
}

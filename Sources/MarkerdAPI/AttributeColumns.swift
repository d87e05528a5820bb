/// Attributes of many markers as columns: one key set, each row one marker's values (a cell may
/// be absent: that marker has no such attribute). This is how files bring attributes (a CSV's
/// columns, a GeoJSON's properties) and how a bulk load encodes them cheaply: the keys are
/// ordered once, the values are UTF-8 back to back, and no `[String: String]` is built or
/// walked per marker (`V1.UpsertMarkersRequest.PlainEncoding`, `BulkLoader`).
///
/// Cells are appended row by row, in `keys` order; row `i` belongs to marker `i` of the array
/// loaded with it.
public struct AttributeColumns: Sendable {
    /// The keys, in the order cells are appended (distinct).
    public let keys: [String]
    /// The values' UTF-8, cell after cell.
    private(set) var utf8: [UInt8] = []
    /// Each cell's end in `utf8` (its start is the previous cell's end).
    private(set) var ends: [Int] = []
    /// Which cells are absent (empty while none is).
    private(set) var absent: [Bool] = []
    /// `keys`' indices in ascending byte order of the keys (as protobuf-c writes map entries).
    let order: [Int]
    /// The keys' entry heads, `0x0A klen key 0x12` (the value's length and bytes follow), in
    /// `order`, back to back; head `j` (of key `order[j]`) ends at `headEnds[j]`.
    let heads: [UInt8]
    let headEnds: [Int]
    /// Whether a key or value holds a NUL byte (protobuf-c would cut it there).
    private(set) var hasNUL: Bool

    /// Columns named `keys` (distinct; any order), no rows yet.
    public init(keys: [String]) {
        precondition(Set(keys).count == keys.count, "attribute column keys must be distinct: \(keys)")
        self.keys = keys
        order = keys.indices.sorted { keys[$0].utf8.lexicographicallyPrecedes(keys[$1].utf8) }
        var heads: [UInt8] = [], headEnds: [Int] = []
        for c in order {
            heads += [0x0A] + varintBytes(keys[c].utf8.count) + Array(keys[c].utf8) + [0x12]
            headEnds.append(heads.count)
        }
        self.heads = heads
        self.headEnds = headEnds
        hasNUL = keys.contains { $0.utf8.contains(0) }
    }

    /// Complete rows appended so far (0 without keys: then every row is empty).
    public var rowCount: Int { keys.isEmpty ? 0 : ends.count / keys.count }

    /// Appends the next cell (columns in `keys` order, row after row); nil: absent.
    public mutating func append(_ value: String?) {
        if let value { append(utf8: value.utf8) } else { appendAbsent() }
    }

    /// Appends the next cell's UTF-8 (not checked: invalid UTF-8 is refused by markerd).
    public mutating func append(utf8 value: some Collection<UInt8>) {
        if !hasNUL && value.contains(0) { hasNUL = true }
        utf8.append(contentsOf: value)
        ends.append(utf8.count)
        if !absent.isEmpty { absent.append(false) }
    }

    /// Appends an absent cell (that row's marker has no such attribute).
    public mutating func appendAbsent() {
        if absent.isEmpty { absent = [Bool](repeating: false, count: ends.count) }
        ends.append(utf8.count)
        absent.append(true)
    }

    /// Row `row`'s attributes as a dictionary (what the markers would carry themselves).
    public func attributes(_ row: Int) -> [String: String] {
        var d: [String: String] = [:]
        for c in keys.indices {
            let cell = row * keys.count + c
            if !absent.isEmpty && absent[cell] { continue }
            d[keys[c]] = String(decoding: utf8[(cell == 0 ? 0 : ends[cell - 1])..<ends[cell]], as: UTF8.self)
        }
        return d
    }

    /// The cells in place, for `Cells.write`.
    func withCells<R>(_ body: (Cells) -> R) -> R {
        utf8.withUnsafeBufferPointer { utf8 in
            ends.withUnsafeBufferPointer { ends in
                absent.withUnsafeBufferPointer { absent in
                    heads.withUnsafeBufferPointer { heads in
                        order.withUnsafeBufferPointer { order in
                            headEnds.withUnsafeBufferPointer { headEnds in
                                body(Cells(utf8: utf8, ends: ends, absent: absent, heads: heads, headEnds: headEnds, order: order))
                            }
                        }
                    }
                }
            }
        }
    }

    /// The columns' storage in place (valid inside `withCells`).
    struct Cells {
        let utf8: UnsafeBufferPointer<UInt8>
        let ends: UnsafeBufferPointer<Int>
        let absent: UnsafeBufferPointer<Bool>
        let heads: UnsafeBufferPointer<UInt8>
        let headEnds: UnsafeBufferPointer<Int>
        let order: UnsafeBufferPointer<Int>

        /// Row `row`'s attribute entries' encoded size (`Marker.attributes`, field 11).
        @inline(__always) func encodedSize(row: Int) -> Int {
            let first = row * order.count
            var n = 0
            for j in 0..<order.count {
                let cell = first + order[j]
                if !absent.isEmpty && absent[cell] { continue }
                let v = ends[cell] - (cell == 0 ? 0 : ends[cell - 1])
                n += ProtoWriter.lengthDelimited(headEnds[j] - (j == 0 ? 0 : headEnds[j - 1]) + ProtoWriter.varintSize(UInt64(v)) + v)
            }
            return n
        }

        /// Writes row `row`'s entries in ascending key order, as protobuf-c does:
        /// `0x5A len 0x0A klen key 0x12 vlen value` each.
        @inline(__always) func write(row: Int, _ w: inout ProtoWriter) {
            let first = row * order.count
            for j in 0..<order.count {
                let cell = first + order[j]
                if !absent.isEmpty && absent[cell] { continue }
                let start = cell == 0 ? 0 : ends[cell - 1], v = ends[cell] - start
                let headStart = j == 0 ? 0 : headEnds[j - 1]
                let head = UnsafeBufferPointer(rebasing: heads[headStart..<headEnds[j]])
                w.key(11, 2)
                w.varint(UInt64(head.count + ProtoWriter.varintSize(UInt64(v)) + v))
                w.bytes(head)
                w.varint(UInt64(v))
                w.bytes(UnsafeBufferPointer(rebasing: utf8[start..<start + v]))
            }
        }
    }

    /// `markers` with each row's attributes set (over any of their own of the same key).
    public func merged(into markers: ArraySlice<V1.Marker>) -> [V1.Marker] {
        markers.indices.map { i in
            var m = markers[i]
            for (k, v) in attributes(i) { m.attributes[k] = v }
            return m
        }
    }
}

private func varintBytes(_ n: Int) -> [UInt8] {
    var v = UInt64(n), out: [UInt8] = []
    while v >= 0x80 { out.append(UInt8(v & 0x7F) | 0x80); v >>= 7 }
    out.append(UInt8(v))
    return out
}

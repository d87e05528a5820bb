/// Marker attributes in their stored form: the protobuf encoding of `Marker.attributes` (field
/// 11, a `map<string, string>`) in one canonical order, so that the same attributes always give
/// the same bytes (snapshots, replies and tiles depend on content only) and replies can copy
/// them as they are.
///
/// Canonical form: one map entry per key, keys in ascending byte order, each entry
/// `0x5A len 0x0A klen key 0x12 vlen value` (field 11's tag, the entry's length, then key and
/// value, both always written, lengths as varints): byte for byte what the API's protobuf-c
/// encoder writes for a `Marker`'s attributes. Keys are 1 or more bytes, keys and values valid
/// UTF-8 without NUL bytes (protobuf-c's strings end at a NUL).
public enum AttributeEncoding {
    /// Longest canonical encoding a marker's attributes may have (1 MiB - 1; the service's
    /// payload limit keeps them far below).
    public static let maxEncodedBytes = 1 << 20 - 1

    static let entryTag: UInt8 = 11 << 3 | 2
    static let keyTag: UInt8 = 1 << 3 | 2
    static let valueTag: UInt8 = 2 << 3 | 2

    /// The canonical encoding of `attributes` (empty for none). Costs a sort of the keys.
    public static func encode(_ attributes: [String: String]) -> [UInt8] {
        var out: [UInt8] = []
        for key in attributes.keys.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
            var k = key, v = attributes[key]!
            k.withUTF8 { kb in v.withUTF8 { vb in appendEntry(UnsafeRawBufferPointer(kb), UnsafeRawBufferPointer(vb), to: &out) } }
        }
        return out
    }

    /// Validates `raw` (field 11 entries as they come on the wire: tag, length, entry, one
    /// after the other, in any order) in one pass without allocating: the attributes' payload
    /// (the bytes of their keys and values, as counted against the service's size limit) and
    /// whether `raw` is canonical already (then it is stored as it is). Nil for what
    /// `appendCanonical` declines (see there).
    public static func check(_ raw: UnsafeRawBufferPointer) -> (payload: Int, canonical: Bool)? {
        if let payload = shortCanonicalPayload(raw) { return (payload, true) }
        return checkEntries(raw)
    }

    /// The payload of `raw` when it is what clients write for short attributes: canonical with
    /// one-byte lengths throughout (every entry `0x5A n 0x0A kn key 0x12 vn value`, n < 128,
    /// kn > 0, vn > 0, keys ascending) and valid text; nil for anything else, which need not be
    /// invalid (`checkEntries` decides). Its tags and lengths are ASCII bytes other than NUL,
    /// which no UTF-8 sequence spans, so the whole of `raw` is valid text without NUL exactly
    /// when every key and value is: one validation of `raw` instead of one per string.
    @inline(__always) static func shortCanonicalPayload(_ raw: UnsafeRawBufferPointer) -> Int? {
        guard raw.count <= maxEncodedBytes else { return nil }
        let count = raw.count
        var at = 0, payload = 0
        var previousKey = 0, previousCount = 0  // the previous entry's key: start, length (0: none)
        while at < count {
            guard count - at >= 6, raw[at] == entryTag, raw[at + 2] == keyTag else { return nil }
            let n = Int(raw[at + 1]), kn = Int(raw[at + 3])
            // 4 + kn < n < 128: both lengths one byte, the value not empty.
            guard n < 0x80, kn > 0, 4 + kn < n, n <= count - at - 2 else { return nil }
            let v = at + 4 + kn
            guard raw[v] == valueTag, Int(raw[v + 1]) == n - 4 - kn else { return nil }
            if previousCount > 0 {
                // The previous key sorts before this one: the first differing byte is smaller,
                // or it is a proper prefix.
                let common = Swift.min(previousCount, kn)
                var j = 0
                while j < common && raw[previousKey + j] == raw[at + 4 + j] { j += 1 }
                guard j < common ? raw[previousKey + j] < raw[at + 4 + j] : previousCount < kn else { return nil }
            }
            previousKey = at + 4
            previousCount = kn
            payload += n - 4
            at += 2 + n
        }
        return isPlainASCII(raw) || isText(raw) ? payload : nil
    }

    /// Whether every byte of `b` is ASCII other than NUL: 8 bytes at a time, the last ones as a
    /// word that overlaps the one before (no byte loop for the tail), one test at the end.
    @inline(__always) static func isPlainASCII(_ b: UnsafeRawBufferPointer) -> Bool {
        let n = b.count
        guard n >= 8 else {
            for i in 0..<n where b[i] == 0 || b[i] >= 0x80 { return false }
            return true
        }
        var seen: UInt64 = 0
        var i = 0
        while i + 8 <= n {
            seen |= notPlainFlags(b.loadUnaligned(fromByteOffset: i, as: UInt64.self))
            i += 8
        }
        seen |= notPlainFlags(b.loadUnaligned(fromByteOffset: n - 8, as: UInt64.self))
        return seen == 0
    }

    /// The high bit of each byte of `w` that is >= 0x80, or (when there is none) of a zero byte;
    /// 0 exactly when all 8 bytes are ASCII other than NUL.
    @inline(__always) static func notPlainFlags(_ w: UInt64) -> UInt64 {
        (w | ((w &- 0x0101_0101_0101_0101) & ~w)) & 0x8080_8080_8080_8080
    }

    /// `check` entry by entry: any layout, any order.
    static func checkEntries(_ raw: UnsafeRawBufferPointer) -> (payload: Int, canonical: Bool)? {
        var canonical = true
        var payload = 0
        var previousKey = 0..<0
        var at = 0
        while at < raw.count {
            let start = at
            guard let (key, value) = entry(raw, &at) else { return nil }
            payload += key.count + value.count
            // Canonical: exactly what `appendEntry` writes (key first, both present, shortest
            // lengths: nothing else has this size), after the previous key.
            canonical = canonical && at - start == entrySize(key.count, value.count) && key.lowerBound < value.lowerBound
                && (previousKey.isEmpty || compare(raw, previousKey, key) < 0)
            previousKey = key
        }
        if canonical && raw.count > maxEncodedBytes { return nil }
        return (payload, canonical)
    }

    /// Appends the canonical form of `raw` (field 11 entries as they come on the wire: tag,
    /// length, entry, one after the other, in any order, a repeated key's last value winning
    /// as in protobuf) to `out`, and returns the attributes' payload: the bytes of their keys
    /// and values (as counted against the service's size limit). Returns nil, leaving `out`
    /// unchanged, for what this does not take: an entry with fields other than key and value
    /// (once each), a missing or empty key, a string that is not UTF-8 or holds a NUL, or an
    /// encoding over `maxEncodedBytes`; then decode the marker with protobuf-c, which gives the
    /// attributes or the error. Already canonical bytes (what markerd and its clients write)
    /// are validated and copied in one pass; others are sorted (O(k log k) for k entries).
    public static func appendCanonical(_ raw: UnsafeRawBufferPointer, to out: inout [UInt8]) -> Int? {
        guard let checked = check(raw) else { return nil }
        if checked.canonical {
            out.append(contentsOf: raw.assumingMemoryBound(to: UInt8.self))
            return checked.payload
        }
        var at = 0
        // Sort by key (stable: a repeated key's entries keep their order), keep each key's last.
        var entries: [(key: Range<Int>, value: Range<Int>)] = []
        while at < raw.count, let e = entry(raw, &at) { entries.append(e) }
        let order = entries.indices.sorted { a, b in
            let c = compare(raw, entries[a].key, entries[b].key)
            return c != 0 ? c < 0 : a < b
        }
        var fresh: [UInt8] = []
        var payload = 0
        for (j, i) in order.enumerated() {
            if j + 1 < order.count && compare(raw, entries[i].key, entries[order[j + 1]].key) == 0 { continue }
            payload += entries[i].key.count + entries[i].value.count
            appendEntry(UnsafeRawBufferPointer(rebasing: raw[entries[i].key]), UnsafeRawBufferPointer(rebasing: raw[entries[i].value]), to: &fresh)
        }
        guard fresh.count <= maxEncodedBytes else { return nil }
        out.append(contentsOf: fresh)
        return payload
    }

    /// Decodes canonical bytes (from `encode` or `appendCanonical`) into a dictionary.
    public static func decode(_ bytes: UnsafeRawBufferPointer) -> [String: String] {
        var map: [String: String] = [:]
        forEach(bytes) { k, v in
            map[String(decoding: k, as: UTF8.self)] = String(decoding: v, as: UTF8.self)
            return true
        }
        return map
    }

    /// The value of `key` in canonical bytes, or nil; reads the entries up to where `key` would
    /// be (keys are sorted) and decodes nothing else.
    public static func value(_ key: String, in bytes: UnsafeRawBufferPointer) -> String? {
        var key = key
        return key.withUTF8 { wanted -> String? in
            let w = UnsafeRawBufferPointer(wanted)
            var found: String? = nil
            forEach(bytes) { k, v in
                let c = compareBytes(k, w)
                if c == 0 { found = String(decoding: v, as: UTF8.self) }
                return c < 0
            }
            return found
        }
    }

    /// Calls `body` with each entry's key and value bytes of canonical bytes, in key order,
    /// until it returns false.
    static func forEach(_ bytes: UnsafeRawBufferPointer, _ body: (UnsafeRawBufferPointer, UnsafeRawBufferPointer) -> Bool) {
        var at = 0
        // Canonical: entry tag, entry length, key tag, key length, key, value tag, value length, value.
        while at < bytes.count, varint(bytes, &at, from: at + 1) != nil, let kn = varint(bytes, &at, from: at + 1) {
            let key = UnsafeRawBufferPointer(rebasing: bytes[at..<at + kn])
            at += kn
            guard let vn = varint(bytes, &at, from: at + 1) else { return }
            let value = UnsafeRawBufferPointer(rebasing: bytes[at..<at + vn])
            at += vn
            if !body(key, value) { return }
        }
    }

    // MARK: Wire helpers

    /// Appends one canonical entry.
    static func appendEntry(_ key: UnsafeRawBufferPointer, _ value: UnsafeRawBufferPointer, to out: inout [UInt8]) {
        out.append(entryTag)
        appendVarint(2 + varintSize(key.count) + key.count + varintSize(value.count) + value.count, to: &out)
        out.append(keyTag)
        appendVarint(key.count, to: &out)
        out.append(contentsOf: key)
        out.append(valueTag)
        appendVarint(value.count, to: &out)
        out.append(contentsOf: value)
    }

    /// The key and value ranges of the field 11 entry (tag, length, entry) at `at` of `raw`,
    /// moving `at` past it; nil when it is not one, or not one key (1 or more bytes) and at most
    /// one value, valid UTF-8 without NUL (absent value: empty).
    @inline(__always)
    private static func entry(_ raw: UnsafeRawBufferPointer, _ at: inout Int) -> (key: Range<Int>, value: Range<Int>)? {
        // The canonical layout with one-byte lengths (what clients send for short keys and
        // values) read at once: `0x5A n 0x0A kn key 0x12 vn value`, n = 4 + kn + vn < 128.
        let s = at
        if raw.count - s >= 6, raw[s] == entryTag, raw[s + 2] == keyTag, raw[s + 1] < 0x80, raw[s + 3] < 0x80 {
            let n = Int(raw[s + 1]), kn = Int(raw[s + 3])
            let v = s + 4 + kn
            if 4 + kn <= n, n <= raw.count - s - 2, raw[v] == valueTag, Int(raw[v + 1]) == n - 4 - kn {
                let key = s + 4..<v, value = v + 2..<s + 2 + n
                guard kn > 0, isText(UnsafeRawBufferPointer(rebasing: raw[key])),
                      isText(UnsafeRawBufferPointer(rebasing: raw[value])) else { return nil }
                at = s + 2 + n
                return (key, value)
            }
        }
        guard raw[at] == entryTag, let n = varint(raw, &at, from: at + 1), n <= raw.count - at else { return nil }
        let range = at..<at + n
        var key: Range<Int>? = nil, value: Range<Int>? = nil
        defer { at = range.upperBound }
        while at < range.upperBound {
            let tag = raw[at]
            guard tag == keyTag || tag == valueTag, let n = varint(raw, &at, from: at + 1), n <= range.upperBound - at else { return nil }
            let r = at..<at + n
            at += n
            guard isText(UnsafeRawBufferPointer(rebasing: raw[r])) else { return nil }
            if tag == keyTag {
                guard key == nil else { return nil }
                key = r
            } else {
                guard value == nil else { return nil }
                value = r
            }
        }
        guard let key, !key.isEmpty else { return nil }
        return (key, value ?? key.upperBound..<key.upperBound)
    }

    /// Valid UTF-8 without NUL bytes (the well-formed sequences of Unicode's table 3-7: no
    /// overlong forms, surrogates or code points past U+10FFFF). ASCII is checked 8 bytes at a
    /// time, also again after each non-ASCII character (a name with one accent is mostly
    /// ASCII); the rest byte by byte here rather than through the standard library's generic
    /// validation, which looks up type metadata on every call.
    @inline(__always) static func isText(_ b: UnsafeRawBufferPointer) -> Bool {
        let n = b.count
        var i = 0
        while i < n {
            if i + 8 <= n {
                let w = b.loadUnaligned(fromByteOffset: i, as: UInt64.self)
                if notPlainFlags(w) == 0 {
                    i += 8
                    continue
                }
            }
            let c = b[i]
            if c < 0x80 {
                if c == 0 { return false }
                i += 1
                continue
            }
            // A lead byte: how many continuation bytes follow, and the range of the first.
            let more: Int, low: UInt8, high: UInt8
            switch c {
            case 0xC2...0xDF: (more, low, high) = (1, 0x80, 0xBF)
            case 0xE0: (more, low, high) = (2, 0xA0, 0xBF)
            case 0xED: (more, low, high) = (2, 0x80, 0x9F)
            case 0xE1...0xEF: (more, low, high) = (2, 0x80, 0xBF)
            case 0xF0: (more, low, high) = (3, 0x90, 0xBF)
            case 0xF1...0xF3: (more, low, high) = (3, 0x80, 0xBF)
            case 0xF4: (more, low, high) = (3, 0x80, 0x8F)
            default: return false
            }
            guard n - i > more, b[i + 1] >= low, b[i + 1] <= high else { return false }
            if more >= 2 && b[i + 2] & 0xC0 != 0x80 { return false }
            if more == 3 && b[i + 3] & 0xC0 != 0x80 { return false }
            i += more + 1
        }
        return true
    }

    /// A varint of at most 4 bytes (< 2^28) starting at `start`; `at` moves past it. Nil when
    /// the bytes end or it is longer.
    @inline(__always) static func varint(_ b: UnsafeRawBufferPointer, _ at: inout Int, from start: Int) -> Int? {
        var v = 0, shift = 0, i = start
        while i < b.count && shift < 28 {
            let c = b[i]
            i += 1
            v |= Int(c & 0x7F) << shift
            if c < 0x80 { at = i; return v }
            shift += 7
        }
        return nil
    }

    @inline(__always) static func varintSize(_ v: Int) -> Int { v < 1 << 7 ? 1 : v < 1 << 14 ? 2 : v < 1 << 21 ? 3 : 4 }

    /// Bytes of one canonical entry of a key and a value of these lengths.
    static func entrySize(_ keyBytes: Int, _ valueBytes: Int) -> Int {
        let inner = 2 + varintSize(keyBytes) + keyBytes + varintSize(valueBytes) + valueBytes
        return 1 + varintSize(inner) + inner
    }

    static func appendVarint(_ v: Int, to out: inout [UInt8]) {
        var v = v
        while v >= 0x80 { out.append(UInt8(v & 0x7F) | 0x80); v >>= 7 }
        out.append(UInt8(v))
    }

    @inline(__always) private static func compare(_ raw: UnsafeRawBufferPointer, _ a: Range<Int>, _ b: Range<Int>) -> Int {
        compareBytes(UnsafeRawBufferPointer(rebasing: raw[a]), UnsafeRawBufferPointer(rebasing: raw[b]))
    }

    /// Byte-wise comparison: <0, 0, >0.
    @inline(__always) static func compareBytes(_ a: UnsafeRawBufferPointer, _ b: UnsafeRawBufferPointer) -> Int {
        for i in 0..<Swift.min(a.count, b.count) where a[i] != b[i] { return a[i] < b[i] ? -1 : 1 }
        return a.count - b.count
    }
}

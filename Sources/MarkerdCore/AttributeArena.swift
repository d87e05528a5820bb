/// A layer's marker attributes: each marker's canonical encoding (`AttributeEncoding`) stored
/// once in a byte arena, found by slot through an 8-byte reference.
///
/// Memory: the encoded bytes plus 8 bytes per slot (`refs`), and nothing at all while the layer
/// has never held an attribute (`refs` stays empty; a slot past its end has none). The arena is
/// a list of chunks of `chunkBytes` (64 KiB), each allocated once at its full size and filled
/// to the last byte (a record that does not fit in the rest of one goes on in the next, and is
/// copied out when read: at most one per chunk boundary), so growing the arena copies nothing
/// and leaves only the last chunk's room unused. Bytes of removed or replaced
/// attributes are garbage until it exceeds half of the arena (and 64 KiB): then the live ones
/// are copied into fresh chunks (amortized O(1) per byte freed), as `MarkerTable` does for ids.
struct AttributeArena: Sendable {
    /// Size of one chunk of the arena (64 KiB).
    static let chunkBytes = 1 << 16

    /// A slot's reference: `chunk << 40 | offset << 20 | length` (the record starts at `offset`
    /// of `chunks[chunk]`; up to 2^24 chunks, 1 TiB); 0 (length 0): no attributes.
    private(set) var refs: [UInt64] = []
    private var chunks: [[UInt8]] = []
    /// Bytes of live records.
    private(set) var liveBytes = 0
    /// Bytes of records no slot references any more.
    private(set) var garbageBytes = 0

    /// Calls `body` with a slot's encoded attributes (empty: none), valid only inside `body`.
    @inline(__always) func withBytes<R>(_ slot: Int32, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        let s = Int(slot)
        return Self.withRecord(s < refs.count ? refs[s] : 0, in: chunks, body)
    }

    /// Calls `body` with the record `ref` refers to in `chunks` (empty for 0).
    @inline(__always) private static func withRecord<R>(_ ref: UInt64, in chunks: [[UInt8]], _ body: (UnsafeRawBufferPointer) -> R) -> R {
        let n = Int(ref & 0xF_FFFF)
        guard n > 0 else { return body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        var c = Int(ref >> 40), offset = Int(ref >> 20 & 0xF_FFFF)
        if offset + n <= chunkBytes {
            return chunks[c].withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[offset..<offset + n])) }
        }
        // The record goes on in the next chunks: read a copy.
        var copy: [UInt8] = []
        copy.reserveCapacity(n)
        while copy.count < n {
            copy += chunks[c][offset..<offset + Swift.min(n - copy.count, chunkBytes - offset)]
            c += 1
            offset = 0
        }
        return copy.withUnsafeBytes(body)
    }

    /// Gives `slot` these canonical bytes (empty: none), freeing what it had. `bytes` holds at
    /// most `AttributeEncoding.maxEncodedBytes`. O(bytes), amortized.
    mutating func set(_ slot: Int32, _ bytes: UnsafeRawBufferPointer) {
        let s = Int(slot)
        if s < refs.count {
            free(s)
        } else if bytes.isEmpty {
            return
        } else {
            refs.reserveGrowing(s + 1 - refs.count)
            refs.append(contentsOf: repeatElement(0, count: s + 1 - refs.count))
        }
        guard !bytes.isEmpty else { return compactIfNeeded() }
        precondition(bytes.count <= AttributeEncoding.maxEncodedBytes, "attributes of \(bytes.count) bytes")
        refs[s] = append(bytes)
        liveBytes += bytes.count
        compactIfNeeded()
    }

    /// `set` of a slot that holds no attributes (a new slot: removals and clears drop them),
    /// without reading its reference first: a bulk load stores new slots in spatial order, not
    /// in slot order, and that read was a cache miss per marker. `bytes` is not empty and holds
    /// at most `AttributeEncoding.maxEncodedBytes`. O(bytes), amortized.
    @inline(__always)
    mutating func setNew(_ slot: Int32, _ bytes: UnsafeRawBufferPointer) {
        let s = Int(slot)
        if s >= refs.count {
            refs.reserveGrowing(s + 1 - refs.count)
            refs.append(contentsOf: repeatElement(0, count: s + 1 - refs.count))
        }
        assert(refs[s] == 0, "setNew of slot \(s), which holds attributes")
        precondition(!bytes.isEmpty && bytes.count <= AttributeEncoding.maxEncodedBytes, "new attributes of \(bytes.count) bytes")
        refs[s] = append(bytes)
        liveBytes += bytes.count
    }

    /// Gives `to` the attributes of `from` (whose slot then has none), freeing what `to` had.
    mutating func move(from: Int32, to: Int32) {
        if Int(to) < refs.count { free(Int(to)) }
        if Int(from) < refs.count && refs[Int(from)] != 0 {
            refs[Int(to)] = refs[Int(from)]   // `to` < `from`: within `refs` (restores keep the first slot)
            refs[Int(from)] = 0
        }
        compactIfNeeded()
    }

    /// Bytes held: the chunks' bytes and the references written (live and garbage; the last
    /// chunk's room and the capacity `refs` grows ahead, like the table's columns, are never
    /// written until used, so they are not resident).
    var approximateBytes: Int { (chunks.count - 1) * Self.chunkBytes + (chunks.last?.count ?? Self.chunkBytes) + refs.count * 8 }

    /// Appends a record after the last one (going on in new chunks as they fill); its reference.
    @inline(__always) private mutating func append(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        // Most records fit in the last chunk's room: one copy.
        let last = chunks.count - 1
        if last >= 0 {
            let used = chunks[last].count
            if bytes.count <= Self.chunkBytes - used {
                chunks[last].append(contentsOf: bytes.assumingMemoryBound(to: UInt8.self))
                return UInt64(last) << 40 | UInt64(used) << 20 | UInt64(bytes.count)
            }
        }
        return appendSpanning(bytes)
    }

    /// `append` of a record that starts a new chunk or goes on into the next ones.
    private mutating func appendSpanning(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        if chunks.isEmpty || chunks[chunks.count - 1].count == Self.chunkBytes { addChunk() }
        let ref = UInt64(chunks.count - 1) << 40 | UInt64(chunks[chunks.count - 1].count) << 20 | UInt64(bytes.count)
        var at = 0
        while at < bytes.count {
            if chunks[chunks.count - 1].count == Self.chunkBytes { addChunk() }
            let k = Swift.min(bytes.count - at, Self.chunkBytes - chunks[chunks.count - 1].count)
            chunks[chunks.count - 1].append(contentsOf: UnsafeRawBufferPointer(rebasing: bytes[at..<at + k]).assumingMemoryBound(to: UInt8.self))
            at += k
        }
        return ref
    }

    private mutating func addChunk() {
        var chunk: [UInt8] = []
        chunk.reserveCapacity(Self.chunkBytes)
        chunks.append(chunk)
    }

    private mutating func free(_ s: Int) {
        let n = Int(refs[s] & 0xF_FFFF)
        guard n > 0 else { return }
        refs[s] = 0
        liveBytes -= n
        garbageBytes += n
    }

    private mutating func compactIfNeeded() {
        guard garbageBytes > 65536 && garbageBytes > liveBytes else { return }
        let old = chunks
        chunks = []
        for s in refs.indices where refs[s] != 0 {
            refs[s] = Self.withRecord(refs[s], in: old) { append($0) }
        }
        garbageBytes = 0
    }
}

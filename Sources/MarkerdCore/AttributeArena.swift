/// A layer's marker attributes: each marker's canonical encoding (`AttributeEncoding`) stored
/// once in a byte arena, found by slot through an 8-byte reference.
///
/// Memory: the encoded bytes plus 8 bytes per slot (`refs`), and nothing at all while the layer
/// has never held an attribute (`refs` stays empty; a slot past its end has none). The arena is
/// a list of chunks of `chunkBytes` (64 KiB; a longer record gets a chunk of its own size),
/// each allocated once at its full size and never moved, so growing it copies nothing and
/// leaves at most one chunk's unused tail (plus the tail a record too long for the rest of a
/// chunk leaves: at most its size, a few dozen bytes per chunk for usual records). Bytes of removed or replaced
/// attributes are garbage until it exceeds half of the arena (and 64 KiB): then the live ones
/// are copied into fresh chunks (amortized O(1) per byte freed), as `MarkerTable` does for ids.
struct AttributeArena: Sendable {
    /// Size of one chunk of the arena (64 KiB; a longer record gets a chunk of its own).
    static let chunkBytes = 1 << 16

    /// A slot's reference: `chunk << 40 | offset << 20 | length`; 0 (length 0): no attributes.
    private(set) var refs: [UInt64] = []
    private var chunks: [[UInt8]] = []
    /// Bytes of live records.
    private(set) var liveBytes = 0
    /// Bytes of records no slot references any more.
    private(set) var garbageBytes = 0
    /// Bytes the chunks were allocated with.
    private var chunkCapacity = 0

    /// Calls `body` with a slot's encoded attributes (empty: none), valid only inside `body`.
    @inline(__always) func withBytes<R>(_ slot: Int32, _ body: (UnsafeRawBufferPointer) -> R) -> R {
        let s = Int(slot)
        let ref = s < refs.count ? refs[s] : 0
        let n = Int(ref & 0xF_FFFF)
        guard n > 0 else { return body(UnsafeRawBufferPointer(start: nil, count: 0)) }
        let offset = Int(ref >> 20 & 0xF_FFFF)
        return chunks[Int(ref >> 40)].withUnsafeBytes { body(UnsafeRawBufferPointer(rebasing: $0[offset..<offset + n])) }
    }

    /// Length of a slot's encoded attributes (0: none).
    @inline(__always) func encodedCount(_ slot: Int32) -> Int { Int(slot) < refs.count ? Int(refs[Int(slot)] & 0xF_FFFF) : 0 }

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
            while refs.count <= s { refs.append(0) }
        }
        guard !bytes.isEmpty else { return compactIfNeeded() }
        precondition(bytes.count <= AttributeEncoding.maxEncodedBytes, "attributes of \(bytes.count) bytes")
        refs[s] = append(bytes)
        liveBytes += bytes.count
        compactIfNeeded()
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

    /// Bytes held: the chunks (allocated whole) and the references written (`refs` grows its
    /// capacity ahead like the table's columns; capacity never written is not resident).
    var approximateBytes: Int { chunkCapacity + refs.count * 8 }

    /// Appends a record to the last chunk, or to a new one when it does not fit; its reference.
    private mutating func append(_ bytes: UnsafeRawBufferPointer) -> UInt64 {
        if chunks.isEmpty || chunks[chunks.count - 1].count + bytes.count > Self.chunkBytes {
            var chunk: [UInt8] = []
            chunk.reserveCapacity(Swift.max(Self.chunkBytes, bytes.count))
            chunkCapacity += Swift.max(Self.chunkBytes, bytes.count)
            chunks.append(chunk)
        }
        let c = chunks.count - 1
        let offset = chunks[c].count
        chunks[c].append(contentsOf: bytes)
        return UInt64(c) << 40 | UInt64(offset) << 20 | UInt64(bytes.count)
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
        chunkCapacity = 0
        for s in refs.indices where refs[s] != 0 {
            let ref = refs[s]
            let n = Int(ref & 0xF_FFFF), offset = Int(ref >> 20 & 0xF_FFFF)
            refs[s] = old[Int(ref >> 40)].withUnsafeBytes { append(UnsafeRawBufferPointer(rebasing: $0[offset..<offset + n])) }
        }
        garbageBytes = 0
    }
}

/// A slot's id in `MarkerTable.ids`: the id's bytes themselves when it has at most
/// `inlineCapacity` (15) bytes, else where its bytes are in the table's arena. So reading a
/// short id (the usual case) costs one cache line of the table, where an arena reference cost
/// two at random places (the reference, then the arena's bytes: a miss each at millions of
/// markers).
///
/// Layout (bytes 0...15 of `lo` then `hi`, little-endian, as the struct lies in memory):
/// - inline: bytes 0..<n hold the id, bytes n...14 are zero, byte 15 is n (1...15);
/// - in the arena: byte 15 is 0 and `lo` is offset << 9 | length (16...256 bytes; also an id
///   of any length that `MarkerTable` placed there);
/// - a free slot: `lo` is the next free slot (UInt64.max: none), `hi` is 0.
struct IDCell: Equatable, Sendable {
    var lo: UInt64
    var hi: UInt64

    /// Longest id kept inline, in bytes.
    static let inlineCapacity = 15

    static let zero = IDCell(lo: 0, hi: 0)

    init(lo: UInt64, hi: UInt64) { self.lo = lo; self.hi = hi }

    /// An inline cell holding `bytes` (1...`inlineCapacity` bytes).
    @inline(__always) init(inline bytes: UnsafeBufferPointer<UInt8>) {
        var cell = IDCell(lo: 0, hi: UInt64(bytes.count) << 56)
        withUnsafeMutableBytes(of: &cell) { $0.baseAddress!.copyMemory(from: bytes.baseAddress!, byteCount: bytes.count) }
        self = cell
    }

    /// A cell pointing at `length` bytes at `offset` in the arena.
    @inline(__always) init(arenaOffset offset: Int, length: Int) {
        lo = UInt64(offset) << 9 | UInt64(length)
        hi = 0
    }

    /// Whether the id's bytes are in the cell.
    @inline(__always) var isInline: Bool { hi >> 56 != 0 }

    /// The id's length in bytes.
    @inline(__always) var length: Int { isInline ? Int(hi >> 56) : Int(lo & 511) }

    /// Where an arena id's bytes start (meaningless for an inline one).
    @inline(__always) var arenaOffset: Int { Int(lo >> 9) }
}

extension MarkerTable {
    /// The cell for a new id (1...256 bytes): inline when it fits, else its bytes appended to
    /// the arena.
    @inline(__always) mutating func storeID(_ bytes: UnsafeBufferPointer<UInt8>) -> IDCell {
        if bytes.count <= IDCell.inlineCapacity { return IDCell(inline: bytes) }
        let cell = IDCell(arenaOffset: arena.count, length: bytes.count)
        arena.append(contentsOf: bytes)
        return cell
    }

    /// Calls `body` with a slot's id bytes (valid only inside `body`).
    @inline(__always) func withIDBytes<R>(_ slot: Int32, _ body: (UnsafeBufferPointer<UInt8>) -> R) -> R {
        var cell = ids[Int(slot)]
        if cell.isInline {
            let n = cell.length
            return withUnsafeBytes(of: &cell) { body(UnsafeBufferPointer(start: $0.baseAddress!.assumingMemoryBound(to: UInt8.self), count: n)) }
        }
        let off = cell.arenaOffset, n = cell.length
        return arena.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[off..<off + n])) }
    }

    /// Byte-wise comparison: <0, 0, >0.
    @inline(__always) static func compareBytes(_ a: UnsafeBufferPointer<UInt8>, _ b: UnsafeBufferPointer<UInt8>) -> Int {
        let n = Swift.min(a.count, b.count)
        var i = 0
        while i < n {
            let ca = a[i], cb = b[i]
            if ca != cb { return ca < cb ? -1 : 1 }
            i += 1
        }
        return a.count - b.count
    }
}

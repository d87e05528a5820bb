/// The occupancy of placed labels: hashed square cells of 64 world px, each listing the slots of
/// the labels whose padded box covers it. Placed padded boxes do not overlap, so a cell lists
/// few labels (about (64 / (smallest padded label side))^2 at most): testing a small box costs
/// O(1). Columns wrap around the antimeridian (`columns` = world width / 64).
///
/// Memory: 8 bytes per (label, covered cell) entry plus 12 bytes per used cell / load factor.
struct CollisionGrid: Sendable {
    static let cellShift: Int64 = 6
    let columns: Int64
    /// Open addressing, linear probing; `emptyKey` marks a free bucket. Cells are never removed
    /// (an emptied cell keeps its key with an empty list), so probing needs no tombstones.
    private var keys: [UInt64]
    private var heads: [Int32]
    private var used = 0
    private var entrySlot: [Int32] = []
    private var entryNext: [Int32] = []
    private var freeEntry: Int32 = -1
    private static let emptyKey = UInt64.max

    init(worldWidth: Int64) {
        columns = Swift.max(1, worldWidth >> Self.cellShift)
        keys = Array(repeating: Self.emptyKey, count: 64)
        heads = Array(repeating: -1, count: 64)
    }

    /// Calls `body` with the key of each cell a half-open px rectangle covers (columns wrapped;
    /// a rectangle wider than the world covers each column once).
    @inline(__always) static func forEachCell(columns: Int64, x0: Int64, y0: Int64, x1: Int64, y1: Int64,
                                              _ body: (UInt64) -> Void) {
        let c0 = x0 >> Self.cellShift, c1 = Swift.min((x1 - 1) >> Self.cellShift, c0 + columns - 1)
        let r0 = y0 >> Self.cellShift, r1 = (y1 - 1) >> Self.cellShift
        var r = r0
        while r <= r1 {
            var c = c0
            while c <= c1 {
                var col = c % columns
                if col < 0 { col += columns }
                body(UInt64(col) << 32 | UInt64(UInt32(truncatingIfNeeded: r)))
                c += 1
            }
            r += 1
        }
    }

    @inline(__always) private func bucket(_ key: UInt64) -> Int {
        let mask = keys.count - 1
        var i = Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> 32) & mask
        while keys[i] != key && keys[i] != Self.emptyKey { i = (i + 1) & mask }
        return i
    }

    /// Lists `slot` in every cell of the rectangle.
    mutating func insert(_ slot: Int32, x0: Int64, y0: Int64, x1: Int64, y1: Int64) {
        Self.forEachCell(columns: columns, x0: x0, y0: y0, x1: x1, y1: y1) { key in
            if (used + 1) * 4 > keys.count * 3 { grow() }
            let b = bucket(key)
            if keys[b] == Self.emptyKey { keys[b] = key; heads[b] = -1; used += 1 }
            let e: Int32
            if freeEntry >= 0 {
                e = freeEntry; freeEntry = entryNext[Int(e)]
                entrySlot[Int(e)] = slot; entryNext[Int(e)] = heads[b]
            } else {
                e = Int32(entrySlot.count)
                entrySlot.append(slot); entryNext.append(heads[b])
            }
            heads[b] = e
        }
    }

    /// Unlists `slot` from every cell of the rectangle it was inserted with.
    mutating func remove(_ slot: Int32, x0: Int64, y0: Int64, x1: Int64, y1: Int64) {
        Self.forEachCell(columns: columns, x0: x0, y0: y0, x1: x1, y1: y1) { key in
            let b = bucket(key)
            var prev: Int32 = -1, e = heads[b]
            while e >= 0 && entrySlot[Int(e)] != slot { prev = e; e = entryNext[Int(e)] }
            guard e >= 0 else { return }
            if prev < 0 { heads[b] = entryNext[Int(e)] } else { entryNext[Int(prev)] = entryNext[Int(e)] }
            entryNext[Int(e)] = freeEntry; freeEntry = e
        }
    }

    /// Calls `body` with each slot listed in the rectangle's cells (a slot once per cell that
    /// lists it) until it returns true; returns whether one did.
    func first(x0: Int64, y0: Int64, x1: Int64, y1: Int64, where body: (Int32) -> Bool) -> Bool {
        var found = false
        Self.forEachCell(columns: columns, x0: x0, y0: y0, x1: x1, y1: y1) { key in
            guard !found else { return }
            var e = heads[bucket(key)]
            while e >= 0 {
                if body(entrySlot[Int(e)]) { found = true; return }
                e = entryNext[Int(e)]
            }
        }
        return found
    }

    private mutating func grow() {
        let oldKeys = keys, oldHeads = heads
        keys = Array(repeating: Self.emptyKey, count: oldKeys.count * 2)
        heads = Array(repeating: -1, count: oldKeys.count * 2)
        for (i, k) in oldKeys.enumerated() where k != Self.emptyKey {
            let b = bucket(k)
            keys[b] = k; heads[b] = oldHeads[i]
        }
    }

    var approximateBytes: Int { keys.capacity * 8 + heads.capacity * 4 + entrySlot.capacity * 4 + entryNext.capacity * 4 }
}

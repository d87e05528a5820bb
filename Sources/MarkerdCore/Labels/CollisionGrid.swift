/// The occupancy of placed labels: hashed square cells of 64 world px, each listing the slots of
/// the labels whose padded box covers it. Placed padded boxes do not overlap, so a cell lists
/// few labels (about (64 / (smallest padded label side))^2 at most): testing a small box costs
/// O(1). Columns wrap around the antimeridian (`columns` = world width / 64).
///
/// Memory: 24 bytes per used cell / load factor (0.375-0.75), plus 8 bytes per slot beyond a
/// cell's third.
struct CollisionGrid: Sendable {
    static let cellShift: Int64 = 6
    let columns: Int64
    /// A cell: its key and the first three slots it lists inline (-1: none), so that testing a
    /// cell costs one cache line; more slots go to a linked list of entries from `more`.
    struct Cell {
        var key: UInt64
        var a: Int32 = -1, b: Int32 = -1, c: Int32 = -1
        var more: Int32 = -1
    }
    /// Open addressing, linear probing; `emptyKey` marks a free cell. Cells are never removed
    /// (an emptied cell keeps its key), so probing needs no tombstones.
    private var cells: [Cell]
    private var used = 0
    private var entrySlot: [Int32] = []
    private var entryNext: [Int32] = []
    private var freeEntry: Int32 = -1
    private static let emptyKey = UInt64.max

    init(worldWidth: Int64) {
        columns = Swift.max(1, worldWidth >> Self.cellShift)
        cells = Array(repeating: Cell(key: Self.emptyKey), count: 64)
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

    @inline(__always) private func find(_ key: UInt64) -> Int {
        let mask = cells.count - 1
        var i = Int(truncatingIfNeeded: (key &* 0x9E37_79B9_7F4A_7C15) >> 32) & mask
        while cells[i].key != key && cells[i].key != Self.emptyKey { i = (i + 1) & mask }
        return i
    }

    /// Lists `slot` in every cell of the rectangle.
    mutating func insert(_ slot: Int32, x0: Int64, y0: Int64, x1: Int64, y1: Int64) {
        Self.forEachCell(columns: columns, x0: x0, y0: y0, x1: x1, y1: y1) { key in
            if (used + 1) * 4 > cells.count * 3 { grow() }
            let i = find(key)
            if cells[i].key == Self.emptyKey { cells[i].key = key; used += 1 }
            if cells[i].a < 0 { cells[i].a = slot; return }
            if cells[i].b < 0 { cells[i].b = slot; return }
            if cells[i].c < 0 { cells[i].c = slot; return }
            let e: Int32
            if freeEntry >= 0 {
                e = freeEntry; freeEntry = entryNext[Int(e)]
                entrySlot[Int(e)] = slot; entryNext[Int(e)] = cells[i].more
            } else {
                e = Int32(entrySlot.count)
                entrySlot.append(slot); entryNext.append(cells[i].more)
            }
            cells[i].more = e
        }
    }

    /// Unlists `slot` from every cell of the rectangle it was inserted with.
    mutating func remove(_ slot: Int32, x0: Int64, y0: Int64, x1: Int64, y1: Int64) {
        Self.forEachCell(columns: columns, x0: x0, y0: y0, x1: x1, y1: y1) { key in
            let i = find(key)
            if cells[i].a == slot { cells[i].a = -1; return }
            if cells[i].b == slot { cells[i].b = -1; return }
            if cells[i].c == slot { cells[i].c = -1; return }
            var prev: Int32 = -1, e = cells[i].more
            while e >= 0 && entrySlot[Int(e)] != slot { prev = e; e = entryNext[Int(e)] }
            guard e >= 0 else { return }
            if prev < 0 { cells[i].more = entryNext[Int(e)] } else { entryNext[Int(prev)] = entryNext[Int(e)] }
            entryNext[Int(e)] = freeEntry; freeEntry = e
        }
    }

    /// Calls `body` with each slot listed in the rectangle's cells (a slot once per cell that
    /// lists it) until it returns true; returns whether one did.
    func first(x0: Int64, y0: Int64, x1: Int64, y1: Int64, where body: (Int32) -> Bool) -> Bool {
        var found = false
        Self.forEachCell(columns: columns, x0: x0, y0: y0, x1: x1, y1: y1) { key in
            guard !found else { return }
            let cell = cells[find(key)]
            if cell.key == Self.emptyKey { return }
            if cell.a >= 0 && body(cell.a) || cell.b >= 0 && body(cell.b) || cell.c >= 0 && body(cell.c) { found = true; return }
            var e = cell.more
            while e >= 0 {
                if body(entrySlot[Int(e)]) { found = true; return }
                e = entryNext[Int(e)]
            }
        }
        return found
    }

    private mutating func grow() {
        let old = cells
        cells = Array(repeating: Cell(key: Self.emptyKey), count: old.count * 2)
        for c in old where c.key != Self.emptyKey { cells[find(c.key)] = c }
    }

    var approximateBytes: Int { cells.capacity * MemoryLayout<Cell>.stride + entrySlot.capacity * 4 + entryNext.capacity * 4 }
}

/// Open-addressing table from a 32-bit cell key to (list head, count). Linear probing,
/// backward-shift deletion, so empty cells take no space and deleted ones leave no tombstones.
struct CellTable: Sendable {
    static let empty = UInt32.max
    private(set) var keys: [UInt32]
    private(set) var heads: [Int32]
    private(set) var counts: [UInt32]
    private var shift: UInt32
    private(set) var occupied = 0

    init() {
        keys = Array(repeating: CellTable.empty, count: 16)
        heads = Array(repeating: -1, count: 16)
        counts = Array(repeating: 0, count: 16)
        shift = 28
    }

    @inline(__always) private func home(_ key: UInt32) -> Int { Int((key &* 0x9E37_79B1) >> shift) }

    /// Index of a key, or -1.
    @inline(__always) func find(_ key: UInt32) -> Int {
        let mask = keys.count - 1
        var i = home(key)
        while true {
            let k = keys[i]
            if k == key { return i }
            if k == CellTable.empty { return -1 }
            i = (i + 1) & mask
        }
    }

    @inline(__always) func count(_ key: UInt32) -> UInt32 {
        let i = find(key)
        return i < 0 ? 0 : counts[i]
    }

    /// Index of a key, inserting it (head -1, count 0) if absent.
    mutating func findOrInsert(_ key: UInt32) -> Int {
        var i = find(key)
        if i >= 0 { return i }
        if (occupied + 1) * 4 > keys.count * 3 { grow() }
        let mask = keys.count - 1
        i = home(key)
        while keys[i] != CellTable.empty { i = (i + 1) & mask }
        keys[i] = key; heads[i] = -1; counts[i] = 0
        occupied += 1
        return i
    }

    @inline(__always) mutating func setHead(_ i: Int, _ h: Int32) { heads[i] = h }
    @inline(__always) mutating func addCount(_ i: Int, _ d: Int32) {
        counts[i] = UInt32(bitPattern: Int32(bitPattern: counts[i]) &+ d)
    }

    mutating func remove(at index: Int) {
        let mask = keys.count - 1
        var i = index
        var j = i
        while true {
            j = (j + 1) & mask
            let k = keys[j]
            if k == CellTable.empty { break }
            let h = home(k)
            let inRange = i <= j ? (h > i && h <= j) : (h > i || h <= j)
            if !inRange {
                keys[i] = k; heads[i] = heads[j]; counts[i] = counts[j]
                i = j
            }
        }
        keys[i] = CellTable.empty; heads[i] = -1; counts[i] = 0
        occupied -= 1
    }

    private mutating func grow() {
        let oldKeys = keys, oldHeads = heads, oldCounts = counts
        let n = keys.count * 2
        keys = Array(repeating: CellTable.empty, count: n)
        heads = Array(repeating: -1, count: n)
        counts = Array(repeating: 0, count: n)
        shift -= 1
        let mask = n - 1
        for j in 0..<oldKeys.count where oldKeys[j] != CellTable.empty {
            var i = home(oldKeys[j])
            while keys[i] != CellTable.empty { i = (i + 1) & mask }
            keys[i] = oldKeys[j]; heads[i] = oldHeads[j]; counts[i] = oldCounts[j]
        }
    }

    var approximateBytes: Int { keys.capacity * 12 }
}

/// An inclusive rectangle of integer world coordinates.
struct CellRect {
    var x0: UInt32, y0: UInt32, x1: UInt32, y1: UInt32
    @inline(__always) func contains(_ o: CellRect) -> Bool { x0 <= o.x0 && o.x1 <= x1 && y0 <= o.y0 && o.y1 <= y1 }
}

/// The spatial index: every marker sits in one cell of a fine grid (level 14, cells of 2^18
/// world units, about 2.4 km at the equator, 4 x 4 tiles of zoom 16), in a doubly linked list
/// threaded through `next`/`prev` (8 bytes per marker, O(1) insert/remove/move, no per-cell
/// allocations). Two coarser count levels (10: 2^22 units; 6: 2^26 units) let queries skip
/// empty regions and count whole cells that lie inside a rectangle without visiting markers.
/// Cells of all levels are stored sparsely (hash tables; empty cells cost nothing). Each key
/// includes a marker class (static / live / hidden), so a query touches only the classes it needs.
///
/// Costs: insert/remove/move O(1) (3 hash-table updates, fewer when coarse cells are unchanged);
/// a query visits O(non-empty cells touched * 16^2) cells at most and only the markers of fine
/// cells that straddle its rectangle (or all, when it needs the markers themselves).
struct GridIndex: Sendable {
    static let levels: (UInt32, UInt32, UInt32) = (6, 10, 14)
    static let fineShift: UInt32 = 32 - 14

    private(set) var fine = CellTable()
    private(set) var mid = CellTable()
    private(set) var coarse = CellTable()
    private(set) var next: [Int32] = []
    private(set) var prev: [Int32] = []

    enum Class: UInt32 { case staticMarker = 0, live = 1, hidden = 2 }

    @inline(__always) static func key(_ x: UInt32, _ y: UInt32, level: UInt32, _ cls: UInt32) -> UInt32 {
        let s = 32 - level
        return (((y >> s) << level) | (x >> s)) << 2 | cls
    }

    @inline(__always) static func cellKey(_ cx: UInt32, _ cy: UInt32, level: UInt32, _ cls: UInt32) -> UInt32 {
        ((cy << level) | cx) << 2 | cls
    }

    mutating func insert(_ slot: Int32, x: UInt32, y: UInt32, cls: UInt32) {
        let s = Int(slot)
        while next.count <= s { next.append(-1); prev.append(-1) }
        let i = fine.findOrInsert(GridIndex.key(x, y, level: 14, cls))
        let h = fine.heads[i]
        next[s] = h
        prev[s] = -1
        if h >= 0 { prev[Int(h)] = slot }
        fine.setHead(i, slot)
        fine.addCount(i, 1)
        mid.addCount(mid.findOrInsert(GridIndex.key(x, y, level: 10, cls)), 1)
        coarse.addCount(coarse.findOrInsert(GridIndex.key(x, y, level: 6, cls)), 1)
    }

    mutating func remove(_ slot: Int32, x: UInt32, y: UInt32, cls: UInt32) {
        unlinkFine(slot, key: GridIndex.key(x, y, level: 14, cls))
        decrement(&mid, GridIndex.key(x, y, level: 10, cls))
        decrement(&coarse, GridIndex.key(x, y, level: 6, cls))
    }

    /// Moves a marker between cells/classes; O(1), and free when the fine cell stays the same.
    mutating func move(_ slot: Int32, fromX ox: UInt32, y oy: UInt32, cls oc: UInt32, toX nx: UInt32, y ny: UInt32, cls nc: UInt32) {
        let ok = GridIndex.key(ox, oy, level: 14, oc), nk = GridIndex.key(nx, ny, level: 14, nc)
        if ok == nk { return }
        unlinkFine(slot, key: ok)
        let i = fine.findOrInsert(nk)
        let h = fine.heads[i]
        next[Int(slot)] = h
        prev[Int(slot)] = -1
        if h >= 0 { prev[Int(h)] = slot }
        fine.setHead(i, slot)
        fine.addCount(i, 1)
        let om = GridIndex.key(ox, oy, level: 10, oc), nm = GridIndex.key(nx, ny, level: 10, nc)
        if om != nm {
            decrement(&mid, om)
            mid.addCount(mid.findOrInsert(nm), 1)
            let oco = GridIndex.key(ox, oy, level: 6, oc), nco = GridIndex.key(nx, ny, level: 6, nc)
            if oco != nco {
                decrement(&coarse, oco)
                coarse.addCount(coarse.findOrInsert(nco), 1)
            }
        }
    }

    private mutating func unlinkFine(_ slot: Int32, key: UInt32) {
        let i = fine.find(key)
        precondition(i >= 0, "grid cell missing for slot \(slot)")
        let s = Int(slot)
        let p = prev[s], n = next[s]
        if p >= 0 { next[Int(p)] = n } else { fine.setHead(i, n) }
        if n >= 0 { prev[Int(n)] = p }
        next[s] = -1; prev[s] = -1
        fine.addCount(i, -1)
        if fine.counts[i] == 0 { fine.remove(at: i) }
    }

    private func decrement(_ t: inout CellTable, _ key: UInt32) {
        let i = t.find(key)
        precondition(i >= 0, "grid count cell missing")
        t.addCount(i, -1)
        if t.counts[i] == 0 { t.remove(at: i) }
    }

    /// Visits the markers of class `cls` whose position lies in `rect`, and returns the number
    /// of markers of that class in cells that lie entirely inside one of `countOnly` (those are
    /// counted, not visited).
    func visit(cls: UInt32, rect: CellRect, countOnly: [CellRect], _ body: (Int32) -> Void) -> Int {
        var counted = 0
        walk(depth: 0, cls: cls, rect: rect, countOnly: countOnly, counted: &counted, body)
        return counted
    }

    private func walk(depth: Int, cls: UInt32, rect: CellRect, countOnly: [CellRect], counted: inout Int, _ body: (Int32) -> Void) {
        let level: UInt32 = depth == 0 ? 6 : (depth == 1 ? 10 : 14)
        let s = 32 - level
        let span = UInt64(1) << UInt64(s)
        let table = depth == 0 ? coarse : (depth == 1 ? mid : fine)
        for cy in (rect.y0 >> s)...(rect.y1 >> s) {
            for cx in (rect.x0 >> s)...(rect.x1 >> s) {
                let k = GridIndex.cellKey(cx, cy, level: level, cls)
                let i = table.find(k)
                if i < 0 { continue }
                let cell = CellRect(x0: UInt32(UInt64(cx) * span), y0: UInt32(UInt64(cy) * span),
                                    x1: UInt32(UInt64(cx) * span + span - 1), y1: UInt32(UInt64(cy) * span + span - 1))
                if countOnly.contains(where: { $0.contains(cell) }) {
                    counted += Int(table.counts[i])
                    continue
                }
                if depth == 2 {
                    var m = table.heads[i]
                    while m >= 0 {
                        body(m)
                        m = next[Int(m)]
                    }
                } else {
                    let sub = CellRect(x0: max(rect.x0, cell.x0), y0: max(rect.y0, cell.y0),
                                       x1: min(rect.x1, cell.x1), y1: min(rect.y1, cell.y1))
                    walk(depth: depth + 1, cls: cls, rect: sub, countOnly: countOnly, counted: &counted, body)
                }
            }
        }
    }

    mutating func removeAll() { self = GridIndex() }

    var approximateBytes: Int {
        fine.approximateBytes + mid.approximateBytes + coarse.approximateBytes + (next.capacity + prev.capacity) * 4
    }
}

/// One marker as the grid lists it: its position and z-index inline (so that scanning a cell
/// touches contiguous memory, not the marker table) and its slot.
public struct GridEntry: Sendable {
    /// World position (units of 2^-32 of the world's width).
    public internal(set) var x: UInt32
    public internal(set) var y: UInt32
    /// The marker's z-index.
    public internal(set) var z: Int32
    /// The marker's slot (`TileCandidate.slot`).
    public internal(set) var slot: Int32
}

/// One node of the grid (see `GridIndex`).
struct GridCell: Sendable {
    /// `GridIndex.nodeKey`, or `GridCellTable.emptyKey`.
    var key: UInt64
    /// Leaf: its entry run (`GridIndex.runHead`; -1: none). Internal node: -2 - (child mask).
    var head: Int32
    /// Markers in the subtree.
    var count: UInt32
    /// Conservative bounds of the z-indices in the subtree (never too narrow).
    var minZ: Int32
    var maxZ: Int32

    @inline(__always) var isInternal: Bool { head <= -2 }
    @inline(__always) var childMask: UInt32 { UInt32(-2 - Int64(head)) }
}

/// Open-addressing table of grid nodes keyed by 64-bit node keys. Linear probing, backward-shift
/// deletion (no tombstones; indices are stable only while nothing is removed or inserted).
struct GridCellTable: Sendable {
    static let emptyKey = UInt64.max
    private(set) var cells: [GridCell]
    private var shift: UInt64
    private(set) var occupied = 0

    init() {
        cells = Array(repeating: GridCell(key: GridCellTable.emptyKey, head: -1, count: 0, minZ: 0, maxZ: 0), count: 16)
        shift = 60
    }

    /// Siblings (the 4 x 4 children of one node, see `GridIndex.nodeKey`: the low two bits of
    /// cx and cy) get consecutive homes, so a node's children mostly sit next to each other and
    /// visiting them reads a few adjacent cache lines instead of 16 random ones.
    @inline(__always) private func home(_ key: UInt64) -> Int {
        let family = key & ~(UInt64(0b1100) | UInt64(0b11) << 28)
        let sibling = Int(truncatingIfNeeded: (key >> 2) & 3 | ((key >> 28) & 3) << 2)
        return (Int(truncatingIfNeeded: (family &* 0x9E37_79B9_7F4A_7C15) >> shift) &+ sibling) & (cells.count - 1)
    }

    /// Index of a key, or -1.
    @inline(__always) func find(_ key: UInt64) -> Int {
        let mask = cells.count - 1
        var i = home(key)
        while true {
            let k = cells[i].key
            if k == key { return i }
            if k == GridCellTable.emptyKey { return -1 }
            i = (i + 1) & mask
        }
    }

    /// The indices of the present ones of `keys` (in order; absent keys are skipped), in two
    /// passes (`lookUp`).
    func find(all keys: [UInt64], into found: inout [Int]) {
        found.removeAll(keepingCapacity: true)
        guard !keys.isEmpty else { return }
        keys.withUnsafeBufferPointer { ks in
            lookUp(ks.count, key: { ks[$0] }) { _, i in if i >= 0 { found.append(i) } }
        }
    }

    /// `find(_:)` of each of `keys` into `found` (-1: absent), in two passes (`lookUp`). For a
    /// few hundred keys at a time (the first reads stay in cache).
    func find(_ keys: UnsafeBufferPointer<UInt64>, into found: UnsafeMutableBufferPointer<Int>) {
        lookUp(keys.count, key: { keys[$0] }) { m, i in found[m] = i }
    }

    /// Looks up `count` keys (`key(m)`, m in 0..<count) and calls `body(m, index or -1)` for each
    /// in order, in two passes: first the key in each one's home cell is read (loads that do not
    /// depend on each other, so their cache misses overlap), then each is looked up, starting
    /// with that key.
    @inline(__always) private func lookUp(_ count: Int, key: (Int) -> UInt64, _ body: (Int, Int) -> Void) {
        let mask = cells.count - 1
        cells.withUnsafeBufferPointer { cs in
            withUnsafeTemporaryAllocation(of: (home: Int, key: UInt64).self, capacity: count) { first in
                for m in 0..<count {
                    let h = home(key(m))
                    first[m] = (h, cs[h].key)
                }
                for m in 0..<count {
                    let want = key(m)
                    var (i, k) = first[m]
                    while k != want {
                        if k == GridCellTable.emptyKey { i = -1; break }
                        i = (i + 1) & mask
                        k = cs[i].key
                    }
                    body(m, i)
                }
            }
        }
    }

    @inline(__always) subscript(i: Int) -> GridCell {
        get { cells[i] }
        _modify { yield &cells[i] }
    }

    /// Inserts an absent key as an empty leaf; returns its index.
    mutating func insertNew(_ key: UInt64) -> Int {
        if (occupied + 1) * 4 > cells.count * 3 { grow() }
        let mask = cells.count - 1
        var i = home(key)
        while cells[i].key != GridCellTable.emptyKey { i = (i + 1) & mask }
        cells[i] = GridCell(key: key, head: -1, count: 0, minZ: .max, maxZ: .min)
        occupied += 1
        return i
    }

    mutating func remove(at index: Int) {
        let mask = cells.count - 1
        var i = index
        var j = i
        while true {
            j = (j + 1) & mask
            let k = cells[j].key
            if k == GridCellTable.emptyKey { break }
            let h = home(k)
            let inRange = i <= j ? (h > i && h <= j) : (h > i || h <= j)
            if !inRange {
                cells[i] = cells[j]
                i = j
            }
        }
        cells[i].key = GridCellTable.emptyKey
        occupied -= 1
    }

    private mutating func grow() {
        let old = cells
        let n = cells.count * 2
        cells = Array(repeating: GridCell(key: GridCellTable.emptyKey, head: -1, count: 0, minZ: 0, maxZ: 0), count: n)
        shift -= 1
        let mask = n - 1
        for c in old where c.key != GridCellTable.emptyKey {
            var i = home(c.key)
            while cells[i].key != GridCellTable.emptyKey { i = (i + 1) & mask }
            cells[i] = c
        }
    }

    var approximateBytes: Int { cells.capacity * MemoryLayout<GridCell>.stride }
}

/// An inclusive rectangle of integer world coordinates.
struct CellRect {
    var x0: UInt32, y0: UInt32, x1: UInt32, y1: UInt32
    @inline(__always) func contains(_ o: CellRect) -> Bool { x0 <= o.x0 && o.x1 <= x1 && y0 <= o.y0 && o.y1 <= y1 }
    @inline(__always) func intersects(_ o: CellRect) -> Bool { x0 <= o.x1 && o.x0 <= x1 && y0 <= o.y1 && o.y0 <= y1 }
    @inline(__always) func contains(x: UInt32, y: UInt32) -> Bool { x >= x0 && x <= x1 && y >= y0 && y <= y1 }

    /// `contains(x:y:)` for a non-empty rectangle (x0 <= x1, y0 <= y1), without branches: one
    /// unsigned comparison per axis (v - lo wraps above hi - lo when v < lo).
    @inline(__always) func holds(_ x: UInt32, _ y: UInt32) -> Bool {
        Bool(bitPattern: UInt8(bitPattern: x &- x0 <= x1 &- x0) & UInt8(bitPattern: y &- y0 <= y1 &- y0))
    }
}

// Conversions between Bool and 0 / 1 by reinterpreting the byte: `b ? 1 : 0` is a branch in
// SIL that LLVM does not always turn back into a select, and the scans above must not branch
// on their data.
extension Bool {
    /// The low bit of `b`.
    @inline(__always) init(bitPattern b: UInt8) { self = unsafeBitCast(b & 1, to: Bool.self) }
}

extension UInt8 {
    /// 0 or 1, for branch-free arithmetic on comparisons.
    @inline(__always) init(bitPattern b: Bool) { self = unsafeBitCast(b, to: UInt8.self) }
}

/// A set of points tested without branches (`CellRect`, `InnerRects`).
protocol PointTest {
    func holds(_ x: UInt32, _ y: UInt32) -> Bool
}

extension CellRect: PointTest {}
extension InnerRects: PointTest {}

/// Up to four rectangles (`inner` of a `SearchArea`), tested without branches by `holds`; the
/// rest, when there are more (rare: a viewport split at the antimeridian and shifted both
/// ways), by `contains(_:_:overflow:)`.
struct InnerRects {
    private let a: CellRect, b: CellRect, c: CellRect, d: CellRect
    /// No rectangle at all: `holds` is false everywhere.
    private let none: Bool
    private let more: Bool

    /// - rects: each non-empty.
    @inline(__always) init(_ rects: [CellRect]) {
        none = rects.isEmpty
        more = rects.count > 4
        let first = rects.first ?? CellRect(x0: 0, y0: 0, x1: 0, y1: 0)
        a = first
        b = rects.count > 1 ? rects[1] : first
        c = rects.count > 2 ? rects[2] : first
        d = rects.count > 3 ? rects[3] : first
    }

    /// Whether one of the first four rectangles holds (x, y).
    @inline(__always) func holds(_ x: UInt32, _ y: UInt32) -> Bool {
        let any = UInt8(bitPattern: a.holds(x, y)) | UInt8(bitPattern: b.holds(x, y))
            | UInt8(bitPattern: c.holds(x, y)) | UInt8(bitPattern: d.holds(x, y))
        return Bool(bitPattern: any & UInt8(bitPattern: !none))
    }

    /// Whether one of the rectangles after the fourth of `rects` (the array this was made from) holds (x, y).
    @inline(__always) func contains(_ x: UInt32, _ y: UInt32, overflow rects: [CellRect]) -> Bool {
        more && rects[4...].contains(where: { $0.contains(x: x, y: y) })
    }
}

/// The spatial index: an adaptive quadtree per marker class (static / live / hidden), so a
/// query touches only the classes it needs.
///
/// Nodes live at even levels 0, 2, ..., 26 (a node of level L is a square of 2^(32-L) world
/// units, level 26 is about 0.6 m) in one hash table keyed by (level, cell, class); each node
/// has up to 16 children (the 4 x 4 cells of level L + 2 inside it), holds the number of
/// markers in its subtree and conservative bounds of their z-indices. A leaf lists its markers
/// as `GridEntry`s (x, y, z, slot: 16 bytes) in one contiguous run of `entries` whose capacity
/// is 8 << k (k = the run's size class; a run that fills up moves to one of twice the size, one
/// that drops to a quarter full to one of half the size); `pos[slot]` is where a slot's entry
/// is, so a removal is a swap with the leaf's last entry. Contiguous runs make scanning a leaf
/// one sequential read the processor prefetches, not a chain of dependent cache misses.
///
/// A leaf splits into its children when it holds more than `splitAbove` markers (at level
/// 26 it never splits: exact duplicates stay together); an internal node whose subtree drops
/// to `mergeAtOrBelow` markers collapses back into one leaf. The hysteresis between the two
/// makes both O(1) amortized per update, and nothing ever rebuilds the whole index. Dense
/// places end up with leaves of 4-64 markers however dense they are; sparse ones with big
/// leaves, so empty space costs nothing.
///
/// Costs: insert/remove/move O(depth) hash-table steps (depth is log4 of the density, at most
/// 14 levels; a move that keeps class and z-index finds the two positions' deepest common
/// level from their coordinates and, with the slot's `leafLevel`, rewrites the entry in place
/// when it stays in its leaf (no node read) or touches only the levels below that common
/// ancestor). Counting the markers of a
/// rectangle is O(nodes on its boundary) plus the entries of boundary leaves (contiguous
/// memory); ordered searches (first markers in draw order) go best-first by the nodes'
/// (z, y) bounds and stop as soon as no node can beat what they already have.
///
/// Memory: 16 bytes per entry + 5 per slot (`pos`, `leafLevel`) + run slack (under 3/4 of a leaf's run, at least 8
/// entries) + 4 bytes per 8 entries of runs (free-list links) + a node per 4-64 markers
/// (24 bytes / table load).
struct GridIndex: Sendable {
    static let maxLevel: UInt32 = 26
    static let splitAbove: UInt32 = 64
    static let mergeAtOrBelow: UInt32 = 16
    static let blockSize = 8

    // Internal (not private) setters: GridIndex+BulkLoad.swift builds them directly.
    var nodes = GridCellTable()
    var entries: [GridEntry] = []
    /// Per block of 8 entries: for the first block of a free run, the next free run of its size
    /// class (-1: none); unused otherwise.
    var blockNext: [Int32] = []
    /// The first free run of each size class (-1: none).
    private var freeRuns = [Int32](repeating: -1, count: 32)
    /// Index into `entries` of each slot's entry.
    var pos: [UInt32] = []
    /// Level of the leaf that lists each slot's entry (written wherever `pos` is; a hint a
    /// move reads instead of looking nodes up, see `relink`).
    var leafLevel: [UInt8] = []

    enum Class: UInt32 { case staticMarker = 0, live = 1, hidden = 2 }

    // MARK: Keys and geometry

    @inline(__always) static func nodeKey(level: UInt32, cx: UInt32, cy: UInt32, cls: UInt32) -> UInt64 {
        UInt64(level) << 54 | UInt64(cy) << 28 | UInt64(cx) << 2 | UInt64(cls)
    }

    @inline(__always) static func key(_ x: UInt32, _ y: UInt32, level: UInt32, _ cls: UInt32) -> UInt64 {
        if level == 0 { return nodeKey(level: 0, cx: 0, cy: 0, cls: cls) }
        let s = 32 - level
        return nodeKey(level: level, cx: x >> s, cy: y >> s, cls: cls)
    }

    @inline(__always) static func level(_ key: UInt64) -> UInt32 { UInt32(key >> 54) }

    /// The world rectangle of a node.
    @inline(__always) static func rect(_ key: UInt64) -> CellRect {
        let level = UInt64(key >> 54)
        let cx = (key >> 2) & 0x3FF_FFFF, cy = (key >> 28) & 0x3FF_FFFF
        let s = 32 - level
        let x0 = cx << s, y0 = cy << s, span = UInt64(1) << s
        return CellRect(x0: UInt32(x0), y0: UInt32(y0), x1: UInt32(x0 + span - 1), y1: UInt32(y0 + span - 1))
    }

    /// Key of child `bit` (dy * 4 + dx) of a node.
    @inline(__always) static func childKey(_ key: UInt64, _ bit: Int) -> UInt64 {
        let level = key >> 54
        let cx = (key >> 2) & 0x3FF_FFFF, cy = (key >> 28) & 0x3FF_FFFF
        let ccx = cx << 2 | UInt64(bit & 3), ccy = cy << 2 | UInt64(bit >> 2)
        return (level + 2) << 54 | ccy << 28 | ccx << 2 | (key & 3)
    }

    /// Which child (0...15) of its parent a node of `level` > 0 at (x, y) is.
    @inline(__always) static func childBit(_ x: UInt32, _ y: UInt32, level: UInt32) -> Int {
        let s = 32 - level
        return Int((y >> s) & 3) << 2 | Int((x >> s) & 3)
    }

    // MARK: Runs

    /// Bits of a leaf's `head` holding the run's first block (blocks of `blockSize` entries);
    /// the bits above hold its size class k (capacity `blockSize << k` entries).
    static let runBlockBits: Int32 = 26

    /// A leaf's `head` for the run of class `k` starting at block `block`.
    @inline(__always) static func runHead(block: Int32, sizeClass k: Int32) -> Int32 { k << runBlockBits | block }

    /// Index in `entries` of the first entry of a leaf's run (`head` >= 0).
    @inline(__always) static func runBase(_ head: Int32) -> Int { Int(head & (1 << runBlockBits - 1)) * blockSize }

    /// Size class of a leaf's run (`head` >= 0).
    @inline(__always) static func runClass(_ head: Int32) -> Int32 { head >> runBlockBits }

    /// Whether a freed run of class `k` waits for reuse.
    func hasFreeRun(sizeClass k: Int32) -> Bool { freeRuns[Int(k)] >= 0 }

    /// A free run of class `k`, as a leaf `head`.
    mutating func allocateRun(sizeClass k: Int32) -> Int32 {
        let f = freeRuns[Int(k)]
        if f >= 0 {
            freeRuns[Int(k)] = blockNext[Int(f)]
            return GridIndex.runHead(block: f, sizeClass: k)
        }
        let b = Int32(blockNext.count)
        precondition(Int(b) + (1 << Int(k)) < 1 << Int(GridIndex.runBlockBits), "grid entry storage exhausted")
        blockNext.append(contentsOf: repeatElement(-1, count: 1 << Int(k)))
        entries.append(contentsOf: repeatElement(GridEntry(x: 0, y: 0, z: 0, slot: -1), count: GridIndex.blockSize << Int(k)))
        return GridIndex.runHead(block: b, sizeClass: k)
    }

    mutating func freeRun(_ head: Int32) {
        guard head >= 0 else { return }
        let k = Int(GridIndex.runClass(head)), b = head & (1 << GridIndex.runBlockBits - 1)
        blockNext[Int(b)] = freeRuns[k]
        freeRuns[k] = b
    }

    /// Moves the first `n` entries of leaf `i`'s run into a new run of class `k`.
    mutating func relocate(leaf i: Int, count n: Int, sizeClass k: Int32) {
        let old = nodes[i].head
        let new = allocateRun(sizeClass: k)
        let from = GridIndex.runBase(old), to = GridIndex.runBase(new)
        for j in 0..<n {
            let e = entries[from + j]
            entries[to + j] = e
            pos[Int(e.slot)] = UInt32(to + j)
            entries[from + j].slot = -1
        }
        freeRun(old)
        nodes[i].head = new
    }

    /// Appends an entry to leaf `i` (whose count already includes it).
    @inline(__always) private mutating func append(_ e: GridEntry, leaf i: Int) {
        let c = Int(nodes[i].count) - 1        // entries already listed
        if c == 0 {
            nodes[i].head = allocateRun(sizeClass: 0)
        } else {
            let k = GridIndex.runClass(nodes[i].head)
            if c == GridIndex.blockSize << Int(k) { relocate(leaf: i, count: c, sizeClass: k + 1) }
        }
        let p = GridIndex.runBase(nodes[i].head) + c
        entries[p] = e
        pos[Int(e.slot)] = UInt32(p)
        leafLevel[Int(e.slot)] = UInt8(truncatingIfNeeded: GridIndex.level(nodes[i].key))
    }

    /// Removes the entry at `p` from leaf `i` (whose count was already decremented).
    @inline(__always) private mutating func removeEntry(at p: Int, leaf i: Int) {
        let c = Int(nodes[i].count)             // entries left after this removal
        let head = nodes[i].head
        let last = GridIndex.runBase(head) + c
        if last != p {
            let moved = entries[last]
            entries[p] = moved
            pos[Int(moved.slot)] = UInt32(p)
        }
        entries[last].slot = -1
        let k = GridIndex.runClass(head)
        if c == 0 {
            freeRun(head)
            nodes[i].head = -1
        } else if k > 0 && c <= (GridIndex.blockSize << Int(k)) / 4 {
            relocate(leaf: i, count: c, sizeClass: k - 1)
        }
    }

    /// Calls `body` with each entry of leaf `cell` (one contiguous run).
    @inline(__always) func forEachEntry(_ cell: GridCell, _ body: (GridEntry) -> Void) {
        guard cell.count > 0 else { return }
        let base = GridIndex.runBase(cell.head)
        entries.withUnsafeBufferPointer { es in
            for k in base..<base + Int(cell.count) { body(es[k]) }
        }
    }

    // MARK: Updates

    mutating func insert(_ slot: Int32, x: UInt32, y: UInt32, z: Int32, cls: UInt32) {
        let s = Int(slot)
        if pos.count <= s {
            pos.append(contentsOf: repeatElement(0, count: s + 1 - pos.count))
            leafLevel.append(contentsOf: repeatElement(0, count: s + 1 - leafLevel.count))
        }
        insert(GridEntry(x: x, y: y, z: z, slot: slot), cls: cls, fromLevel: 0)
    }

    /// Adds an entry to the subtree at `start` (the nodes above already count it).
    private mutating func insert(_ e: GridEntry, cls: UInt32, fromLevel start: UInt32) {
        var level = start
        while true {
            let key = GridIndex.key(e.x, e.y, level: level, cls)
            var i = nodes.find(key)
            if i < 0 {
                i = nodes.insertNew(key)
                if level > 0 { setChildBit(GridIndex.key(e.x, e.y, level: level - 2, cls), GridIndex.childBit(e.x, e.y, level: level), true) }
            }
            nodes[i].count += 1
            if e.z < nodes[i].minZ { nodes[i].minZ = e.z }
            if e.z > nodes[i].maxZ { nodes[i].maxZ = e.z }
            if nodes[i].isInternal { level += 2; continue }
            append(e, leaf: i)
            if nodes[i].count > GridIndex.splitAbove && level < GridIndex.maxLevel { split(i, level: level, cls: cls) }
            return
        }
    }

    mutating func setChildBit(_ parent: UInt64, _ bit: Int, _ on: Bool) {
        let p = nodes.find(parent)
        precondition(p >= 0, "grid parent missing")
        var mask = nodes[p].childMask
        if on { mask |= 1 << UInt32(bit) } else { mask &= ~(1 << UInt32(bit)) }
        nodes[p].head = Int32(-2 - Int64(mask))
    }

    /// Turns leaf `i` into an internal node and spreads its entries over its children.
    private mutating func split(_ i: Int, level: UInt32, cls: UInt32) {
        var moving: [GridEntry] = []
        moving.reserveCapacity(Int(nodes[i].count))
        forEachEntry(nodes[i]) { moving.append($0) }
        freeRun(nodes[i].head)
        var lo = Int32.max, hi = Int32.min
        for e in moving { lo = Swift.min(lo, e.z); hi = Swift.max(hi, e.z) }
        nodes[i].head = -2
        nodes[i].minZ = lo; nodes[i].maxZ = hi
        for e in moving { insert(e, cls: cls, fromLevel: level + 2) }
    }

    mutating func remove(_ slot: Int32, x: UInt32, y: UInt32, cls: UInt32) {
        remove(slot, x: x, y: y, cls: cls, fromLevel: 0)
    }

    /// Removes a slot's entry from the subtree at `start` (the nodes above keep counting it).
    private mutating func remove(_ slot: Int32, x: UInt32, y: UInt32, cls: UInt32, fromLevel start: UInt32) {
        let none = UInt32.max
        var level = start
        var emptyFrom = none, mergeAt = none
        while true {
            let i = nodes.find(GridIndex.key(x, y, level: level, cls))
            precondition(i >= 0, "grid node missing for slot \(slot)")
            nodes[i].count -= 1
            let c = nodes[i].count
            if c == 0 { if emptyFrom == none { emptyFrom = level } }
            if nodes[i].isInternal {
                if c > 0 && c <= GridIndex.mergeAtOrBelow && mergeAt == none { mergeAt = level }
                level += 2
                continue
            }
            removeEntry(at: Int(pos[Int(slot)]), leaf: i)
            break
        }
        if emptyFrom != none {
            var l = level
            while true {
                nodes.remove(at: nodes.find(GridIndex.key(x, y, level: l, cls)))
                if l == emptyFrom { break }
                l -= 2
            }
            if emptyFrom > 0 { setChildBit(GridIndex.key(x, y, level: emptyFrom - 2, cls), GridIndex.childBit(x, y, level: emptyFrom), false) }
        }
        if mergeAt != none && (emptyFrom == none || mergeAt < emptyFrom) {
            merge(GridIndex.key(x, y, level: mergeAt, cls))
        }
    }

    /// Collapses the subtree of internal node `key` into one leaf.
    private mutating func merge(_ key: UInt64) {
        var moving: [GridEntry] = []
        var dead: [UInt64] = []
        func collect(_ k: UInt64) {
            let c = nodes[nodes.find(k)]
            if c.isInternal {
                var m = c.childMask
                while m != 0 {
                    let bit = m.trailingZeroBitCount
                    m &= m - 1
                    let ck = GridIndex.childKey(k, bit)
                    dead.append(ck)
                    collect(ck)
                }
            } else {
                forEachEntry(c) { moving.append($0) }
                freeRun(c.head)
            }
        }
        collect(key)
        for k in dead { nodes.remove(at: nodes.find(k)) }
        let i = nodes.find(key)
        var lo = Int32.max, hi = Int32.min
        for e in moving { lo = Swift.min(lo, e.z); hi = Swift.max(hi, e.z) }
        nodes[i].head = -1
        nodes[i].minZ = lo; nodes[i].maxZ = hi
        nodes[i].count = 0
        for e in moving {
            nodes[i].count += 1
            append(e, leaf: i)
        }
    }

    /// Moves a marker between positions/classes and sets its z-index. In place when the leaf
    /// stays the same; otherwise only the levels below the common ancestor change. A move
    /// within the class that keeps the z-index takes `relink`'s path (no node above the
    /// common ancestor is read, none at all within a leaf).
    mutating func move(_ slot: Int32, fromX ox: UInt32, y oy: UInt32, cls oc: UInt32,
                       toX nx: UInt32, y ny: UInt32, z: Int32, cls nc: UInt32) {
        if oc == nc && entries[Int(pos[Int(slot)])].z == z {
            relink(fromX: ox, y: oy, cls: oc, to: GridEntry(x: nx, y: ny, z: z, slot: slot))
            return
        }
        moveFromRoot(slot, fromX: ox, y: oy, cls: oc, toX: nx, y: ny, z: z, cls: nc)
    }

    /// `move(_:fromX:y:cls:toX:y:z:cls:)` by a walk from the root that widens the z bounds of
    /// the nodes it passes (any class or z-index change; tests also compare `relink`'s moves
    /// with it).
    mutating func moveFromRoot(_ slot: Int32, fromX ox: UInt32, y oy: UInt32, cls oc: UInt32,
                               toX nx: UInt32, y ny: UInt32, z: Int32, cls nc: UInt32) {
        let e = GridEntry(x: nx, y: ny, z: z, slot: slot)
        if oc != nc {
            remove(slot, x: ox, y: oy, cls: oc, fromLevel: 0)
            insert(e, cls: nc, fromLevel: 0)
            return
        }
        var level: UInt32 = 0
        while true {
            let k = GridIndex.key(ox, oy, level: level, oc)
            if k != GridIndex.key(nx, ny, level: level, nc) { break }
            let i = nodes.find(k)
            precondition(i >= 0, "grid node missing for slot \(slot)")
            if z < nodes[i].minZ { nodes[i].minZ = z }
            if z > nodes[i].maxZ { nodes[i].maxZ = z }
            if !nodes[i].isInternal {
                entries[Int(pos[Int(slot)])] = e
                return
            }
            level += 2
        }
        remove(slot, x: ox, y: oy, cls: oc, fromLevel: level)
        insert(e, cls: nc, fromLevel: level)
    }

    /// Moves the entry of `e.slot` (of class `cls`, at (ox, oy)) to `e`'s position, `e.z` being
    /// its z-index: the nodes on both positions' paths down to their deepest common level
    /// keep their counts and (conservative) z bounds, so none of them is touched. That level
    /// follows from the coordinates (the highest differing bit of x or y), and the slot's
    /// `leafLevel` tells whether its leaf lies at or above it (the entry stays in its leaf and
    /// is rewritten in place) or below (the node there is internal: the entry leaves its leaf,
    /// removed and inserted again from the next level down, exactly as a walk from the root
    /// would). No node is read for a move within a leaf.
    @inline(__always) private mutating func relink(fromX ox: UInt32, y oy: UInt32, cls: UInt32, to e: GridEntry) {
        let s = Int(e.slot)
        let differ = (ox ^ e.x) | (oy ^ e.y)
        // Keys at level L (the top L bits of x and y) agree for L <= the leading zero bits.
        let common = Swift.min(GridIndex.maxLevel, UInt32(differ.leadingZeroBitCount) & ~1)
        if UInt32(leafLevel[s]) > common {
            remove(e.slot, x: ox, y: oy, cls: cls, fromLevel: common + 2)
            insert(e, cls: cls, fromLevel: common + 2)
            return
        }
        entries[Int(pos[s])] = e
    }

    mutating func removeAll() { self = GridIndex() }

    var approximateBytes: Int {
        nodes.approximateBytes + entries.capacity * MemoryLayout<GridEntry>.stride + blockNext.capacity * 4 + pos.capacity * 4 + leafLevel.capacity
    }

    // MARK: Queries

    @inline(__always) func root(_ cls: UInt32) -> Int { nodes.find(GridIndex.nodeKey(level: 0, cx: 0, cy: 0, cls: cls)) }

    /// Calls `body` for the children of internal node `c` whose rectangles pass `keep`.
    @inline(__always) private func forEachChild(_ c: GridCell, _ keep: (CellRect) -> Bool, _ body: (Int, CellRect) -> Void) {
        var m = c.childMask
        while m != 0 {
            let bit = m.trailingZeroBitCount
            m &= m - 1
            let ck = GridIndex.childKey(c.key, bit)
            let r = GridIndex.rect(ck)
            guard keep(r) else { continue }
            let j = nodes.find(ck)
            if j >= 0 { body(j, r) }
        }
    }

    /// Number of markers of class `cls` whose position lies in `rect` and either in one of
    /// `inner` (counted per node where whole nodes lie inside) or passes `partial`.
    /// (Iterative: a recursive walk would pass the closure's captures down every call.)
    func count(cls: UInt32, rect: CellRect, inner: [CellRect], partial: (GridEntry) -> Bool) -> Int {
        let r = root(cls)
        guard r >= 0 else { return 0 }
        var n = 0
        // Level by level: the children of all of a level's boundary nodes are looked up
        // together (`GridCellTable.find(all:into:)`), so that their cache misses overlap.
        var level: [Int] = [r], children: [UInt64] = []
        var boundaryLeaves: [GridCell] = []
        // Reserved up front, so that a typical walk does not regrow them from one element.
        level.reserveCapacity(256)
        children.reserveCapacity(1024)
        boundaryLeaves.reserveCapacity(256)
        while !level.isEmpty {
            children.removeAll(keepingCapacity: true)
            for i in level {
                let c = nodes[i]
                let cr = GridIndex.rect(c.key)
                if rect.contains(cr) && inner.contains(where: { $0.contains(cr) }) { n += Int(c.count); continue }
                guard c.isInternal else { boundaryLeaves.append(c); continue }
                var m = c.childMask
                while m != 0 {
                    let ck = GridIndex.childKey(c.key, m.trailingZeroBitCount)
                    m &= m - 1
                    if rect.intersects(GridIndex.rect(ck)) { children.append(ck) }
                }
            }
            nodes.find(all: children, into: &level)
        }
        n &+= inner.count == 1
            ? count(inLeaves: boundaryLeaves, rect: rect, sure: inner[0], inner: inner, partial: partial)
            : count(inLeaves: boundaryLeaves, rect: rect, sure: InnerRects(inner), inner: inner, partial: partial)
        return n
    }

    /// The entries of `leaves` that lie in `rect` and in one of `inner` or pass `partial`
    /// (`sure` holds the points of some of `inner`: all of it, or the first four).
    ///
    /// First without a branch on the entries' positions (a boundary leaf's entries fall on both
    /// sides of the edge, so such branches mispredict about half the time, and each
    /// misprediction discards the loads after it): entries in `rect` and `sure` are counted,
    /// and whether a leaf holds others in `rect` is noted; only such leaves (the band between
    /// the viewport widened by the largest and by the smallest icon extent is thin) are read
    /// again, with the exact test. `GridIndex.lanes` leaves are read side by side (entry j of
    /// each, then entry j + 1, ...), so that the cache misses of different leaves overlap
    /// instead of following one another (this scan is bound by those misses).
    private func count<Sure: PointTest>(inLeaves leaves: [GridCell], rect: CellRect, sure: Sure, inner: [CellRect],
                                        partial: (GridEntry) -> Bool) -> Int {
        let lanes = GridIndex.lanes
        var n = 0
        entries.withUnsafeBufferPointer { es in
            withUnsafeTemporaryAllocation(of: (base: Int, count: Int).self, capacity: lanes) { lane in
                var first = 0
                while first < leaves.count {
                    let group = Swift.min(lanes, leaves.count - first)
                    var longest = 0
                    for k in 0..<group {
                        let c = leaves[first + k]
                        lane[k] = (c.count > 0 ? GridIndex.runBase(c.head) : 0, Int(c.count))
                        longest = Swift.max(longest, Int(c.count))
                    }
                    var band: UInt32 = 0   // bit k: lane k holds an entry in `rect` but not in `sure`
                    for j in 0..<longest {
                        for k in 0..<group where j < lane[k].count {
                            let e = es[lane[k].base + j]
                            let r = UInt8(bitPattern: rect.holds(e.x, e.y)), i = UInt8(bitPattern: sure.holds(e.x, e.y))
                            n &+= Int(r & i)
                            band |= UInt32(r & ~i) << UInt32(k)
                        }
                    }
                    while band != 0 {
                        let k = band.trailingZeroBitCount
                        band &= band - 1
                        for e in es[lane[k].base..<lane[k].base + lane[k].count] where rect.holds(e.x, e.y) && !sure.holds(e.x, e.y) {
                            if inner.contains(where: { $0.contains(x: e.x, y: e.y) }) || partial(e) { n &+= 1 }
                        }
                    }
                    first += group
                }
            }
        }
        return n
    }

    /// Leaves whose runs `count(inLeaves:...)` reads side by side.
    static let lanes = 8

    /// Calls `body` with every entry of class `cls` whose position lies in `rect`.
    func forEach(cls: UInt32, rect: CellRect, _ body: (GridEntry) -> Void) {
        _ = forEach(cls: cls, rect: rect, visitingAtMost: .max, body)
    }

    /// `forEach(cls:rect:_:)` that stops before the entry that would make more than `budget`
    /// visits; false when it stopped there (`body` has then seen exactly `budget` entries), true
    /// when it visited every entry in `rect`.
    func forEach(cls: UInt32, rect: CellRect, visitingAtMost budget: Int, _ body: (GridEntry) -> Void) -> Bool {
        let r = root(cls)
        guard r >= 0 else { return true }
        var stack: [Int] = [r]
        var left = budget
        while let i = stack.popLast() {
            let c = nodes[i]
            if c.isInternal {
                forEachChild(c, { rect.intersects($0) }) { j, _ in stack.append(j) }
            } else {
                guard c.count > 0 else { continue }
                let base = GridIndex.runBase(c.head)
                let complete = entries.withUnsafeBufferPointer { es in
                    for k in base..<base + Int(c.count) where rect.contains(x: es[k].x, y: es[k].y) {
                        if left == 0 { return false }
                        left -= 1
                        body(es[k])
                    }
                    return true
                }
                if !complete { return false }
            }
        }
        return true
    }

    /// `forEach(cls:rect:_:)` a leaf at a time: `body` gets the entries of each leaf that lie in
    /// `rect`, as one buffer. A leaf wholly inside `rect` is handed over as its run in `entries`;
    /// one across the edge of `rect` is first copied to `scratch`, only its entries inside.
    /// `body` must not change the grid.
    func forEachRun(cls: UInt32, rect: CellRect, scratch: inout [GridEntry], _ body: (UnsafeBufferPointer<GridEntry>) -> Void) {
        let r = root(cls)
        guard r >= 0 else { return }
        var stack: [(Int, CellRect)] = [(r, GridIndex.rect(nodes[r].key))]
        stack.reserveCapacity(64)
        entries.withUnsafeBufferPointer { es in
            while let (i, cr) = stack.popLast() {
                let c = nodes[i]
                if c.isInternal {
                    forEachChild(c, { rect.intersects($0) }) { j, jr in stack.append((j, jr)) }
                    continue
                }
                guard c.count > 0 else { continue }
                let base = GridIndex.runBase(c.head)
                let run = UnsafeBufferPointer(rebasing: es[base..<base + Int(c.count)])
                if rect.contains(cr) {
                    body(run)
                } else {
                    scratch.removeAll(keepingCapacity: true)
                    for e in run where rect.holds(e.x, e.y) { scratch.append(e) }
                    if !scratch.isEmpty { scratch.withUnsafeBufferPointer(body) }
                }
            }
        }
    }

    /// A node waiting in an ordered search's queue (least `prio` first).
    struct Queued: Comparable {
        var prio: UInt64
        var index: Int32
        static func < (a: Queued, b: Queued) -> Bool { a.prio < b.prio }
    }

    /// Bounds of a node for ordered searches.
    struct NodeBounds {
        var minZ: Int32, maxZ: Int32, y0: UInt32, y1: UInt32
    }

    /// Visits the entries of the given classes whose positions lie in one of `rects`, leaf by
    /// leaf, best-first: by (minZ, y0) ascending, or by (maxZ, y1) descending when `topmost`
    /// (the draw order's bound for the node's markers). Nodes for which `prune` is true are
    /// skipped with their subtrees; `prune` is asked again when a node comes out of the queue,
    /// so it can tighten as `body` collects.
    func ordered(classes: [UInt32], rects: [CellRect], topmost: Bool, prune: (NodeBounds) -> Bool, _ body: (GridEntry) -> Void) {
        var heap = BinaryHeap<Queued>()
        @inline(__always) func priority(_ c: GridCell, _ r: CellRect) -> UInt64 {
            if topmost { return ~(UInt64(UInt32(bitPattern: c.maxZ) ^ 0x8000_0000) << 32 | UInt64(r.y1)) }
            return UInt64(UInt32(bitPattern: c.minZ) ^ 0x8000_0000) << 32 | UInt64(r.y0)
        }
        func push(_ j: Int, _ r: CellRect) {
            let c = nodes[j]
            if prune(NodeBounds(minZ: c.minZ, maxZ: c.maxZ, y0: r.y0, y1: r.y1)) { return }
            heap.push(Queued(prio: priority(c, r), index: Int32(j)))
        }
        let keep = { (r: CellRect) in rects.contains(where: { $0.intersects(r) }) }
        for cls in classes {
            let r = root(cls)
            if r >= 0 { push(r, GridIndex.rect(nodes[r].key)) }
        }
        while let next = heap.pop() {
            let c = nodes[Int(next.index)]
            let cr = GridIndex.rect(c.key)
            if prune(NodeBounds(minZ: c.minZ, maxZ: c.maxZ, y0: cr.y0, y1: cr.y1)) { continue }
            if c.isInternal {
                forEachChild(c, keep) { j, r in push(j, r) }
            } else {
                forEachEntry(c) { e in if rects.contains(where: { $0.contains(x: e.x, y: e.y) }) { body(e) } }
            }
        }
    }
}

extension GridIndex {
    /// Checks the structure (for tests): counts add up, masks match the children, entries lie
    /// in their leaves and within the z bounds, `pos` points at them, leaves above the split
    /// threshold only at the last level, internal nodes above the merge threshold, and every
    /// node is reachable. Returns the problems found and the number of entries per class.
    func validate() -> (problems: [String], counts: [UInt32: Int]) {
        var problems: [String] = []
        var counts: [UInt32: Int] = [:]
        var reached = 0
        func check(_ key: UInt64) -> Int {
            let i = nodes.find(key)
            guard i >= 0 else { problems.append("missing node \(key)"); return 0 }
            reached += 1
            let c = nodes[i]
            let r = GridIndex.rect(key)
            let level = GridIndex.level(key)
            var n = 0
            if c.isInternal {
                if c.count <= GridIndex.mergeAtOrBelow { problems.append("internal node \(key) level \(level) holds only \(c.count)") }
                if c.childMask == 0 { problems.append("internal node \(key) without children") }
                for bit in 0..<16 where c.childMask & (1 << UInt32(bit)) != 0 {
                    let ck = GridIndex.childKey(key, bit)
                    let ci = nodes.find(ck)
                    if ci >= 0 && (nodes[ci].minZ < c.minZ || nodes[ci].maxZ > c.maxZ) { problems.append("child z bounds exceed parent's at \(ck)") }
                    n += check(ck)
                }
                for bit in 0..<16 where c.childMask & (1 << UInt32(bit)) == 0 {
                    if nodes.find(GridIndex.childKey(key, bit)) >= 0 { problems.append("unlisted child \(bit) of \(key)") }
                }
            } else {
                if c.count > GridIndex.splitAbove && level < GridIndex.maxLevel { problems.append("leaf \(key) level \(level) holds \(c.count)") }
                if c.count > 0 && Int(c.count) > GridIndex.blockSize << Int(GridIndex.runClass(c.head)) { problems.append("leaf \(key) overflows its run") }
                if (c.count == 0) != (c.head == -1) { problems.append("leaf \(key) with \(c.count) entries has head \(c.head)") }
                forEachEntry(c) { e in
                    n += 1
                    if !r.contains(x: e.x, y: e.y) { problems.append("entry of slot \(e.slot) outside its leaf") }
                    if e.z < c.minZ || e.z > c.maxZ { problems.append("entry z \(e.z) outside [\(c.minZ), \(c.maxZ)]") }
                    if e.slot < 0 || Int(e.slot) >= pos.count || entries[Int(pos[Int(e.slot)])].slot != e.slot { problems.append("pos of slot \(e.slot) wrong") }
                    else if UInt32(leafLevel[Int(e.slot)]) != level { problems.append("leafLevel of slot \(e.slot) is \(leafLevel[Int(e.slot)]), its leaf's \(level)") }
                }
            }
            if n != Int(c.count) { problems.append("node \(key) level \(level) counts \(c.count), holds \(n)") }
            return n
        }
        for cls: UInt32 in 0...2 {
            let k = GridIndex.nodeKey(level: 0, cx: 0, cy: 0, cls: cls)
            if nodes.find(k) >= 0 { counts[cls] = check(k) }
        }
        if reached != nodes.occupied { problems.append("\(nodes.occupied - reached) unreachable nodes") }
        return (problems, counts)
    }

    /// Deepest level of any node (for tests).
    var deepestLevel: UInt32 {
        nodes.cells.reduce(0) { $1.key == GridCellTable.emptyKey ? $0 : Swift.max($0, GridIndex.level($1.key)) }
    }
}

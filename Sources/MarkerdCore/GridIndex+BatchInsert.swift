/// Inserting many new entries at once (a bulk upsert of new markers): level by level, each node
/// the batch reaches looked up once for all its new entries, and the look-ups of one level made
/// side by side, so that their cache misses overlap (one by one, each insert into a large grid
/// is a chain of cache misses in the node table, one per level).
extension GridIndex {
    /// Batches of at least this many entries take the level-by-level insert (below it, one
    /// insert after another in the order of `insertOrderKey`).
    static let levelwiseInsertAbove = 64

    /// Nodes `insertLevelwise` looks up side by side.
    static let lookupChunk = 256

    /// Inserts each `items[k]` (new slots, not in the index) like `insert(_:x:y:z:cls:)`: the
    /// result has the same nodes (keys, leaf or internal, child masks, counts, z bounds) and the
    /// same entries per leaf as inserting them one by one in any order. Inside a leaf, the new
    /// entries follow the old ones in spatial order (`insertOrderKey`: the Morton order of their
    /// level-16 cells, `RadixSort.order`, ties in the given
    /// order), as one-by-one inserts in that order would list them; only the run layout (which
    /// blocks each leaf's run takes) differs.
    /// `sorted`: the items already come in that order (`MarkerBatch.Layout.spatial`), not sorted again.
    mutating func insert(_ items: [(entry: GridEntry, cls: UInt32)], sorted presorted: Bool = false) {
        guard items.count > 1 else {
            for (e, cls) in items { insert(e.slot, x: e.x, y: e.y, z: e.z, cls: cls) }
            return
        }
        // Room ahead (`Array.reserveGrowing`, 4x at a time): a slot's `pos` and `leafLevel`, and
        // about two run entries per new entry (a run moves to one of twice the size when full).
        let slots = 1 + Int(items.lazy.map(\.entry.slot).max()!)
        if slots > pos.count {
            pos.reserveGrowing(slots - pos.count)
            leafLevel.reserveGrowing(slots - leafLevel.count)
        }
        entries.reserveGrowing(2 * items.count)
        blockNext.reserveGrowing(2 * items.count / GridIndex.blockSize)
        let sorted = presorted ? items : RadixSort.order(items.map { item in
            GridIndex.insertOrderKey(x: item.entry.x, y: item.entry.y)
        }).map { items[Int($0)] }
        if sorted.count < Self.levelwiseInsertAbove {
            for (e, cls) in sorted { insert(e.slot, x: e.x, y: e.y, z: e.z, cls: cls) }
        } else {
            if slots > pos.count {
                pos.append(contentsOf: repeatElement(0, count: slots - pos.count))
                leafLevel.append(contentsOf: repeatElement(0, count: slots - leafLevel.count))
            }
            insertLevelwise(sorted)
        }
    }

    /// The order of `insert(_:)`: the interleaved top 16 bits of y and x (the Morton code of
    /// the level-16 cell, 32 bits), as `MarkerBatch.Layout.spatial` orders a batch. In that
    /// order the entries of each node down to level 16 lie next to each other, so
    /// `insertLevelwise` hands them on to the children without moving them.
    @inline(__always) static func insertOrderKey(x: UInt32, y: UInt32) -> UInt64 {
        SpatialKey.morton(x: x >> 16, y: y >> 16)
    }

    /// A node `insertLevelwise` reaches, with the new entries of its subtree: `lo..<hi` of the
    /// batch's entry buffer (grouped by node at each level, see `handOn`).
    private struct Reach {
        var key: UInt64
        var lo: Int32
        var hi: Int32
    }

    /// `insert(_:sorted:)` for new entries (slots below `pos.count`), level by level from the
    /// roots: each node reached is looked up once (side by side with the others of its level,
    /// `GridCellTable.find(_:into:)`), counts its new entries and widens its z bounds by theirs;
    /// an internal node hands them on to its children (`handOn`: in spatial order they are
    /// grouped by child already; a child's entries keep their order), a leaf appends them to its run (moved
    /// once to the size class they need). What would change the node table (a node absent so far,
    /// built whole by `buildNode`; a leaf passing `splitAbove`, whose old and new entries go into
    /// new children) waits until the level's look-ups are used. The nodes and leaf contents are
    /// those of one-by-one inserts: a node is internal exactly when its count passes `splitAbove`
    /// above `maxLevel` (counts only grow), and a split node's z bounds are those of its entries,
    /// as `split` sets them.
    private mutating func insertLevelwise(_ items: [(entry: GridEntry, cls: UInt32)]) {
        let n = items.count
        var cur = [GridEntry](repeating: GridEntry(x: 0, y: 0, z: 0, slot: -1), count: n)
        var scratch = cur
        // Level 0: the roots, one per class (a stable counting sort by class).
        var reach: [Reach] = []
        do {
            var byClass = [Int](repeating: 0, count: 4)
            for (_, cls) in items { byClass[Int(cls)] += 1 }
            var next = [Int](repeating: 0, count: 4)
            var start = 0
            for c in 0..<4 {
                next[c] = start
                if byClass[c] > 0 {
                    reach.append(Reach(key: GridIndex.nodeKey(level: 0, cx: 0, cy: 0, cls: UInt32(c)),
                                       lo: Int32(start), hi: Int32(start + byClass[c])))
                }
                start += byClass[c]
            }
            for (e, cls) in items {
                cur[next[Int(cls)]] = e
                next[Int(cls)] += 1
            }
        }
        var level: UInt32 = 0
        var keys: [UInt64] = [], found = [Int](repeating: -1, count: Self.lookupChunk)
        keys.reserveCapacity(Self.lookupChunk)
        while !reach.isEmpty {
            var deeper: [Reach] = [], absent: [Reach] = [], splitting: [Reach] = []
            deeper.reserveCapacity(reach.count * 2)
            cur.withUnsafeMutableBufferPointer { a in
                scratch.withUnsafeMutableBufferPointer { b in
                    var from = 0
                    while from < reach.count {
                        let to = Swift.min(reach.count, from + Self.lookupChunk)
                        keys.removeAll(keepingCapacity: true)
                        for r in reach[from..<to] { keys.append(r.key) }
                        keys.withUnsafeBufferPointer { k in
                            found.withUnsafeMutableBufferPointer { f in nodes.find(k, into: f) }
                        }
                        for m in from..<to {
                            let r = reach[m], i = found[m - from]
                            guard i >= 0 else { absent.append(r); continue }
                            let lo = Int(r.lo), hi = Int(r.hi), g = hi - lo
                            let node = nodes[i]
                            if !node.isInternal && Int(node.count) + g > Int(GridIndex.splitAbove) && level < GridIndex.maxLevel {
                                splitting.append(r)
                                continue
                            }
                            var minZ = node.minZ, maxZ = node.maxZ
                            for k in lo..<hi {
                                let z = a[k].z
                                if z < minZ { minZ = z }
                                if z > maxZ { maxZ = z }
                            }
                            nodes[i].count += UInt32(g)
                            nodes[i].minZ = minZ
                            nodes[i].maxZ = maxZ
                            if node.isInternal {
                                handOn(a, b, lo: lo, hi: hi, key: r.key, childLevel: level + 2, into: &deeper)
                            } else {
                                appendRun(UnsafeBufferPointer(rebasing: a[lo..<hi]), leaf: i, had: Int(node.count), level: level)
                            }
                        }
                        from = to
                    }
                    // Changes to the node table (its indices move): leaves that split, then new subtrees.
                    for r in splitting { split(r, a, level: level) }
                    for r in absent {
                        buildNode(a, b, lo: Int(r.lo), hi: Int(r.hi), key: r.key, level: level)
                        if level > 0 { setChildBit(GridIndex.parentKey(r.key), GridIndex.childBit(of: r.key), true) }
                    }
                }
            }
            reach = deeper
            level += 2
        }
    }

    /// Key of the parent of a node of level > 0 (the inverse of `childKey`).
    @inline(__always) static func parentKey(_ key: UInt64) -> UInt64 {
        let level = key >> 54
        let cx = (key >> 2) & 0x3FF_FFFF, cy = (key >> 28) & 0x3FF_FFFF
        return (level - 2) << 54 | (cy >> 2) << 28 | (cx >> 2) << 2 | (key & 3)
    }

    /// Which child (0...15) of its parent a node of level > 0 is (`childBit(_:_:level:)` of any
    /// point in it).
    @inline(__always) static func childBit(of key: UInt64) -> Int {
        Int((key >> 28) & 3) << 2 | Int((key >> 2) & 3)
    }

    /// Groups `a[lo..<hi]` (entries of the internal node `key`) by child, in order within each
    /// child, and lists the children reached with their ranges. Entries in spatial order
    /// (`insertOrderKey`) are grouped already down to level 16: then nothing moves. Else a
    /// counting sort through `b[lo..<hi]` (scratch) groups them.
    private func handOn(_ a: UnsafeMutableBufferPointer<GridEntry>, _ b: UnsafeMutableBufferPointer<GridEntry>,
                        lo: Int, hi: Int, key: UInt64, childLevel: UInt32, into deeper: inout [Reach]) {
        var grouped = true
        let listed = deeper.count
        var last = GridIndex.childBit(a[lo].x, a[lo].y, level: childLevel), start = lo
        for k in lo + 1..<hi {
            let bit = GridIndex.childBit(a[k].x, a[k].y, level: childLevel)
            if bit != last {
                if bit < last { grouped = false; break }
                deeper.append(Reach(key: GridIndex.childKey(key, last), lo: Int32(start), hi: Int32(k)))
                last = bit
                start = k
            }
        }
        if grouped {
            deeper.append(Reach(key: GridIndex.childKey(key, last), lo: Int32(start), hi: Int32(hi)))
            return
        }
        deeper.removeSubrange(listed...)    // not grouped: the children listed so far are listed again below
        var counts = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &counts) { raw in
            let count = raw.bindMemory(to: Int.self)
            for k in lo..<hi { count[GridIndex.childBit(a[k].x, a[k].y, level: childLevel)] += 1 }
            var start = lo
            for bit in 0..<16 {
                let c = count[bit]
                if c > 0 { deeper.append(Reach(key: GridIndex.childKey(key, bit), lo: Int32(start), hi: Int32(start + c))) }
                count[bit] = start
                start += c
            }
            for k in lo..<hi {
                let e = a[k]
                let bit = GridIndex.childBit(e.x, e.y, level: childLevel)
                b[count[bit]] = e
                count[bit] += 1
            }
            for k in lo..<hi { a[k] = b[k] }
        }
    }

    /// Appends `new` to leaf `i` (of `level`), which listed `had` entries and already counts the
    /// new ones: into its run, moved first to the smallest size class that holds them all (the
    /// class one-by-one appends grow it to).
    private mutating func appendRun(_ new: UnsafeBufferPointer<GridEntry>, leaf i: Int, had: Int, level: UInt32) {
        let need = had + new.count
        var k: Int32 = had == 0 ? 0 : GridIndex.runClass(nodes[i].head)
        while GridIndex.blockSize << Int(k) < need { k += 1 }
        if had == 0 {
            nodes[i].head = allocateRun(sizeClass: k)
        } else if k != GridIndex.runClass(nodes[i].head) {
            relocate(leaf: i, count: had, sizeClass: k)
        }
        let base = GridIndex.runBase(nodes[i].head) + had
        let depth = UInt8(truncatingIfNeeded: level)
        for (j, e) in new.enumerated() {
            entries[base + j] = e
            pos[Int(e.slot)] = UInt32(base + j)
            leafLevel[Int(e.slot)] = depth
        }
    }

    /// Turns the leaf of `r` (of `level`), whose old entries and `a[r.lo..<r.hi]` pass
    /// `splitAbove`, into an internal node whose children `buildNode` makes from them (old ones
    /// first, each child's in order, as one-by-one inserts and `split` would list them).
    private mutating func split(_ r: Reach, _ a: UnsafeMutableBufferPointer<GridEntry>, level: UInt32) {
        var i = nodes.find(r.key)
        var all: [GridEntry] = []
        all.reserveCapacity(Int(nodes[i].count) + Int(r.hi - r.lo))
        forEachEntry(nodes[i]) { all.append($0) }
        for k in Int(r.lo)..<Int(r.hi) { all.append(a[k]) }
        freeRun(nodes[i].head)
        var lo = Int32.max, hi = Int32.min
        for e in all { lo = Swift.min(lo, e.z); hi = Swift.max(hi, e.z) }
        nodes[i].count = UInt32(all.count)
        nodes[i].minZ = lo
        nodes[i].maxZ = hi
        var scratch = all
        var children: [Reach] = []
        var mask: UInt32 = 0
        all.withUnsafeMutableBufferPointer { x in
            scratch.withUnsafeMutableBufferPointer { y in
                handOn(x, y, lo: 0, hi: x.count, key: r.key, childLevel: level + 2, into: &children)
                for c in children {
                    buildNode(x, y, lo: Int(c.lo), hi: Int(c.hi), key: c.key, level: level + 2)
                    mask |= 1 << UInt32(GridIndex.childBit(of: c.key))
                }
            }
        }
        i = nodes.find(r.key)
        nodes[i].head = Int32(-2 - Int64(mask))
    }
}

/// Building a whole grid in one pass (restoring a snapshot into an empty layer).
extension GridIndex {
    /// True when nothing was ever inserted (a new index or one after `removeAll`): the
    /// precondition of `bulkLoad`.
    var isPristine: Bool { nodes.occupied == 0 && entries.isEmpty }

    /// Builds the index of `entries` (slots unique, classes given by `byClass`' position:
    /// `byClass[c]` holds the entries of class `c`) top-down in one pass per level: each node's
    /// entries are partitioned into its 16 children by a counting sort, a node becomes internal
    /// exactly when it holds more than `splitAbove` entries above `maxLevel`, and leaves get their
    /// blocks filled directly. The result has the same nodes (keys, leaf or internal, child
    /// masks, counts, z bounds) and the same entries per leaf as inserting the entries one by one
    /// in any order; only the order of entries inside a leaf and the block layout differ (no
    /// free blocks are left over from splits).
    ///
    /// Costs O(n * depth) sequential work plus one hash-table insert per node; needs a scratch
    /// copy of the largest class (16 bytes per entry) while it runs. `byClass` is consumed (left
    /// reordered). Precondition: `isPristine`.
    mutating func bulkLoad(_ byClass: inout [[GridEntry]]) {
        precondition(isPristine, "bulkLoad needs an empty grid")
        var total = 0, maxSlot: Int32 = -1, largest = 0
        for c in byClass.indices {
            total += byClass[c].count
            largest = Swift.max(largest, byClass[c].count)
            for e in byClass[c] { maxSlot = Swift.max(maxSlot, e.slot) }
        }
        pos = [UInt32](repeating: 0, count: Int(maxSlot) + 1)
        leafLevel = [UInt8](repeating: 0, count: Int(maxSlot) + 1)
        entries.reserveCapacity(total + total / 2 + GridIndex.blockSize)
        var scratch = [GridEntry](repeating: GridEntry(x: 0, y: 0, z: 0, slot: -1), count: largest)
        for c in byClass.indices where !byClass[c].isEmpty {
            let root = GridIndex.nodeKey(level: 0, cx: 0, cy: 0, cls: UInt32(c))
            byClass[c].withUnsafeMutableBufferPointer { a in
                scratch.withUnsafeMutableBufferPointer { s in
                    buildNode(a, s, lo: 0, hi: a.count, key: root, level: 0)
                }
            }
        }
    }

    /// Creates node `key` (of `level`) for the entries `a[lo..<hi]` and, recursively, its subtree
    /// (`scratch[lo..<hi]` is free to use; either range may be left reordered).
    mutating func buildNode(_ a: UnsafeMutableBufferPointer<GridEntry>, _ scratch: UnsafeMutableBufferPointer<GridEntry>,
                                    lo: Int, hi: Int, key: UInt64, level: UInt32) {
        let n = hi - lo
        var minZ = Int32.max, maxZ = Int32.min
        let isInternal = n > Int(GridIndex.splitAbove) && level < GridIndex.maxLevel
        var counts = (0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0)
        withUnsafeMutableBytes(of: &counts) { raw in
            let count = raw.bindMemory(to: Int.self)
            let childLevel = level + 2
            for k in lo..<hi {
                let e = a[k]
                if e.z < minZ { minZ = e.z }
                if e.z > maxZ { maxZ = e.z }
                if isInternal { count[GridIndex.childBit(e.x, e.y, level: childLevel)] += 1 }
            }
        }
        let i = nodes.insertNew(key)
        nodes[i].count = UInt32(n)
        nodes[i].minZ = minZ
        nodes[i].maxZ = maxZ
        guard isInternal else {
            fillLeaf(i, level: level, a, lo: lo, hi: hi)
            return
        }
        // Counting sort of the entries by child into `scratch`, then the children in order.
        var starts = [Int](repeating: 0, count: 17)
        var mask: UInt32 = 0
        withUnsafeBytes(of: &counts) { raw in
            let count = raw.bindMemory(to: Int.self)
            starts[0] = lo
            for b in 0..<16 {
                starts[b + 1] = starts[b] + count[b]
                if count[b] > 0 { mask |= 1 << UInt32(b) }
            }
        }
        nodes[i].head = Int32(-2 - Int64(mask))
        var next = starts
        let childLevel = level + 2
        for k in lo..<hi {
            let e = a[k]
            let b = GridIndex.childBit(e.x, e.y, level: childLevel)
            scratch[next[b]] = e
            next[b] += 1
        }
        // The children's entries now sit in `scratch`: it and `a` swap roles for the subtree.
        var m = mask
        while m != 0 {
            let b = m.trailingZeroBitCount
            m &= m - 1
            buildNode(scratch, a, lo: starts[b], hi: starts[b + 1], key: GridIndex.childKey(key, b), level: childLevel)
        }
    }

    /// Gives leaf `i` (of `level`) a run holding `a[lo..<hi]`, of the size class `append`
    /// would have grown it to: a free run of that class if there is one (a bulk insert into a
    /// grid that freed runs, see `insertLevelwise`), else a new one at the end.
    private mutating func fillLeaf(_ i: Int, level: UInt32, _ a: UnsafeMutableBufferPointer<GridEntry>, lo: Int, hi: Int) {
        let n = hi - lo
        guard n > 0 else { nodes[i].head = -1; return }
        var k: Int32 = 0
        while GridIndex.blockSize << Int(k) < n { k += 1 }
        let head: Int32
        let base: Int
        if hasFreeRun(sizeClass: k) {
            head = allocateRun(sizeClass: k)
            base = GridIndex.runBase(head)
            for j in 0..<n { entries[base + j] = a[lo + j] }
        } else {
            head = GridIndex.runHead(block: Int32(blockNext.count), sizeClass: k)
            blockNext.append(contentsOf: repeatElement(-1, count: 1 << Int(k)))
            base = entries.count
            entries.append(contentsOf: UnsafeBufferPointer(rebasing: a[lo..<hi]))
            entries.append(contentsOf: repeatElement(GridEntry(x: 0, y: 0, z: 0, slot: -1), count: (GridIndex.blockSize << Int(k)) - n))
        }
        for j in 0..<n {
            pos[Int(a[lo + j].slot)] = UInt32(base + j)
            leafLevel[Int(a[lo + j].slot)] = UInt8(truncatingIfNeeded: level)
        }
        nodes[i].head = head
    }
}

extension GridIndex {
    /// Child bits (dy * 4 + dx, see `childKey`) in the Morton order of their cells
    /// (`SpatialKey.morton`): a node's children visited in this order cover consecutive key ranges.
    static let mortonChildren: [Int] = (0..<16).map { m in
        let dx = (m & 1) | (m >> 2 & 1) << 1, dy = (m >> 1 & 1) | (m >> 3 & 1) << 1
        return dy * 4 + dx
    }

    /// The leaves of one class that intersect some rectangles, in ascending Morton order of
    /// their key ranges (leaves are disjoint aligned squares, so their ranges do not overlap),
    /// found by a depth-first walk that skips subtrees outside the rectangles or wholly before
    /// `from`. Valid while the grid does not change. Cost: the nodes on the way to the leaves
    /// it returns (a hash look-up each), so a caller that stops early pays only for what it read.
    struct SpatialWalk {
        private let rects: [CellRect]
        private let from: UInt64
        /// Nodes still to visit, the next one last.
        private var stack: [Int] = []

        /// - from: leaves whose keys all lie below this Morton key are skipped.
        init(_ grid: GridIndex, cls: UInt32, rects: [CellRect], from: UInt64) {
            self.rects = rects
            self.from = from
            let r = grid.root(cls)
            if r >= 0 { stack.append(r) }
        }

        /// The next leaf (non-empty), or nil when the walk is over.
        mutating func next(_ grid: GridIndex) -> GridCell? {
            while let i = stack.popLast() {
                let c = grid.nodes[i]
                guard c.isInternal else {
                    if c.count > 0 { return c }
                    continue
                }
                let mask = c.childMask
                // Reverse Morton order onto the stack, so the first child comes off first.
                for bit in GridIndex.mortonChildren.reversed() where mask & (1 << UInt32(bit)) != 0 {
                    let ck = GridIndex.childKey(c.key, bit)
                    let r = GridIndex.rect(ck)
                    guard SpatialKey.morton(x: r.x1, y: r.y1) >= from, rects.contains(where: { $0.intersects(r) }) else { continue }
                    let j = grid.nodes.find(ck)
                    if j >= 0 { stack.append(j) }
                }
            }
            return nil
        }
    }
}

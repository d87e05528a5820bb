// Grid nodes for the tile renderer's sweep (`TileRenderer`): whole subtrees of static markers,
// with their bounds, so that a dense tile can leave out the markers of a node whose every
// possible pixel later draws already settle without visiting them.

/// A node of the layer's grid of static markers: its world rectangle (inclusive), how many markers
/// its subtree holds and conservative bounds of their z-indexes. Valid while the layer is not
/// changed.
public struct TileSweepNode: Sendable {
    /// Index in the grid's node table.
    let index: Int32
    public let minX: UInt32, minY: UInt32, maxX: UInt32, maxY: UInt32
    public let count: Int
    public let minZ: Int32, maxZ: Int32
    /// A leaf lists its markers (`forEachStaticMarker(inLeaf:)`); other nodes have children.
    public let isLeaf: Bool
    /// The grid cell's `head` (a leaf's entry run), kept so that reading a leaf's markers does
    /// not look its cell up again (a random read of the node table per leaf).
    let head: Int32
}

extension MarkerLayer {
    private func sweepNode(_ i: Int) -> TileSweepNode {
        let c = grid.nodes[i]
        let r = GridIndex.rect(c.key)
        return TileSweepNode(index: Int32(i), minX: r.x0, minY: r.y0, maxX: r.x1, maxY: r.y1, count: Int(c.count),
                             minZ: c.minZ, maxZ: c.maxZ, isLeaf: !c.isInternal, head: c.head)
    }

    /// The root of the static markers' grid (the whole world), or nil when there are none.
    /// Static-class markers are static at any time (visible, not draggable, not animating);
    /// markers whose animation ended but was not expired yet are in `forEachEndedAnimation`.
    public var staticSweepRoot: TileSweepNode? {
        let i = grid.nodes.find(GridIndex.nodeKey(level: 0, cx: 0, cy: 0, cls: GridIndex.Class.staticMarker.rawValue))
        return i < 0 ? nil : sweepNode(i)
    }

    /// Calls `body` with each child of an inner node.
    public func forEachChild(of node: TileSweepNode, _ body: (TileSweepNode) -> Void) {
        let c = grid.nodes[Int(node.index)]
        guard c.isInternal else { return }
        var m = c.childMask
        while m != 0 {
            let bit = m.trailingZeroBitCount
            m &= m - 1
            let j = grid.nodes.find(GridIndex.childKey(c.key, bit))
            if j >= 0 { body(sweepNode(j)) }
        }
    }

    /// Calls `body(slot, x, y, zIndex)` with each marker of a leaf whose world y lies in
    /// `y0...y1`, from the grid's entry alone (the style is not read; see `staticStyle(slot:)`).
    public func forEachStaticMarker(inLeaf node: TileSweepNode, y0: UInt32, y1: UInt32,
                                    _ body: (Int32, UInt32, UInt32, Int32) -> Void) {
        guard node.isLeaf, node.count > 0 else { return }
        let base = GridIndex.runBase(node.head)
        grid.entries.withUnsafeBufferPointer { es in
            for k in base..<base + node.count {
                let e = es[k]
                if e.y >= y0 && e.y <= y1 { body(e.slot, e.x, e.y, e.z) }
            }
        }
    }

    /// How many markers of a leaf have world y in `y0...y1` (what `forEachStaticMarker(inLeaf:y0:y1:_:)`
    /// visits; 0 when `y0 > y1`). The loop does nothing else and has no branch on what it
    /// reads, so the processor overlaps the reads of successive leaves: counting the leaves a
    /// sweep is about to open, then visiting them, costs about one memory latency per batch
    /// instead of one per leaf (a branch on each loaded y, mispredicted half the time on
    /// unsorted entries, would wait for every load).
    public func countStaticMarkers(inLeaf node: TileSweepNode, y0: UInt32, y1: UInt32) -> Int {
        guard node.isLeaf, node.count > 0, y0 <= y1 else { return 0 }
        let base = GridIndex.runBase(node.head)
        let span = y1 &- y0
        return grid.entries.withUnsafeBufferPointer { es in
            var n = 0
            for k in base..<base + node.count { n &+= es[k].y &- y0 <= span ? 1 : 0 }
            return n
        }
    }

    /// The style index of a marker visited by `forEachStaticMarker(inLeaf:where:_:)`.
    public func staticStyle(slot: Int32) -> UInt32 { table.style[Int(slot)] }

    /// Calls `body` with each marker that is static at `now` but not in the static grid (its
    /// animation ended and was not expired yet), wherever it is.
    public func forEachEndedAnimation(now: Int64, _ body: (TileCandidate) -> Void) {
        let all = CellRect(x0: 0, y0: 0, x1: .max, y1: .max)
        grid.forEach(cls: GridIndex.Class.live.rawValue, rect: all) { e in
            if isStatic(e.slot, now: now) { body(candidate(e.slot)) }
        }
    }
}

extension StyleTable {
    /// Calls `body` with the index and style of every style in use (any order).
    public func forEachInUse(_ body: (UInt32, IconStyle) -> Void) {
        for i in 0..<styleSlots where isInUse(UInt32(i)) { body(UInt32(i), style(at: UInt32(i))) }
    }
}

extension TileCandidate {
    /// A candidate from its fields (for the sweep's markers kept in a compact form).
    public static func make(slot: Int32, x: UInt32, y: UInt32, style: UInt32, zIndex: Int32) -> TileCandidate {
        TileCandidate(slot: slot, x: x, y: y, style: style, zIndex: zIndex)
    }
}

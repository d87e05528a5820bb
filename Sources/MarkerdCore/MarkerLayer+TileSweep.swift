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
    /// A leaf lists its markers (`withStaticEntries(inLeaf:_:)`); other nodes have children.
    public let isLeaf: Bool
    /// The grid cell's `head` (a leaf's entry run), kept so that reading a leaf's markers does
    /// not look its cell up again (a random read of the node table per leaf).
    let head: Int32
}

/// A marker of a leaf as `MarkerLayer.withStaticEntries(inLeaf:_:)` lends it: its world
/// position, z-index and slot (the grid's entry, which has this layout).
@frozen public struct TileSweepEntry: Sendable {
    public let x: UInt32
    public let y: UInt32
    public let z: Int32
    public let slot: Int32
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

    /// Calls `body` with a leaf's entries (every marker of the leaf, in no particular order),
    /// read in place: for loops that the caller's module compiles together with its own work
    /// (no call per marker). Empty for inner nodes. The buffer is valid only during `body`.
    public func withStaticEntries<R>(inLeaf node: TileSweepNode, _ body: (UnsafeBufferPointer<TileSweepEntry>) -> R) -> R {
        guard node.isLeaf, node.count > 0 else { return body(UnsafeBufferPointer(start: nil, count: 0)) }
        // Same fields in the same order (constants: checked when compiled with optimisation).
        precondition(MemoryLayout<TileSweepEntry>.stride == MemoryLayout<GridEntry>.stride
            && MemoryLayout<TileSweepEntry>.size == MemoryLayout<GridEntry>.size)
        let base = GridIndex.runBase(node.head), n = node.count
        return grid.entries.withUnsafeBufferPointer { es in
            UnsafeRawPointer(es.baseAddress! + base).withMemoryRebound(to: TileSweepEntry.self, capacity: n) {
                body(UnsafeBufferPointer(start: $0, count: n))
            }
        }
    }

    /// The style index of a marker of `withStaticEntries(inLeaf:_:)` (by its slot).
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

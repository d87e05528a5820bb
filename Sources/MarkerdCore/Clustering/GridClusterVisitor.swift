/// A stored cell of a `GridClusterIndex` as a walk hands it to a `GridClusterVisitor`: the cell's
/// place in the index's arena and its stamp, which changes whenever anything in the cell's subtree
/// changes (a point added, removed, moved or upserted again at its position below it, or the cell
/// freed and reused).
///
/// Within one `GridClusterIndex.generation`, equal (cell, stamp) pairs mean an unchanged subtree:
/// the items a walk emits below the cell at a given target zoom are the same. Different
/// generations (another index, or the same after its 2^32 - 1 stamps ran out) share nothing.
/// Only meaningful for one line of history of one index value: two copies of an index that are
/// changed separately can reach equal stamps with different contents.
public struct GridNodeStamp: Sendable, Hashable {
    /// The cell's index in the arena (reused after the cell is freed).
    public let cell: Int32
    /// The index's mutation counter when the subtree last changed.
    public let stamp: UInt32
    /// The cell's zoom.
    public let zoom: Int
}

/// Receives the items of a `GridClusterIndex` walk (`GridClusterIndex.visit(in:zoom:_:)`) in the
/// output order of `clusters(in:zoom:)`.
///
/// Subtrees: before the items of a stored cell whose whole output at the target zoom does not
/// depend on the box (a cell of the target zoom intersecting the box, or a coarser cell lying wholly
/// inside it), the walk calls `enterSubtree`; returning true means the visitor produced those items
/// itself (for example from a memo of an earlier walk with the same `GridNodeStamp`) and the walk
/// skips them; otherwise the walk emits them and then calls `leaveSubtree` with the same node.
/// Entered subtrees nest (a cell of the target zoom inside a coarser cell wholly inside the box).
/// Walks above the index's max zoom (points filtered exactly) never enter subtrees.
///
/// Blocks: a visitor whose `blockLevels` is B > 0 (at most 3) is handed, at a target zoom >= B,
/// every stored cell of zoom `target - B` that intersects the box (on the box's edge or inside
/// it) as one block of 2^B x 2^B target cells instead of cell by cell: `enterBlock` with the
/// mask of the block's target cells that intersect the box; returning true means the visitor
/// produced the items of those cells itself (for example from a memo of the whole block: a
/// block's output, like a subtree's, depends only on its `GridNodeStamp`); otherwise the walk
/// emits the items of EVERY non-empty target cell of the block, in output order, calling
/// `blockChild(_:inBox:)` before each cell's items (the visitor must drop the items of cells
/// outside the box), then `leaveBlock`. Cells inside a block are never entered as subtrees.
public protocol GridClusterVisitor {
    /// Whether the walk should compute each cluster's expansion zoom (`visitCluster`'s argument is
    /// maxZoom + 1 otherwise).
    var wantsExpansionZooms: Bool { get }
    /// When it becomes true, the walk stops (it may still emit a few items and leave the subtrees
    /// it entered, whose output is then incomplete).
    var isDone: Bool { get }
    mutating func enterSubtree(_ node: GridNodeStamp, target: Int) -> Bool
    mutating func leaveSubtree(_ node: GridNodeStamp, target: Int)
    /// Zooms between a block's cell and its target cells (0, the default: no blocks; at most 3).
    var blockLevels: Int { get }
    /// A block (see above): `mask` has bit i set when the block's target cell i (in output
    /// order: the Morton index of its offset in the block, x in the even bits) intersects the box.
    mutating func enterBlock(_ node: GridNodeStamp, target: Int, mask: UInt64) -> Bool
    /// The items that follow, up to the next `blockChild` or `leaveBlock`, are those of the
    /// block's target cell `index`; `inBox`: whether that cell intersects the box.
    mutating func blockChild(_ index: Int, inBox: Bool)
    mutating func leaveBlock(_ node: GridNodeStamp, target: Int)
    /// A cluster and its expansion zoom (see `GridClusterIndex.expansionZoom(of:)`).
    mutating func visitCluster(_ cluster: GridCluster, expansionZoom: Int)
    /// An unclustered point.
    mutating func visitPoint(_ point: ClusterPoint)
}

extension GridClusterVisitor {
    public var wantsExpansionZooms: Bool { true }
    public var isDone: Bool { false }
    public mutating func enterSubtree(_ node: GridNodeStamp, target: Int) -> Bool { false }
    public mutating func leaveSubtree(_ node: GridNodeStamp, target: Int) {}
    public var blockLevels: Int { 0 }
    public mutating func enterBlock(_ node: GridNodeStamp, target: Int, mask: UInt64) -> Bool { false }
    public mutating func blockChild(_ index: Int, inBox: Bool) {}
    public mutating func leaveBlock(_ node: GridNodeStamp, target: Int) {}
}

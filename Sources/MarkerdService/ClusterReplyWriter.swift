import Foundation
import MarkerdAPI
import MarkerdCore

/// Writes the clusters of a grid GetClusters answer as protobuf `Cluster` submessages (repeated
/// field 1 of `GetClustersResponse`) while the layer's `GridClusterIndex` is walked, and collects
/// the unclustered markers' slots; byte for byte what protobuf-c writes for the `V1.Cluster`s of
/// `MarkerService.apiItems` (`ClusterReplyTests` checks it on seeded random layers).
///
/// Cluster fields in field-number order, zero values left out as protobuf-c does: id (1,
/// varint), count (2, varint), position (3, a `LatLng`: latitude 1, longitude 2, doubles),
/// bounds (4, a `Bounds`: west 1, south 2, east 3, north 4, doubles), expansion_zoom (5, varint).
///
/// With a `GridClusterMemo`, the output of every subtree the walk enters (see
/// `GridClusterVisitor`) is kept and reused while the subtree's stamp stays the same: a cached
/// cluster costs a copy of its ~75 bytes instead of three latitude conversions (`exp` and `atan`)
/// and the encoding, and a subtree wholly inside the box costs one look-up. Recorded: the
/// outermost subtree entered and every cell of the target zoom (each cluster once more inside its
/// outer subtree). Marker slots are kept, not marker bytes: markers are encoded afresh from the
/// layer, so a style change (which leaves the clusters' stamps alone) is always seen.
struct ClusterReplyWriter: GridClusterVisitor {
    /// The `Cluster` fields written so far (tag, length, message, one after the other).
    var clusterBytes: [UInt8] = []
    /// The unclustered markers' slots, in output order.
    var markerSlots: [Int32] = []
    /// Number of clusters written.
    private(set) var clusterCount = 0
    private let memo: GridClusterMemo?
    /// Work allowed: clusters encoded afresh plus markers; past it the writer is done (`isDone`)
    /// and its output incomplete.
    private let budget: Int
    /// Clusters encoded afresh plus markers so far.
    private(set) var work = 0
    /// Whether the budget ran out: the output is incomplete and nothing more is memoized.
    var isDone: Bool { work > budget }
    /// Subtrees being recorded (outermost first): where their output starts, and whether to keep it.
    private var recording: [(node: GridNodeStamp, bytes: Int, slots: Int, clusters: Int, keep: Bool)] = []

    /// `memo`: the layer's memo, with its lock held by the caller for as long as the writer is used,
    /// and already reset to the index's generation (`GridClusterMemo.prepare`); nil: no memo.
    /// `budget`: see `work` (default unlimited).
    init(memo: GridClusterMemo?, budget: Int = .max) {
        self.memo = memo
        self.budget = budget
        clusterBytes.reserveCapacity(4096)
    }

    mutating func enterSubtree(_ node: GridNodeStamp, target: Int) -> Bool {
        guard let memo, !isDone else { return isDone }
        if let hit = memo.append(of: node, target: target, to: &clusterBytes, &markerSlots) {
            clusterCount += hit.clusters
            work += hit.markers
            return true
        }
        recording.append((node, clusterBytes.count, markerSlots.count, clusterCount, recording.isEmpty || node.zoom == target))
        return false
    }

    mutating func leaveSubtree(_ node: GridNodeStamp, target: Int) {
        guard let memo, let r = recording.popLast() else { return }
        guard r.keep && !isDone else { return }
        memo.keep(clusterBytes[r.bytes...], markerSlots[r.slots...], clusterCount: clusterCount - r.clusters, of: node, target: target)
    }

    mutating func visitCluster(_ cluster: GridCluster, expansionZoom: Int) {
        work += 1
        if isDone { return }
        Self.append(MarkerService.apiCluster(cluster, expansionZoom: expansionZoom), field: 1, to: &clusterBytes)
        clusterCount += 1
    }

    mutating func visitPoint(_ point: ClusterPoint) {
        work += 1
        if !isDone { markerSlots.append(point.id) }
    }

    /// The whole `GetClustersResponse` after the walk: the clusters, the markers (written from
    /// `layer` by `MarkerWireEncoder`), then `layer_version` and `algorithm`. Call under the
    /// layer's lock, with a writer that is not done.
    consuming func payload(of layer: MarkerLayer, algorithm: String) -> [UInt8] {
        var out = clusterBytes
        var markers = MarkerWireEncoder()
        markers.append(layer.markerSlots(markerSlots), field: 2, of: layer, to: &out)
        out += V1.GetClustersResponse(layerVersion: layer.version, algorithm: algorithm).serializedBytes()
        return out
    }

    // MARK: encoding

    /// Appends `c` as length-delimited field `field`, as protobuf-c packs it.
    static func append(_ c: V1.Cluster, field: Int, to out: inout [UInt8]) {
        let position = c.position.map { latLngSize($0) }
        let bounds = c.bounds.map { boundsSize($0) }
        var size = 0
        if c.id != 0 { size += 1 + MarkerWireEncoder.varintSize(c.id) }
        if c.count != 0 { size += 1 + MarkerWireEncoder.varintSize(UInt64(c.count)) }
        if let position { size += 1 + MarkerWireEncoder.varintSize(UInt64(position)) + position }
        if let bounds { size += 1 + MarkerWireEncoder.varintSize(UInt64(bounds)) + bounds }
        if c.expansionZoom != 0 { size += 1 + MarkerWireEncoder.varintSize(UInt64(c.expansionZoom)) }
        MarkerWireEncoder.appendTag(field, wireType: 2, to: &out)
        MarkerWireEncoder.appendVarint(UInt64(size), to: &out)
        if c.id != 0 { out.append(0x08); MarkerWireEncoder.appendVarint(c.id, to: &out) }
        if c.count != 0 { out.append(0x10); MarkerWireEncoder.appendVarint(UInt64(c.count), to: &out) }
        if let p = c.position, let position {
            out.append(0x1A)
            MarkerWireEncoder.appendVarint(UInt64(position), to: &out)
            appendDouble(p.latitude, field: 1, to: &out)
            appendDouble(p.longitude, field: 2, to: &out)
        }
        if let b = c.bounds, let bounds {
            out.append(0x22)
            MarkerWireEncoder.appendVarint(UInt64(bounds), to: &out)
            appendDouble(b.west, field: 1, to: &out)
            appendDouble(b.south, field: 2, to: &out)
            appendDouble(b.east, field: 3, to: &out)
            appendDouble(b.north, field: 4, to: &out)
        }
        if c.expansionZoom != 0 { out.append(0x28); MarkerWireEncoder.appendVarint(UInt64(c.expansionZoom), to: &out) }
    }

    private static func latLngSize(_ p: V1.LatLng) -> Int { (p.latitude != 0 ? 9 : 0) + (p.longitude != 0 ? 9 : 0) }

    private static func boundsSize(_ b: V1.Bounds) -> Int {
        (b.west != 0 ? 9 : 0) + (b.south != 0 ? 9 : 0) + (b.east != 0 ? 9 : 0) + (b.north != 0 ? 9 : 0)
    }

    /// A double field (number < 16), left out when zero.
    @inline(__always)
    private static func appendDouble(_ v: Double, field: Int, to out: inout [UInt8]) {
        if v != 0 { MarkerWireEncoder.appendDouble(v, tag: UInt8(field << 3 | 1), to: &out) }
    }
}

/// Per-layer memo of `ClusterReplyWriter`'s output by subtree (cell and target zoom), valid while
/// the cell's `GridNodeStamp` is unchanged and the index's generation is the same. Outputs are
/// appended to two arenas (cluster bytes, marker slots), so keeping or finding one allocates
/// nothing; a replaced output stays in the arena until the memo is emptied, which happens when it
/// holds more than `budgetBytes`. Use under `lock` (held for a whole reply).
final class GridClusterMemo: @unchecked Sendable {
    private struct Entry {
        var stamp: UInt32
        var clusterCount: Int32
        var bytesStart: Int
        var bytesCount: Int32
        var slotsCount: Int32
        var slotsStart: Int
    }

    let lock = NSLock()
    /// Approximate bytes held before the memo is emptied. Default 64 MiB.
    let budgetBytes: Int
    private var generation: UInt64 = 0
    private var entries: [UInt64: Entry] = [:]
    private var bytes: [UInt8] = []
    private var slots: [Int32] = []

    init(budgetBytes: Int = 64 << 20) { self.budgetBytes = budgetBytes }

    /// Approximate bytes held: the arenas and the entries.
    var heldBytes: Int { bytes.count + 4 * slots.count + 48 * entries.count }

    /// Empties the memo when it was filled from another index (or another generation of it).
    func prepare(generation g: UInt64) {
        if g != generation {
            removeAll()
            generation = g
        }
    }

    private func removeAll() {
        entries.removeAll(keepingCapacity: true)
        bytes.removeAll(keepingCapacity: true)
        slots.removeAll(keepingCapacity: true)
    }

    @inline(__always)
    private static func key(_ node: GridNodeStamp, _ target: Int) -> UInt64 { UInt64(UInt32(bitPattern: node.cell)) << 8 | UInt64(target) }

    /// Appends the memoized output of `node` at `target` to `clusterBytes` and `markerSlots` if the
    /// node's stamp is still the same; returns its numbers of clusters and markers, or nil.
    func append(of node: GridNodeStamp, target: Int, to clusterBytes: inout [UInt8], _ markerSlots: inout [Int32]) -> (clusters: Int, markers: Int)? {
        guard let e = entries[Self.key(node, target)], e.stamp == node.stamp else { return nil }
        clusterBytes.append(contentsOf: bytes[e.bytesStart ..< e.bytesStart + Int(e.bytesCount)])
        markerSlots.append(contentsOf: slots[e.slotsStart ..< e.slotsStart + Int(e.slotsCount)])
        return (Int(e.clusterCount), Int(e.slotsCount))
    }

    /// Keeps the output of `node` at `target`: `clusterCount` clusters written as `clusterBytes`, and `markerSlots`.
    func keep(_ clusterBytes: ArraySlice<UInt8>, _ markerSlots: ArraySlice<Int32>, clusterCount: Int, of node: GridNodeStamp, target: Int) {
        if heldBytes + clusterBytes.count + 4 * markerSlots.count + 48 > budgetBytes { removeAll() }
        let e = Entry(stamp: node.stamp, clusterCount: Int32(clusterCount), bytesStart: bytes.count, bytesCount: Int32(clusterBytes.count),
                      slotsCount: Int32(markerSlots.count), slotsStart: slots.count)
        bytes.append(contentsOf: clusterBytes)
        slots.append(contentsOf: markerSlots)
        entries[Self.key(node, target)] = e
    }
}

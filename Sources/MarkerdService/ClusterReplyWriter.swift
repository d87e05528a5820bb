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
///
/// A class: `GridClusterIndex`'s walk is generic and, in another module, not specialized for
/// this visitor, so a struct was copied (every array retained and released) around the calls
/// it makes per cell; perf showed a quarter of a city answer's time in those copies.
final class ClusterReplyWriter: GridClusterVisitor {
    /// A run of the clusters' output: `count` bytes at `start` in the memo's arena (`inMemo`) or in
    /// `clusterBytes`.
    struct Piece {
        var inMemo: Bool
        var start: Int
        var count: Int
    }

    /// The `Cluster` fields encoded afresh (tag, length, message, one after the other); the ones
    /// found in the memo stay there (`pieces` says where each run of the output is).
    var clusterBytes: [UInt8] = []
    /// The clusters' output in order, as runs of `clusterBytes` and of the memo's arena: written
    /// out once, straight into the reply (`write(tail:into:)`), not gathered in between.
    private(set) var pieces: [Piece] = []
    /// Bytes of the clusters' output (the sum of `pieces`).
    private(set) var clusterByteCount = 0
    /// Whether the next fresh cluster starts a new piece (a recorded subtree starts at a piece).
    private var sealed = true
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
    private var recording: [(node: GridNodeStamp, pieces: Int, slots: Int, clusters: Int, keep: Bool)] = []

    /// `memo`: the layer's memo, with its lock held by the caller for as long as the writer and
    /// its output are used (the output points into the memo), and already reset to the index's
    /// generation (`GridClusterMemo.prepare`); nil: no memo. `budget`: see `work` (default unlimited).
    init(memo: GridClusterMemo?, budget: Int = .max) {
        self.memo = memo
        self.budget = budget
        clusterBytes.reserveCapacity(4096)
    }

    func enterSubtree(_ node: GridNodeStamp, target: Int) -> Bool {
        guard let memo, !isDone else { return isDone }
        if let hit = memo.find(node, target: target, appendingSlotsTo: &markerSlots) {
            if hit.count > 0 { pieces.append(Piece(inMemo: true, start: hit.start, count: hit.count)) }
            clusterByteCount += hit.count
            sealed = true
            clusterCount += hit.clusters
            work += hit.markers
            return true
        }
        sealed = true
        recording.append((node, pieces.count, markerSlots.count, clusterCount, recording.isEmpty || node.zoom == target))
        return false
    }

    func leaveSubtree(_ node: GridNodeStamp, target: Int) {
        // (`recording` is empty without a memo; the memo is only touched to keep: no retain and
        // release per cell left, which perf showed in city-sized answers.)
        guard let r = recording.popLast() else { return }
        sealed = true
        guard r.keep && !isDone, let memo else { return }
        memo.keep(pieces[r.pieces...], of: clusterBytes, markerSlots[r.slots...], clusterCount: clusterCount - r.clusters, of: node, target: target)
    }

    func visitCluster(_ cluster: GridCluster, expansionZoom: Int) {
        work += 1
        if isDone { return }
        let start = clusterBytes.count
        Self.append(MarkerService.apiCluster(cluster, expansionZoom: expansionZoom), field: 1, to: &clusterBytes)
        let count = clusterBytes.count - start
        if sealed {
            pieces.append(Piece(inMemo: false, start: start, count: count))
            sealed = false
        } else {
            pieces[pieces.count - 1].count += count
        }
        clusterByteCount += count
        clusterCount += 1
    }

    func visitPoint(_ point: ClusterPoint) {
        work += 1
        if !isDone { markerSlots.append(point.id) }
    }

    /// What follows the clusters in the `GetClustersResponse`: the markers (written from `layer`
    /// by `MarkerWireEncoder`), then `layer_version` and `algorithm`. Call under the layer's lock,
    /// after the walk, with a writer that is not done.
    func tail(of layer: MarkerLayer, algorithm: String) -> [UInt8] {
        var out: [UInt8] = []
        var markers = MarkerWireEncoder()
        markers.append(layer.markerSlots(markerSlots), field: 2, of: layer, to: &out)
        out += V1.GetClustersResponse(layerVersion: layer.version, algorithm: algorithm).serializedBytes()
        return out
    }

    /// Writes the whole `GetClustersResponse` into `out` (`clusterByteCount + tail.count` bytes):
    /// each cluster byte is copied once, from the memo's arena or `clusterBytes`, then `tail`.
    /// Call with the memo's lock still held.
    func write(tail: [UInt8], into out: UnsafeMutableRawBufferPointer) {
        precondition(out.count == clusterByteCount + tail.count, "GetClusters payload is \(clusterByteCount + tail.count) bytes, not \(out.count)")
        guard let base = out.baseAddress else { return }
        var at = 0
        clusterBytes.withUnsafeBytes { fresh in
            func copy(_ p: Piece, from source: UnsafeRawBufferPointer) {
                (base + at).copyMemory(from: source.baseAddress! + p.start, byteCount: p.count)
                at += p.count
            }
            if let memo {
                memo.withArena { arena in
                    for p in pieces { copy(p, from: p.inMemo ? arena : fresh) }
                }
            } else {
                for p in pieces { copy(p, from: fresh) }
            }
        }
        tail.withUnsafeBytes { if let t = $0.baseAddress { (base + at).copyMemory(from: t, byteCount: $0.count) } }
    }

    /// The whole `GetClustersResponse` after the walk as an array (`tail` and `write`). Call under
    /// the layer's lock and the memo's, with a writer that is not done.
    func payload(of layer: MarkerLayer, algorithm: String) -> [UInt8] {
        let tail = tail(of: layer, algorithm: algorithm)
        return [UInt8](unsafeUninitializedCapacity: clusterByteCount + tail.count) { b, n in
            write(tail: tail, into: UnsafeMutableRawBufferPointer(b))
            n = b.count
        }
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
/// appended to two arenas (cluster bytes, marker slots), and a reply copies found cluster bytes
/// straight from the arena into the reply; a replaced output stays in the arena until the memo is
/// emptied, which happens (in `prepare`) once it would hold more than `budgetBytes`. Use under
/// `lock` (held for a whole reply, including writing it out).
///
/// Look-ups cost no hashing: entries are found from the cell's index in the index's arena
/// (`newest`, one `Int32` per cell: 4 bytes per stored cell of the layer's index, outside the
/// budget), then along the cell's short chain of entries (one per target zoom it was asked at).
/// The arenas and the entry list get their whole budget's capacity at the first `keep`
/// (address space only: pages are touched as they are written), so keeping never moves them:
/// no copy of megabytes in the middle of a reply. Emptying is O(1) in the cells: `newest` is
/// left as it is and an index in it counts only when it names a live entry of that cell.
final class GridClusterMemo: @unchecked Sendable {
    private struct Entry {
        var cell: Int32
        var stamp: UInt32
        /// The next older entry of the same cell (another target zoom), or -1.
        var next: Int32
        var target: Int32
        var clusterCount: Int32
        var bytesCount: Int32
        var slotsCount: Int32
        var bytesStart: Int
        var slotsStart: Int
    }

    let lock = NSLock()
    /// Approximate bytes held before the memo is emptied. Default 64 MiB.
    let budgetBytes: Int
    private var generation: UInt64 = 0
    /// By cell (arena index): its newest entry in `entries` (valid only when that entry is live
    /// and of this cell: see `firstEntry`).
    private var newest: [Int32] = []
    private var entries: [Entry] = []
    private var bytes: [UInt8] = []
    private var slots: [Int32] = []
    /// Whether an output was not kept for want of room: `prepare` empties the memo.
    private var full = false

    init(budgetBytes: Int = 64 << 20) { self.budgetBytes = budgetBytes }

    /// Approximate bytes held: the arenas and the entries (not `newest`).
    var heldBytes: Int { bytes.count + 4 * slots.count + MemoryLayout<Entry>.stride * entries.count }

    /// Empties the memo when it was filled from another index (or another generation of it).
    func prepare(generation g: UInt64) {
        if g != generation || full {
            removeAll()
            generation = g
        }
    }

    private func removeAll() {
        full = false
        entries.removeAll(keepingCapacity: true)
        bytes.removeAll(keepingCapacity: true)
        slots.removeAll(keepingCapacity: true)
    }

    /// The newest live entry of `cell`, or -1.
    @inline(__always)
    private func firstEntry(_ cell: Int32) -> Int {
        guard Int(cell) < newest.count else { return -1 }
        let i = Int(newest[Int(cell)])
        return i >= 0 && i < entries.count && entries[i].cell == cell ? i : -1
    }

    /// The entry of `cell` at `target`, or -1.
    @inline(__always)
    private func entry(_ cell: Int32, target: Int) -> Int {
        var i = firstEntry(cell)
        while i >= 0 && Int(entries[i].target) != target { i = Int(entries[i].next) }
        return i
    }

    /// The memoized output of `node` at `target` if the node's stamp is still the same: where its
    /// cluster bytes are in the arena (`withArena`; valid until the memo is emptied, which
    /// happens only in `prepare`), its numbers of clusters and markers; its marker slots are
    /// appended to `markerSlots`. Nil if not found.
    func find(_ node: GridNodeStamp, target: Int, appendingSlotsTo markerSlots: inout [Int32]) -> (start: Int, count: Int, clusters: Int, markers: Int)? {
        let i = entry(node.cell, target: target)
        guard i >= 0, entries[i].stamp == node.stamp else { return nil }
        let e = entries[i]
        if e.slotsCount > 0 { markerSlots.append(contentsOf: slots[e.slotsStart ..< e.slotsStart + Int(e.slotsCount)]) }
        return (e.bytesStart, Int(e.bytesCount), Int(e.clusterCount), Int(e.slotsCount))
    }

    /// Calls `body` with the cluster bytes' arena (see `find`).
    func withArena<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R { bytes.withUnsafeBytes(body) }

    /// Keeps the output of `node` at `target`: `clusterCount` clusters written as `pieces` (of
    /// `fresh` or of this memo's arena), and `markerSlots`. Past `budgetBytes` nothing is kept and
    /// the memo is emptied at the next `prepare` (not now: a reply being written points into it).
    func keep(_ pieces: ArraySlice<ClusterReplyWriter.Piece>, of fresh: [UInt8], _ markerSlots: ArraySlice<Int32>, clusterCount: Int,
              of node: GridNodeStamp, target: Int) {
        let n = pieces.reduce(0) { $0 + $1.count }
        if heldBytes + n + 4 * markerSlots.count + MemoryLayout<Entry>.stride > budgetBytes {
            full = true
            return
        }
        if entries.capacity == 0 {
            bytes.reserveCapacity(budgetBytes)
            slots.reserveCapacity(budgetBytes / 4)
            entries.reserveCapacity(budgetBytes / MemoryLayout<Entry>.stride)
        }
        let c = Int(node.cell)
        if c >= newest.count { newest.append(contentsOf: repeatElement(-1, count: max(c + 1, 2 * newest.count) - newest.count)) }
        var e = Entry(cell: node.cell, stamp: node.stamp, next: -1, target: Int32(target), clusterCount: Int32(clusterCount),
                      bytesCount: Int32(n), slotsCount: Int32(markerSlots.count), bytesStart: bytes.count, slotsStart: slots.count)
        let old = entry(node.cell, target: target)
        if old >= 0 {
            e.next = entries[old].next
            entries[old] = e
        } else {
            e.next = Int32(firstEntry(node.cell))
            newest[c] = Int32(entries.count)
            entries.append(e)
        }
        bytes.append(contentsOf: repeatElement(0, count: n))
        bytes.withUnsafeMutableBytes { arena in
            fresh.withUnsafeBytes { fresh in
                var at = e.bytesStart
                for p in pieces {
                    // A piece of the arena lies below `e.bytesStart`: no overlap.
                    let source = p.inMemo ? UnsafeRawPointer(arena.baseAddress!) : fresh.baseAddress!
                    (arena.baseAddress! + at).copyMemory(from: source + p.start, byteCount: p.count)
                    at += p.count
                }
            }
        }
        slots.append(contentsOf: markerSlots)
    }
}

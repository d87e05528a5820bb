import Foundation
import MarkerdAPI
import MarkerdCore

/// Writes a grid GetClusters answer while the layer's `GridClusterIndex` is walked: the clusters
/// as protobuf `Cluster` submessages (repeated field 1 of `GetClustersResponse`), the unclustered
/// markers as `Marker` submessages (field 2, by `MarkerWireEncoder` after the walk); byte for
/// byte what protobuf-c writes for the `V1.Cluster`s and `V1.Marker`s of `MarkerService.apiItems`
/// (`ClusterReplyTests` checks it on seeded random layers).
///
/// Cluster fields in field-number order, zero values left out as protobuf-c does: id (1,
/// varint), count (2, varint), position (3, a `LatLng`: latitude 1, longitude 2, doubles),
/// bounds (4, a `Bounds`: west 1, south 2, east 3, north 4, doubles), expansion_zoom (5, varint).
///
/// With a `GridClusterMemo`, the output of every subtree the walk enters (see
/// `GridClusterVisitor`) is kept and reused while the subtree's stamp stays the same: a cached
/// cluster costs a copy of its ~75 bytes instead of three latitude conversions (`exp` and `atan`)
/// and the encoding, a cached marker a copy of its bytes instead of reading seven columns of the
/// layer's table (on a large layer, seven cache misses), and a subtree wholly inside the box
/// costs one look-up. Recorded: the outermost subtree entered and, with `blockLevels` B > 0
/// (the default 2), every block of 2^B x 2^B cells of the target zoom that the box reaches (see
/// `GridClusterVisitor.enterBlock`): written whole on a miss, its cells outside the box into the
/// memo only, and on a hit the runs of its children inside the box copied from the memo (an
/// edge of the box costs one look-up per block instead of one per cell, and a cold block fills
/// the memo around the box for the next answers); without blocks, every cell of the target zoom. A marker's bytes may be memoized because every
/// change of a clusterable marker's record re-stamps the cells above it (`MarkerLayer.syncCluster`,
/// `GridClusterIndex.upsert`), and a marker whose change makes it unclusterable leaves the index.
/// The memo keeps a subtree's output only after the walk (`tail(of:algorithm:)`), once its fresh
/// markers are encoded.
///
/// A class: `GridClusterIndex`'s walk is generic and, in another module, not specialized for
/// this visitor, so a struct was copied (every array retained and released) around the calls
/// it makes per cell; perf showed a quarter of a city answer's time in those copies. Its
/// properties skip the runtime's exclusivity checks (`@exclusivity(unchecked)`: one walk uses
/// a writer, on one thread), which cost another tenth.
final class ClusterReplyWriter: GridClusterVisitor {
    /// A run of the output: `count` bytes at `start` in the memo's arena (`inMemo`) or in the
    /// writer's fresh bytes (`clusterBytes`, `markerBytes`). Before `tail(of:algorithm:)`, a
    /// fresh run of markers counts markers: `freshSlots[start ..< start + count]`.
    struct Piece {
        var inMemo: Bool
        var start: Int
        var count: Int
    }

    /// A recorded subtree whose output the memo keeps once the walk is over.
    private struct PendingKeep {
        var node: GridNodeStamp
        var target: Int
        var pieces: Range<Int>
        var markerPieces: Range<Int>
        var clusters: Int
        var markers: Int
    }

    /// The `Cluster` fields encoded afresh (tag, length, message, one after the other); the ones
    /// found in the memo stay there (`pieces` says where each run of the output is).
    @exclusivity(unchecked) var clusterBytes: [UInt8] = []
    /// The clusters' output in order, as runs of `clusterBytes` and of the memo's arena: written
    /// out once, straight into the reply (`write(tail:into:)`), not gathered in between.
    @exclusivity(unchecked) private(set) var pieces: [Piece] = []
    /// Bytes of the clusters' output (the sum of `pieces`).
    @exclusivity(unchecked) private(set) var clusterByteCount = 0
    /// Whether the next fresh cluster starts a new piece (a recorded subtree starts at a piece).
    @exclusivity(unchecked) private var sealed = true
    /// The markers' output in order, as runs of `markerBytes` and of the memo's arena (fresh
    /// runs count markers until `tail(of:algorithm:)` encodes them).
    @exclusivity(unchecked) private(set) var markerPieces: [Piece] = []
    /// Whether the next fresh marker starts a new piece.
    @exclusivity(unchecked) private var markerSealed = true
    /// The markers not found in the memo (their slots and positions), in output order.
    @exclusivity(unchecked) private(set) var freshSlots: [ClusterPoint] = []
    /// `freshSlots` encoded (`tail(of:algorithm:)`).
    @exclusivity(unchecked) private var markerBytes: [UInt8] = []
    /// Bytes of the markers' output (the sum of `markerPieces`), known after `tail(of:algorithm:)`.
    @exclusivity(unchecked) private(set) var markerByteCount = 0
    /// Number of clusters written.
    @exclusivity(unchecked) private(set) var clusterCount = 0
    /// Number of markers written (fresh and memoized).
    @exclusivity(unchecked) private(set) var markerCount = 0
    /// Keeps the memo alive for as long as the writer (its output points into the memo's arena).
    private let memo: GridClusterMemo?
    /// `memo` without reference counting: the walk consults it once per cell (a retain and a
    /// release per look-up were 6 % of a city answer; a strong or `unowned(unsafe)` property is
    /// still retained around each call). Only used when `hasMemo` (`withMemo`).
    private let memoRef: Unmanaged<GridClusterMemo>
    private let hasMemo: Bool
    /// Stands in for `memoRef` without a memo (never consulted).
    private static let noMemo = GridClusterMemo(budgetBytes: 0)
    /// Work allowed: clusters encoded afresh plus markers; past it the writer is done (`isDone`)
    /// and its output incomplete.
    private let budget: Int
    /// Clusters encoded afresh plus markers so far.
    @exclusivity(unchecked) private(set) var work = 0
    /// Whether the budget ran out: the output is incomplete and nothing more is memoized.
    var isDone: Bool { work > budget }
    /// Subtrees being recorded (outermost first): where their output starts, and whether to keep it.
    @exclusivity(unchecked) private var recording: [(node: GridNodeStamp, pieces: Int, markerPieces: Int, clusters: Int, markers: Int, keep: Bool)] = []
    /// Recorded subtrees to keep after the walk.
    @exclusivity(unchecked) private var pending: [PendingKeep] = []

    /// Zooms between a memoized block's cell and its target cells (see `GridClusterVisitor`):
    /// 0 without a memo, else `defaultBlockLevels` unless given.
    let blockLevels: Int
    /// Default `blockLevels`: 2 (blocks of 4 x 4 target cells: a 1080x1920 px viewport covers
    /// about 6 x 9 blocks). Larger blocks make warm answers cheaper (fewer look-ups) and cold ones
    /// dearer (a block's cells outside the box are encoded too), and one update re-stamps more
    /// cells' output. Tests and measurements pass other levels to `init(memo:blockLevels:)`.
    static let defaultBlockLevels = 2

    /// A block being written afresh (`enterBlock` missed): every target cell's items are written
    /// into `clusterBytes` and `freshSlots` (for the memo), only those of cells in the box into the
    /// output.
    private struct BlockFill {
        var node: GridNodeStamp
        var target: Int
        var clusterStart: Int
        var slotStart: Int
        /// Where this block's child marks start in `blockMarks`.
        var marks: Int
        /// The first child whose end is not marked yet.
        var next = 0
        /// Whether the current child's items go into the output.
        var inBox = false
        /// Clusters and markers written for the block so far (in or out of the box).
        var clusters = 0
        var markers = 0
    }

    /// Where a child of a block being written ends: in `clusterBytes`, in `freshSlots`, and the
    /// block's clusters and markers up to it.
    private struct ChildMark {
        var clusterEnd: Int
        var slotEnd: Int
        var clusters: Int
        var markers: Int
    }

    /// Blocks answered from the memo (`enterBlock`): wholly in the box, and partly (filtered by child).
    @exclusivity(unchecked) private(set) var wholeBlockHits = 0
    @exclusivity(unchecked) private(set) var partialBlockHits = 0
    @exclusivity(unchecked) private var fill: BlockFill?
    @exclusivity(unchecked) private var blockMarks: [ChildMark] = []
    /// Blocks written afresh, to keep after the walk.
    @exclusivity(unchecked) private var pendingBlocks: [BlockFill] = []

    /// `memo`: the layer's memo, with its lock held by the caller for as long as the writer and
    /// its output are used (the output points into the memo), and already reset to the index's
    /// generation (`GridClusterMemo.prepare`); nil: no memo. `budget`: see `work` (default unlimited).
    init(memo: GridClusterMemo?, budget: Int = .max, blockLevels: Int = ClusterReplyWriter.defaultBlockLevels) {
        precondition((0...3).contains(blockLevels), "blockLevels must be 0...3")
        self.memo = memo
        self.memoRef = Unmanaged.passUnretained(memo ?? Self.noMemo)
        self.hasMemo = memo != nil
        self.budget = budget
        self.blockLevels = memo == nil ? 0 : blockLevels
        clusterBytes.reserveCapacity(4096)
        if self.blockLevels > 0 {
            // About what a 1080x1920 px answer needs, so that the arrays are not grown piece by piece.
            pieces.reserveCapacity(128)
            markerPieces.reserveCapacity(64)
            blockMarks.reserveCapacity(32 << (2 * self.blockLevels))
        }
    }

    /// The payload's bytes before the `tail(of:algorithm:)` it returns (clusters and markers);
    /// valid after that call.
    var bodyByteCount: Int { clusterByteCount + markerByteCount }

    func enterSubtree(_ node: GridNodeStamp, target: Int) -> Bool {
        guard hasMemo, !isDone else { return isDone }
        if let hit = withMemo({ $0.find(node, target: target) }) {
            appendFromMemo(clusters: hit.start, hit.clusterBytes, markers: hit.start + hit.clusterBytes, hit.markerBytes,
                           clusterCount: hit.clusters, markerCount: hit.markers)
            return true
        }
        sealed = true
        markerSealed = true
        recording.append((node, pieces.count, markerPieces.count, clusterCount, markerCount, recording.isEmpty || node.zoom == target))
        return false
    }

    /// Appends runs of the memo's arena to the output: `clusterBytes` bytes of `clusterCount`
    /// clusters at `clusterStart`, `markerBytes` bytes of `markerCount` markers at `markerStart`.
    @inline(__always)
    private func appendFromMemo(clusters clusterStart: Int, _ clusterBytes: Int, markers markerStart: Int, _ markerBytes: Int,
                                clusterCount: Int, markerCount: Int) {
        if clusterBytes > 0 { pieces.append(Piece(inMemo: true, start: clusterStart, count: clusterBytes)) }
        if markerBytes > 0 { markerPieces.append(Piece(inMemo: true, start: markerStart, count: markerBytes)) }
        clusterByteCount += clusterBytes
        markerByteCount += markerBytes
        sealed = true
        markerSealed = true
        self.clusterCount += clusterCount
        self.markerCount += markerCount
        work += markerCount
    }

    func enterBlock(_ node: GridNodeStamp, target: Int, mask: UInt64) -> Bool {
        guard !isDone else { return true }
        let children = 1 << (2 * blockLevels)
        if let hit = withMemo({ $0.find(node, target: target) }), hit.children >= 0 {
            if mask == (children == 64 ? .max : (UInt64(1) << UInt64(children)) - 1) {
                appendFromMemo(clusters: hit.start, hit.clusterBytes, markers: hit.start + hit.clusterBytes, hit.markerBytes,
                               clusterCount: hit.clusters, markerCount: hit.markers)
                wholeBlockHits += 1
                return true
            }
            partialBlockHits += 1
            withMemo { memo in
                memo.withBlockChildren(hit.children, count: children) { ends in
                    // Runs of consecutive children in the box, one piece each (children with no items never break a run).
                    var i = 0
                    var previous = GridClusterMemo.BlockChild(clusterEnd: 0, markerEnd: 0, clusters: 0, markers: 0)
                    while i < children {
                        guard mask >> UInt64(i) & 1 != 0 else {
                            previous = ends[i]
                            i += 1
                            continue
                        }
                        let first = previous
                        while i < children && (mask >> UInt64(i) & 1 != 0 || ends[i].clusters == previous.clusters && ends[i].markers == previous.markers) {
                            previous = ends[i]
                            i += 1
                        }
                        appendFromMemo(clusters: hit.start + Int(first.clusterEnd), Int(previous.clusterEnd - first.clusterEnd),
                                       markers: hit.start + hit.clusterBytes + Int(first.markerEnd), Int(previous.markerEnd - first.markerEnd),
                                       clusterCount: Int(previous.clusters - first.clusters), markerCount: Int(previous.markers - first.markers))
                    }
                }
            }
            return true
        }
        sealed = true
        markerSealed = true
        fill = BlockFill(node: node, target: target, clusterStart: clusterBytes.count, slotStart: freshSlots.count, marks: blockMarks.count)
        blockMarks.append(contentsOf: repeatElement(ChildMark(clusterEnd: 0, slotEnd: 0, clusters: 0, markers: 0), count: children))
        return false
    }

    /// Marks the end of the children of the block being written before `index`.
    private func markChildren(upTo index: Int) {
        guard var f = fill else { return }
        let mark = ChildMark(clusterEnd: clusterBytes.count, slotEnd: freshSlots.count, clusters: f.clusters, markers: f.markers)
        while f.next < index {
            blockMarks[f.marks + f.next] = mark
            f.next += 1
        }
        fill = f
    }

    func blockChild(_ index: Int, inBox: Bool) {
        markChildren(upTo: index)
        fill?.inBox = inBox
        sealed = true
        markerSealed = true
    }

    func leaveBlock(_ node: GridNodeStamp, target: Int) {
        markChildren(upTo: 1 << (2 * blockLevels))
        if let f = fill, !isDone { pendingBlocks.append(f) }
        fill = nil
        sealed = true
        markerSealed = true
    }

    /// Calls `body` with the memo (held by `memo`), without retaining it.
    @inline(__always) private func withMemo<R>(_ body: (GridClusterMemo) -> R) -> R { memoRef._withUnsafeGuaranteedRef(body) }

    func leaveSubtree(_ node: GridNodeStamp, target: Int) {
        guard let r = recording.popLast() else { return }
        sealed = true
        markerSealed = true
        guard r.keep && !isDone else { return }
        pending.append(PendingKeep(node: node, target: target, pieces: r.pieces ..< pieces.count, markerPieces: r.markerPieces ..< markerPieces.count,
                                   clusters: clusterCount - r.clusters, markers: markerCount - r.markers))
    }

    func visitCluster(_ cluster: GridCluster, expansionZoom: Int) {
        work += 1
        if isDone { return }
        let start = clusterBytes.count
        Self.appendGridCluster(cluster, expansionZoom: expansionZoom, to: &clusterBytes)
        let count = clusterBytes.count - start
        if fill != nil {
            fill!.clusters += 1
            guard fill!.inBox else { return sealed = true }
        }
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
        if isDone { return }
        if fill != nil {
            fill!.markers += 1
            guard fill!.inBox else {
                freshSlots.append(point)
                return markerSealed = true
            }
        }
        if markerSealed {
            markerPieces.append(Piece(inMemo: false, start: freshSlots.count, count: 1))
            markerSealed = false
        } else {
            markerPieces[markerPieces.count - 1].count += 1
        }
        freshSlots.append(point)
        markerCount += 1
    }

    /// Ends the walk: encodes the fresh markers (from `layer`, by `MarkerWireEncoder`), has the
    /// memo keep the recorded subtrees, and returns what follows the markers in the
    /// `GetClustersResponse`: `layer_version` and `algorithm`. Call once, under the layer's lock
    /// (and the memo's), after the walk, with a writer that is not done.
    func tail(of layer: MarkerLayer, algorithm: V1.ClusterAlgorithm) -> [UInt8] {
        var encoder = MarkerWireEncoder()
        encoder.append(layer.markerSlots(freshSlots), field: 2, of: layer, to: &markerBytes)
        // Where each fresh marker's submessage starts (tag 0x12, length, message), and one past the last.
        var offsets: [Int] = []
        offsets.reserveCapacity(freshSlots.count + 1)
        markerBytes.withUnsafeBufferPointer { b in
            var at = 0
            while at < b.count {
                offsets.append(at)
                at += 1
                var length = 0, shift = 0
                while true {
                    let byte = b[at]
                    at += 1
                    length |= Int(byte & 0x7F) << shift
                    shift += 7
                    if byte < 0x80 { break }
                }
                at += length
            }
            offsets.append(at)
        }
        precondition(offsets.count == freshSlots.count + 1, "\(offsets.count - 1) marker submessages for \(freshSlots.count) markers")
        for i in markerPieces.indices where !markerPieces[i].inMemo {
            let p = markerPieces[i]
            markerPieces[i] = Piece(inMemo: false, start: offsets[p.start], count: offsets[p.start + p.count] - offsets[p.start])
            markerByteCount += markerPieces[i].count
        }
        if hasMemo && !pendingBlocks.isEmpty { keepBlocks(offsets) }
        if hasMemo && !pending.isEmpty {
            // Buffers taken once for all the keeps (arrays passed per keep were retained and released each time).
            pieces.withUnsafeBufferPointer { pieces in
                markerPieces.withUnsafeBufferPointer { markerPieces in
                    clusterBytes.withUnsafeBytes { clusterBytes in
                        markerBytes.withUnsafeBytes { markerBytes in
                            for k in pending {
                                withMemo { $0.keep(UnsafeBufferPointer(rebasing: pieces[k.pieces]), of: clusterBytes,
                                             markers: UnsafeBufferPointer(rebasing: markerPieces[k.markerPieces]), of: markerBytes,
                                             clusterCount: k.clusters, markerCount: k.markers, of: k.node, target: k.target) }
                            }
                        }
                    }
                }
            }
        }
        return Self.responseTail(layerVersion: layer.version, algorithm: algorithm)
    }

    /// The bytes of `V1.GetClustersResponse(layerVersion:algorithm:)` (fields 3 and 5, each left
    /// out when zero, as protobuf-c writes them), written by hand: the message's encoding through protobuf-c cost a few µs per
    /// reply (`ClusterEncodingTests` compares the two).
    static func responseTail(layerVersion: UInt64, algorithm: V1.ClusterAlgorithm) -> [UInt8] {
        var out: [UInt8] = []
        out.reserveCapacity(16)
        if layerVersion != 0 {
            out.append(0x18)
            ProtoWriter.appendVarint(layerVersion, to: &out)
        }
        if algorithm != .unspecified {
            out.append(5 << 3)
            ProtoWriter.appendVarint(UInt64(algorithm.rawValue), to: &out)
        }
        return out
    }

    /// Has the memo keep the blocks written afresh: their clusters' and markers' bytes (`offsets`:
    /// where each fresh marker's bytes start in `markerBytes`) and where each child's end.
    private func keepBlocks(_ offsets: [Int]) {
        let children = 1 << (2 * blockLevels)
        var ends = [GridClusterMemo.BlockChild](repeating: GridClusterMemo.BlockChild(clusterEnd: 0, markerEnd: 0, clusters: 0, markers: 0),
                                                count: children)
        clusterBytes.withUnsafeBytes { clusterBytes in
            markerBytes.withUnsafeBytes { markerBytes in
                for b in pendingBlocks {
                    let last = blockMarks[b.marks + children - 1]
                    let markerStart = offsets[b.slotStart]
                    for i in 0..<children {
                        let m = blockMarks[b.marks + i]
                        ends[i] = GridClusterMemo.BlockChild(clusterEnd: Int32(m.clusterEnd - b.clusterStart), markerEnd: Int32(offsets[m.slotEnd] - markerStart),
                                                             clusters: Int32(m.clusters), markers: Int32(m.markers))
                    }
                    let clusters = [Piece(inMemo: false, start: b.clusterStart, count: last.clusterEnd - b.clusterStart)]
                    let markers = [Piece(inMemo: false, start: markerStart, count: offsets[last.slotEnd] - markerStart)]
                    clusters.withUnsafeBufferPointer { clusters in
                        markers.withUnsafeBufferPointer { markers in
                            ends.withUnsafeBufferPointer { ends in
                                withMemo { $0.keep(clusters, of: clusterBytes, markers: markers, of: markerBytes, clusterCount: last.clusters,
                                                   markerCount: last.markers, of: b.node, target: b.target, children: ends) }
                            }
                        }
                    }
                }
            }
        }
    }

    /// Writes the whole `GetClustersResponse` into `out` (`bodyByteCount + tail.count` bytes):
    /// each cluster and marker byte is copied once, from the memo's arena or the fresh bytes,
    /// then `tail`. Call with the memo's lock still held.
    func write(tail: [UInt8], into out: UnsafeMutableRawBufferPointer) {
        precondition(out.count == bodyByteCount + tail.count, "GetClusters payload is \(bodyByteCount + tail.count) bytes, not \(out.count)")
        guard let base = out.baseAddress else { return }
        var at = 0
        func copy(_ runs: [Piece], fresh: UnsafeRawBufferPointer, arena: UnsafeRawBufferPointer) {
            for p in runs {
                let source = p.inMemo ? arena : fresh
                (base + at).copyMemory(from: source.baseAddress! + p.start, byteCount: p.count)
                at += p.count
            }
        }
        let noArena = UnsafeRawBufferPointer(start: nil, count: 0)
        clusterBytes.withUnsafeBytes { clusters in
            markerBytes.withUnsafeBytes { markers in
                if let memo {
                    memo.withArena { arena in
                        copy(pieces, fresh: clusters, arena: arena)
                        copy(markerPieces, fresh: markers, arena: arena)
                    }
                } else {
                    copy(pieces, fresh: clusters, arena: noArena)
                    copy(markerPieces, fresh: markers, arena: noArena)
                }
            }
        }
        tail.withUnsafeBytes { if let t = $0.baseAddress { (base + at).copyMemory(from: t, byteCount: $0.count) } }
    }

    /// The whole `GetClustersResponse` after the walk as an array (`tail` and `write`). Call once,
    /// under the layer's lock and the memo's, with a writer that is not done.
    func payload(of layer: MarkerLayer, algorithm: V1.ClusterAlgorithm) -> [UInt8] {
        let tail = tail(of: layer, algorithm: algorithm)
        return [UInt8](unsafeUninitializedCapacity: bodyByteCount + tail.count) { b, n in
            write(tail: tail, into: UnsafeMutableRawBufferPointer(b))
            n = b.count
        }
    }

    // MARK: encoding

    /// Appends `c` as a `Cluster` of field 1: the bytes of
    /// `append(MarkerService.apiCluster(c, expansionZoom:), field: 1, to:)` (`ClusterReplyTests`),
    /// written through a pointer into a stack buffer and appended at once, without the
    /// `V1.Cluster` and its optional submessages or a capacity check per field (encoding fresh
    /// clusters took 7.4 % of the city answers' samples that way, 3.9 % this way, latitudes included).
    static func appendGridCluster(_ c: GridCluster, expansionZoom: Int, to out: inout [UInt8]) {
        let p = WorldPoint(x: c.x, y: c.y).fastLatLng
        let sw = WorldPoint(x: c.bounds.minX, y: c.bounds.maxY).fastLatLng, ne = WorldPoint(x: c.bounds.maxX, y: c.bounds.minY).fastLatLng
        let id = MarkerService.gridIDBit | c.id.rawValue, count = UInt64(UInt32(c.count)), zoom = UInt64(UInt32(expansionZoom))
        let position = (p.latitude != 0 ? 9 : 0) + (p.longitude != 0 ? 9 : 0)
        let bounds = (sw.longitude != 0 ? 9 : 0) + (sw.latitude != 0 ? 9 : 0) + (ne.longitude != 0 ? 9 : 0) + (ne.latitude != 0 ? 9 : 0)
        // Fields 1-5 (id and count left out when zero, like expansion_zoom; position and bounds always present).
        var size = 2 + ProtoWriter.varintSize(UInt64(position)) + position + ProtoWriter.varintSize(UInt64(bounds)) + bounds
        @inline(__always) func varintField(_ v: UInt64) -> Int { v != 0 ? 1 + ProtoWriter.varintSize(v) : 0 }
        size += varintField(id) + varintField(count) + varintField(zoom)
        withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 128) { buffer in
            var w = buffer.baseAddress!
            @inline(__always) func byte(_ b: UInt8) { w.pointee = b; w += 1 }
            @inline(__always) func varint(_ v: UInt64) { ProtoWriter.write(varint: v, at: &w) }
            @inline(__always) func double(_ v: Double, _ tag: UInt8) {
                guard v != 0 else { return }
                byte(tag)
                UnsafeMutableRawPointer(w).storeBytes(of: v.bitPattern.littleEndian, as: UInt64.self)
                w += 8
            }
            byte(0x0A); varint(UInt64(size))
            if id != 0 { byte(0x08); varint(id) }
            if count != 0 { byte(0x10); varint(count) }
            byte(0x1A); varint(UInt64(position))
            double(p.latitude, 0x09); double(p.longitude, 0x11)
            byte(0x22); varint(UInt64(bounds))
            double(sw.longitude, 0x09); double(sw.latitude, 0x11); double(ne.longitude, 0x19); double(ne.latitude, 0x21)
            if zoom != 0 { byte(0x28); varint(zoom) }
            out.append(contentsOf: UnsafeBufferPointer(start: buffer.baseAddress, count: w - buffer.baseAddress!))
        }
    }

    /// Appends `c` as length-delimited field `field`, as protobuf-c packs it.
    static func append(_ c: V1.Cluster, field: Int, to out: inout [UInt8]) {
        let position = c.position.map { latLngSize($0) }
        let bounds = c.bounds.map { boundsSize($0) }
        var size = 0
        if c.id != 0 { size += 1 + ProtoWriter.varintSize(c.id) }
        if c.markerCount != 0 { size += 1 + ProtoWriter.varintSize(c.markerCount) }
        if let position { size += 1 + ProtoWriter.varintSize(UInt64(position)) + position }
        if let bounds { size += 1 + ProtoWriter.varintSize(UInt64(bounds)) + bounds }
        if c.expansionZoom != 0 { size += 1 + ProtoWriter.varintSize(UInt64(c.expansionZoom)) }
        ProtoWriter.appendTag(field, wireType: 2, to: &out)
        ProtoWriter.appendVarint(UInt64(size), to: &out)
        if c.id != 0 { out.append(0x08); ProtoWriter.appendVarint(c.id, to: &out) }
        if c.markerCount != 0 { out.append(0x10); ProtoWriter.appendVarint(c.markerCount, to: &out) }
        if let p = c.position, let position {
            out.append(0x1A)
            ProtoWriter.appendVarint(UInt64(position), to: &out)
            appendDouble(p.latitude, field: 1, to: &out)
            appendDouble(p.longitude, field: 2, to: &out)
        }
        if let b = c.bounds, let bounds {
            out.append(0x22)
            ProtoWriter.appendVarint(UInt64(bounds), to: &out)
            appendDouble(b.west, field: 1, to: &out)
            appendDouble(b.south, field: 2, to: &out)
            appendDouble(b.east, field: 3, to: &out)
            appendDouble(b.north, field: 4, to: &out)
        }
        if c.expansionZoom != 0 { out.append(0x28); ProtoWriter.appendVarint(UInt64(c.expansionZoom), to: &out) }
    }

    private static func latLngSize(_ p: V1.LatLng) -> Int { (p.latitude != 0 ? 9 : 0) + (p.longitude != 0 ? 9 : 0) }

    private static func boundsSize(_ b: V1.Bounds) -> Int {
        (b.west != 0 ? 9 : 0) + (b.south != 0 ? 9 : 0) + (b.east != 0 ? 9 : 0) + (b.north != 0 ? 9 : 0)
    }

    /// A double field (number < 16), left out when zero.
    @inline(__always)
    private static func appendDouble(_ v: Double, field: Int, to out: inout [UInt8]) {
        if v != 0 { ProtoWriter.appendDouble(v, tag: UInt8(field << 3 | 1), to: &out) }
    }
}

/// Per-layer memo of `ClusterReplyWriter`'s output by subtree (cell and target zoom), valid while
/// the cell's `GridNodeStamp` is unchanged and the index's generation is the same. An output (its
/// clusters' bytes, then its markers' bytes) is appended to one arena, and a reply copies found
/// bytes straight from the arena into the reply; a replaced output stays in the arena until the
/// memo is emptied, which happens (in `prepare`) once it would hold more than `budgetBytes`. Use
/// under `lock` (held for a whole reply, including writing it out).
///
/// Look-ups cost no hashing: entries are found from the cell's index in the index's arena
/// (`newest`, one `Int32` per cell: 4 bytes per stored cell of the layer's index, outside the
/// budget), then along the cell's short chain of entries (one per target zoom it was asked at).
/// The arena and the entry list get their whole budget's capacity at the first `keep`
/// (address space only: pages are touched as they are written), so keeping never moves them:
/// no copy of megabytes in the middle of a reply. Emptying is O(1) in the cells: `newest` is
/// left as it is and an index in it counts only when it names a live entry of that cell.
/// The state skips the runtime's exclusivity checks (`@exclusivity(unchecked)`): `lock` already
/// keeps its users apart, and the checks cost a tenth of a city answer.
final class GridClusterMemo: @unchecked Sendable {
    private struct Entry {
        var cell: Int32
        var stamp: UInt32
        /// The next older entry of the same cell (another target zoom), or -1.
        var next: Int32
        var target: Int32
        var clusterCount: Int32
        var markerCount: Int32
        /// The clusters' bytes at `start` in the arena, then the markers' bytes.
        var clusterBytes: Int32
        var markerBytes: Int32
        var start: Int
        /// A block's (see `GridClusterVisitor`): where its children's ends start in `blockChildren`; else -1.
        var children: Int32
    }

    /// Where a child (a target cell) of a memoized block ends, counted from the block's start:
    /// its clusters' bytes, its markers' bytes, and the block's clusters and markers up to it.
    struct BlockChild {
        var clusterEnd: Int32
        var markerEnd: Int32
        var clusters: Int32
        var markers: Int32
    }

    /// A memoized output (`find`): `clusterBytes` bytes of clusters at `start` in the arena, then
    /// `markerBytes` bytes of markers; `clusters` clusters and `markers` markers.
    struct Hit {
        var start: Int
        var clusterBytes: Int
        var markerBytes: Int
        var clusters: Int
        var markers: Int
        /// A block's: its children's ends (`withBlockChildren`); else -1.
        var children: Int
    }

    let lock = NSLock()
    /// Approximate bytes held before the memo is emptied. Default 128 MiB: with the markers'
    /// bytes kept too, the clusters section's 4,000 city answers on 10M markers filled 63 MB
    /// (64 MiB would have been emptied during the next few thousand, making those answers cold).
    let budgetBytes: Int
    @exclusivity(unchecked) private var generation: UInt64 = 0
    /// By cell (arena index): its newest entry in `entries` (valid only when that entry is live
    /// and of this cell: see `firstEntry`).
    @exclusivity(unchecked) private var newest: [Int32] = []
    @exclusivity(unchecked) private var entries: [Entry] = []
    @exclusivity(unchecked) private var bytes: [UInt8] = []
    /// The children's ends of the blocks kept, one run per block.
    @exclusivity(unchecked) private var blockChildren: [BlockChild] = []
    /// Whether an output was not kept for want of room: `prepare` empties the memo.
    @exclusivity(unchecked) private var full = false
    /// Fault in the arenas' pages ahead of their use, off the reply path (see `ArenaPrefaulter`).
    @exclusivity(unchecked) private var bytesAhead = ArenaPrefaulter()
    @exclusivity(unchecked) private var entriesAhead = ArenaPrefaulter()
    @exclusivity(unchecked) private var childrenAhead = ArenaPrefaulter()

    init(budgetBytes: Int = 128 << 20) { self.budgetBytes = budgetBytes }

    /// Approximate bytes held: the arena and the entries (not `newest`).
    var heldBytes: Int { bytes.count + MemoryLayout<Entry>.stride * entries.count + MemoryLayout<BlockChild>.stride * blockChildren.count }

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
        blockChildren.removeAll(keepingCapacity: true)
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
    /// bytes are in the arena (`withArena`; valid until the memo is emptied, which happens only
    /// in `prepare`) and its numbers of clusters and markers. Nil if not found.
    func find(_ node: GridNodeStamp, target: Int) -> Hit? {
        let i = entry(node.cell, target: target)
        guard i >= 0, entries[i].stamp == node.stamp else { return nil }
        let e = entries[i]
        return Hit(start: e.start, clusterBytes: Int(e.clusterBytes), markerBytes: Int(e.markerBytes),
                   clusters: Int(e.clusterCount), markers: Int(e.markerCount), children: Int(e.children))
    }

    /// Calls `body` with the `count` children's ends of a block found by `find` (`Hit.children`).
    func withBlockChildren<R>(_ at: Int, count: Int, _ body: (UnsafeBufferPointer<BlockChild>) -> R) -> R {
        blockChildren.withUnsafeBufferPointer { body(UnsafeBufferPointer(rebasing: $0[at ..< at + count])) }
    }

    /// Calls `body` with the arena (see `find`).
    func withArena<R>(_ body: (UnsafeRawBufferPointer) -> R) -> R { bytes.withUnsafeBytes(body) }

    /// Keeps the output of `node` at `target`: `clusterCount` clusters written as `pieces` (of
    /// `fresh` or of this memo's arena), then `markerCount` markers written as `markerPieces`
    /// (of `freshMarkers` or of the arena). Past `budgetBytes` nothing is kept and the memo is
    /// emptied at the next `prepare` (not now: a reply being written points into it). `children`:
    /// for a block, where each of its children ends (see `BlockChild`); nil for a subtree.
    func keep(_ pieces: UnsafeBufferPointer<ClusterReplyWriter.Piece>, of fresh: UnsafeRawBufferPointer,
              markers markerPieces: UnsafeBufferPointer<ClusterReplyWriter.Piece>, of freshMarkers: UnsafeRawBufferPointer,
              clusterCount: Int, markerCount: Int, of node: GridNodeStamp, target: Int,
              children: UnsafeBufferPointer<BlockChild>? = nil) {
        let n = pieces.reduce(0) { $0 + $1.count }, m = markerPieces.reduce(0) { $0 + $1.count }
        let childBytes = MemoryLayout<BlockChild>.stride * (children?.count ?? 0)
        if heldBytes + n + m + MemoryLayout<Entry>.stride + childBytes > budgetBytes {
            full = true
            return
        }
        if entries.capacity == 0 {
            bytes.reserveCapacity(budgetBytes)
            entries.reserveCapacity(budgetBytes / MemoryLayout<Entry>.stride)
            let byteCapacity = bytes.capacity, entryBytes = entries.capacity * MemoryLayout<Entry>.stride
            bytesAhead = ArenaPrefaulter(base: bytes.withUnsafeMutableBufferPointer { UnsafeMutableRawPointer($0.baseAddress) },
                                         capacity: byteCapacity)
            entriesAhead = ArenaPrefaulter(base: entries.withUnsafeMutableBufferPointer { UnsafeMutableRawPointer($0.baseAddress) },
                                           capacity: entryBytes)
            blockChildren.reserveCapacity(budgetBytes / MemoryLayout<BlockChild>.stride)
            childrenAhead = ArenaPrefaulter(base: blockChildren.withUnsafeMutableBufferPointer { UnsafeMutableRawPointer($0.baseAddress) },
                                            capacity: blockChildren.capacity * MemoryLayout<BlockChild>.stride)
        }
        let c = Int(node.cell)
        if c >= newest.count { newest.append(contentsOf: repeatElement(-1, count: max(c + 1, 2 * newest.count) - newest.count)) }
        var e = Entry(cell: node.cell, stamp: node.stamp, next: -1, target: Int32(target), clusterCount: Int32(clusterCount),
                      markerCount: Int32(markerCount), clusterBytes: Int32(n), markerBytes: Int32(m), start: bytes.count,
                      children: children == nil ? -1 : Int32(blockChildren.count))
        if let children {
            childrenAhead.use(upTo: (blockChildren.count + children.count) * MemoryLayout<BlockChild>.stride, owner: self)
            blockChildren.append(contentsOf: children)
        }
        let old = entry(node.cell, target: target)
        if old >= 0 {
            e.next = entries[old].next
            entries[old] = e
        } else {
            e.next = Int32(firstEntry(node.cell))
            newest[c] = Int32(entries.count)
            entries.append(e)
        }
        bytesAhead.use(upTo: bytes.count + n + m, owner: self)
        entriesAhead.use(upTo: (entries.count + 1) * MemoryLayout<Entry>.stride, owner: self)
        bytes.append(contentsOf: repeatElement(0, count: n + m))
        bytes.withUnsafeMutableBytes { arena in
            var at = e.start
            // A piece of the arena lies below `e.start`: no overlap.
            func copy(_ runs: UnsafeBufferPointer<ClusterReplyWriter.Piece>, of fresh: UnsafeRawBufferPointer) {
                for p in runs {
                    guard let source = p.inMemo ? UnsafeRawPointer(arena.baseAddress) : fresh.baseAddress else { continue }
                    (arena.baseAddress! + at).copyMemory(from: source + p.start, byteCount: p.count)
                    at += p.count
                }
            }
            copy(pieces, of: fresh)
            copy(markerPieces, of: freshMarkers)
        }
    }
}

/// Faults in the pages of an arena whose capacity is reserved once (`GridClusterMemo`'s) ahead of
/// its use, on a background queue, so that a reply appending to it does not: markerd maps large
/// allocations with transparent huge pages, so the first write into each 2 MiB of the arena
/// stopped the reply writing it for the zeroing of the whole huge page (perf on markerd during
/// the clusters section's city viewports: 2-4 % of the network thread's time, in single
/// replies, i.e. tails). `use(upTo:owner:)` asks, once the arena's used bytes come within
/// `ahead / 2` of what was asked for so far, for the bytes up to `ahead` past them with
/// `madvise(MADV_POPULATE_WRITE)`, which faults pages in without changing their contents (so it
/// may run while the arena is written). Only for arenas already holding `ahead / 2` bytes, so a
/// small layer's memo costs no memory beyond what it writes; past that, at most `ahead` bytes
/// ahead of use are resident. Linux 5.14 and later; elsewhere, or without a reserved arena, it
/// does nothing and pages fault in as they are written, as before.
struct ArenaPrefaulter {
    /// Bytes asked for ahead of the arena's use: 8 MiB (four huge pages).
    static let ahead = 8 << 20
    /// `MADV_POPULATE_WRITE` in <linux/mman.h> (not in every Glibc module map).
    static let populateWrite: Int32 = 23
    static let queue = DispatchQueue(label: "markerd.cluster-memo-prefault", qos: .utility)

    private let base: UnsafeMutableRawPointer?
    private let capacity: Int
    /// Bytes from `base` asked for so far.
    private(set) var requested = 0

    init(base: UnsafeMutableRawPointer? = nil, capacity: Int = 0) {
        self.base = base
        self.capacity = capacity
    }

    /// The arena is about to hold `used` bytes: when `used` is at least `ahead / 2` and comes
    /// within `ahead / 2` of what was asked for, asks for the bytes up to `used + ahead` (at least
    /// `ahead / 2` more). `owner`
    /// (which holds the arena) is kept alive until the request is done.
    mutating func use(upTo used: Int, owner: AnyObject & Sendable) {
        guard let base, used >= Self.ahead / 2, used + Self.ahead / 2 > requested, requested < capacity else { return }
        let page = 4096
        let start = requested, end = min(capacity, used + Self.ahead)
        requested = end
        // Whole pages inside [start, end): pages the edges share are faulted in by their writes.
        let from = (Int(bitPattern: base) + start + page - 1) / page * page
        let to = (Int(bitPattern: base) + end) / page * page
        guard to > from else { return }
        Self.queue.async {
            withExtendedLifetime(owner) {
                _ = madvise(UnsafeMutableRawPointer(bitPattern: from), to - from, Self.populateWrite)
            }
        }
    }
}

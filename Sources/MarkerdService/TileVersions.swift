import MarkerdCore
import MarkerdRender
import Synchronization

/// Per-layer raster-tile versions: a tile's version changes whenever something that can change
/// its pixels changed, and stays the same when only things elsewhere changed.
///
/// What can change a tile's pixels: a static marker appearing, disappearing or changing (position,
/// icon, anchor, z-index, visibility, draggable, an animation ending) whose icon, at that zoom,
/// reaches into the tile; or the layer being cleared, deleted or re-created (new options).
/// Registered icons are immutable and draggable/animating markers are never drawn into tiles, so
/// drags cannot change tiles.
///
/// Design: every change has a sequence number (the layer's version after the change). For each
/// zoom 0...12 (`bucketZoom`) a map holds, per tile, the last sequence number of a change whose
/// footprint touched that tile: the icon's extents plus `TileRenderer.marginPx` (px at 256 px
/// tiles, so also covering 512 px tiles, where the same icon covers half the world distance),
/// around the old and the new position, wrapped around the antimeridian. Measured in tiles of
/// its zoom, a footprint has the same size at every zoom, so a change costs O(13) map updates
/// (a few tiles per zoom). Zooms 0...6 are dense arrays, 7...12 sparse hash tables.
///
/// A tile at z <= 12 reads its own entry. A tile deeper than 12 reads the entry of its z-12
/// ancestor: a footprint at zoom z is smaller (in world units) than at zoom 12, so any change that
/// reaches the deep tile also reached the ancestor - conservative (a version may change when the
/// pixels did not), never stale.
///
/// The version is max(sequence, base) itself: a layer version, so tile versions share the layer
/// versions' guarantee (`VersionCeiling`): they only rise, also across restarts (recovery resets
/// `base` to the recovered layer's new version, above every version revealed before) and across
/// a layer deleted and created again (which starts above every earlier version), so a tile
/// version never names two different images.
struct TileVersions: Sendable {
    static let bucketZoom = 12
    static let denseZooms = 6

    /// Tells this layer instance's kept canvases apart from those of an earlier layer of the
    /// same id (`KeptCanvases.Key`); unique within the process.
    let instance: UInt64
    /// Sequence of the layer's creation or last clear: every tile changed then.
    private(set) var base: UInt64 = 0
    /// The latest changes' footprints (`mark`), oldest first, with their sequence numbers, for
    /// `changes(after:)`: between `recentLimit` and twice that many.
    private var recent: [(seq: UInt64, footprint: IconFootprint)] = []
    /// `recent` holds every change whose sequence number is above this one.
    private var recentFrom: UInt64 = 0
    /// Changes kept for `changes(after:)` (at least; up to twice as many).
    static let recentLimit = 256
    private var dense: [[UInt64]]
    private var sparse: [SeqTable]

    private static let instances = Atomic<UInt64>(0)

    /// - Parameter base: the layer's version when it was created (every tile is new then).
    init(base: UInt64) {
        instance = TileVersions.instances.add(1, ordering: .relaxed).newValue
        self.base = base
        recentFrom = base
        dense = (0...TileVersions.denseZooms).map { [UInt64](repeating: 0, count: 1 << (2 * $0)) }
        sparse = (TileVersions.denseZooms + 1...TileVersions.bucketZoom).map { _ in SeqTable() }
    }

    /// Every tile changes (the layer was cleared).
    mutating func reset(seq: UInt64) {
        base = seq
        recent.removeAll(keepingCapacity: true)
        recentFrom = max(recentFrom, seq)
        for z in dense.indices { for i in dense[z].indices { dense[z][i] = 0 } }
        for i in sparse.indices { sparse[i] = SeqTable() }
    }

    /// The footprints of every change after sequence number `seq` (in the order marked), or nil
    /// when some of them are no longer kept (more than `recentLimit` since, or a reset).
    func changes(after seq: UInt64) -> [IconFootprint]? {
        guard seq >= recentFrom else { return nil }
        return recent.lazy.filter { $0.seq > seq }.map(\.footprint)
    }

    /// Records a change at `seq` whose icon footprint is `f`.
    mutating func mark(_ f: IconFootprint, seq: UInt64) {
        recent.append((seq, f))
        if recent.count >= 2 * TileVersions.recentLimit {
            let dropped = recent.count - TileVersions.recentLimit
            recentFrom = max(recentFrom, recent[dropped - 1].seq)
            recent.removeFirst(dropped)
        }
        let m = TileRenderer.marginPx
        let l = (f.extents.left + m) / 256, r = (f.extents.right + m) / 256
        let u = (f.extents.up + m) / 256, d = (f.extents.down + m) / 256
        for z in 0...TileVersions.bucketZoom {
            let n = Int64(1) << Int64(z)
            let unit = Double(sign: .plus, exponent: 32 - z, significand: 1)
            let px = Double(f.position.x) / unit, py = Double(f.position.y) / unit
            var x0 = Int64((px - l).rounded(.down)), x1 = Int64((px + r).rounded(.down))
            let y0 = max(0, Int64((py - u).rounded(.down))), y1 = min(n - 1, Int64((py + d).rounded(.down)))
            if x1 - x0 + 1 >= n { x0 = 0; x1 = n - 1 }
            if y0 > y1 { continue }
            for y in y0...y1 {
                for xx in x0...x1 {
                    let x = ((xx % n) + n) % n
                    if z <= TileVersions.denseZooms {
                        let i = Int(y << Int64(z) | x)
                        if dense[z][i] < seq { dense[z][i] = seq }
                    } else {
                        sparse[z - TileVersions.denseZooms - 1].raise(UInt32(y << Int64(z) | x), to: seq)
                    }
                }
            }
        }
    }

    /// Records a change of the pixels within `worldRect` (world units, inclusive; x may reach
    /// outside [0, 2^32): it wraps) at tile zoom `z` only (a label's box: unlike an icon's
    /// footprint, it belongs to one zoom). Deeper than `bucketZoom`, the ancestors' entries.
    mutating func mark(worldRect r: (x0: Int64, y0: Int64, x1: Int64, y1: Int64), zoom z: Int, seq: UInt64) {
        let b = min(z, TileVersions.bucketZoom)
        let n = Int64(1) << Int64(b)
        let shift = Int64(32 - b)
        var x0 = r.x0 >> shift, x1 = r.x1 >> shift
        let y0 = max(0, r.y0 >> shift), y1 = min(n - 1, r.y1 >> shift)
        if x1 - x0 + 1 >= n { x0 = 0; x1 = n - 1 }
        guard y0 <= y1 else { return }
        for y in y0...y1 {
            for xx in x0...x1 {
                let x = ((xx % n) + n) % n
                if b <= TileVersions.denseZooms {
                    let i = Int(y << Int64(b) | x)
                    if dense[b][i] < seq { dense[b][i] = seq }
                } else {
                    sparse[b - TileVersions.denseZooms - 1].raise(UInt32(y << Int64(b) | x), to: seq)
                }
            }
        }
    }

    /// The version of tile (z, x, y); z within 0...30. At least 1 (0 means "no version" in
    /// requests' `known_version`).
    func version(z: Int, x: UInt32, y: UInt32) -> UInt64 {
        var seq: UInt64
        if z <= TileVersions.denseZooms {
            seq = dense[z][Int(UInt64(y) << UInt64(z) | UInt64(x))]
        } else {
            let b = min(z, TileVersions.bucketZoom)
            let s = UInt32(z - b)
            seq = sparse[b - TileVersions.denseZooms - 1].value(UInt32((y >> s) << UInt32(b) | (x >> s)))
        }
        return max(seq, base, 1)
    }

    /// Entries held, for memory estimates.
    var sparseEntries: Int { sparse.reduce(0) { $0 + $1.count } }
}

/// Open-addressing map UInt32 -> UInt64 (linear probing, no deletion; cleared by replacement).
struct SeqTable: Sendable {
    private var keys: [UInt32] = Array(repeating: .max, count: 16)
    private var values: [UInt64] = Array(repeating: 0, count: 16)
    private(set) var count = 0

    @inline(__always) private func home(_ k: UInt32, _ mask: Int) -> Int { Int((k &* 0x9E37_79B1) >> 8) & mask }

    func value(_ k: UInt32) -> UInt64 {
        let mask = keys.count - 1
        var i = home(k, mask)
        while true {
            let key = keys[i]
            if key == k { return values[i] }
            if key == .max { return 0 }
            i = (i + 1) & mask
        }
    }

    /// Sets the value of `k` to at least `seq`.
    mutating func raise(_ k: UInt32, to seq: UInt64) {
        if (count + 1) * 4 > keys.count * 3 { grow() }
        let mask = keys.count - 1
        var i = home(k, mask)
        while true {
            let key = keys[i]
            if key == k { if values[i] < seq { values[i] = seq }; return }
            if key == .max { keys[i] = k; values[i] = seq; count += 1; return }
            i = (i + 1) & mask
        }
    }

    private mutating func grow() {
        let oldKeys = keys, oldValues = values
        keys = Array(repeating: .max, count: oldKeys.count * 2)
        values = Array(repeating: 0, count: oldKeys.count * 2)
        let mask = keys.count - 1
        for j in 0..<oldKeys.count where oldKeys[j] != .max {
            var i = home(oldKeys[j], mask)
            while keys[i] != .max { i = (i + 1) & mask }
            keys[i] = oldKeys[j]; values[i] = oldValues[j]
        }
    }
}

/// What a write needs to mark its tiles once applied (`LayerHandle.footprintsBefore`).
struct TileMarks {
    /// The changed markers' icon footprints before the change.
    var footprints: [IconFootprint]
    /// On a labelled layer: the changed markers' ids, and their slots before the change.
    var ids: [String] = []
    var labelSlots: [Int32] = []
}

extension MarkerService {
    /// Above this many changed markers in one mutation, every tile of the layer gets a new version.
    public static let bulkTileMarkThreshold = 4_096
}

extension LayerHandle {
    /// Footprints of the markers among `ids` that are drawn into tiles now. Call under a lock.
    func staticFootprints(_ ids: some Sequence<String>, now: Int64) -> [IconFootprint] {
        var out: [IconFootprint] = []
        for id in ids { if let f = layer.staticFootprint(id: id, now: now) { out.append(f) } }
        return out
    }

    /// Above this many changed markers in one mutation, every tile of the layer gets a new
    /// version at once (conservative, which is allowed: a version may change when pixels did
    /// not) instead of ~13 table updates per marker, which would dominate bulk loads.
    static let bulkMarkThreshold = MarkerService.bulkTileMarkThreshold

    /// Marks the tiles under `footprints` as changed by the layer's current version. Call under
    /// the write lock, after the change.
    func markTiles(_ footprints: [IconFootprint]) {
        let seq = layer.version
        for f in footprints { tileVersions.mark(f, seq: seq) }
    }

    /// What a write of `count` markers (`ids`) needs to mark its tiles afterwards
    /// (`markTiles(before:after:_:)`): the footprints of `ids` before the change and, on a
    /// labelled layer, their slots and ids; nil when the change is marked in bulk or not at all.
    /// Call under the write lock, before the change.
    func footprintsBefore(_ ids: some Sequence<String>, count: Int, _ c: MutationCommit) -> TileMarks? {
        guard !c.replaying, count <= Self.bulkMarkThreshold else { return nil }
        var marks = TileMarks(footprints: staticFootprints(ids, now: c.nowUnixMs))
        if layer.labelStyle.enabled {
            marks.ids = Array(ids)
            marks.labelSlots = marks.ids.compactMap { layer.slot(id: $0) }
        }
        return marks
    }

    /// Marks a mutation's tiles after the change: `before` (from `footprintsBefore`) and the
    /// footprints `after` it, and the tiles of every label the change moved; nil `before` means
    /// every tile changes (and label placements are decided anew). Nothing while replaying the
    /// journal or loading a snapshot: recovery ends with every tile at a new version anyway
    /// (`MarkerService.startAboveRecoveredVersions`).
    func markTiles(before: TileMarks?, after: () -> [IconFootprint], _ c: MutationCommit, measurer: some LabelMeasurer) {
        guard !c.replaying else {
            labels.removeAll()
            return
        }
        guard let before else {
            tileVersions.reset(seq: layer.version)
            labels.removeAll()
            return
        }
        markTiles(before.footprints + after())
        if layer.labelStyle.enabled {
            let slots = before.labelSlots + before.ids.compactMap { layer.slot(id: $0) }
            markLabelTiles(labels.update(layer: layer, changed: slots, measurer: measurer, now: c.nowUnixMs))
        }
    }

    /// Marks the tiles under changed label boxes (world px at their pixel zoom): at the pixel
    /// zoom for 256 px tiles and one zoom up for 512 px tiles. Call under the write lock.
    /// When icons without a placed label are not drawn, a label that comes or goes also shows or
    /// hides its icon beside it: the boxes grow by the largest icon extent and the gap.
    func markLabelTiles(_ changes: [(pz: Int, boxes: [LabelBox])]) {
        let seq = layer.version
        let style = layer.labelStyle
        var grow: Int64 = 0
        if !style.showIconWithoutLabel {
            let e = layer.styles.maxExtents
            grow = Int64((max(e.left, e.right, e.up, e.down) + Double(style.gap) + TileRenderer.marginPx).rounded(.up))
        }
        for (pz, boxes) in changes {
            let shift = Int64(24 - pz)
            for b in boxes {
                let rect = (x0: (b.x - grow) << shift, y0: (b.y - grow) << shift,
                            x1: ((b.x + b.width + grow) << shift) - 1, y1: ((b.y + b.height + grow) << shift) - 1)
                if pz <= 22 { tileVersions.mark(worldRect: rect, zoom: pz, seq: seq) }
                if pz >= 1 { tileVersions.mark(worldRect: rect, zoom: pz - 1, seq: seq) }
            }
        }
    }

    /// Footprints of a plain batch's markers that will be drawn into tiles (visible, not
    /// draggable: a batch has no animations), as `staticFootprints(_:now:)` of its records.
    static func staticFootprints(_ batch: MarkerBatch) -> [IconFootprint] {
        batch.entries.compactMap { e in
            guard e.flags & MarkerBatch.visible != 0, e.flags & MarkerBatch.draggable == 0 else { return nil }
            return IconFootprint(position: e.world, extents: batch.styles[Int(e.style)].extents)
        }
    }

    /// Footprints of upserted records that will be drawn into tiles (static at `now`).
    static func staticFootprints(_ records: [MarkerRecord], now: Int64) -> [IconFootprint] {
        records.compactMap { m in
            guard m.visible, !m.draggable else { return nil }
            if let a = m.animation, a.kind != .none, a.endsAtUnixMs > now { return nil }
            return IconFootprint(position: WorldPoint(m.position), extents: m.style.extents)
        }
    }
}

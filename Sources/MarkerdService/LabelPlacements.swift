import MarkerdCore
import Synchronization

/// A labelled layer's label placements, one per pixel zoom (the tile zoom for 256 px tiles, one
/// more for 512 px tiles), each decided over the whole layer on first use (`LabelPlacement`) and
/// then kept up to date by the layer's writes (`update`), which learn from it which labels moved.
///
/// Tile versions: while a zoom's placement is kept, a write marks the tiles of every label whose
/// placement changed (`LayerHandle.markLabelTiles`). A zoom whose placement is not kept (never
/// decided, or dropped to stay within `maxBytes`) cannot say which of its tiles changed, so
/// deciding it raises that zoom's `floor` to the layer's version: every tile of that zoom gets a
/// new version then (conservative, like a clear). Tile versions of a labelled layer are
/// `max(TileVersions.version, floor)`.
///
/// Thread safety: `placement(_:)` runs under the layer's read lock, from many threads at once (a
/// placement decided twice by two threads is the same: the first one kept wins); `update` and
/// `removeAll` under the write lock.
final class LabelPlacements: Sendable {
    /// Placements kept per layer, in bytes (`LabelPlacement.approximateBytes`); the least recently
    /// used zooms are dropped beyond it. Default 256 MiB.
    static let maxBytes = 256 << 20
    /// See `update`.
    static let crowdedRatio = 8
    /// Pixel zooms: 0...23 (tile zoom 0...22, plus one for 512 px tiles).
    static let pixelZooms = 0...23

    private struct Entry {
        var placement: LabelPlacement
        var lastUse: UInt64
    }
    private struct State {
        var zooms: [Int: Entry] = [:]
        var floors = [UInt64](repeating: 0, count: LabelPlacements.pixelZooms.count)
        var clock: UInt64 = 0
    }
    private let state = Mutex(State())

    /// The pixel zoom of tile zoom `z` at `tileSize` px.
    static func pixelZoom(z: Int, tileSize: Int) -> Int { z + (tileSize == 512 ? 1 : 0) }

    /// The placement at pixel zoom `pz`, decided now if it is not kept (raising the zoom's floor
    /// to `layer.version`). Call under the layer's read (or write) lock.
    func placement(_ pz: Int, layer: MarkerLayer, measurer: some LabelMeasurer, now: Int64) -> LabelPlacement {
        if let kept = state.withLock({ s -> LabelPlacement? in
            s.clock += 1
            s.zooms[pz]?.lastUse = s.clock
            return s.zooms[pz]?.placement
        }) { return kept }
        let fresh = LabelPlacement(layer: layer, pixelZoom: pz, measurer: measurer, now: now)
        return state.withLock { s in
            if let other = s.zooms[pz] { return other.placement }
            s.clock += 1
            s.zooms[pz] = Entry(placement: fresh, lastUse: s.clock)
            s.floors[pz] = max(s.floors[pz], layer.version)
            var bytes = s.zooms.values.reduce(0) { $0 + $1.placement.approximateBytes }
            while bytes > Self.maxBytes, s.zooms.count > 1,
                  let oldest = s.zooms.filter({ $0.key != pz }).min(by: { $0.value.lastUse < $1.value.lastUse }) {
                bytes -= oldest.value.placement.approximateBytes
                s.zooms[oldest.key] = nil
            }
            return fresh
        }
    }

    /// The kept placement at `pz`, if any (never decides one: for the network thread).
    func keptPlacement(_ pz: Int) -> LabelPlacement? { state.withLock { $0.zooms[pz]?.placement } }

    /// Every tile at pixel zoom `pz` has at least this version.
    func floor(_ pz: Int) -> UInt64 { state.withLock { $0.floors[pz] } }

    /// Re-decides the labels of `slots` (and those they push or free) in every kept placement
    /// after a write; returns, per pixel zoom, the boxes (old and new) of the labels that changed.
    /// Call under the write lock, after the change.
    ///
    /// A crowded zoom, where fewer than one marker in `crowdedRatio` has a placed label (the
    /// lowest zooms of a big layer), is dropped instead: there one moved label pushes most others
    /// (`LabelPlacement.update` then places from scratch, seconds at a million markers), which
    /// would hold every write of the layer; its next tile decides it again, with every tile of
    /// that zoom at a new version (a few hundred tiles at most at such zooms).
    func update(layer: MarkerLayer, changed slots: [Int32], measurer: some LabelMeasurer, now: Int64) -> [(pz: Int, boxes: [LabelBox])] {
        guard !slots.isEmpty else { return [] }
        return state.withLock { s in
            var out: [(Int, [LabelBox])] = []
            for pz in s.zooms.keys.sorted() {
                if s.zooms[pz]!.placement.count * Self.crowdedRatio < layer.count {
                    s.zooms[pz] = nil
                    continue
                }
                let boxes = s.zooms[pz]!.placement.update(layer: layer, changed: slots, measurer: measurer, now: now)
                if !boxes.isEmpty { out.append((pz, boxes)) }
            }
            return out
        }
    }

    /// Drops every placement (a clear, a bulk write): the zooms are decided again when next used,
    /// their tiles all at new versions. Call under the write lock.
    func removeAll() { state.withLock { $0.zooms.removeAll() } }

    /// Bytes held by the kept placements.
    var approximateBytes: Int { state.withLock { $0.zooms.values.reduce(0) { $0 + $1.placement.approximateBytes } } }
}

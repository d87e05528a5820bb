import MarkerdCore
import Synchronization

/// A labelled layer's label placements, one per pixel zoom (the tile zoom for 256 px tiles, one
/// more for 512 px tiles). A zoom's placement is made on its first labelled tile or hit-test
/// (`LabelPlacement.Mode.automatic`: eager at zooms where most labels collide, lazy at street
/// zooms, where each tile decides only the labels it depends on) and then kept up to date by the
/// layer's writes (`update`), which learn from it which labels changed.
///
/// Tile versions: while a zoom's placement is kept, a write marks the tiles of every label whose
/// placement changed (`LayerHandle.markLabelTiles`). A zoom whose placement is not kept (never
/// made, or dropped to stay within `maxBytes`) cannot say which of its tiles changed, so making
/// it raises that zoom's `floor` to the layer's version: every tile of that zoom gets a new
/// version then (conservative, like a clear). Tile versions of a labelled layer are
/// `max(TileVersions.version, floor)`.
///
/// Thread safety: reads (`labels`, `label(at:)`) run under the layer's read lock from many
/// threads, and a lazy placement decides regions as they are read, so every access holds this
/// object's mutex (deciding is short at street zoom; a zoom's eager placement is made once);
/// `update` and `removeAll` run under the layer's write lock.
final class LabelPlacements: Sendable {
    /// Placements kept per layer, in bytes (`LabelPlacement.approximateBytes`); the least recently
    /// used zooms are dropped beyond it. Default 256 MiB.
    static let maxBytes = 256 << 20
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

    /// A px rectangle at some pixel zoom, half-open: [x0, x1) x [y0, y1).
    struct Rect { var x0, y0, x1, y1: Int64 }

    /// Runs `body` on the placement of pixel zoom `pz`, made now if it is not kept (raising the
    /// zoom's floor to `layer.version`), with `rect` decided first. Call under the layer's read
    /// (or write) lock.
    private func with<T>(_ pz: Int, deciding rect: Rect, layer: MarkerLayer, measurer: some LabelMeasurer, now: Int64,
                         _ body: (LabelPlacement) -> T) -> T {
        state.withLock { s in
            s.clock += 1
            if s.zooms[pz] == nil {
                let fresh = LabelPlacement(layer: layer, pixelZoom: pz, measurer: measurer, now: now, mode: .automatic)
                s.zooms[pz] = Entry(placement: fresh, lastUse: s.clock)
                s.floors[pz] = max(s.floors[pz], layer.version)
            }
            s.zooms[pz]!.lastUse = s.clock
            if !s.zooms[pz]!.placement.isComplete && rect.x0 < rect.x1 && rect.y0 < rect.y1 {
                s.zooms[pz]!.placement.decide(pixelRect: rect.x0, rect.y0, rect.x1, rect.y1, layer: layer, measurer: measurer, now: now)
            }
            let result = body(s.zooms[pz]!.placement)
            Self.trim(&s, keeping: pz)
            return result
        }
    }

    /// Drops the least recently used zooms while the placements hold more than `maxBytes`.
    private static func trim(_ s: inout State, keeping pz: Int) {
        var bytes = s.zooms.values.reduce(0) { $0 + $1.placement.approximateBytes }
        while bytes > maxBytes, let oldest = s.zooms.filter({ $0.key != pz }).min(by: { $0.value.lastUse < $1.value.lastUse }) {
            bytes -= oldest.value.placement.approximateBytes
            s.zooms[oldest.key] = nil
        }
    }

    /// The placed labels whose box meets `rect` (px at `pz`; one entry per world copy, x shifted),
    /// and the slots of the placed labels meeting `iconRect` (for layers that hide an icon without
    /// its label: the caller grows the icons' rectangle by how far a label reaches from its icon;
    /// nil: none). Call under the layer's read lock.
    func labels(_ pz: Int, in rect: Rect, iconRect: Rect?, layer: MarkerLayer, measurer: some LabelMeasurer,
                now: Int64) -> (labels: [PlacedLabel], placedSlots: Set<Int32>) {
        var decide = rect
        if let i = iconRect { decide = Rect(x0: min(i.x0, rect.x0), y0: min(i.y0, rect.y0), x1: max(i.x1, rect.x1), y1: max(i.y1, rect.y1)) }
        return with(pz, deciding: decide, layer: layer, measurer: measurer, now: now) { p in
            let labels = p.labels(inPixelRect: rect.x0, rect.y0, rect.x1, rect.y1)
            guard let i = iconRect else { return (labels, []) }
            return (labels, Set(p.labels(inPixelRect: i.x0, i.y0, i.x1, i.y1).lazy.map(\.slot)))
        }
    }

    /// The placed label containing px point (x, y) at `pz`, if any. Call under the layer's read lock.
    func label(_ pz: Int, atX x: Double, y: Double, layer: MarkerLayer, measurer: some LabelMeasurer, now: Int64) -> PlacedLabel? {
        let cx = Int64(x.rounded(.down)), cy = Int64(y.rounded(.down))
        return with(pz, deciding: Rect(x0: cx, y0: cy, x1: cx + 1, y1: cy + 1), layer: layer, measurer: measurer, now: now) {
            $0.label(atPixelX: x, y: y)
        }
    }

    /// Makes the placement of `pz` if it is not kept (raising the zoom's floor): before reading
    /// a tile's version. Call under the layer's read lock.
    func prepare(_ pz: Int, layer: MarkerLayer, measurer: some LabelMeasurer, now: Int64) {
        with(pz, deciding: Rect(x0: 0, y0: 0, x1: 0, y1: 0), layer: layer, measurer: measurer, now: now) { _ in }
    }

    /// The floor of `pz` when its placement is kept and nobody holds the placements (never
    /// waits: for the network thread, which answers a tile from the cache only then; making or
    /// deciding a placement is `getTile`'s work); nil otherwise.
    func keptFloor(_ pz: Int) -> UInt64? {
        state.withLockIfAvailable { s in s.zooms[pz] == nil ? nil : s.floors[pz] } ?? nil
    }

    /// Every tile at pixel zoom `pz` has at least this version.
    func floor(_ pz: Int) -> UInt64 { state.withLock { $0.floors[pz] } }

    /// Re-decides the labels of `slots` (and those they push or free) in every kept placement
    /// after a write; returns, per pixel zoom, the boxes (old and new) of the labels that changed.
    /// Call under the write lock, after the change.
    func update(layer: MarkerLayer, changed slots: [Int32], measurer: some LabelMeasurer, now: Int64) -> [(pz: Int, boxes: [LabelBox])] {
        guard !slots.isEmpty else { return [] }
        return state.withLock { s in
            var out: [(Int, [LabelBox])] = []
            for pz in s.zooms.keys.sorted() {
                let boxes = s.zooms[pz]!.placement.update(layer: layer, changed: slots, measurer: measurer, now: now)
                if !boxes.isEmpty { out.append((pz, boxes)) }
            }
            return out
        }
    }

    /// Drops every placement (a clear, a bulk write): the zooms are decided again when next used,
    /// their tiles all at new versions. Call under the write lock.
    func removeAll() { state.withLock { $0.zooms.removeAll() } }

    /// Bytes held by the kept placements (counted in GetLayerStats' `approximate_bytes`).
    var approximateBytes: Int { state.withLock { $0.zooms.values.reduce(0) { $0 + $1.placement.approximateBytes } } }
}

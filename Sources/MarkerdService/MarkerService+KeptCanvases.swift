import MarkerdCore
import MarkerdRender
import Synchronization

/// The canvases of dense rasters, kept so that after a small change the next GetTile renders
/// only the changed markers' windows (`TileRenderer.renderPatched`) instead of the whole tile:
/// the rasters that take the node sweep (the z0-z4 tiles of layers with millions of markers; a
/// z0 tile over 10M markers takes 130-150 ms of CPU from scratch, a moved marker's two windows a
/// few ms), and every other tile that at least `ServiceConfiguration.keepCanvasFrom` markers
/// touch (a city's z10 tile: 4-5 ms from scratch at p50 through markerd, about 2 ms patched
/// after a marker moved in; `marker-bench --only tiles`).
///
/// Keyed by layer, its `TileVersions` instance, tile and size; each entry remembers the
/// layer version it shows. The changes since then come from `TileVersions.changes(after:)`,
/// the same footprints that give tiles their versions, so a patched canvas is as fresh as the
/// version it is served under; when they are no longer all kept (more than
/// `TileVersions.recentLimit` footprints since, a bulk change or a clear), or the windows would
/// cover more than a quarter of the raster, the raster is rendered from scratch. LRU by canvas
/// bytes (256 KiB for a 256 px tile at density 1); thread-safe.
final class KeptCanvases: Sendable {
    struct Key: Hashable {
        var layer: String
        var instance: UInt64
        var z: Int, x: UInt32, y: UInt32
        var tileSize: Int, density: Int
    }

    private struct Entry {
        var canvas: TileCanvas
        var version: UInt64
        var stamp: UInt64
    }

    private struct State {
        var entries: [Key: Entry] = [:]
        var bytes = 0
        var clock: UInt64 = 0
    }

    let capacityBytes: Int
    private let state = Mutex(State())

    init(capacityBytes: Int) { self.capacityBytes = capacityBytes }

    /// The canvas kept for `key` and the layer version it shows.
    func canvas(_ key: Key) -> (canvas: TileCanvas, version: UInt64)? {
        state.withLock { s in
            guard var e = s.entries[key] else { return nil }
            s.clock += 1
            e.stamp = s.clock
            s.entries[key] = e
            return (e.canvas, e.version)
        }
    }

    /// Keeps `canvas` for `key` as the raster at layer `version` (replacing an older one), then
    /// drops the least recently used canvases beyond `capacityBytes`.
    func store(_ key: Key, _ canvas: TileCanvas, version: UInt64) {
        let bytes = canvas.width * canvas.height * 4
        state.withLock { s in
            guard bytes <= capacityBytes else { return }
            if let old = s.entries[key] {
                guard old.version <= version else { return }
                s.bytes -= old.canvas.width * old.canvas.height * 4
            }
            s.clock += 1
            s.entries[key] = Entry(canvas: canvas, version: version, stamp: s.clock)
            s.bytes += bytes
            while s.bytes > capacityBytes, let oldest = s.entries.min(by: { $0.value.stamp < $1.value.stamp }) {
                s.bytes -= oldest.value.canvas.width * oldest.value.canvas.height * 4
                s.entries[oldest.key] = nil
            }
        }
    }

    /// Bytes of the canvases kept now.
    var bytes: Int { state.withLock { $0.bytes } }
}

extension MarkerService {
    /// GetTile's render of a dense raster (see `KeptCanvases`): patched from the kept canvas when
    /// there is one and the changes since are known and small; else rendered from scratch, and
    /// kept when the raster takes the node sweep or at least `keepCanvasFrom` markers touch it.
    /// nil when no canvases are kept (`keptCanvasBytes` 0) and the raster does not take the
    /// sweep: render it with `renderTile`. Call under the layer's read lock.
    func renderKeptTile(_ h: LayerHandle, tile: TileID, tileSize: Int, density: Int, now: Int64) throws(RenderError) -> TileCache.Tile? {
        guard keptCanvases.capacityBytes > 0 else { return nil }
        let view = RasterView.tile(tile, tileSize: tileSize, density: density)
        let key = KeptCanvases.Key(layer: h.id, instance: h.tileVersions.instance, z: tile.z, x: tile.x, y: tile.y,
                                   tileSize: tileSize, density: density)
        let version = h.layer.version
        if let kept = keptCanvases.canvas(key), let changed = h.tileVersions.changes(after: kept.version),
           let canvas = try tileRenderer.renderPatched(h.layer, view: view, base: kept.canvas, changed: changed, now: now) {
            keptCanvases.store(key, canvas, version: version)
            tileRenders.patched.add(1, ordering: .relaxed)
            return TileCache.Tile(png: canvas.encodePNG(options: .tile), empty: canvas.isEmpty)
        }
        tileRenders.fromScratch.add(1, ordering: .relaxed)
        if tileRenderer.usesSweep(h.layer, view) {
            let canvas = try tileRenderer.render(h.layer, view: view, now: now).canvas
            keptCanvases.store(key, canvas, version: version)
            return TileCache.Tile(png: canvas.encodePNG(options: .tile), empty: canvas.isEmpty)
        }
        let t = try tileRenderer.renderTile(h.layer, tile: tile, tileSize: tileSize, density: density, now: now,
                                            keepCanvasFrom: configuration.keepCanvasFrom)
        if let canvas = t.canvas { keptCanvases.store(key, canvas, version: version) }
        return TileCache.Tile(png: t.png, empty: t.empty)
    }
}

/// How GetTile's marker rasters were rendered since the service started (tiles the cache could
/// not answer; cluster tiles not counted), for /metrics.
public struct TileRenderCounts: Sendable, Equatable {
    /// Rendered from scratch.
    public var fromScratch: Int
    /// Patched from a kept canvas (`KeptCanvases`): only the changed markers' windows rendered.
    public var patched: Int
    /// Bytes of dense tiles' canvases kept now (at most `ServiceConfiguration.keptCanvasBytes`).
    public var keptCanvasBytes: Int

    public init(fromScratch: Int, patched: Int, keptCanvasBytes: Int) {
        self.fromScratch = fromScratch; self.patched = patched; self.keptCanvasBytes = keptCanvasBytes
    }
}

/// The counters behind `TileRenderCounts`.
final class TileRenderCounters: Sendable {
    let fromScratch = Atomic<Int>(0)
    let patched = Atomic<Int>(0)
}

extension MarkerService {
    /// GetTile's renders so far, and the bytes of the canvases kept now (see `TileRenderCounts`).
    public var tileRenderCounts: TileRenderCounts {
        TileRenderCounts(fromScratch: tileRenders.fromScratch.load(ordering: .relaxed),
                         patched: tileRenders.patched.load(ordering: .relaxed), keptCanvasBytes: keptCanvases.bytes)
    }
}

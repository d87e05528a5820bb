import Foundation
import MarkerdCore
import MarkerdRender

/// The cold tiles of `TileBench` rendered in this process (`--only citytiles`): the same tiles
/// (the same seed and walk: tiles under random markers of city clusters at z 4, 10, 14, 18),
/// each at z >= 10 through `TileRenderer.renderTile` (render and PNG, 256 px, density 1) with the default
/// renderer and with one thread only (`bandsAbove: .max`), without markerd, RPC or the tile cache. Per zoom: wall clock and process CPU time
/// p50 / p99 per tile (process CPU counts every thread a render uses). For profiling the cold
/// path (`perf record -g marker-bench --only citytiles`).
struct CityTileBench {
    let options: Options
    let layer: SyntheticLayer
    let table: Table

    func run() throws {
        let label = Table.count(layer.count)
        Progress.log("[\(label)] city tiles: building MarkerLayer with \(label) markers")
        let (core, _) = try layer.coreLayer()
        // Bands on two threads for dense tiles (not the default) and one thread only, each
        // tile rendered with both in turn (alternating which goes first), under the same load.
        let renderers = [("two bands from 2,000 draws", TileRenderer(bandsAbove: 2_000)),
                         ("one thread", TileRenderer(bandsAbove: .max))]
        let calls = options.quick ? 100 : min(options.queries, 500)
        // TileBench's walk: one generator through every zoom in turn (so the same tiles, repeats included).
        var rng = SeededRNG(seed: options.seed &+ 40)
        for z in TileBench.zooms {
            let tiles = (0..<calls).map { _ in layer.tileNearCity(zoom: z, &rng) }
            // TileBench's warm pass draws one number per timed call.
            for _ in 0..<options.queries { _ = rng.next() }
            // z4 (not a target zoom, and 60x slower) is walked, not rendered.
            if z < 10 { continue }
            Progress.log("[\(label)] city tiles: z\(z), \(tiles.count) tiles, each with \(renderers.count) renderers")
            var wall = [[Double]](repeating: [], count: renderers.count), cpu = wall
            var markers = 0, bytes = 0
            for (i, t) in tiles.enumerated() {
                for k in 0..<renderers.count {
                    let which = (k + i) % renderers.count
                    let cpu0 = Machine.processCPUSeconds
                    let (r, elapsed) = try timed { () throws -> (png: [UInt8], empty: Bool, markers: Int) in
                        try renderers[which].1.renderTile(core, tile: t, tileSize: 256, density: 1, now: 0)
                    }
                    cpu[which].append((Machine.processCPUSeconds - cpu0) * 1e6)
                    wall[which].append(elapsed.micros)
                    if which == 0 { markers = max(markers, r.markers); bytes += r.png.count }
                }
            }
            for (k, (name, _)) in renderers.enumerated() {
                let w = LatencySummary(samplesMicros: wall[k]), c = LatencySummary(samplesMicros: cpu[k])
                table.add(Row(size: label, measure: "in-process cold city tile z\(z) (TileRenderer.renderTile: render + PNG, 256 px d1), \(name), wall / process CPU",
                              value: "\(Table.fixed(w.p50 / 1000, 2)) / \(Table.fixed(w.p99 / 1000, 2)); \(Table.fixed(c.p50 / 1000, 2)) / \(Table.fixed(c.p99 / 1000, 2))",
                              unit: "ms p50 / p99; CPU p50 / p99",
                              note: String(format: "%d tiles (TileBench's cold walk); wall mean %.2f ms, CPU mean %.2f ms; most markers in a tile %d; PNG %@ mean; loadavg %.1f",
                                           tiles.count, w.mean / 1000, c.mean / 1000, markers, Table.bytes(bytes / tiles.count), Machine.loadAverage ?? 0)))
            }
        }
        withExtendedLifetime(core) {}
    }
}

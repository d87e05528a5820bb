import Foundation
import MarkerdCore
import MarkerdRender

/// The cold tiles of `TileBench` rendered in this process (`--only citytiles`): the same tiles
/// (the same seed and walk: tiles under random markers of city clusters at z 4, 10, 14, 18),
/// each at z >= 10 through `TileRenderer.renderTile` (render and PNG, 256 px, density 1) with the
/// default renderer (one thread), without markerd, RPC or the tile cache. Per zoom: wall clock
/// and process CPU time p50 / p99 per tile; then the same tiles split into the render alone
/// (`TileRenderer.render`) and the PNG encoding of its canvas with the tiles' settings
/// (`PNGEncodeOptions.tile`) and with the alternatives in `encodings` (CPU time, bytes), so the
/// settings are chosen by measurement. For profiling the cold path (`perf record -g
/// marker-bench --only citytiles`).
struct CityTileBench {
    let options: Options
    let layer: SyntheticLayer
    let table: Table

    /// PNG settings compared on the rendered tiles: the first is `PNGEncodeOptions.tile`, encoded
    /// right after the sweep render has gone through the caches; level 1 comes again last, warm.
    static let encodings: [(String, PNGEncodeOptions)] = [("tile (level \(PNGEncodeOptions.tile.level))", .tile)]
        + [2, 3, 4, 6, 1].map { ("level \($0)", PNGEncodeOptions(level: $0)) }

    /// Distinct premultiplied RGBA values of a canvas (transparent included): whether it could be
    /// written as an indexed-colour PNG (at most 256).
    static func distinctColours(_ canvas: TileCanvas) -> Int {
        var seen = Set<UInt32>()
        canvas.pixels.withUnsafeBytes { px in
            for i in stride(from: 0, to: px.count, by: 4) { seen.insert(px.loadUnaligned(fromByteOffset: i, as: UInt32.self)) }
        }
        return seen.count
    }

    /// "distinct colours per canvas p50 / p99 / max, N of M canvases <= 256".
    static func colourSummary(_ counts: [Int]) -> String {
        let sorted = counts.sorted()
        guard !sorted.isEmpty else { return "no canvases" }
        let p = { (q: Double) in sorted[min(sorted.count - 1, Int(Double(sorted.count) * q))] }
        return "distinct premultiplied colours per canvas p50 / p99 / max \(p(0.5)) / \(p(0.99)) / \(sorted.last!), \(sorted.filter { $0 <= 256 }.count) of \(sorted.count) canvases <= 256 (an indexed-colour PNG)"
    }

    /// The cold tiles of `TileBench` at zoom `zoom` (one of `TileBench.zooms`; the first 500, 100
    /// with `--quick`): its walk replayed, one generator through every zoom in turn (so the same
    /// tiles, repeats included), with the one number TileBench's warm pass draws per timed call.
    static func walkTiles(_ layer: SyntheticLayer, _ options: Options, zoom: Int) -> [TileID] {
        let calls = options.quick ? 100 : min(options.queries, 500)
        var rng = SeededRNG(seed: options.seed &+ 40)
        for z in TileBench.zooms {
            let tiles = (0..<calls).map { _ in layer.tileNearCity(zoom: z, &rng) }
            if z == zoom { return tiles }
            for _ in 0..<options.queries { _ = rng.next() }
        }
        return []
    }

    func run() throws {
        let label = Table.count(layer.count)
        Progress.log("[\(label)] city tiles: building MarkerLayer with \(label) markers")
        let (core, _) = try layer.coreLayer()
        let renderer = TileRenderer()
        // The node sweep for every tile (`sweepAbove` 0; the default takes it from 500,000 markers around the tile).
        let sweeping = TileRenderer(sweepAbove: 0)
        // z4 (not a target zoom, and 60x slower) is not rendered.
        for z in TileBench.zooms where z >= 10 {
            let tiles = Self.walkTiles(layer, options, zoom: z)
            Progress.log("[\(label)] city tiles: z\(z), \(tiles.count) tiles")
            var wall: [Double] = [], cpu: [Double] = [], renderCPU: [Double] = [], sweepCPU: [Double] = []
            var encodeCPU = [[Double]](repeating: [], count: Self.encodings.count), encodeBytes = [Int](repeating: 0, count: Self.encodings.count)
            var markers = 0, bytes = 0
            var colours: [Int] = []  // distinct premultiplied RGBA values per canvas
            for t in tiles {
                let cpu0 = Machine.processCPUSeconds
                let (r, elapsed) = try timed { () throws -> (png: [UInt8], empty: Bool, markers: Int, canvas: TileCanvas?) in
                    try renderer.renderTile(core, tile: t, tileSize: 256, density: 1, now: 0)
                }
                cpu.append((Machine.processCPUSeconds - cpu0) * 1e6)
                wall.append(elapsed.micros)
                markers = max(markers, r.markers); bytes += r.png.count
                // The split: render alone, then each encoding of its canvas.
                let cpu1 = Machine.processCPUSeconds
                let raster = try renderer.render(core, view: .tile(t, tileSize: 256, density: 1), now: 0)
                renderCPU.append((Machine.processCPUSeconds - cpu1) * 1e6)
                colours.append(Self.distinctColours(raster.canvas))
                let cpu3 = Machine.processCPUSeconds
                _ = try sweeping.render(core, view: .tile(t, tileSize: 256, density: 1), now: 0)
                sweepCPU.append((Machine.processCPUSeconds - cpu3) * 1e6)
                for (k, (_, o)) in Self.encodings.enumerated() {
                    let cpu2 = Machine.processCPUSeconds
                    let png = raster.canvas.encodePNG(options: o)
                    encodeCPU[k].append((Machine.processCPUSeconds - cpu2) * 1e6)
                    encodeBytes[k] += png.count
                }
            }
            let w = LatencySummary(samplesMicros: wall), c = LatencySummary(samplesMicros: cpu), rc = LatencySummary(samplesMicros: renderCPU)
            let sc = LatencySummary(samplesMicros: sweepCPU)
            table.add(Row(size: label, measure: "in-process cold city tile z\(z) (TileRenderer.renderTile: render + PNG, 256 px d1), wall / process CPU",
                          value: "\(Table.fixed(w.p50 / 1000, 2)) / \(Table.fixed(w.p99 / 1000, 2)); \(Table.fixed(c.p50 / 1000, 2)) / \(Table.fixed(c.p99 / 1000, 2))",
                          unit: "ms p50 / p99; CPU p50 / p99",
                          note: String(format: "%d tiles (TileBench's cold walk); wall mean %.2f ms, CPU mean %.2f ms; most markers in a tile %d; PNG %@ mean; loadavg %.1f",
                                       tiles.count, w.mean / 1000, c.mean / 1000, markers, Table.bytes(bytes / tiles.count), Machine.loadAverage ?? 0)))
            let split = Self.encodings.enumerated().map { k, e in
                let s = LatencySummary(samplesMicros: encodeCPU[k])
                return "\(e.0) \(Table.fixed(s.p50 / 1000, 2)) / \(Table.fixed(s.p99 / 1000, 2)) ms, \(Table.bytes(encodeBytes[k] / tiles.count))"
            }
            table.add(Row(size: label, measure: "in-process cold city tile z\(z): render alone (TileRenderer.render), process CPU",
                          value: "\(Table.fixed(rc.p50 / 1000, 2)) / \(Table.fixed(rc.p99 / 1000, 2))",
                          unit: "ms CPU p50 / p99",
                          note: "the same tiles; \(Self.colourSummary(colours)); with the node sweep for every tile (sweepAbove 0) \(Table.fixed(sc.p50 / 1000, 2)) / \(Table.fixed(sc.p99 / 1000, 2)) ms; PNG encoding of the canvas, CPU p50 / p99 and mean bytes: " + split.joined(separator: "; ")))
        }
        withExtendedLifetime(core) {}
    }
}

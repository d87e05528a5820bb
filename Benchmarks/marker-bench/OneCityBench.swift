import Foundation
import MarkerdCore
import MarkerdRender

/// `--only onecity`: one Gaussian city the size of a city of the 10M layer, built in this
/// process in well under a second, and the z10 tile over its centre rendered again and again
/// on one thread (`TileRenderer.renderTimingPhases`: collect, sort, cull, draw), then its canvas
/// encoded as GetTile encodes it (`PNGEncodeOptions.tile`, one thread) as often.
///
/// The densest z10 tiles of the 10M layer (`--only densetiles`) need the 10M layer built first,
/// about a minute here and far too long under valgrind. This layer holds one of them: 23,333
/// markers (10M x 70 % / 300 cities), sigma 4 km (the synthetic cities' sigmas run 2-8 km; the
/// broad ones keep the most draws and are the slowest to render; with 4 km this tile keeps
/// about 11,600 draws, the 10M layer's densest tiles 1,600-13,600), at 40 N 10 E, default pins.
/// So it suits instruction counts (`valgrind --tool=callgrind`, repeatable whatever the host
/// is doing) as well as quick timings; see Benchmarks/results/diary.md, session 21.
struct OneCityBench {
    static let markers = 23_333, sigmaKm = 4.0, centre = LatLng(latitude: 40, longitude: 10)
    /// Renders timed, as `DenseTileBench` times each tile (under callgrind the whole run takes about 16 s).
    static let repetitions = DenseTileBench.repetitions
    let seed: UInt64
    let table: Table

    func run() throws {
        var rng = SeededRNG(seed: seed)
        let records = (0..<Self.markers).map { i in
            MarkerRecord(id: "c\(i)", position: SyntheticLayer.offset(Self.centre, northKm: rng.gaussian() * Self.sigmaKm,
                                                                      eastKm: rng.gaussian() * Self.sigmaKm),
                         draggable: false)
        }
        var layer = try MarkerLayer()
        _ = try layer.upsert(records, now: 0)
        let world = Mercator.worldSize
        guard let tile = TileID(z: 10, x: UInt32(Mercator.worldX(longitude: Self.centre.longitude) / world * 1024),
                                y: UInt32(Mercator.worldY(latitude: Self.centre.latitude) / world * 1024)) else {
            throw BenchError("no z10 tile over the city's centre")
        }
        let view = RasterView.tile(tile, tileSize: 256, density: 1)
        let renderer = TileRenderer()
        Progress.log("one city: \(Self.markers) markers, sigma \(Self.sigmaKm) km, tile \(tile.z)/\(tile.x)/\(tile.y), \(Self.repetitions) renders")
        var steps: [RenderPhaseTimes] = [], totals: [Double] = []
        var last: RenderedRaster? = nil
        for _ in 0..<Self.repetitions {
            let (raster, phases) = try renderer.renderTimingPhases(layer, view: view, now: 0)
            steps.append(phases)
            totals.append((phases.collect + phases.sort + phases.cull + phases.draw) * 1e6)
            last = raster
        }
        let median = { (key: KeyPath<RenderPhaseTimes, Double>) in LatencySummary(samplesMicros: steps.map { $0[keyPath: key] * 1e6 }).p50 }
        let summary = LatencySummary(samplesMicros: totals)
        let note = "\(Self.repetitions) renders of tile \(tile.z)/\(tile.x)/\(tile.y) on one thread; markers \(last?.markers ?? 0), draws \(last?.draws ?? 0); loadavg \(Table.fixed(Machine.loadAverage ?? 0, 1))"
        table.add(Row(size: Table.count(Self.markers),
                      measure: "in-process one city (\(Self.markers) markers, sigma \(Table.fixed(Self.sigmaKm, 0)) km), its z10 tile, render alone by step (TileRenderer.renderTimingPhases): collect / sort / cull / draw, median",
                      value: [\RenderPhaseTimes.collect, \.sort, \.cull, \.draw].map { Table.fixed(median($0) / 1000, 2) }.joined(separator: " / "),
                      unit: "ms thread CPU", note: note))
        // The PNG of the last canvas, as GetTile encodes a tile on one thread.
        var pngTimes: [Double] = [], pngBytes = 0
        if let canvas = last?.canvas {
            for _ in 0..<Self.repetitions {
                let c0 = Machine.threadCPUSeconds
                pngBytes = canvas.encodePNG(options: .tile).count
                pngTimes.append((Machine.threadCPUSeconds - c0) * 1e6)
            }
        }
        let png = LatencySummary(samplesMicros: pngTimes)
        table.add(Row(size: Table.count(Self.markers),
                      measure: "in-process one city, its z10 tile's PNG (PNGEncodeOptions.tile, one thread), fastest / median",
                      value: "\(Table.fixed((pngTimes.min() ?? 0) / 1000, 2)) / \(Table.fixed(png.p50 / 1000, 2))",
                      unit: "ms thread CPU", note: "\(Self.repetitions) encodings of the last render's canvas; \(Table.fixed(Double(pngBytes) / 1024, 1)) KB"))
        // The whole tile as GetTile makes it.
        var oneThread: [Double] = []
        for _ in 0..<Self.repetitions {
            let c0 = Machine.threadCPUSeconds
            _ = try renderer.renderTile(layer, tile: tile, tileSize: 256, density: 1, now: 0)
            oneThread.append((Machine.threadCPUSeconds - c0) * 1e6)
        }
        let ms = { (v: [Double]) in "\(Table.fixed((v.min() ?? 0) / 1000, 2)) / \(Table.fixed(LatencySummary(samplesMicros: v).p50 / 1000, 2))" }
        table.add(Row(size: Table.count(Self.markers),
                      measure: "in-process one city, its z10 tile, render + PNG (renderTile), fastest / median",
                      value: ms(oneThread), unit: "ms thread CPU", note: "\(Self.repetitions) renders"))
        table.add(Row(size: Table.count(Self.markers),
                      measure: "in-process one city, its z10 tile, render alone (the four steps), fastest / median",
                      value: "\(Table.fixed((totals.min() ?? 0) / 1000, 2)) / \(Table.fixed(summary.p50 / 1000, 2))",
                      unit: "ms thread CPU", note: note))
    }
}

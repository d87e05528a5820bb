import Foundation
import MarkerdCore
import MarkerdRender

/// The densest z10 tiles of `CityTileBench`'s walk, each rendered again and again in this process
/// (`--only densetiles`): an instrument for the CPU work on the tiles that set the cold z10 p99.
/// Per path, the thread CPU time of each tile's fastest repetition (its work with warm caches and
/// no preemption) and of its median one, summed over the tiles. The paths take turns within
/// every repetition, so they can be compared within one run. Between runs, even of the same build,
/// the sums moved by up to 14 % on session 19's host, so two builds are compared only over several
/// alternating runs. These are warm figures by design (the same tile over and over): do not
/// compare them with the cold rows (on session 20's host a dense tile rendered after 40 other
/// tiles and a 64 MiB memory sweep took 1.04x its warm time). A last row splits the one-thread
/// render into its steps (`TileRenderer.renderTimingPhases`): collect, sort, cull, draw.
struct DenseTileBench {
    let options: Options
    let layer: SyntheticLayer
    let table: Table

    /// Tiles measured (the densest of the walk's distinct z10 tiles) and repetitions per tile and path.
    static let tileCount = 8, repetitions = 21

    func run() throws {
        let label = Table.count(layer.count)
        Progress.log("[\(label)] dense tiles: building MarkerLayer with \(label) markers")
        let (core, _) = try layer.coreLayer()
        let renderer = TileRenderer()
        let walked = CityTileBench.walkTiles(layer, options, zoom: 10)
        var seen = Set<String>(), distinct: [(tile: TileID, markers: Int, draws: Int)] = []
        for t in walked where seen.insert("\(t.z)/\(t.x)/\(t.y)").inserted {
            let r = try renderer.render(core, view: .tile(t, tileSize: 256, density: 1), now: 0)
            distinct.append((t, r.markers, r.draws))
        }
        let dense = distinct.sorted { $0.markers > $1.markers }.prefix(Self.tileCount)
        // Tiles of about the same count differ mostly in how many draws the cull keeps: the more, the slower
        // (Benchmarks/results/diary.md, session 20).
        let counts = "markers / draws kept per tile \(dense.map { "\($0.markers) / \($0.draws)" }.joined(separator: ", "))"
        Progress.log("[\(label)] dense tiles: the \(dense.count) densest of \(distinct.count) distinct z10 tiles, \(counts); \(Self.repetitions) repetitions each")
        // Per path: per tile, the thread CPU µs of every repetition.
        var paths: [(name: String, samples: [[Double]])] = [
            ("render alone (TileRenderer.render), one thread", []),
            ("render + PNG (TileRenderer.renderTile), one thread", []),
            ("the grid walk alone (MarkerLayer.forEachStaticMarker over the tile and its margins, as a render's collect walks it; after the other paths, so with what they left in the caches)", []),
        ]
        // Per tile: the steps of the one-thread render (`renderTimingPhases`), every repetition.
        var steps: [[RenderPhaseTimes]] = []
        for (t, _, _) in dense {
            var s = [[Double]](repeating: [], count: paths.count)
            var tileSteps: [RenderPhaseTimes] = []
            for _ in 0..<Self.repetitions {
                // The paths in turn, so that a slow spell of the host falls on all of them.
                var c0 = Machine.threadCPUSeconds
                _ = try renderer.render(core, view: .tile(t, tileSize: 256, density: 1), now: 0)
                s[0].append((Machine.threadCPUSeconds - c0) * 1e6)
                c0 = Machine.threadCPUSeconds
                _ = try renderer.renderTile(core, tile: t, tileSize: 256, density: 1, now: 0)
                s[1].append((Machine.threadCPUSeconds - c0) * 1e6)
                c0 = Machine.threadCPUSeconds
                var found = 0
                // The search of `TileRenderer.collect` (one style in use: the style column is not read).
                let v = RasterView.tile(t, tileSize: 256, density: 1)
                core.forEachStaticMarker(viewX: [(Double(v.originX) / v.scale, Double(v.originX + Int64(v.width)) / v.scale)],
                                         viewY0: Double(v.originY) / v.scale, viewY1: Double(v.originY + Int64(v.height)) / v.scale,
                                         unitsPerPx: v.unitsPerPx, marginPx: TileRenderer.marginPx, now: 0, readStyles: false) { _ in found += 1 }
                s[2].append((Machine.threadCPUSeconds - c0) * 1e6)
                precondition(found > 0, "the walk found no marker in tile \(t)")
                tileSteps.append(try renderer.renderTimingPhases(core, view: v, now: 0).phases)
            }
            for k in paths.indices { paths[k].samples.append(s[k]) }
            steps.append(tileSteps)
        }
        for (k, p) in paths.enumerated() {
            let mins = p.samples.map { $0.min() ?? 0 }
            let medians = p.samples.map { LatencySummary(samplesMicros: $0).p50 }
            table.add(Row(size: label, measure: "in-process densest z10 city tiles, \(p.name), sum over the tiles of each tile's fastest / median repetition",
                          value: "\(Table.fixed(mins.reduce(0, +) / 1000, 2)) / \(Table.fixed(medians.reduce(0, +) / 1000, 2))",
                          unit: "ms thread CPU",
                          note: "\(dense.count) tiles x \(Self.repetitions) repetitions (warm: compare paths within one run, builds over several alternating runs, never with the cold rows); per tile fastest ms: \(mins.map { Table.fixed($0 / 1000, 2) }.joined(separator: ", "))\(k == 0 ? "; " + counts : ""); loadavg \(Table.fixed(Machine.loadAverage ?? 0, 1))"))
        }
        // Each step's median per tile, summed over the tiles.
        let stepNames: [(String, KeyPath<RenderPhaseTimes, Double>)] = [("collect", \.collect), ("sort", \.sort), ("cull", \.cull), ("draw", \.draw)]
        let stepSums = stepNames.map { _, key in steps.map { LatencySummary(samplesMicros: $0.map { $0[keyPath: key] * 1e6 }).p50 }.reduce(0, +) }
        table.add(Row(size: label, measure: "in-process densest z10 city tiles, render alone by step (TileRenderer.renderTimingPhases, one thread): \(stepNames.map(\.0).joined(separator: " / ")), sum over the tiles of each tile's median repetition",
                      value: stepSums.map { Table.fixed($0 / 1000, 2) }.joined(separator: " / "),
                      unit: "ms thread CPU",
                      note: "\(dense.count) tiles x \(Self.repetitions) repetitions, after the walk alone in each (warm); collect = grid walk + placing the sprites; cull = the coverage mask's front-to-back walk; loadavg \(Table.fixed(Machine.loadAverage ?? 0, 1))"))
        withExtendedLifetime(core) {}
    }
}

import Foundation
import MarkerdAPI
import MarkerdCore
import MarkerdRender
import MarkerdServer
import MarkerdService

/// Single moves on MarkerdCore's `MarkerLayer` in this process (no RPC, no locks, no journal):
/// builds the layer with the N synthetic markers, then times random small moves one by one
/// with `move(id:to:)` (validation, id lookup, grid relink, version bump). Also renders the z0
/// tile over all N markers in this process with each of `TileRenderer`'s culling paths (exact;
/// within 1/255; within 1/255 with the node sweep): time, markers visited one by one, draws
/// (`--only move`: the build and the moves only). The process runs on transparent huge pages
/// like markerd when GLIBC_TUNABLES asks for them (`make bench` does; see `Options.usage`); the
/// move row's note gives its AnonHugePages.
struct InProcessBench {
    let options: Options
    let layer: SyntheticLayer
    let table: Table

    func run() throws {
        let label = Table.count(layer.count)
        Progress.log("[\(label)] in-process: building MarkerLayer with \(label) markers")
        let built = try layer.coreLayer()
        var core = built.layer
        let build = built.elapsed
        guard core.count == layer.count else { throw BenchError("in-process layer holds \(core.count) markers") }
        table.add(Row(size: label, measure: "in-process MarkerLayer.upsert (build, batches of 100k)",
                      value: Table.rate(Double(layer.count) / build.seconds), unit: "markers/s",
                      note: String(format: "%.2f s, includes building the MarkerRecord values", build.seconds)))

        if !options.moveOnly { try renderZoomZero(core, label: label) }
        if options.zoomZeroOnly { try serviceZoomZero(label: label) }
        if options.renderOnly { return }

        let count = options.inProcessMoves
        var rng = SeededRNG(seed: options.seed &+ 3)
        var ids: [String] = []
        var targets: [LatLng] = []
        ids.reserveCapacity(count)
        targets.reserveCapacity(count)
        for _ in 0..<count {
            let m = layer.randomMove(&rng)
            ids.append(SyntheticLayer.id(m.index))
            targets.append(m.position)
        }
        Progress.log("[\(label)] in-process: \(Table.count(count)) single moves")
        let cpu0 = Machine.threadCPUSeconds
        let (_, elapsed) = try timed { () throws -> Void in
            for k in 0..<count { try core.move(id: ids[k], to: targets[k]) }
        }
        let cpuNs = (Machine.threadCPUSeconds - cpu0) * 1e9 / Double(count)
        let wallNs = elapsed.nanos / Double(count)
        // On a shared machine the wall clock includes time this thread waited for a core;
        // the thread's CPU time does not, so the target is checked on it.
        table.add(Row(size: label, measure: "in-process single move (MarkerLayer.move(id:to:)), thread CPU time",
                      value: Table.fixed(cpuNs, 0), unit: "ns/move",
                      target: Target(text: "< 2 µs", met: cpuNs < 2000),
                      note: "\(Table.count(count)) random moves of up to ~50 m; wall clock \(Table.fixed(wallNs, 0)) ns/move; "
                        + "this process: \(Machine.heapPages.hasPrefix("4 KiB") ? "4 KiB pages" : "huge pages"), "
                        + "AnonHugePages \(Table.bytes(Int(Machine.anonHugePagesBytes(pid: getpid()) ?? 0))) of VmRSS "
                        + "\(Table.bytes(Int(Machine.residentBytes(pid: getpid()) ?? 0)))"))
        withExtendedLifetime(core) {}
    }

    /// The z0 tile (256 px, density 1) with each culling path: best of 3 renders (thread CPU time).
    private func renderZoomZero(_ core: MarkerLayer, label: String) throws {
        let view = RasterView.tile(TileID(z: 0, x: 0, y: 0)!, tileSize: 256, density: 1)
        let paths: [(String, TileRenderer)] = (options.renderOnly ? [] : [
            ("exact (opaque cover only)", TileRenderer(culling: .exact)),
            ("within 1/255, no node sweep", TileRenderer(culling: .withinOne, sweepAbove: .max)),
        ]) + [("within 1/255, node sweep", TileRenderer(culling: .withinOne, sweepAbove: 0))]
        // Tiles under random markers (mostly in city clusters) at z4, 10 and 14: total thread CPU
        // time of the same tiles without and with the node sweep (default threshold).
        for z in options.zoomZeroOnly ? [] : [4, 10, 14] {
            var rng = SeededRNG(seed: options.seed &+ 77)
            let tiles = (0..<100).map { _ in TileID.containing(layer.position(rng.index(layer.count)), zoom: z) }
            var cpu: [Double] = []
            var swept = 0
            // `--only render`: the second renderer takes the sweep for every tile.
            for renderer in [TileRenderer(sweepAbove: .max), TileRenderer(sweepAbove: options.renderOnly ? 0 : 500_000)] {
                let cpu0 = Machine.threadCPUSeconds
                for t in tiles {
                    let v = RasterView.tile(t, tileSize: 256, density: 1)
                    if renderer.sweepAbove != .max && renderer.usesSweep(core, v) { swept += 1 }
                    _ = try renderer.render(core, view: v, now: 0)
                }
                cpu.append(Machine.threadCPUSeconds - cpu0)
            }
            table.add(Row(size: label, measure: "in-process z\(z) renders under random markers, without / with the node sweep, thread CPU time",
                          value: "\(Table.fixed(cpu[0] * 10, 2)) / \(Table.fixed(cpu[1] * 10, 2))", unit: "ms per tile (mean)",
                          note: "100 tiles, \(swept) of them take the sweep (" + (options.renderOnly ? "--only render: every tile" : "TileRenderer default threshold") + ")"))
        }
        for (name, renderer) in paths {
            Progress.log("[\(label)] in-process: z0 render, \(name)")
            var best = Double.infinity
            var last: RenderedRaster? = nil
            var times: [Double] = []
            for _ in 0..<(options.zoomZeroOnly ? 20 : 3) {
                let cpu0 = Machine.threadCPUSeconds
                last = try renderer.render(core, view: view, now: 0)
                times.append(Machine.threadCPUSeconds - cpu0)
                best = min(best, times.last!)
            }
            guard let r = last else { continue }
            if options.verbose { Progress.log("[\(label)] z0 render times (ms): " + times.map { Table.fixed($0 * 1000, 1) }.joined(separator: " ")) }
            table.add(Row(size: label, measure: "in-process z0 render (TileRenderer.render, no PNG), \(name), thread CPU time",
                          value: Table.fixed(best * 1000, 1), unit: "ms (best of \(options.zoomZeroOnly ? 20 : 3))",
                          note: "\(Table.count(r.markers)) markers counted, \(Table.count(r.visited)) visited one by one, \(Table.count(r.draws)) draws"))
        }
    }

    /// The z0 tile through `MarkerService.getTile` in this process (`--only z0`): the layer loaded
    /// through the upsert path in batches of 50,000 (as over RPC), then, 9 times, one static
    /// marker moved to the world's centre (a new version of every z0 tile) and the z0 tile asked
    /// for: the render, PNG encoding and the service's bookkeeping on this thread, without the
    /// network. Median process CPU time, to compare with the GetTile row of `--only tiles`
    /// (markerd's CPU) and the in-process render above; once with this process's allocator
    /// settings, then with markerd's (`MallocTuning.apply`: process-wide and for good, so last),
    /// then with those after 1,000 batches of 1,000 small moves (`MoveMarkers` as RPCBench sends
    /// them before the full run's z0 row: whether moved markers' grid entries slow the sweep).
    private func serviceZoomZero(label: String) throws {
        // No kept canvases: every render from scratch (markerd patches its kept z0 canvas after a
        // small change, measured by TileBench's second z0 row).
        var configuration = ServiceConfiguration()
        configuration.keptCanvasBytes = 0
        let service = MarkerService(configuration: configuration)
        let id = "z0"
        Progress.log("[\(label)] in-process: loading a MarkerService layer for GetTile z0")
        try InProcessService.load(service, layer.apiMarkers(), into: id, options: nil)
        let draggable = Set(layer.draggable)
        var next = layer.count - 1
        // 9 times: one static marker moved to the world's centre, then GetTile z0 timed.
        func renders(_ service: MarkerService) throws -> (cpu: [Double], wall: [Double], png: Int) {
            var cpu: [Double] = [], wall: [Double] = []
            var png = 0
            for _ in 0..<9 {
                while draggable.contains(next) { next -= 1 }
                var move = V1.MoveMarkersRequest()
                move.layerID = id
                move.moves = [V1.MarkerMove(id: SyntheticLayer.id(next), position: V1.LatLng(latitude: 0, longitude: 0))]
                next -= 1
                try InProcessService.mutate(service, .moveMarkers, move.serializedBytes())
                let cpu0 = Machine.processCPUSeconds
                let (r, elapsed) = try timed { try service.getTile(V1.GetTileRequest(layerID: id, z: 0, x: 0, y: 0, tileSize: 256, density: 1)) }
                cpu.append(Machine.processCPUSeconds - cpu0)
                wall.append(elapsed.micros / 1000)
                png = r.png.count
            }
            if options.verbose { Progress.log("[\(label)] GetTile z0 in process, process CPU (ms): " + cpu.map { Table.fixed($0 * 1000, 1) }.joined(separator: " ")) }
            return (cpu.sorted(), wall.sorted(), png)
        }
        func row(_ measure: String, _ r: (cpu: [Double], wall: [Double], png: Int)) {
            table.add(Row(size: label, measure: measure, value: Table.fixed(r.cpu[r.cpu.count / 2] * 1000, 1), unit: "ms (median of \(r.cpu.count))",
                          note: String(format: "min %.1f ms, max %.1f ms; wall clock median %.1f ms (min %.1f); PNG %@; loadavg %.1f",
                                       r.cpu.first! * 1000, r.cpu.last! * 1000, r.wall[r.wall.count / 2], r.wall.first!, Table.bytes(r.png),
                                       Machine.loadAverage ?? 0)))
        }
        for (tuned, moved) in [(false, false), (true, false), (true, true)] {
            if tuned && !moved && !MallocTuning.apply() { break }
            if moved {
                Progress.log("[\(label)] in-process: 1,000 batches of 1,000 small moves")
                var rng = SeededRNG(seed: options.seed &+ 41)
                for _ in 0..<1000 {
                    let batch = V1.MoveMarkersRequest(layerID: id, moves: layer.randomAPIMoves(1000, &rng))
                    try InProcessService.mutate(service, .moveMarkers, batch.serializedBytes())
                }
            }
            let setting = (tuned ? ", markerd's malloc settings" : "") + (moved ? ", after 1M small moves" : "")
            row("in-process GetTile z0 (MarkerService.getTile after a move, from scratch, no network\(setting)), process CPU time", try renders(service))
        }
        withExtendedLifetime(service) {}
        // A service that keeps the canvas (markerd's default): the first render from scratch,
        // the next 8 patched (the moved marker's two windows).
        let patching = MarkerService()
        Progress.log("[\(label)] in-process: loading a MarkerService layer that keeps swept canvases")
        try InProcessService.load(patching, layer.apiMarkers(), into: id, options: nil)
        row("in-process GetTile z0 (MarkerService.getTile after a move, the kept canvas patched: all but the first of 9, no network), process CPU time",
            try renders(patching))
        withExtendedLifetime(patching) {}
    }
}

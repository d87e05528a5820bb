import Foundation
import MarkerdCore

/// Single moves on MarkerdCore's `MarkerLayer` in this process (no RPC, no locks, no journal):
/// builds the layer with the N synthetic markers, then times random small moves one by one
/// with `move(id:to:)` (validation, id lookup, grid relink, version bump).
struct InProcessBench {
    let options: Options
    let layer: SyntheticLayer
    let table: Table

    func run() throws {
        let label = Table.count(layer.count)
        Progress.log("[\(label)] in-process: building MarkerLayer with \(label) markers")
        var core = try MarkerLayer()
        let (_, build) = try timed { () throws -> Void in
            var start = 0
            while start < layer.count {
                let end = min(layer.count, start + 100_000)
                _ = try core.upsert(layer.records(start..<end), now: 0)
                start = end
            }
        }
        guard core.count == layer.count else { throw BenchError("in-process layer holds \(core.count) markers") }
        table.add(Row(size: label, measure: "in-process MarkerLayer.upsert (build, batches of 100k)",
                      value: Table.rate(Double(layer.count) / build.seconds), unit: "markers/s",
                      note: String(format: "%.2f s, includes building the MarkerRecord values", build.seconds)))

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
                      note: "\(Table.count(count)) random moves of up to ~50 m; wall clock \(Table.fixed(wallNs, 0)) ns/move"))
        withExtendedLifetime(core) {}
    }
}

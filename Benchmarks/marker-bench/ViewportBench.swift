import Foundation
import MarkerdAPI
import MarkerdService

/// QueryViewport's server work in this process (`--only viewport`): a `MarkerService` loaded
/// with the N synthetic markers through its upsert path (as markerd is, minus the network),
/// then the RPC section's viewports (same seed, 1080x1920 px, z12-16 near cities) answered by
/// `queryViewportPayload` (the worker thread's path: query + encoded reply) on a TILED and a
/// NATIVE (limit 1000) layer. Each call is timed by this thread's CPU time, which the load of a
/// shared machine moves far less than the wall clock: a quick A/B of QueryViewport's server
/// side between builds, next to the RPC rows (round trip + server work).
struct ViewportBench {
    let options: Options
    let layer: SyntheticLayer
    let markers: [V1.Marker]
    let table: Table

    func run() throws {
        let label = Table.count(layer.count)
        let service = MarkerService()
        defer { service.close() }
        var native = V1.LayerOptions()
        native.tiling = V1.TilingOptions()
        native.tiling?.enabled = false
        for (id, options) in [("tiled", nil), ("native", native)] as [(String, V1.LayerOptions?)] {
            Progress.log("[\(label)] viewport: loading \(label) markers into \(id) in process")
            let cpu0 = Machine.cpuSeconds(pid: getpid()) ?? 0
            try InProcessService.load(service, markers, into: id, options: options)
            let cpu = (Machine.cpuSeconds(pid: getpid()) ?? 0) - cpu0
            Progress.log("[\(label)] viewport: \(id) loaded, process CPU \(Table.fixed(cpu * 1e6 / Double(max(1, markers.count)), 2)) µs/marker (request encoding included)")
        }
        var rng = SeededRNG(seed: options.seed &+ 1)
        let calls = options.queries
        let viewports = (0..<(2 * calls)).map { _ in layer.randomViewport(&rng) }
        for (id, mode) in [("tiled", "TILED"), ("native", "NATIVE, limit 1000")] {
            Progress.log("[\(label)] viewport: \(calls) QueryViewport calls on \(id) (after as many to warm up)")
            var cpu: [Double] = [], wall: [Double] = []
            var bytes = 0
            for (k, v) in viewports.enumerated() {
                let request = V1.QueryViewportRequest(layerID: id, bounds: v.bounds, zoom: v.zoom)
                let cpu0 = Machine.threadCPUSeconds
                let (payload, elapsed) = try timed { () throws(RPCError) in try service.queryViewportPayload(request) }
                let cpu1 = Machine.threadCPUSeconds
                guard k >= calls else { continue }   // the first half warms up
                cpu.append((cpu1 - cpu0) * 1e6)
                wall.append(elapsed.nanos / 1e3)
                bytes += payload.count
            }
            cpu.sort(); wall.sort()
            // After the timed calls (decoding each reply between them would cool the caches).
            var reuse = ReplyReuse()
            if id == "native" {
                for (k, v) in viewports.enumerated() {
                    let request = V1.QueryViewportRequest(layerID: id, bounds: v.bounds, zoom: v.zoom)
                    try reuse.add(try service.queryViewportPayload(request), timed: k >= calls, zoom: v.zoom)
                }
            }
            table.add(Row(size: label, measure: "in-process QueryViewport server work (\(mode)), thread CPU time",
                          value: "\(Table.micros(Stats.percentile(cpu, 0.5))) / \(Table.micros(Stats.percentile(cpu, 0.99)))",
                          unit: "µs p50 / p99",
                          note: "\(calls) calls of queryViewportPayload, mean \(Table.micros(Stats.mean(cpu))) µs; wall clock "
                              + "\(Table.micros(Stats.percentile(wall, 0.5))) / \(Table.micros(Stats.percentile(wall, 0.99))) µs; "
                              + "mean reply \(bytes / max(1, calls)) B" + (id == "native" ? "; " + reuse.note : "")))
        }
    }
}

/// How much of the NATIVE replies' markers earlier replies (warm-up included) already held: an
/// upper bound on what a memo of encoded markers (whatever its granularity, with unbounded
/// memory) could answer from memory, measured on the bench's own viewports.
struct ReplyReuse {
    private var seen = Set<String>()
    private var timedMarkers = 0, timedSeen = 0, calls = 0, mostlySeen = 0
    /// Per zoom band [12, 13), [13, 14), [14, 15), [15, 16]: timed calls, and those with >= 90 % of their markers seen before.
    private var byZoom = [(calls: Int, mostlySeen: Int)](repeating: (0, 0), count: 4)

    mutating func add(_ payload: [UInt8], timed: Bool, zoom: Double) throws {
        let ids = try V1.QueryViewportResponse(serializedBytes: payload).markers.map(\.id)
        if timed {
            let old = ids.reduce(0) { $0 + (seen.contains($1) ? 1 : 0) }
            let mostly = old * 10 >= ids.count * 9
            timedMarkers += ids.count; timedSeen += old; calls += 1
            if mostly { mostlySeen += 1 }
            let z = min(max(Int(zoom) - 12, 0), 3)
            byZoom[z].calls += 1
            if mostly { byZoom[z].mostlySeen += 1 }
        }
        seen.formUnion(ids)
    }

    var note: String {
        String(format: "%.1f %% of the timed replies' markers were in an earlier reply, %d of %d calls had >= 90 %% of theirs there; %d distinct markers over all calls",
               100 * Double(timedSeen) / Double(max(1, timedMarkers)), mostlySeen, calls, seen.count)
            + " (calls >= 90 % / calls at zoom 12-13, 13-14, 14-15, 15-16: " + byZoom.map { "\($0.mostlySeen)/\($0.calls)" }.joined(separator: ", ") + ")"
    }
}

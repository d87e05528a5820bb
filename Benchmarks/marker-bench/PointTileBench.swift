import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdCore

/// Point-tile (MVT) measurements (issue 35, item 3) for one marker count N against a fresh
/// `markerd --ephemeral` holding only the synthetic layer (default options: point tiles THIN
/// within 4,096 features and 500,000 bytes):
///
/// - the **z0** point tile (GetPointTile 0/0/0, extent 4096, unclustered), the first call (which
///   also builds the layer's grid cluster index, once), then **cold** calls, each after moving
///   one marker (a new layer version, so the cache cannot answer): bytes, features, latency and
///   markerd CPU;
/// - the same tile **cached** (no change in between), against the bare NNG round trip of the
///   same sizes (`RPCTiming`).
struct PointTileBench {
    static let layerID = "points"

    let options: Options
    let layer: SyntheticLayer
    let markers: [V1.Marker]
    let floor: Floor.Client
    let table: Table

    private var label: String { Table.count(layer.count) }
    /// Cold calls timed (each after a version bump).
    private var coldRuns: Int { options.quick ? 5 : 21 }

    func run() throws {
        let server = try MarkerdProcess(path: options.markerdPath, arguments: ["--ephemeral"], echo: options.verbose)
        defer { server.stop() }
        let client = server.client
        Progress.log("[\(label)] point tiles: markerd pid \(server.pid) at \(server.url)")
        _ = try client.createLayer(V1.CreateLayerRequest(layerID: Self.layerID, options: nil))
        _ = try Loading.load(client, serverPID: server.pid, markers, into: Self.layerID, label: "[\(label)] load point tiles")
        let request = V1.GetPointTileRequest(layerID: Self.layerID, z: 0, x: 0, y: 0)
        func getPointTile() throws -> V1.GetPointTileResponse {
            try client.call("GetPointTile", request, as: V1.GetPointTileResponse.self)
        }

        let host = HostReference.measure()
        table.add(host.row(when: "before the z0 point tile"))
        let (first, firstElapsed) = try timed { try getPointTile() }
        guard let decoded = VectorTilePointLayer.decodeFirstLayer(first.mvt) else { throw BenchError("the z0 point tile does not decode") }
        let thinned = decoded.features.filter { f in f.properties.contains { $0.key == "point_count" } }.count

        // Cold: one static marker moved before each call (new layer version, new cache key).
        var micros: [Double] = [], cpu: [Double] = [], bytes = 0
        Progress.log("[\(label)] GetPointTile z0: \(coldRuns) cold calls")
        for run in 0..<coldRuns {
            let id = SyntheticLayer.id((layer.count - 1 - run + layer.count) % layer.count)
            _ = try client.moveMarkers(Self.layerID, [V1.MarkerMove(id: id, position: V1.LatLng(latitude: Double(run % 60), longitude: Double(run * 7 % 340) - 170))])
            let cpu0 = Machine.cpuSeconds(pid: server.pid) ?? 0
            let (r, elapsed) = try timed { try getPointTile() }
            cpu.append((Machine.cpuSeconds(pid: server.pid) ?? 0) - cpu0)
            micros.append(elapsed.micros)
            bytes = r.mvt.count
        }
        let sorted = micros.sorted()
        table.add(Row(size: label, measure: "GetPointTile z0 (MVT 0/0/0 over all N markers, default budget: THIN), cold (one marker moved before each call)",
                      value: "\(Table.fixed(Stats.percentile(sorted, 0.5) / 1000, 2)) / \(Table.fixed(sorted.last! / 1000, 2))",
                      unit: "ms median / max",
                      note: String(format: "%d calls; MVT %@ (%d features, %d with point_count; budget 4,096 features, 500,000 bytes); markerd CPU %.2f ms per call (median); first call %.1f ms (builds the grid cluster index once); loadavg %.1f",
                                   micros.count, Table.bytes(bytes), decoded.features.count, thinned,
                                   cpu.sorted()[cpu.count / 2] * 1000, firstElapsed.micros / 1000, Machine.loadAverage ?? 0)
                          + "; median \(host.scaled(Stats.percentile(sorted, 0.5)))"))

        // Cached: the same tile again, nothing changed.
        let timedCalls = [V1.GetPointTileRequest](repeating: request, count: options.quick ? 200 : min(options.queries, 1000))
        Progress.log("[\(label)] GetPointTile z0 cached: \(timedCalls.count) calls")
        let s = try RPCTiming.measure(client, "GetPointTile", as: V1.GetPointTileResponse.self, floor: floor, warmup: [request],
                                      timed: timedCalls) { r in
            precondition(!r.notModified && r.mvt.count == bytes, "the cached z0 point tile changed")
        }
        table.addLatency(size: label, measure: "GetPointTile z0 cached (the same MVT again, a tile-cache lookup)", s,
                         note: "MVT \(Table.bytes(bytes)); \(timedCalls.count) calls")
    }
}

import Dispatch
import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdCore

/// Raster-tile measurements (issue 4) for one marker count N against a fresh
/// `markerd --ephemeral` holding only the synthetic layer (TILED, default options: 256 px tiles,
/// default pins):
///
/// - **cold** GetTile at z 4, 10, 14 and 18 (256 px, density 1) of tiles under random markers of
///   the city clusters: every
///   timed call renders. A tile is asked for the first time, or, when the random walk lands on a
///   tile already asked for, one static marker is first moved into it (untimed), which changes
///   its version, so the cache (keyed by version) cannot answer;
/// - **warm** GetTile: the same tiles again (cached), each call followed by a bare NNG round
///   trip of the same request and reply sizes (`RPCTiming`);
/// - the **z0** tile over all N markers, each run after moving one marker (a new version);
/// - PNG bytes per tile by zoom, and cold tiles per second with 2 and 4 calls in flight.
struct TileBench {
    static let layerID = "tiles"
    static let zooms = [4, 10, 14, 18]

    let options: Options
    let layer: SyntheticLayer
    let markers: [V1.Marker]
    let floor: Floor.Client
    let table: Table

    private var label: String { Table.count(layer.count) }
    /// Timed cold calls per zoom (each renders a tile).
    private var coldCalls: Int { options.quick ? 100 : min(options.queries, 500) }
    /// z0 renders timed.
    private var z0Runs: Int { options.quick ? 3 : 7 }

    func run() throws {
        let server = try MarkerdProcess(path: options.markerdPath, arguments: ["--ephemeral"], echo: options.verbose)
        defer { server.stop() }
        let client = server.client
        Progress.log("[\(label)] tiles: markerd pid \(server.pid) at \(server.url)")
        _ = try client.createLayer(V1.CreateLayerRequest(layerID: Self.layerID, options: nil))
        _ = try Loading.load(client, serverPID: server.pid, markers, into: Self.layerID, label: "[\(label)] load tiles")

        var rng = SeededRNG(seed: options.seed &+ 40)
        let mover = Mover(layer: layer)
        var pngBytes: [(zoom: Int, mean: Double)] = []
        for z in Self.zooms {
            let cold = try coldTiles(client, serverPID: server.pid, zoom: z, mover: mover, &rng)
            pngBytes.append((z, cold.meanPNGBytes))
            try warmTiles(client, zoom: z, tiles: cold.tiles, &rng)
        }
        table.add(Row(size: label, measure: "PNG bytes per tile (the cold tiles above, 256 px, density 1)",
                      value: pngBytes.map { "z\($0.zoom) \(Table.bytes(Int($0.mean.rounded())))" }.joined(separator: ", "),
                      unit: "mean", note: "PNGEncodeOptions.tile (libdeflate, no filter); empty tiles count as the shared transparent PNG"))
        try zoomZero(client, serverPID: server.pid, mover: mover)
        for inFlight in [2, 4] { try throughput(client, serverPID: server.pid, inFlight: inFlight) }
    }

    // MARK: Workload

    /// Moves static markers (one per call, round robin over the non-draggable ones from the end
    /// of the id range) so that a tile gets a new version.
    final class Mover {
        private var next: Int
        private let draggable: Set<Int>
        private let layer: SyntheticLayer
        init(layer: SyntheticLayer) {
            self.layer = layer
            draggable = Set(layer.draggable)
            next = layer.count - 1
        }

        /// Moves one static marker to the centre of `tile` (a tile's version changes when a
        /// marker moves into its padded area).
        func bump(_ client: MarkerdClient, into tile: TileID) throws {
            while draggable.contains(next) { next -= 1 }
            let r = tile.worldRect
            let p = V1.LatLng(latitude: Mercator.latitude(worldY: (r.minY + r.maxY) / 2),
                              longitude: Mercator.longitude(worldX: (r.minX + r.maxX) / 2))
            let moved = try client.moveMarkers(TileBench.layerID, [V1.MarkerMove(id: SyntheticLayer.id(next), position: p)])
            guard moved.movedCount == 1 else { throw BenchError("bump: marker \(SyntheticLayer.id(next)) did not move") }
            next = next > 0 ? next - 1 : layer.count - 1
        }

        /// Moves `count` static markers to points spread over the world (`seed` picks them): more
        /// changes than markerd keeps for patching dense rasters (`TileVersions.recentLimit` 256 to
        /// 512 footprints, two per move),
        /// so its next z0 render starts from scratch.
        func scatter(_ client: MarkerdClient, count: Int, seed: UInt64) throws {
            var rng = SeededRNG(seed: seed)
            var moves: [V1.MarkerMove] = []
            for _ in 0..<count {
                while draggable.contains(next) { next -= 1 }
                let p = V1.LatLng(latitude: (rng.unit() - 0.5) * 140, longitude: (rng.unit() - 0.5) * 358)
                moves.append(V1.MarkerMove(id: SyntheticLayer.id(next), position: p))
                next = next > 0 ? next - 1 : layer.count - 1
            }
            let moved = try client.moveMarkers(TileBench.layerID, moves)
            guard moved.movedCount == count else { throw BenchError("scatter: \(moved.movedCount) of \(count) markers moved") }
        }
    }

    private func request(_ t: TileID) -> V1.GetTileRequest {
        V1.GetTileRequest(layerID: Self.layerID, z: UInt32(t.z), x: t.x, y: t.y, tileSize: 256, density: 1)
    }

    private func getTile(_ client: MarkerdClient, _ t: TileID) throws -> V1.GetTileResponse {
        try client.call("GetTile", request(t), as: V1.GetTileResponse.self)
    }

    // MARK: Cold

    private func coldTiles(_ client: MarkerdClient, serverPID: Int32, zoom z: Int, mover: Mover, _ rng: inout SeededRNG)
        throws -> (tiles: [TileID], meanPNGBytes: Double) {
        var asked = Set<TileID>(), tiles: [TileID] = []
        var micros: [Double] = [], floorMicros: [Double] = [], bytes: [Int] = []
        var bumps = 0, empty = 0
        var cpu = 0.0  // markerd CPU seconds during the timed calls (clock ticks: exact on average only)
        var sizes: Floor.Sizes? = nil
        Progress.log("[\(label)] GetTile cold z\(z): \(coldCalls) calls")
        var firstMicros: [Double] = [], bumpedMicros: [Double] = []
        // The host's speed against the issue's machine, just before (z >= 10: the target's zooms).
        let host = z >= 10 ? HostReference.measure() : nil
        if let host { table.add(host.row(when: "before cold z\(z)")) }
        for _ in 0..<coldCalls {
            let t = layer.tileNearCity(zoom: z, &rng)
            let first = asked.insert(t).inserted
            if !first {
                try mover.bump(client, into: t)
                bumps += 1
            } else {
                tiles.append(t)
            }
            let cpu0 = Machine.cpuSeconds(pid: serverPID) ?? 0
            let (r, elapsed) = try timed { try getTile(client, t) }
            cpu += (Machine.cpuSeconds(pid: serverPID) ?? 0) - cpu0
            micros.append(elapsed.micros)
            if first { firstMicros.append(elapsed.micros) } else { bumpedMicros.append(elapsed.micros) }
            bytes.append(r.png.count)
            if r.empty { empty += 1 }
            // The floor of this call's sizes (the first call's; tile sizes vary, the floor barely).
            let s = sizes ?? Floor.Sizes(request: RPCTiming.requestEnvelopeSize(method: "GetTile", payload: request(t), mutation: false),
                                         reply: RPCTiming.replyEnvelopeSize(payload: r))
            if sizes == nil { sizes = s; _ = try floor.measure(s, iterations: 1, warmup: 50) }
            floorMicros.append(try floor.roundTrip(s).micros)
        }
        let s = LatencySummary(samplesMicros: micros), f = LatencySummary(samplesMicros: floorMicros)
        var row = Row(size: label, measure: "GetTile cold z\(z), 256 px d1, tiles under city markers (renders every call)",
                      value: "\(Table.fixed(s.p50 / 1000, 2)) / \(Table.fixed(s.p99 / 1000, 2))", unit: "ms p50 / p99",
                      floor: "\(Table.micros(f.p50)) / \(Table.micros(f.p99)) @ \(sizes!)",
                      ratio: String(format: "%.0fx / %.0fx", s.p50 / f.p50, s.p99 / f.p99),
                      note: String(format: "%d calls: %d distinct tiles, %d after a version bump (a marker moved in, untimed); %@; max %.1f ms; %d empty; PNG %@ mean; markerd CPU %.2f ms per call (mean); loadavg %.1f",
                                   micros.count, tiles.count, bumps, Self.split(first: firstMicros, bumped: bumpedMicros),
                                   micros.max()! / 1000, empty,
                                   Table.bytes(bytes.reduce(0, +) / max(1, bytes.count)), cpu * 1000 / Double(micros.count),
                                   Machine.loadAverage ?? 0))
        row.samplesMicros = s.sortedMicros
        row.floorSamplesMicros = f.sortedMicros
        if z >= 10 { row.target = Target(text: "p99 < 5 ms (z >= 10)", met: s.p99 < 5000) }
        if let host { row.note += "; p99 \(host.scaled(s.p99))" }
        table.add(row)
        return (tiles, Double(bytes.reduce(0, +)) / Double(max(1, bytes.count)))
    }

    /// The cold calls' p50 / p99 split into first asks (always rendered from scratch) and calls
    /// after a bump (markerd may patch the canvas it kept of a dense tile: `KeptCanvases`).
    private static func split(first: [Double], bumped: [Double]) -> String {
        func part(_ name: String, _ m: [Double]) -> String {
            guard !m.isEmpty else { return "\(name): none" }
            let s = LatencySummary(samplesMicros: m)
            return "\(name) \(Table.fixed(s.p50 / 1000, 2)) / \(Table.fixed(s.p99 / 1000, 2)) ms p50 / p99"
        }
        return part("first asks", first) + ", " + part("after a bump", bumped)
    }

    // MARK: Warm

    private func warmTiles(_ client: MarkerdClient, zoom z: Int, tiles: [TileID], _ rng: inout SeededRNG) throws {
        // Every tile is cached now (the cold pass asked for each at its current version). Warm-up:
        // each once more (also the floor's sizes); timed: random ones of them.
        let warmup = tiles.map(request)
        let timed = (0..<options.queries).map { _ in warmup[rng.index(warmup.count)] }
        Progress.log("[\(label)] GetTile warm z\(z): \(timed.count) calls over \(tiles.count) cached tiles")
        let s = try RPCTiming.measure(client, "GetTile", as: V1.GetTileResponse.self, floor: floor, warmup: warmup, timed: timed) { r in
            precondition(!r.notModified, "GetTile without known_version answered not_modified")
        }
        table.addLatency(size: label, measure: "GetTile warm (cached) z\(z), 256 px d1", s,
                         target: { _ in
                             let r50 = s.latency.p50 / s.floor.p50, r99 = s.latency.p99 / s.floor.p99
                             return Target(text: "p50 and p99 <= 1.5x floor", met: r50 <= 1.5 && r99 <= 1.5)
                         },
                         note: "\(timed.count) calls over \(tiles.count) tiles")
    }

    // MARK: z0

    private func zoomZero(_ client: MarkerdClient, serverPID: Int32, mover: Mover) throws {
        let world = TileID(z: 0, x: 0, y: 0)!
        // From scratch first (300 markers moved before each render: more changes than markerd
        // keeps to patch the tile, 512 footprints at most), then after one marker moved (markerd
        // patches its kept canvas).
        for scratch in [true, false] {
            var micros: [Double] = [], cpu: [Double] = []
            var png = 0
            // The host's speed just before the row with a target.
            let host = scratch ? HostReference.measure() : nil
            if let host { table.add(host.row(when: "before z0")) }
            Progress.log("[\(label)] GetTile z0: \(z0Runs) renders \(scratch ? "from scratch" : "after one marker moved")")
            for run in 0..<z0Runs {
                if scratch { try mover.scatter(client, count: 300, seed: options.seed &+ 900 &+ UInt64(run)) } else { try mover.bump(client, into: world) }
                let cpu0 = Machine.cpuSeconds(pid: serverPID) ?? 0
                let (r, elapsed) = try timed { try getTile(client, world) }
                cpu.append((Machine.cpuSeconds(pid: serverPID) ?? 0) - cpu0)
                micros.append(elapsed.micros)
                png = r.png.count
            }
            let sorted = micros.sorted()
            let note = String(format: "%d renders: min %.1f ms, max %.1f ms; markerd CPU %.0f ms per render (median); PNG %@; loadavg %.1f",
                              micros.count, sorted.first! / 1000, sorted.last! / 1000, cpu.sorted()[cpu.count / 2] * 1000,
                              Table.bytes(png), Machine.loadAverage ?? 0) + (host.map { "; median \($0.scaled(Stats.percentile(sorted, 0.5)))" } ?? "")
            if scratch {
                table.add(Row(size: label, measure: "GetTile z0 over all N markers, 256 px d1, from scratch (300 markers moved first)",
                              value: Table.fixed(Stats.percentile(sorted, 0.5) / 1000, 1), unit: "ms median",
                              target: Target(text: "< 100 ms at 10M", met: Stats.percentile(sorted, 0.5) < 100_000,
                                             atTargetSize: layer.count >= 10_000_000),
                              note: note))
            } else {
                table.add(Row(size: label, measure: "GetTile z0 over all N markers, 256 px d1, after one marker moved (markerd patches its kept canvas)",
                              value: Table.fixed(Stats.percentile(sorted, 0.5) / 1000, 1), unit: "ms median", note: note))
            }
        }
    }

    // MARK: Throughput

    /// Distinct cold z13 tiles under city markers (never asked before), `inFlight` calls at a time.
    private func throughput(_ client: MarkerdClient, serverPID: Int32, inFlight: Int) throws {
        var set = Set<TileID>()
        var tries = 0
        let want = options.quick ? 300 : 2000
        let seed = options.seed &+ UInt64(100 + inFlight)
        var local = SeededRNG(seed: seed)
        while set.count < want && tries < want * 50 {
            set.insert(layer.tileNearCity(zoom: 13, &local))
            tries += 1
        }
        let requests = set.map(request)
        Progress.log("[\(label)] GetTile cold z13 throughput: \(requests.count) tiles, \(inFlight) in flight")
        final class Cursor: @unchecked Sendable {
            let lock = NSLock()
            var next = 0            // guarded by lock
            var error: Error?       // guarded by lock
        }
        let cursor = Cursor()
        let cpu0 = Machine.cpuSeconds(pid: serverPID) ?? 0
        let (_, elapsed) = timed {
            DispatchQueue.concurrentPerform(iterations: inFlight) { _ in
                while true {
                    let i: Int? = cursor.lock.withLock {
                        guard cursor.error == nil, cursor.next < requests.count else { return nil }
                        defer { cursor.next += 1 }
                        return cursor.next
                    }
                    guard let i else { return }
                    do { _ = try client.call("GetTile", requests[i], as: V1.GetTileResponse.self) } catch { cursor.lock.withLock { cursor.error = error } }
                }
            }
        }
        if let error = cursor.error { throw error }
        let cpu = (Machine.cpuSeconds(pid: serverPID) ?? 0) - cpu0
        table.add(Row(size: label, measure: "GetTile cold z13 tiles per second, \(inFlight) calls in flight (2 cores)",
                      value: Table.rate(Double(requests.count) / elapsed.seconds), unit: "tiles/s",
                      note: String(format: "%d distinct tiles in %.2f s; markerd CPU %.2f ms per tile; loadavg %.1f",
                                   requests.count, elapsed.seconds, cpu * 1000 / Double(requests.count), Machine.loadAverage ?? 0)))
    }
}

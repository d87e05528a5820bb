import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdCore

/// The clustering measurements for one marker count N (issue 5), markerd's grid clusters next to
/// pysupercluster on the same points, in the same run:
///
/// 1. **RPC** against a fresh `markerd --ephemeral`: load the N synthetic markers into a layer
///    with the default clustering options (grid, radius 60 px, extent 512, max zoom 16), then the
///    first GetClusters builds the grid clusters of the freshly loaded layer: its wall time and
///    markerd's CPU time, and markerd's VmRSS growth. GetClusters for the whole world at zoom 0,
///    1, 2, 3 and for 1080x1920 px viewports at zoom 12 near city centres, each next to the bare
///    NNG floor of the same request/reply sizes (`RPCTiming`). Moving 1 % of the markers
///    (MoveMarkers batches of 1,000) and querying the world at zoom 3 again. Finally a second
///    layer created with clustering enabled, so the clusters follow every upsert of its load.
/// 2. **In-process**: `MarkerLayer` with the N markers, `enableGridClusters` timed, then single
///    `move(id:to:)` calls with the clusters maintained (small moves of up to ~50 m, and jumps to
///    a random point of the world), and the same kinds of moves without clusters.
/// 3. **pysupercluster** (PyPI), run by `python3` on the same visible static points (the
///    draggable ones are never clustered, so they are left out) read from a temporary file: its
///    index build time (wall and CPU) and RSS growth, then a full rebuild after the same 1 % of
///    moves plus the world query at zoom 3. Skipped with a note when pysupercluster is missing.
struct ClusterBench {
    static let layerID = "clusters"
    static let eagerLayerID = "clusters-eager"
    /// The whole world (latitudes beyond the Web Mercator limit are clamped).
    static let world = V1.Bounds(west: -180, south: -90, east: 180, north: 90)
    /// Zoom of the world query repeated after the moves.
    static let requeryZoom = 3

    let options: Options
    let layer: SyntheticLayer
    let markers: [V1.Marker]
    let floor: Floor.Client
    let table: Table

    private var n: Int { layer.count }
    private var label: String { Table.count(n) }
    /// Markers that take part in clustering (visible, not draggable).
    private var clusterable: Int { n - layer.draggable.count }
    var warmupCalls: Int { max(20, options.queries) }

    /// What the markerd run measured for the comparison with pysupercluster.
    private struct MarkerdFigures {
        var buildSeconds = 0.0
        var buildCPUSeconds = 0.0
        var rssGrowth = 0.0
        var moveSeconds = 0.0
        var requerySeconds = 0.0
        /// (index, new position) of every move sent, in order.
        var moves: [(Int, LatLng)] = []
    }

    /// `CB_QUERIES_ONLY=1` in the environment: the RPC load, build and GetClusters rows only (no
    /// moves, eager load, in-process or pysupercluster rows), for A/B runs of markerd builds.
    static var queriesOnly: Bool { ProcessInfo.processInfo.environment["CB_QUERIES_ONLY"] != nil }

    func run() throws {
        let figures = try runMarkerd()
        if Self.queriesOnly { return }
        try runInProcess()
        try runPysupercluster(figures)
    }

    // MARK: markerd over RPC

    private func runMarkerd() throws -> MarkerdFigures {
        var f = MarkerdFigures()
        let server = try MarkerdProcess(path: options.markerdPath, arguments: ["--ephemeral"], echo: options.verbose)
        defer { server.stop() }
        let client = server.client
        Progress.log("[\(label)] clusters: markerd pid \(server.pid) at \(server.url)")
        _ = try client.createLayer(V1.CreateLayerRequest(layerID: Self.layerID, options: nil))
        let load = try Loading.load(client, serverPID: server.pid, markers, into: Self.layerID, label: "[\(label)] clusters load")
        usleep(500_000)
        let rssLoaded = Double(server.residentBytes)
        let bytesLoaded = try client.layerStats(Self.layerID).approximateBytes

        // The first GetClusters builds the grid clusters of the loaded layer.
        Progress.log("[\(label)] clusters: first GetClusters (builds the grid clusters)")
        let cpu0 = Machine.cpuSeconds(pid: server.pid) ?? 0
        let (first, build) = try timed { () throws -> V1.GetClustersResponse in
            try client.call("GetClusters", V1.GetClustersRequest(layerID: Self.layerID, bounds: Self.world, zoom: 0),
                            as: V1.GetClustersResponse.self)
        }
        f.buildSeconds = build.seconds
        f.buildCPUSeconds = (Machine.cpuSeconds(pid: server.pid) ?? 0) - cpu0
        try checkWorldCounts(first, zoom: 0)
        usleep(500_000)
        f.rssGrowth = Double(server.residentBytes) - rssLoaded
        let indexBytes = try client.layerStats(Self.layerID).approximateBytes - bytesLoaded
        table.add(Row(size: label, measure: "markerd grid clusters: build on the first GetClusters after the load (world z0)",
                      value: Table.fixed(f.buildSeconds, 2), unit: "s",
                      note: String(format: "markerd CPU %.2f s; VmRSS +%@ (%.1f B/marker), index ~%@ by approximate_bytes; load before it %.2f s (%@)",
                                   f.buildCPUSeconds, Table.bytes(Int(f.rssGrowth)), f.rssGrowth / Double(clusterable),
                                   Table.bytes(Int(indexBytes)), load.seconds, load.cpuNote)))

        try queries(client)
        if Self.queriesOnly { return f }
        try moves(client, &f)
        try eagerLoad(client, serverPID: server.pid, plainLoad: load)
        Progress.log("[\(label)] clusters: markerd VmRSS at the end: \(Table.bytes(Int(server.residentBytes)))")
        return f
    }

    /// Every clusterable marker is in a world answer exactly once (counts add up).
    private func checkWorldCounts(_ r: V1.GetClustersResponse, zoom: Int) throws {
        let total = r.clusters.reduce(0) { $0 + Int($1.markerCount) } + r.markers.count
        guard total == clusterable else {
            throw BenchError("GetClusters world z\(zoom): counts add up to \(total), expected \(clusterable)")
        }
    }

    private func queries(_ client: MarkerdClient) throws {
        let target: (Double) -> Target = { Target(text: "p99 <= 2x floor at 10M", met: $0 <= 2, atTargetSize: n >= 10_000_000) }
        for zoom in 0...3 {
            let request = V1.GetClustersRequest(layerID: Self.layerID, bounds: Self.world, zoom: Double(zoom))
            var clusters = 0, markers = 0
            var countError: Error?
            Progress.log("[\(label)] GetClusters world z\(zoom): \(options.queries) calls")
            let s = try RPCTiming.measure(client, "GetClusters", as: V1.GetClustersResponse.self, floor: floor,
                                          warmup: Array(repeating: request, count: 50),
                                          timed: Array(repeating: request, count: options.queries)) { r in
                clusters = r.clusters.count
                markers = r.markers.count
                if countError == nil { do { try checkWorldCounts(r, zoom: zoom) } catch { countError = error } }
            }
            if let countError { throw countError }
            table.addLatency(size: label, measure: "GetClusters whole world z\(zoom) (grid)", s, target: target,
                             note: "\(options.queries) calls; \(clusters) clusters + \(markers) markers per answer; counts add up to the \(Table.count(clusterable)) clusterable markers; "
                                 + Self.copyNote(s))
        }

        // GetClusters zooms follow supercluster and MapLibre/Mapbox GL: a tile is `extent` (512)
        // screen px wide, so a 1080x1920 px screen at zoom 12 spans the bounds of a 540x960 px
        // view in marker-bench's 256 px tile units.
        let requests = Self.cityRequests(layer, seed: options.seed, count: warmupCalls + options.queries)
        var clusters = 0, markers = 0, members = 0
        Progress.log("[\(label)] GetClusters city z12: \(options.queries) calls")
        let s = try RPCTiming.measure(client, "GetClusters", as: V1.GetClustersResponse.self, floor: floor,
                                      warmup: Array(requests.prefix(warmupCalls)), timed: Array(requests.dropFirst(warmupCalls))) { r in
            clusters += r.clusters.count
            markers += r.markers.count
            members += r.clusters.reduce(0) { $0 + Int($1.markerCount) }
        }
        let q = Double(options.queries)
        table.addLatency(size: label, measure: "GetClusters 1080x1920 px z12 (512 px tiles) near cities (grid)", s, target: target,
                         note: String(format: "%d calls; avg %.0f clusters (%.0f markers in them) + %.0f markers per answer; ",
                                       options.queries, Double(clusters) / q, Double(members) / q, Double(markers) / q) + Self.copyNote(s))
    }

    /// The series' latency with the client's copy of the reply into an array, and its ratios.
    static func copyNote(_ s: RPCTiming.Series) -> String {
        String(format: "with the client's copy of the reply into an array (as timed before 2026-11-30) %@ / %@ µs (%.2fx / %.2fx)",
               Table.micros(s.latencyWithCopy.p50), Table.micros(s.latencyWithCopy.p99),
               s.latencyWithCopy.p50 / s.floor.p50, s.latencyWithCopy.p99 / s.floor.p99)
    }

    /// The city GetClusters requests (1080x1920 px viewports at zoom 12 near city centres, 512 px
    /// tiles) of the RPC rows, `count` of them from `seed` (the run's seed), on `layerID`.
    static func cityRequests(_ layer: SyntheticLayer, seed: UInt64, count: Int, layerID: String = layerID) -> [V1.GetClustersRequest] {
        var rng = SeededRNG(seed: seed &+ 5)
        return (0..<count).map { _ in
            let v = layer.randomViewport(&rng, widthPx: 540, heightPx: 960, zooms: 12...12)
            return V1.GetClustersRequest(layerID: layerID, bounds: v.bounds, zoom: v.zoom)
        }
    }

    /// Moves 1 % of the markers (MoveMarkers batches of 1,000 small moves, one call in flight),
    /// then asks for the world at `requeryZoom`.
    private func moves(_ client: MarkerdClient, _ f: inout MarkerdFigures) throws {
        var rng = SeededRNG(seed: options.seed &+ 6)
        let total = max(1000, n / 100)
        let batches = (0..<(total / 1000)).map { _ in layer.randomAPIMoves(1000, &rng) }
        f.moves = batches.joined().map { m in
            (Int(m.id.dropFirst())!, LatLng(latitude: m.position!.latitude, longitude: m.position!.longitude))
        }
        Progress.log("[\(label)] clusters: moving \(Table.count(f.moves.count)) markers (\(batches.count) MoveMarkers of 1,000)")
        let (_, moving) = try timed { () throws -> Void in
            for b in batches {
                let r = try client.moveMarkers(Self.layerID, b)
                if r.movedCount != 1000 { throw BenchError("moved \(r.movedCount) of 1000") }
            }
        }
        let (answer, requery) = try timed { () throws -> V1.GetClustersResponse in
            try client.call("GetClusters", V1.GetClustersRequest(layerID: Self.layerID, bounds: Self.world, zoom: Double(Self.requeryZoom)),
                            as: V1.GetClustersResponse.self)
        }
        try checkWorldCounts(answer, zoom: Self.requeryZoom)
        f.moveSeconds = moving.seconds
        f.requerySeconds = requery.seconds
        table.add(Row(size: label, measure: "markerd: move 1 % of the markers (MoveMarkers x1,000, clusters follow) + GetClusters world z\(Self.requeryZoom)",
                      value: Table.fixed((f.moveSeconds + f.requerySeconds) * 1000, 0), unit: "ms",
                      note: String(format: "%@ moves in %.0f ms (%.2f ms per batch of 1,000), then the query %.1f ms",
                                   Table.count(f.moves.count), f.moveSeconds * 1000, f.moveSeconds * 1000 / Double(batches.count),
                                   f.requerySeconds * 1000)))
    }

    /// Loads the markers again into a layer created with clustering enabled (the clusters follow
    /// every upsert of the load), after deleting the first layer; compares with the plain load.
    private func eagerLoad(_ client: MarkerdClient, serverPID: Int32, plainLoad: Loading.Result) throws {
        _ = try client.deleteLayer(Self.layerID)
        var layerOptions = V1.LayerOptions()
        layerOptions.clustering = V1.ClusteringOptions(enabled: true)
        _ = try client.createLayer(V1.CreateLayerRequest(layerID: Self.eagerLayerID, options: layerOptions))
        let load = try Loading.load(client, serverPID: serverPID, markers, into: Self.eagerLayerID, label: "[\(label)] clusters eager load")
        let (answer, query) = try timed { () throws -> V1.GetClustersResponse in
            try client.call("GetClusters", V1.GetClustersRequest(layerID: Self.eagerLayerID, bounds: Self.world, zoom: 0),
                            as: V1.GetClustersResponse.self)
        }
        try checkWorldCounts(answer, zoom: 0)
        table.add(Row(size: label, measure: "markerd: load into a layer with clustering enabled (clusters follow every upsert) until the first GetClusters answers",
                      value: Table.fixed(load.seconds + query.seconds, 2), unit: "s",
                      ratio: String(format: "%.2fx plain load", (load.seconds + query.seconds) / plainLoad.seconds),
                      note: String(format: "load %.2f s (%@), then GetClusters world z0 %.1f ms; the load without clustering took %.2f s (%@)",
                                   load.seconds, load.cpuNote, query.seconds * 1000, plainLoad.seconds, plainLoad.cpuNote)))
        _ = try client.deleteLayer(Self.eagerLayerID)
    }

    // MARK: In-process

    private func runInProcess() throws {
        Progress.log("[\(label)] clusters in-process: building MarkerLayer with \(label) markers")
        var core = try MarkerLayer()
        for start in stride(from: 0, to: n, by: 100_000) {
            _ = try core.upsert(layer.records(start..<min(n, start + 100_000)), now: 0)
        }
        let cpu0 = Machine.threadCPUSeconds
        let (_, build) = timed { core.enableGridClusters(GridClusterOptions()) }
        let buildCPU = Machine.threadCPUSeconds - cpu0
        let index = core.gridClusterIndex!
        table.add(Row(size: label, measure: "in-process MarkerLayer.enableGridClusters (grid cluster build)",
                      value: Table.fixed(build.seconds, 2), unit: "s",
                      note: String(format: "thread CPU %.2f s; %@ points, %@ stored cells, ~%@", buildCPU, Table.count(index.count),
                                   Table.rate(Double(index.cellCount)), Table.bytes(index.approximateBytes))))

        let count = options.inProcessMoves
        var rng = SeededRNG(seed: options.seed &+ 7)
        typealias Moves = (ids: [String], targets: [LatLng])
        func smallMoves() -> Moves {
            let m = (0..<count).map { _ in layer.randomMove(&rng) }
            return (m.map { SyntheticLayer.id($0.index) }, m.map(\.position))
        }
        func jumps() -> Moves {
            let ids = (0..<count).map { _ in SyntheticLayer.id(rng.index(n)) }
            let targets = (0..<count).map { _ in
                LatLng(latitude: Mercator.latitude(worldY: rng.unit() * Mercator.worldSize),
                       longitude: Mercator.longitude(worldX: rng.unit() * Mercator.worldSize))
            }
            return (ids, targets)
        }
        /// Thread CPU and wall nanoseconds per move.
        func perMove(_ m: Moves) throws -> (cpu: Double, wall: Double) {
            let c0 = Machine.threadCPUSeconds
            let (_, elapsed) = try timed { () throws -> Void in
                for k in 0..<m.ids.count { try core.move(id: m.ids[k], to: m.targets[k]) }
            }
            return ((Machine.threadCPUSeconds - c0) * 1e9 / Double(m.ids.count), elapsed.nanos / Double(m.ids.count))
        }
        let kinds = [("small move (up to ~50 m)", smallMoves), ("jump to a random point of the world", jumps)]
        var with: [(cpu: Double, wall: Double)] = []
        for (name, make) in kinds {
            Progress.log("[\(label)] clusters in-process: \(Table.count(count)) single moves, \(name), clusters on")
            with.append(try perMove(make()))
        }
        core.disableGridClusters()
        for (k, (name, make)) in kinds.enumerated() {
            Progress.log("[\(label)] clusters in-process: \(Table.count(count)) single moves, \(name), clusters off")
            let without = try perMove(make())
            table.add(Row(size: label, measure: "in-process single update with grid clusters on: MarkerLayer.move(id:to:), \(name), thread CPU",
                          value: Table.fixed(with[k].cpu, 0), unit: "ns/move",
                          target: Target(text: "< 10 µs", met: with[k].cpu < 10_000),
                          note: String(format: "%@ random moves; wall %.0f ns; without clusters %.0f ns CPU, so the clusters cost %.0f ns",
                                       Table.count(count), with[k].wall, without.cpu, with[k].cpu - without.cpu)))
        }
        withExtendedLifetime(core) {}
    }

    // MARK: pysupercluster

    /// Runs pysupercluster on the clusterable points before and after `figures.moves` and adds the
    /// comparison rows.
    private func runPysupercluster(_ figures: MarkerdFigures) throws {
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("marker-bench-clusters-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        var lat = layer.latitudes, lng = layer.longitudes
        let before = dir.appendingPathComponent("points.f64"), after = dir.appendingPathComponent("moved.f64")
        try writePoints(lat, lng, to: before)
        for (i, p) in figures.moves {
            lat[i] = p.latitude
            lng[i] = p.longitude
        }
        try writePoints(lat, lng, to: after)
        lat = []
        lng = []

        Progress.log("[\(label)] pysupercluster: building the index of \(Table.count(clusterable)) points (python3)")
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        p.arguments = ["python3", "-c", Self.pythonScript, before.path, after.path, String(Self.requeryZoom)]
        let out = Pipe(), err = Pipe()
        p.standardOutput = out
        p.standardError = err
        try p.run()
        let data = out.fileHandleForReading.readDataToEndOfFile()
        let errText = String(decoding: err.fileHandleForReading.readDataToEndOfFile(), as: UTF8.self)
        p.waitUntilExit()
        let loadAverage = Machine.loadAverage ?? 0
        guard p.terminationStatus == 0,
              let json = try? JSONSerialization.jsonObject(with: data) as? [String: Double],
              let build = json["build_s"], let buildCPU = json["build_cpu_s"], let rss = json["rss_growth_bytes"],
              let reload = json["reload_s"], let requery = json["requery_s"], let points = json["points"]
        else {
            let reason = errText.split(separator: "\n").last.map(String.init) ?? "exit status \(p.terminationStatus)"
            Progress.log("[\(label)] pysupercluster not measured: \(reason)")
            table.add(Row(size: label, measure: "pysupercluster", value: "-", unit: "",
                          note: "not measured: \(reason) (pip install pysupercluster numpy)"))
            return
        }
        guard Int(points) == clusterable else { throw BenchError("pysupercluster read \(Int(points)) points, expected \(clusterable)") }
        let worldNote = (0...3).map { z in
            String(format: "z%d %.1f ms / %.0f items", z, (json["world_z\(z)_s"] ?? 0) * 1000, json["world_z\(z)_items"] ?? 0)
        }.joined(separator: ", ")
        table.add(Row(size: label, measure: "pysupercluster index build (same points, radius 60, extent 512, zoom 0-16)",
                      value: Table.fixed(build, 2), unit: "s",
                      note: String(format: "python CPU %.2f s; RSS +%@ (%.1f B/point); loadavg %.1f; in-process world queries: %@",
                                   buildCPU, Table.bytes(Int(rss)), rss / points, loadAverage, worldNote)))
        let speedup = build / figures.buildSeconds, cpuSpeedup = buildCPU / max(1e-9, figures.buildCPUSeconds)
        table.add(Row(size: label, measure: "build: pysupercluster time / markerd grid cluster time",
                      value: Table.fixed(speedup, 1), unit: "x faster", ratio: String(format: "CPU %.1fx", cpuSpeedup),
                      target: Target(text: ">= 5x faster (wall and CPU)", met: speedup >= 5 && cpuSpeedup >= 5),
                      note: String(format: "markerd %.2f s wall / %.2f s CPU vs pysupercluster %.2f s / %.2f s; memory: markerd VmRSS +%@, pysupercluster RSS +%@",
                                   figures.buildSeconds, figures.buildCPUSeconds, build, buildCPU,
                                   Table.bytes(Int(figures.rssGrowth)), Table.bytes(Int(rss)))))
        let markerd = figures.moveSeconds + figures.requerySeconds
        table.add(Row(size: label, measure: "pysupercluster: full rebuild after the same 1 % moves + world z\(Self.requeryZoom) query",
                      value: Table.fixed((reload + requery) * 1000, 0), unit: "ms",
                      ratio: String(format: "%.1fx markerd's", (reload + requery) / markerd),
                      note: String(format: "rebuild %.0f ms + query %.1f ms (in-process, no RPC) vs markerd %.0f ms over RPC (moves + query)",
                                   reload * 1000, requery * 1000, markerd * 1000)))
    }

    /// Writes the clusterable markers' (longitude, latitude) pairs as little-endian Float64.
    private func writePoints(_ lat: [Double], _ lng: [Double], to url: URL) throws {
        var pairs: [Double] = []
        pairs.reserveCapacity(2 * clusterable)
        var next = 0
        for i in 0..<n {
            if next < layer.draggable.count && layer.draggable[next] == i {
                next += 1
                continue
            }
            pairs.append(lng[i])
            pairs.append(lat[i])
        }
        try pairs.withUnsafeBytes { try Data($0).write(to: url) }
    }

    /// Reads two point files (argv 1: the points, argv 2: after the moves), builds pysupercluster
    /// indexes with markerd's default options and prints one JSON object of seconds and bytes.
    static let pythonScript = """
    import json, resource, sys, time
    import numpy as np
    import pysupercluster

    def rss():
        with open("/proc/self/statm") as f:
            return int(f.read().split()[1]) * resource.getpagesize()

    def build(pts):
        return pysupercluster.SuperCluster(pts, min_zoom=0, max_zoom=16, radius=60, extent=512)

    def world(index, z):
        return index.getClusters(top_left=(-180, 85.06), bottom_right=(180, -85.06), zoom=z)

    out = {}
    pts = np.fromfile(sys.argv[1], dtype="<f8").reshape(-1, 2)
    out["points"] = len(pts)
    before = rss()
    t0, c0 = time.perf_counter(), time.process_time()
    index = build(pts)
    out["build_s"], out["build_cpu_s"] = time.perf_counter() - t0, time.process_time() - c0
    out["rss_growth_bytes"] = rss() - before
    for z in range(4):
        t0 = time.perf_counter()
        items = world(index, z)
        out["world_z%d_s" % z], out["world_z%d_items" % z] = time.perf_counter() - t0, len(items)
    del index
    moved = np.fromfile(sys.argv[2], dtype="<f8").reshape(-1, 2)
    t0 = time.perf_counter()
    index = build(moved)
    out["reload_s"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    world(index, int(sys.argv[3]))
    out["requery_s"] = time.perf_counter() - t0
    print(json.dumps(out))
    """
}

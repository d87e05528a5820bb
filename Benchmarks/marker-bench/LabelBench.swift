import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdCore
import MarkerdTestSupport

/// Labelled against unlabelled raster tiles on real places (issue 36, item 6), for one marker
/// count N, against a fresh `markerd --ephemeral`, and Mapnik's tiles of the same places:
///
/// - the 34,006 places of `Tests/Fixtures/places/cities.tsv` replicated with jitter (at most 5 km,
///   `Places.replicated`) to N markers with attributes name, category and population, loaded
///   twice: layer "unlabelled" (default options) and layer "labelled" (labels enabled, text from
///   `name`, priority from `population`, every other label option at its default); the first
///   load's rate is a row (three attributes per marker);
/// - per zoom, the **first** tile asked at that zoom on each layer (a labelled layer decides its
///   label placement once per zoom, so the first tile pays for it), then **cold** GetTile calls
///   (256 px, density 1) cycling over the zoom's tiles, each timed call after a change that gives
///   the tile a new version (untimed), the same change on both layers, the two layers' calls
///   interleaved (which goes first alternates): z0 and z3 after 300 markers moved to random places
///   (more changes than markerd patches a kept canvas for, as `TileBench`'s z0 from scratch), z10
///   and z14 after one marker moved into the tile (as `TileBench`'s cold tiles). Rows: p50 / p99
///   of each layer and labelled / unlabelled. When the two layers' first z0 tiles are the same
///   bytes, this markerd draws no labels: a row says so, and no row carries a target;
/// - Mapnik (`Benchmarks/mapnik/render_places.py`, Debian's python3-mapnik) rendering the same
///   places (the N markers as loaded, before the cold calls' moves, in population order) and the
///   same tiles with labels de-cluttered, each render cold, one run per zoom within a time limit
///   (`--mapnik-seconds`; a lower bound when its first render does not finish): p50 / p99 per
///   zoom and Mapnik / markerd labelled;
/// - with `--png-dir DIR`, markerd's labelled and unlabelled tiles and Mapnik's tile of z10 Paris
///   (10/518/352) as PNG files in DIR.
struct LabelBench {
    static let labelledID = "labelled"
    static let unlabelledID = "unlabelled"
    /// Paris, whose z10 tile is 10/518/352.
    static let paris = (latitude: 48.85341, longitude: 2.3488)

    /// One zoom's tiles, and how a tile of it is given a new version before a cold call.
    struct Zoom {
        var z: Int
        var name: String
        var tiles: [TileID]
        /// Markers moved to random places before each cold call (z0, z3); 0: one marker moved
        /// into the tile instead.
        var scatter: Int
    }

    let options: Options
    let count: Int
    let table: Table

    private var label: String { Table.count(count) }

    /// The tile of `zoom` holding Paris and the `radius` rings around it.
    static func parisTiles(zoom: Int, radius: Int) -> [TileID] {
        let n = Double(1 << zoom)
        let cx = Int(Mercator.worldX(longitude: paris.longitude) / Mercator.worldSize * n)
        let cy = Int(Mercator.worldY(latitude: paris.latitude) / Mercator.worldSize * n)
        var tiles = [TileID(z: zoom, x: UInt32(cx), y: UInt32(cy))!]
        for dy in -radius...radius {
            for dx in -radius...radius where dx != 0 || dy != 0 {
                if let t = TileID(z: zoom, x: UInt32(cx + dx), y: UInt32(cy + dy)) { tiles.append(t) }
            }
        }
        return tiles
    }

    /// z0; z3 over Europe (3/4/2 west and central Europe, 3/3/2 Iberia, 3/4/1 Scandinavia); z10 and
    /// z14 around Paris (its tile first: 10/518/352).
    static let zooms: [Zoom] = [
        Zoom(z: 0, name: "z0", tiles: [TileID(z: 0, x: 0, y: 0)!], scatter: 300),
        Zoom(z: 3, name: "z3 (Europe)", tiles: [TileID(z: 3, x: 4, y: 2)!, TileID(z: 3, x: 3, y: 2)!, TileID(z: 3, x: 4, y: 1)!], scatter: 300),
        Zoom(z: 10, name: "z10 (Paris)", tiles: parisTiles(zoom: 10, radius: 1), scatter: 0),
        Zoom(z: 14, name: "z14 (Paris)", tiles: parisTiles(zoom: 14, radius: 2), scatter: 0),
    ]

    /// The zooms this run measures (`--label-zooms`; default all of `Self.zooms`).
    private var zooms: [Zoom] { Self.zooms.filter { options.labelZooms?.contains($0.z) ?? true } }

    /// Timed cold calls per layer at zoom `z`.
    private func coldCalls(_ z: Int) -> Int {
        switch z {
        case 0: options.quick ? 3 : 7
        case 3: options.quick ? 6 : 15
        default: options.quick ? 30 : min(options.queries, 200)
        }
    }

    func run() throws {
        Progress.log("[\(label)] labels: loading \(options.placesPath)")
        let places = try Places.load(options.placesPath)
        let markers = Places.replicated(places, count: count, seed: options.seed)
        Progress.log("[\(label)] labels: \(places.count) real places replicated to \(label) markers (name, category, population)")

        let server = try MarkerdProcess(path: options.markerdPath, arguments: ["--ephemeral"], echo: options.verbose)
        defer { server.stop() }
        let client = server.client
        Progress.log("[\(label)] labels: markerd pid \(server.pid) at \(server.url)")
        let labels = V1.LabelOptions(enabled: true, textAttribute: "name", priorityAttribute: "population")
        _ = try client.createLayer(V1.CreateLayerRequest(layerID: Self.unlabelledID, options: nil))
        _ = try client.createLayer(V1.CreateLayerRequest(layerID: Self.labelledID, options: V1.LayerOptions(labels: labels)))
        let load = try Loading.load(client, serverPID: server.pid, markers, into: Self.unlabelledID, label: "[\(label)] load unlabelled")
        table.add(Row(size: label, measure: "UpsertMarkers bulk load, real places with 3 attributes (name, category, population)",
                      value: Table.rate(load.markersPerSecond), unit: "markers/s",
                      note: "BulkLoader, batches of 50k, 4 in flight, into a fresh layer; \(load.cpuNote)"))
        _ = try Loading.load(client, serverPID: server.pid, markers, into: Self.labelledID, label: "[\(label)] load labelled")

        var mover = Mover(markers: markers, seed: options.seed &+ 3600)
        var labelledP50: [Int: Double] = [:]
        var labelsDrawn: Bool? = nil
        for zoom in zooms {
            labelledP50[zoom.z] = try measure(client, serverPID: server.pid, zoom, &mover, labelsDrawn: &labelsDrawn)
        }
        let bytes = try [Self.labelledID, Self.unlabelledID].map { id in
            try client.call("GetLayerStats", V1.GetLayerStatsRequest(layerID: id), as: V1.GetLayerStatsResponse.self).stats?.approximateBytes ?? 0
        }
        table.add(Row(size: label, measure: "GetLayerStats approximate_bytes, labelled minus unlabelled layer (its label placements kept)",
                      value: Table.bytes(Int(bytes[0]) - Int(bytes[1])), unit: "",
                      note: "zooms placed: \(zooms.map { "z\($0.z)" }.joined(separator: ", ")) (eager below z8 at 1M, lazy above); labelled \(Table.bytes(Int(bytes[0]))), unlabelled \(Table.bytes(Int(bytes[1])))"))
        if let dir = options.pngDir {
            let paris = Self.zooms[2].tiles[0]
            try writePNGs(try [Self.labelledID, Self.unlabelledID].map { try getTile(client, $0, paris).png }, tile: paris, dir: dir)
        }
        try mapnik(markers, labelledP50: labelsDrawn == true ? labelledP50 : [:])
    }

    // MARK: markerd

    /// Moves markers from the end of the list (round robin) identically on both layers.
    struct Mover {
        let markers: [V1.Marker]
        var next: Int
        var rng: SeededRNG
        init(markers: [V1.Marker], seed: UInt64) {
            self.markers = markers
            next = markers.count - 1
            rng = SeededRNG(seed: seed)
        }

        /// The moves that give `tile` of `zoom` a new version: `zoom.scatter` markers to random
        /// places, or one marker to the tile's centre.
        mutating func moves(for tile: TileID, _ zoom: Zoom) -> [V1.MarkerMove] {
            var positions: [V1.LatLng] = []
            if zoom.scatter > 0 {
                for _ in 0..<zoom.scatter {
                    positions.append(V1.LatLng(latitude: (rng.unit() - 0.5) * 140, longitude: (rng.unit() - 0.5) * 358))
                }
            } else {
                let r = tile.worldRect
                positions.append(V1.LatLng(latitude: Mercator.latitude(worldY: (r.minY + r.maxY) / 2),
                                           longitude: Mercator.longitude(worldX: (r.minX + r.maxX) / 2)))
            }
            return positions.map { p in
                defer { next = next > 0 ? next - 1 : markers.count - 1 }
                return V1.MarkerMove(id: markers[next].id, position: p)
            }
        }
    }

    private func getTile(_ client: MarkerdClient, _ layerID: String, _ t: TileID) throws -> V1.GetTileResponse {
        try client.call("GetTile", V1.GetTileRequest(layerID: layerID, z: UInt32(t.z), x: t.x, y: t.y, tileSize: 256, density: 1),
                        as: V1.GetTileResponse.self)
    }

    /// The first and cold calls of `zoom` on both layers; adds their rows; returns the labelled p50
    /// (µs). The first zoom's first tiles (the same markers on both layers, nothing moved yet)
    /// set `labelsDrawn`: whether they differ. When they do not, this markerd draws no labels: a
    /// row says so and the labelled / unlabelled rows carry no target.
    private func measure(_ client: MarkerdClient, serverPID: Int32, _ zoom: Zoom, _ mover: inout Mover,
                         labelsDrawn: inout Bool?) throws -> Double {
        let layers = [Self.unlabelledID, Self.labelledID]
        // First asks: nothing rendered or placed at this zoom yet on either layer.
        var first: [String: (micros: Double, png: Int)] = [:]
        var firstPNGs: [[UInt8]] = []
        for id in layers {
            let (r, elapsed) = try timed { try getTile(client, id, zoom.tiles[0]) }
            first[id] = (elapsed.micros, r.png.count)
            firstPNGs.append(r.png)
        }
        let tile0 = zoom.tiles[0]
        table.add(Row(size: label, measure: "GetTile labelled, first tile at \(zoom.name) (\(tile0.z)/\(tile0.x)/\(tile0.y): decides the zoom's label placement), vs unlabelled first",
                      value: "\(Table.fixed(first[Self.labelledID]!.micros / 1000, 2)) / \(Table.fixed(first[Self.unlabelledID]!.micros / 1000, 2))",
                      unit: "ms labelled / unlabelled",
                      ratio: String(format: "%.2fx", first[Self.labelledID]!.micros / first[Self.unlabelledID]!.micros),
                      note: "one call each; PNG \(Table.bytes(first[Self.labelledID]!.png)) labelled, \(Table.bytes(first[Self.unlabelledID]!.png)) unlabelled"))
        if labelsDrawn == nil {
            labelsDrawn = firstPNGs[0] != firstPNGs[1]
            if labelsDrawn == false {
                table.add(Row(size: label, measure: "labels drawn by this markerd", value: "no", unit: "",
                              note: "its labelled and unlabelled first tiles \(tile0.z)/\(tile0.x)/\(tile0.y) are the same bytes: the labelled rows measure pins only, and neither they nor the Mapnik rows carry a target"))
            }
        }

        let calls = coldCalls(zoom.z)
        Progress.log("[\(label)] labels: GetTile cold \(zoom.name): \(calls) calls per layer over \(zoom.tiles.count) tiles")
        var micros: [String: [Double]] = [Self.unlabelledID: [], Self.labelledID: []]
        var moveMicros: [String: [Double]] = [Self.unlabelledID: [], Self.labelledID: []]
        var cpu: [String: Double] = [Self.unlabelledID: 0, Self.labelledID: 0]
        var bytes: [String: Int] = [Self.unlabelledID: 0, Self.labelledID: 0]
        for k in 0..<calls {
            let t = zoom.tiles[k % zoom.tiles.count]
            let moves = mover.moves(for: t, zoom)
            for id in k % 2 == 0 ? layers : layers.reversed() {
                let (moved, moveElapsed) = try timed { try client.moveMarkers(id, moves) }
                moveMicros[id]!.append(moveElapsed.micros)
                guard moved.movedCount == moves.count else { throw BenchError("labels: \(moved.movedCount) of \(moves.count) markers moved in \(id)") }
                let cpu0 = Machine.cpuSeconds(pid: serverPID) ?? 0
                let (r, elapsed) = try timed { try getTile(client, id, t) }
                cpu[id]! += (Machine.cpuSeconds(pid: serverPID) ?? 0) - cpu0
                micros[id]!.append(elapsed.micros)
                bytes[id]! += r.png.count
            }
        }
        let u = LatencySummary(samplesMicros: micros[Self.unlabelledID]!), l = LatencySummary(samplesMicros: micros[Self.labelledID]!)
        let change = zoom.scatter > 0 ? "\(zoom.scatter) markers moved to random places" : "one marker moved into the tile"
        let tiles = zoom.tiles.count == 1 ? "\(tile0.z)/\(tile0.x)/\(tile0.y)"
            : zoom.z >= 10 ? "the \(zoom.tiles.count) tiles around \(tile0.z)/\(tile0.x)/\(tile0.y) (it included)"
            : zoom.tiles.map { "\($0.z)/\($0.x)/\($0.y)" }.joined(separator: ", ")
        for (id, s) in [(Self.unlabelledID, u), (Self.labelledID, l)] {
            table.add(Row(size: label, measure: "GetTile cold \(zoom.name), real places, \(id), 256 px d1",
                          value: "\(Table.fixed(s.p50 / 1000, 2)) / \(Table.fixed(s.p99 / 1000, 2))", unit: "ms p50 / p99",
                          note: String(format: "%d calls over %@, each after %@ (untimed); max %.2f ms; PNG %@ mean; markerd CPU %.2f ms per call (mean); loadavg %.1f",
                                       s.samples, tiles, change, s.max / 1000, Table.bytes(bytes[id]! / s.samples),
                                       cpu[id]! * 1000 / Double(s.samples), Machine.loadAverage ?? 0),
                          samplesMicros: s.sortedMicros))
        }
        let mu = LatencySummary(samplesMicros: moveMicros[Self.unlabelledID]!), ml = LatencySummary(samplesMicros: moveMicros[Self.labelledID]!)
        table.add(Row(size: label, measure: "MoveMarkers before the cold \(zoom.name) calls (\(change)), labelled vs unlabelled",
                      value: "\(Table.fixed(ml.p50 / 1000, 2)) / \(Table.fixed(ml.p99 / 1000, 2)) vs \(Table.fixed(mu.p50 / 1000, 2)) / \(Table.fixed(mu.p99 / 1000, 2))",
                      unit: "ms p50 / p99", ratio: String(format: "%.2fx", ml.p99 / mu.p99),
                      note: "\(ml.samples) calls each; the labelled layer's writes update its kept label placements (every zoom asked so far)"))
        let r99 = l.p99 / u.p99
        table.add(Row(size: label, measure: "GetTile cold \(zoom.name), labelled / unlabelled",
                      value: String(format: "%.2fx / %.2fx", l.p50 / u.p50, r99), unit: "p50 / p99",
                      target: labelsDrawn == true ? Target(text: "p99 <= 2x unlabelled at 1M", met: r99 <= 2, atTargetSize: count == 1_000_000) : nil,
                      note: "the two rows above"))
        return l.p50
    }

    /// markerd's labelled and unlabelled PNGs (in that order) of `tile` into `dir`.
    private func writePNGs(_ pngs: [[UInt8]], tile t: TileID, dir: String) throws {
        try FileManager.default.createDirectory(atPath: dir, withIntermediateDirectories: true)
        for (id, png) in zip([Self.labelledID, Self.unlabelledID], pngs) {
            let path = (dir as NSString).appendingPathComponent("markerd-\(id)-\(t.z)-\(t.x)-\(t.y).png")
            try Data(png).write(to: URL(fileURLWithPath: path))
            Progress.log("[\(label)] labels: wrote \(path)")
        }
    }

    // MARK: Mapnik

    /// The same places and tiles rendered by Mapnik (z14 and z10: up to 9 tiles, z3: 3, z0: 1);
    /// adds one row per zoom (or one row saying why not), with the ratio to markerd's labelled
    /// p50 of the zoom when `labelledP50` has it (empty: this markerd draws no labels).
    private func mapnik(_ markers: [V1.Marker], labelledP50: [Int: Double]) throws {
        let python = options.mapnikPython, script = options.mapnikScript
        let check = Process()
        check.executableURL = URL(fileURLWithPath: python)
        check.arguments = ["-c", "import mapnik"]
        check.standardError = FileHandle.nullDevice
        var available = false
        if (try? check.run()) != nil {
            check.waitUntilExit()
            available = check.terminationStatus == 0
        }
        guard available, FileManager.default.fileExists(atPath: script) else {
            table.add(Row(size: label, measure: "Mapnik 3.1, same places and tiles, labels de-cluttered", value: "-", unit: "",
                          note: available ? "\(script) not found" : "python3-mapnik is missing (\(python) cannot import mapnik): apt-get install python3-mapnik"))
            return
        }
        let dir = FileManager.default.temporaryDirectory.appendingPathComponent("marker-bench-mapnik-\(getpid())")
        try FileManager.default.createDirectory(at: dir, withIntermediateDirectories: true)
        defer { try? FileManager.default.removeItem(at: dir) }
        let tsv = dir.appendingPathComponent("places.tsv")
        Progress.log("[\(label)] labels: writing \(label) places for Mapnik to \(tsv.path)")
        try Self.writeMapnikPlaces(markers, to: tsv)

        // One run per zoom, highest first, each within its own time limit (at 1M markers Mapnik
        // takes minutes at z0 and z3): a zoom that runs out reports a lower bound.
        for zoom in zooms.reversed() {
            let tiles = Array(zoom.tiles.prefix(zoom.z >= 10 ? (options.quick ? 3 : 9) : zoom.tiles.count))
            var arguments = [script, tsv.path] + tiles.map { "\($0.z)/\($0.x)/\($0.y)" }
            if let png = options.pngDir, zoom.z == 10 {
                let t = zoom.tiles[0]
                arguments += ["--png-dir", png, "--save", "\(t.z)/\(t.x)/\(t.y)"]
            }
            Progress.log("[\(label)] labels: Mapnik \(zoom.name): \(tiles.count) tiles, at most \(options.mapnikSeconds) s")
            let run = try Self.runLimited(python, arguments, seconds: options.mapnikSeconds,
                                          output: dir.appendingPathComponent("mapnik-z\(zoom.z).jsonl"))
            mapnikRow(zoom, tiles: tiles.count, run, labelledP50: labelledP50[zoom.z])
        }
    }

    /// The row of Mapnik's `run` over `tiles` tiles of `zoom`.
    private func mapnikRow(_ zoom: Zoom, tiles: Int, _ run: LimitedRun, labelledP50: Double?) {
        var seconds: [Double] = []
        var rendering = false, loaded: Double? = nil
        for line in run.lines {
            guard let object = try? JSONSerialization.jsonObject(with: Data(line.utf8)) as? [String: Any] else { continue }
            switch object["event"] as? String {
            case "loaded": loaded = object["seconds"] as? Double
            case "start": rendering = true
            case "tile":
                if let s = object["seconds"] as? Double { seconds.append(s); rendering = false }
            default: break
            }
        }
        let measure = "Mapnik 3.1 \(zoom.name), same places and tiles, pins + labels de-cluttered (cold renders)"
        let tail = "; loading the TSV \(loaded.map { Table.fixed($0, 1) + " s" } ?? "?") (untimed), one untimed render first (fonts); loadavg \(Table.fixed(Machine.loadAverage ?? 0, 1))"
        let want = zoom.z <= 5 ? 50.0 : 10.0
        guard !seconds.isEmpty else {
            // Stopped during its first render: that render took longer than it had run.
            guard run.timedOut && rendering else {
                table.add(Row(size: label, measure: measure, value: "-", unit: "",
                              note: (run.timedOut ? "the \(options.mapnikSeconds) s limit passed while loading" : "the script failed: \(run.stderrTail)") + tail))
                return
            }
            let bound = run.secondsSinceLastLine * 1e6
            var row = Row(size: label, measure: measure, value: "> \(Table.fixed(bound / 1000, 0))", unit: "ms",
                          note: "stopped at the \(options.mapnikSeconds) s limit (--mapnik-seconds) during its first render, which had run that long" + tail)
            if let m = labelledP50 {
                row.ratio = String(format: "> %.0fx markerd labelled p50", bound / m)
                if bound / m >= want { row.target = Target(text: "markerd labelled >= \(Int(want))x faster", met: true, atTargetSize: count == 1_000_000) }
            }
            table.add(row)
            return
        }
        let summary = LatencySummary(samplesMicros: seconds.map { $0 * 1e6 })
        var row = Row(size: label, measure: measure, value: "\(Table.fixed(summary.p50 / 1000, 2)) / \(Table.fixed(summary.p99 / 1000, 2))",
                      unit: "ms p50 / p99",
                      note: "\(seconds.count) of \(tiles) tiles rendered\(run.timedOut ? " before the \(options.mapnikSeconds) s limit" : "") (each a fresh Map; mapnik.render only, PNG encoding excluded)" + tail,
                      samplesMicros: summary.sortedMicros)
        if let m = labelledP50 {
            let ratio = summary.p50 / m
            row.ratio = String(format: "%.0fx markerd labelled p50", ratio)
            row.target = Target(text: "markerd labelled >= \(Int(want))x faster", met: ratio >= want, atTargetSize: count == 1_000_000)
        }
        table.add(row)
    }

    /// The places as `render_places.py` reads them: x, y (EPSG:3857 metres), name, population,
    /// tab-separated, highest population first (Mapnik places labels in feature order).
    static func writeMapnikPlaces(_ markers: [V1.Marker], to url: URL) throws {
        let r = 6_378_137.0
        let population = markers.map { Int($0.attributes["population"] ?? "") ?? 0 }
        let order = markers.indices.sorted { population[$0] != population[$1] ? population[$0] > population[$1] : $0 < $1 }
        guard FileManager.default.createFile(atPath: url.path, contents: nil), let out = FileHandle(forWritingAtPath: url.path) else {
            throw BenchError("cannot create \(url.path)")
        }
        defer { try? out.close() }
        var text = "x\ty\tname\tpopulation\n"
        for (n, i) in order.enumerated() {
            let m = markers[i], p = m.position ?? V1.LatLng(latitude: 0, longitude: 0)
            let x = r * p.longitude * .pi / 180, y = r * log(tan(.pi / 4 + p.latitude * .pi / 360))
            text += "\(x)\t\(y)\t\(m.attributes["name"] ?? "")\t\(population[i])\n"
            if n % 50_000 == 49_999 { try out.write(contentsOf: Data(text.utf8)); text = "" }
        }
        try out.write(contentsOf: Data(text.utf8))
    }

    /// A finished (or stopped) child: its standard output lines, whether the limit stopped it,
    /// the seconds between its last output line and its end, and the end of its standard error.
    struct LimitedRun {
        var lines: [String]
        var timedOut: Bool
        var secondsSinceLastLine: Double
        var stderrTail: String
    }

    /// Runs `executable` with `arguments`, standard output into `output`, for at most `seconds`
    /// (then SIGTERM). Polls every 50 ms; the time since the last output line is measured by the
    /// file's growth, to the poll's precision.
    static func runLimited(_ executable: String, _ arguments: [String], seconds: Int, output: URL) throws -> LimitedRun {
        guard FileManager.default.createFile(atPath: output.path, contents: nil) else { throw BenchError("cannot create \(output.path)") }
        let out = try FileHandle(forWritingTo: output)
        let err = Pipe()
        let process = Process()
        process.executableURL = URL(fileURLWithPath: executable)
        process.arguments = arguments
        process.standardOutput = out
        process.standardError = err
        final class Tail: @unchecked Sendable {
            let lock = NSLock()
            var text = ""  // guarded by lock: the last 2,000 characters of standard error
        }
        let tail = Tail()
        err.fileHandleForReading.readabilityHandler = { h in
            let d = h.availableData
            if d.isEmpty { h.readabilityHandler = nil; return }
            tail.lock.withLock { tail.text = String((tail.text + String(decoding: d, as: UTF8.self)).suffix(2000)) }
        }
        try process.run()
        ChildProcess.track(process)
        defer { ChildProcess.forget(process) }
        let start = ContinuousClock.now
        var lastSize: UInt64 = 0, lastGrowth = start
        var timedOut = false
        while process.isRunning {
            Thread.sleep(forTimeInterval: 0.05)
            let size = (try? FileManager.default.attributesOfItem(atPath: output.path)[.size] as? UInt64) ?? 0
            if size != lastSize { lastSize = size; lastGrowth = .now }
            if ContinuousClock.now - start > .seconds(seconds) {
                timedOut = true
                process.terminate()
                break
            }
        }
        let end = ContinuousClock.now
        process.waitUntilExit()
        try out.close()
        let text = (try? String(contentsOf: output, encoding: .utf8)) ?? ""
        return LimitedRun(lines: text.split(separator: "\n").map(String.init), timedOut: timedOut,
                          secondsSinceLastLine: (end - lastGrowth).seconds,
                          stderrTail: tail.lock.withLock { tail.text }.trimmingCharacters(in: .whitespacesAndNewlines))
    }
}

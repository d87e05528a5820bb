// markerctl: markerd's command-line client. Every command is one or more RPCs; errors print the
// server's status and message and exit 1 (usage errors exit 2).
import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdTransport

/// Each command's usage lines and an example, in the order `--help` lists them;
/// `markerctl COMMAND --help` prints its entry.
let commands: [(name: String, usage: String, example: String)] = [
    ("layers", """
      layers list
      layers create LAYER [--min-marker-count N] [--tile-size 256|512] [--no-tiling]
                    [--labels ATTRIBUTE [--label-priority ATTRIBUTE]]   (label each pin with an attribute)
                    [--clusters]   (cluster the markers; tiles draw clusters as count bubbles)
                    [--group GROUP]   (cluster mode: the replica group to place it on; default the
                                      group of the replica asked)
      layers delete LAYER
      layers stats LAYER
    """, "markerctl layers create places --tile-size 512 --labels name"),
    ("register-icon", "  register-icon ICON FILE.png [--anchor X,Y]   (anchor: fractions of width and height; default 0.5,1)",
     "markerctl register-icon cafe cafe.png --anchor 0.5,1"),
    ("load", """
      load LAYER FILE.csv|FILE.geojson [--id-property NAME] [--batch N] [--concurrency N]
           CSV: header with id, lat, lon[, z_index], other columns become attributes; GeoJSON: Points, the
           feature's id (or --id-property). Batches of N markers (default 50000), N calls at once (default 4).
           Progress on standard error: a redrawn bar on a terminal, else a line every 10 % or 5 s.
    """, "markerctl load places places.csv --batch 20000"),
    ("get", "  get LAYER ID...   (one JSON line per marker)", "markerctl get places p1 p2"),
    ("update", """
      update LAYER ID [--label TEXT] [--position LAT,LON] [--z-index N] [--visible true|false]
             changes only the fields given (UpdateMarkers); the rest of the marker stays
    """, "markerctl update places 2988507 --label Paris --z-index 5"),
    ("remove", "  remove LAYER ID...", "markerctl remove places p1 p2"),
    ("clear", "  clear LAYER   (removes every marker, keeps the layer)", "markerctl clear places"),
    ("tiles", """
      tiles seed LAYER --zoom A-B|A [--bbox WEST,SOUTH,EAST,NORTH] [--size 256|512] [--density 1|2|3] [--concurrency N]
           renders every XYZ tile of the zoom levels A to B (0-22) over the bbox (degrees; default the world;
           WEST > EAST crosses the antimeridian) into markerd's tile cache with GetTile, N calls at once
           (default 4). Size: default the layer's; density: default 1. At most 1,000,000 tiles.
    """, "markerctl tiles seed places --zoom 0-8 --bbox 5.9,45.8,10.5,47.8"),
    ("export", """
      export LAYER FILE.geojson [--page-size N]
           writes every marker of the layer (static, live and hidden; NATIVE or TILED) as a GeoJSON
           FeatureCollection (Point [lon, lat], the feature's id, attributes as properties, z_index,
           visible/clickable/draggable), N per ListMarkers page (default 10000); `load` reads it back.
    """, "markerctl export places places.geojson"),
    ("snapshot", "  snapshot   (writes a snapshot of every layer now)", "markerctl snapshot"),
    ("info", "  info   (version, uptime, layers, markers)", "markerctl info"),
    ("sign-url", "  sign-url LAYER [--ttl SECONDS]   a signed tile URL template path (default 3600 s, at most 7 days)",
     "markerctl sign-url places --ttl 86400"),
]

let usage = """
usage: markerctl [--url URL] [TLS options] COMMAND ...   (default URL tcp://127.0.0.1:7450, or $MARKERD_URL)
       a markerd with --auth-file needs a token: $MARKERD_TOKEN (from `markerd token add`)
       markerctl COMMAND --help: the command's usage and an example

  TLS options, for a tls+tcp:// URL:
    --tls-ca FILE            CA certificates (PEM) the server's certificate must chain to
    --tls-server-name NAME   name the server's certificate must carry (a DNS name or its CN: nng's mbedTLS
                             2.28 does not match IP addresses). Default: the URL's host
    --tls-cert FILE          client certificate (PEM), for a server that requires one (--tls-client-ca)
    --tls-key FILE           the client certificate's private key (PEM)

""" + "\n" + commands.map(\.usage).joined(separator: "\n")

func fail(_ message: String, code: Int32 = 1) -> Never {
    FileHandle.standardError.write("markerctl: \(message)\n".data(using: .utf8)!)
    exit(code)
}

var args = Array(CommandLine.arguments.dropFirst())
var url = ProcessInfo.processInfo.environment["MARKERD_URL"] ?? "tcp://127.0.0.1:7450"
if let i = args.firstIndex(of: "--url") {
    guard i + 1 < args.count else { fail("--url needs a value", code: 2) }
    url = args[i + 1]
    args.removeSubrange(i...(i + 1))
}
if args.isEmpty || args.contains("-h") || args.contains("--help") {
    // The first word that is a command picks its help (option values are not command names).
    if let entry = args.lazy.compactMap({ word in commands.first { $0.name == word } }).first {
        print("usage: markerctl [--url URL] [TLS options] ...\n\n\(entry.usage)\n\nexample:\n  \(entry.example)")
    } else {
        print(usage)
    }
    exit(args.isEmpty ? 2 : 0)
}

/// Removes `--name VALUE` from args and returns VALUE.
@MainActor func option(_ name: String) -> String? {
    guard let i = args.firstIndex(of: name) else { return nil }
    guard i + 1 < args.count else { fail("\(name) needs a value", code: 2) }
    let v = args[i + 1]
    args.removeSubrange(i...(i + 1))
    return v
}

@MainActor func flag(_ name: String) -> Bool {
    guard let i = args.firstIndex(of: name) else { return false }
    args.remove(at: i)
    return true
}

@MainActor func positional(_ n: Int, _ what: String) -> String {
    guard n < args.count else { fail("missing \(what)\n\n\(usage)", code: 2) }
    return args[n]
}

/// Removes `--name N` from args and returns N (`defaultValue` when absent); exits 2 unless N is a
/// whole number within `range`.
@MainActor func number(_ name: String, default defaultValue: Int, in range: ClosedRange<Int>) -> Int {
    guard let text = option(name) else { return defaultValue }
    guard let n = Int(text), range.contains(n) else {
        fail("\(name) takes a whole number within \(range.lowerBound)...\(range.upperBound), not \"\(text)\"", code: 2)
    }
    return n
}

/// Removes `--name N` from args and returns N (`defaultValue` when absent); exits 2 unless N is one of `choices`.
@MainActor func choice(_ name: String, default defaultValue: Int, _ choices: [Int]) -> Int {
    guard let text = option(name) else { return defaultValue }
    guard let n = Int(text), choices.contains(n) else {
        fail("\(name) takes \(choices.map(String.init).joined(separator: " or ")), not \"\(text)\"", code: 2)
    }
    return n
}

func describe(_ layer: V1.Layer) -> String {
    let mode = layer.mode == .tiled ? "TILED" : "NATIVE"
    let t = layer.options?.tiling
    return "\(layer.id)\tmarkers=\(layer.markerCount)\tmode=\(mode)\tversion=\(layer.version)" +
        "\ttiling=\(t?.enabled ?? true)\tmin_marker_count=\(t?.minMarkerCount ?? 2000)\ttile_size=\(t?.tileSize ?? 256)"
}

func json(_ m: V1.Marker) -> String {
    var o: [String: Any] = ["id": m.id, "lat": m.position?.latitude ?? 0, "lon": m.position?.longitude ?? 0,
                            "z_index": m.zIndex, "clickable": m.clickable ?? true, "draggable": m.draggable ?? false,
                            "visible": m.visible ?? true]
    if !m.attributes.isEmpty { o["attributes"] = m.attributes }
    switch m.icon {
    case .iconID(let id)?: o["icon_id"] = id
    case .pin(let p)?: o["pin"] = ["fill_color": String(format: "0x%08X", p.fillColor ?? 0xFFFF_0000), "label": p.label ?? ""]
    case nil: break
    }
    let data = (try? JSONSerialization.data(withJSONObject: o, options: [.sortedKeys])) ?? Data()
    return String(decoding: data, as: UTF8.self)
}

let tlsFiles = TLSClientFiles(caFile: option("--tls-ca"), serverName: option("--tls-server-name"),
                              certificateFile: option("--tls-cert"), keyFile: option("--tls-key"))
if (tlsFiles.certificateFile == nil) != (tlsFiles.keyFile == nil) { fail("--tls-cert and --tls-key go together", code: 2) }

do {
    let client = try MarkerdClient(url: url, timeout: .seconds(120), tls: tlsFiles,
                                   authToken: ProcessInfo.processInfo.environment["MARKERD_TOKEN"] ?? "")
    let command = args.removeFirst()
    switch command {
    case "layers":
        let sub = positional(0, "layers subcommand (list, create, delete, stats)")
        switch sub {
        case "list":
            for layer in try client.listLayers() { print(describe(layer)) }
        case "create":
            let minCount = option("--min-marker-count")
            let tileSize = option("--tile-size")
            let noTiling = flag("--no-tiling")
            let clusters = flag("--clusters")
            let labelAttribute = option("--labels")
            let priorityAttribute = option("--label-priority")
            let group = option("--group")
            if priorityAttribute != nil && labelAttribute == nil { fail("--label-priority needs --labels", code: 2) }
            var req = V1.CreateLayerRequest()
            req.layerID = positional(1, "LAYER")
            if let group { req.group = group }
            var tiling = V1.TilingOptions()
            if let minCount { guard let n = UInt32(minCount) else { fail("--min-marker-count takes a number", code: 2) }; tiling.minMarkerCount = n }
            if let tileSize { guard let n = UInt32(tileSize) else { fail("--tile-size takes 256 or 512", code: 2) }; tiling.tileSize = n }
            if noTiling { tiling.enabled = false }
            var options = V1.LayerOptions()
            options.tiling = tiling
            if let labelAttribute {
                var labels = V1.LabelOptions()
                labels.enabled = true
                labels.textAttribute = labelAttribute
                if let priorityAttribute { labels.priorityAttribute = priorityAttribute }
                options.labels = labels
            }
            if clusters {
                var clustering = V1.ClusteringOptions()
                clustering.enabled = true
                clustering.raster = true
                options.clustering = clustering
            }
            req.options = options
            print(describe(try client.createLayer(req)))
        case "delete":
            let r = try client.deleteLayer(positional(1, "LAYER"))
            print("deleted \(args[1]) (\(r.removedCount) markers)")
        case "stats":
            let s = try client.layerStats(positional(1, "LAYER"))
            print("layer=\(s.layerID) markers=\(s.markerCount) static=\(s.staticMarkerCount) live=\(s.liveMarkerCount) hidden=\(s.hiddenMarkerCount) " +
                  "mode=\(s.mode == .tiled ? "TILED" : "NATIVE") version=\(s.version) approximate_bytes=\(s.approximateBytes)")
        default:
            fail("unknown layers subcommand \"\(sub)\"\n\n\(usage)", code: 2)
        }
    case "register-icon":
        let anchor = option("--anchor")
        var req = V1.RegisterIconRequest()
        req.iconID = positional(0, "ICON")
        let path = positional(1, "FILE.png")
        guard let data = FileManager.default.contents(atPath: path) else { fail("cannot read \(path)") }
        req.png = [UInt8](data)
        if let anchor {
            let parts = anchor.split(separator: ",").compactMap { Float($0) }
            guard parts.count == 2 else { fail("--anchor takes X,Y fractions, e.g. 0.5,1", code: 2) }
            var a = V1.Anchor()
            a.x = parts[0]
            a.y = parts[1]
            req.anchor = a
        }
        let r = try client.registerIcon(req)
        print("registered \(r.iconID) \(r.width)x\(r.height)")
    case "load":
        let idProperty = option("--id-property")
        let batch = number("--batch", default: 50_000, in: 1...100_000)
        let concurrency = number("--concurrency", default: 4, in: 1...64)
        let layer = positional(0, "LAYER")
        let path = positional(1, "FILE")
        let readStart = Date()
        let contents: MarkerFile.Contents
        do { contents = try MarkerFile.read(path: path, idProperty: idProperty) } catch { fail("\(error)") }
        let markers = contents.markers
        FileHandle.standardError.write(String(format: "read %d markers from %@ in %.1f s\n", markers.count, path,
                                              Date().timeIntervalSince(readStart)).data(using: .utf8)!)
        let loader = BulkLoader(client: client, batchSize: batch, concurrency: concurrency)
        let progress = ProgressLine("loading \(layer)", unit: "markers", total: markers.count)
        let summary = try loader.load(markers, attributes: contents.attributes, into: layer) { p in progress.update(p.sent) }
        progress.finish()
        print(String(format: "loaded %d markers into %@ (%d created, %d updated) in %.2f s: %.0f markers/s",
                     summary.markers, layer, summary.created, summary.updated, summary.seconds, summary.markersPerSecond))
    case "get":
        let layer = positional(0, "LAYER")
        let r = try client.getMarkers(layer, ids: Array(args.dropFirst()))
        for m in r.markers { print(json(m)) }
        for id in r.missingIDs { FileHandle.standardError.write("not found: \(id)\n".data(using: .utf8)!) }
        if !r.missingIDs.isEmpty { exit(1) }
    case "update":
        var m = V1.Marker()
        var paths: [String] = []
        if let text = option("--label") { m.label = V1.MarkerLabel(text: text); paths.append("label.text") }
        if let position = option("--position") {
            let parts = position.split(separator: ",").compactMap { Double($0) }
            guard parts.count == 2 else { fail("--position takes LAT,LON, e.g. 48.85,2.35", code: 2) }
            m.position = V1.LatLng(latitude: parts[0], longitude: parts[1])
            paths.append("position")
        }
        if let z = option("--z-index") {
            guard let n = Int32(z) else { fail("--z-index takes a whole number", code: 2) }
            m.zIndex = n
            paths.append("z_index")
        }
        if let visible = option("--visible") {
            guard let v = Bool(visible) else { fail("--visible takes true or false", code: 2) }
            m.visible = v
            paths.append("visible")
        }
        guard !paths.isEmpty else { fail("update needs at least one of --label, --position, --z-index, --visible", code: 2) }
        let layer = positional(0, "LAYER"), id = positional(1, "ID")
        let r = try client.updateMarkers(layer, [V1.MarkerUpdate(id: id, marker: m, paths: paths)])
        print("updated \(r.updatedCount) marker (\(paths.joined(separator: ", "))), layer version \(r.layerVersion)")
    case "remove":
        let layer = positional(0, "LAYER")
        let r = try client.removeMarkers(layer, ids: Array(args.dropFirst()))
        print("removed \(r.removedCount), not found \(r.notFoundCount)")
    case "clear":
        let r = try client.clearLayer(positional(0, "LAYER"))
        print("cleared \(args[0]) (\(r.removedCount) markers)")
    case "snapshot":
        let r = try client.createSnapshot()
        print("snapshot \(r.path): \(r.markerCount) markers, \(r.sizeBytes) bytes, \(r.durationMs) ms")
    case "sign-url":
        let layer = positional(0, "LAYER")
        let ttl = option("--ttl").map { UInt32($0) ?? { fail("--ttl takes whole seconds", code: 2) }() } ?? 0
        let r = try client.signTileURL(layer, ttlSeconds: ttl)
        print(r.urlTemplate)
        FileHandle.standardError.write("expires \(r.expiresUnix) (Unix seconds); prefix \(r.pathPrefix) goes before any of the layer's gateway paths\n".data(using: .utf8)!)
    case "tiles":
        let sub = positional(0, "tiles subcommand (seed)")
        guard sub == "seed" else { fail("unknown tiles subcommand \"\(sub)\"\n\n\(usage)", code: 2) }
        guard let zoom = option("--zoom") else { fail("tiles seed needs --zoom A-B", code: 2) }
        let range: TileRange
        do { range = try TileRange(bbox: option("--bbox"), zoom: zoom) } catch { fail(error.description, code: 2) }
        let size = choice("--size", default: 0, [256, 512])
        let density = choice("--density", default: 1, [1, 2, 3])
        let concurrency = number("--concurrency", default: 4, in: 1...64)
        let seeder = TileSeeder(client: client, layerID: positional(1, "LAYER"), size: UInt32(size),
                                density: UInt32(density), concurrency: concurrency)
        if args.count > 2 { fail("unexpected arguments: \(args.dropFirst(2).joined(separator: " "))", code: 2) }
        let count = range.count
        guard count <= TileSeeder.maxTiles else {
            fail("zoom \(zoom) over that bbox is \(count) tiles, more than \(TileSeeder.maxTiles): " +
                 "seed fewer zoom levels or a smaller --bbox", code: 2)
        }
        let start = Date()
        let progress = ProgressLine("seeding \(seeder.layerID)", unit: "tiles", total: count)
        let summary = try seeder.seed(range.allTiles()) { progress.update($0) }
        progress.finish()
        let seconds = Date().timeIntervalSince(start)
        print(String(format: "seeded %d tiles of %@ (%d empty, %d bytes) in %.2f s: %.0f tiles/s", summary.tiles,
                     seeder.layerID, summary.empty, summary.bytes, seconds, seconds > 0 ? Double(summary.tiles) / seconds : 0))
    case "export":
        let pageSize = number("--page-size", default: 10_000, in: 1...100_000)
        let layer = positional(0, "LAYER")
        let path = positional(1, "FILE.geojson")
        if args.count > 2 { fail("unexpected arguments: \(args.dropFirst(2).joined(separator: " "))", code: 2) }
        let start = Date()
        let written: Int
        do { written = try Export.run(client, layerID: layer, path: path, pageSize: pageSize) }
        catch let e as Export.Refused { fail(e.description) }
        print(String(format: "exported %d markers of %@ to %@ in %.2f s", written, layer, path, Date().timeIntervalSince(start)))
    case "info":
        let r = try client.serverInfo()
        print("markerd \(r.version) uptime=\(r.uptimeMs / 1000)s layers=\(r.layerCount) markers=\(r.markerCount) durable=\(r.durable)")
    default:
        fail("unknown command \"\(command)\"\n\n\(usage)", code: 2)
    }
} catch {
    fail("\(error)")
}

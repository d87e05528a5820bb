// markerctl: markerd's command-line client. Every command is one or more RPCs; errors print the
// server's status and message and exit 1 (usage errors exit 2).
import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdTransport

let usage = """
usage: markerctl [--url URL] [TLS options] COMMAND ...   (default URL tcp://127.0.0.1:7450, or $MARKERD_URL)
       a markerd with --auth-file needs a token: $MARKERD_TOKEN (from `markerd token add`)

  TLS options, for a tls+tcp:// URL:
    --tls-ca FILE            CA certificates (PEM) the server's certificate must chain to
    --tls-server-name NAME   name the server's certificate must carry (a DNS name or its CN: nng's mbedTLS
                             2.28 does not match IP addresses). Default: the URL's host
    --tls-cert FILE          client certificate (PEM), for a server that requires one (--tls-client-ca)
    --tls-key FILE           the client certificate's private key (PEM)

  layers list
  layers create LAYER [--min-marker-count N] [--tile-size 256|512] [--no-tiling]
                [--labels ATTRIBUTE [--label-priority ATTRIBUTE]]   (label each pin with an attribute)
                [--clusters]   (cluster the markers; tiles draw clusters as count bubbles)
  layers delete LAYER
  layers stats LAYER
  register-icon ICON FILE.png [--anchor X,Y]
  load LAYER FILE.csv|FILE.geojson [--id-property NAME] [--batch N] [--concurrency N]
  get LAYER ID...
  update LAYER ID [--label TEXT] [--position LAT,LON] [--z-index N] [--visible true|false]
                (changes only the fields given; the rest of the marker stays)
  remove LAYER ID...
  clear LAYER
  snapshot
  info
  sign-url LAYER [--ttl SECONDS]   a signed tile URL template path (default 3600 s, at most 7 days)
"""

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
    print(usage)
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
            if priorityAttribute != nil && labelAttribute == nil { fail("--label-priority needs --labels", code: 2) }
            var req = V1.CreateLayerRequest()
            req.layerID = positional(1, "LAYER")
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
        let batch = Int(option("--batch") ?? "50000") ?? 50_000
        let concurrency = Int(option("--concurrency") ?? "4") ?? 4
        let layer = positional(0, "LAYER")
        let path = positional(1, "FILE")
        let readStart = Date()
        let markers: [V1.Marker]
        do { markers = try MarkerFile.read(path: path, idProperty: idProperty) } catch { fail("\(error)") }
        FileHandle.standardError.write(String(format: "read %d markers from %@ in %.1f s\n", markers.count, path,
                                              Date().timeIntervalSince(readStart)).data(using: .utf8)!)
        let loader = BulkLoader(client: client, batchSize: batch, concurrency: concurrency)
        let summary = try loader.load(markers, into: layer) { p in
            let pct = p.total > 0 ? 100 * Double(p.sent) / Double(p.total) : 100
            FileHandle.standardError.write(String(format: "\rloading %@: %d/%d (%.0f%%) %.0f markers/s   ",
                                                  layer, p.sent, p.total, pct, p.markersPerSecond).data(using: .utf8)!)
        }
        FileHandle.standardError.write("\n".data(using: .utf8)!)
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
    case "info":
        let r = try client.serverInfo()
        print("markerd \(r.version) uptime=\(r.uptimeMs / 1000)s layers=\(r.layerCount) markers=\(r.markerCount) durable=\(r.durable)")
    default:
        fail("unknown command \"\(command)\"\n\n\(usage)", code: 2)
    }
} catch {
    fail(error.description)
}

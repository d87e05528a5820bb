import MarkerdTestSupport
import Foundation
import MarkerdAPI
import MarkerdClient
import Testing

/// What clients have seen of each versioned thing (a layer's version, a tile over RPC, a live tile
/// URL's ETag, an immutable URL), checked as it is seen: a version never falls, one version of
/// one thing never comes with two different bodies, one immutable URL never serves two bodies,
/// and the first version of a layer seen after a restart is above every one seen before it.
final class VersionLedger {
    private var last: [String: UInt64] = [:]
    private var bodies: [String: [UInt64: [UInt8]]] = [:]
    private var immutableBodies: [String: [UInt8]] = [:]
    /// Things without a body (layer versions) not seen since the last restart.
    private var unseenSinceRestart: Set<String> = []
    /// Every ETag seen per live URL, for the If-None-Match checks after a restart.
    private(set) var etags: [String: Set<String>] = [:]
    /// Where the test is, for failure messages.
    var step = ""

    /// Records `thing` at `version`, with its `body` (nil: a layer version, which has none).
    func observe(_ thing: String, version: UInt64, body: [UInt8]?, sourceLocation: SourceLocation = #_sourceLocation) {
        let previous = last[thing] ?? 0
        if unseenSinceRestart.remove(thing) != nil {
            #expect(version > previous, "\(step): \(thing) is at version \(version) after the restart, not above \(previous) seen before it",
                    sourceLocation: sourceLocation)
        } else {
            #expect(version >= previous, "\(step): \(thing) went back from version \(previous) to \(version)", sourceLocation: sourceLocation)
        }
        last[thing] = max(previous, version)
        guard let body else { return }
        if let earlier = bodies[thing]?[version] {
            #expect(byteMismatch(earlier, body) == nil, "\(step): \(thing) version \(version) came with two different bodies",
                    sourceLocation: sourceLocation)
        } else {
            bodies[thing, default: [:]][version] = body
        }
    }

    /// The body of a live URL whose ETag is `etag`: `observe`s it by the ETag's number.
    func observe(url: String, etag: String, body: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        guard let version = VersionLedger.version(ofETag: etag) else {
            Issue.record("\(step): \(url) has ETag \(etag), not a strong \"<number>\"", sourceLocation: sourceLocation)
            return
        }
        etags[url, default: []].insert(etag)
        observe("GET \(url)", version: version, body: body, sourceLocation: sourceLocation)
    }

    /// The body an immutable URL served (200).
    func observe(immutable url: String, body: [UInt8], sourceLocation: SourceLocation = #_sourceLocation) {
        if let earlier = immutableBodies[url] {
            #expect(byteMismatch(earlier, body) == nil, "\(step): immutable \(url) served two different bodies",
                    sourceLocation: sourceLocation)
        } else {
            immutableBodies[url] = body
        }
    }

    /// Immutable URLs served so far.
    var immutableURLs: [String] { immutableBodies.keys.sorted() }

    /// The body `version` of `thing` was seen with, if it was.
    func body(_ thing: String, version: UInt64) -> [UInt8]? { bodies[thing]?[version] }

    /// markerd restarted: every layer seen so far must show a higher version next.
    func restarted() {
        unseenSinceRestart = Set(last.keys.filter { $0.hasPrefix("layer ") && bodies[$0] == nil })
    }

    /// The version a strong ETag (`"12"`) names; nil for anything else (a weak one included).
    static func version(ofETag tag: String) -> UInt64? {
        guard tag.count >= 2, tag.hasPrefix("\""), tag.hasSuffix("\"") else { return nil }
        return UInt64(tag.dropFirst().dropLast())
    }
}

/// A real markerd (the built binary) with its HTTP gateway, on one data directory across restarts.
final class RestartingMarkerd {
    let dir = TestServer.temporaryDirectory()
    let httpPort = MarkerdProcess.freePort()
    private(set) var process: MarkerdProcess
    private(set) var client: MarkerdClient

    init() throws {
        (process, client) = try Self.start(dir, httpPort: httpPort)
    }

    deinit {
        if process.process.isRunning {
            process.kill(SIGKILL)
            _ = process.waitForExit(timeout: 5)
        }
        try? FileManager.default.removeItem(atPath: dir)
    }

    private static func start(_ dir: String, httpPort: Int) throws -> (MarkerdProcess, MarkerdClient) {
        let p = try MarkerdProcess(arguments: ["--data-dir", dir, "--http", "127.0.0.1:\(httpPort)"])
        let c = try p.waitUntilReady()
        // The gateway starts just after the RPC listener.
        try waitUntil("the HTTP gateway answers") { (try? RawHTTP.request(port: httpPort, "GET", "/healthz"))?.status == 200 }
        return (p, c)
    }

    /// Stops markerd with `signal` (SIGTERM: it must exit 0; SIGKILL: a crash).
    func stop(_ signal: Int32) {
        guard process.process.isRunning else { return }
        process.kill(signal)
        let status = process.waitForExit(timeout: 20)
        if signal == SIGTERM { #expect(status == 0, "markerd did not exit 0 after SIGTERM: \(process.stderrText())") }
    }

    /// Starts markerd again on the same data directory (on a new RPC port).
    func start() throws {
        (process, client) = try Self.start(dir, httpPort: httpPort)
    }

    /// `stop(signal)`, then `start()`.
    func restart(_ signal: Int32) throws {
        stop(signal)
        try start()
    }

    func get(_ path: String, headers: [(String, String)] = []) throws -> RawHTTPResponse {
        try RawHTTP.request(port: httpPort, "GET", path, headers: headers)
    }

    func pointTile(_ layer: String, _ z: UInt32, _ x: UInt32, _ y: UInt32, clustered: Bool = false,
                   knownVersion: UInt64 = 0) throws -> V1.GetPointTileResponse {
        try client.call("GetPointTile", V1.GetPointTileRequest(layerID: layer, z: z, x: x, y: y, clustered: clustered,
                                                               knownVersion: knownVersion), as: V1.GetPointTileResponse.self)
    }

    func tile(_ layer: String, _ z: UInt32, _ x: UInt32, _ y: UInt32) throws -> V1.GetTileResponse {
        try client.call("GetTile", V1.GetTileRequest(layerID: layer, z: z, x: x, y: y), as: V1.GetTileResponse.self)
    }
}

@Suite("versions and ETags never repeat across restarts and crashes (a real markerd process)", .serialized)
struct VersionRestartTests {
    static let immutable = "public, max-age=31536000, immutable"

    @Test("issue 35: a drag, a restart and three moves do not bring a layer back to a version it had, so known versions, ETags and immutable URLs see the new content",
          arguments: [SIGTERM, SIGKILL])
    func dragThenRestart(signal: Int32) throws {
        let m = try RestartingMarkerd()
        _ = try createLayer(m.client, "L")
        _ = try m.client.upsertMarkers("L", [marker("a", 10, 10) { $0.draggable = true }, marker("b", 20, 20)])
        let drag = try m.client.beginDrag("L", markerID: "a")
        for i in 1...3 { try m.client.dragTo("L", dragID: drag.dragID, to: V1.LatLng(latitude: 10 + Double(i), longitude: 10)) }
        let v = try m.client.endDrag("L", dragID: drag.dragID).layerVersion
        #expect(try m.client.getLayer("L").version == v)
        #expect(try m.pointTile("L", 0, 0, 0).version == v)
        let mvt = try m.get("/tiles/L/0/0/0.mvt")
        #expect(mvt.status == 200 && mvt.header("ETag") == "\"\(v)\"")
        let versioned = "/tiles/L/v\(v)/256/0/0/0.png"
        let png = try m.get(versioned)
        #expect(png.status == 200 && png.header("Cache-Control") == Self.immutable)

        try m.restart(signal)
        let restarted = try m.client.getLayer("L").version
        #expect(restarted > v, "the layer is at version \(restarted) after the restart, not above \(v)")
        for i in 1...3 { _ = try m.client.moveMarkers("L", [move("b", 20 + Double(i), 20)]) }
        #expect(try m.client.getLayer("L").version > v)

        let point = try m.pointTile("L", 0, 0, 0, knownVersion: v)
        #expect(!point.notModified && !point.mvt.isEmpty && point.version > v)
        let live = try m.get("/tiles/L/0/0/0.mvt", headers: [("If-None-Match", "W/\"\(v)\"")])
        #expect(live.status == 200 && live.header("ETag") != "\"\(v)\"")
        let again = try m.get(versioned)
        if again.status == 200 {
            #expect(byteMismatch(png.body, again.body) == nil, "\(versioned) served two different images")
        } else {
            #expect(again.status == 302 && again.header("Location") == "/tiles/L/256/0/0/0.png")
        }
        // Drag ids do not repeat either: the drag id from before the restart is not the new drag's.
        let newDrag = try m.client.beginDrag("L", markerID: "a")
        #expect(newDrag.dragID != drag.dragID)
        #expect(statusCode { try m.client.dragTo("L", dragID: drag.dragID, to: V1.LatLng(latitude: 0, longitude: 0)) } == .notFound)
    }

    /// Tiles looked at in every step: z0, the four z1 tiles, and the z4 tile around (10, 10).
    static let tiles: [(UInt32, UInt32, UInt32)] = [(0, 0, 0), (1, 0, 0), (1, 1, 0), (1, 0, 1), (1, 1, 1), (4, 8, 7)]

    /// Looks at everything versioned in layers L (plain) and C (grid clusters drawn into the
    /// raster tiles) and hands it to the ledger.
    static func observe(_ m: RestartingMarkerd, _ ledger: VersionLedger) throws {
        for layer in ["L", "C"] {
            let v = try m.client.getLayer(layer).version
            ledger.observe("layer \(layer)", version: v, body: nil)
            for (z, x, y) in tiles {
                let t = try m.tile(layer, z, x, y)
                ledger.observe("GetTile \(layer) \(z)/\(x)/\(y)", version: t.version, body: t.png)
            }
            let p = try m.pointTile(layer, 0, 0, 0, clustered: layer == "C")
            ledger.observe("GetPointTile \(layer) 0/0/0", version: p.version, body: p.mvt)
            for url in ["/tiles/\(layer)/256/0/0/0.png", "/tiles/\(layer)/256/4/8/7.png", "/tiles/\(layer)/0/0/0.mvt"] {
                let r = try m.get(url)
                try #require(r.status == 200, "\(ledger.step): GET \(url): \(r.status) \(r.text)")
                ledger.observe(url: url, etag: try #require(r.header("ETag")), body: r.body)
            }
            for url in ["/tiles/\(layer)/v\(v)/256/0/0/0.png", "/tiles/\(layer)/v\(v)/0/0/0.mvt"] {
                let r = try m.get(url)
                try #require(r.status == 200, "\(ledger.step): GET \(url): \(r.status) \(r.text)")
                #expect(r.header("Cache-Control") == immutable)
                ledger.observe(immutable: url, body: r.body)
            }
        }
    }

    /// After a restart: every immutable URL served before serves the same bytes or redirects,
    /// and an If-None-Match of an ETag seen before answers 304 only where the body is the one
    /// seen with that ETag.
    static func checkAfterRestart(_ m: RestartingMarkerd, _ ledger: VersionLedger) throws {
        for url in ledger.immutableURLs {
            let r = try m.get(url)
            if r.status == 200 {
                ledger.observe(immutable: url, body: r.body)
            } else {
                #expect(r.status == 302, "\(ledger.step): GET \(url) after the restart: \(r.status)")
            }
        }
        for (url, tags) in ledger.etags {
            let current = try m.get(url)
            guard current.status == 200 else { continue }  // the layer is being re-created
            for tag in tags.sorted() {
                let r = try m.get(url, headers: [("If-None-Match", tag)])
                if r.status == 304 {
                    let seen = ledger.body("GET \(url)", version: VersionLedger.version(ofETag: tag) ?? 0)
                    #expect(seen.map { byteMismatch($0, current.body) == nil } ?? false,
                            "\(ledger.step): \(url) answers 304 to \(tag) after the restart, but its body is not the one seen with \(tag)")
                } else {
                    #expect(r.status == 200, "\(ledger.step): GET \(url) with If-None-Match \(tag): \(r.status)")
                }
            }
        }
    }

    @Test("every mutation kind, drags and animations included, then a restart (SIGTERM or SIGKILL, snapshots in between): layer versions, tile versions and ETags only rise, and none names two bodies")
    func everyMutationKindThenRestart() throws {
        let m = try RestartingMarkerd()
        let ledger = VersionLedger()
        var icon = V1.RegisterIconRequest()
        icon.iconID = "dot"
        icon.png = onePixelPNG
        _ = try m.client.registerIcon(icon)
        var clustered = V1.CreateLayerRequest()
        clustered.layerID = "C"
        clustered.options = V1.LayerOptions()
        clustered.options?.clustering = V1.ClusteringOptions()
        clustered.options?.clustering?.enabled = true
        clustered.options?.clustering?.raster = true
        let cluster = clustered
        let steps: [(name: String, snapshot: Bool, change: (MarkerdClient) throws -> Void)] = [
            ("create", false, { c in
                _ = try createLayer(c, "L")
                _ = try c.createLayer(cluster)
            }),
            ("upsert", true, { c in
                for layer in ["L", "C"] {
                    _ = try c.upsertMarkers(layer, (0..<12).map { i in marker("m\(i)", 10 + Double(i % 4), 10 + Double(i / 4)) }
                        + [marker("far", -40, -100), marker("d", 12, 12) { $0.draggable = true }])
                }
            }),
            ("move", false, { c in
                for layer in ["L", "C"] { _ = try c.moveMarkers(layer, [move("m1", 11.5, 11.5), move("far", -41, -101)]) }
            }),
            ("style and icon", false, { c in
                for layer in ["L", "C"] {
                    _ = try c.upsertMarkers(layer, [marker("m2", 10, 10.2) { $0.icon = .iconID("dot"); $0.zIndex = 3 },
                                                   marker("m3", 10.5, 10) { $0.anchor = V1.Anchor(x: 0.2, y: 0.9) }])
                }
            }),
            ("remove", true, { c in
                for layer in ["L", "C"] { _ = try c.removeMarkers(layer, ids: ["m4", "far"]) }
            }),
            ("drag", false, { c in
                for layer in ["L", "C"] {
                    let d = try c.beginDrag(layer, markerID: "d")
                    for i in 1...3 { try c.dragTo(layer, dragID: d.dragID, to: V1.LatLng(latitude: 12 + Double(i) / 4, longitude: 12)) }
                    _ = try c.endDrag(layer, dragID: d.dragID)
                }
            }),
            ("cancelled drag", false, { c in
                for layer in ["L", "C"] {
                    let d = try c.beginDrag(layer, markerID: "d")
                    try c.dragTo(layer, dragID: d.dragID, to: V1.LatLng(latitude: 30, longitude: 30))
                    _ = try c.cancelDrag(layer, dragID: d.dragID)
                }
            }),
            ("drag left open", false, { c in
                for layer in ["L", "C"] {
                    let d = try c.beginDrag(layer, markerID: "d")
                    for i in 1...2 { try c.dragTo(layer, dragID: d.dragID, to: V1.LatLng(latitude: 14, longitude: 12 + Double(i))) }
                }
            }),
            ("animation", true, { c in
                for layer in ["L", "C"] {
                    let v = try c.getLayer(layer).version
                    _ = try c.upsertMarkers(layer, [marker("anim", 11, 11) { $0.animation = V1.Animation(kind: .drop, durationMs: 300) }])
                    // Reads expire the ended animation, which raises the version once more.
                    try waitUntil("\(layer): the animation ended") { try c.getLayer(layer).version >= v + 2 }
                }
            }),
            ("clear", false, { c in
                for layer in ["L", "C"] {
                    _ = try c.clearLayer(layer)
                    _ = try c.upsertMarkers(layer, [marker("m0", 10, 10), marker("d", 12, 12) { $0.draggable = true }])
                }
            }),
            ("layer options", true, { c in
                _ = try c.deleteLayer("L")
                var r = V1.CreateLayerRequest()
                r.layerID = "L"
                r.options = V1.LayerOptions()
                r.options?.tiling = V1.TilingOptions()
                r.options?.tiling?.tileSize = 512
                _ = try c.createLayer(r)
                _ = try c.upsertMarkers("L", [marker("m0", 10, 10), marker("m1", 10.5, 10.5)])
            }),
        ]
        for (i, step) in steps.enumerated() {
            let signal = i % 2 == 0 ? SIGTERM : SIGKILL
            ledger.step = step.name
            try step.change(m.client)
            try Self.observe(m, ledger)
            if step.snapshot { _ = try m.client.createSnapshot() }
            // A drag after the last look: raises the version once more, unseen, before the restart.
            if step.name == "move" { try m.client.dragTo("L", dragID: try m.client.beginDrag("L", markerID: "d").dragID,
                                                          to: V1.LatLng(latitude: 13, longitude: 13)) }
            try m.restart(signal)
            ledger.step = "\(step.name), then \(signal == SIGTERM ? "SIGTERM" : "SIGKILL") and a restart"
            ledger.restarted()
            try Self.checkAfterRestart(m, ledger)
            try Self.observe(m, ledger)
        }
    }

    @Test("kill -9 while drags, moves and reads run: after each restart the layer's version and its z0 tile's version are above every one read before")
    func crashWhileDragging() throws {
        let seed = testSeed("VersionRestartTests.crashWhileDragging", fixed: 35)
        var rng = SplitMix64(seed: seed)
        let m = try RestartingMarkerd()
        _ = try createLayer(m.client, "L")
        _ = try m.client.upsertMarkers("L", [marker("d", 10, 10) { $0.draggable = true }, marker("s", 20, 20)])
        let seen = HighestVersions()
        for round in 0..<6 {
            let url = m.process.url, stop = StopFlag(), group = DispatchGroup()
            DispatchQueue.global().async(group: group) {
                // Drags (not journaled) and reads of the version they reveal.
                guard let c = try? MarkerdClient(url: url, timeout: .seconds(3)),
                      let drag = try? c.beginDrag("L", markerID: "d") else { return }
                var i = 0
                while !stop.isSet {
                    i += 1
                    guard (try? c.dragTo("L", dragID: drag.dragID, to: V1.LatLng(latitude: 10 + Double(i % 500) / 1000, longitude: 10))) != nil,
                          let v = try? c.getLayer("L").version else { return }
                    seen.layer(v)
                }
            }
            let moverSeed = rng.next()
            DispatchQueue.global().async(group: group) {
                // Moves of a marker drawn into the z0 tile, and reads of that tile's version.
                var r = SplitMix64(seed: moverSeed)
                guard let c = try? MarkerdClient(url: url, timeout: .seconds(3)) else { return }
                while !stop.isSet {
                    guard let moved = try? c.moveMarkers("L", [move("s", Double(r.next() % 120) - 60, Double(r.next() % 340) - 170)]),
                          let t = try? c.call("GetTile", V1.GetTileRequest(layerID: "L", z: 0, x: 0, y: 0), as: V1.GetTileResponse.self)
                    else { return }
                    seen.layer(moved.layerVersion)
                    seen.tile(t.version)
                }
            }
            Thread.sleep(forTimeInterval: Double(rng.next() % 600 + 150) / 1000)
            m.stop(SIGKILL)
            stop.set()
            group.wait()
            try m.start()
            let (layer, tile) = seen.highest
            let v = try m.client.getLayer("L").version
            let t = try m.tile("L", 0, 0, 0).version
            #expect(v > layer, "round \(round): the layer is at version \(v) after kill -9, not above \(layer) read before")
            #expect(t > tile, "round \(round): the z0 tile is at version \(t) after kill -9, not above \(tile) read before")
            seen.layer(v)
            seen.tile(t)
        }
        let reads = seen.reads
        #expect(reads.layer > 100 && reads.tile > 10, "too few versions read to mean anything: \(reads)")
    }
}

/// The highest layer and tile versions the workers of `crashWhileDragging` read; thread-safe.
final class HighestVersions: @unchecked Sendable {
    private let lock = NSLock()
    private var layerVersion: UInt64 = 0  // guarded by lock
    private var tileVersion: UInt64 = 0   // guarded by lock
    private var layerReads = 0, tileReads = 0  // guarded by lock

    func layer(_ v: UInt64) { lock.withLock { layerVersion = max(layerVersion, v); layerReads += 1 } }
    func tile(_ v: UInt64) { lock.withLock { tileVersion = max(tileVersion, v); tileReads += 1 } }
    var highest: (layer: UInt64, tile: UInt64) { lock.withLock { (layerVersion, tileVersion) } }
    var reads: (layer: Int, tile: Int) { lock.withLock { (layerReads, tileReads) } }
}

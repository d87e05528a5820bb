import MarkerdTestSupport
import Foundation
import Testing
import MarkerdAPI
import MarkerdServer
import MarkerdService
import MarkerdTransport
import Synchronization

/// A provider with in-memory layers. A tile's bytes name its address; its version is the
/// layer's version. `bumpDuringRender` changes the layer version while a tile renders.
final class FakeTileProvider: TileProvider, @unchecked Sendable {
    struct Layer { var tileSize: Int; var version: UInt64; var markers: [GatewayMarker] }
    let state = Mutex<[String: Layer]>([:])
    let tileCalls = Mutex<[(layer: String, z: Int, x: Int, y: Int, size: Int, density: Int, known: UInt64?)]>([])
    let bumpDuringRender = Atomic<Bool>(false)
    let failWith = Mutex<RPCError?>(nil)

    init(_ layers: [String: Layer]) { state.withLock { $0 = layers } }

    func bump(_ layer: String) { state.withLock { $0[layer]!.version += 1 } }
    func version(_ layer: String) -> UInt64 { state.withLock { $0[layer]!.version } }

    static func png(_ layer: String, _ z: Int, _ x: Int, _ y: Int, _ size: Int, _ density: Int, _ v: UInt64) -> [UInt8] {
        [0x89, 0x50, 0x4E, 0x47] + Array("\(layer)/\(size)/\(z)/\(x)/\(y)@\(density) v\(v)".utf8)
    }

    private func layer(_ id: String) throws(RPCError) -> Layer {
        if let e = failWith.withLock({ $0 }) { throw e }
        guard let l = state.withLock({ $0[id] }) else { throw .notFound("layer \"\(id)\" not found") }
        return l
    }

    func tile(layer id: String, z: Int, x: Int, y: Int, size: Int, density: Int,
              knownVersion: UInt64?) throws(RPCError) -> (png: [UInt8], version: UInt64, notModified: Bool) {
        let l = try layer(id)
        tileCalls.withLock { $0.append((id, z, x, y, size, density, knownVersion)) }
        if bumpDuringRender.load(ordering: .relaxed) { bump(id) }
        if knownVersion == l.version { return ([], l.version, true) }
        return (Self.png(id, z, x, y, size, density, l.version), l.version, false)
    }

    func pointTile(layer id: String, z: Int, x: Int, y: Int,
                   knownVersion: UInt64?) throws(RPCError) -> (mvt: [UInt8], version: UInt64, notModified: Bool) {
        let l = try layer(id)
        if knownVersion == l.version { return ([], l.version, true) }
        return (Array("mvt \(id)/\(z)/\(x)/\(y) v\(l.version)".utf8), l.version, false)
    }

    func layerInfo(_ id: String) throws(RPCError) -> (tileSize: Int, version: UInt64) {
        let l = try layer(id)
        return (l.tileSize, l.version)
    }

    func layers() -> [LayerSummary] {
        state.withLock { all in
            all.sorted { $0.key < $1.key }.map {
                LayerSummary(id: $0.key, version: $0.value.version, mode: $0.value.markers.count > 2 ? "tiled" : "native",
                             markerCount: UInt64($0.value.markers.count), tileSize: $0.value.tileSize)
            }
        }
    }

    func viewport(_ q: ViewportQuery) throws(RPCError) -> ViewportResult {
        let l = try layer(q.layer)
        let inView = l.markers.filter { $0.lat >= q.south && $0.lat <= q.north && $0.lon >= q.west && $0.lon <= q.east }
        return ViewportResult(mode: "native", markers: Array(inView.prefix(q.limit)), staticInView: UInt64(inView.count),
                              layerVersion: l.version)
    }

    func hitTest(_ q: HitTestQuery) throws(RPCError) -> HitTestResult {
        let l = try layer(q.layer)
        let near = l.markers.filter { abs($0.lat - q.lat) < 1 && abs($0.lon - q.lon) < 1 }
        return HitTestResult(hits: near.prefix(q.maxResults).map { .init(marker: $0, tiled: false) })
    }
}

private func makeGateway(metrics: ServerMetrics? = nil, viewerFiles: ViewerFiles = ViewerFiles()) throws -> (TileGateway, FakeTileProvider) {
    let provider = FakeTileProvider([
        "cities": .init(tileSize: 256, version: 7, markers: [
            GatewayMarker(id: "berlin", lat: 52.52, lon: 13.40, attributes: ["name": "Berlin"]),
            GatewayMarker(id: "paris", lat: 48.85, lon: 2.35),
            GatewayMarker(id: "tokyo", lat: 35.68, lon: 139.69),
        ]),
        "big": .init(tileSize: 512, version: 1, markers: []),
    ])
    let gateway = TileGateway(address: "127.0.0.1:0", provider: provider, metrics: metrics, viewerFiles: viewerFiles)
    try gateway.start()
    return (gateway, provider)
}

private func json(_ r: RawHTTPResponse) throws -> [String: Any] {
    try #require(try JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any])
}

@Suite("HTTP tile gateway over a real socket", .serialized)
struct TileGatewayTests {
    @Test func liveTileHeadersAndDensity() throws {
        let (gateway, provider) = try makeGateway()
        defer { gateway.stop() }
        let port = gateway.boundPort
        let r = try RawHTTP.request(port: port, "GET", "/tiles/cities/256/3/4/2.png", headers: [("Origin", "http://example.com")])
        #expect(r.status == 200)
        #expect(r.header("Content-Type") == "image/png")
        #expect(r.header("ETag") == "\"7\"")
        #expect(r.header("Cache-Control") == "public, max-age=5")
        #expect(r.header("Access-Control-Allow-Origin") == "*")
        #expect(r.body == FakeTileProvider.png("cities", 3, 4, 2, 256, 1, 7))
        for d in [2, 3] {
            let hi = try RawHTTP.request(port: port, "GET", "/tiles/cities/512/3/4/2@\(d)x.png")
            #expect(hi.status == 200)
            #expect(hi.body == FakeTileProvider.png("cities", 3, 4, 2, 512, d, 7))
        }
        #expect(try RawHTTP.request(port: port, "GET", "/tiles/cities/256/0/0/0@1x.png").status == 200)
        let calls = provider.tileCalls.withLock { $0 }
        #expect(calls.map(\.density) == [1, 2, 3, 1])
        #expect(calls.allSatisfy { $0.known == nil })
    }

    @Test func ifNoneMatchGives304() throws {
        let (gateway, provider) = try makeGateway()
        defer { gateway.stop() }
        let port = gateway.boundPort
        for inm in ["\"7\"", "W/\"7\"", "\"3\", \"7\"", "*"] {
            let r = try RawHTTP.request(port: port, "GET", "/tiles/cities/256/1/1/1.png", headers: [("If-None-Match", inm)])
            #expect(r.status == 304, "If-None-Match: \(inm)")
            #expect(r.body.isEmpty)
            #expect(r.header("ETag") == "\"7\"")
            #expect(r.header("Cache-Control") == "public, max-age=5")
            #expect(r.header("Access-Control-Allow-Origin") == "*")
        }
        #expect(provider.tileCalls.withLock { $0 }.first?.known == 7)
        // A stale tag gets the new tile.
        provider.bump("cities")
        let fresh = try RawHTTP.request(port: port, "GET", "/tiles/cities/256/1/1/1.png", headers: [("If-None-Match", "\"7\"")])
        #expect(fresh.status == 200)
        #expect(fresh.header("ETag") == "\"8\"")
        #expect(fresh.body == FakeTileProvider.png("cities", 1, 1, 1, 256, 1, 8))
        // Garbage tags are ignored.
        #expect(try RawHTTP.request(port: port, "GET", "/tiles/cities/256/1/1/1.png", headers: [("If-None-Match", "nonsense")]).status == 200)
    }

    @Test func versionedURLsAreImmutableOrRedirect() throws {
        let (gateway, provider) = try makeGateway()
        defer { gateway.stop() }
        let port = gateway.boundPort
        let r = try RawHTTP.request(port: port, "GET", "/tiles/cities/v7/256/2/1/3@2x.png")
        #expect(r.status == 200)
        #expect(r.header("Cache-Control") == "public, max-age=31536000, immutable")
        #expect(r.header("ETag") == "\"7\"")
        #expect(r.body == FakeTileProvider.png("cities", 2, 1, 3, 256, 2, 7))
        let nm = try RawHTTP.request(port: port, "GET", "/tiles/cities/v7/256/2/1/3@2x.png", headers: [("If-None-Match", "\"7\"")])
        #expect(nm.status == 304)
        #expect(nm.header("Cache-Control") == "public, max-age=31536000, immutable")
        // A version that is not current redirects to the live URL, never cached for long.
        for v in ["v6", "v8", "v0"] {
            let old = try RawHTTP.request(port: port, "GET", "/tiles/cities/\(v)/256/2/1/3@2x.png")
            #expect(old.status == 302)
            #expect(old.header("Location") == "/tiles/cities/256/2/1/3@2x.png")
            #expect(old.header("Cache-Control") == "no-cache")
            #expect(old.header("Access-Control-Allow-Origin") == "*")
        }
        // The layer changing while the tile renders: redirect, not an immutable wrong tile.
        provider.bumpDuringRender.store(true, ordering: .relaxed)
        let v = provider.version("cities")
        let raced = try RawHTTP.request(port: port, "GET", "/tiles/cities/v\(v)/256/2/1/3.png")
        #expect(raced.status == 302)
        #expect(raced.header("Location") == "/tiles/cities/256/2/1/3.png")
        provider.bumpDuringRender.store(false, ordering: .relaxed)
        // Versioned point tiles too.
        let pv = provider.version("cities")
        let pt = try RawHTTP.request(port: port, "GET", "/tiles/cities/v\(pv)/4/3/2.mvt")
        #expect(pt.status == 200)
        #expect(pt.header("Cache-Control") == "public, max-age=31536000, immutable")
        let ptOld = try RawHTTP.request(port: port, "GET", "/tiles/cities/v1/4/3/2.mvt")
        #expect(ptOld.status == 302)
        #expect(ptOld.header("Location") == "/tiles/cities/4/3/2.mvt")
    }

    @Test func pointTiles() throws {
        let (gateway, _) = try makeGateway()
        defer { gateway.stop() }
        let port = gateway.boundPort
        let r = try RawHTTP.request(port: port, "GET", "/tiles/cities/5/10/12.mvt")
        #expect(r.status == 200)
        #expect(r.header("Content-Type") == "application/vnd.mapbox-vector-tile")
        #expect(r.header("ETag") == "\"7\"")
        #expect(r.header("Cache-Control") == "public, max-age=5")
        #expect(r.text == "mvt cities/5/10/12 v7")
        #expect(try RawHTTP.request(port: port, "GET", "/tiles/cities/5/10/12.mvt", headers: [("If-None-Match", "\"7\"")]).status == 304)
        #expect(try RawHTTP.request(port: port, "GET", "/tiles/cities/5/32/12.mvt").status == 400)
        #expect(try RawHTTP.request(port: port, "GET", "/tiles/nope/5/10/12.mvt").status == 404)
    }

    @Test func badRequestsNotFoundAndMethods() throws {
        let (gateway, provider) = try makeGateway()
        defer { gateway.stop() }
        let port = gateway.boundPort
        let bad = ["/tiles/cities/256/23/0/0.png", "/tiles/cities/256/2/4/0.png", "/tiles/cities/256/2/0/4.png",
                   "/tiles/cities/256/a/0/0.png", "/tiles/cities/256/-1/0/0.png", "/tiles/cities/256/1/0/+1.png",
                   "/tiles/cities/300/1/0/0.png", "/tiles/cities/abc/1/0/0.png", "/tiles/cities/256/1/0/0@4x.png",
                   "/tiles/cities/256/1/0/0@0x.png", "/tiles/cities/256/1/0/0@2.png", "/tiles/cities/x7/256/1/0/0.png",
                   "/tiles/cities/256/1/0/99999999999999999999999.png", "/tiles/cities/256/1.5/0/0.png"]
        for path in bad {
            let r = try RawHTTP.request(port: port, "GET", path)
            #expect(r.status == 400, "\(path): \(r.status) \(r.text)")
            #expect(r.header("Access-Control-Allow-Origin") == "*")
        }
        let missing = ["/tiles/nope/256/0/0/0.png", "/tiles/nope.json", "/nope", "/tiles", "/tiles/cities/0/0/0.txt",
                       "/tiles/cities/1/2/3/4/5/6/7.png", "/viewport", "/hittest/a/b", "/favicon.ico", "//x"]
        for path in missing {
            let r = try RawHTTP.request(port: port, "GET", path)
            #expect(r.status == 404, "\(path): \(r.status) \(r.text)")
            #expect(r.header("Access-Control-Allow-Origin") == "*")
        }
        for method in ["POST", "PUT", "DELETE", "PATCH"] {
            let r = try RawHTTP.request(port: port, method, "/tiles/cities/256/0/0/0.png")
            #expect(r.status == 405, "\(method)")
            #expect(r.header("Allow") == "GET, HEAD, OPTIONS")
            #expect(r.header("Access-Control-Allow-Origin") == "*")
        }
        let preflight = try RawHTTP.request(port: port, "OPTIONS", "/tiles/cities/256/0/0/0.png")
        #expect(preflight.status == 204)
        #expect(preflight.header("Access-Control-Allow-Methods") == "GET, HEAD, OPTIONS")
        #expect(provider.tileCalls.withLock { $0 }.isEmpty)
    }

    @Test func rpcErrorsMapToHTTP() throws {
        let (gateway, provider) = try makeGateway()
        defer { gateway.stop() }
        let port = gateway.boundPort
        let cases: [(RPCError, Int)] = [(RPCError(.unimplemented, "later"), 501), (.unavailable("busy"), 503),
                                        (.internal("boom"), 500), (.invalidArgument("no"), 400), (.notFound("gone"), 404),
                                        (.resourceExhausted("full"), 503), (.failedPrecondition("state"), 500)]
        for (error, status) in cases {
            provider.failWith.withLock { $0 = error }
            let r = try RawHTTP.request(port: port, "GET", "/tiles/cities/256/0/0/0.png")
            #expect(r.status == status, "\(error)")
            #expect(r.text == error.message + "\n")
            #expect(r.header("Cache-Control") == "no-store")
        }
        #expect(TileGateway.httpStatus(.outOfRange) == 400)
        #expect(TileGateway.httpStatus(.deadlineExceeded) == 503)
    }

    @Test func headRequests() throws {
        let (gateway, _) = try makeGateway()
        defer { gateway.stop() }
        let port = gateway.boundPort
        for path in ["/tiles/cities/256/3/4/2.png", "/", "/tiles/cities.json", "/metrics"] {
            let get = try RawHTTP.request(port: port, "GET", path)
            let head = try RawHTTP.request(port: port, "HEAD", path)
            #expect(head.status == 200)
            #expect(head.body.isEmpty)
            #expect(head.header("Content-Type") == get.header("Content-Type"))
            if path != "/metrics" { #expect(head.header("Content-Length") == String(get.body.count), "\(path)") }
            #expect(head.header("Access-Control-Allow-Origin") == "*")
        }
        let headTile = try RawHTTP.request(port: port, "HEAD", "/tiles/cities/256/3/4/2.png")
        #expect(headTile.header("ETag") == "\"7\"")
    }

    @Test func tileJSON() throws {
        let (gateway, _) = try makeGateway()
        defer { gateway.stop() }
        let r = try RawHTTP.request(port: gateway.boundPort, "GET", "/tiles/big.json", host: "maps.example.com:9000")
        #expect(r.status == 200)
        #expect(r.header("Content-Type") == "application/json")
        #expect(r.header("Access-Control-Allow-Origin") == "*")
        let j = try json(r)
        #expect(j["tilejson"] as? String == "3.0.0")
        #expect(j["tiles"] as? [String] == ["http://maps.example.com:9000/tiles/big/512/{z}/{x}/{y}.png"])
        #expect(j["minzoom"] as? Int == 0)
        #expect(j["maxzoom"] as? Int == 22)
        #expect(j["scheme"] as? String == "xyz")
        #expect(j["name"] as? String == "big")
        #expect(j["version"] as? String == "1.0.1")
        let bounds = try #require(j["bounds"] as? [Double])
        #expect(bounds.count == 4 && bounds[0] == -180 && bounds[2] == 180 && abs(bounds[3] - 85.0511) < 0.001)
        // The template has no query string and resolves to a tile the gateway serves.
        let local = try json(try RawHTTP.request(port: gateway.boundPort, "GET", "/tiles/cities.json"))
        let template = try #require((local["tiles"] as? [String])?.first)
        #expect(!template.contains("?"))
        let path = template.replacingOccurrences(of: "http://127.0.0.1:\(gateway.boundPort)", with: "")
            .replacingOccurrences(of: "{z}", with: "2").replacingOccurrences(of: "{x}", with: "1").replacingOccurrences(of: "{y}", with: "3")
        #expect(try RawHTTP.request(port: gateway.boundPort, "GET", path).status == 200)
    }

    @Test func metricsHealthAndViewer() throws {
        let metrics = ServerMetrics()
        metrics.record(method: "QueryViewport", code: .ok, micros: 120)
        let (gateway, _) = try makeGateway(metrics: metrics)
        defer { gateway.stop() }
        let port = gateway.boundPort
        _ = try RawHTTP.request(port: port, "GET", "/tiles/cities/256/0/0/0.png")
        _ = try RawHTTP.request(port: port, "GET", "/tiles/cities/256/30/0/0.png")
        let health = try RawHTTP.request(port: port, "GET", "/healthz")
        #expect(health.status == 200 && health.text == "ok\n")
        let m = try RawHTTP.request(port: port, "GET", "/metrics")
        #expect(m.status == 200)
        #expect(m.header("Content-Type") == "text/plain; version=0.0.4; charset=utf-8")
        #expect(m.text.contains("markerd_rpc_calls_total{method=\"QueryViewport\",code=\"OK\"} 1"))
        #expect(m.text.contains("markerd_layer_markers{layer=\"cities\"} 3"))
        // A provider that does not count renders has no render metrics.
        #expect(!m.text.contains("markerd_tile_renders_total"))
        #expect(m.text.contains("markerd_layer_version{layer=\"big\"} 1"))
        #expect(m.text.contains("markerd_layer_tiled{layer=\"cities\"} 1"))
        #expect(m.text.contains("markerd_http_requests_total{route=\"tile\",status=\"200\"} 1"))
        #expect(m.text.contains("markerd_http_requests_total{route=\"tile\",status=\"400\"} 1"))
        #expect(m.text.contains("markerd_http_requests_total{route=\"healthz\",status=\"200\"} 1"))
        #expect(gateway.requestCount(route: "tile") == 2)
        let page = try RawHTTP.request(port: port, "GET", "/")
        #expect(page.status == 200)
        #expect(page.header("Content-Type") == "text/html; charset=utf-8")
        for needle in ["/viewer/leaflet/leaflet.js", "/viewer/leaflet/leaflet.css", "/viewer/basemap/", "L.tileLayer",
                       "/layers.json", "/viewport/", "/hittest/", "tileURLTemplate"] {
            #expect(page.text.contains(needle), "\(needle)")
        }
        #expect(!page.text.contains("http://") && !page.text.contains("https://"), "the viewer loads nothing from elsewhere")
    }

    /// The viewer's Leaflet and basemap files come from their directories and from nowhere else:
    /// no `..`, escapes, hidden files, directories or unlisted extensions; a missing basemap is a
    /// 404 that says how to get one.
    @Test func viewerFilesStayInsideTheirDirectories() throws {
        let root = TestServer.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: root) }
        let files = [("leaflet/leaflet.js", "var L = {};"), ("leaflet/images/layers.png", "png bytes"),
                     ("leaflet/.hidden.js", "hidden"), ("leaflet/notes.txt", "text"), ("secret.js", "SECRET"),
                     ("basemap/countries-z0.geojson", "{\"type\":\"FeatureCollection\",\"features\":[]}")]
        for (path, text) in files {
            let full = root + "/" + path
            try FileManager.default.createDirectory(atPath: (full as NSString).deletingLastPathComponent,
                                                    withIntermediateDirectories: true)
            try Data(text.utf8).write(to: URL(fileURLWithPath: full))
        }
        let (gateway, _) = try makeGateway(viewerFiles: ViewerFiles(leafletDirectory: root + "/leaflet",
                                                                    basemapDirectory: root + "/basemap"))
        defer { gateway.stop() }
        let port = gateway.boundPort
        for (path, type, text) in [("/viewer/leaflet/leaflet.js", "text/javascript; charset=utf-8", "var L = {};"),
                                   ("/viewer/leaflet/images/layers.png", "image/png", "png bytes"),
                                   ("/viewer/basemap/countries-z0.geojson", "application/geo+json",
                                    "{\"type\":\"FeatureCollection\",\"features\":[]}")] {
            let r = try RawHTTP.request(port: port, "GET", path)
            #expect(r.status == 200, "\(path): \(r.status) \(r.text)")
            #expect(r.header("Content-Type") == type, "\(path)")
            #expect(r.text == text, "\(path)")
        }
        let refused = ["/viewer/leaflet/../secret.js", "/viewer/leaflet/images/../../secret.js", "/viewer/leaflet/%2e%2e/secret.js",
                       "/viewer/leaflet/..%2fsecret.js", "/viewer/leaflet/%2Fetc/passwd.js", "/viewer/leaflet//secret.js",
                       "/viewer/leaflet/./leaflet.js", "/viewer/leaflet/.hidden.js", "/viewer/leaflet/notes.txt",
                       "/viewer/leaflet/images", "/viewer/leaflet/images/", "/viewer/leaflet/", "/viewer/leaflet",
                       "/viewer/leaflet/leaflet.js/", "/viewer/leaflet/nope.js", "/viewer/leaflet/leaflet.js\\..\\secret.js",
                       "/viewer/basemap/../secret.js", "/viewer/basemap/../leaflet/leaflet.js", "/viewer/secret.js",
                       "/viewer/leaflet/" + Array(repeating: "a", count: 9).joined(separator: "/") + ".js"]
        for path in refused {
            let r = try RawHTTP.request(port: port, "GET", path)
            #expect(r.status == 404, "\(path): \(r.status) \(r.text)")
            #expect(!r.text.contains("SECRET") && !r.text.contains("var L") && !r.text.contains(root), "\(path)")
        }
        #expect(gateway.requestCount(route: "viewer_leaflet", status: 200) == 2)
        #expect(gateway.requestCount(route: "viewer_basemap", status: 200) == 1)

        // No basemap directory: 404 naming the flag; Leaflet still served.
        let (bare, _) = try makeGateway(viewerFiles: ViewerFiles(leafletDirectory: root + "/leaflet/"))
        defer { bare.stop() }
        let missing = try RawHTTP.request(port: bare.boundPort, "GET", "/viewer/basemap/countries-z0.geojson")
        #expect(missing.status == 404)
        #expect(missing.text.contains("--basemap-dir"), "\(missing.text)")
        #expect(try RawHTTP.request(port: bare.boundPort, "GET", "/viewer/leaflet/leaflet.js").text == "var L = {};")
    }

    @Test func viewerJSONEndpoints() throws {
        let (gateway, _) = try makeGateway()
        defer { gateway.stop() }
        let port = gateway.boundPort
        let layers = try json(try RawHTTP.request(port: port, "GET", "/layers.json"))
        let list = try #require(layers["layers"] as? [[String: Any]])
        #expect(list.map { $0["id"] as? String } == ["big", "cities"])
        #expect(list[1]["markerCount"] as? Int == 3)
        let vp = try RawHTTP.request(port: port, "GET", "/viewport/cities?west=0&south=40&east=20&north=60&zoom=4.5&density=2")
        #expect(vp.status == 200)
        let v = try json(vp)
        #expect((v["markers"] as? [[String: Any]])?.compactMap { $0["id"] as? String }.sorted() == ["berlin", "paris"])
        #expect(v["mode"] as? String == "native")
        let hit = try json(try RawHTTP.request(port: port, "GET", "/hittest/cities?lat=52.5&lon=13.4&zoom=10"))
        let hits = try #require(hit["hits"] as? [[String: Any]])
        #expect((hits.first?["marker"] as? [String: Any])?["id"] as? String == "berlin")
        #expect(((hits.first?["marker"] as? [String: Any])?["attributes"] as? [String: String])?["name"] == "Berlin")
        for path in ["/viewport/cities?west=0&south=40&east=20", "/viewport/cities?west=x&south=40&east=20&north=60&zoom=1",
                     "/viewport/cities?west=0&south=40&east=20&north=60&zoom=30", "/hittest/cities?lat=1&lon=2",
                     "/hittest/cities?lat=91&lon=2&zoom=1", "/hittest/cities?lat=1&lon=2&zoom=1&density=5"] {
            #expect(try RawHTTP.request(port: port, "GET", path).status == 400, "\(path)")
        }
        #expect(try RawHTTP.request(port: port, "GET", "/viewport/nope?west=0&south=40&east=20&north=60&zoom=1").status == 404)
        #expect(try RawHTTP.request(port: port, "GET", "/hittest/nope?lat=1&lon=2&zoom=1").status == 404)
    }

    /// Numbers past Int.max in a URL are a 400, not a trap (found by HTTPFuzzTests: a tile size
    /// of 9223372036854775808 killed markerd in an Int conversion).
    @Test func tileNumbersPastIntMaxAreBadRequests() {
        for big in ["9223372036854775808", "18446744073709551615"] {
            for path in ["/tiles/cities/\(big)/0/0/0.png", "/tiles/cities/v\(big)/\(big)/0/0/0.png",
                         "/tiles/cities/256/\(big)/0/0.png", "/tiles/cities/256/0/\(big)/0.png", "/tiles/cities/256/0/0/\(big).png",
                         "/tiles/cities/256/0/0/0@\(big)x.png", "/tiles/cities/\(big)/0/0.mvt", "/tiles/cities/0/0/\(big).mvt"] {
                guard case .failure(.badRequest) = GatewayRoute.parse(path) else {
                    Issue.record("\(path): \(GatewayRoute.parse(path))")
                    continue
                }
            }
        }
        #expect(GatewayRoute.parse("/tiles/cities/v18446744073709551615/256/0/0/0.png")
                == .success(.rasterTile(.init(layer: "cities", version: .max, size: 256, z: 0, x: 0, y: 0))))
    }

    /// Query strings with empty names and values (found by HTTPFuzzTests: a part "=" trapped
    /// QueryString with an index out of range and killed markerd with one GET).
    @Test func emptyQueryPartsAreIgnoredNotFatal() throws {
        let (gateway, _) = try makeGateway()
        defer { gateway.stop() }
        let port = gateway.boundPort
        for query in ["lat=52.5&lon=13.4&zoom=10&=", "=&lat=52.5&lon=13.4&zoom=10", "lat=52.5&==&lon=13.4&=x&zoom=10&&"] {
            let r = try RawHTTP.request(port: port, "GET", "/hittest/cities?" + query)
            #expect(r.status == 200, "\(query): \(r.text)")
        }
        let vp = try RawHTTP.request(port: port, "GET", "/viewport/cities?=&west=0&south=40&east=20&north=60&zoom=4&lat=")
        #expect(vp.status == 200)
        #expect(try RawHTTP.request(port: port, "GET", "/viewport/cities?=").status == 400)
    }

    /// Seeded random tile URLs, valid and not, against a brute-force oracle of the URL rules.
    @Test func randomTileURLsAgainstOracle() throws {
        let seed = testSeed("randomTileURLsAgainstOracle")
        var rng = SplitMix64(seed: seed)
        let (gateway, _) = try makeGateway()
        defer { gateway.stop() }
        let port = gateway.boundPort
        for _ in 0..<300 {
            let layer = ["cities", "big", "nope"][Int(rng.next() % 3)]
            let z = Int(rng.next() % 26)
            let span = 1 << min(z, 22)
            func coord() -> Int { rng.next() % 5 == 0 ? span + Int(rng.next() % 3) : Int(rng.next() % UInt64(span)) }
            let x = coord(), y = coord()
            let size = [256, 512, 128][Int(rng.next() % 3)]
            let density = [1, 2, 3, 4][Int(rng.next() % 4)]
            let suffix = density == 1 && rng.next() % 2 == 0 ? "" : "@\(density)x"
            let path = "/tiles/\(layer)/\(size)/\(z)/\(x)/\(y)\(suffix).png"
            let valid = z <= 22 && x < (1 << z) && y < (1 << z) && size != 128 && density <= 3
            let expected = !valid ? 400 : layer == "nope" ? 404 : 200
            let r = try RawHTTP.request(port: port, "GET", path)
            #expect(r.status == expected, "SEED=\(seed) \(path): \(r.status) \(r.text)")
            if expected == 200 {
                #expect(r.body == FakeTileProvider.png(layer, z, x, y, size, density, layer == "cities" ? 7 : 1), "SEED=\(seed) \(path)")
            }
        }
    }

    @Test func concurrentTileRequests() throws {
        let (gateway, _) = try makeGateway()
        defer { gateway.stop() }
        let port = gateway.boundPort
        let failures = Mutex<[String]>([])
        DispatchQueue.concurrentPerform(iterations: 64) { i in
            let z = i % 8, x = i % (1 << z), path = "/tiles/cities/256/\(z)/\(x)/0.png"
            do {
                let r = try RawHTTP.request(port: port, "GET", path)
                if r.status != 200 || r.body != FakeTileProvider.png("cities", z, x, 0, 256, 1, 7) {
                    failures.withLock { $0.append("\(path): \(r.status)") }
                }
            } catch { failures.withLock { $0.append("\(path): \(error)") } }
        }
        #expect(failures.withLock { $0 }.isEmpty)
        #expect(gateway.statistics.inFlight == 0)
    }
}

@Suite("markerd --http: the gateway in MarkerdNode", .serialized)
struct MarkerdNodeGatewayTests {
    @Test func parsesHTTPOption() throws {
        #expect(try MarkerdConfiguration.parse([]).httpAddress == nil)
        #expect(try MarkerdConfiguration.parse(["--http", "127.0.0.1:8080"]).httpAddress == "127.0.0.1:8080")
        #expect(try MarkerdConfiguration.parse(["--http", "http://0.0.0.0:0"]).httpAddress == "0.0.0.0:0")
        #expect(throws: MarkerdConfiguration.ParseError.self) { try MarkerdConfiguration.parse(["--http", "8080"]) }
        #expect(throws: MarkerdConfiguration.ParseError.self) { try MarkerdConfiguration.parse(["--http", "h:99999"]) }
        #expect(throws: MarkerdConfiguration.ParseError.self) { try MarkerdConfiguration.parse(["--http"]) }
        #expect(try MarkerdConfiguration.parse([]).viewerFiles == ViewerFiles(leafletDirectory: "/usr/share/javascript/leaflet"))
        #expect(try MarkerdConfiguration.parse(["--leaflet-dir", "/opt/leaflet", "--basemap-dir", "/var/basemap"]).viewerFiles
                == ViewerFiles(leafletDirectory: "/opt/leaflet", basemapDirectory: "/var/basemap"))
        #expect(throws: MarkerdConfiguration.ParseError.self) { try MarkerdConfiguration.parse(["--basemap-dir"]) }
        let defaults = try MarkerdConfiguration.parse([])
        #expect(defaults.httpHeaderTimeout == .seconds(10) && defaults.httpIdleTimeout == .seconds(60))
        let set = try MarkerdConfiguration.parse(["--http-header-timeout-ms", "1500", "--http-idle-timeout-ms", "250"])
        #expect(set.httpHeaderTimeout == .milliseconds(1500) && set.httpIdleTimeout == .milliseconds(250))
        #expect(throws: MarkerdConfiguration.ParseError.self) { try MarkerdConfiguration.parse(["--http-idle-timeout-ms", "0"]) }
        #expect(throws: MarkerdConfiguration.ParseError.self) { try MarkerdConfiguration.parse(["--http-header-timeout-ms", "1s"]) }
    }

    /// The timeout flags reach the gateway's server: a silent connection is closed, a slow head gets 408.
    @Test func timeoutSettingsReachTheGateway() throws {
        let server = try TestServer(.inproc) {
            $0.httpAddress = "127.0.0.1:0"
            $0.httpIdleTimeout = .milliseconds(200)
            $0.httpHeaderTimeout = .milliseconds(300)
        }
        defer { server.stop() }
        let port = try #require(server.server.gateway).boundPort
        #expect(try RawConnection(port: port).readToEOF().isEmpty)
        let slow = try RawConnection(port: port)
        try slow.send("GET /healthz HTTP/1.1\r\nHost: h\r\n")
        let r = try RawHTTP.parse(slow.readToEOF(), method: "GET")
        #expect(r.status == 408)
        #expect(r.header("Access-Control-Allow-Origin") == "*")
        let metrics = try RawHTTP.request(port: port, "GET", "/metrics").text
        #expect(metrics.contains("markerd_http_timeouts_total{kind=\"header\"} 1\n"), "\(metrics)")
        #expect(metrics.contains("markerd_http_timeouts_total{kind=\"idle\"} 1\n"))
        #expect(metrics.contains("markerd_http_refused_total 0\n"))
        #expect(metrics.contains("markerd_http_connections 1\n"))  // the /metrics request's own
    }

    /// A tile's bytes depend on its version alone, not on the host's load or on how it was
    /// reached: markerd with no tile cache and no kept canvases (every request renders from
    /// scratch) answers the same dense tile alone and to several requests at once with the same
    /// bytes and a strong ETag (until issue 37 a tile rendered while no other ran could take two
    /// bands and two deflate segments, and differ from one rendered beside others); and after
    /// markers move, a second markerd with its default kept canvases answers the tile patched
    /// from its kept canvas with the bytes of the first one's tile rendered from scratch (until
    /// issue 37 a patch could differ by 1/255, and ETags were weak).
    @Test func tileBytesDependOnTheVersionAlone() throws {
        let server = try TestServer(.inproc) {
            $0.httpAddress = "127.0.0.1:0"
            $0.tileCacheBytes = 0
            $0.keptCanvasBytes = 0
        }
        defer { server.stop() }
        let patching = try TestServer(.inproc) { $0.httpAddress = "127.0.0.1:0" }
        defer { patching.stop() }
        let port = try #require(server.server.gateway).boundPort
        let patchingPort = try #require(patching.server.gateway).boundPort
        let clients = [try server.client(), try patching.client()]
        var create = V1.CreateLayerRequest()
        create.layerID = "dense"
        var rng = SplitMix64(seed: testSeed())
        let batches = (0..<4).map { batch in
            (0..<2_500).map { i in marker("m\(batch)-\(i)", 48.85 + (rng.unit() - 0.5) * 0.3, 2.35 + (rng.unit() - 0.5) * 0.4) }
        }
        for client in clients {
            _ = try client.createLayer(create)
            for b in batches { _ = try client.upsertMarkers("dense", b) }
        }
        // z10 around the cluster (thousands of draws), and z0 (every marker in a few pixels).
        let paths = ["/tiles/dense/256/10/518/352.png", "/tiles/dense/256/0/0/0.png"]
        for path in paths {
            let alone = try RawHTTP.request(port: port, "GET", path)
            #expect(alone.status == 200)
            let tag = try #require(alone.header("ETag"))
            #expect(tag.hasPrefix("\"") && tag.hasSuffix("\""), "\(path): ETag \(tag) is not strong")
            let together = Mutex<[RawHTTPResponse?]>(Array(repeating: nil, count: 6))
            DispatchQueue.concurrentPerform(iterations: 6) { k in
                let r = try? RawHTTP.request(port: port, "GET", path)
                together.withLock { $0[k] = r }
            }
            for (k, r) in together.withLock({ $0 }).enumerated() {
                let r = try #require(r, "\(path): request \(k) failed")
                #expect(r.status == 200 && r.header("ETag") == tag, "\(path): request \(k)")
                #expect(byteMismatch(r.body, alone.body) == nil, "\(path): request \(k) differs from the tile rendered alone")
            }
            // The patching server keeps the dense tiles' canvases.
            #expect(try RawHTTP.request(port: patchingPort, "GET", path).status == 200)
        }
        // A few markers move within the cluster: the patching server patches its kept canvases.
        let moves = (0..<5).map { k in
            V1.MarkerMove(id: "m\(k)-\(k * 7)", position: V1.LatLng(latitude: 48.85 + (rng.unit() - 0.5) * 0.2,
                                                                     longitude: 2.35 + (rng.unit() - 0.5) * 0.3))
        }
        for client in clients { _ = try client.moveMarkers("dense", moves) }
        for path in paths {
            let fresh = try RawHTTP.request(port: port, "GET", path)
            let patched = try RawHTTP.request(port: patchingPort, "GET", path)
            #expect(fresh.status == 200 && patched.status == 200)
            #expect(byteMismatch(patched.body, fresh.body) == nil, "\(path): the patched tile differs from the one rendered from scratch")
        }
        let metrics = String(decoding: try RawHTTP.request(port: patchingPort, "GET", "/metrics").body, as: UTF8.self)
        let patchedCount = metrics.split(separator: "\n").first { $0.hasPrefix("markerd_tile_renders_total{how=\"patched\"}") }
        #expect(patchedCount.map { !$0.hasSuffix(" 0") } == true, "no tile was patched: \(patchedCount ?? "no counter")")
    }

    @Test func serviceBehindTheGateway() throws {
        let server = try TestServer(.inproc) { $0.httpAddress = "127.0.0.1:0" }
        defer { server.stop() }
        let gateway = try #require(server.server.gateway)
        let port = gateway.boundPort
        #expect(port > 0)
        #expect(server.server.httpURL == "http://127.0.0.1:\(port)")
        let client = try server.client()
        var create = V1.CreateLayerRequest()
        create.layerID = "pins"
        _ = try client.createLayer(create)
        _ = try client.upsertMarkers("pins", [marker("a", 10, 20), marker("b", -10, -20) { $0.attributes = ["kind": "shop"] }])

        let layers = try RawHTTP.request(port: port, "GET", "/layers.json")
        #expect(layers.status == 200)
        #expect(layers.text.contains("\"id\":\"pins\""))
        let vp = try RawHTTP.request(port: port, "GET", "/viewport/pins?west=-180&south=-80&east=180&north=80&zoom=2")
        #expect(vp.status == 200)
        #expect(vp.text.contains("\"id\":\"a\"") && vp.text.contains("\"kind\":\"shop\""))
        let hit = try RawHTTP.request(port: port, "GET", "/hittest/pins?lat=10&lon=20&zoom=12")
        #expect(hit.status == 200)
        #expect(hit.text.contains("\"id\":\"a\""))
        let tj = try RawHTTP.request(port: port, "GET", "/tiles/pins.json")
        #expect(tj.text.contains("/tiles/pins/256/{z}/{x}/{y}.png"))
        let png = try RawHTTP.request(port: port, "GET", "/tiles/pins/256/0/0/0.png")
        #expect(png.status == 200 && png.body.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        #expect(png.headers["etag"] != nil)
        let mvt = try RawHTTP.request(port: port, "GET", "/tiles/pins/0/0/0.mvt")
        #expect(mvt.status == 200 && !mvt.body.isEmpty)
        #expect(mvt.headers["content-type"] == "application/vnd.mapbox-vector-tile")
        // Point tiles answer ETag / 304 as raster tiles do, and an unchanged tile comes again byte for byte (cached).
        let etag = try #require(mvt.headers["etag"])
        #expect(try RawHTTP.request(port: port, "GET", "/tiles/pins/0/0/0.mvt", headers: [("If-None-Match", etag)]).status == 304)
        #expect(byteMismatch(try RawHTTP.request(port: port, "GET", "/tiles/pins/0/0/0.mvt").body, mvt.body) == nil)
        #expect(try RawHTTP.request(port: port, "GET", "/tiles/other/256/0/0/0.png").status == 404)
        let metrics = try RawHTTP.request(port: port, "GET", "/metrics")
        #expect(metrics.text.contains("markerd_rpc_calls_total{method=\"CreateLayer\",code=\"OK\"} 1"))
        #expect(metrics.text.contains("markerd_layer_markers{layer=\"pins\"} 2"))
        // The one tile rendered (two markers: nothing kept, nothing patched).
        #expect(metrics.text.contains("markerd_tile_renders_total{how=\"from_scratch\"} 1\n"))
        #expect(metrics.text.contains("markerd_tile_renders_total{how=\"patched\"} 0\n"))
        #expect(metrics.text.contains("markerd_kept_canvas_bytes 0\n"))
    }

    /// /layers.json tells the viewer which layers label their pins (and from which attribute) and
    /// which draw clusters into their tiles.
    @Test func layersJSONSaysLabelsAndClusters() throws {
        let server = try TestServer(.inproc) { $0.httpAddress = "127.0.0.1:0" }
        defer { server.stop() }
        let port = try #require(server.server.gateway).boundPort
        let client = try server.client()
        for (id, labels, clustering) in [("plain", nil, nil), ("named", V1.LabelOptions(enabled: true, textAttribute: "name"), nil),
                                         ("bubbles", nil, V1.ClusteringOptions(enabled: true, raster: true)),
                                         ("grouped", nil, V1.ClusteringOptions(enabled: true))]
                as [(String, V1.LabelOptions?, V1.ClusteringOptions?)] {
            var create = V1.CreateLayerRequest()
            create.layerID = id
            create.options = V1.LayerOptions(clustering: clustering, labels: labels)
            _ = try client.createLayer(create)
        }
        let list = try #require(try json(try RawHTTP.request(port: port, "GET", "/layers.json"))["layers"] as? [[String: Any]])
        let byID = Dictionary(uniqueKeysWithValues: list.compactMap { l in (l["id"] as? String).map { ($0, l) } })
        #expect(byID.keys.sorted() == ["bubbles", "grouped", "named", "plain"])
        for (id, labels, attribute, clusters) in [("plain", false, nil, false), ("named", true, "name", false),
                                                  ("bubbles", false, nil, true), ("grouped", false, nil, false)] as [(String, Bool, String?, Bool)] {
            let l = try #require(byID[id])
            #expect(l["labels"] as? Bool == labels, "\(id)")
            #expect(l["labelAttribute"] as? String == attribute, "\(id)")
            #expect(l["clusters"] as? Bool == clusters, "\(id)")
        }
    }

    @Test func httpPortInUseFailsStartCleanly() throws {
        let first = try TestServer(.inproc) { $0.httpAddress = "127.0.0.1:0" }
        defer { first.stop() }
        let port = try #require(first.server.gateway?.boundPort)
        #expect(throws: NNGError.addressInUse) {
            _ = try TestServer(.tcp) { $0.httpAddress = "127.0.0.1:\(port)" }
        }
    }
}

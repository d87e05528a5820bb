import Foundation
import MarkerdAPI
import MarkerdAuth
import MarkerdClient
@testable import MarkerdServer
import MarkerdTestSupport
import Testing

/// The HTTP gateway with an auth file: public and private layers, Bearer tokens, signed paths
/// (valid, expired, forged, another layer), /metrics, /layers.json, CORS, the operators' gateway.
@Suite(.serialized) struct GatewayAccessTests {
    struct Setup {
        let fixture: AuthFixture
        let server: TestServer
        let port: Int
        let signer: TileSigner

        init(corsOrigins: [String] = [], ops: Bool = false) throws {
            fixture = try AuthFixture()
            let path = fixture.path
            server = try TestServer(.tcp) {
                $0.authFile = path
                $0.httpAddress = "127.0.0.1:0"
                $0.corsOrigins = corsOrigins
                if ops { $0.opsHTTPAddress = "127.0.0.1:0" }
            }
            port = try #require(server.server.gateway?.boundPort)
            signer = try TileSigner.loadOrCreate(path: path + ".tile-key")
            let root = try MarkerdClient(url: server.url, authToken: fixture.root)
            for id in ["demo-1", "fleet-1", "fleet-2"] {
                _ = try createLayer(root, id)
                _ = try root.upsertMarkers(id, [marker("a", 48.8566, 2.3522)])
            }
        }

        func get(_ target: String, token: String? = nil, headers: [(String, String)] = [], method: String = "GET") throws -> RawHTTPResponse {
            try RawHTTP.request(port: port, method, target, headers: (token.map { [("Authorization", "Bearer \($0)")] } ?? []) + headers)
        }

        func stop() { server.stop(); fixture.remove() }
    }

    static let tile = "/tiles/%@/256/14/8298/5636.png"
    func tile(_ layer: String) -> String { String(format: Self.tile, layer) }

    @Test func publicAndPrivateLayers() throws {
        let s = try Setup()
        defer { s.stop() }
        // Public layer: no token needed, `*` CORS.
        let open = try s.get(tile("demo-1"))
        #expect(open.status == 200 && open.header("Access-Control-Allow-Origin") == "*")
        #expect(open.header("Cache-Control") == TileGateway.liveCacheControl)
        // Private layer: 401 without a token or with an unknown one; no CORS header.
        for token in [nil, "mkd_unknown"] as [String?] {
            let r = try s.get(tile("fleet-1"), token: token)
            #expect(r.status == 401 && r.header("WWW-Authenticate")?.hasPrefix("Bearer") == true, "\(token ?? "none")")
            #expect(r.header("Access-Control-Allow-Origin") == nil)
        }
        #expect(try s.get(tile("fleet-1"), headers: [("Authorization", "Basic eDp5")]).status == 401)
        // Bearer with read on the layer: 200, private caching, no CORS header.
        let bearer = try s.get(tile("fleet-1"), token: s.fixture.reader)
        #expect(bearer.status == 200 && bearer.body.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        #expect(bearer.header("Cache-Control") == "private, max-age=5" && bearer.header("Access-Control-Allow-Origin") == nil)
        let versioned = try s.get("/tiles/fleet-1/v999/256/14/8298/5636.png", token: s.fixture.reader)
        #expect(versioned.status == 302 && versioned.header("Location") == "/tiles/fleet-1/256/14/8298/5636.png")
        // Without read, or not on the layer: 403.
        #expect(try s.get(tile("fleet-1"), token: s.fixture.writer).status == 403)
        #expect(try s.get(tile("other-1"), token: s.fixture.reader).status == 403)
        // Every per-layer route is covered.
        for path in ["/tiles/fleet-1.json", "/tiles/fleet-1/14/8298/5636.mvt",
                     "/viewport/fleet-1?west=2&south=48&east=3&north=49&zoom=10", "/hittest/fleet-1?lat=48.8566&lon=2.3522&zoom=14"] {
            #expect(try s.get(path).status == 401, "\(path)")
            #expect(try s.get(path, token: s.fixture.reader).status == 200, "\(path)")
            #expect(try s.get(path, token: s.fixture.admin).status == 403, "\(path)")
        }
        // Open paths stay open.
        for path in ["/", "/healthz", "/readyz"] { #expect(try s.get(path).status == 200, "\(path)") }
    }

    @Test func layersAndMetrics() throws {
        let s = try Setup()
        defer { s.stop() }
        func ids(_ r: RawHTTPResponse) throws -> [String] {
            let doc = try #require(JSONSerialization.jsonObject(with: Data(r.body)) as? [String: Any])
            return try #require(doc["layers"] as? [[String: Any]]).compactMap { $0["id"] as? String }
        }
        #expect(try ids(s.get("/layers.json")) == ["demo-1"])
        #expect(try ids(s.get("/layers.json", token: s.fixture.reader)) == ["demo-1", "fleet-1", "fleet-2"])
        #expect(try s.get("/metrics").status == 401)
        #expect(try s.get("/metrics", token: s.fixture.reader).status == 403)
        let metrics = try s.get("/metrics", token: s.fixture.admin)
        #expect(metrics.status == 200 && metrics.text.contains("markerd_layer_markers{layer=\"fleet-1\"}"))
    }

    @Test func signedPaths() throws {
        let s = try Setup()
        defer { s.stop() }
        let reader = try MarkerdClient(url: s.server.url, authToken: s.fixture.reader)
        let signed = try reader.signTileURL("fleet-1", ttlSeconds: 600)
        let url = signed.urlTemplate.replacingOccurrences(of: "{z}", with: "14").replacingOccurrences(of: "{x}", with: "8298")
            .replacingOccurrences(of: "{y}", with: "5636")
        let ok = try s.get(url)
        #expect(ok.status == 200 && ok.body.starts(with: [0x89, 0x50, 0x4E, 0x47]))
        #expect(ok.header("Cache-Control") == TileGateway.liveCacheControl && ok.header("Access-Control-Allow-Origin") == nil)
        // The same prefix before the layer's other paths; URLs in answers keep it.
        let p = signed.pathPrefix
        #expect(try s.get(p + "/tiles/fleet-1/14/8298/5636.mvt").status == 200)
        #expect(try s.get(p + "/hittest/fleet-1?lat=48.8566&lon=2.3522&zoom=14").status == 200)
        let tileJSON = try s.get(p + "/tiles/fleet-1.json")
        #expect(tileJSON.status == 200 && tileJSON.text.contains("\(p)/tiles/fleet-1/256/{z}/{x}/{y}.png"), "\(tileJSON.text)")
        let redirect = try s.get(p + "/tiles/fleet-1/v999/256/14/8298/5636.png")
        #expect(redirect.status == 302 && redirect.header("Location") == p + "/tiles/fleet-1/256/14/8298/5636.png")
        // Another layer, a forged signature, another expiry, an expired one: 403.
        #expect(try s.get(p + "/tiles/fleet-2/256/14/8298/5636.png").status == 403)
        var forged = Array(p)
        forged[forged.count - 1] = forged.last == "A" ? "B" : "A"
        #expect(try s.get(String(forged) + "/tiles/fleet-1/256/14/8298/5636.png").status == 403)
        let later = "/t/\(signed.expiresUnix + 1).\(p.split(separator: ".").last!)"
        #expect(try s.get(later + "/tiles/fleet-1/256/14/8298/5636.png").status == 403)
        let past = Int64(Date().timeIntervalSince1970) - 1
        let expired = try s.get(s.signer.prefix(layer: "fleet-1", expiry: past) + "/tiles/fleet-1/256/14/8298/5636.png")
        #expect(expired.status == 403 && expired.text.contains("expired"))
        #expect(try s.get(s.signer.prefix(layer: "fleet-1", expiry: past + 120) + "/tiles/fleet-1/256/14/8298/5636.png").status == 200)
        // Not before open paths, and not malformed.
        #expect(try s.get(p + "/metrics").status == 404)
        #expect(try s.get("/t/abc/tiles/fleet-1/256/14/8298/5636.png").status == 404)
    }

    @Test func configuredCORSOrigins() throws {
        let s = try Setup(corsOrigins: ["https://app.example"])
        defer { s.stop() }
        let mine = try s.get(tile("fleet-1"), token: s.fixture.reader, headers: [("Origin", "https://app.example")])
        #expect(mine.status == 200 && mine.header("Access-Control-Allow-Origin") == "https://app.example" && mine.header("Vary") == "Origin")
        let theirs = try s.get(tile("fleet-1"), token: s.fixture.reader, headers: [("Origin", "https://evil.example")])
        #expect(theirs.status == 200 && theirs.header("Access-Control-Allow-Origin") == nil)
        // Configured origins replace `*` for public layers too.
        #expect(try s.get(tile("demo-1"), headers: [("Origin", "https://evil.example")]).header("Access-Control-Allow-Origin") == nil)
        let preflight = try s.get(tile("fleet-1"), headers: [("Origin", "https://app.example")], method: "OPTIONS")
        #expect(preflight.status == 204 && preflight.header("Access-Control-Allow-Origin") == "https://app.example")
        #expect(preflight.header("Access-Control-Allow-Headers")?.contains("Authorization") == true)
    }

    @Test func defaultCORSIsOpenOnlyForPublicLayers() throws {
        let s = try Setup()
        defer { s.stop() }
        #expect(try s.get(tile("fleet-1"), method: "OPTIONS").header("Access-Control-Allow-Origin") == nil)
        #expect(try s.get(tile("demo-1"), method: "OPTIONS").header("Access-Control-Allow-Origin") == "*")
        #expect(try s.get("/nope").header("Access-Control-Allow-Origin") == nil)
    }

    @Test func opsGatewayServesEverythingWithoutTokens() throws {
        let s = try Setup(ops: true)
        defer { s.stop() }
        let opsPort = try #require(s.server.server.opsGateway?.boundPort)
        #expect(try RawHTTP.request(port: opsPort, "GET", tile("fleet-1")).status == 200)
        #expect(try RawHTTP.request(port: opsPort, "GET", "/metrics").status == 200)
        #expect(try s.get(tile("fleet-1")).status == 401)
    }
}

import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdTestSupport
import Synchronization
import Testing

/// A structure-aware fuzz test of every HTTP route of a real `markerd --http`: requests built
/// from the route table (GatewayRoute) with edge values in every path segment, query parameter
/// and header, odd methods, and a share of requests broken on purpose (raw non-ASCII bytes,
/// over-long request lines and headers, no Host). Asserts that markerd stays alive, that every
/// reply is a well-formed HTTP/1.1 response with a documented status (the one the request's
/// construction calls for, where it determines one), and that the read-only gateway changed no
/// layer. Fixed seed; `SEED=` replays another, `HTTP_FUZZ_REQUESTS=` sets the count (default
/// 3,000; scripts/fuzz-nightly.sh runs longer ones with random seeds).
@Suite(.serialized) struct HTTPFuzzTests {
    /// Statuses the gateway documents (GatewayRoute, TileGateway, NNGHTTPServer). No 500: a
    /// request must never find a server fault; no 503: nothing here stops or overloads markerd.
    static let documented: Set<Int> = [200, 204, 302, 304, 400, 404, 405, 413, 414, 431, 501, 505]

    @Test func everyRouteWithEdgeValues() throws {
        let seed = testSeed("HTTPFuzzTests", fixed: 35)
        let total = ProcessInfo.processInfo.environment["HTTP_FUZZ_REQUESTS"].flatMap(Int.init) ?? 3_000
        let httpPort = MarkerdProcess.freePort()
        let process = try MarkerdProcess(arguments: ["--ephemeral", "--http", "127.0.0.1:\(httpPort)"])
        defer { process.kill(SIGKILL); _ = process.waitForExit(timeout: 5) }
        let client = try process.waitUntilReady()
        for (id, tiled) in [("pins", false), ("dense", true)] {
            _ = try createLayer(client, id, minMarkerCount: tiled ? 10 : nil)
            var rng = SplitMix64(seed: 7)
            _ = try client.upsertMarkers(id, (0..<(tiled ? 300 : 40)).map { i in
                marker("\(id)\(i)", rng.unit() * 170 - 85, rng.unit() * 360 - 180) { $0.attributes = ["n": "\(i)"] }
            })
        }
        let before = try client.listLayers().map { "\($0.id)@\($0.version)" }
        let versions = try Dictionary(uniqueKeysWithValues: client.listLayers().map { ($0.id, $0.version) })

        let threads = 4
        let failures = Mutex<[String]>([])
        let statusCounts = Mutex<[Int: Int]>([:])
        let alive = Atomic<Bool>(true)  // false after 20 failures (e.g. markerd died): stop early
        let group = DispatchGroup()
        var seeder = SplitMix64(seed: seed)
        for t in 0..<threads {
            let threadSeed = seeder.next()  // independent streams (seed + t would only shift one stream)
            group.enter()
            Thread {
                defer { group.leave() }
                var rng = SplitMix64(seed: threadSeed)
                for i in 0..<(total / threads) {
                    guard alive.load(ordering: .relaxed) else { return }
                    let request = FuzzRequest.random(&rng, port: httpPort, versions: versions)
                    let outcome = request.check(port: httpPort)
                    if let status = outcome.status { statusCounts.withLock { $0[status, default: 0] += 1 } }
                    if let problem = outcome.problem {
                        failures.withLock { $0.append("thread \(t) request \(i): \(problem)\n  \(request.summary)") }
                        if failures.withLock({ $0.count }) > 20 { alive.store(false, ordering: .relaxed) }
                    }
                }
            }.start()
        }
        group.wait()
        let all = failures.withLock { $0 }
        #expect(process.process.isRunning, "markerd died (seed \(seed)): \(process.stderrText())")
        #expect(all.isEmpty, "seed \(seed): \(all.count) bad replies:\n\(all.prefix(20).joined(separator: "\n"))")
        #expect(try RawHTTP.request(port: httpPort, "GET", "/healthz").status == 200)
        #expect(try client.listLayers().map { "\($0.id)@\($0.version)" } == before, "a GET changed a layer")
        let counts = statusCounts.withLock { $0 }
        // The generator reaches the interesting statuses (so a change that broke it would show).
        for status in [200, 204, 302, 304, 400, 404, 405, 414, 431] {
            #expect((counts[status] ?? 0) > 0, "no \(status) among \(counts)")
        }
    }
}

/// One generated request: raw bytes, plus the status its construction determines (if any).
private struct FuzzRequest {
    var method: String
    var target: [UInt8]
    var headers: [(String, [UInt8])]
    /// Statuses this request may get; nil: any documented one.
    var expected: Set<Int>?

    var summary: String {
        let t = String(decoding: target.prefix(300), as: UTF8.self)
        let h = headers.map { "\($0.0): \(String(decoding: $0.1.prefix(120), as: UTF8.self))" }.joined(separator: " | ")
        return "\(method) \(t)\(target.count > 300 ? "...(\(target.count) bytes)" : "") [\(h)]"
    }

    var bytes: [UInt8] {
        var out = Array("\(method) ".utf8) + target + Array(" HTTP/1.1\r\n".utf8)
        for (name, value) in headers { out += Array("\(name): ".utf8) + value + [13, 10] }
        return out + Array("Connection: close\r\n\r\n".utf8)
    }

    /// Sends the request on a connection of its own and checks the reply.
    func check(port: Int) -> (status: Int?, problem: String?) {
        let reply: RawHTTPResponse
        do {
            let c = try RawConnection(port: port, timeoutSeconds: 30)
            try c.send(bytes)
            reply = try c.readResponse(method: method)
        } catch {
            return (nil, "no well-formed reply: \(error)")
        }
        let s = reply.status
        if !HTTPFuzzTests.documented.contains(s) { return (s, "undocumented status \(s): \(reply.text.prefix(200))") }
        if let expected, !expected.contains(s) { return (s, "status \(s), expected \(expected.sorted()): \(reply.text.prefix(200))") }
        if reply.header("Access-Control-Allow-Origin") != "*" { return (s, "no CORS header on \(s)") }
        let bodyless = s == 204 || s == 304
        if bodyless || method == "HEAD" {
            if !reply.body.isEmpty { return (s, "\(s) to \(method) with a \(reply.body.count)-byte body") }
        } else if reply.header("Content-Length") != String(reply.body.count) {
            return (s, "Content-Length \(reply.header("Content-Length") ?? "none") for a \(reply.body.count)-byte body")
        }
        if s == 200, method != "HEAD", reply.body.isEmpty { return (s, "200 with an empty body") }
        return (s, nil)
    }

    static let oddMethods = ["OPTIONS", "POST", "PUT", "DELETE", "PATCH", "TRACE", "CONNECT", "FOO", "get"]
    static let numbers = ["0", "1", "2", "3", "7", "22", "23", "255", "256", "512", "-1", "-0", "+1", "007", "3.5",
                          "1e3", "NaN", "nan", "inf", "-inf", "1e308", "0x10", "%31", "%20", "", "4294967296",
                          "9223372036854775807", "9223372036854775808", "18446744073709551615",
                          "18446744073709551616", "99999999999999999999999", String(repeating: "9", count: 3000)]
    static let layerNames = ["pins", "pins", "pins", "pins", "dense", "dense", "dense", "dense", "nope", "%70ins", "pins%00", "%FF%FE", "..", ".",
                             "%2e%2e", "a%2Fb", "%F0%9F%98%80", "%C3%28", String(repeating: "L", count: 3000),
                             "pins.json", "v1", "tiles"]
    static let doubles = ["0", "-0", "1", "-1", "10.5", "85", "-85", "90", "-90", "91", "180", "-180", "181", "22",
                          "23", "NaN", "nan", "inf", "-inf", "Infinity", "1e308", "-1e308", "1.7976931348623157e308",
                          "4.9e-324", "-4.9e-324", "2.2250738585072014e-308", "", "abc", "%ZZ", "0x1p3", "1,5",
                          "9999999999999999999999", String(repeating: "1", count: 2000)]
    static let ints = ["0", "1", "2", "3", "4", "10", "1000", "100000", "100001", "-1", "", "x",
                       "9223372036854775807", "9223372036854775808", "1e3"]

    static func pick<T>(_ list: [T], _ rng: inout SplitMix64) -> T { list[Int(rng.next() % UInt64(list.count))] }

    /// A tile number: mostly in range for `z`, sometimes an edge value.
    static func coordinate(_ z: Int, _ rng: inout SplitMix64) -> String {
        rng.next() % 6 == 0 ? pick(numbers, &rng) : String(rng.next() % (UInt64(1) << UInt64(min(z, 22))))
    }

    static func query(_ names: [String], _ rng: inout SplitMix64) -> String {
        var parts: [String] = []
        for name in names where rng.next() % 8 != 0 {
            let value = ["density", "limit", "max"].contains(name) ? pick(ints, &rng) : pick(doubles, &rng)
            parts.append("\(name)=\(value)")
            if rng.next() % 16 == 0 { parts.append("\(name)=\(pick(doubles, &rng))") }  // repeated
        }
        if rng.next() % 10 == 0 { parts.append(pick(["&", "=", "==", "a=b=c", "%", "%G0=1", "+=+", "zoom"], &rng)) }
        return parts.joined(separator: "&")
    }

    static func random(_ rng: inout SplitMix64, port: Int, versions: [String: UInt64]) -> FuzzRequest {
        var method = rng.next() % 5 == 0 ? pick(oddMethods, &rng) : pick(["GET", "GET", "GET", "HEAD"], &rng)
        let layer = pick(layerNames, &rng)
        let z = Int(rng.next() % 24)
        let zText = rng.next() % 8 == 0 ? pick(numbers, &rng) : String(z)
        let version: String = {
            switch rng.next() % 4 {
            case 0: return "v\(versions[layer] ?? 1)"
            case 1: return "v\(pick(numbers, &rng))"
            case 2: return pick(["v", "V1", "1", "v-1", "vNaN", "v18446744073709551615"], &rng)
            default: return "v\((versions[layer] ?? 1) &+ 1)"
            }
        }()
        let size = rng.next() % 6 == 0 ? pick(numbers, &rng) : pick(["256", "512"], &rng)
        let density = rng.next() % 6 == 0 ? pick(["@4x", "@0x", "@x", "@-1x", "@2", "@2x@2x", "@18446744073709551616x"], &rng)
            : pick(["", "", "@1x", "@2x", "@3x"], &rng)
        let (x, y) = (coordinate(z, &rng), coordinate(z, &rng))
        var path: String
        switch rng.next() % 16 {
        case 0: path = pick(["/", "/index.html", "/healthz", "/readyz", "/metrics", "/layers.json", "/healthz/", "//", "/HEALTHZ",
                             "/metrics?x=1", "/layers.json#f", "/index.html?%FF", "/viewer/leaflet/leaflet.js",
                             "/viewer/leaflet/images/layers.png", "/viewer/leaflet/../leaflet/leaflet.js", "/viewer/leaflet/%2e%2e/x.js",
                             "/viewer/basemap/countries-z0.geojson", "/viewer/basemap/.x.geojson", "/viewer/leaflet//"], &rng)
        case 1: path = "/tiles/\(layer).json"
        case 2, 3: path = "/tiles/\(layer)/\(size)/\(zText)/\(x)/\(y)\(density).png"
        case 4: path = "/tiles/\(layer)/\(version)/\(size)/\(zText)/\(x)/\(y)\(density).png"
        case 5, 6: path = "/tiles/\(layer)/\(zText)/\(x)/\(y).mvt"
        case 7: path = "/tiles/\(layer)/\(version)/\(zText)/\(x)/\(y).mvt"
        case 8, 9: path = "/viewport/\(layer)?" + query(["west", "south", "east", "north", "zoom", "density", "limit"], &rng)
        case 10, 11: path = "/hittest/\(layer)?" + query(["lat", "lon", "zoom", "density", "tolerance", "max"], &rng)
        case 12:  // extra or missing segments, empty segments
            let segs = (0..<Int(rng.next() % 8)).map { _ in pick(layerNames + numbers + ["tiles", "0.png", "0.mvt", ""], &rng) }
            path = "/" + segs.joined(separator: "/")
        case 13: path = "/tiles/\(layer)/\(size)/\(zText)/\(x)/\(y)" + pick([".PNG", ".png.png", ".mvt.png", ".jpg", "", ".png?x=1"], &rng)
        case 14: path = "http://127.0.0.1:\(port)/tiles/\(layer)/\(zText)/\(x)/\(y).mvt"  // absolute form
        default: path = "/tiles/\(layer)/\(size)/\(zText)/\(x)/\(y)\(density).png?\(query(["x"], &rng))"
        }
        var target = Array(path.utf8)
        var headers: [(String, [UInt8])] = []
        let hasHost = rng.next() % 20 != 0
        if hasHost {
            headers.append(("Host", Array(pick(["127.0.0.1:\(port)", "127.0.0.1:\(port)", "", "x", "[::1]", "%00",
                                                String(repeating: "h", count: 4000)], &rng).utf8)))
        }
        if rng.next() % 3 == 0 {
            let inm = pick(["W/\"\(versions[layer] ?? 1)\"", "\"\(versions[layer] ?? 1)\"", "*", "W/\"1\", W/\"2\"", ",,,",
                            "W/", "\"", "W/\"18446744073709551616\"", "\"-1\"", "\"NaN\"", "",
                            Array(repeating: "W/\"7\"", count: 1000).joined(separator: ", ")], &rng)
            headers.append(("If-None-Match", Array(inm.utf8)))
        }
        if rng.next() % 8 == 0 { headers.append(("X-Forwarded-Proto", Array(pick(["https", "http", "", "gopher"], &rng).utf8))) }
        if rng.next() % 8 == 0 { headers.append(("Origin", [0x68, 0xFF, 0xFE, 0xC3, 0x28])) }  // bad UTF-8 (obs-text)
        if rng.next() % 10 == 0 { headers.append(("Accept", Array(String(repeating: "a/b, ", count: 500).utf8))) }

        // Requests broken on purpose.
        var malformed = false
        switch rng.next() % 40 {
        case 0:
            target += [0xFF, 0xC3, 0x28]  // raw bad UTF-8 in the target
            malformed = true
        case 1: target = Array(("/tiles/" + String(repeating: "x", count: 8200 + Int(rng.next() % 100_000))).utf8)
        case 2: headers.append(("X-Big", Array(repeating: 0x62, count: 33_000 + Int(rng.next() % 1_000_000))))
        case 3:
            method = pick(["G T", "GET(", ""], &rng)
            malformed = true
        default: break
        }
        // The status the construction determines, in the order the server checks (NNGHTTPServer's
        // defaults: 8 KiB request line, 32 KiB of header fields with the final empty line).
        let lineBytes = method.utf8.count + 1 + target.count + " HTTP/1.1".utf8.count
        let headerBytes = headers.reduce(0) { $0 + $1.0.utf8.count + 2 + $1.1.count + 2 } + "Connection: close\r\n\r\n".utf8.count
        let expected: Set<Int>? = lineBytes > 8192 ? [414] : headerBytes > 32 << 10 ? [431] : malformed || !hasHost ? [400]
            : !["GET", "HEAD", "OPTIONS"].contains(method) ? [405] : nil
        return FuzzRequest(method: method, target: target, headers: headers, expected: expected)
    }
}

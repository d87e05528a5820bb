import Foundation
import MarkerdAPI
import MarkerdAuth
import MarkerdService
import MarkerdTransport
import Synchronization

/// markerd's HTTP gateway: raster and point tiles, TileJSON, metrics, health, the viewer page
/// and the viewer's JSON endpoints, on ``NNGHTTPServer`` (HTTP/1.1 over nng's TCP streams). See
/// ``GatewayRoute`` for the URLs.
///
/// Caching: live tile URLs carry `ETag: "<tile version>"` (strong) and `Cache-Control: public,
/// max-age=5`; `If-None-Match` with the current version answers 304. Versioned tile URLs
/// (`/tiles/{layer}/v{version}/...`) are answered 200 with `Cache-Control: public,
/// max-age=31536000, immutable` only while `version` is the layer's current version (checked
/// before and after rendering); otherwise they answer `302 Found` to the live URL with
/// `Cache-Control: no-cache`, so an immutable response never holds anything but that version's
/// pixels. Other methods than GET, HEAD and OPTIONS (a CORS preflight, 204) get 405.
///
/// Access (with an ``AccessControl`` whose auth file is loaded; without one everything is served
/// to anyone, as `--ops-http` does): a layer's paths (tiles, point tiles, TileJSON, viewport,
/// hit-test) are served without credentials only for layers of the auth file's `public` lines;
/// other layers need `Authorization: Bearer TOKEN` of a token with the read scope on the layer,
/// or a signed prefix (`/t/{expiry}.{signature}` before the path, ``TileSigner``). No or an
/// unknown token: 401 with `WWW-Authenticate: Bearer`; a token without the layer, or a signed
/// prefix that is forged, expired or for another layer: 403. `/metrics` needs a token with the
/// admin scope; `/layers.json` lists the public layers and those the token may read; `/`,
/// `/healthz` and `/readyz` are open. Answers for a Bearer token are `Cache-Control: private`.
/// A Bearer token over its quotas (``QuotaBook``) gets 429 with `Retry-After` (seconds).
///
/// CORS: without `--cors-origin`, `Access-Control-Allow-Origin: *` on what is served to anyone
/// (everything when there is no auth file; public layers and the open paths otherwise) and no
/// such header for private layers. With `--cors-origin` (repeatable), a request whose `Origin`
/// is one of them gets it back (with `Vary: Origin`) on every path; `*` among them allows any.
public final class TileGateway: Sendable {
    public static let liveCacheControl = "public, max-age=5"
    public static let immutableCacheControl = "public, max-age=31536000, immutable"
    public static let corsHeader = HTTPHeader("Access-Control-Allow-Origin", "*")

    public let provider: any TileProvider
    public let metrics: ServerMetrics?
    /// Tokens, signing key, CORS origins; nil: everything served to anyone, `*` CORS.
    public let access: AccessControl?
    /// Where the viewer's Leaflet and basemap files come from.
    public let viewerFiles: ViewerFiles
    /// Cluster mode: a layer placed on another replica group is answered `307 Temporary
    /// Redirect` to one of that group's live gateways (the same path and query, so a signed
    /// `/t/...` prefix stays valid there: every replica has the same signing key), or 503 when
    /// none is alive. nil: every layer is served here.
    public let shards: ShardRouter?
    let server: NNGHTTPServer
    private let requestCounts = Mutex<[String: [Int: UInt64]]>([:])  // route -> status -> count

    /// - Parameters:
    ///   - address: `host:port` (port 0 picks one; see ``boundPort``).
    ///   - metrics: the RPC metrics shown on /metrics (nil: only the gateway's own).
    ///   - headerTimeout: ``HTTPServerConfiguration/headerTimeout`` (408 after it). Default 10 s.
    ///   - idleTimeout: ``HTTPServerConfiguration/idleTimeout`` (idle connections closed). Default 60 s.
    ///   - tls: serve HTTPS with this certificate. Default nil: plain HTTP.
    ///   - access: who may read what (see the type's notes); nil: everything, to anyone.
    ///   - viewerFiles: the directories of Leaflet and the basemap. Default: Debian's Leaflet, no basemap.
    ///   - shards: cluster mode's placement (see ``shards``); nil: none.
    public init(address: String, provider: any TileProvider, metrics: ServerMetrics? = nil,
                headerTimeout: Duration = .seconds(10), idleTimeout: Duration = .seconds(60),
                tls: TLSServerFiles? = nil, access: AccessControl? = nil, viewerFiles: ViewerFiles = ViewerFiles(),
                shards: ShardRouter? = nil) {
        self.provider = provider
        self.shards = shards
        self.metrics = metrics
        self.access = access
        self.viewerFiles = viewerFiles
        let handler = GatewayHandler()
        // `*` on the server's own answers (405, 400, 408, ...) only when everything is open.
        let open = access?.authenticator == nil && (access?.corsOrigins ?? []).isEmpty
        server = NNGHTTPServer(
            configuration: HTTPServerConfiguration(
                address: address, pathPrefix: "/", allowedMethods: ["GET", "HEAD", "OPTIONS"],
                defaultHeaders: open ? [Self.corsHeader] : [], headerTimeout: headerTimeout, idleTimeout: idleTimeout, tls: tls),
            handler: handler)
        handler.gateway.withLock { $0 = WeakGateway(self) }
    }

    /// Starts listening. Throws ``NNGError`` (`.addressInUse`, `.addressInvalid`, ...).
    public func start() throws(NNGError) { try server.start() }

    /// HTTPS only: re-reads the certificate files for new connections (see
    /// ``NNGHTTPServer/reloadTLS()``); throws and keeps the old certificate if they are unusable.
    public func reloadTLS() throws(NNGError) { try server.reloadTLS() }

    /// Stops: waits up to `drainTimeout` for requests in flight, then closes.
    public func stop(drainTimeout: Duration = .seconds(2)) { server.stop(drainTimeout: drainTimeout) }

    /// The bound port (0 before start).
    public var boundPort: Int { server.boundPort }
    /// `http://host:port` (`https://` with TLS) as bound.
    public var boundURL: String { server.boundURL }
    public var statistics: HTTPServerStatistics { server.statistics }

    /// Requests answered so far with `status` on `route` (a ``routeName(_:)``), for tests and /metrics.
    public func requestCount(route: String, status: Int? = nil) -> UInt64 {
        requestCounts.withLock { all in
            guard let byStatus = all[route] else { return 0 }
            if let status { return byStatus[status] ?? 0 }
            return byStatus.values.reduce(0, +)
        }
    }

    // MARK: - Dispatch

    /// Answers one request (synchronously; called on the HTTP server's handler queue).
    public func respond(to request: HTTPRequest) -> HTTPResponse {
        var path = request.path
        var signed: SignedPrefix?
        if path.hasPrefix(SignedPrefix.start) {
            guard let s = SignedPrefix(path) else {
                return count("unknown", Self.error(404, "no such path: \(request.path)"))
            }
            signed = s
            path = String(path.dropFirst(s.text.count))
        }
        let parsed = GatewayRoute.parse(path)
        let routeName: String
        var response: HTTPResponse
        var open = access?.authenticator == nil
        switch parsed {
        case .failure(.notFound):
            routeName = "unknown"
            response = Self.error(404, "no such path: \(request.path)")
        case .failure(.badRequest(let message)):
            routeName = request.path.hasSuffix(".mvt") ? "point_tile" : "tile"
            response = Self.error(400, message)
        case .success(let route):
            routeName = Self.routeName(route)
            if signed != nil && route.layer == nil {
                response = Self.error(404, "no such path: \(request.path)")
            } else if request.method == "OPTIONS" {
                open = isOpen(route)
                response = HTTPResponse(status: 204, headers: [
                    HTTPHeader("Access-Control-Allow-Methods", "GET, HEAD, OPTIONS"),
                    HTTPHeader("Access-Control-Allow-Headers", "If-None-Match, Authorization"),
                    HTTPHeader("Access-Control-Max-Age", "86400"),
                ])
            } else {
                switch admit(route, request, signed) {
                case .failure(let refusal):
                    response = refusal
                case .success(let admission):
                    if case .anyone = admission { open = true }
                    if let shards, let layer = route.layer, let redirect = shards.redirect(for: layer) {
                        response = Self.redirect(request, to: redirect)
                        break
                    }
                    // A Bearer token's quotas: 429 with Retry-After (whole seconds) when over them.
                    var quota: (grant: Grant, expensive: Bool)?
                    if case .bearer(let grant) = admission, let quotas = access?.quotas {
                        let expensive = route.isExpensive
                        if let refusal = quotas.admit(grant, bytes: request.target.utf8.count, expensive: expensive) {
                            let seconds = (refusal.retryAfterMilliseconds + 999) / 1000
                            response = Self.error(429, "\(refusal.reason); retry after \(refusal.retryAfterMilliseconds) ms")
                            response.setHeader("Retry-After", String(seconds))
                            addCORS(to: &response, request: request, open: false)
                            return count(routeName, response)
                        }
                        quota = (grant, expensive)
                    }
                    do throws(RPCError) {
                        response = try serve(route, request, admission)
                    } catch {
                        response = Self.error(Self.httpStatus(error.code), error.message)
                    }
                    if let quota { access?.quotas.finish(quota.grant, replyBytes: response.body.count, expensive: quota.expensive) }
                    if case .bearer = admission, let cache = response.header("Cache-Control"), cache.hasPrefix("public") {
                        response.setHeader("Cache-Control", "private" + cache.dropFirst("public".count))
                    }
                }
            }
        }
        addCORS(to: &response, request: request, open: open)
        return count(routeName, response)
    }

    private func count(_ routeName: String, _ response: HTTPResponse) -> HTTPResponse {
        requestCounts.withLock { $0[routeName, default: [:]][response.status, default: 0] += 1 }
        return response
    }

    // MARK: - Access

    /// `/t/{expiry}.{signature}` at the start of a path (``TileSigner``).
    struct SignedPrefix {
        static let start = "/t/"
        /// The prefix as it appears in the path, without the slash after it.
        let text: String
        let expiry: Int64
        let signature: Substring

        /// nil unless `path` is `/t/{digits}.{signature}/...`.
        init?(_ path: String) {
            let rest = path.dropFirst(Self.start.count)
            guard let slash = rest.firstIndex(of: "/") else { return nil }
            let segment = rest[..<slash]
            guard let dot = segment.firstIndex(of: "."), let e = GatewayRoute.decimal(segment[..<dot]),
                  let expiry = Int64(exactly: e), segment.index(after: dot) < segment.endIndex else { return nil }
            self.expiry = expiry
            signature = segment[segment.index(after: dot)...]
            text = Self.start + segment
        }
    }

    /// How a request was let in.
    enum Admission {
        /// No credentials needed: no auth file, a public layer or an open path.
        case anyone
        /// `Authorization: Bearer` of this token.
        case bearer(Grant)
        /// A valid signed prefix (kept in the URLs the answer contains).
        case signed(prefix: String)

        var prefix: String {
            if case .signed(let p) = self { return p }
            return ""
        }
    }

    /// ``admit(_:_:_:)``'s answer.
    enum Verdict {
        case success(Admission)
        /// The response that refuses the request (401, 403, 404).
        case failure(HTTPResponse)
    }

    /// Whether `route` is served without credentials.
    private func isOpen(_ route: GatewayRoute) -> Bool {
        guard let authenticator = access?.authenticator else { return true }
        switch route {
        case .viewer, .leafletFile, .basemapFile, .healthz, .readyz, .layers: return true
        case .metrics: return false
        default: return route.layer.map(authenticator.isPublic) ?? false
        }
    }

    /// Lets a request in, or answers why not (401, 403; 404 for a signed prefix without a key).
    private func admit(_ route: GatewayRoute, _ request: HTTPRequest, _ signed: SignedPrefix?) -> Verdict {
        if let signed, let layer = route.layer {
            guard let signer = access?.tileSigner else {
                return .failure(Self.error(404, "signed paths need a signing key (--tile-signing-key-file or --auth-file)"))
            }
            switch signer.check(layer: layer, expiry: signed.expiry, signature: signed.signature,
                                now: Int64(Date().timeIntervalSince1970)) {
            case nil: return .success(.signed(prefix: signed.text))
            case .expired: return .failure(Self.error(403, "signed path expired"))
            case .forged: return .failure(Self.error(403, "signed path not valid for layer \(layer)"))
            }
        }
        guard let authenticator = access?.authenticator else { return .success(.anyone) }
        guard let authorization = request.header("Authorization") else {
            if isOpen(route) { return .success(.anyone) }
            return .failure(Self.unauthorized("this path needs Authorization: Bearer TOKEN or a signed path"))
        }
        let parts = authorization.split(separator: " ", maxSplits: 1)
        guard parts.count == 2, parts[0].lowercased() == "bearer",
              let grant = authenticator.grant(token: String(parts[1].trimmingCharacters(in: .whitespaces))) else {
            return .failure(Self.unauthorized("unknown token"))
        }
        switch route {
        case .metrics:
            guard grant.scopes.contains(.admin) else { return .failure(Self.error(403, "/metrics needs a token with the admin scope")) }
        default:
            if let layer = route.layer, !grant.allows(.read, layer: layer) {
                return .failure(Self.error(403, "token \(grant.name) may not read layer \(layer)"))
            }
        }
        return .success(.bearer(grant))
    }

    /// `307 Temporary Redirect` to one of the owning group's gateways (at random, spreading the
    /// load) with the same target (path, signed prefix and query), or 503 with `Retry-After: 1`
    /// when no member of the group with a gateway is alive. `Cache-Control: no-store`: placements
    /// change when layers are deleted and created again.
    static func redirect(_ request: HTTPRequest, to redirect: V1.Redirect) -> HTTPResponse {
        guard let base = redirect.httpEndpoints.randomElement() else {
            var r = error(503, "layer \(redirect.layerID) is held by replica group \(redirect.group), which has no live gateway")
            r.setHeader("Retry-After", "1")
            return r
        }
        let location = (base.hasSuffix("/") ? String(base.dropLast()) : base) + request.target
        return HTTPResponse(status: 307, headers: [HTTPHeader("Location", location), HTTPHeader("Cache-Control", "no-store")],
                            body: Array("layer \(redirect.layerID) is held by replica group \(redirect.group): \(location)\n".utf8))
    }

    static func unauthorized(_ message: String) -> HTTPResponse {
        var r = error(401, message)
        r.setHeader("WWW-Authenticate", "Bearer realm=\"markerd\"")
        return r
    }

    /// `Access-Control-Allow-Origin` (see the type's notes).
    private func addCORS(to response: inout HTTPResponse, request: HTTPRequest, open: Bool) {
        let origins = access?.corsOrigins ?? []
        if origins.isEmpty {
            if open { response.setHeader(Self.corsHeader.name, Self.corsHeader.value) }
            return
        }
        response.setHeader("Vary", "Origin")
        if origins.contains("*") {
            response.setHeader(Self.corsHeader.name, "*")
        } else if let origin = request.header("Origin"), origins.contains(origin) {
            response.setHeader(Self.corsHeader.name, origin)
        }
    }

    /// The label of a route in /metrics (`markerd_http_requests_total{route=...}`).
    public static func routeName(_ route: GatewayRoute) -> String {
        switch route {
        case .viewer: "viewer"
        case .leafletFile: "viewer_leaflet"
        case .basemapFile: "viewer_basemap"
        case .healthz: "healthz"
        case .readyz: "readyz"
        case .metrics: "metrics"
        case .layers: "layers"
        case .tileJSON: "tilejson"
        case .rasterTile: "tile"
        case .pointTile: "point_tile"
        case .viewport: "viewport"
        case .hitTest: "hittest"
        case .events: "events"
        }
    }

    /// RPC status -> HTTP status.
    public static func httpStatus(_ code: V1.Code) -> Int {
        switch code {
        case .ok: 200
        case .notFound: 404
        case .invalidArgument, .outOfRange: 400
        case .unimplemented: 501
        case .unavailable, .resourceExhausted, .deadlineExceeded, .aborted: 503
        default: 500
        }
    }

    private func serve(_ route: GatewayRoute, _ request: HTTPRequest, _ admission: Admission) throws(RPCError) -> HTTPResponse {
        switch route {
        case .viewer:
            return HTTPResponse(status: 200, headers: [HTTPHeader("Content-Type", "text/html; charset=utf-8"),
                                                       HTTPHeader("Cache-Control", "no-cache")],
                                body: Array(ViewerPage.html.utf8))
        case .leafletFile(let path):
            return try ViewerFiles.response(directory: viewerFiles.leafletDirectory, path: path,
                                            what: "Leaflet: apt-get install libjs-leaflet, or start markerd with --leaflet-dir DIR")
        case .basemapFile(let path):
            guard let directory = viewerFiles.basemapDirectory else {
                throw .notFound("no basemap: start markerd with --basemap-dir DIR (scripts/build-basemap.py builds one)")
            }
            return try ViewerFiles.response(directory: directory, path: path,
                                            what: "basemap: scripts/build-basemap.py --out DIR builds it")
        case .healthz:
            return .text(200, "ok\n", headers: [HTTPHeader("Cache-Control", "no-store")])
        case .readyz:
            let reason = provider.readiness().notReadyReason
            return .text(reason == nil ? 200 : 503, (reason ?? "ready") + "\n", headers: [HTTPHeader("Cache-Control", "no-store")])
        case .metrics:
            return HTTPResponse(status: 200, headers: [HTTPHeader("Content-Type", "text/plain; version=0.0.4; charset=utf-8"),
                                                       HTTPHeader("Cache-Control", "no-store")],
                                body: Array(metricsText().utf8))
        case .layers:
            var layers = provider.layers()
            if let authenticator = access?.authenticator {
                layers.removeAll { l in
                    if case .bearer(let grant) = admission, grant.allows(.read, layer: l.id) { return false }
                    return !authenticator.isPublic(l.id)
                }
            }
            return try json(["layers": layers], cache: "no-cache")
        case .tileJSON(let layer):
            return try tileJSON(layer, request, prefix: admission.prefix)
        case .rasterTile(let a):
            return try rasterTile(a, request, prefix: admission.prefix)
        case .pointTile(let a):
            return try pointTile(a, request, prefix: admission.prefix)
        case .viewport(let layer):
            let q = QueryString(request.query)
            let query = ViewportQuery(layer: layer, west: try q.double("west", -180...180),
                                      south: try q.double("south", -90...90), east: try q.double("east", -180...180),
                                      north: try q.double("north", -90...90), zoom: try q.double("zoom", 0...22),
                                      density: try q.int("density", 1...3, default: 1),
                                      limit: try q.int("limit", 1...100_000, default: 1000))
            var result = try provider.viewport(query)
            if let t = result.tileURLTemplate, t.hasPrefix("/") { result.tileURLTemplate = admission.prefix + t }
            return try json(result, cache: "no-store")
        case .hitTest(let layer):
            let q = QueryString(request.query)
            let query = HitTestQuery(layer: layer, lat: try q.double("lat", -90...90), lon: try q.double("lon", -180...180),
                                     zoom: try q.double("zoom", 0...22), density: try q.int("density", 1...3, default: 1),
                                     tolerancePx: try q.double("tolerance", 0...200, default: 14),
                                     maxResults: try q.int("max", 1...1000, default: 10))
            return try json(provider.hitTest(query), cache: "no-store")
        case .events(let layer):
            return try events(layer, request)
        }
    }

    // MARK: - Tiles

    /// Entity tags in `If-None-Match` (`"12"`, `W/"12"`, lists, `*`).
    struct EntityTags {
        var any = false
        var versions: [UInt64] = []
        init(_ header: String?) {
            guard let header else { return }
            for raw in header.split(separator: ",") {
                var t = raw.trimmingCharacters(in: .whitespaces)[...]
                if t == "*" { any = true; continue }
                if t.hasPrefix("W/") { t = t.dropFirst(2) }
                guard t.count >= 2, t.first == "\"", t.last == "\"" else { continue }
                if let v = GatewayRoute.decimal(t.dropFirst().dropLast()) { versions.append(v) }
            }
        }
        var known: UInt64? { versions.last }
        func matches(_ version: UInt64) -> Bool { any || versions.contains(version) }
    }

    /// The entity tag of a tile version: strong (`"12"`). A tile's bytes are a function of its
    /// layer's content and options (the version) alone: rendered on one thread whatever the load,
    /// and a tile patched from its kept canvas is byte for byte the tile rendered from scratch.
    /// `If-None-Match` compares weakly, as RFC 9110 says, so `W/"12"` from an older server matches.
    static func etag(_ version: UInt64) -> String { "\"\(version)\"" }

    private func rasterTile(_ a: GatewayRoute.TileAddress, _ request: HTTPRequest, prefix: String) throws(RPCError) -> HTTPResponse {
        let tags = EntityTags(request.header("If-None-Match"))
        let render = { () throws(RPCError) -> (body: [UInt8], version: UInt64, notModified: Bool) in
            let r = try self.provider.tile(layer: a.layer, z: a.z, x: a.x, y: a.y, size: a.size, density: a.density,
                                           knownVersion: tags.known)
            return (r.png, r.version, r.notModified)
        }
        return try tileResponse(a, tags: tags, contentType: "image/png", livePath: prefix + a.liveRasterPath, render: render)
    }

    private func pointTile(_ a: GatewayRoute.TileAddress, _ request: HTTPRequest, prefix: String) throws(RPCError) -> HTTPResponse {
        let tags = EntityTags(request.header("If-None-Match"))
        let render = { () throws(RPCError) -> (body: [UInt8], version: UInt64, notModified: Bool) in
            let r = try self.provider.pointTile(layer: a.layer, z: a.z, x: a.x, y: a.y, knownVersion: tags.known)
            return (r.mvt, r.version, r.notModified)
        }
        return try tileResponse(a, tags: tags, contentType: "application/vnd.mapbox-vector-tile",
                                livePath: prefix + a.livePointPath, render: render)
    }

    private func tileResponse(
        _ a: GatewayRoute.TileAddress, tags: EntityTags, contentType: String, livePath: String,
        render: () throws(RPCError) -> (body: [UInt8], version: UInt64, notModified: Bool)
    ) throws(RPCError) -> HTTPResponse {
        let redirect = HTTPResponse(status: 302, headers: [HTTPHeader("Location", livePath),
                                                           HTTPHeader("Cache-Control", "no-cache")],
                                    body: Array("moved to \(livePath)\n".utf8))
        if let v = a.version, try provider.layerInfo(a.layer).version != v { return redirect }
        let r = try render()
        if let v = a.version, try provider.layerInfo(a.layer).version != v { return redirect }
        let cache = a.version == nil ? Self.liveCacheControl : Self.immutableCacheControl
        let headers = [HTTPHeader("ETag", Self.etag(r.version)), HTTPHeader("Cache-Control", cache)]
        if r.notModified || tags.matches(r.version) {
            return HTTPResponse(status: 304, headers: headers)
        }
        return HTTPResponse(status: 200, headers: [HTTPHeader("Content-Type", contentType)] + headers, body: r.body)
    }

    // MARK: - TileJSON, metrics, JSON

    private func tileJSON(_ layer: String, _ request: HTTPRequest, prefix: String) throws(RPCError) -> HTTPResponse {
        let info = try provider.layerInfo(layer)
        let host = request.header("Host") ?? boundURL.replacingOccurrences(of: "http://", with: "")
        let scheme = request.header("X-Forwarded-Proto") == "https" ? "https" : "http"
        let doc = TileJSON(
            tilejson: "3.0.0", name: layer, description: "markerd raster markers of layer \(layer)",
            version: "1.0.\(info.version)", scheme: "xyz",
            tiles: ["\(scheme)://\(host)\(prefix)/tiles/\(layer)/\(info.tileSize)/{z}/{x}/{y}.png"],
            minzoom: 0, maxzoom: GatewayRoute.maxZoom,
            bounds: [-180, -85.05112878, 180, 85.05112878], center: [0, 0, 2],
            tileSize: info.tileSize, markerdLayerVersion: info.version)
        var response = try json(doc, cache: Self.liveCacheControl)
        response.setHeader("Content-Type", "application/json")
        return response
    }

    struct TileJSON: Encodable {
        var tilejson: String
        var name: String
        var description: String
        var version: String
        var scheme: String
        var tiles: [String]
        var minzoom: Int
        var maxzoom: Int
        var bounds: [Double]
        var center: [Double]
        var tileSize: Int
        var markerdLayerVersion: UInt64
        enum CodingKeys: String, CodingKey {
            case tilejson, name, description, version, scheme, tiles, minzoom, maxzoom, bounds, center
            case tileSize = "tile_size", markerdLayerVersion = "markerd_layer_version"
        }
    }

    /// `/layers/{layer}/events`: Server-Sent Events (see `LayerEventStreams`). `bbox=w,s,e,n`
    /// filters the markers; `Last-Event-ID` (or `since=`) catches up from that version. Keep-alive
    /// comments every 15 s (half the idle timeout when shorter).
    private func events(_ layer: String, _ request: HTTPRequest) throws(RPCError) -> HTTPResponse {
        let q = QueryString(request.query)
        var bounds: V1.Bounds?
        if let text = q.values["bbox"] {
            let n = text.split(separator: ",").compactMap { Double($0) }
            guard n.count == 4, n.allSatisfy(\.isFinite), (-180...180).contains(n[0]), (-180...180).contains(n[2]),
                  (-90...90).contains(n[1]), (-90...90).contains(n[3]), n[1] <= n[3] else {
                throw .invalidArgument("query parameter bbox=\(text.prefix(64)) is not west,south,east,north in degrees")
            }
            bounds = V1.Bounds(west: n[0], south: n[1], east: n[2], north: n[3])
        }
        let sinceText = request.header("Last-Event-ID") ?? q.values["since"]
        let since = try sinceText.map { (t) throws(RPCError) -> UInt64 in
            guard let v = UInt64(t) else { throw .invalidArgument("Last-Event-ID / since \"\(t.prefix(32))\" is not a layer version") }
            return v
        }
        let keepAlive = min(.seconds(15), server.configuration.idleTimeout / 2)
        let stream = try provider.events(layer: layer, bounds: bounds, since: since, keepAliveEvery: keepAlive)
        return HTTPResponse(status: 200, headers: [HTTPHeader("Content-Type", "text/event-stream"),
                                                   HTTPHeader("Cache-Control", "no-store"),
                                                   HTTPHeader("X-Accel-Buffering", "no")],
                            bodyStream: stream)
    }

    private func json<T: Encodable>(_ value: T, cache: String) throws(RPCError) -> HTTPResponse {
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        do {
            let data = try encoder.encode(value)
            return HTTPResponse(status: 200, headers: [HTTPHeader("Content-Type", "application/json; charset=utf-8"),
                                                       HTTPHeader("Cache-Control", cache)],
                                body: Array(data))
        } catch {
            throw .internal("JSON encoding failed: \(error)")
        }
    }

    static func error(_ status: Int, _ message: String) -> HTTPResponse {
        .text(status, message + "\n", headers: [HTTPHeader("Cache-Control", "no-store")])
    }

    /// /metrics: the RPC metrics, per-layer gauges and the gateway's request counters.
    public func metricsText() -> String {
        var out = metrics?.prometheusText() ?? ""
        let readiness = provider.readiness()
        out += "# HELP markerd_ready 1 when /readyz answers 200: writes accepted and not draining.\n# TYPE markerd_ready gauge\n"
        out += "markerd_ready \(readiness.notReadyReason == nil ? 1 : 0)\n"
        out += "# HELP markerd_writes_refused 1 while writes are refused because the journal cannot write (it retries; they resume by themselves).\n# TYPE markerd_writes_refused gauge\n"
        out += "markerd_writes_refused \(readiness.writesRefused == nil ? 0 : 1)\n"
        let layers = provider.layers()
        out += "# HELP markerd_layer_markers Markers in the layer.\n# TYPE markerd_layer_markers gauge\n"
        for l in layers { out += "markerd_layer_markers{layer=\"\(Self.label(l.id))\"} \(l.markerCount)\n" }
        out += "# HELP markerd_layer_version The layer's version (changes with every change).\n# TYPE markerd_layer_version gauge\n"
        for l in layers { out += "markerd_layer_version{layer=\"\(Self.label(l.id))\"} \(l.version)\n" }
        out += "# HELP markerd_layer_tiled 1 when the layer serves static markers as raster tiles.\n# TYPE markerd_layer_tiled gauge\n"
        for l in layers { out += "markerd_layer_tiled{layer=\"\(Self.label(l.id))\"} \(l.mode == "tiled" ? 1 : 0)\n" }
        if let r = provider.tileRenderCounts() {
            out += "# HELP markerd_tile_renders_total Raster tiles rendered (tile cache misses of GetTile and the gateway; cluster tiles not counted): from scratch, or patched from a kept canvas.\n# TYPE markerd_tile_renders_total counter\n"
            out += "markerd_tile_renders_total{how=\"from_scratch\"} \(r.fromScratch)\nmarkerd_tile_renders_total{how=\"patched\"} \(r.patched)\n"
            out += "# HELP markerd_kept_canvas_bytes Bytes of dense tiles' canvases kept for patching (--kept-canvas-bytes).\n# TYPE markerd_kept_canvas_bytes gauge\n"
            out += "markerd_kept_canvas_bytes \(r.keptCanvasBytes)\n"
        }
        let counts = requestCounts.withLock { $0 }
        out += "# HELP markerd_http_requests_total HTTP gateway requests by route and status.\n# TYPE markerd_http_requests_total counter\n"
        for (route, byStatus) in counts.sorted(by: { $0.key < $1.key }) {
            for (status, n) in byStatus.sorted(by: { $0.key < $1.key }) {
                out += "markerd_http_requests_total{route=\"\(route)\",status=\"\(status)\"} \(n)\n"
            }
        }
        let http = server.statistics
        out += "# HELP markerd_http_connections HTTP connections open.\n# TYPE markerd_http_connections gauge\n"
        out += "markerd_http_connections \(http.connections)\n"
        out += "# HELP markerd_http_refused_total HTTP requests refused before they were complete (400, 413, 414, 431, 501, 505; 503 over the connection limit).\n# TYPE markerd_http_refused_total counter\n"
        out += "markerd_http_refused_total \(http.refused)\n"
        out += "# HELP markerd_http_timeouts_total HTTP connections closed by a timeout: header (answered 408) or idle.\n# TYPE markerd_http_timeouts_total counter\n"
        out += "markerd_http_timeouts_total{kind=\"header\"} \(http.headerTimeouts)\nmarkerd_http_timeouts_total{kind=\"idle\"} \(http.idleTimeouts)\n"
        return out
    }

    static func label(_ s: String) -> String {
        s.replacingOccurrences(of: "\\", with: "\\\\").replacingOccurrences(of: "\"", with: "\\\"")
            .replacingOccurrences(of: "\n", with: "\\n")
    }
}

/// Query-string parameters of the viewer's JSON endpoints (missing or bad -> INVALID_ARGUMENT).
/// Any query parses: parts without a name (`=`, `=x`) only add the unused name "".
struct QueryString {
    var values: [String: String] = [:]

    init(_ query: String?) {
        for pair in (query ?? "").split(separator: "&") {
            // Not omitting empty pieces: "=" is ["", ""], so kv[0] always exists.
            let kv = pair.split(separator: "=", maxSplits: 1, omittingEmptySubsequences: false)
            let key = String(kv[0]).removingPercentEncoding ?? String(kv[0])
            let raw = kv.count > 1 ? String(kv[1]).replacingOccurrences(of: "+", with: " ") : ""
            values[key] = raw.removingPercentEncoding ?? raw
        }
    }

    func double(_ name: String, _ range: ClosedRange<Double>, default value: Double? = nil) throws(RPCError) -> Double {
        guard let text = values[name] else {
            if let value { return value }
            throw .invalidArgument("query parameter \(name) is missing")
        }
        guard let d = Double(text), d.isFinite, range.contains(d) else {
            throw .invalidArgument("query parameter \(name)=\(text) is not a number from \(range.lowerBound) to \(range.upperBound)")
        }
        return d
    }

    func int(_ name: String, _ range: ClosedRange<Int>, default value: Int) throws(RPCError) -> Int {
        guard let text = values[name] else { return value }
        guard let n = Int(text), range.contains(n) else {
            throw .invalidArgument("query parameter \(name)=\(text) is not a whole number from \(range.lowerBound) to \(range.upperBound)")
        }
        return n
    }
}

/// Breaks the gateway <-> server cycle: the server's handler holds the gateway weakly.
struct WeakGateway: @unchecked Sendable {
    weak var gateway: TileGateway?
    init(_ gateway: TileGateway) { self.gateway = gateway }
}

final class GatewayHandler: HTTPRequestHandler {
    let gateway = Mutex<WeakGateway?>(nil)

    func handle(_ request: HTTPRequest, responder: HTTPResponder) {
        guard let gateway = gateway.withLock({ $0?.gateway }) else {
            responder.respond(.text(503, "gateway stopped\n"))
            return
        }
        responder.respond(gateway.respond(to: request))
    }
}

/// The URL scheme of the HTTP gateway (``TileGateway``); no query strings on tile URLs, so the
/// templates work in HERE's `fromXyzUrlTemplate`, MapLibre and Leaflet:
///
///     /                                                     viewer page (HTML)
///     /viewer/leaflet/{path}                                Leaflet's files (``ViewerFiles``)
///     /viewer/basemap/{path}                                the basemap's GeoJSON (``ViewerFiles``)
///     /healthz                                              "ok" (liveness)
///     /readyz                                               "ready", or 503 and why not (readiness)
///     /metrics                                              Prometheus text
///     /layers.json                                          the layers (JSON)
///     /tiles/{layer}.json                                   TileJSON 3.0
///     /tiles/{layer}/{size}/{z}/{x}/{y}.png                 live raster tile (also {y}@2x.png, {y}@3x.png)
///     /tiles/{layer}/v{version}/{size}/{z}/{x}/{y}.png      versioned raster tile (immutable)
///     /tiles/{layer}/{z}/{x}/{y}.mvt                        live point-data tile
///     /tiles/{layer}/v{version}/{z}/{x}/{y}.mvt             versioned point-data tile
///     /viewport/{layer}?west=&south=&east=&north=&zoom=[&density=&limit=]   QueryViewport (JSON)
///     /hittest/{layer}?lat=&lon=&zoom=[&density=&tolerance=&max=]           HitTest (JSON)
///     /layers/{layer}/events[?bbox=w,s,e,n&since=VERSION]   the layer's changes (Server-Sent Events)
///     /t/{expiry}.{signature}/...                           any per-layer path above, signed (``TileSigner``)
///
/// `size` is 256 or 512, `z` 0-22, `x` and `y` 0..<2^z, density 1-3, `version` a decimal
/// UInt64. Numbers are plain decimal digits (no sign, at most 20 digits).
public enum GatewayRoute: Sendable, Equatable {
    case viewer
    /// A file below the Leaflet directory; `path` passed ``ViewerFiles/isServable(_:)``.
    case leafletFile(path: String)
    /// A file below the basemap directory; `path` passed ``ViewerFiles/isServable(_:)``.
    case basemapFile(path: String)
    case healthz
    case readyz
    case metrics
    case layers
    case tileJSON(layer: String)
    case rasterTile(TileAddress)
    case pointTile(TileAddress)
    case viewport(layer: String)
    case hitTest(layer: String)
    case events(layer: String)

    /// One tile URL, parsed. `size` and `density` are 0 and 1 for point tiles.
    public struct TileAddress: Sendable, Equatable {
        public var layer: String
        /// Set for the versioned form (`v{version}`).
        public var version: UInt64?
        public var size: Int
        public var z: Int
        public var x: Int
        public var y: Int
        public var density: Int

        public init(layer: String, version: UInt64? = nil, size: Int = 0, z: Int, x: Int, y: Int, density: Int = 1) {
            self.layer = layer
            self.version = version
            self.size = size
            self.z = z
            self.x = x
            self.y = y
            self.density = density
        }

        /// The live raster URL path of this tile (the versioned form's redirect target).
        public var liveRasterPath: String {
            "/tiles/\(layer)/\(size)/\(z)/\(x)/\(y)\(density == 1 ? "" : "@\(density)x").png"
        }

        public var livePointPath: String { "/tiles/\(layer)/\(z)/\(x)/\(y).mvt" }
    }

    /// Why a path is not a route: 404 (no such path) or 400 (a tile URL with a bad number).
    public enum Failure: Error, Sendable, Equatable {
        case notFound
        case badRequest(String)
    }

    public static let maxZoom = 22
    public static let tileSizes: Set<Int> = [256, 512]

    /// Counted against a token's `expensive=` quota: tiles, point tiles, viewport pages.
    public var isExpensive: Bool {
        switch self {
        case .rasterTile, .pointTile, .viewport: true
        default: false
        }
    }

    /// The layer the route reads, for the per-layer paths (tiles, TileJSON, viewport, hit-test).
    public var layer: String? {
        switch self {
        case .viewer, .leafletFile, .basemapFile, .healthz, .readyz, .metrics, .layers: nil
        case .tileJSON(let layer), .viewport(let layer), .hitTest(let layer), .events(let layer): layer
        case .rasterTile(let a), .pointTile(let a): a.layer
        }
    }

    /// Parses a request path (without the query).
    public static func parse(_ path: String) -> Result<GatewayRoute, Failure> {
        switch path {
        case "/", "/index.html": return .success(.viewer)
        case "/healthz": return .success(.healthz)
        case "/readyz": return .success(.readyz)
        case "/metrics": return .success(.metrics)
        case "/layers.json": return .success(.layers)
        default: break
        }
        for (prefix, route) in [("/viewer/leaflet/", GatewayRoute.leafletFile), ("/viewer/basemap/", GatewayRoute.basemapFile)]
        where path.hasPrefix(prefix) {
            let rest = path.dropFirst(prefix.count)
            return ViewerFiles.isServable(rest) ? .success(route(String(rest))) : .failure(.notFound)
        }
        let parts = path.split(separator: "/", omittingEmptySubsequences: false).dropFirst().map(String.init)
        guard parts.count >= 2, parts.allSatisfy({ !$0.isEmpty }) else { return .failure(.notFound) }
        switch parts[0] {
        case "viewport" where parts.count == 2: return .success(.viewport(layer: parts[1]))
        case "hittest" where parts.count == 2: return .success(.hitTest(layer: parts[1]))
        case "layers" where parts.count == 3 && parts[2] == "events": return .success(.events(layer: parts[1]))
        case "tiles": break
        default: return .failure(.notFound)
        }
        if parts.count == 2 {
            guard parts[1].hasSuffix(".json"), parts[1].count > 5 else { return .failure(.notFound) }
            return .success(.tileJSON(layer: String(parts[1].dropLast(5))))
        }
        let layer = parts[1]
        var rest = Array(parts.dropFirst(2))
        guard let last = rest.last else { return .failure(.notFound) }
        let isPNG = last.hasSuffix(".png"), isMVT = last.hasSuffix(".mvt")
        guard isPNG || isMVT else { return .failure(.notFound) }
        guard rest.count == (isPNG ? 4 : 3) || rest.count == (isPNG ? 5 : 4) else { return .failure(.notFound) }

        var version: UInt64?
        if rest.count == (isPNG ? 5 : 4) {
            let v = rest.removeFirst()
            guard v.hasPrefix("v"), let n = decimal(v.dropFirst()) else {
                return .failure(.badRequest("version \"\(v)\" is not v followed by a number"))
            }
            version = n
        }
        var size = 0
        if isPNG {
            let s = rest.removeFirst()
            // Int(exactly:): a 20-digit number fits UInt64 but not Int (Int(n) would trap).
            guard let n = decimal(Substring(s)).flatMap({ Int(exactly: $0) }), tileSizes.contains(n) else {
                return .failure(.badRequest("tile size \"\(s)\" is not 256 or 512"))
            }
            size = n
        }
        // rest = [z, x, "y[@Nx].png" | "y.mvt"]
        var yText = Substring(rest[2].dropLast(4))
        var density = 1
        if isPNG, let at = yText.firstIndex(of: "@") {
            let suffix = yText[yText.index(after: at)...]
            guard suffix.hasSuffix("x"), let d = decimal(suffix.dropLast()), (1...3).contains(d) else {
                return .failure(.badRequest("density \"@\(suffix)\" is not @1x, @2x or @3x"))
            }
            density = Int(d)
            yText = yText[..<at]
        }
        guard let z = decimal(Substring(rest[0])), z <= UInt64(maxZoom) else {
            return .failure(.badRequest("z \"\(rest[0])\" is not a zoom from 0 to \(maxZoom)"))
        }
        let n = UInt64(1) << z
        guard let x = decimal(Substring(rest[1])), x < n else {
            return .failure(.badRequest("x \"\(rest[1])\" is not a column from 0 to \(n - 1) at z \(z)"))
        }
        guard let y = decimal(yText), y < n else {
            return .failure(.badRequest("y \"\(yText)\" is not a row from 0 to \(n - 1) at z \(z)"))
        }
        let address = TileAddress(layer: layer, version: version, size: size, z: Int(z), x: Int(x), y: Int(y),
                                  density: density)
        return .success(isPNG ? .rasterTile(address) : .pointTile(address))
    }

    /// A plain decimal number: 1-20 ASCII digits, fitting UInt64.
    static func decimal(_ s: Substring) -> UInt64? {
        guard !s.isEmpty, s.utf8.count <= 20, s.utf8.allSatisfy({ $0 >= 48 && $0 <= 57 }) else { return nil }
        return UInt64(s)
    }
}

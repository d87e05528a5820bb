import MarkerdAPI
import MarkerdService
import MarkerdTransport

/// ``TileProvider`` over ``MarkerService``.
///
/// Every call goes to the service: ListLayers, GetLayer, QueryViewport, HitTest, GetTile and
/// GetPointTile.
public struct ServiceTileProvider: TileProvider {
    public let service: MarkerService
    let eventStreams: LayerEventStreams

    public init(service: MarkerService) {
        self.service = service
        eventStreams = LayerEventStreams(service: service)
    }

    public func events(layer: String, bounds: V1.Bounds?, since: UInt64?, keepAliveEvery: Duration) throws(RPCError) -> HTTPBodyStream {
        try eventStreams.open(layer: layer, bounds: bounds, since: since, keepAliveEvery: keepAliveEvery)
    }

    public func tile(layer: String, z: Int, x: Int, y: Int, size: Int, density: Int,
                     knownVersion: UInt64?) throws(RPCError) -> (png: [UInt8], version: UInt64, notModified: Bool) {
        let r = try service.getTile(V1.GetTileRequest(
            layerID: layer, z: UInt32(z), x: UInt32(x), y: UInt32(y), tileSize: UInt32(size),
            density: UInt32(density), knownVersion: knownVersion ?? 0))
        return (r.png, r.version, r.notModified)
    }

    public func pointTile(layer: String, z: Int, x: Int, y: Int,
                          knownVersion: UInt64?) throws(RPCError) -> (mvt: [UInt8], version: UInt64, notModified: Bool) {
        var req = V1.GetPointTileRequest()
        req.layerID = layer
        req.z = UInt32(z)
        req.x = UInt32(x)
        req.y = UInt32(y)
        req.knownVersion = knownVersion ?? 0
        let r = try service.getPointTile(req)
        return (r.mvt, r.version, r.notModified)
    }

    public func layerInfo(_ layer: String) throws(RPCError) -> (tileSize: Int, version: UInt64) {
        let l = try service.getLayer(V1.GetLayerRequest(layerID: layer)).layer
        return (Int(l?.options?.tiling?.tileSize ?? 256), l?.version ?? 0)
    }

    public func tileRenderCounts() -> TileRenderCounts? { service.tileRenderCounts }

    public func readiness() -> Readiness { service.readiness }

    /// Every layer: ListLayers page by page (the tokens are the service's own, so no page fails).
    public func layers() -> [LayerSummary] {
        var all: [LayerSummary] = []
        var request = V1.ListLayersRequest(pageSize: UInt32(MarkerService.maxLayersPage))
        repeat {
            guard let page = try? service.listLayers(request) else { break }
            all += page.layers.map(Self.summary)
            request.pageToken = page.nextPageToken
        } while !request.pageToken.isEmpty
        return all
    }

    public func viewport(_ q: ViewportQuery) throws(RPCError) -> ViewportResult {
        var req = V1.QueryViewportRequest()
        req.layerID = q.layer
        req.bounds = V1.Bounds(west: q.west, south: q.south, east: q.east, north: q.north)
        req.zoom = q.zoom
        req.density = UInt32(clamping: q.density)
        req.pageSize = UInt32(clamping: q.limit)
        let r = try service.queryViewport(req)
        return ViewportResult(
            mode: r.mode == .tiled ? "tiled" : "native", markers: r.markers.map(Self.marker),
            tileURLTemplate: r.tiles?.urlTemplate, tileSize: r.tiles.map { Int($0.tileSize) },
            tileVersion: r.tiles?.version, staticInView: r.staticInViewCount, liveInView: r.liveInViewCount,
            layerVersion: r.layerVersion, nextPageToken: r.nextPageToken)
    }

    public func hitTest(_ q: HitTestQuery) throws(RPCError) -> HitTestResult {
        var req = V1.HitTestRequest()
        req.layerID = q.layer
        req.point = V1.LatLng(latitude: q.lat, longitude: q.lon)
        req.zoom = q.zoom
        req.density = UInt32(clamping: q.density)
        req.tolerancePx = Float(q.tolerancePx)
        req.maxResults = UInt32(clamping: q.maxResults)
        let r = try service.hitTest(req)
        return HitTestResult(hits: r.hits.map {
            HitTestResult.Hit(marker: Self.marker($0.marker ?? V1.Marker()), tiled: $0.tiled, onLabel: $0.onLabel)
        })
    }

    static func summary(_ l: V1.Layer) -> LayerSummary {
        let labels = l.options?.labels
        return LayerSummary(id: l.id, version: l.version, mode: l.mode == .tiled ? "tiled" : "native",
                            markerCount: l.markerCount, tileSize: Int(l.options?.tiling?.tileSize ?? 256),
                            clusters: l.options?.clustering?.enabled == true && l.options?.clustering?.raster == true,
                            labels: labels?.enabled == true, labelAttribute: labels?.enabled == true ? labels?.textAttribute : nil)
    }

    static func marker(_ m: V1.Marker) -> GatewayMarker {
        var g = GatewayMarker(id: m.id, lat: m.position?.latitude ?? 0, lon: m.position?.longitude ?? 0,
                              zIndex: m.zIndex, draggable: m.draggable ?? false, clickable: m.clickable ?? true,
                              attributes: m.attributes)
        switch m.icon {
        case .pin(let pin):
            g.fillColor = pin.fillColor ?? 0xFFFF_0000
            g.label = pin.label
        case .iconID(let id):
            g.iconID = id
        case nil:
            g.fillColor = 0xFFFF_0000
        }
        return g
    }
}

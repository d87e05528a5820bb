import MarkerdAPI
import MarkerdCore

extension MarkerService {
    public func getLayer(_ r: V1.GetLayerRequest) throws(RPCError) -> V1.GetLayerResponse {
        try read(r.layerID) { h, now in
            var response = V1.GetLayerResponse()
            response.layer = h.apiLayer(nowUnixMs: now)
            return response
        }
    }

    public func listLayers(_: V1.ListLayersRequest) -> V1.ListLayersResponse {
        let handles = layers.withLock { Array($0.values) }.sorted { $0.id < $1.id }
        let now = Self.nowUnixMs()
        var response = V1.ListLayersResponse()
        response.layers = handles.compactMap { h in
            h.expireAnimationsIfDue(nowUnixMs: now)
            return h.lock.withReadLock { h.deleted ? nil : h.apiLayer(nowUnixMs: now) }
        }
        return response
    }

    public func getLayerStats(_ r: V1.GetLayerStatsRequest) throws(RPCError) -> V1.GetLayerStatsResponse {
        try read(r.layerID) { h, now in
            let s = h.layer.stats(now: now)
            var stats = V1.LayerStats()
            stats.layerID = h.id
            stats.markers = UInt64(s.markers)
            stats.staticMarkers = UInt64(s.staticMarkers)
            stats.liveMarkers = UInt64(s.liveMarkers)
            stats.hiddenMarkers = UInt64(s.hiddenMarkers)
            stats.approximateBytes = UInt64(s.approximateBytes)
            stats.mode = s.mode == .tiled ? .tiled : .native
            stats.version = s.version
            var response = V1.GetLayerStatsResponse()
            response.stats = stats
            return response
        }
    }

    public func getMarkers(_ r: V1.GetMarkersRequest) throws(RPCError) -> V1.GetMarkersResponse {
        guard r.ids.count <= MarkerConversion.maxBatch else {
            throw .invalidArgument("ids holds \(r.ids.count) entries, more than \(MarkerConversion.maxBatch) per call")
        }
        return try read(r.layerID) { h, _ in
            var response = V1.GetMarkersResponse()
            response.markers.reserveCapacity(r.ids.count)
            for id in r.ids {
                if let m = h.layer.marker(id: id) {
                    response.markers.append(MarkerConversion.apiMarker(m))
                } else {
                    response.missingIDs.append(id)
                }
            }
            return response
        }
    }

    static func density(_ d: UInt32) throws(RPCError) -> Double {
        switch d {
        case 0, 1: return 1
        case 2, 3: return Double(d)
        default: throw .invalidArgument("density \(d) is not 1, 2 or 3")
        }
    }

    public func queryViewport(_ r: V1.QueryViewportRequest) throws(RPCError) -> V1.QueryViewportResponse {
        try viewport(r) { layer, page, response in
            var response = response
            response.markers = page.slots.map { MarkerConversion.apiMarker(layer.record($0)) }
            return response
        }
    }

    /// `queryViewport` encoded: the same response as `queryViewport(_:).serializedBytes()` decodes
    /// to, built without a `V1.Marker` per marker (the markers are written straight from the
    /// layer by `MarkerWireEncoder`, after the other fields).
    public func queryViewportPayload(_ r: V1.QueryViewportRequest) throws(RPCError) -> [UInt8] {
        try viewport(r) { layer, page, response in
            var out = response.serializedBytes()
            var encoder = MarkerWireEncoder()
            encoder.append(page.slots, field: 2, of: layer, to: &out)
            return out
        }
    }

    /// Runs the query under the layer's read lock and passes `finish` the page and the response
    /// with every field but `markers` set.
    private func viewport<T>(_ r: V1.QueryViewportRequest,
                             _ finish: (MarkerLayer, ViewportPage, V1.QueryViewportResponse) -> T) throws(RPCError) -> T {
        guard let b = r.bounds else { throw .invalidArgument("bounds is missing") }
        let density = try Self.density(r.density)
        let limit = r.limit == 0 ? 1000 : Int(r.limit)
        guard limit <= MarkerConversion.maxBatch else {
            throw .invalidArgument("limit \(limit) is more than \(MarkerConversion.maxBatch)")
        }
        let bounds = GeoBounds(west: b.west, south: b.south, east: b.east, north: b.north)
        return try read(r.layerID) { (h, now) throws(RPCError) in
            let page = try mapCoreError { () throws(MarkerdCoreError) in
                try h.layer.viewportPage(bounds: bounds, zoom: r.zoom, density: density, limit: limit,
                                         pageToken: r.pageToken.isEmpty ? nil : r.pageToken, now: now)
            }
            var response = V1.QueryViewportResponse()
            response.mode = page.mode == .tiled ? .tiled : .native
            response.staticInView = UInt64(page.staticInView)
            response.liveInView = UInt64(page.liveInView)
            response.nextPageToken = page.nextPageToken ?? ""
            response.layerVersion = page.layerVersion
            if page.mode == .tiled {
                let size = h.layer.options.tileSize
                var tiles = V1.TileDescriptor()
                tiles.urlTemplate = configuration.tileURLTemplate
                    .replacingOccurrences(of: "{layer}", with: h.id)
                    .replacingOccurrences(of: "{size}", with: String(size))
                tiles.tileSize = UInt32(size)
                tiles.version = page.layerVersion
                response.tiles = tiles
            }
            return finish(h.layer, page, response)
        }
    }

    public func hitTest(_ r: V1.HitTestRequest) throws(RPCError) -> V1.HitTestResponse {
        guard let p = MarkerConversion.latLng(r.point) else { throw .invalidArgument("point is missing") }
        let density = try Self.density(r.density)
        return try read(r.layerID) { (h, now) throws(RPCError) in
            let hits = try mapCoreError { () throws(MarkerdCoreError) in
                try h.layer.hitTest(point: p, zoom: r.zoom, density: density,
                                    tolerancePx: Double(r.tolerancePx ?? 14),
                                    maxResults: Int(r.maxResults ?? 10), now: now)
            }
            var response = V1.HitTestResponse()
            response.hits = hits.map { hit in
                var h = V1.MarkerHit()
                h.marker = MarkerConversion.apiMarker(hit.marker)
                h.tiled = hit.tiled
                return h
            }
            return response
        }
    }

    public func getServerInfo(_: V1.GetServerInfoRequest) -> V1.GetServerInfoResponse {
        let handles = layers.withLock { Array($0.values) }
        var response = V1.GetServerInfoResponse()
        response.version = configuration.version
        let up = ContinuousClock.now - startedAt
        response.uptimeSeconds = Double(up.components.seconds) + Double(up.components.attoseconds) / 1e18
        response.layers = UInt32(handles.count)
        response.markers = handles.reduce(0) { sum, h in sum + UInt64(h.lock.withReadLock { h.layer.count }) }
        response.durable = journal != nil
        return response
    }
}

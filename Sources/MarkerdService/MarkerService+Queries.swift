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

    /// Most layers per ListLayers page.
    public static let maxLayersPage = 1_000
    /// ListLayers' page size when the request sets none.
    static let defaultLayersPage = 100

    /// ListLayers: a page of the layers in bytewise order of their ids, after the page token's id.
    public func listLayers(_ r: V1.ListLayersRequest) throws(RPCError) -> V1.ListLayersResponse {
        let pageSize = try PageToken.size(r.pageSize, default: Self.defaultLayersPage, maximum: Self.maxLayersPage)
        let after = try PageToken.layersAfter(r.pageToken)
        // Layer ids are ASCII, so String's order is their bytes' order.
        let handles = layers.withLock { all in Array(all.values.filter { after == nil || $0.id > after! }) }.sorted { $0.id < $1.id }
        let now = nowUnixMs()
        var response = V1.ListLayersResponse()
        for h in handles {
            // A layer whose due animations cannot be expired (UNAVAILABLE) is listed as it is.
            try? expireDueAnimations(h, now: now)
            guard let layer = h.lock.withReadLock({ h.deleted ? nil : h.apiLayer(nowUnixMs: now) }) else { continue }
            if response.layers.count == pageSize {
                response.nextPageToken = PageToken.layers(after: response.layers[pageSize - 1].id)
                break
            }
            response.layers.append(layer)
        }
        return response
    }

    public func getLayerStats(_ r: V1.GetLayerStatsRequest) throws(RPCError) -> V1.GetLayerStatsResponse {
        try read(r.layerID) { h, now in
            let s = h.layer.stats(now: now)
            var stats = V1.LayerStats()
            stats.layerID = h.id
            stats.markerCount = UInt64(s.markers)
            stats.staticMarkerCount = UInt64(s.staticMarkers)
            stats.liveMarkerCount = UInt64(s.liveMarkers)
            stats.hiddenMarkerCount = UInt64(s.hiddenMarkers)
            stats.approximateBytes = UInt64(s.approximateBytes + h.labels.approximateBytes)  // with the label placements
            stats.mode = s.mode == .tiled ? .tiled : .native
            stats.version = s.version
            var response = V1.GetLayerStatsResponse()
            response.stats = stats
            return response
        }
    }

    public func getMarkers(_ r: V1.GetMarkersRequest) throws(RPCError) -> V1.GetMarkersResponse {
        guard r.ids.count <= MarkerConversion.maxBatch else {
            throw .invalidArgument("ids holds \(r.ids.count) entries, more than \(MarkerConversion.maxBatch) per call", field: "ids")
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

    /// ListMarkers' page size when the request sets none.
    static let defaultMarkersPage = 1_000
    /// Most storage slots one ListMarkers page looks at, beyond its page size (free slots of a
    /// layer that shrank): bounds a page's work under the read lock at some hundred µs more.
    static let markersPageExtraSlots = 65_536

    /// ListMarkers: a page of every marker of the layer (static, live and hidden) in storage slot
    /// order, from the page token's slot on. Stateless: a marker that stays in the layer while a
    /// client pages comes exactly once (`MarkerLayer.markers(fromSlot:limit:maxSlots:)`), within
    /// one server process (a restart restores the markers into other slots).
    /// Throws INVALID_ARGUMENT for a `page_size` above 100,000 or a malformed or foreign token,
    /// NOT_FOUND for an unknown layer.
    public func listMarkers(_ r: V1.ListMarkersRequest) throws(RPCError) -> V1.ListMarkersResponse {
        let pageSize = try PageToken.size(r.pageSize, default: Self.defaultMarkersPage, maximum: MarkerConversion.maxBatch)
        let slot = try PageToken.markersSlot(r.pageToken, layerID: r.layerID)
        return try read(r.layerID) { h, _ in
            let layer = h.layer
            let page = layer.markers(fromSlot: slot, limit: pageSize, maxSlots: pageSize + Self.markersPageExtraSlots)
            var response = V1.ListMarkersResponse()
            response.markers = page.markers.map(MarkerConversion.apiMarker)
            response.nextPageToken = page.next.map { PageToken.markers(layerID: h.id, slot: $0) } ?? ""
            response.layerVersion = layer.version
            return response
        }
    }

    static func density(_ d: UInt32) throws(RPCError) -> Double {
        switch d {
        case 0, 1: return 1
        case 2, 3: return Double(d)
        default: throw .invalidArgument("density \(d) is not 1, 2 or 3", field: "density")
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
        try viewport(r, Self.encodeViewport)
    }

    /// `queryViewportPayload` for the network thread, which must not wait: writes the payload
    /// through `write` (its size, then a function that fills a buffer of exactly that size:
    /// the reply's bytes go straight into it, no payload array) and returns true when the
    /// request is valid, the layer exists, its read lock is free, no animation is due, and the
    /// work is bounded: at most `liveBudget` live-class markers lie in the searched cells
    /// (`MarkerLayer.viewportLiveClassCount`: the query visits them all, and stops after
    /// `liveBudget` of them, `MarkerLayer.viewportPage(...liveBudget:)`) and the page is TILED
    /// (live markers only, so at most that many) or a NATIVE page of at most `limitBudget`
    /// markers. Static markers are counted per grid node, so the rest of the work follows the
    /// viewport's edge, not its markers. Returns false without calling `write` otherwise (also
    /// for a bad request or a failed query), and the caller hands the request to
    /// `queryViewportPayload`, which answers the same bytes or the error. `write` is called
    /// after the layer's read lock is released (the page is sized and its rows read under the
    /// lock, `MarkerWireEncoder.plan`; the bytes are written from that plan, not from the layer).
    ///
    /// Defaults: 1,024 live markers and 128 markers per NATIVE page: each costs some tens of µs
    /// at most. markerd's dispatcher passes a `limitBudget` of 1,000 (the default page, some
    /// hundred µs of bounded CPU work: `RPCDispatcher.inlinePageLimit`); bigger pages go to a
    /// worker.
    public func inlineQueryViewportPayload(_ r: V1.QueryViewportRequest, liveBudget: Int = 1024, limitBudget: Int = 128,
                                           write: (_ size: Int, _ fill: (UnsafeMutableRawBufferPointer) -> Void) -> Void) -> Bool {
        typealias Planned = (head: [UInt8], encoder: MarkerWireEncoder, plan: MarkerWireEncoder.Plan)
        guard let arguments = try? viewportArguments(r),
              let (head, encoder, plan) = readIfFree(r.layerID, { (h, now) throws(RPCError) -> Planned? in
                  guard arguments.limit <= limitBudget || h.layer.mode(now: now) == .tiled else { return nil }
                  return try viewportPage(r, arguments, h, now, liveBudget: liveBudget) { layer, page, response in
                      var encoder = MarkerWireEncoder()
                      let plan = encoder.plan(page.slots, field: 2, of: layer)
                      return (response.serializedBytes(), encoder, plan)
                  }
              })
        else { return false }
        write(head.count + plan.byteCount) { out in
            head.withUnsafeBytes { if let b = $0.baseAddress { out.baseAddress!.copyMemory(from: b, byteCount: $0.count) } }
            encoder.write(plan, into: (out.baseAddress! + head.count).bindMemory(to: UInt8.self, capacity: plan.byteCount))
        }
        return true
    }

    /// The encoded reply of `queryViewportPayload`.
    private static func encodeViewport(_ layer: MarkerLayer, _ page: ViewportPage, _ response: V1.QueryViewportResponse) -> [UInt8] {
        var out = response.serializedBytes()
        var encoder = MarkerWireEncoder()
        encoder.append(page.slots, field: 2, of: layer, to: &out)
        return out
    }

    /// A QueryViewport request's checked bounds, density and page size (default 1,000).
    private func viewportArguments(_ r: V1.QueryViewportRequest) throws(RPCError) -> (bounds: GeoBounds, density: Double, limit: Int) {
        guard let b = r.bounds else { throw .invalidArgument("bounds is missing", field: "bounds") }
        let density = try Self.density(r.density)
        let limit = try PageToken.size(r.pageSize, default: 1000, maximum: MarkerConversion.maxBatch)
        return (GeoBounds(west: b.west, south: b.south, east: b.east, north: b.north), density, limit)
    }

    /// Runs the query under the layer's read lock and passes `finish` the page and the response
    /// with every field but `markers` set.
    private func viewport<T>(_ r: V1.QueryViewportRequest,
                             _ finish: (MarkerLayer, ViewportPage, V1.QueryViewportResponse) -> T) throws(RPCError) -> T {
        let arguments = try viewportArguments(r)
        return try read(r.layerID) { (h, now) throws(RPCError) in try viewportPage(r, arguments, h, now, liveBudget: .max, finish)! }
    }

    /// The query on `h` (its read lock held) at `now` (Unix ms): the page and the response's head,
    /// passed to `finish`; nil when more than `liveBudget` live-class markers lie in the searched
    /// cells (`MarkerLayer.viewportPage(...liveBudget:)`; never with `.max`).
    private func viewportPage<T>(_ r: V1.QueryViewportRequest, _ a: (bounds: GeoBounds, density: Double, limit: Int),
                                 _ h: LayerHandle, _ now: Int64, liveBudget: Int,
                                 _ finish: (MarkerLayer, ViewportPage, V1.QueryViewportResponse) -> T) throws(RPCError) -> T? {
        // One copy of the layer out of the handle (each `h.layer` is one: a retain and release
        // of each of its arrays).
        let layer = h.layer
        guard let page = try mapCoreError({ () throws(MarkerdCoreError) in
            try layer.viewportPage(bounds: a.bounds, zoom: r.zoom, density: a.density, limit: a.limit,
                                   pageToken: r.pageToken.isEmpty ? nil : r.pageToken, now: now, liveBudget: liveBudget)
        }) else { return nil }
        var response = V1.QueryViewportResponse()
        response.mode = page.mode == .tiled ? .tiled : .native
        response.staticInViewCount = UInt64(page.staticInView)
        response.liveInViewCount = UInt64(page.liveInView)
        response.nextPageToken = page.nextPageToken ?? ""
        response.layerVersion = page.layerVersion
        if page.mode == .tiled {
            let size = layer.options.tileSize
            var tiles = V1.TileDescriptor()
            tiles.urlTemplate = Self.replacing("{size}", with: String(size),
                                               in: Self.replacing("{layer}", with: h.id, in: configuration.tileURLTemplate))
            tiles.tileSize = UInt32(size)
            tiles.version = page.layerVersion
            response.tiles = tiles
        }
        return finish(layer, page, response)
    }

    /// `text.replacingOccurrences(of: target, with: replacement)` for an ASCII `target`, on UTF-8
    /// bytes (Foundation's goes through UTF-16 and took a few µs of every TILED reply): every
    /// non-overlapping occurrence, left to right.
    static func replacing(_ target: String, with replacement: String, in text: String) -> String {
        let t = Array(target.utf8), bytes = Array(text.utf8)
        guard !t.isEmpty, bytes.count >= t.count else { return text }
        var out: [UInt8] = []
        out.reserveCapacity(bytes.count + 32)
        var i = 0
        while i < bytes.count {
            if bytes[i] == t[0], i + t.count <= bytes.count, bytes[i..<i + t.count].elementsEqual(t) {
                out.append(contentsOf: replacement.utf8)
                i += t.count
            } else {
                out.append(bytes[i])
                i += 1
            }
        }
        return String(decoding: out, as: UTF8.self)
    }

    public func hitTest(_ r: V1.HitTestRequest) throws(RPCError) -> V1.HitTestResponse {
        let (p, density) = try hitTestArguments(r)
        return try read(r.layerID) { (h, now) throws(RPCError) in
            var response = try Self.hitTest(r, p, density, h.layer, now)
            if h.layer.labelStyle.enabled { response.hits = labelHits(r, p, h, iconHits: response.hits, now: now) }
            return response
        }
    }

    /// `hitTest(_:).serializedBytes()` for the network thread, which must not wait: the payload
    /// when the request is valid, asks for at most `maxResultsBudget` hits (default 10 when
    /// unset), the layer exists, its read lock is free and no animation is due; nil otherwise
    /// (also when the hit test fails), and the caller hands the request to `hitTest`, which
    /// answers the same bytes or the error.
    ///
    /// Default budget 64 hits: the walk is best-first in draw order and stops once no grid node
    /// can hold a better hit, so its cost follows the hits asked for (a few µs for 10), and the
    /// reply stays a few KB.
    public func inlineHitTestPayload(_ r: V1.HitTestRequest, maxResultsBudget: Int = 64) -> [UInt8]? {
        guard Int(r.maxResults ?? 10) <= maxResultsBudget, let (p, density) = try? hitTestArguments(r) else { return nil }
        return readIfFree(r.layerID) { (h, now) throws(RPCError) in
            if h.layer.labelStyle.enabled { return nil }  // `hitTest` (it may decide a placement)
            return try Self.hitTest(r, p, density, h.layer, now).serializedBytes()
        }
    }

    /// A HitTest request's checked point and density.
    private func hitTestArguments(_ r: V1.HitTestRequest) throws(RPCError) -> (LatLng, Double) {
        guard let p = MarkerConversion.latLng(r.point) else { throw .invalidArgument("point is missing", field: "point") }
        return (p, try Self.density(r.density))
    }

    /// The hit test on `layer` (its read lock held) at `now` (Unix ms).
    private static func hitTest(_ r: V1.HitTestRequest, _ p: LatLng, _ density: Double,
                                _ layer: MarkerLayer, _ now: Int64) throws(RPCError) -> V1.HitTestResponse {
        let hits = try mapCoreError { () throws(MarkerdCoreError) in
            try layer.hitTest(point: p, zoom: r.zoom, density: density,
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

    public func getServerInfo(_: V1.GetServerInfoRequest) -> V1.GetServerInfoResponse {
        let handles = layers.withLock { Array($0.values) }
        var response = V1.GetServerInfoResponse()
        response.version = configuration.version
        let up = ContinuousClock.now - startedAt
        response.uptimeMs = UInt64(Self.milliseconds(up))
        response.layerCount = UInt64(handles.count)
        response.markerCount = handles.reduce(0) { sum, h in sum + UInt64(h.lock.withReadLock { h.layer.count }) }
        response.durable = journal != nil
        return response
    }
}

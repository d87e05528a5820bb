import MarkerdAPI

/// Typed wrappers, one per rpc of `service MarkerService`.
extension MarkerdClient {
    public func createLayer(_ request: V1.CreateLayerRequest, idempotencyKey: String? = nil) throws(ClientError) -> V1.Layer {
        let r: V1.CreateLayerResponse = try mutate("CreateLayer", request, idempotencyKey: idempotencyKey)
        return r.layer ?? V1.Layer()
    }

    public func getLayer(_ layerID: String) throws(ClientError) -> V1.Layer {
        var req = V1.GetLayerRequest()
        req.layerID = layerID
        let r: V1.GetLayerResponse = try call("GetLayer", req)
        return r.layer ?? V1.Layer()
    }

    /// Every layer, in order of their ids (ListLayers page by page).
    public func listLayers() throws(ClientError) -> [V1.Layer] {
        var all: [V1.Layer] = []
        var request = V1.ListLayersRequest(pageSize: 1_000)
        repeat {
            let page = try listLayers(request)
            all += page.layers
            request.pageToken = page.nextPageToken
        } while !request.pageToken.isEmpty
        return all
    }

    /// One page of layers (`page_size` 0-1000, default 100; `page_token` from the previous page).
    public func listLayers(_ request: V1.ListLayersRequest) throws(ClientError) -> V1.ListLayersResponse {
        try call("ListLayers", request)
    }

    public func deleteLayer(_ layerID: String, idempotencyKey: String? = nil) throws(ClientError) -> V1.DeleteLayerResponse {
        var req = V1.DeleteLayerRequest()
        req.layerID = layerID
        return try mutate("DeleteLayer", req, idempotencyKey: idempotencyKey)
    }

    public func layerStats(_ layerID: String) throws(ClientError) -> V1.LayerStats {
        var req = V1.GetLayerStatsRequest()
        req.layerID = layerID
        let r: V1.GetLayerStatsResponse = try call("GetLayerStats", req)
        return r.stats ?? V1.LayerStats()
    }

    public func registerIcon(_ request: V1.RegisterIconRequest, idempotencyKey: String? = nil) throws(ClientError) -> V1.RegisterIconResponse {
        try mutate("RegisterIcon", request, idempotencyKey: idempotencyKey)
    }

    public func upsertMarkers(_ layerID: String, _ markers: [V1.Marker], idempotencyKey: String? = nil) throws(ClientError) -> V1.UpsertMarkersResponse {
        try upsertMarkers(layerID, markers[...], idempotencyKey: idempotencyKey)
    }

    /// `upsertMarkers` of a slice, sent without copying the markers (a bulk load's batch of its
    /// caller's array). With `columns`, row `i` of the columns holds the attributes of
    /// `markers[i]` (the slice's own indices), encoded from the columns directly (a marker's
    /// own attributes are kept where the columns have no such key or the cell is absent).
    public func upsertMarkers(_ layerID: String, _ markers: ArraySlice<V1.Marker>, attributes columns: AttributeColumns? = nil,
                              idempotencyKey: String? = nil) throws(ClientError) -> V1.UpsertMarkersResponse {
        // Plain markers (most bulk loads) are encoded without protobuf-c, straight into the
        // transport's message: the same bytes, cheaper.
        // Their attributes are encoded into scratch bytes reused from call to call.
        let key = idempotencyKey ?? Self.newIdempotencyKey()
        let scratch = scratches.withLock { $0.popLast() } ?? EncodingScratch()
        defer { scratches.withLock { if $0.count < Self.maxPooledScratches { $0.append(scratch) } } }
        if let plain = V1.UpsertMarkersRequest.PlainEncoding(layerID: layerID, markers: markers, columns: columns, scratch: scratch) {
            return try call("UpsertMarkers", payloadCount: plain.size, layerID: layerID, idempotencyKey: key, writePayload: plain.write)
        }
        // Columns the plain path declines (a marker with attributes of its own, a NUL): merged
        // into the markers' own attributes, then sent as any markers are.
        if let columns { return try upsertMarkers(layerID, columns.merged(into: markers)[...], idempotencyKey: key) }
        return try call("UpsertMarkers", payload: V1.UpsertMarkersRequest(layerID: layerID, markers: Array(markers)).serializedBytes(),
                        idempotencyKey: key)
    }

    /// Partial updates of existing markers (UpdateMarkers): each update sets the fields its
    /// `paths` name, e.g. `V1.MarkerUpdate(id: "a", marker: V1.Marker(label: V1.MarkerLabel(text: "new")), paths: ["label.text"])`.
    public func updateMarkers(_ layerID: String, _ updates: [V1.MarkerUpdate], idempotencyKey: String? = nil) throws(ClientError) -> V1.UpdateMarkersResponse {
        try mutate("UpdateMarkers", V1.UpdateMarkersRequest(layerID: layerID, updates: updates), idempotencyKey: idempotencyKey)
    }

    public func removeMarkers(_ layerID: String, ids: [String], idempotencyKey: String? = nil) throws(ClientError) -> V1.RemoveMarkersResponse {
        var req = V1.RemoveMarkersRequest()
        req.layerID = layerID
        req.ids = ids
        return try mutate("RemoveMarkers", req, idempotencyKey: idempotencyKey)
    }

    public func getMarkers(_ layerID: String, ids: [String]) throws(ClientError) -> V1.GetMarkersResponse {
        var req = V1.GetMarkersRequest()
        req.layerID = layerID
        req.ids = ids
        return try call("GetMarkers", req)
    }

    /// One page of a layer's markers, every one (static, live, hidden) in storage order
    /// (`page_size` 0-100,000, default 1000; `page_token` from the previous page). A page may
    /// hold fewer markers than asked before the last one: only an empty `next_page_token` ends
    /// the list (`forEachMarkerPage` pages through it).
    public func listMarkers(_ request: V1.ListMarkersRequest) throws(ClientError) -> V1.ListMarkersResponse {
        try call("ListMarkers", request)
    }

    public func clearLayer(_ layerID: String, idempotencyKey: String? = nil) throws(ClientError) -> V1.ClearLayerResponse {
        var req = V1.ClearLayerRequest()
        req.layerID = layerID
        return try mutate("ClearLayer", req, idempotencyKey: idempotencyKey)
    }

    public func moveMarkers(_ layerID: String, _ moves: [V1.MarkerMove], idempotencyKey: String? = nil) throws(ClientError) -> V1.MoveMarkersResponse {
        var req = V1.MoveMarkersRequest()
        req.layerID = layerID
        req.moves = moves
        return try mutate("MoveMarkers", req, idempotencyKey: idempotencyKey)
    }

    public func queryViewport(_ request: V1.QueryViewportRequest) throws(ClientError) -> V1.QueryViewportResponse {
        try call("QueryViewport", request)
    }

    public func hitTest(_ request: V1.HitTestRequest) throws(ClientError) -> V1.HitTestResponse {
        try call("HitTest", request)
    }

    public func beginDrag(_ layerID: String, markerID: String, idempotencyKey: String? = nil) throws(ClientError) -> V1.BeginDragResponse {
        var req = V1.BeginDragRequest()
        req.layerID = layerID
        req.markerID = markerID
        return try mutate("BeginDrag", req, idempotencyKey: idempotencyKey)
    }

    public func dragTo(_ layerID: String, dragID: String, to position: V1.LatLng) throws(ClientError) {
        var req = V1.DragToRequest()
        req.layerID = layerID
        req.dragID = dragID
        req.position = position
        let _: V1.DragToResponse = try call("DragTo", req)
    }

    public func endDrag(_ layerID: String, dragID: String, at position: V1.LatLng? = nil, idempotencyKey: String? = nil) throws(ClientError) -> V1.EndDragResponse {
        var req = V1.EndDragRequest()
        req.layerID = layerID
        req.dragID = dragID
        req.position = position
        return try mutate("EndDrag", req, idempotencyKey: idempotencyKey)
    }

    public func cancelDrag(_ layerID: String, dragID: String, idempotencyKey: String? = nil) throws(ClientError) -> V1.CancelDragResponse {
        var req = V1.CancelDragRequest()
        req.layerID = layerID
        req.dragID = dragID
        return try mutate("CancelDrag", req, idempotencyKey: idempotencyKey)
    }

    public func createSnapshot() throws(ClientError) -> V1.CreateSnapshotResponse {
        try call("CreateSnapshot", V1.CreateSnapshotRequest())
    }

    public func serverInfo() throws(ClientError) -> V1.GetServerInfoResponse {
        try call("GetServerInfo", V1.GetServerInfoRequest())
    }

    /// A signed path prefix for `layerID`'s HTTP tiles, valid `ttlSeconds` (0: an hour; at most 7 days).
    public func signTileURL(_ layerID: String, ttlSeconds: UInt32 = 0) throws(ClientError) -> V1.SignTileURLResponse {
        var request = V1.SignTileURLRequest()
        request.layerID = layerID
        request.ttlSeconds = ttlSeconds
        return try call("SignTileURL", request)
    }
}

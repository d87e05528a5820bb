import MarkerdAPI
import MarkerdTransport

extension MarkerdClient {
    /// The same client's calls as `async` functions: they suspend the task instead of blocking a
    /// thread while the reply is on its way (`NNGRequestClient.asyncCall`), so a Swift backend
    /// can await many calls at once from its event loop or task groups. Cancelling the task
    /// abandons the call with `.transport(.canceled)`; the timeout, token and TLS settings are
    /// the client's.
    public var async: Async { Async(client: self) }

    /// `async` calls over one ``MarkerdClient`` (see ``MarkerdClient/async``): the generic
    /// ``call(_:_:as:idempotencyKey:timeoutMs:)`` and ``mutate(_:_:as:idempotencyKey:timeoutMs:)``,
    /// and one typed method per rpc of `service MarkerService`, taking its request message and
    /// returning its response message. Mutations take an `idempotencyKey` (a fresh random one by
    /// default: pass your own to retry a call safely).
    public struct Async: Sendable {
        public let client: MarkerdClient

        /// Calls `method` ("UpsertMarkers" or the full "/markerd.v1.MarkerService/UpsertMarkers").
        public func call<Request: ProtoMessage, Response: ProtoMessage>(
            _ method: String, _ request: Request, as _: Response.Type = Response.self,
            idempotencyKey: String = "", timeoutMs: UInt32 = 0
        ) async throws(ClientError) -> Response {
            let envelope = client.envelope(method, payload: request.serializedBytes(), idempotencyKey: idempotencyKey, timeoutMs: timeoutMs)
            let bytes = envelope.serializedBytes()
            // Cluster mode: MOVED followed and cached as in the blocking `call`.
            let layerID = MarkerdClient.layerID(method: envelope.method, payload: envelope.payload)
            var (transport, cached) = client.route(layerID)
            var hops = 0
            while true {
                let replyBytes: [UInt8]
                do {
                    replyBytes = try await transport.asyncCall(bytes, timeout: client.timeout)
                } catch {
                    guard cached else { throw .transport(error) }
                    client.forgetRoute(layerID)
                    (transport, cached) = (client.transport, false)
                    continue
                }
                switch try client.decodeReply(replyBytes, to: envelope, as: Response.self) {
                case .response(let response): return response
                case .moved(let redirect):
                    hops += 1
                    (transport, cached) = (try client.follow(redirect, hops: hops), true)
                }
            }
        }

        /// A mutation: like `call`, with an idempotency key (a fresh random one by default).
        public func mutate<Request: ProtoMessage, Response: ProtoMessage>(
            _ method: String, _ request: Request, as _: Response.Type = Response.self,
            idempotencyKey: String? = nil, timeoutMs: UInt32 = 0
        ) async throws(ClientError) -> Response {
            try await call(method, request, idempotencyKey: idempotencyKey ?? MarkerdClient.newIdempotencyKey(), timeoutMs: timeoutMs)
        }

        public func createLayer(_ r: V1.CreateLayerRequest, idempotencyKey: String? = nil) async throws(ClientError) -> V1.CreateLayerResponse {
            try await mutate("CreateLayer", r, idempotencyKey: idempotencyKey)
        }
        public func getLayer(_ r: V1.GetLayerRequest) async throws(ClientError) -> V1.GetLayerResponse { try await call("GetLayer", r) }
        public func listLayers(_ r: V1.ListLayersRequest = .init()) async throws(ClientError) -> V1.ListLayersResponse { try await call("ListLayers", r) }
        public func deleteLayer(_ r: V1.DeleteLayerRequest, idempotencyKey: String? = nil) async throws(ClientError) -> V1.DeleteLayerResponse {
            try await mutate("DeleteLayer", r, idempotencyKey: idempotencyKey)
        }
        public func getLayerStats(_ r: V1.GetLayerStatsRequest) async throws(ClientError) -> V1.GetLayerStatsResponse { try await call("GetLayerStats", r) }
        public func registerIcon(_ r: V1.RegisterIconRequest, idempotencyKey: String? = nil) async throws(ClientError) -> V1.RegisterIconResponse {
            try await mutate("RegisterIcon", r, idempotencyKey: idempotencyKey)
        }
        public func upsertMarkers(_ r: V1.UpsertMarkersRequest, idempotencyKey: String? = nil) async throws(ClientError) -> V1.UpsertMarkersResponse {
            try await mutate("UpsertMarkers", r, idempotencyKey: idempotencyKey)
        }
        public func updateMarkers(_ r: V1.UpdateMarkersRequest, idempotencyKey: String? = nil) async throws(ClientError) -> V1.UpdateMarkersResponse {
            try await mutate("UpdateMarkers", r, idempotencyKey: idempotencyKey)
        }
        public func removeMarkers(_ r: V1.RemoveMarkersRequest, idempotencyKey: String? = nil) async throws(ClientError) -> V1.RemoveMarkersResponse {
            try await mutate("RemoveMarkers", r, idempotencyKey: idempotencyKey)
        }
        public func getMarkers(_ r: V1.GetMarkersRequest) async throws(ClientError) -> V1.GetMarkersResponse { try await call("GetMarkers", r) }
        public func listMarkers(_ r: V1.ListMarkersRequest) async throws(ClientError) -> V1.ListMarkersResponse { try await call("ListMarkers", r) }
        public func clearLayer(_ r: V1.ClearLayerRequest, idempotencyKey: String? = nil) async throws(ClientError) -> V1.ClearLayerResponse {
            try await mutate("ClearLayer", r, idempotencyKey: idempotencyKey)
        }
        public func moveMarkers(_ r: V1.MoveMarkersRequest, idempotencyKey: String? = nil) async throws(ClientError) -> V1.MoveMarkersResponse {
            try await mutate("MoveMarkers", r, idempotencyKey: idempotencyKey)
        }
        public func queryViewport(_ r: V1.QueryViewportRequest) async throws(ClientError) -> V1.QueryViewportResponse { try await call("QueryViewport", r) }
        public func hitTest(_ r: V1.HitTestRequest) async throws(ClientError) -> V1.HitTestResponse { try await call("HitTest", r) }
        public func beginDrag(_ r: V1.BeginDragRequest, idempotencyKey: String? = nil) async throws(ClientError) -> V1.BeginDragResponse {
            try await mutate("BeginDrag", r, idempotencyKey: idempotencyKey)
        }
        public func dragTo(_ r: V1.DragToRequest) async throws(ClientError) -> V1.DragToResponse { try await call("DragTo", r) }
        public func endDrag(_ r: V1.EndDragRequest, idempotencyKey: String? = nil) async throws(ClientError) -> V1.EndDragResponse {
            try await mutate("EndDrag", r, idempotencyKey: idempotencyKey)
        }
        public func cancelDrag(_ r: V1.CancelDragRequest, idempotencyKey: String? = nil) async throws(ClientError) -> V1.CancelDragResponse {
            try await mutate("CancelDrag", r, idempotencyKey: idempotencyKey)
        }
        public func getTile(_ r: V1.GetTileRequest) async throws(ClientError) -> V1.GetTileResponse { try await call("GetTile", r) }
        public func renderSnapshot(_ r: V1.RenderSnapshotRequest) async throws(ClientError) -> V1.RenderSnapshotResponse { try await call("RenderSnapshot", r) }
        public func getClusters(_ r: V1.GetClustersRequest) async throws(ClientError) -> V1.GetClustersResponse { try await call("GetClusters", r) }
        public func getClusterLeaves(_ r: V1.GetClusterLeavesRequest) async throws(ClientError) -> V1.GetClusterLeavesResponse {
            try await call("GetClusterLeaves", r)
        }
        public func getClusterChildren(_ r: V1.GetClusterChildrenRequest) async throws(ClientError) -> V1.GetClusterChildrenResponse {
            try await call("GetClusterChildren", r)
        }
        public func getClusterExpansionZoom(_ r: V1.GetClusterExpansionZoomRequest) async throws(ClientError) -> V1.GetClusterExpansionZoomResponse {
            try await call("GetClusterExpansionZoom", r)
        }
        public func getPointTile(_ r: V1.GetPointTileRequest) async throws(ClientError) -> V1.GetPointTileResponse { try await call("GetPointTile", r) }
        public func createSnapshot(_ r: V1.CreateSnapshotRequest = .init()) async throws(ClientError) -> V1.CreateSnapshotResponse {
            try await call("CreateSnapshot", r)
        }
        public func getServerInfo(_ r: V1.GetServerInfoRequest = .init()) async throws(ClientError) -> V1.GetServerInfoResponse {
            try await call("GetServerInfo", r)
        }
        public func signTileURL(_ r: V1.SignTileURLRequest) async throws(ClientError) -> V1.SignTileURLResponse { try await call("SignTileURL", r) }
    }
}

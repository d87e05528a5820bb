import MarkerdAPI
import MarkerdService

/// The method table: every rpc of `service MarkerService` in Protos/markerd/v1/markerd.proto,
/// bound to the service. Mutations are listed by ``MutationKind``.
enum MethodTable {
    static func routes(for service: MarkerService, access: AccessControl) -> [String: Route] {
        var routes: [String: Route] = [:]
        /// A read whose body returns the encoded response.
        func readEncoded<Req: ProtoMessage>(
            _ name: String, _ type: Req.Type,
            _ body: @escaping @Sendable (Req, CallContext) throws(RPCError) -> [UInt8]
        ) {
            routes[RPCDispatcher.servicePrefix + name] = .read { (bytes, context) throws(RPCError) -> [UInt8] in
                let request: Req
                do {
                    request = try Req(serializedBytes: bytes)
                } catch {
                    throw .invalidArgument("undecodable \(name) payload (\(bytes.count) bytes): \(error)")
                }
                return try body(request, context)
            }
        }
        func read<Req: ProtoMessage, Resp: ProtoMessage>(
            _ name: String, _ type: Req.Type,
            _ body: @escaping @Sendable (Req, CallContext) throws(RPCError) -> Resp
        ) {
            readEncoded(name, type) { (r, context) throws(RPCError) in try body(r, context).serializedBytes() }
        }
        read("GetLayer", V1.GetLayerRequest.self) { r, _ throws(RPCError) in try service.getLayer(r) }
        read("ListLayers", V1.ListLayersRequest.self) { r, context throws(RPCError) in
            var response = try service.listLayers(r)
            if let mayRead = context.mayRead { response.layers.removeAll { !mayRead($0.id) } }
            return response
        }
        read("GetLayerStats", V1.GetLayerStatsRequest.self) { r, _ throws(RPCError) in try service.getLayerStats(r) }
        read("GetMarkers", V1.GetMarkersRequest.self) { r, _ throws(RPCError) in try service.getMarkers(r) }
        read("ListMarkers", V1.ListMarkersRequest.self) { r, _ throws(RPCError) in try service.listMarkers(r) }
        read("GetChanges", V1.GetChangesRequest.self) { r, _ throws(RPCError) in try service.getChanges(r) }
        readEncoded("QueryViewport", V1.QueryViewportRequest.self) { r, _ throws(RPCError) in try service.queryViewportPayload(r) }
        read("HitTest", V1.HitTestRequest.self) { r, _ throws(RPCError) in try service.hitTest(r) }
        read("DragTo", V1.DragToRequest.self) { r, _ throws(RPCError) in try service.dragTo(r) }
        readEncoded("GetClusters", V1.GetClustersRequest.self) { r, _ throws(RPCError) in try service.getClustersPayload(r) }
        read("GetClusterLeaves", V1.GetClusterLeavesRequest.self) { r, _ throws(RPCError) in try service.getClusterLeaves(r) }
        read("GetClusterChildren", V1.GetClusterChildrenRequest.self) { r, _ throws(RPCError) in try service.getClusterChildren(r) }
        read("GetClusterExpansionZoom", V1.GetClusterExpansionZoomRequest.self) { r, _ throws(RPCError) in
            try service.getClusterExpansionZoom(r)
        }
        read("GetPointTile", V1.GetPointTileRequest.self) { r, _ throws(RPCError) in try service.getPointTile(r) }
        read("GetTile", V1.GetTileRequest.self) { r, _ throws(RPCError) in try service.getTile(r) }
        read("RenderSnapshot", V1.RenderSnapshotRequest.self) { r, _ throws(RPCError) in try service.renderSnapshot(r) }
        read("GetServerInfo", V1.GetServerInfoRequest.self) { r, _ throws(RPCError) in service.getServerInfo(r) }
        read("CreateSnapshot", V1.CreateSnapshotRequest.self) { r, _ throws(RPCError) in try service.createSnapshot(r) }
        read("ListFences", V1.ListFencesRequest.self) { r, _ throws(RPCError) in try service.listFences(r) }
        read("SignTileURL", V1.SignTileURLRequest.self) { r, _ throws(RPCError) in try access.signTileURL(r, service: service) }
        for kind in MutationKind.allCases {
            routes[kind.methodName] = .mutation(kind)
        }
        return routes
    }
}

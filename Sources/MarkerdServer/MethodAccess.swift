import MarkerdAPI
import MarkerdAuth

/// What each rpc needs from a token (`--auth-file`): a scope and, for the methods whose request
/// names a layer (field 1, `layer_id`), a layer pattern of the token that matches that layer.
///
/// read: queries, tiles, hit-tests, clusters, stats, server info, signed tile URLs, fence lists
/// (ListLayers answers only the layers the token may read). write: markers, drags, fences, icons (icons are shared
/// by every layer but immutable once registered, so no layer). admin: creating and deleting
/// layers, snapshots of the data.
/// A method missing here is refused to every token (PERMISSION_DENIED): new methods fail closed
/// until they are listed (`MethodAccessTests` checks every rpc of the .proto is).
struct MethodAccess: Sendable, Equatable {
    let scope: Scopes
    /// Whether the request names a layer in field 1 (from the descriptors, not a list here).
    let layerScoped: Bool
    /// Counted against a token's `expensive=` quota on the worker threads: renders, tiles,
    /// clusters, viewport and marker pages, snapshots (network-thread answers are bounded and never count).
    var expensive = false

    /// Written to the audit log (write and admin calls).
    var audited: Bool { scope != .read }

    static let scopes: [String: Scopes] = [
        "GetLayer": .read, "ListLayers": .read, "GetLayerStats": .read, "GetMarkers": .read, "ListMarkers": .read,
        "GetChanges": .read,
        "QueryViewport": .read, "HitTest": .read, "GetTile": .read, "RenderSnapshot": .read,
        "GetClusters": .read, "GetClusterLeaves": .read, "GetClusterChildren": .read,
        "GetClusterExpansionZoom": .read, "GetPointTile": .read, "GetServerInfo": .read, "SignTileURL": .read,
        "RegisterIcon": .write, "UpsertMarkers": .write, "UpdateMarkers": .write, "RemoveMarkers": .write, "ClearLayer": .write,
        "MoveMarkers": .write, "BeginDrag": .write, "DragTo": .write, "EndDrag": .write, "CancelDrag": .write,
        "CreateFence": .write, "DeleteFence": .write, "ListFences": .read,
        "CreateLayer": .admin, "DeleteLayer": .admin, "CreateSnapshot": .admin,
    ]

    static let expensiveMethods: Set<String> = [
        "GetTile", "RenderSnapshot", "GetPointTile", "GetClusters", "GetClusterLeaves", "QueryViewport", "ListMarkers",
        "GetChanges",
        "CreateSnapshot",
    ]

    /// Full method name -> access, for every rpc of `service MarkerService` listed in ``scopes``.
    static let table: [String: MethodAccess] = {
        var table: [String: MethodAccess] = [:]
        for method in ProtoSchema.methods {
            guard let scope = scopes[method.name] else { continue }
            table[method.path] = MethodAccess(scope: scope, layerScoped: method.namesLayer,
                                              expensive: expensiveMethods.contains(method.name))
        }
        return table
    }()
}

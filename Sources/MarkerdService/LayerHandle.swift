import MarkerdAPI
import MarkerdCore

/// One layer and the lock that guards it. Queries take the read lock; mutations of the layer
/// take the write lock, so writes to one layer are serialized and different layers never block
/// each other.
final class LayerHandle: @unchecked Sendable {
    let id: String
    let lock = ReadWriteLock()
    /// Guarded by `lock`.
    var layer: MarkerLayer
    /// Options as given at creation with every default filled in. Guarded by `lock`.
    var options: V1.LayerOptions
    /// Set (under the write lock) when the layer is deleted: a writer that looked the handle up
    /// before the delete finds it and answers NOT_FOUND instead of writing into a dead layer.
    var deleted = false
    /// Supercluster snapshot and rebuild state (MarkerService+Clusters.swift); has its own lock.
    let clusterState = ClusterState()
    /// Whether the layer's clustering is supercluster, whose clusters depend on the order of its
    /// input (the layer's slot order): bulk upserts then keep the order given instead of
    /// numbering new slots in spatial order (`MarkerLayer.upsert(_:now:spatialSlots:)`), so the
    /// clusters are supercluster's on the markers in the order they were loaded. Guarded by `lock`.
    var clustersInSlotOrder: Bool { options.clustering?.algorithm == .supercluster }
    /// Raster-tile versions (see `TileVersions`). Guarded by `lock`.
    var tileVersions: TileVersions
    /// Label placements per pixel zoom (labelled layers only; see `LabelPlacements`).
    let labels = LabelPlacements()
    /// `layer.idHashSeed` (fixed for the layer's life), readable without the lock: bulk upserts
    /// hash their ids before taking it (`MarkerBatch.prepareLayout`).
    let idHashSeed: UInt64
    /// The layer's recent changes, for GetChanges (see `ChangeHistory`). Guarded by `lock`.
    var changes: ChangeHistory
    /// The layer's fences and the markers inside each (see `FenceSet`). Guarded by `lock`.
    var fences = FenceSet()
    /// Each fence as created (`CreateFenceRequest.fence`, layer_id filled in), by id. Guarded by `lock`.
    var fenceDefinitions: [String: V1.Fence] = [:]

    /// - Parameter history: the bounds of `changes` (`ServiceConfiguration.changeHistoryCount`, `changeHistoryBytes`).
    init(id: String, layer: MarkerLayer, options: V1.LayerOptions, history: (count: Int, bytes: Int)) {
        self.id = id
        self.changes = ChangeHistory(floor: layer.version, maxCount: history.count, maxBytes: history.bytes)
        self.layer = layer
        self.idHashSeed = layer.idHashSeed
        self.options = options
        self.tileVersions = TileVersions(base: layer.version)
    }

    /// The API view of the layer. Call under a lock.
    func apiLayer(nowUnixMs: Int64) -> V1.Layer {
        var l = V1.Layer()
        l.id = id
        l.options = options
        l.version = layer.version
        l.mode = layer.mode(now: nowUnixMs) == .tiled ? .tiled : .native
        l.markerCount = UInt64(layer.count)
        return l
    }

    /// Turns markers whose animation has ended static, if any are due (takes the write lock
    /// only then). Queries call this first so that the tiling mode follows the server's clock
    /// without a request having to change anything. The new version is covered by `versions`
    /// first (an expiry is not journaled).
    /// - Throws: UNAVAILABLE when the new version cannot be covered (`VersionCeiling.cover`);
    ///   then nothing changed.
    func expireAnimationsIfDue(nowUnixMs: Int64, _ versions: VersionCeiling, measurer: some LabelMeasurer) throws(RPCError) {
        let due = lock.withReadLock { layer.nextAnimationEnd.map { $0 <= nowUnixMs } ?? false }
        if due {
            try lock.withWriteLock { () throws(RPCError) in
                guard layer.nextAnimationEnd.map({ $0 <= nowUnixMs }) ?? false else { return }
                try versions.cover(layer.version + 1)
                let footprints = layer.dueAnimationFootprints(now: nowUnixMs)
                let turningStatic = layer.labelStyle.enabled ? layer.dueAnimationSlots(now: nowUnixMs) : []
                if layer.expireAnimations(now: nowUnixMs) > 0 {
                    markTiles(footprints)
                    // Markers that turned static may take labels (and push others).
                    markLabelTiles(labels.update(layer: layer, changed: turningStatic, measurer: measurer, now: nowUnixMs))
                }
            }
        }
    }
}

enum LayerOptionsResolution {
    /// Fills in every default of `options` and checks it.
    static func resolve(_ options: V1.LayerOptions?) throws(RPCError) -> (api: V1.LayerOptions, tiling: TilingOptions, labels: LabelStyle) {
        var api = options ?? V1.LayerOptions()
        var t = api.tiling ?? V1.TilingOptions()
        t.enabled = t.enabled ?? true
        t.minMarkerCount = t.minMarkerCount ?? 2000
        t.tileSize = t.tileSize ?? 256
        t.debugOverlay = t.debugOverlay ?? false
        guard t.tileSize == 256 || t.tileSize == 512 else {
            throw .invalidArgument("options.tiling.tile_size \(t.tileSize!) is not 256 or 512", field: "options.tiling.tile_size")
        }
        api.tiling = t
        var c = api.clustering ?? V1.ClusteringOptions()
        c.enabled = c.enabled ?? false
        c.radiusPx = c.radiusPx ?? 60
        c.minPoints = c.minPoints ?? 2
        c.maxZoom = c.maxZoom ?? 16
        c.extent = c.extent ?? 512
        if c.algorithm ?? .unspecified == .unspecified { c.algorithm = .grid }
        c.raster = c.raster ?? false
        guard c.radiusPx!.isFinite, c.radiusPx! > 0, c.radiusPx! <= 1024 else {
            throw .invalidArgument("options.clustering.radius_px \(c.radiusPx!) must be within (0, 1024]", field: "options.clustering.radius_px")
        }
        try LayerClustering.validate(c)
        api.clustering = c
        api.pointTile = try PointTileBudget.resolve(api.pointTile)
        let labels: LabelStyle
        (api.labels, labels) = try LabelConversion.resolve(api.labels)
        let tiling = TilingOptions(enabled: t.enabled!, minMarkerCount: t.minMarkerCount!, tileSize: Int(t.tileSize!))
        return (api, tiling, labels)
    }
}

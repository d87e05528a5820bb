import MarkerdAPI
import MarkerdCore

// GetPointTile: point-data (Mapbox Vector Tile 2.1) tiles of a layer's visible static markers,
// clustered or not.
//
// Tile version: for now the layer version (supercluster clustered tiles: the snapshot's layer
// version), so any change of the layer changes every tile's version. The raster tiles will get
// per-tile versions; point tiles should switch to the same scheme then.

extension MarkerService {
    /// Buffer around point tiles, as a fraction of the tile side (64 units of 4096).
    static let pointTileBuffer = 1.0 / 64

    /// Property names markerd sets itself; marker attributes with these names are left out.
    static let reservedTileKeys: Set<String> = ["id", "cluster", "cluster_id", "point_count", "point_count_abbreviated"]

    /// GetPointTile: an MVT with one layer "markers" of POINT features in tile z/x/y (with a buffer
    /// of 1/64 of the tile): visible static markers (feature id = the marker's slot, property `id` =
    /// its string id, attributes as string properties), or with `clustered` the layer's clusters at
    /// zoom z (`cluster=true`, `cluster_id`, `point_count`, `point_count_abbreviated`; feature id =
    /// cluster id) and its unclustered markers. `known_version` equal to the tile's version ->
    /// `not_modified` and no bytes.
    public func getPointTile(_ r: V1.GetPointTileRequest) throws(RPCError) -> V1.GetPointTileResponse {
        let z = Int(r.z), x = Int(r.x), y = Int(r.y)
        try Self.checkTile(z: z, x: x, y: y)
        let extent = Int(r.extent ?? 4096)
        guard extent >= 16 && extent <= 65536 else { throw .invalidArgument("extent \(extent) is not within 16...65536") }
        let h = try handle(r.layerID)
        let config = clusterConfig(h)
        // Cheap version check first.
        if r.knownVersion != 0 {
            try h.expireAnimationsIfDue(nowUnixMs: Self.nowUnixMs(), versions)
            let version: UInt64
            if r.clustered && config.algorithm == .supercluster {
                version = try superclusterSnapshot(h, config.supercluster).layerVersion
            } else {
                version = h.lock.withReadLock { h.layer.version }
            }
            if version == r.knownVersion { return V1.GetPointTileResponse(mvt: [], version: version, notModified: true) }
        }
        let tile: ClusterTile
        if r.clustered {
            tile = try clusterTile(layerID: r.layerID, z: z, x: x, y: y, buffer: Self.pointTileBuffer)
        } else {
            tile = try staticMarkersTile(h, config, z: z, x: x, y: y, buffer: Self.pointTileBuffer)
        }
        let layer = Self.vectorLayer(tile, z: z, x: x, y: y, extent: extent)
        return V1.GetPointTileResponse(mvt: layer.encodedTile(), version: tile.layerVersion, notModified: false)
    }

    /// The visible static markers whose position lies in the tile grown by `buffer` (uses the grid
    /// cluster index above its max zoom: exact points, in cell order).
    func staticMarkersTile(_ h: LayerHandle, _ config: ClusterConfig, z: Int, x: Int, y: Int, buffer: Double) throws(RPCError) -> ClusterTile {
        ensureGridClusters(h, config.grid)
        let box = MarkerLayer.tileBox(z: z, x: x, y: y, buffer: buffer)
        return try read(h.id) { (h, _) throws(RPCError) in
            guard let items = h.layer.gridClusterItems(in: box, zoom: config.grid.maxZoom + 1) else {
                throw .unavailable("clusters are being rebuilt; retry")
            }
            var out: [ClusterTileItem] = []
            out.reserveCapacity(items.count)
            for case .marker(let slot, let m) in items { out.append(.marker(slot: slot, m)) }
            return ClusterTile(layerVersion: h.layer.version, algorithm: "none", items: out)
        }
    }

    /// Tile coordinates of a world point in tile z/x/y with `extent` units (x taken across the
    /// antimeridian when that is nearer the tile).
    static func tileCoordinates(_ p: WorldPoint, z: Int, x: Int, y: Int, extent: Int) -> (Int32, Int32) {
        let side = Double(UInt64(1) << UInt64(32 - z))
        let x0 = Double(x) * side, y0 = Double(y) * side
        var dx = Double(p.x) - x0 - side / 2
        let world = 4_294_967_296.0
        if dx >= world / 2 { dx -= world } else if dx < -world / 2 { dx += world }
        dx += side / 2
        let dy = Double(p.y) - y0
        let scale = Double(extent) / side
        return (Int32((dx * scale).rounded(.down)), Int32((dy * scale).rounded(.down)))
    }

    static func vectorLayer(_ tile: ClusterTile, z: Int, x: Int, y: Int, extent: Int) -> VectorTilePointLayer {
        var layer = VectorTilePointLayer(name: "markers", extent: UInt32(extent))
        layer.features.reserveCapacity(tile.items.count)
        for item in tile.items {
            let (tx, ty) = tileCoordinates(item.position, z: z, x: x, y: y, extent: extent)
            switch item {
            case .cluster(let id, let count, _):
                layer.features.append(.init(id: id, x: tx, y: ty, properties: [
                    ("cluster", .bool(true)), ("cluster_id", .uint(id)), ("point_count", .uint(UInt64(count))),
                    ("point_count_abbreviated", .string(SuperclusterFeature.abbreviate(count))),
                ]))
            case .marker(let slot, let m):
                var props: [(key: String, value: VectorTilePointLayer.Value)] = [("id", .string(m.id))]
                for k in m.attributes.keys.sorted() where !reservedTileKeys.contains(k) {
                    props.append((k, .string(m.attributes[k]!)))
                }
                layer.features.append(.init(id: UInt64(slot), x: tx, y: ty, properties: props))
            }
        }
        return layer
    }
}

extension SuperclusterFeature {
    /// supercluster's `point_count_abbreviated` for a count: "16", "1.2k", "35k".
    static func abbreviate(_ count: Int) -> String {
        func jsRound(_ x: Double) -> Int { Int((x + 0.5).rounded(.down)) }
        if count >= 10000 { return "\(jsRound(Double(count) / 1000))k" }
        if count >= 1000 {
            let tenths = jsRound(Double(count) / 100)
            return tenths % 10 == 0 ? "\(tenths / 10)k" : "\(tenths / 10).\(tenths % 10)k"
        }
        return "\(count)"
    }
}

import MarkerdAPI
import MarkerdCore
import MarkerdRender

// GetTile for layers with `clustering.raster` (and `clustering.enabled`): clusters drawn as count
// bubbles, unclustered markers as their sprites (`TileRenderer.renderClusterTile`).

extension MarkerService {
    /// True when the layer's tiles show cluster bubbles: `clustering.enabled` and `clustering.raster`.
    static func rastersClusters(_ options: V1.LayerOptions) -> Bool {
        options.clustering?.enabled == true && options.clustering?.raster == true
    }

    /// GetTile of a raster-clustered layer, or nil when the layer does not cluster its tiles.
    ///
    /// The version is the layer version the clusters reflect (grid: the current one;
    /// supercluster: the snapshot's, so the tile changes when the background rebuild lands).
    /// Cached like other tiles, by that version. Conservative on purpose: a cluster raster
    /// tile's pixels depend on the clusters, and a cluster (its count, position, or whether it
    /// exists at all) can change with an update far outside the icon extents that
    /// `TileVersions.mark(_:seq:)` tracks - a marker joining a cluster whose centre lies in
    /// another tile moves that centre, or splits a group into markers. So every change of the
    /// layer gives every tile a new version (allowed: a version may change when the pixels did
    /// not; never the other way round). Layer versions never repeat (`VersionCeiling`), and
    /// options never change for a layer instance, so these versions never meet per-tile
    /// versions of other images.
    func clusterRasterTile(_ r: V1.GetTileRequest, tile: TileID, density: Int) throws(RPCError) -> V1.GetTileResponse? {
        let h = try handle(r.layerID)
        let setup = h.lock.withReadLock { () -> (on: Bool, size: Int, overlay: Bool, reach: Double, gridVersion: UInt64?) in
            let e = h.layer.styles.maxExtents
            let reach = max(e.left, e.right, e.up, e.down, ClusterBubble.maxRadiusPx) + TileRenderer.marginPx
            let grid = h.options.clustering?.algorithm != .supercluster
            return (Self.rastersClusters(h.options), r.tileSize == 0 ? h.layer.options.tileSize : Int(r.tileSize),
                    h.options.tiling?.debugOverlay ?? false, reach, grid ? h.layer.version : nil)
        }
        guard setup.on else { return nil }
        // Grid clusters follow every update, so the current layer version is the one the clusters
        // would reflect: answer `not_modified` without computing them.
        if let v = setup.gridVersion, r.knownVersion == v {
            var response = V1.GetTileResponse()
            response.version = v
            response.notModified = true
            return response
        }
        // Items whose bubble or icon can reach into the tile: the tile grown by the largest reach
        // (px at density 1 over tile sides of `size` px).
        let ct = try clusterTile(layerID: r.layerID, z: tile.z, x: Int(tile.x), y: Int(tile.y),
                                 buffer: setup.reach / Double(setup.size))
        let version = ct.layerVersion
        var response = V1.GetTileResponse()
        response.version = version
        if r.knownVersion == version {
            response.notModified = true
            return response
        }
        let key = TileCache.Key(layer: h.id, z: tile.z, x: tile.x, y: tile.y, tileSize: setup.size,
                                density: density, version: version)
        let rendered = try tileCache.tile(key) { () throws(RPCError) -> TileCache.Tile in
            let items: [ClusterRasterItem] = ct.items.map { item in
                switch item {
                case .cluster(_, let count, let p): .cluster(count: count, position: p)
                case .marker(_, let m): .marker(id: m.id, position: WorldPoint(m.position), style: m.style, zIndex: m.zIndex)
                }
            }
            do {
                let t = try tileRenderer.renderClusterTile(items, tile: tile, tileSize: setup.size, density: density,
                                                           debugOverlay: setup.overlay)
                return TileCache.Tile(png: t.png, empty: t.empty)
            } catch {
                throw .internal("rendering cluster tile \(tile.z)/\(tile.x)/\(tile.y) failed: \(error)")
            }
        }
        response.png = rendered.png
        response.empty = rendered.empty
        return response
    }
}

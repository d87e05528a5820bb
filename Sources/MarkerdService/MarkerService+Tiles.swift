import MarkerdAPI
import MarkerdCore
import MarkerdRender

extension MarkerService {
    /// Largest RenderSnapshot image side in device px (width or height times density).
    public static let maxSnapshotSide = 4096

    /// GetTile: the raster tile (z, x, y) of a layer's static markers as PNG, and its version.
    ///
    /// - z 0...22, x and y within 0..<2^z, tile_size 256 or 512 (0: the layer's), density 1, 2 or 3
    ///   (0: 1); anything else is INVALID_ARGUMENT. Unknown layer: NOT_FOUND.
    /// - `version` changes if and only if something that can change the tile's pixels changed
    ///   (see `TileVersions`); when `known_version` equals it the reply is `not_modified` without a PNG.
    /// - A tile no marker touches is the shared transparent PNG (`TransparentTile`) with `empty` set.
    /// - Tiles are drawn in every tiling mode (a NATIVE layer's tiles show its static markers too),
    ///   cached by (layer, z, x, y, size, density, version) in `tileCache`.
    /// - Layers with `clustering.enabled` and `clustering.raster` draw clusters as count bubbles and
    ///   unclustered markers as their sprites (`clusterRasterTile`). Their tile version is the layer
    ///   version (mixed): clusters can change with updates further away than the icon extents, so
    ///   every change of the layer renews every tile (conservative).
    public func getTile(_ r: V1.GetTileRequest) throws(RPCError) -> V1.GetTileResponse {
        let (tile, density) = try Self.tileRequest(r)
        if let clustered = try clusterRasterTile(r, tile: tile, density: density) { return clustered }
        return try read(r.layerID) { (h, now) throws(RPCError) in
            // A labelled tile's version depends on its zoom's placement being kept (`LabelPlacements`).
            let size = r.tileSize == 0 ? h.layer.options.tileSize : Int(r.tileSize)
            let labelled = Self.labelsShown(h, z: tile.z)
            if labelled { h.labels.prepare(LabelPlacements.pixelZoom(z: tile.z, tileSize: size), layer: h.layer, measurer: labelText, now: now) }
            let (key, notModified) = Self.tileKey(r, h, tile: tile, density: density)
            if let notModified { return notModified }
            let overlay = h.options.tiling?.debugOverlay ?? false
            let rendered = try tileCache.tile(key) { () throws(RPCError) -> TileCache.Tile in
                do {
                    if labelled {
                        return try renderLabelledTile(h, tile: tile, tileSize: size, density: density, now: now)
                    }
                    if !overlay, let kept = try renderKeptTile(h, tile: tile, tileSize: key.tileSize, density: density, now: now) {
                        return kept
                    }
                    let t = try tileRenderer.renderTile(h.layer, tile: tile, tileSize: key.tileSize, density: density,
                                                        now: now, debugOverlay: overlay)
                    tileRenders.fromScratch.add(1, ordering: .relaxed)
                    return TileCache.Tile(png: t.png, empty: t.empty)
                } catch {
                    throw .internal("rendering tile \(tile.z)/\(tile.x)/\(tile.y) failed: \(error)")
                }
            }
            return Self.tileResponse(key, rendered)
        }
    }

    /// GetTile's checks: the tile and the density, or INVALID_ARGUMENT.
    static func tileRequest(_ r: V1.GetTileRequest) throws(RPCError) -> (tile: TileID, density: Int) {
        guard r.z <= 22 else { throw .invalidArgument("z \(r.z) is not within 0...22", field: "z") }
        let n = UInt64(1) << UInt64(r.z)
        guard UInt64(r.x) < n, UInt64(r.y) < n else {
            throw .invalidArgument("tile \(r.z)/\(r.x)/\(r.y): x and y must be within 0...\(n - 1) at z \(r.z)", field: r.x >= n ? "x" : "y")
        }
        guard r.tileSize == 0 || r.tileSize == 256 || r.tileSize == 512 else {
            throw .invalidArgument("tile_size \(r.tileSize) is not 256 or 512", field: "tile_size")
        }
        return (TileID(z: Int(r.z), x: r.x, y: r.y)!, Int(try Self.density(r.density)))
    }

    /// Under the layer's read lock: the cache key of the tile's current version, and the
    /// `not_modified` reply when `known_version` is that version.
    /// `labelFloor`: the label placements' floor of the tile's zoom when the caller read it
    /// already (`LabelPlacements.keptFloor`); nil reads it here.
    static func tileKey(_ r: V1.GetTileRequest, _ h: LayerHandle, tile: TileID, density: Int, labelFloor: UInt64? = nil)
        -> (key: TileCache.Key, notModified: V1.GetTileResponse?) {
        let size = r.tileSize == 0 ? h.layer.options.tileSize : Int(r.tileSize)
        var version = h.tileVersions.version(z: tile.z, x: tile.x, y: tile.y)
        if labelsShown(h, z: tile.z) {
            version = max(version, labelFloor ?? h.labels.floor(LabelPlacements.pixelZoom(z: tile.z, tileSize: size)))
        }
        let key = TileCache.Key(layer: h.id, z: tile.z, x: tile.x, y: tile.y, tileSize: size, density: density, version: version)
        guard r.knownVersion == version else { return (key, nil) }
        var response = V1.GetTileResponse()
        response.version = version
        response.notModified = true
        return (key, response)
    }

    static func tileResponse(_ key: TileCache.Key, _ tile: TileCache.Tile) -> V1.GetTileResponse {
        var response = V1.GetTileResponse()
        response.version = key.version
        response.png = tile.png
        response.empty = tile.empty
        return response
    }

    /// GetTile when it can be answered at once: the tile is in the cache (or `known_version` is
    /// current), the layer's read lock is free, no animation is due to end, and the layer does
    /// not draw clusters. Never waits for a lock or renders, so the server may call it on its
    /// network thread; nil means "use `getTile`" (which also answers every error). The reply
    /// equals `getTile`'s.
    public func cachedTile(_ r: V1.GetTileRequest) -> V1.GetTileResponse? {
        guard let checked = try? Self.tileRequest(r), let h = try? handle(r.layerID) else { return nil }
        let now = nowUnixMs()
        let found = h.lock.withReadLockIfFree { () -> (key: TileCache.Key, notModified: V1.GetTileResponse?)? in
            guard !h.deleted, !Self.rastersClusters(h.options), h.layer.nextAnimationEnd.map({ $0 > now }) ?? true else { return nil }
            // A labelled zoom whose placement is not kept yet (or busy) is `getTile`'s.
            var labelFloor: UInt64? = nil
            if Self.labelsShown(h, z: checked.tile.z) {
                let size = r.tileSize == 0 ? h.layer.options.tileSize : Int(r.tileSize)
                guard let f = h.labels.keptFloor(LabelPlacements.pixelZoom(z: checked.tile.z, tileSize: size)) else { return nil }
                labelFloor = f
            }
            return Self.tileKey(r, h, tile: checked.tile, density: checked.density, labelFloor: labelFloor)
        }
        guard let current = found ?? nil else { return nil }
        if let notModified = current.notModified { return notModified }
        return tileCache.hit(current.key).map { Self.tileResponse(current.key, $0) }
    }

    /// RenderSnapshot: one PNG of the layer's static markers in a view (like a map SDK's snapshot,
    /// markers only, transparent background): centred on `center` at a fractional `zoom` (0...22),
    /// `width x height` px at density 1 (each 1...4096, and times `density` at most 4096 device px).
    /// Not cached. INVALID_ARGUMENT for a missing or invalid centre, zoom, size or density.
    public func renderSnapshot(_ r: V1.RenderSnapshotRequest) throws(RPCError) -> V1.RenderSnapshotResponse {
        guard let center = MarkerConversion.latLng(r.center) else { throw .invalidArgument("center is missing", field: "center") }
        guard center.isValid else { throw .invalidArgument("center \(center) is not a valid position", field: "center") }
        guard r.zoom.isFinite, r.zoom >= 0, r.zoom <= 22 else { throw .invalidArgument("zoom \(r.zoom) is not within 0...22", field: "zoom") }
        let density = Int(try Self.density(r.density))
        guard r.width >= 1, r.height >= 1, Int(r.width) * density <= Self.maxSnapshotSide,
              Int(r.height) * density <= Self.maxSnapshotSide else {
            throw .invalidArgument("snapshot size \(r.width)x\(r.height) at density \(density) is not within 1...\(Self.maxSnapshotSide) device px per side",
                                   field: r.width >= 1 && Int(r.width) * density <= Self.maxSnapshotSide ? "height" : "width")
        }
        let view = RasterView.snapshot(center: center, zoom: r.zoom, width: Int(r.width), height: Int(r.height), density: density)
        return try read(r.layerID) { (h, now) throws(RPCError) in
            let raster: RenderedRaster
            do {
                // Labels at whole zooms only: a placement belongs to one zoom (of 256 px tiles).
                if Self.labelsShown(h, z: Int(r.zoom)), r.zoom == r.zoom.rounded(.down) {
                    raster = try renderLabelled(h, view: view, pixelZoom: Int(r.zoom), now: now)
                } else {
                    raster = try tileRenderer.render(h.layer, view: view, now: now)
                }
            } catch {
                throw .internal("rendering the snapshot failed: \(error)")
            }
            var response = V1.RenderSnapshotResponse()
            response.png = raster.canvas.encodePNG()
            response.layerVersion = h.layer.version
            response.drawnCount = UInt64(raster.markers)
            return response
        }
    }
}

import MarkerdCore

/// One thing drawn into a cluster raster tile (`TileRenderer.renderClusterTile`).
public enum ClusterRasterItem: Sendable {
    /// An unclustered static marker, drawn as its normal sprite.
    case marker(id: String, position: WorldPoint, style: IconStyle, zIndex: Int32)
    /// A cluster of `count` markers at `position`, drawn as a `ClusterBubble`.
    case cluster(count: Int, position: WorldPoint)
}

extension TileRenderer {
    /// Draws a tile of a layer with raster clustering: unclustered markers as their sprites,
    /// clusters as count bubbles (`ClusterBubble`, sprites from `bubbles`).
    ///
    /// Draw order: first every marker, in the shared draw order (z-index, then south over north
    /// by world y, then id bytes), then every bubble on top of them, south over north (world y,
    /// then x), so a bubble is never hidden by a marker. Every world copy (-1, 0, 1) of an item
    /// is drawn, left to right. Positions round exactly as in `render(_:view:now:)`, so a tile
    /// holding only unclustered markers has the same pixels as the plain tile.
    ///
    /// `items` must hold every item whose sprite can touch the tile (the caller grows the tile by
    /// the largest icon or bubble reach). Empty tiles are the shared `TransparentTile` PNG.
    /// Throws when a pin or bubble sprite cannot be drawn.
    public func renderClusterTile(_ items: [ClusterRasterItem], tile: TileID, tileSize: Int, density: Int,
                                  bubbles: ClusterBubbleCache = .shared, debugOverlay: Bool = false)
        throws(RenderError) -> (png: [UInt8], empty: Bool, markers: Int) {
        let view = RasterView.tile(tile, tileSize: tileSize, density: density)
        var markers: [(id: String, p: WorldPoint, style: IconStyle, z: Int32)] = []
        var clusters: [(count: Int, p: WorldPoint)] = []
        for item in items {
            switch item {
            case .marker(let id, let p, let style, let z): markers.append((id, p, style, z))
            case .cluster(let count, let p): clusters.append((count, p))
            }
        }
        markers.sort { a, b in
            if a.z != b.z { return a.z < b.z }
            if a.p.y != b.p.y { return a.p.y < b.p.y }
            return a.id.utf8.lexicographicallyPrecedes(b.id.utf8)
        }
        clusters.sort { a, b in a.p.y != b.p.y ? a.p.y < b.p.y : a.p.x < b.p.x }

        var canvas = TileCanvas(width: view.width, height: view.height)
        var drawn = 0
        func draw(_ sprite: TileSprite, at p: WorldPoint) -> Bool {
            if sprite.isBlank { return false }
            let top = view.pixelY(p.y) - Int64(sprite.anchorY)
            if top >= Int64(view.height) || top + Int64(sprite.height) <= 0 { return false }
            var touched = false
            for k in -1...1 {
                let left = view.pixelX(p.x, copy: k) - Int64(sprite.anchorX)
                if left >= Int64(view.width) || left + Int64(sprite.width) <= 0 { continue }
                canvas.draw(sprite: sprite.image, atX: Int(left), y: Int(top))
                touched = true
            }
            return touched
        }
        for m in markers {
            if draw(try sprites.sprite(m.style, density: density), at: m.p) { drawn += 1 }
        }
        for c in clusters {
            if draw(try bubbles.sprite(count: c.count, density: density), at: c.p) { drawn += 1 }
        }
        if debugOverlay {
            let overlay = try DebugOverlay.image(width: canvas.width, height: canvas.height, density: density,
                                                 text: "\(tile.z)/\(tile.x)/\(tile.y) entries=\(drawn)")
            canvas.draw(sprite: overlay, atX: 0, y: 0)
        }
        return (canvas.encodePNG(options: .tile), canvas.isEmpty, drawn)
    }
}

import MarkerdAPI
import MarkerdCore
import MarkerdRender

/// Labelled raster tiles and label hit-tests (`LayerOptions.labels`).
///
/// A labelled tile is the layer's icons (those of markers whose label was dropped left out when
/// `show_icon_without_label` is false) with every label of the tile's pixel zoom placement
/// (`LabelPlacements`) whose box meets the tile drawn on top, each label sprite at its box's
/// whole-pixel offset: a label crossing a tile edge is drawn on both tiles from one sprite, so
/// its halves meet pixel for pixel.
extension MarkerService {
    /// Whether tiles of zoom `z` of the layer show labels. Call under a lock.
    static func labelsShown(_ h: LayerHandle, z: Int) -> Bool {
        let style = h.layer.labelStyle
        return style.enabled && z >= style.minZoom
    }

    /// The tile's PNG with labels. Call under the layer's read lock.
    func renderLabelledTile(_ h: LayerHandle, tile: TileID, tileSize: Int, density: Int, now: Int64) throws(RenderError) -> TileCache.Tile {
        let view = RasterView.tile(tile, tileSize: tileSize, density: density)
        let canvas = try renderLabelled(h, view: view, pixelZoom: LabelPlacements.pixelZoom(z: tile.z, tileSize: tileSize), now: now).canvas
        if canvas.isEmpty { return TileCache.Tile(png: TransparentTile.png(size: canvas.width), empty: true) }
        return TileCache.Tile(png: canvas.encodePNG(options: .tile), empty: false)
    }

    /// `view` (a tile, or a snapshot at whole zoom `pixelZoom`) with the layer's icons and, on top,
    /// the placed labels meeting it. Call under the layer's read lock.
    func renderLabelled(_ h: LayerHandle, view: RasterView, pixelZoom pz: Int, now: Int64) throws(RenderError) -> RenderedRaster {
        let layer = h.layer
        let style = layer.labelStyle
        // The view's global device px are world px at the placement's zoom times the density.
        let d = Int64(view.density)
        func floorDiv(_ a: Int64) -> Int64 { a >= 0 ? a / d : -((-a + d - 1) / d) }
        let rect = LabelPlacements.Rect(x0: floorDiv(view.originX), y0: floorDiv(view.originY),
                                        x1: -floorDiv(-(view.originX + Int64(view.width))), y1: -floorDiv(-(view.originY + Int64(view.height))))
        let iconRect = style.showIconWithoutLabel ? nil : Self.reachRect(rect, layer)
        let (labels, placed) = h.labels.labels(pz, in: rect, iconRect: iconRect, layer: layer, measurer: labelText, now: now)
        var raster = style.showIconWithoutLabel
            ? try tileRenderer.render(layer, view: view, now: now)
            : try tileRenderer.render(layer, view: view, now: now, keep: { !layer.isLabelled(slot: $0, now: now) || placed.contains($0) })
        for label in labels {
            guard let text = layer.labelText(slot: label.slot) else { continue }
            let paint = LabelPaint(color: layer.labelColor(slot: label.slot), haloColor: style.paint.haloColor)
            let sprite = try labelText.sprite(text, style: style.text, paint: paint, density: view.density)
            raster.canvas.draw(sprite: sprite, atX: Int(label.box.x * d - view.originX), y: Int(label.box.y * d - view.originY))
        }
        return raster
    }

    /// `rect` grown by how far the label of a marker whose icon meets it can lie: icons drawn
    /// in `rect` belong to markers within the largest icon extents (plus the renderer's margin),
    /// and a label lies within gap + the largest label + padding of its icon.
    static func reachRect(_ rect: LabelPlacements.Rect, _ layer: MarkerLayer) -> LabelPlacements.Rect {
        let style = layer.labelStyle
        let e = layer.styles.maxExtents
        let most = LabelGeometry.maximumSize(style.text)
        let grow = Int64((max(e.left, e.right, e.up, e.down) * 2 + TileRenderer.marginPx + Double(style.gap + style.padding)).rounded(.up))
            + max(most.width, most.height)
        return LabelPlacements.Rect(x0: rect.x0 - grow, y0: rect.y0 - grow, x1: rect.x1 + grow, y1: rect.y1 + grow)
    }

    /// The hits of `r` on a labelled layer: markers whose placed label (at the tile zoom of the
    /// request's zoom, `floor(zoom)`, at the layer's tile size) contains the point come first
    /// (labels are drawn above icons), with `on_label`; then the icon hits, without the icons a
    /// dropped label hides. At most `max_results`. Call under the layer's read lock.
    func labelHits(_ r: V1.HitTestRequest, _ p: LatLng, _ h: LayerHandle, iconHits: [V1.MarkerHit], now: Int64) -> [V1.MarkerHit] {
        let z = Int(min(max(r.zoom, 0), 22).rounded(.down))
        guard Self.labelsShown(h, z: z) else { return iconHits }
        let layer = h.layer
        let pz = LabelPlacements.pixelZoom(z: z, tileSize: layer.options.tileSize)
        let unitsPerPx = Mercator.worldUnitsPerPixel(zoom: Double(pz))
        let (x, y) = (Mercator.worldX(longitude: p.longitude) / unitsPerPx, Mercator.worldY(latitude: p.latitude) / unitsPerPx)
        var hits: [V1.MarkerHit] = []
        var seen = Set<String>()
        if let label = h.labels.label(pz, atX: x, y: y, layer: layer, measurer: labelText, now: now) {
            var hit = V1.MarkerHit()
            hit.marker = MarkerConversion.apiMarker(layer.marker(slot: label.slot))
            hit.tiled = layer.mode(now: now) == .tiled
            hit.onLabel = true
            hits.append(hit)
            seen.insert(hit.marker?.id ?? "")
        }
        let hideDropped = !layer.labelStyle.showIconWithoutLabel
        for hit in iconHits {
            guard let id = hit.marker?.id, !seen.contains(id) else { continue }
            if hideDropped, hit.tiled, let slot = layer.slot(id: id), layer.isLabelled(slot: slot, now: now) {
                // Its label's reach around the icon decides whether the icon is drawn.
                let a = LabelGeometry.anchor(layer.worldPosition(slot: slot), pixelZoom: pz)
                let r = LabelPlacements.Rect(x0: a.x, y0: a.y, x1: a.x + 1, y1: a.y + 1)
                let (_, placed) = h.labels.labels(pz, in: r, iconRect: Self.reachRect(r, layer), layer: layer, measurer: labelText, now: now)
                if !placed.contains(slot) { continue }
            }
            hits.append(hit)
        }
        return Array(hits.prefix(Int(r.maxResults ?? 10)))
    }
}

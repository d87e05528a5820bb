import MarkerdCore

/// Re-rendering only what changed in a raster rendered before (`renderPatched`).
///
/// Culling and drawing are pixel-local (`TileRenderer`): a pixel's value is that of the draws
/// covering it, in draw order. When markers change (appear, disappear, move, change icon,
/// z-index or visibility), the draws covering a pixel change only inside the footprints of the
/// changed markers' sprites, before and after the change; everywhere else the same markers cover
/// it in the same order (the draw order of two markers depends on those two alone), so the
/// earlier raster's pixels there are still those of drawing every marker now. Each footprint's
/// window of device pixels is rendered again as a raster of its own (a `RasterView` window, swept
/// like any raster) and copied over the earlier raster. A pixel's value depends only on the draws
/// covering it (`TileRenderer`, step 2), so each window has the bytes the whole raster rendered
/// from scratch has there, and so has the earlier raster outside them: the patched raster is byte
/// for byte the raster rendered from scratch.
/// It is for dense rasters (the z0 tile of millions of markers), where a render from scratch
/// walks the whole layer while a moved marker's windows cover a few hundred pixels.
extension TileRenderer {
    /// `renderPatched` declines (nil) when the windows cover more than this share of the raster:
    /// a render from scratch is then about as cheap.
    public static let patchAreaLimit = 0.25

    /// `base` (this renderer's raster of `view`, rendered at an earlier state of `layer`) brought
    /// to the layer's state at `now`, given `changed`: the icon footprints (`IconFootprint`,
    /// position and extents) before and after every change since `base` that can change the
    /// raster's pixels (as `TileVersions` in the service records them). The window of each
    /// footprint (its extents plus `marginPx`, in device pixels, in every world copy that reaches
    /// the raster, clipped to it) is rendered again (the node sweep when the whole raster takes
    /// it, so a window of a dense raster costs about its share of the layer) and copied over
    /// `base`. nil when the windows cover more than `patchAreaLimit` of the raster or `base` is not
    /// the raster's size. Throws when a pin sprite cannot be drawn.
    public func renderPatched(_ layer: MarkerLayer, view: RasterView, base: TileCanvas, changed: [IconFootprint],
                              now: Int64) throws(RenderError) -> TileCanvas? {
        guard base.width == view.width, base.height == view.height else { return nil }
        let windows = Self.patchWindows(changed, view)
        let area = windows.reduce(0) { $0 + $1.width * $1.height }
        guard Double(area) <= Self.patchAreaLimit * Double(view.width * view.height) else { return nil }
        let sweep = usesSweep(layer, view)
        var canvas = base
        for w in windows {
            var sub = view
            sub.originX += Int64(w.x)
            sub.originY += Int64(w.y)
            sub.width = w.width
            sub.height = w.height
            let r = sweep ? try renderSweep(layer, sub, now: now) : try render(layer, view: sub, now: now)
            canvas.paste(r.canvas, atX: w.x, y: w.y)
        }
        return canvas
    }

    /// A rectangle of device pixels of a raster.
    struct PixelWindow: Equatable {
        var x: Int, y: Int, width: Int, height: Int
    }

    /// The windows `renderPatched` renders for `changed` in `view`: each footprint's extents
    /// plus `marginPx` (times the density, rounded out, plus 2 px for the rounding of positions
    /// and anchors) around its device pixel, for each world copy (`RasterView.copies`), clipped
    /// to the raster; empty ones left out, and windows merged where that covers no more pixels
    /// (`insertMerging`).
    static func patchWindows(_ changed: [IconFootprint], _ view: RasterView) -> [PixelWindow] {
        var out: [PixelWindow] = []
        let d = Double(view.density), m = marginPx
        for f in changed {
            let left = Int(((f.extents.left + m) * d).rounded(.up)) + 2, right = Int(((f.extents.right + m) * d).rounded(.up)) + 2
            let up = Int(((f.extents.up + m) * d).rounded(.up)) + 2, down = Int(((f.extents.down + m) * d).rounded(.up)) + 2
            let py = view.pixelY(f.position.y)
            for k in view.copies {
                let px = view.pixelX(f.position.x, copy: k)
                let x0 = max(px - Int64(left), 0), x1 = min(px + Int64(right) + 1, Int64(view.width))
                let y0 = max(py - Int64(up), 0), y1 = min(py + Int64(down) + 1, Int64(view.height))
                guard x0 < x1, y0 < y1 else { continue }
                insertMerging(PixelWindow(x: Int(x0), y: Int(y0), width: Int(x1 - x0), height: Int(y1 - y0)), into: &out)
            }
        }
        return out
    }

    /// Adds `w` to `windows`, merged first with every window whose bounding box with it covers
    /// no more pixels than the two apart (a duplicate, one inside the other, or a large overlap:
    /// a marker moved a few pixels, a stack changing together), so that the overlap is not
    /// rendered twice and counts once against `patchAreaLimit`. Any window may be rendered again
    /// (a pixel's value depends only on the draws over it), so a merged window is as good as
    /// the two. Every merge removes a window: O(n) per merge, O(n^2) in all.
    static func insertMerging(_ w: PixelWindow, into windows: inout [PixelWindow]) {
        var w = w, i = 0
        while i < windows.count {
            let o = windows[i]
            let x0 = min(w.x, o.x), y0 = min(w.y, o.y)
            let x1 = max(w.x + w.width, o.x + o.width), y1 = max(w.y + w.height, o.y + o.height)
            if (x1 - x0) * (y1 - y0) <= w.width * w.height + o.width * o.height {
                w = PixelWindow(x: x0, y: y0, width: x1 - x0, height: y1 - y0)
                windows.swapAt(i, windows.count - 1)
                windows.removeLast()
                i = 0  // the larger window may now merge with one passed over
            } else {
                i += 1
            }
        }
        windows.append(w)
    }
}

import MarkerdCore

/// Two-band tiles whose bands also collect their own markers (`renderTileBands`).
///
/// `renderBandsPNG` starts from the items of the whole tile: the calling thread walks the grid
/// and places every marker (`collect`), then copies each item into the band(s) its sprite reaches
/// (`split`), and only then hands the bottom band to the band thread. On marker-bench's densest
/// 10M z10 city tiles (about 23k pins) those two steps took 1.3-1.9 ms and 0.2-0.4 ms of thread
/// CPU, all of it before the second thread could start.
///
/// Here the cut is chosen first, from the static grid's node counts (`bandEstimate`, tens of
/// µs), and each band is a `RasterView` of its own rows: the band thread collects, culls, draws
/// and deflates the bottom band while the calling thread does the same for the top band. A
/// band's collect places exactly the markers whose sprite reaches its rows, at the same device
/// pixels relative to the band as `split` gives them, so each band renders as it does from the
/// tile's items and the PNG is byte for byte `renderBandsPNG`'s at the same cut. A marker whose
/// sprite straddles the cut is found by both walks, as `split` put it in both bands.
extension TileRenderer {
    /// Grid nodes at most this many device px tall count as one block of rows in `bandEstimate`
    /// (their markers spread evenly over the node's rows); taller ones are opened. 16 px: at z10
    /// over a dense city, about a hundred nodes instead of thousands of leaves.
    static let estimateNodePx = 16.0

    /// An estimate of the raster's static markers and where to cut it into two bands, from grid
    /// node counts alone (no marker is read): per device row, the markers whose sprite starts and
    /// ends there, assuming the layer's largest icon (`IconExtents` of every style in use) and
    /// markers spread evenly inside each node no taller than `estimateNodePx` that lies wholly
    /// in the searched area, and over the part of a leaf that lies in it (nodes across its edge
    /// are opened down to their leaves); the cut as `bandCut` chooses it from those
    /// counts (`rowWeight` per covered row). Ignores world copies other than the view's own
    /// (rasters at the antimeridian are estimated low there). nil when the layer has no static
    /// marker or the view is less than 2 rows high.
    func bandEstimate(_ layer: MarkerLayer, _ view: RasterView, rowWeight: Int) -> (markers: Double, cut: Int)? {
        guard view.height >= 2, let root = layer.staticSweepRoot else { return nil }
        let d = Double(view.density)
        // The sprite's reach around its anchor (without `collect`'s search margin, which is
        // there for pixel rounding, not for the markers that show).
        let e = layer.styles.maxExtents
        let up = e.up * d, down = e.down * d
        let scale = view.scale
        // Global device px of the anchors whose sprite can reach the view.
        let ax0 = Double(view.originX) - e.right * d, ax1 = Double(view.originX) + Double(view.width) + e.left * d
        let ay0 = Double(view.originY) - down, ay1 = Double(view.originY) + Double(view.height) + up
        let height = view.height
        var tops = [Double](repeating: 0, count: height + 1), ends = [Double](repeating: 0, count: height + 1)
        var total = 0.0
        // Spreads `n` markers evenly over anchor rows `a0 ..< a1` (device px, global), clipped to the search area.
        func spread(_ n: Double, _ a0: Double, _ a1: Double) {
            let lo = max(a0, ay0), hi = min(a1, ay1)
            guard hi > lo, n > 0 else { return }
            let first = Int(lo.rounded(.down)), last = Int((hi - 1).rounded(.up))
            // Per row of the node's whole height: the rows outside the area keep their share.
            let per = n / max(1, a1 - a0)
            for a in first...max(first, last) {
                let anchor = Double(a) - Double(view.originY)
                let top = min(max(Int((anchor - up).rounded(.down)), 0), height)
                let end = min(max(Int((anchor + down).rounded(.up)), 0), height)
                tops[top] += per; ends[end] += per
            }
            total += n * (hi - lo) / (a1 - a0)
        }
        var frontier = [root]
        while let n = frontier.popLast() {
            let x0 = Double(n.minX) * scale, x1 = (Double(n.maxX) + 1) * scale
            let y0 = Double(n.minY) * scale, y1 = (Double(n.maxY) + 1) * scale
            if x1 <= ax0 || x0 >= ax1 || y1 <= ay0 || y0 >= ay1 { continue }
            // A node across the area's edge is opened down to its leaves, whatever its size: the
            // markers of a dense cluster in it need not be spread evenly across that edge (a
            // city cut by the tile's edge in one 16 px node was estimated 13 % low, SEED=298100643
            // of ColdTilePathTests.bandEstimateFollowsTheMarkers).
            let inside = x0 >= ax0 && x1 <= ax1 && y0 >= ay0 && y1 <= ay1
            if n.isLeaf || (inside && y1 - y0 <= TileRenderer.estimateNodePx) {
                // The share of the node inside the area across; along y, `spread` clips.
                let inX = (min(x1, ax1) - max(x0, ax0)) / (x1 - x0)
                spread(Double(n.count) * inX, y0, y1)
                continue
            }
            layer.forEachChild(of: n) { frontier.append($0) }
        }
        let cut = TileRenderer.bandCut(tops: tops, ends: ends, count: tops.reduce(0, +), height: height, rowWeight: Double(rowWeight))
        return (total, cut)
    }

    /// `estimate` of the static markers around `view` (an upper bound; it stops at `atLeast`), 0
    /// when the layer has none.
    func staticAround(_ layer: MarkerLayer, _ view: RasterView, atLeast: Int) -> Int {
        guard let root = layer.staticSweepRoot else { return 0 }
        return TileRenderer.estimate(layer, root, view, atLeast: atLeast)
    }

    /// The raster rows `rows` of `view`, as a view of their own.
    static func band(_ view: RasterView, rows: Range<Int>) -> RasterView {
        RasterView(originX: view.originX, originY: view.originY + Int64(rows.lowerBound), width: view.width, height: rows.count,
                   scale: view.scale, density: view.density)
    }

    /// The tile's PNG (`options`) as two bands cut at row `cut` (1 ..< height), each collected,
    /// culled, drawn and deflated on its own thread (the bottom one on the band thread), the two
    /// segments joined on this thread: byte for byte `renderBandsPNG` of the tile's items at
    /// `cut`. `markers` counts each marker once (a straddling one in the top band). nil (nothing
    /// done) when the band thread is busy. Throws when a sprite cannot be drawn (either band).
    /// `bands`: the two bands' canvases (the top one `cut` rows high).
    func renderBandsCollecting(_ layer: MarkerLayer, _ view: RasterView, now: Int64, cut: Int, options: PNGEncodeOptions,
                               timing: inout BandTiming)
        throws(RenderError) -> (png: [UInt8], empty: Bool, markers: Int, bands: (top: TileCanvas, bottom: TileCanvas))? {
        precondition(cut >= 1 && cut < view.height, "cut \(cut) outside 1..<\(view.height)")
        let width = view.width, height = view.height
        let topView = Self.band(view, rows: 0..<cut), bottomView = Self.band(view, rows: cut..<height)
        let lower = BandThread.Result<Result<(canvas: TileCanvas, markers: Int, segment: PNGCodec.Segment?), RenderError>>()
        let bandCPU = BandThread.Result<Double>()
        let bottomJob = BandThread.Claim()
        @Sendable func renderBottom() {
            do throws(RenderError) {
                // Markers that reach above the cut are counted in the top band.
                let c = try self.collect(layer, bottomView, now: now, countFromRow: 0)
                let b = self.renderItems(layer, c.items, c.sprites, width: width, height: height - cut)
                lower.value = .success((b.canvas, c.markers, b.canvas.isEmpty ? nil : b.canvas.segment(last: true, options: options)))
            } catch {
                lower.value = .failure(error)
            }
        }
        guard BandThread.shared.start(claimed: bottomJob, seconds: bandCPU, renderBottom) else { return nil }
        let handedOver = BandThread.threadCPUSeconds()
        defer { timing.band = bandCPU.value ?? 0 }
        let upper: Result<(canvas: TileCanvas, markers: Int, segment: PNGCodec.Segment?), RenderError>
        do throws(RenderError) {
            let c = try collect(layer, topView, now: now)
            let a = renderItems(layer, c.items, c.sprites, width: width, height: cut)
            upper = .success((a.canvas, c.markers, a.canvas.isEmpty ? nil : a.canvas.segment(last: false, options: options)))
        } catch {
            upper = .failure(error)
        }
        timing.caller = BandThread.threadCPUSeconds() - handedOver
        // The band thread has not started the bottom band yet (no core for it): do it here.
        if bottomJob.take() { renderBottom() }
        BandThread.shared.wait()
        let a = try upper.get(), b = try lower.value!.get()
        let png = Self.joinBands(a.canvas, a.segment, b.canvas, b.segment, width: width, height: height, options: options)
        return (png.png, png.empty, a.markers + b.markers, (a.canvas, b.canvas))
    }
}

import MarkerdCore
private import Synchronization
#if canImport(Glibc)
private import Glibc
#endif

/// Two threads for one dense raster (`TileRenderer.bandsAbove`).
///
/// Culling is pixel-local: whether a pixel is settled depends only on the draws that cover it
/// (`CoverageMask`), and a draw's clip is chosen row by row. So the raster is cut at a row `s`
/// into a top band (rows `0 ..< s`) and a bottom band (rows `s ..< height`), each band rendered
/// exactly as `render` renders any `RasterView` (a band is the view of that window of device
/// pixels: the collected draws whose sprite reaches into it, sorted, culled against the band's
/// own mask and drawn on the band's own canvas), the two on two threads, and the two canvases
/// stacked. Each band is within 1 per channel of drawing every marker (the bound the renderer
/// keeps for every view), so the stacked raster is too. It can differ from the one-thread
/// render by 1 where a draw that straddles the cut is dropped in one band (all of its pixels
/// there settled) and so two identical draws around it fold into one run there
/// (`TileRenderer.draw`), which may draw a settled pixel once more or less.
///
/// The cut is where the two bands' draws balance (a draw that straddles it counts in both): a
/// dense city often fills only one half of a tile. Only after `collect` (one thread, about 15 %
/// of a dense z10 tile's CPU time in marker-bench's city tiles). For tiles (`renderTile` ->
/// `renderBandsPNG`) each band's thread also deflates its own rows as one segment of the PNG's
/// zlib stream (`PNGCodec+Segments.swift`, as pigz does: raw deflate ended with a sync flush, the
/// bottom band's finished), and the calling thread joins the two segments into the PNG; the cut
/// balances each band's render plus its PNG rows (`bandCut`'s `rowWeight`). Until 2026-11-30 the
/// PNG was one zlib stream written by the calling thread, the top band's rows while the bottom
/// band rendered, then the bottom band's (`PNGCodec.RowWriter`), so the whole deflate ran on one
/// thread. Tiles that collect fewer draws than `bandsAbove` but at least `pngSegmentsAbove`
/// render on one thread and deflate their PNG in two segments on two threads (`encodePNGInTwo`).
///
/// Bands only pay off when the other core is idle, so they are used only while no other render
/// runs in this process (`rendersRunning`, counting `render` and `renderTile` calls, the latter
/// until its PNG is encoded, of every renderer): under many concurrent tile requests every
/// render keeps to its own thread. Bands cost about 15 % more CPU time than one thread (draws
/// that straddle the cut are sorted and tested in both bands; measured on marker-bench's 10M z10
/// city tiles), which is what concurrent requests lose when one of them renders alone. The second
/// thread is `BandThread.shared`, one thread parked on a condition variable between jobs (it was
/// Dispatch's, through `DispatchQueue.concurrentPerform`); the calling thread renders the top band.
///
/// Nor when the machine is busy (`idleCoreLikely`: as many tasks runnable as there are online
/// CPUs): then the helper thread waits in the run queue for milliseconds while the
/// calling thread, done with its band, waits for it. Measured on the 2-core machine with a load
/// average of 4-9 from other work: two bands gave no wall-clock gain at all on marker-bench's
/// 10M z10 city tiles (p50 11.9 against 11.1 ms one thread, p99 longer), for 15 % more CPU.
/// `renderTile`'s paths (`renderBandsPNG`, `encodePNGInTwo`) no longer wait for a band thread
/// that has not started: the calling thread, done with its part, takes the band thread's part
/// if that is still unclaimed (`BandThread.Claim`), so they ask the looser `secondCoreLikely`
/// (one other runnable task per CPU allowed; see there for the probe behind it).
extension TileRenderer {
    /// Default `bandsAbove`: `Int.max`, off. Measured through GetTile on a quiet 2-core machine
    /// (load average about 1, 10M markers, bands from 2,000 draws): the z10 city tiles gained
    /// nothing in wall-clock time (p50 / p99 10.84 / 19.05 ms against 10.46 / 20.52 ms on one
    /// thread), while markerd's CPU time grew for every tile, also the ones rendered on one
    /// thread (z18 1.48 against 0.94 ms per call, z0 560 against 320 ms; presumably Dispatch's
    /// worker threads running on after the bands, not profiled), so bands are opt-in (e.g. 2,000 draws: a render of
    /// that many default pins takes about 1 ms of CPU).
    ///
    /// Since then the second thread is `BandThread` (parked between jobs) and tiles pipeline their
    /// PNG behind the bands (`renderBandsPNG`). In process on the same 10M city tiles
    /// (`marker-bench --only citytiles`, 500 tiles per zoom, every tile in bands, load average
    /// 11-18 from other work, so the wall clock measured the run queue), the critical path (the
    /// longer thread's CPU time: the wall clock with a core per thread) against one thread's
    /// CPU time, p50 / p99 in two runs: z10 6.05-6.39 / 11.34-12.70 against 7.18-7.48 /
    /// 15.30-16.04 ms, z14 2.36-2.56 / 5.32-5.39 against 2.43-2.60 / 6.24-6.36 ms, z18 0.65-0.66 /
    /// 1.17-1.18 against 0.60-0.62 / 1.09-1.17 ms, for 7-17 % more CPU in all. Not
    /// measured through GetTile on a quiet machine then. Measured since (two quiet pairs through
    /// markerd, `--tile-bands-above 2000` against off): z10 p99 -18 % for about 17 % more CPU on
    /// those calls, z14 p99 -7 to -18 %, throughput unchanged: markerd turns them on
    /// (`MarkerdConfiguration.tileBandsAbove`, 2,000). The library default stays off, so that
    /// in-process renders do not depend on the machine's load (with bands a re-render of the same
    /// tile version may differ by 1/255 in a few pixels; the gateway's ETags are weak).
    public static let defaultBandsAbove = Int.max

    /// Counts a `render` call starting; returns how many run now (this one included), in every
    /// renderer of the process. Each call is paired with `renderEnded()`.
    static func renderStarted() -> Int { rendersRunning.wrappingAdd(1, ordering: .relaxed).newValue }

    static func renderEnded() { rendersRunning.wrappingSubtract(1, ordering: .relaxed) }

    /// True when a second thread is likely to get a core at once: fewer tasks are runnable at this
    /// instant than there are online CPUs (the calling thread included, so at least one core is
    /// idle). Read from /proc/loadavg's fourth field (`runnable/total`, a few µs; asked only for
    /// rasters of at least `bandsAbove` draws or the z0 sweep, which take a millisecond or more).
    /// Where that field cannot be read, the 1-minute load average below the CPU count decides;
    /// when neither can be read, true.
    ///
    /// Until 2026-11-30 the 1-minute load average decided alone. It lags by a minute: in
    /// marker-bench's full run it stood at 1.3-2.0 on the 2-core machine from the load and query
    /// phases just before, while the client sat waiting for each tile, so GetTile z0 ran on one
    /// thread (167.5 ms median) although a core was idle; the same markerd at load average 1.2
    /// took 96.9 ms in two bands (Benchmarks/results/diary.md, session 9).
    static func idleCoreLikely() -> Bool { coreTest(idleCore) }

    /// `rule(runnable tasks now, online CPUs)`; where the runnable count cannot be read, the
    /// 1-minute load average below the CPU count; when neither can be read, true.
    private static func coreTest(_ rule: (_ runnable: Int, _ cpus: Int) -> Bool) -> Bool {
        let cpus = sysconf(Int32(_SC_NPROCESSORS_ONLN))
        guard cpus > 0 else { return true }
        if let runnable = runnableTasksNow() { return rule(runnable, cpus) }
        var load = [Double](repeating: 0, count: 1)
        guard getloadavg(&load, 1) == 1 else { return true }
        return load[0] < Double(cpus)
    }

    /// The rule of `idleCoreLikely`: `runnable` tasks (the asking thread among them) leave a core
    /// idle on `cpus` CPUs.
    static func idleCore(runnable: Int, cpus: Int) -> Bool { runnable < cpus }

    /// `renderTile`'s test for its two-thread paths, which never wait for a band thread that has
    /// not started (the calling thread then does the band thread's part itself, `BandThread.Claim`):
    /// at most two tasks runnable per CPU, the asking thread among them (`secondCore`); the load
    /// average where /proc/loadavg's count cannot be read. Only one render at a time takes the band
    /// thread (`renderStarted`), so this only turns bands down on a machine busy with other work.
    ///
    /// Why so loose: the count is a snapshot that catches threads about to block. Probed in
    /// markerd on the quiet machine during marker-bench's cold 10M tiles (one call in flight),
    /// fewer runnable than CPUs (`idleCoreLikely`) said no for 8-29 % of the z4 and z10 tiles, with
    /// 2-3 tasks runnable at that instant (markerd's and the client's network threads finishing
    /// the hand-over). Until 2026-12-02 the rule was at most one per CPU; with bands taken for
    /// every such tile instead, the cold z10 p99 was lower in 5 of 5 alternating runs (4.37-5.68
    /// against 5.90-6.93 ms, 10M markers, Benchmarks/results/diary.md, session 23), at the same tiles
    /// per second with 2 and 4 calls in flight; with this rule, three runs gave 4.80-5.95 ms. A
    /// wrong yes costs the split (about 15 % more CPU on a dense tile), never a wait.
    static func secondCoreLikely() -> Bool { coreTest(secondCore) }

    /// The rule of `secondCoreLikely`: at most two tasks runnable per CPU, the asking thread
    /// among them.
    static func secondCore(runnable: Int, cpus: Int) -> Bool { runnable <= 2 * cpus }

    /// The number of tasks runnable now, from /proc/loadavg (nil when it cannot be read).
    static func runnableTasksNow() -> Int? {
        let fd = open("/proc/loadavg", O_RDONLY | O_CLOEXEC)
        guard fd >= 0 else { return nil }
        defer { close(fd) }
        return withUnsafeTemporaryAllocation(of: UInt8.self, capacity: 128) { buffer -> Int? in
            let n = read(fd, buffer.baseAddress, buffer.count)
            guard n > 0 else { return nil }
            return runnableTasks(loadavg: UnsafeBufferPointer(rebasing: buffer[..<n]))
        }
    }

    /// The runnable count in the text of /proc/loadavg ("0.52 0.58 0.59 2/467 12345": the number
    /// before the slash of the fourth field), or nil when the text is not of that form.
    static func runnableTasks<Bytes: Collection<UInt8>>(loadavg text: Bytes) -> Int? {
        let fields = text.split(separator: UInt8(ascii: " "), omittingEmptySubsequences: true)
        guard fields.count >= 4 else { return nil }
        let parts = fields[3].split(separator: UInt8(ascii: "/"), omittingEmptySubsequences: false)
        guard parts.count == 2, let first = parts.first, !first.isEmpty, first.count <= 9,
              first.allSatisfy({ $0 >= UInt8(ascii: "0") && $0 <= UInt8(ascii: "9") }) else { return nil }
        return first.reduce(0) { $0 * 10 + Int($1 - UInt8(ascii: "0")) }
    }

    /// The row at which to cut `height` rows (1 ..< height) so that the larger band holds the
    /// fewest items (an item counts in every band its sprite rows reach); with `rowWeight` > 0,
    /// each row that some item covers counts as that many more items in its band (the PNG rows
    /// each band's thread deflates, `renderBandsPNG`; rows no item reaches stay transparent, and
    /// deflating those costs next to nothing).
    static func bandCut(_ items: [Item], _ sprites: [TileSprite], height: Int, rowWeight: Int = 0) -> Int {
        // tops[r]: items whose first row is r (clamped to 0 ... height); ends[r]: items whose
        // rows end at r (exclusive, clamped).
        var tops = [Double](repeating: 0, count: height + 1), ends = [Double](repeating: 0, count: height + 1)
        // The sprites' heights apart: reading one from the sprites array per item costs reference
        // counting.
        let heights = sprites.map(\.height)
        for it in items {
            let top = Int(it.y), h = heights[Int(it.sprite)]
            tops[min(max(top, 0), height)] += 1
            ends[min(max(top + h, 0), height)] += 1
        }
        return bandCut(tops: tops, ends: ends, count: Double(items.count), height: height, rowWeight: Double(rowWeight))
    }

    /// `bandCut` of items given as counts per row (whole items, or the estimates of
    /// `bandEstimate`): `tops[r]` items start at row r, `ends[r]` end there (exclusive), both
    /// clamped to 0 ... height (`height + 1` entries each); `count` items in all.
    static func bandCut(tops: [Double], ends: [Double], count: Double, height: Int, rowWeight: Double) -> Int {
        // covered[s]: rows in 0 ..< s that at least one item reaches.
        var covered = [Double](repeating: 0, count: height + 1)
        var active = 0.0
        for r in 0..<height {
            active += tops[r] - ends[r]
            // (Estimates add fractions: a row counts as covered from half an item.)
            covered[r + 1] = covered[r] + (active >= 0.5 ? 1 : 0)
        }
        // Cut at s: top band = items with top < s; bottom band = items with end > s.
        var best = height / 2, bestLoad = Double.infinity
        var above = 0.0, endedBy = ends[0]
        for s in 1..<height {
            above += tops[s - 1]; endedBy += ends[s]
            let load = max(above + rowWeight * covered[s], count - endedBy + rowWeight * (covered[height] - covered[s]))
            if load < bestLoad { bestLoad = load; best = s }
        }
        return best
    }

    /// The collected items of the two bands cut at row `cut`: the top band's as they are, the
    /// bottom band's moved up by `cut` rows (an item whose sprite straddles the cut is in both).
    static func split(_ items: [Item], _ sprites: [TileSprite], at cut: Int) -> (top: [Item], bottom: [Item]) {
        let heights = sprites.map(\.height)  // as in `bandCut`
        var upper: [Item] = [], lower: [Item] = []
        upper.reserveCapacity(items.count / 2 + items.count / 8)
        lower.reserveCapacity(items.count / 2 + items.count / 8)
        for it in items {
            if Int(it.y) < cut { upper.append(it) }
            if Int(it.y) + heights[Int(it.sprite)] > cut {
                var b = it
                b.y -= Int32(cut)
                lower.append(b)
            }
        }
        return (upper, lower)
    }

    /// Steps 1-3 (`renderItems`) as two bands on two threads, stacked (see above): the bottom
    /// band on `BandThread.shared`, the top band on this thread; both on this thread when the
    /// band thread is busy.
    func renderBands(_ layer: MarkerLayer, _ items: [Item], _ sprites: [TileSprite], width: Int, height: Int) -> (canvas: TileCanvas, draws: Int) {
        guard height >= 2 else { return renderItems(layer, items, sprites, width: width, height: height) }
        let cut = Self.bandCut(items, sprites, height: height)
        let (top, bottom) = Self.split(items, sprites, at: cut)
        let lower = BandThread.Result<(canvas: TileCanvas, draws: Int)>()
        var upper: (canvas: TileCanvas, draws: Int)? = nil
        BandThread.shared.run({ lower.value = self.renderItems(layer, bottom, sprites, width: width, height: height - cut) },
                              alongside: { upper = renderItems(layer, top, sprites, width: width, height: cut) })
        let a = upper!, b = lower.value!
        return (TileCanvas(stacking: a.canvas, b.canvas), a.draws + b.draws)
    }

    /// How `renderTileBands` uses the second thread for a tile.
    enum TwoThreads {
        /// Render and PNG on this thread.
        case none
        /// Two bands, each deflating its own rows (`renderBandsPNG`).
        case bands
        /// Render on this thread, then the PNG in two deflate segments on two threads (`encodePNGInTwo`).
        case segments
    }

    /// `renderTile`'s choice for a raster of `draws` collected draws: `.bands` from `bandsAbove`,
    /// `.segments` from `pngSegmentsAbove`, each only when a second core is likely to be free
    /// soon (`secondCoreLikely`, asked only for rasters that big).
    func twoThreads(draws: Int) -> TwoThreads {
        if draws >= bandsAbove { return TileRenderer.secondCoreLikely() ? .bands : .none }
        if draws >= Self.pngSegmentsAbove { return TileRenderer.secondCoreLikely() ? .segments : .none }
        return .none
    }

    /// `renderTile` through `renderTileBands` with `path` for every tile, whatever `bandsAbove`,
    /// the load average and other renders say (one thread when the band thread is busy): for
    /// benchmarks that compare the paths on the same tiles (`marker-bench --only citytiles`).
    /// No debug overlay; rasters that `usesSweep` would sweep are rendered as `renderTile`
    /// renders them.
    ///
    /// `criticalCPU`: seconds of thread CPU time on the longer of the two threads' paths, what the
    /// call's wall-clock time would be with both threads on a core of their own throughout (this
    /// thread's CPU time, plus the part of the band thread's that this thread did not overlap with
    /// its own work since handing the job over); on a machine busy with other work the wall clock
    /// measures mostly the run queue. `callerLead`: the calling thread's CPU seconds from handing
    /// the job over to waiting for it, minus the band thread's job (> 0: the top band's share was
    /// the longer one, the band thread idled at the end). Both nil when rendered and encoded on
    /// one thread.
    ///
    /// `collectInBandsFrom`: rasters whose grid counts estimate at least this many markers have
    /// each band collect its own (`renderBandsCollecting`; default 2,000, markerd's
    /// `--tile-bands-above`); `.max`: every band starts from the tile's items (`renderBandsPNG`).
    public func renderTileInBands(_ layer: MarkerLayer, tile: TileID, tileSize: Int, density: Int, now: Int64,
                                  segmentsOnly: Bool = false, collectInBandsFrom: Int = 2_000)
        throws(RenderError) -> (png: [UInt8], empty: Bool, markers: Int, criticalCPU: Double?, callerLead: Double?) {
        let view = RasterView.tile(tile, tileSize: tileSize, density: density)
        if usesSweep(layer, view) {
            let t = try renderTile(layer, tile: tile, tileSize: tileSize, density: density, now: now)
            return (t.png, t.empty, t.markers, nil, nil)
        }
        let start = BandThread.threadCPUSeconds()
        var overlap = BandTiming()
        let from = segmentsOnly ? Int.max : collectInBandsFrom
        let t = try renderTileBands(layer, view, now: now, collectInBandsFrom: from, around: from == .max ? 0 : staticAround(layer, view, atLeast: from),
                                    keepCanvasFrom: .max, timing: &overlap) { _ in segmentsOnly ? .segments : .bands }
        guard overlap.band > 0 else { return (t.png, t.empty, t.markers, nil, nil) }
        let mine = BandThread.threadCPUSeconds() - start
        return (t.png, t.empty, t.markers, mine + max(0, overlap.band - overlap.caller), overlap.caller - overlap.band)
    }

    /// Thread CPU seconds of a two-thread tile (`renderBandsPNG`, `encodePNGInTwo`): the band
    /// thread's job, and the caller's between handing it over and waiting for it (0 and 0: one
    /// thread).
    struct BandTiming {
        var band = 0.0
        var caller = 0.0
    }

    /// Collects `view`'s items and renders them and their PNG (`.tile`) as `path(items)` says:
    /// two bands or two PNG segments when the band thread is free, else on this thread.
    /// Rasters whose grid counts estimate at least `collectInBandsFrom` markers (`bandEstimate`)
    /// and that `path` sends to two bands are cut where the estimate balances the bands, and each
    /// band collects its own markers (`renderBandsCollecting`); the others are collected first.
    /// `around`: `staticAround(layer, view, atLeast:)` with `atLeast` >= `collectInBandsFrom`, the
    /// coarse upper bound tested first, so that sparse tiles do not walk the nodes down to 16 px.
    /// `keepCanvasFrom`: as `renderTile`'s (the raster too, from this many markers).
    func renderTileBands(_ layer: MarkerLayer, _ view: RasterView, now: Int64, collectInBandsFrom: Int, around: Int,
                         keepCanvasFrom: Int, timing: inout BandTiming, path: (Int) -> TwoThreads)
        throws(RenderError) -> (png: [UInt8], empty: Bool, markers: Int, canvas: TileCanvas?) {
        // Dense tiles (`TileRenderer+BandCollect.swift`).
        if collectInBandsFrom < Int.max, around >= collectInBandsFrom,
           let e = bandEstimate(layer, view, rowWeight: Self.pngRowWeight), e.markers >= Double(collectInBandsFrom),
           path(Int(e.markers)) == .bands,
           let r = try renderBandsCollecting(layer, view, now: now, cut: e.cut, options: .tile, timing: &timing) {
            return (r.png, r.empty, r.markers, r.markers >= keepCanvasFrom ? TileCanvas(stacking: r.bands.top, r.bands.bottom) : nil)
        }
        let (items, sprites, markers) = try collect(layer, view, now: now)
        let how = path(items.count)
        if how == .bands,
           let r = renderBandsPNG(layer, items, sprites, width: view.width, height: view.height, options: .tile, timing: &timing) {
            return (r.png, r.empty, markers, markers >= keepCanvasFrom ? TileCanvas(stacking: r.bands.top, r.bands.bottom) : nil)
        }
        let (canvas, _) = renderItems(layer, items, sprites, width: view.width, height: view.height)
        let kept = markers >= keepCanvasFrom ? canvas : nil
        if how == .segments, let png = encodePNGInTwo(canvas, options: .tile, timing: &timing) {
            return (png, false, markers, kept)
        }
        return (canvas.encodePNG(options: .tile), canvas.isEmpty, markers, kept)
    }

    /// `bandCut`'s `rowWeight` in `renderBandsPNG`: a row of PNG encoding costs about as much as
    /// culling and drawing 20 collected items (10M city tiles, `marker-bench --only citytiles`:
    /// z10 encoding about 7 µs per 256 px row, rendering about 0.3 µs per item).
    static let pngRowWeight = 20

    /// Steps 1-3 as two bands and the tile's PNG (`options`, no row filters) in two deflate
    /// segments (`PNGCodec+Segments`): the band thread renders the bottom band and deflates its
    /// rows (the stream's last segment) while this thread renders the top band and deflates its
    /// rows; then this thread joins the two into the PNG. The cut balances each band's items plus
    /// its covered rows (`pngRowWeight` items each), so both threads finish about together. The
    /// PNG is byte for byte `PNGCodec.encodeSegmented` of the stacked canvas of `renderBands` cut
    /// at the same row (the shared transparent tile when both bands are empty; an empty band's
    /// segment is deflated after the wait). nil (nothing done) when the band thread is busy or
    /// `height` < 2.
    func renderBandsPNG(_ layer: MarkerLayer, _ items: [Item], _ sprites: [TileSprite], width: Int, height: Int,
                        options: PNGEncodeOptions) -> (png: [UInt8], empty: Bool, draws: Int, bands: (top: TileCanvas, bottom: TileCanvas))? {
        var timing = BandTiming()
        return renderBandsPNG(layer, items, sprites, width: width, height: height, options: options, timing: &timing)
    }

    /// `renderBandsPNG`, with the threads' CPU times in `timing`. `bands`: the two bands' canvases
    /// (the top one `cut` rows high).
    func renderBandsPNG(_ layer: MarkerLayer, _ items: [Item], _ sprites: [TileSprite], width: Int, height: Int,
                        options: PNGEncodeOptions, timing: inout BandTiming)
        -> (png: [UInt8], empty: Bool, draws: Int, bands: (top: TileCanvas, bottom: TileCanvas))? {
        guard height >= 2 else { return nil }
        let cut = Self.bandCut(items, sprites, height: height, rowWeight: Self.pngRowWeight)
        let (top, bottom) = Self.split(items, sprites, at: cut)
        let lower = BandThread.Result<(canvas: TileCanvas, draws: Int, segment: PNGCodec.Segment?)>()
        let bandCPU = BandThread.Result<Double>()
        let bottomJob = BandThread.Claim()
        @Sendable func renderBottom() {
            let b = self.renderItems(layer, bottom, sprites, width: width, height: height - cut)
            lower.value = (b.canvas, b.draws, b.canvas.isEmpty ? nil : b.canvas.segment(last: true, options: options))
        }
        guard BandThread.shared.start(claimed: bottomJob, seconds: bandCPU, renderBottom) else { return nil }
        let handedOver = BandThread.threadCPUSeconds()
        defer { timing.band = bandCPU.value ?? 0 }
        let a = renderItems(layer, top, sprites, width: width, height: cut)
        // An empty top band waits for the bottom one: both empty is the shared transparent tile.
        let upper = a.canvas.isEmpty ? nil : a.canvas.segment(last: false, options: options)
        timing.caller = BandThread.threadCPUSeconds() - handedOver
        // The band thread has not started the bottom band yet (no core for it): do it here.
        if bottomJob.take() { renderBottom() }
        BandThread.shared.wait()
        let b = lower.value!
        let png = Self.joinBands(a.canvas, upper, b.canvas, b.segment, width: width, height: height, options: options)
        return (png.png, png.empty, a.draws + b.draws, (a.canvas, b.canvas))
    }

    /// The tile's PNG (`options`) from its two bands' canvases and the segments already deflated
    /// (nil: deflated here, an empty band's after the wait): the shared transparent tile
    /// (`empty`) when both bands are empty, else the two segments joined.
    static func joinBands(_ top: TileCanvas, _ topSegment: PNGCodec.Segment?, _ bottom: TileCanvas, _ bottomSegment: PNGCodec.Segment?,
                          width: Int, height: Int, options: PNGEncodeOptions) -> (png: [UInt8], empty: Bool) {
        if top.isEmpty && bottom.isEmpty {
            return (TileCanvas(stacking: top, bottom).encodePNG(options: options), true)
        }
        let segments = [topSegment ?? top.segment(last: false, options: options),
                        bottomSegment ?? bottom.segment(last: true, options: options)]
        return (joinSegments(width: width, height: height, segments, options: options), false)
    }

    /// The PNG of `segments` (`PNGCodec.encode(width:height:segments:options:)`), which cannot
    /// fail here: the segments are the image's rows in order, the last one last.
    static func joinSegments(width: Int, height: Int, _ segments: [PNGCodec.Segment], options: PNGEncodeOptions) -> [UInt8] {
        do {
            return try PNGCodec.encode(width: width, height: height, segments: segments, options: options)
        } catch {
            fatalError("PNG encoding failed: \(error.message)")
        }
    }

    /// Smallest non-empty raster, in collected draws, whose PNG `renderTile` deflates in two
    /// segments on two threads (`encodePNGInTwo`) when it is rendered on one thread (below
    /// `bandsAbove`) and a core is likely idle.
    static let pngSegmentsAbove = 300

    /// `canvas`'s PNG (`options`, no row filters) in two deflate segments: the rows below
    /// `segmentCut` on the band thread, the rows above it on this thread, joined here; byte for
    /// byte `PNGCodec.encodeSegmented` cut at `segmentCut(canvas)`. nil (nothing done) when the
    /// band thread is busy, the canvas is empty (the shared transparent tile is cheaper) or lower
    /// than 2 rows.
    func encodePNGInTwo(_ canvas: TileCanvas, options: PNGEncodeOptions, timing: inout BandTiming) -> [UInt8]? {
        guard canvas.height >= 2, !canvas.isEmpty else { return nil }
        let cut = Self.segmentCut(canvas)
        let rowBytes = canvas.width * 4
        let lower = BandThread.Result<PNGCodec.Segment>()
        let bandCPU = BandThread.Result<Double>()
        let lowerJob = BandThread.Claim()
        @Sendable func deflateLower() {
            lower.value = canvas.pixels.withUnsafeBufferPointer {
                PNGCodec.deflateSegment(premultiplied: UnsafeBufferPointer(rebasing: $0[(cut * rowBytes)...]), width: canvas.width,
                                        last: true, options: options)
            }
        }
        guard BandThread.shared.start(claimed: lowerJob, seconds: bandCPU, deflateLower) else { return nil }
        let handedOver = BandThread.threadCPUSeconds()
        defer { timing.band = bandCPU.value ?? 0 }
        let upper = canvas.pixels.withUnsafeBufferPointer {
            PNGCodec.deflateSegment(premultiplied: UnsafeBufferPointer(rebasing: $0[..<(cut * rowBytes)]), width: canvas.width,
                                    last: false, options: options)
        }
        timing.caller = BandThread.threadCPUSeconds() - handedOver
        if lowerJob.take() { deflateLower() }
        BandThread.shared.wait()
        return Self.joinSegments(width: canvas.width, height: canvas.height, [upper, lower.value!], options: options)
    }

    /// The row (1 ..< height) that splits `canvas`'s non-transparent rows (the ones deflate has
    /// work on) in half; half the height when there are none.
    static func segmentCut(_ canvas: TileCanvas) -> Int {
        let rowBytes = canvas.width * 4
        let nonEmpty: [Int] = canvas.pixels.withUnsafeBytes { px in
            (0..<canvas.height).filter { r in
                var i = r * rowBytes
                let end = i + rowBytes
                while i + 8 <= end {
                    if px.loadUnaligned(fromByteOffset: i, as: UInt64.self) != 0 { return true }
                    i += 8
                }
                while i < end { if px[i] != 0 { return true }; i += 1 }
                return false
            }
        }
        guard !nonEmpty.isEmpty else { return canvas.height / 2 }
        return min(max(nonEmpty[nonEmpty.count / 2], 1), canvas.height - 1)
    }
}
/// See `TileRenderer.renderStarted()`.
private let rendersRunning = Atomic<Int>(0)

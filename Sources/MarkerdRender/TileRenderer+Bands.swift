import Dispatch
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
/// of a dense z10 tile's CPU time in marker-bench's city tiles) and before PNG encoding (one
/// thread too).
///
/// Bands only pay off when the other core is idle, so they are used only while no other render
/// runs in this process (`rendersRunning`, counting `render` and `renderTile` calls, the latter
/// until its PNG is encoded, of every renderer): under many concurrent tile requests every
/// render keeps to its own thread. Bands cost about 15 % more CPU time than one thread (draws
/// that straddle the cut are sorted and tested in both bands; measured on marker-bench's 10M z10
/// city tiles), which is what concurrent requests lose when one of them renders alone. The second thread is
/// Dispatch's (`DispatchQueue.concurrentPerform`; the calling thread renders the other band).
///
/// Nor when the machine is busy (`idleCoreLikely`: the 1-minute load average at least the number
/// of online CPUs): then the helper thread waits in the run queue for milliseconds while the
/// calling thread, done with its band, waits for it. Measured on the 2-core machine with a load
/// average of 4-9 from other work: two bands gave no wall-clock gain at all on marker-bench's
/// 10M z10 city tiles (p50 11.9 against 11.1 ms one thread, p99 longer), for 15 % more CPU.
extension TileRenderer {
    /// Default `bandsAbove`: `Int.max`, off. Measured through GetTile on a quiet 2-core machine
    /// (load average about 1, 10M markers, bands from 2,000 draws): the z10 city tiles gained
    /// nothing in wall-clock time (p50 / p99 10.84 / 19.05 ms against 10.46 / 20.52 ms on one
    /// thread), while markerd's CPU time grew for every tile, also the ones rendered on one
    /// thread (z18 1.48 against 0.94 ms per call, z0 560 against 320 ms; presumably Dispatch's
    /// worker threads running on after the bands, not profiled), so bands are opt-in (e.g. 2,000 draws: a render of
    /// that many default pins takes about 1 ms of CPU).
    public static let defaultBandsAbove = Int.max

    /// Counts a `render` call starting; returns how many run now (this one included), in every
    /// renderer of the process. Each call is paired with `renderEnded()`.
    static func renderStarted() -> Int { rendersRunning.wrappingAdd(1, ordering: .relaxed).newValue }

    static func renderEnded() { rendersRunning.wrappingSubtract(1, ordering: .relaxed) }

    /// True when a second thread is likely to get a core at once: the 1-minute load average is
    /// below the number of online CPUs (true when either cannot be read). Reads /proc/loadavg
    /// (a few µs; asked only for rasters of at least `bandsAbove` draws, which take a
    /// millisecond or more).
    static func idleCoreLikely() -> Bool {
        var load = [Double](repeating: 0, count: 1)
        let cpus = sysconf(Int32(_SC_NPROCESSORS_ONLN))
        guard cpus > 0, getloadavg(&load, 1) == 1 else { return true }
        return load[0] < Double(cpus)
    }

    /// The row at which to cut `height` rows (1 ..< height) so that the larger band holds the
    /// fewest items (an item counts in every band its sprite rows reach).
    static func bandCut(_ items: [Item], _ sprites: [TileSprite], height: Int) -> Int {
        // tops[r]: items whose first row is r (clamped to 0 ... height); ends[r]: items whose
        // rows end at r (exclusive, clamped).
        var tops = [Int](repeating: 0, count: height + 1), ends = [Int](repeating: 0, count: height + 1)
        for it in items {
            let top = Int(it.y), h = sprites[Int(it.sprite)].height
            tops[min(max(top, 0), height)] += 1
            ends[min(max(top + h, 0), height)] += 1
        }
        // Cut at s: top band = items with top < s; bottom band = items with end > s.
        var best = height / 2, bestLoad = Int.max
        var above = 0, endedBy = ends[0]
        for s in 1..<height {
            above += tops[s - 1]; endedBy += ends[s]
            let load = max(above, items.count - endedBy)
            if load < bestLoad { bestLoad = load; best = s }
        }
        return best
    }

    /// Steps 1-3 (`renderItems`) as two bands on two threads, stacked (see above).
    func renderBands(_ layer: MarkerLayer, _ items: [Item], _ sprites: [TileSprite], width: Int, height: Int) -> (canvas: TileCanvas, draws: Int) {
        guard height >= 2 else { return renderItems(layer, items, sprites, width: width, height: height) }
        let cut = Self.bandCut(items, sprites, height: height)
        var upper: [Item] = [], lower: [Item] = []
        upper.reserveCapacity(items.count / 2 + items.count / 8)
        lower.reserveCapacity(items.count / 2 + items.count / 8)
        for it in items {
            if Int(it.y) < cut { upper.append(it) }
            if Int(it.y) + sprites[Int(it.sprite)].height > cut {
                var b = it
                b.y -= Int32(cut)
                lower.append(b)
            }
        }
        let top = upper, bottom = lower
        final class Results: @unchecked Sendable {
            // Each written by one band's thread only, read after both finished.
            var top: (canvas: TileCanvas, draws: Int)? = nil
            var bottom: (canvas: TileCanvas, draws: Int)? = nil
        }
        let results = Results()
        DispatchQueue.concurrentPerform(iterations: 2) { band in
            if band == 0 {
                results.top = renderItems(layer, top, sprites, width: width, height: cut)
            } else {
                results.bottom = renderItems(layer, bottom, sprites, width: width, height: height - cut)
            }
        }
        let a = results.top!, b = results.bottom!
        return (TileCanvas(stacking: a.canvas, b.canvas), a.draws + b.draws)
    }
}

/// See `TileRenderer.renderStarted()`.
private let rendersRunning = Atomic<Int>(0)

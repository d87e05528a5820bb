/// Per canvas pixel, how much the draws that come later in draw order (walked from the top of the
/// draw order down, `add`) shield it from whatever is drawn there earlier. A pixel whose bit is
/// set is *settled*: any earlier draws there, drawn or not, change its final value by at most 1
/// per channel (0 when the pixel is settled by an opaque draw). The renderer skips a draw whose
/// every non-transparent pixel inside the canvas is settled, and clips the others
/// (`uncovered`).
///
/// Why the bound holds (`TileCanvas`'s compositing, per channel): a draw with source alpha `a`
/// maps the destination `d` to `src + round(d x k / 255)`, `k = 255 - a`, rounded to nearest.
/// Two destinations that differ by at most `D` give outputs that differ by at most
/// `g(D) = ceil(D x k / 255)` (the two rounded values differ by less than `D x k / 255 + 1`).
/// `g` is monotone, so after the later draws of a pixel (alphas `a_1`, ..., `a_n` in draw
/// order) two histories differ by at most `h(D) = g_n(...g_1(D))`. The mask keeps per pixel
/// `T = max { D : h(D) <= 1 }` (capped at 255), starting at 1 (no later draw), and on adding an
/// earlier draw `T <- min(255, floor(255 x T / k))` (`k = 0`: 255), as `g(D) <= T` exactly when
/// `D x k <= 255 x T`. `T = 255` settles the pixel: no earlier history can move the final value
/// by more than 1. `T` only grows as the walk goes down, so at every pixel the settled draws are
/// a prefix of the draws there, and every draw after them is drawn (clips hold every
/// non-transparent unsettled pixel). Examples: one opaque pixel, or two with alpha >= 240
/// (`k <= 15`: 1 -> 17 -> 255), or eight with alpha 128; alpha below 128 alone never settles
/// (`T` stays 1) but adds up on top of stronger ones.
///
/// `exact` masks only count opaque pixels (settled with difference 0), the renderer's
/// `TileRenderer.Culling.exact`.
///
/// Besides the bit per pixel, a bit per 8 x 8 px block says the block is settled whole
/// (`blockBits`, refreshed by `add` where it set bits). `uncovered` tests a draw one block row at
/// a time against the blocks under the union of that block row's sprite spans and looks at the
/// pixel rows only where one of them is not settled whole: the same answer (a block settled whole
/// has no uncovered pixel), at about one word test per 8 rows. In a dense tile most of the canvas
/// is settled early, but its rows seldom whole (the sparse edges of a city keep them open), so
/// the row counts (`freeInRow`) alone left thousands of pins tested row by row.
struct CoverageMask {
    let width: Int
    let height: Int
    let wordsPerRow: Int
    let exact: Bool
    /// One bit per pixel: settled.
    private(set) var bits: [UInt64]
    /// Per canvas row: how many of its pixels are not settled (0: the row's tests need not look
    /// at its bits; in a dense raster most rows a draw covers are settled whole).
    private(set) var freeInRow: [Int32]
    /// Per pixel `T` (see the type's documentation), meaningful while the bit is clear; empty when `exact`.
    private(set) var levels: [UInt8]
    /// One bit per block of `blockSize x blockSize` pixels (block rows of `blockWordsPerRow`
    /// words): set when every pixel of the block is settled (pixels outside the canvas count as
    /// settled). Kept up to date by `add`; lets `uncovered` pass over a whole block row of a
    /// draw with a word test or two when the blocks under it are settled whole, instead of
    /// testing its rows one by one (in a dense tile most draws are settled except at a few rows).
    private(set) var blockBits: [UInt64]
    let blockWordsPerRow: Int
    /// Side of a block in pixels, 8 (`blockShift` = log2; `refreshBlocks` takes one byte of a
    /// row word per block).
    static let blockShift = 3, blockSize = 1 << blockShift
    /// Per shape index (the first `memoShapes`, allocated on first use): one bit per top-left
    /// position (`x` in `-shape.width ..< width`, `y` in `-shape.height ..< height`) where a draw
    /// of the shape was found to have no uncovered pixel (`uncovered` false). Settling only
    /// grows, so such a position stays fully settled and a later draw there (earlier in draw
    /// order) is left out with one bit test (`knownSettled`).
    private var settledAt: [[UInt64]] = []
    /// Shapes with a position memo; draws of other shapes are always tested pixel by pixel.
    static let memoShapes = 64

    init(width: Int, height: Int, exact: Bool = false) {
        self.width = width
        self.height = height
        self.exact = exact
        wordsPerRow = (width + 63) >> 6
        bits = [UInt64](repeating: 0, count: wordsPerRow * height)
        freeInRow = [Int32](repeating: Int32(width), count: height)
        levels = exact ? [] : [UInt8](repeating: 1, count: width * height)
        let blockColumns = (width + CoverageMask.blockSize - 1) >> CoverageMask.blockShift
        blockWordsPerRow = (blockColumns + 63) >> 6
        blockBits = [UInt64](repeating: 0, count: blockWordsPerRow * ((height + CoverageMask.blockSize - 1) >> CoverageMask.blockShift))
    }

    /// `min(255, floor(255 x T / k))` at `k << 8 | T` (`k = 0`: 255).
    static let nextLevel: [UInt8] = {
        var t = [UInt8](repeating: 255, count: 65536)
        for k in 1..<256 { for level in 0..<256 { t[k << 8 | level] = UInt8(min(255, 255 * level / k)) } }
        return t
    }()

    /// The row data of many sprites in flat arrays (so the per-draw tests touch no
    /// reference-counted storage): per sprite, 2 x height numbers of non-transparent spans
    /// (`RGBAImage.rowSpans`, or the full width) and 2 x height of longest opaque runs
    /// (`TileSprite.opaque`) in `data`, per block phase the union of the spans of each block
    /// row (`blocks`), and `255 - alpha` of every pixel in `weights`.
    struct Shapes {
        struct Shape {
            var width: Int
            var height: Int
            /// Offsets into `data`.
            var spans: Int
            var opaque: Int
            /// Offset into `data` of the block rows' spans: for a draw at canvas row `y`, phase
            /// `p = y & (blockSize - 1)`, the sprite rows in canvas block row `(y >> blockShift) + j`
            /// are `max(0, j x blockSize - p) ..< min(height, (j + 1) x blockSize - p)`; the union
            /// of their spans (`lo`, `hi`; empty: `lo >= hi`) is at `blocks + 2 x (p x blockRows + j)`.
            var blocks: Int
            /// Block rows per phase: the sprite's `height / blockSize + 2` (enough for any phase;
            /// stays when `height` is lowered to test fewer rows).
            var blockRows: Int
            /// Offset into `weights`.
            var weights: Int
        }
        private(set) var shapes: [Shape] = []
        private(set) var data: [Int32] = []
        private(set) var weights: [UInt8] = []

        init(_ sprites: [TileSprite]) {
            for s in sprites { append(s) }
        }

        /// Adds a sprite's rows as the next shape.
        mutating func append(_ s: TileSprite) {
            let spans = data.count
            if s.image.rowSpans.isEmpty {
                for _ in 0..<s.height { data.append(0); data.append(Int32(s.width)) }
            } else {
                data.append(contentsOf: s.image.rowSpans)
            }
            let opaque = data.count
            data.append(contentsOf: s.opaque)
            let blocks = data.count
            let size = CoverageMask.blockSize
            for p in 0..<size {
                for j in 0..<(s.height >> CoverageMask.blockShift + 2) {
                    var lo = Int32.max, hi = Int32.min
                    let first = max(0, j * size - p)
                    for r in first..<max(first, min(s.height, (j + 1) * size - p)) where data[spans + 2 * r] < data[spans + 2 * r + 1] {
                        lo = min(lo, data[spans + 2 * r]); hi = max(hi, data[spans + 2 * r + 1])
                    }
                    data.append(lo); data.append(hi)
                }
            }
            let w = weights.count
            weights.reserveCapacity(w + s.width * s.height)
            for i in 0..<(s.width * s.height) { weights.append(255 - s.image.pixels[4 * i + 3]) }
            shapes.append(Shape(width: s.width, height: s.height, spans: spans, opaque: opaque, blocks: blocks,
                                blockRows: s.height >> CoverageMask.blockShift + 2, weights: w))
        }
    }

    @inline(__always) private static func mask(_ a: Int, _ b: Int) -> UInt64 {
        // Bits a...b (inclusive) of one word, 0 <= a <= b < 64.
        let hi: UInt64 = b == 63 ? ~0 : (UInt64(1) << UInt64(b + 1)) &- 1
        return hi & ~((UInt64(1) << UInt64(a)) &- 1)
    }

    /// Says where a draw of `shape` with its top-left at (`x`, `y`) is still needed. A pixel
    /// counts as uncovered when it lies inside the canvas and in its row's span (from the row's
    /// first to its last non-transparent pixel, so a superset of the non-transparent ones) and its
    /// bit is clear. Appends to `clips` the range of sprite rows `r0 ..< r1` with an uncovered
    /// pixel, then per row of it the sprite columns from its first to its last uncovered pixel
    /// (`r0, r1, lo0, hi0, lo1, hi1, ...`; a row without one gets an empty range). Pixels left
    /// out are transparent or get an opaque pixel from a later draw, as do covered pixels inside
    /// the ranges, so not drawing them changes nothing. Returns false (and appends nothing) when
    /// no pixel is uncovered. Sprites are at most 1024 px, so the numbers fit in Int16.
    func uncovered(_ shape: Shapes.Shape, _ data: UnsafeBufferPointer<Int32>, x: Int, y: Int, into clips: inout [Int16]) -> Bool {
        let r0 = max(0, -y), r1 = min(shape.height, height - y)
        if r0 >= r1 { return false }
        // The clip is built in a scratch buffer and appended once (appending per row, or writing
        // into the array row by row, costs a uniqueness check each).
        return withUnsafeTemporaryAllocation(of: Int16.self, capacity: 2 + 2 * (r1 - r0)) { out in
            var first = -1, last = -1
            // Per canvas block row under the draw, the blocks under the union of its rows' spans are
            // tested first (`blockBits`): when all are settled whole, so is every pixel of those rows'
            // spans, and the rows are passed over at once.
            let shift = CoverageMask.blockShift, size = CoverageMask.blockSize
            let blockSpans = shape.blocks + 2 * (y & (size - 1)) * shape.blockRows
            bits.withUnsafeBufferPointer { w in
            blockBits.withUnsafeBufferPointer { b in
            freeInRow.withUnsafeBufferPointer { free in
                for br in ((y + r0) >> shift)...((y + r1 - 1) >> shift) {
                    let j = br - y >> shift
                    let blo = max(x + Int(data[blockSpans + 2 * j]), 0), bhi = min(x + Int(data[blockSpans + 2 * j + 1]), width)
                    guard blo < bhi, CoverageMask.firstClear(b, row: br * blockWordsPerRow, blo >> shift, (bhi - 1) >> shift + 1) != nil else { continue }
                    for r in max(r0, br << shift - y)..<min(r1, (br + 1) << shift - y) where free[y + r] != 0 {
                        let lo = max(x + Int(data[shape.spans + 2 * r]), 0), hi = min(x + Int(data[shape.spans + 2 * r + 1]), width)
                        let row = (y + r) * wordsPerRow
                        guard lo < hi, let a = CoverageMask.firstClear(w, row: row, lo, hi) else { continue }
                        if first < 0 { first = r }
                        // Rows since the last one with an uncovered pixel get an empty range.
                        var gap = last < 0 ? r : last + 1
                        while gap < r { out[2 + 2 * (gap - first)] = 0; out[3 + 2 * (gap - first)] = 0; gap += 1 }
                        last = r
                        out[2 + 2 * (r - first)] = Int16(a - x)
                        out[3 + 2 * (r - first)] = Int16(CoverageMask.lastClear(w, row: row, lo, hi) + 1 - x)
                    }
                }
            }
            }
            }
            guard first >= 0 else { return false }
            out[0] = Int16(first); out[1] = Int16(last + 1)
            clips.append(contentsOf: UnsafeBufferPointer(rebasing: out[0..<(2 + 2 * (last + 1 - first))]))
            return true
        }
    }

    /// The bit of `settledAt[index]` for a draw of `shape` with its top-left at (`x`, `y`), or
    /// nil when the position lies outside the memo (no pixel on the canvas, or too many shapes).
    @inline(__always) private func memoBit(_ index: Int, _ shape: Shapes.Shape, x: Int, y: Int) -> Int? {
        guard index < CoverageMask.memoShapes, x > -shape.width, x < width, y > -shape.height, y < height else { return nil }
        return (y + shape.height) * (width + shape.width) + x + shape.width
    }

    /// True when a draw of shape `index` at (`x`, `y`) was already found fully settled
    /// (`markSettled`): it has no uncovered pixel now either.
    @inline(__always) func knownSettled(_ index: Int, _ shape: Shapes.Shape, x: Int, y: Int) -> Bool {
        guard index < settledAt.count, let b = memoBit(index, shape, x: x, y: y) else { return false }
        let words = settledAt[index]
        return !words.isEmpty && words[b >> 6] >> UInt64(b & 63) & 1 != 0
    }

    /// Remembers that a draw of shape `index` at (`x`, `y`) has no uncovered pixel.
    mutating func markSettled(_ index: Int, _ shape: Shapes.Shape, x: Int, y: Int) {
        guard let b = memoBit(index, shape, x: x, y: y) else { return }
        if settledAt.count <= index { settledAt.append(contentsOf: repeatElement([], count: index + 1 - settledAt.count)) }
        if settledAt[index].isEmpty {
            settledAt[index] = [UInt64](repeating: 0, count: ((width + shape.width) * (height + shape.height + 1) + 63) / 64)
        }
        settledAt[index][b >> 6] |= UInt64(1) << UInt64(b & 63)
    }

    /// True when every pixel of canvas row `row` in columns `lo ..< hi` (clipped to the canvas) is settled.
    func settled(row: Int, _ lo: Int, _ hi: Int) -> Bool {
        let a = max(lo, 0), b = min(hi, width)
        if a >= b || row < 0 || row >= height || freeInRow[row] == 0 { return true }
        return bits.withUnsafeBufferPointer { CoverageMask.firstClear($0, row: row * wordsPerRow, a, b) == nil }
    }

    /// The first pixel in `lo ..< hi` of a row whose bit is clear, or nil.
    @inline(__always) private static func firstClear(_ w: UnsafeBufferPointer<UInt64>, row: Int, _ lo: Int, _ hi: Int) -> Int? {
        var k = lo >> 6
        let wb = (hi - 1) >> 6
        while k <= wb {
            var free = ~w[row + k]
            if k == lo >> 6 { free &= ~((UInt64(1) << UInt64(lo & 63)) &- 1) }
            if k == wb { free &= mask(0, (hi - 1) & 63) }
            if free != 0 { return k << 6 + free.trailingZeroBitCount }
            k += 1
        }
        return nil
    }

    /// The last pixel in `lo ..< hi` of a row whose bit is clear (one must exist).
    @inline(__always) private static func lastClear(_ w: UnsafeBufferPointer<UInt64>, row: Int, _ lo: Int, _ hi: Int) -> Int {
        var k = (hi - 1) >> 6
        let wa = lo >> 6
        while k >= wa {
            var free = ~w[row + k]
            if k == (hi - 1) >> 6 { free &= mask(0, (hi - 1) & 63) }
            if k == wa { free &= ~((UInt64(1) << UInt64(lo & 63)) &- 1) }
            if free != 0 { return k << 6 + 63 - free.leadingZeroBitCount }
            k -= 1
        }
        preconditionFailure("lastClear without a clear bit")
    }

    /// Adds a draw of `shape` with its top-left at (`x`, `y`) (the next one down the draw order):
    /// its opaque runs settle their pixels; unless `exact`, every other non-transparent pixel
    /// updates its `T`, and settles at 255.
    mutating func add(_ shape: Shapes.Shape, _ data: UnsafeBufferPointer<Int32>, _ weights: UnsafeBufferPointer<UInt8>, x: Int, y: Int) {
        add(shape, data, weights, x: x, y: y, clip: nil)
    }

    /// `add` limited to `clip`, what `uncovered` appended for this draw at this mask (`r0, r1,
    /// lo0, hi0, ...`): the same result, as every pixel of the draw outside its clip is already
    /// settled (nothing to add there), but only the clip's rows and columns are visited.
    mutating func add(_ shape: Shapes.Shape, _ data: UnsafeBufferPointer<Int32>, _ weights: UnsafeBufferPointer<UInt8>, x: Int, y: Int,
                      clip: UnsafeBufferPointer<Int16>?) {
        var r0 = max(0, -y), r1 = min(shape.height, height - y)
        if let clip { r0 = max(r0, Int(clip[0])); r1 = min(r1, Int(clip[1])) }
        if r0 >= r1 { return }
        let wpr = wordsPerRow, canvasWidth = width, exact = exact
        // Canvas rows and columns where bits were set (for `refreshBlocks`).
        var setTop = Int.max, setBottom = Int.min, setLo = Int.max, setHi = Int.min
        CoverageMask.nextLevel.withUnsafeBufferPointer { next in
        levels.withUnsafeMutableBufferPointer { lv in
        freeInRow.withUnsafeMutableBufferPointer { free in
        bits.withUnsafeMutableBufferPointer { w in
            for r in r0..<r1 where free[y + r] != 0 {
                let row = (y + r) * wpr
                // Bits set in this row (counted off `freeInRow` at the end of the row).
                var newlySet = 0
                // The row's columns to visit: inside the canvas and the clip.
                var cl = 0, ch = canvasWidth
                if let clip {
                    let c = 2 + 2 * (r - Int(clip[0]))
                    cl = max(0, x + Int(clip[c])); ch = min(canvasWidth, x + Int(clip[c + 1]))
                    if cl >= ch { continue }
                }
                let lo = max(x + Int(data[shape.opaque + 2 * r]), cl), hi = min(x + Int(data[shape.opaque + 2 * r + 1]), ch)
                if lo < hi {
                    let wa = lo >> 6, wb = (hi - 1) >> 6
                    var k = wa
                    while k <= wb {
                        let m = CoverageMask.mask(k == wa ? lo & 63 : 0, k == wb ? (hi - 1) & 63 : 63)
                        newlySet += (m & ~w[row + k]).nonzeroBitCount
                        w[row + k] |= m
                        k += 1
                    }
                }
                if newlySet > 0 {
                    setTop = min(setTop, y + r); setBottom = max(setBottom, y + r)
                    setLo = min(setLo, lo); setHi = max(setHi, hi)
                }
                free[y + r] -= Int32(newlySet)
                newlySet = 0
                if exact { continue }
                // The other non-transparent pixels not settled yet.
                let slo = max(x + Int(data[shape.spans + 2 * r]), cl), shi = min(x + Int(data[shape.spans + 2 * r + 1]), ch)
                if slo >= shi { continue }
                let wrow = shape.weights + r * shape.width - x
                let lrow = (y + r) * canvasWidth
                // Word by word: the pixels not settled yet are the clear bits.
                let wa = slo >> 6, wb = (shi - 1) >> 6
                for k in wa...wb {
                    var free = ~w[row + k] & CoverageMask.mask(k == wa ? slo & 63 : 0, k == wb ? (shi - 1) & 63 : 63)
                    var settle: UInt64 = 0
                    while free != 0 {
                        let cx = k << 6 | free.trailingZeroBitCount
                        free &= free &- 1
                        let kw = Int(weights[wrow + cx])
                        if kw == 255 { continue }
                        let t = next[kw << 8 | Int(lv[lrow + cx])]
                        lv[lrow + cx] = t
                        if t == 255 {
                            settle |= UInt64(1) << UInt64(cx & 63)
                            setLo = min(setLo, cx); setHi = max(setHi, cx + 1)
                        }
                    }
                    if settle != 0 { w[row + k] |= settle; newlySet += settle.nonzeroBitCount }
                }
                if newlySet > 0 { setTop = min(setTop, y + r); setBottom = max(setBottom, y + r) }
                free[y + r] -= Int32(newlySet)
            }
        }
        }
        }
        }
        if setTop <= setBottom { refreshBlocks(rows: setTop, setBottom + 1, columns: setLo, setHi) }
    }

    /// Sets the bits of `blockBits` whose blocks meet canvas rows `top ..< bottom` and columns
    /// `lo ..< hi` and are settled whole now: per block row, the AND of its rows' words (rows
    /// and columns outside the canvas as settled), then per byte (one block) whether it is all ones.
    private mutating func refreshBlocks(rows top: Int, _ bottom: Int, columns lo: Int, _ hi: Int) {
        let shift = CoverageMask.blockShift
        let wpr = wordsPerRow, bwpr = blockWordsPerRow, canvasHeight = height
        // Bits of the last word that lie outside the canvas.
        let outside: UInt64 = width & 63 == 0 ? 0 : ~CoverageMask.mask(0, (width - 1) & 63)
        let lastWord = (width - 1) >> 6
        bits.withUnsafeBufferPointer { w in
        blockBits.withUnsafeMutableBufferPointer { b in
            for br in (top >> shift)...((bottom - 1) >> shift) {
                let rowEnd = min(canvasHeight, (br + 1) << shift)
                for k in (lo >> 6)...((hi - 1) >> 6) {
                    var all: UInt64 = ~0
                    for row in (br << shift)..<rowEnd { all &= w[row * wpr + k] }
                    if k == lastWord { all |= outside }
                    if all == 0 { continue }
                    // Per byte: bit 0 set when all 8 bits are (blockSize 8: one byte per block).
                    all &= all >> 4; all &= all >> 2; all &= all >> 1
                    let packed = ((all & 0x0101_0101_0101_0101) &* 0x0102_0408_1020_4080) >> 56
                    let first = k << (6 - shift)
                    b[br * bwpr + first >> 6] |= packed << UInt64(first & 63)
                }
            }
        }
        }
    }
}

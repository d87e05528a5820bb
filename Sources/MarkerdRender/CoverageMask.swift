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
///
/// Layout (`Storage`): every bit row has a guard word on either side whose bits are all set, and
/// the bits of the last word past the canvas's width are set too (outside the canvas counts as
/// settled). A row test then reads the 64 columns from any column on as one word shifted from
/// two (`chunk`), with no clipping, and compares it with the sprite row's own bit masks
/// (`Shapes`: its non-transparent, opaque and partly transparent pixels, 64 columns a word from
/// its left edge). Block rows are laid out the same way, and a draw's block row is tested
/// against a mask of the blocks its pixels meet, made per sprite for each of the 8 x 8 phases
/// of its position (`Shapes.Shape.blockMasks`): for a pin at density 1, one word test per block
/// row and one per pixel row. The tables are manually allocated, copied on write (one
/// uniqueness check per `uncovered` or `add`), so that the per-draw tests touch no
/// reference-counted storage. A sprite's tables are made once, with the sprite
/// (`TileSprite.shape`). On the z10 tile of `marker-bench --only onecity` the whole render took
/// 0.79x the instructions it took with the previous array-based mask (callgrind).
struct CoverageMask {
    let width: Int
    let height: Int
    /// Real words per bit row (`width / 64` rounded up); a row takes `stride` = this + 2 words.
    let wordsPerRow: Int
    let exact: Bool
    let blockWordsPerRow: Int
    /// Block columns (`width / blockSize` rounded up) and block rows.
    let blockColumns: Int, blockRows: Int
    private var store: Storage
    /// `store`'s tables and strides, held here so that the tests read them without touching
    /// the class (set again when `unique` copies it).
    private var bits: UnsafeMutablePointer<UInt64>
    private var blocks: UnsafeMutablePointer<UInt64>
    private var free: UnsafeMutablePointer<Int32>
    private var levels: UnsafeMutablePointer<UInt8>
    private var memo: UnsafeMutablePointer<UnsafeMutablePointer<UInt64>?>
    private let stride: Int, blockStride: Int
    /// `levelTable`, read once here rather than through its lazy global on every `add`.
    private let nextLevels: UnsafePointer<UInt8> = CoverageMask.levelTable

    /// Side of a block in pixels, 8 (`blockShift` = log2; `refreshBlocks` takes one byte of a
    /// row word per block).
    static let blockShift = 3, blockSize = 1 << blockShift
    /// Shapes with a position memo; draws of other shapes are always tested pixel by pixel.
    static let memoShapes = 64

    /// The mask's tables, allocated once (see the type's documentation).
    private final class Storage {
        let stride: Int, blockStride: Int
        let bitCount: Int, levelCount: Int, blockCount: Int, height: Int
        /// One bit per pixel (set: settled), `height` rows of `stride` words; the first word of a
        /// row is its left guard.
        let bits: UnsafeMutablePointer<UInt64>
        /// Per row: how many of its pixels are not settled.
        let free: UnsafeMutablePointer<Int32>
        /// Per pixel `T` (see the type's documentation), meaningful while the bit is clear; no
        /// entries when `exact`.
        let levels: UnsafeMutablePointer<UInt8>
        /// One bit per block (set: settled whole), laid out as `bits`.
        let blocks: UnsafeMutablePointer<UInt64>
        /// Per shape index (the first `memoShapes`, allocated on first use): one bit per top-left
        /// position (`x` in `-shape.width ..< width`, `y` in `-shape.height ..< height`) where a
        /// draw of the shape was found to have no uncovered pixel. Settling only grows, so such a
        /// position stays fully settled and a later draw there (earlier in draw order) is left
        /// out with one bit test (`knownSettled`).
        let memo: UnsafeMutablePointer<UnsafeMutablePointer<UInt64>?>
        let memoWords: UnsafeMutablePointer<Int>
        init(stride: Int, height: Int, levelCount: Int, blockStride: Int, blockRows: Int) {
            self.stride = stride; self.blockStride = blockStride; self.height = height
            bitCount = stride * height; self.levelCount = levelCount; blockCount = blockStride * blockRows
            bits = .allocate(capacity: max(1, bitCount))
            free = .allocate(capacity: max(1, height))
            levels = .allocate(capacity: max(1, levelCount))
            blocks = .allocate(capacity: max(1, blockCount))
            memo = .allocate(capacity: CoverageMask.memoShapes)
            memo.initialize(repeating: nil, count: CoverageMask.memoShapes)
            memoWords = .allocate(capacity: CoverageMask.memoShapes)
            memoWords.initialize(repeating: 0, count: CoverageMask.memoShapes)
        }

        func copy() -> Storage {
            let c = Storage(stride: stride, height: height, levelCount: levelCount, blockStride: blockStride,
                            blockRows: blockCount / max(1, blockStride))
            c.bits.initialize(from: bits, count: bitCount)
            c.free.initialize(from: free, count: height)
            c.levels.initialize(from: levels, count: levelCount)
            c.blocks.initialize(from: blocks, count: blockCount)
            for i in 0..<CoverageMask.memoShapes {
                guard let m = memo[i] else { continue }
                let n = memoWords[i]
                let p = UnsafeMutablePointer<UInt64>.allocate(capacity: n)
                p.initialize(from: m, count: n)
                c.memo[i] = p; c.memoWords[i] = n
            }
            return c
        }

        deinit {
            bits.deallocate(); free.deallocate(); levels.deallocate(); blocks.deallocate()
            for i in 0..<CoverageMask.memoShapes { memo[i]?.deallocate() }
            memo.deallocate(); memoWords.deallocate()
        }
    }

    init(width: Int, height: Int, exact: Bool = false) {
        self.width = width
        self.height = height
        self.exact = exact
        wordsPerRow = (width + 63) >> 6
        blockColumns = (width + CoverageMask.blockSize - 1) >> CoverageMask.blockShift
        blockRows = (height + CoverageMask.blockSize - 1) >> CoverageMask.blockShift
        blockWordsPerRow = (blockColumns + 63) >> 6
        let store = Storage(stride: wordsPerRow + 2, height: height, levelCount: exact ? 0 : width * height,
                            blockStride: blockWordsPerRow + 2, blockRows: blockRows)
        CoverageMask.fill(store.bits, rows: height, columns: width, wordsPerRow: wordsPerRow)
        CoverageMask.fill(store.blocks, rows: blockRows, columns: blockColumns, wordsPerRow: blockWordsPerRow)
        store.free.initialize(repeating: Int32(width), count: height)
        store.levels.initialize(repeating: 1, count: store.levelCount)
        self.store = store
        bits = store.bits; blocks = store.blocks; free = store.free; levels = store.levels; memo = store.memo
        stride = store.stride; blockStride = store.blockStride
    }

    /// Clear bits for `columns` per row, set bits for the guard words and past the last column.
    private static func fill(_ p: UnsafeMutablePointer<UInt64>, rows: Int, columns: Int, wordsPerRow: Int) {
        let stride = wordsPerRow + 2
        let past: UInt64 = columns & 63 == 0 ? 0 : ~0 << UInt64(columns & 63)
        for r in 0..<rows {
            let row = p + r * stride
            row.initialize(to: ~0)
            (row + 1).initialize(repeating: 0, count: wordsPerRow)
            (row + stride - 1).initialize(to: ~0)
            if wordsPerRow > 0 { row[wordsPerRow] |= past }
        }
    }

    /// Makes the storage this mask's own before a change (copy on write).
    @inline(__always) private mutating func unique() {
        if isKnownUniquelyReferenced(&store) { return }
        store = store.copy()
        bits = store.bits; blocks = store.blocks; free = store.free; levels = store.levels; memo = store.memo
    }

    /// `nextLevel` in memory that is never freed, read through a pointer (no array access per pixel).
    nonisolated(unsafe) static let levelTable: UnsafePointer<UInt8> = {
        let p = UnsafeMutablePointer<UInt8>.allocate(capacity: 65536)
        p.initialize(from: nextLevel, count: 65536)
        return UnsafePointer(p)
    }()

    /// `min(255, floor(255 x T / k))` at `k << 8 | T` (`k = 0`: 255).
    static let nextLevel: [UInt8] = {
        var t = [UInt8](repeating: 255, count: 65536)
        for k in 1..<256 { for level in 0..<256 { t[k << 8 | level] = UInt8(min(255, 255 * level / k)) } }
        return t
    }()

    /// The shapes of a raster's sprites, in its sprite indexes' order (`shapes[i]` is sprite `i`'s
    /// `TileSprite.shape`); keeps the sprites' tables alive while the mask reads them.
    struct Shapes {
        /// What the mask reads of one sprite, all in tables its `SpriteShape` owns (so the
        /// per-draw tests touch no reference-counted storage).
        struct Shape {
            var width: Int
            var height: Int
            /// The block rows' spans: for a draw at canvas row `y`, phase `p = y & (blockSize - 1)`,
            /// the sprite rows in canvas block row `(y >> blockShift) + j` are
            /// `max(0, j x blockSize - p) ..< min(height, (j + 1) x blockSize - p)`; the union of
            /// their spans (`lo`, `hi`; empty: `lo >= hi`) is at `blockSpans + 2 x (p x blockRows + j)`.
            var blockSpans: UnsafePointer<Int32>
            /// Block rows per phase: the sprite's `height / blockSize + 2` (enough for any phase;
            /// stays when `height` is lowered to test fewer rows).
            var blockRows: Int
            /// `255 - alpha` of every pixel, row by row.
            var weights: UnsafePointer<UInt8>
            /// Words per row of each bit mask: `width / 64` rounded up. Bit `b` of word `j` is
            /// sprite column `64 j + b`.
            var words: Int
            /// The rows' masks (`words` words per row): pixels with alpha > 0, with alpha 255, and
            /// with alpha in 1 ... 254.
            var visibleMasks: UnsafePointer<UInt64>
            var opaqueMasks: UnsafePointer<UInt64>
            var partialMasks: UnsafePointer<UInt64>
            /// The block masks (nil for sprites over `blockMaskMaxSize` px): for a draw at canvas
            /// column `x`, row `y`, per phase `p = y & 7`, `q = x & 7` and block row `j` (as for
            /// `blockSpans`), `blockWords` words whose bit `i` of word `w` is set when a
            /// non-transparent pixel of those sprite rows lies in canvas block column
            /// `(x >> blockShift) + 64 w + i`, at `blockMasks + ((p x 8 + q) x blockRows + j) x blockWords`.
            var blockMasks: UnsafePointer<UInt64>?
            var blockWords: Int
        }
        private(set) var shapes: [Shape] = []
        private var owners: [SpriteShape] = []

        init(_ sprites: [TileSprite]) {
            for s in sprites { append(s) }
        }

        /// Adds a sprite's shape as the next one.
        mutating func append(_ s: TileSprite) {
            owners.append(s.shape)
            shapes.append(s.shape.shape)
        }
    }

    /// The tables of one sprite's `Shapes.Shape`, made once when the sprite is made
    /// (`TileSprite.shape`), not for each raster. Immutable after `init`.
    final class SpriteShape: @unchecked Sendable {
        let shape: Shapes.Shape
        private let data: UnsafeMutablePointer<Int32>
        private let weights: UnsafeMutablePointer<UInt8>
        private let masks: UnsafeMutablePointer<UInt64>

        init(_ image: RGBAImage) {
            let width = image.width, height = image.height
            // The rows' spans, then per phase the union of each block row's spans.
            var data: [Int32] = []
            if image.rowSpans.isEmpty {
                for _ in 0..<height { data.append(0); data.append(Int32(width)) }
            } else {
                data.append(contentsOf: image.rowSpans)
            }
            let size = CoverageMask.blockSize, blockRows = height >> CoverageMask.blockShift + 2
            let blockSpans = data.count
            for p in 0..<size {
                for j in 0..<blockRows {
                    var lo = Int32.max, hi = Int32.min
                    let first = max(0, j * size - p)
                    for r in first..<max(first, min(height, (j + 1) * size - p)) where data[2 * r] < data[2 * r + 1] {
                        lo = min(lo, data[2 * r]); hi = max(hi, data[2 * r + 1])
                    }
                    data.append(lo); data.append(hi)
                }
            }
            let weights = (0..<(width * height)).map { 255 - image.pixels[4 * $0 + 3] }
            let words = (width + 63) >> 6
            let opaque = words * height, partial = 2 * words * height
            var masks = [UInt64](repeating: 0, count: 3 * words * height)
            image.pixels.withUnsafeBufferPointer { px in
                for r in 0..<height {
                    for c in 0..<width {
                        let a = px[4 * (r * width + c) + 3]
                        if a == 0 { continue }
                        let bit = UInt64(1) << UInt64(c & 63), k = r * words + c >> 6
                        masks[k] |= bit
                        masks[(a == 255 ? opaque : partial) + k] |= bit
                    }
                }
            }
            var blockMasks = -1, blockWords = 0
            if width <= CoverageMask.blockMaskMaxSize && height <= CoverageMask.blockMaskMaxSize {
                (blockMasks, blockWords) = SpriteShape.appendBlockMasks(&masks, width: width, height: height, blockRows: blockRows)
            }
            self.data = SpriteShape.copy(data)
            self.weights = SpriteShape.copy(weights)
            self.masks = SpriteShape.copy(masks)
            shape = Shapes.Shape(width: width, height: height, blockSpans: self.data + blockSpans, blockRows: blockRows,
                                 weights: self.weights, words: words, visibleMasks: self.masks, opaqueMasks: self.masks + opaque,
                                 partialMasks: self.masks + partial, blockMasks: blockMasks < 0 ? nil : UnsafePointer(self.masks + blockMasks),
                                 blockWords: blockWords)
        }

        deinit { data.deallocate(); weights.deallocate(); masks.deallocate() }

        /// `a` in a buffer of its own (at least one element, so that it has an address).
        private static func copy<T: FixedWidthInteger>(_ a: [T]) -> UnsafeMutablePointer<T> {
            let p = UnsafeMutablePointer<T>.allocate(capacity: max(1, a.count))
            a.withUnsafeBufferPointer { b in
                if let base = b.baseAddress, !b.isEmpty { p.initialize(from: base, count: b.count) } else { p.initialize(to: 0) }
            }
            return p
        }

        /// Appends to `masks` (whose first `3 x words x height` words are the rows' masks, the
        /// visible ones first) the block masks of the sprite (see `Shape.blockMasks`); returns
        /// their offset and words per mask.
        private static func appendBlockMasks(_ masks: inout [UInt64], width: Int, height: Int, blockRows: Int) -> (Int, Int) {
            let size = CoverageMask.blockSize, words = (width + 63) >> 6
            // Block columns reached from phase 7: (7 + width - 1) / 8 + 1 at most.
            let blockWords = ((width + 6) >> CoverageMask.blockShift + 1 + 63) >> 6
            let at = masks.count
            masks.append(contentsOf: repeatElement(0, count: size * size * blockRows * blockWords))
            var union = [UInt64](repeating: 0, count: words)
            for p in 0..<size {
                for j in 0..<blockRows {
                    for k in 0..<words { union[k] = 0 }
                    let first = max(0, j * size - p)
                    for r in first..<max(first, min(height, (j + 1) * size - p)) {
                        for k in 0..<words { union[k] |= masks[r * words + k] }
                    }
                    for q in 0..<size {
                        let base = at + ((p * size + q) * blockRows + j) * blockWords
                        for k in 0..<words where union[k] != 0 {
                            // Columns 64 k + c sit at q + 64 k + c from the block column of x:
                            // blocks 8 k + (q + c) / 8, from the two halves of the shifted word.
                            let lo = union[k] << UInt64(q), hi = q == 0 ? 0 : union[k] >> UInt64(64 - q)
                            masks[base + (8 * k) >> 6] |= CoverageMask.anyPerByte(lo) << UInt64((8 * k) & 63)
                            if hi != 0 {
                                masks[base + (8 * k + 8) >> 6] |= CoverageMask.anyPerByte(hi) << UInt64((8 * k + 8) & 63)
                            }
                        }
                    }
                }
            }
            return (at, blockWords)
        }
    }

    /// Sprites at most this many px wide and high get block masks (`Shape.blockMasks`; 8 x 8
    /// phases of them: bigger image icons would hold megabytes of them).
    static let blockMaskMaxSize = 256

    /// Per byte of `v`, whether it has a set bit: 8 bits, byte 0 first.
    @inline(__always) static func anyPerByte(_ v: UInt64) -> UInt64 {
        var v = v
        v |= v >> 4; v |= v >> 2; v |= v >> 1
        return ((v & 0x0101_0101_0101_0101) &* 0x0102_0408_1020_4080) >> 56
    }

    /// Bits `a ..< b` of a word, clamped to `0 ... 64` (0 when empty).
    @inline(__always) static func rangeMask(_ a: Int, _ b: Int) -> UInt64 {
        let lo = max(a, 0), hi = min(b, 64)
        if lo >= hi { return 0 }
        let top: UInt64 = hi == 64 ? ~0 : (UInt64(1) &<< UInt64(hi)) &- 1
        return top & ~((UInt64(1) &<< UInt64(lo)) &- 1)
    }

    /// The 64 bits of columns `c ..< c + 64` of a row laid out as `bits` (`row`: its left guard
    /// word; `columns`: the row's columns); columns outside the row read as set.
    @inline(__always) static func chunk(_ row: UnsafePointer<UInt64>, _ c: Int, columns: Int) -> UInt64 {
        if c <= -64 || c >= columns { return ~0 }
        let p = c &+ 64, k = p &>> 6, s = UInt64(p & 63)
        return row[k] &>> s | (row[k &+ 1] &<< 1) &<< (63 &- s)
    }

    /// Sets in a row laid out as `bits` the bits of `m` placed at column `c` (every bit of `m`
    /// must lie on the row); returns how many were clear.
    @inline(__always) static func deposit(_ row: UnsafeMutablePointer<UInt64>, _ c: Int, _ m: UInt64) -> Int {
        let p = c &+ 64, k = p &>> 6, s = UInt64(p & 63)
        let lo = m &<< s, hi = (m &>> 1) &>> (63 &- s)
        let n = (lo & ~row[k]).nonzeroBitCount &+ (hi & ~row[k &+ 1]).nonzeroBitCount
        row[k] |= lo
        row[k &+ 1] |= hi
        return n
    }

    /// True when every bit of columns `a ... b` (inclusive, any integers) of a row laid out as
    /// `bits` is set.
    @inline(__always) static func allSet(_ row: UnsafePointer<UInt64>, _ a: Int, _ b: Int, columns: Int) -> Bool {
        var c = a
        while c <= b {
            let n = b - c + 1
            let m: UInt64 = n >= 64 ? ~0 : (UInt64(1) &<< UInt64(n)) &- 1
            if ~chunk(row, c, columns: columns) & m != 0 { return false }
            c += 64
        }
        return true
    }

    /// Says where a draw of `shape` with its top-left at (`x`, `y`) is still needed. A pixel
    /// counts as uncovered when it lies inside the canvas, has alpha > 0 and its bit is clear.
    /// Appends to `clips` the range of sprite rows `r0 ..< r1` with an uncovered pixel, then per
    /// row of it `shape.words` masks of its uncovered pixels (bit `c` of word `k`: sprite column
    /// `64 k + c`; `r0, r1, m(r0, 0), m(r0, 1), ..., m(r0 + 1, 0), ...`; a row without one gets
    /// zero masks). The renderer draws exactly these pixels (`TileCanvas.composite`), so a
    /// pixel's value depends only on the draws that cover it: any window of a raster rendered
    /// on its own has the raster's bytes there. Returns false (and appends nothing) when no
    /// pixel is uncovered. (This form, for tests, appends to an array; the renderer's cull writes
    /// into a `ClipBuffer` through `uncoveredThenAdd`, without a buffer per call.)
    mutating func uncovered(_ shape: Shapes.Shape, x: Int, y: Int, into clips: inout [UInt64]) -> Bool {
        var buffer = ClipBuffer(capacity: 2 &+ shape.words &* shape.height)
        defer { clips.append(contentsOf: UnsafeBufferPointer(start: buffer.base, count: buffer.count)) }
        return uncovered(shape, x: x, y: y, into: &buffer, adding: nil)
    }

    /// `uncovered`, then `add(drawn, x: x, y: y, clip:)` with the clip it appended (when it
    /// appended one), in one pass: each row is added as soon as its span is known. The same
    /// result as the two calls: a row's test reads that row's bits only, which no earlier row's
    /// addition changes, and the block bits are refreshed once at the end as `add` does.
    /// `tested` is `drawn` with `height` lowered to skip rows known to be settled (or `drawn`).
    mutating func uncoveredThenAdd(_ tested: Shapes.Shape, _ drawn: Shapes.Shape, x: Int, y: Int, into clips: inout ClipBuffer) -> Bool {
        uncovered(tested, x: x, y: y, into: &clips, adding: drawn)
    }

    @inline(__always)
    private mutating func uncovered(_ shape: Shapes.Shape, x: Int, y: Int, into clips: inout ClipBuffer, adding drawn: Shapes.Shape?) -> Bool {
        let r0 = max(0, 0 &- y), r1 = min(shape.height, height &- y)
        if r0 >= r1 || x >= width || x &+ shape.width <= 0 { return false }
        unique()
        // The clip is written in place at the end of `clips`, and counted when it is complete.
        let out = clips.reserve(2 &+ shape.words &* (r1 &- r0))
        var first = -1, last = -1
        let shift = CoverageMask.blockShift, size = CoverageMask.blockSize
        let bits = UnsafePointer(bits), blocks = UnsafePointer(blocks)
        let stride = stride, blockStride = blockStride
        let width = width, blockColumns = blockColumns, words = shape.words
        let visible = shape.visibleMasks
        let yBlock = y &>> shift, xBlock = x &>> shift
        let blockWords = shape.blockWords
        let yPhase: Int = y & (size &- 1), xPhase: Int = x & (size &- 1)

        let rowK = (x &+ 64) &>> 6, rowShiftLo = UInt64((x &+ 64) & 63), rowShiftHi = 63 &- rowShiftLo
        // With `drawn`: the canvas rows and columns where bits were set (for `refreshBlocks`).
        var added = AddedArea()

        /// Tests the draw's rows in canvas block row `br` (one of its blocks is not settled whole).
        @inline(__always) func testRows(_ br: Int) {
            var r = max(r0, br &<< shift &- y)
            let rowEnd = min(r1, (br &+ 1) &<< shift &- y)
            while r < rowEnd {
                defer { r &+= 1 }
                let row = bits + (y &+ r) &* stride, m = visible + r &* words
                // The row's masks go where they belong if it is the first row with an uncovered
                // pixel or a later one; a row without one is overwritten by the next (or left
                // past the clip's end).
                let masks = out + (2 &+ (r &- (first < 0 ? r : first)) &* words)
                var a = -1, b = 0
                if words == 1 {
                    // The draw touches the canvas and is at most 64 px wide: its columns start
                    // within one word of the canvas (`chunk` without its range test).
                    let u = ~(row[rowK] &>> rowShiftLo | (row[rowK &+ 1] &<< 1) &<< rowShiftHi) & m[0]
                    if u == 0 { continue }
                    masks[0] = u
                    a = u.trailingZeroBitCount; b = 64 &- u.leadingZeroBitCount
                } else {
                    var k = 0
                    while k < words {
                        let u = ~CoverageMask.chunk(row, x &+ k &<< 6, columns: width) & m[k]
                        masks[k] = u
                        if u != 0 {
                            if a < 0 { a = k &<< 6 &+ u.trailingZeroBitCount }
                            b = k &<< 6 &+ 64 &- u.leadingZeroBitCount
                        }
                        k &+= 1
                    }
                    if a < 0 { continue }
                }
                if first < 0 { first = r }
                // Rows since the last one with an uncovered pixel get zero masks.
                var gap = last < 0 ? r : last &+ 1
                while gap < r { (out + (2 &+ (gap &- first) &* words)).update(repeating: 0, count: words); gap &+= 1 }
                last = r
                if let drawn {
                    let cl = max(0, x &+ a), ch = min(width, x &+ b)
                    if cl < ch { addRow(drawn, x: x, y: y, row: r, columns: cl, ch, into: &added) }
                }
            }
        }

        // Per canvas block row under the draw, the blocks under its pixels are tested first:
        // when all are settled whole, so is every pixel of the draw in that block row, and its
        // rows are passed over at once (in a dense tile, most of them).
        var br = (y &+ r0) &>> shift
        let lastBlockRow = (y &+ r1 &- 1) &>> shift
        if let blockMasks = shape.blockMasks {
            // The block masks of this phase, from block row `br` on.
            let phase: Int = yPhase &* size &+ xPhase
            var m = blockMasks + (phase &* shape.blockRows &+ br &- yBlock) &* blockWords
            var blockRow = blocks + br &* blockStride
            if blockWords == 1 && lastBlockRow &- br < 64 {
                // A block row's test in a few instructions: the draw touches the canvas and is at
                // most 256 px wide, so its block columns start within one word of the canvas
                // (`chunk` without its range test), and the rows to test are gathered in a word.
                let at = xBlock &+ 64, k = at &>> 6, shiftLo = UInt64(at & 63), shiftHi = 63 &- shiftLo
                var open: UInt64 = 0, i: UInt64 = 0
                let first = br
                while br <= lastBlockRow {
                    let settled = blockRow[k] &>> shiftLo | (blockRow[k &+ 1] &<< 1) &<< shiftHi
                    open |= (~settled & m[0] != 0 ? 1 : 0) &<< i
                    br &+= 1; i &+= 1; m += 1; blockRow += blockStride
                }
                while open != 0 {
                    testRows(first &+ open.trailingZeroBitCount)
                    open &= open &- 1
                }
            } else {
                while br <= lastBlockRow {
                    var w = 0
                    while w < blockWords {
                        if ~CoverageMask.chunk(blockRow, xBlock &+ w &<< 6, columns: blockColumns) & m[w] != 0 { testRows(br); break }
                        w &+= 1
                    }
                    br &+= 1; m += blockWords; blockRow += blockStride
                }
            }
        } else {
            // The union of each block row's spans (sprites without block masks).
            let blockSpans = shape.blockSpans + 2 &* yPhase &* shape.blockRows
            while br <= lastBlockRow {
                let j = br &- yBlock
                let lo = Int(blockSpans[2 &* j]), hi = Int(blockSpans[2 &* j &+ 1])
                if lo < hi && !CoverageMask.allSet(blocks + br &* blockStride, (x &+ lo) &>> shift, (x &+ hi &- 1) &>> shift,
                                                   columns: blockColumns) {
                    testRows(br)
                }
                br &+= 1
            }
        }
        guard first >= 0 else { return false }
        if added.top <= added.bottom { refreshBlocks(rows: added.top, added.bottom &+ 1, columns: added.lo, added.hi) }
        out[0] = UInt64(truncatingIfNeeded: first); out[1] = UInt64(truncatingIfNeeded: last &+ 1)
        clips.commit(2 &+ words &* (last &+ 1 &- first))
        return true
    }

    /// The position of a draw of shape `index` (`shape`) with its top-left at (`x`, `y`) in the
    /// per-position tables (this mask's memo, `TileRenderer.SettledRows`): `(y + shape.height) x
    /// (width + shape.width) + x + shape.width`, or -1 when it lies outside them (no pixel on the
    /// canvas, or `index` not below `memoShapes`). Wrapping arithmetic: the canvas and the sprites
    /// are far below 2^31 px.
    @inline(__always) func memoPosition(_ index: Int, _ shape: Shapes.Shape, x: Int, y: Int) -> Int {
        let w = shape.width, h = shape.height
        guard index < CoverageMask.memoShapes, x &+ w > 0, x < width, y &+ h > 0, y < height else { return -1 }
        return (y &+ h) &* (width &+ w) &+ x &+ w
    }

    /// True when a draw of shape `index` at memo position `position` (`memoPosition`, not -1) was
    /// already found fully settled (`markSettled`): it has no uncovered pixel now either.
    @inline(__always) func knownSettled(_ index: Int, at position: Int) -> Bool {
        guard let words = memo[index] else { return false }
        return words[position &>> 6] &>> UInt64(position & 63) & 1 != 0
    }

    /// True when a draw of shape `index` at (`x`, `y`) was already found fully settled
    /// (`markSettled`): it has no uncovered pixel now either.
    @inline(__always) func knownSettled(_ index: Int, _ shape: Shapes.Shape, x: Int, y: Int) -> Bool {
        let b = memoPosition(index, shape, x: x, y: y)
        return b >= 0 && knownSettled(index, at: b)
    }

    /// Remembers that a draw of shape `index` at (`x`, `y`) has no uncovered pixel.
    mutating func markSettled(_ index: Int, _ shape: Shapes.Shape, x: Int, y: Int) {
        let b = memoPosition(index, shape, x: x, y: y)
        if b >= 0 { markSettled(index, shape, at: b) }
    }

    /// `markSettled` at memo position `b` (`memoPosition` of the draw, not -1).
    @inline(__always) mutating func markSettled(_ index: Int, _ shape: Shapes.Shape, at b: Int) {
        unique()
        if memo[index] == nil { allocateMemo(index, shape) }
        memo[index]![b &>> 6] |= UInt64(1) &<< UInt64(b & 63)
    }

    private mutating func allocateMemo(_ index: Int, _ shape: Shapes.Shape) {
        let n = ((width + shape.width) * (height + shape.height + 1) + 63) / 64
        let p = UnsafeMutablePointer<UInt64>.allocate(capacity: n)
        p.initialize(repeating: 0, count: n)
        memo[index] = p; store.memoWords[index] = n
    }

    /// True when every pixel of canvas row `row` in columns `lo ..< hi` (clipped to the canvas) is settled.
    func settled(row: Int, _ lo: Int, _ hi: Int) -> Bool {
        if lo >= hi || row < 0 || row >= height || free[row] == 0 { return true }
        return CoverageMask.allSet(bits + row * stride, lo, hi - 1, columns: width)
    }

    /// Whether pixel (`x`, `y`) of the canvas is settled.
    func isSettled(x: Int, y: Int) -> Bool {
        bits[y * stride + 1 + x >> 6] >> UInt64(x & 63) & 1 != 0
    }

    /// Pixel (`x`, `y`)'s `T` (meaningful while it is not settled; 255 in `exact` masks).
    func level(x: Int, y: Int) -> Int { exact ? 255 : Int(levels[y * width + x]) }

    /// How many pixels of canvas row `row` are not settled.
    func freeInRow(_ row: Int) -> Int { Int(free[row]) }

    /// Whether block (`bx`, `by`) (`blockSize` px square) is marked settled whole.
    func blockSettled(bx: Int, by: Int) -> Bool {
        blocks[by * blockStride + 1 + bx >> 6] >> UInt64(bx & 63) & 1 != 0
    }

    /// The settled bits, levels and row counts of the canvas, for comparing two masks in tests.
    var state: (bits: [Bool], levels: [UInt8], free: [Int32]) {
        var b = [Bool](), l = [UInt8]()
        for y in 0..<height {
            for x in 0..<width {
                let s = isSettled(x: x, y: y)
                b.append(s); l.append(s || exact ? 0 : levels[y * width + x])
            }
        }
        return (b, l, (0..<height).map { free[$0] })
    }

    /// Adds a draw of `shape` with its top-left at (`x`, `y`) (the next one down the draw order):
    /// its opaque pixels settle; unless `exact`, every other non-transparent pixel updates its
    /// `T`, and settles at 255.
    mutating func add(_ shape: Shapes.Shape, x: Int, y: Int) {
        add(shape, x: x, y: y, clip: nil)
    }

    /// `add` limited to `clip`, what `uncovered` appended for this draw at this mask (`r0, r1`,
    /// then each row's masks): the same result, as every pixel of the draw outside its clip is
    /// already settled (nothing to add there), but only the clip's rows and, per row, the columns
    /// from its first to its last uncovered pixel are visited.
    mutating func add(_ shape: Shapes.Shape, x: Int, y: Int, clip: UnsafeBufferPointer<UInt64>?) {
        var r0 = max(0, 0 &- y), r1 = min(shape.height, height &- y)
        if let clip { r0 = max(r0, Int(clip[0])); r1 = min(r1, Int(clip[1])) }
        if r0 >= r1 { return }
        unique()
        let words = shape.words
        let clipRows = clip.map { $0.baseAddress! + 2 }
        let clipFirst = clip.map { Int($0[0]) } ?? 0
        var added = AddedArea()
        var r = r0
        while r < r1 {
            defer { r &+= 1 }
            // The row's columns to visit: inside the canvas and the clip.
            var cl = max(0, x), ch = min(width, x &+ shape.width)
            if let clipRows {
                let masks = clipRows + (r &- clipFirst) &* words
                var a = -1, b = 0, k = 0
                while k < words {
                    let u = masks[k]
                    if u != 0 {
                        if a < 0 { a = k &<< 6 &+ u.trailingZeroBitCount }
                        b = k &<< 6 &+ 64 &- u.leadingZeroBitCount
                    }
                    k &+= 1
                }
                if a < 0 { continue }
                cl = max(cl, x &+ a); ch = min(ch, x &+ b)
            }
            if cl < ch { addRow(shape, x: x, y: y, row: r, columns: cl, ch, into: &added) }
        }
        if added.top <= added.bottom { refreshBlocks(rows: added.top, added.bottom &+ 1, columns: added.lo, added.hi) }
    }

    /// Canvas rows and columns where `addRow` set bits (empty: `top > bottom`).
    struct AddedArea {
        var top = Int.max, bottom = Int.min, lo = Int.max, hi = Int.min
    }

    /// Adds sprite row `r` of a draw of `shape` at (`x`, `y`) in canvas columns `cl ..< ch`
    /// (inside the canvas and the draw's columns, not empty; the row inside the canvas): its
    /// opaque pixels settle; unless `exact`, its other non-transparent pixels not settled yet
    /// update their `T`, and settle at 255. Rows and columns where bits were set go to `added`.
    /// The storage must be this mask's own (`unique`).
    @inline(__always)
    private func addRow(_ shape: Shapes.Shape, x: Int, y: Int, row r: Int, columns cl: Int, _ ch: Int, into added: inout AddedArea) {
        let canvasWidth = width, words = shape.words, spriteWidth = shape.width
        let canvasRow = y &+ r
        let row = bits + canvasRow &* stride
        // Bits set in this row (counted off `free` at the end of the row).
        var newlySet = 0
        var k = 0
        while k < words {
            defer { k &+= 1 }
            let base = x &+ k &<< 6
            let inside = CoverageMask.rangeMask(cl &- base, ch &- base)
            if inside == 0 { continue }
            let om = shape.opaqueMasks[r &* words &+ k] & inside
            if om != 0 { newlySet &+= CoverageMask.deposit(row, base, om) }
            if exact { continue }
            // The other non-transparent pixels not settled yet.
            var open = shape.partialMasks[r &* words &+ k] & inside & ~CoverageMask.chunk(row, base, columns: canvasWidth)
            if open == 0 { continue }
            var settle: UInt64 = 0
            let wrow = shape.weights + (r &* spriteWidth &+ k &<< 6), lrow = levels + (canvasRow &* canvasWidth &+ base)
            let next = nextLevels
            while open != 0 {
                let b = open.trailingZeroBitCount
                open &= open &- 1
                let t = next[Int(wrow[b]) &<< 8 | Int(lrow[b])]
                lrow[b] = t
                if t == 255 { settle |= UInt64(1) &<< UInt64(b) }
            }
            if settle != 0 { newlySet &+= CoverageMask.deposit(row, base, settle) }
        }
        if newlySet > 0 {
            free[canvasRow] &-= Int32(truncatingIfNeeded: newlySet)
            added.top = min(added.top, canvasRow); added.bottom = max(added.bottom, canvasRow)
            added.lo = min(added.lo, cl); added.hi = max(added.hi, ch)
        }
    }

    /// Sets the bits of `blockBits` whose blocks meet canvas rows `top ..< bottom` and columns
    /// `lo ..< hi` and are settled whole now: per block row, the AND of its rows' words (rows
    /// outside the canvas left out, columns outside it set), then per byte (one block) whether it
    /// is all ones.
    private mutating func refreshBlocks(rows top: Int, _ bottom: Int, columns lo: Int, _ hi: Int) {
        let shift = CoverageMask.blockShift
        let stride = stride, blockStride = blockStride, canvasHeight = height
        let bits = bits, blocks = blocks
        for br in (top >> shift)...((bottom - 1) >> shift) {
            let rowEnd = min(canvasHeight, (br + 1) << shift)
            for k in (lo >> 6)...((hi - 1) >> 6) {
                var all: UInt64 = ~0
                for row in (br << shift)..<rowEnd { all &= bits[row * stride + 1 + k] }
                if all == 0 { continue }
                // Per byte: bit 0 set when all 8 bits are (blockSize 8: one byte per block).
                all &= all >> 4; all &= all >> 2; all &= all >> 1
                let packed = ((all & 0x0101_0101_0101_0101) &* 0x0102_0408_1020_4080) >> 56
                let first = k << (6 - shift)
                blocks[br * blockStride + 1 + first >> 6] |= packed << UInt64(first & 63)
            }
        }
    }
}

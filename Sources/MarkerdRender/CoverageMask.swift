/// One bit per canvas pixel: set when a draw that comes later in draw order writes that pixel
/// with alpha 255. Source-over with an opaque source replaces the pixel outright, so whatever
/// was drawn there earlier cannot show. The renderer walks draws from the top down and skips a
/// draw whose every non-transparent pixel inside the canvas is already covered - the one kind of
/// skip that cannot change a single pixel.
struct CoverageMask {
    let width: Int
    let height: Int
    let wordsPerRow: Int
    private(set) var bits: [UInt64]

    init(width: Int, height: Int) {
        self.width = width
        self.height = height
        wordsPerRow = (width + 63) >> 6
        bits = [UInt64](repeating: 0, count: wordsPerRow * height)
    }

    /// The row data of many sprites in one flat array (so the per-draw tests touch no
    /// reference-counted storage): per sprite, 2 x height numbers of non-transparent spans
    /// (`RGBAImage.rowSpans`, or the full width) and 2 x height of longest opaque runs
    /// (`TileSprite.opaque`).
    struct Shapes {
        struct Shape {
            var width: Int
            var height: Int
            /// Offsets into `data`.
            var spans: Int
            var opaque: Int
        }
        private(set) var shapes: [Shape] = []
        private(set) var data: [Int32] = []

        init(_ sprites: [TileSprite]) {
            for s in sprites {
                let spans = data.count
                if s.image.rowSpans.isEmpty {
                    for _ in 0..<s.height { data.append(0); data.append(Int32(s.width)) }
                } else {
                    data.append(contentsOf: s.image.rowSpans)
                }
                let opaque = data.count
                data.append(contentsOf: s.opaque)
                shapes.append(Shape(width: s.width, height: s.height, spans: spans, opaque: opaque))
            }
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
        let start = clips.count
        // Room for every row; trimmed below (appending per row costs more than the writes).
        clips.append(contentsOf: repeatElement(0, count: 2 + 2 * (r1 - r0)))
        var first = -1, last = -1
        bits.withUnsafeBufferPointer { w in
            clips.withUnsafeMutableBufferPointer { out in
                for r in r0..<r1 {
                    let lo = max(x + Int(data[shape.spans + 2 * r]), 0), hi = min(x + Int(data[shape.spans + 2 * r + 1]), width)
                    let row = (y + r) * wordsPerRow
                    guard lo < hi, let a = CoverageMask.firstClear(w, row: row, lo, hi) else { continue }
                    if first < 0 { first = r }
                    last = r
                    let at = start + 2 + 2 * (r - first)
                    out[at] = Int16(a - x); out[at + 1] = Int16(CoverageMask.lastClear(w, row: row, lo, hi) + 1 - x)
                }
            }
        }
        guard first >= 0 else {
            clips.removeSubrange(start...)
            return false
        }
        // Rows between first and last without an uncovered pixel kept their (0, 0); drop the rest.
        clips.removeSubrange((start + 2 + 2 * (last + 1 - first))...)
        clips[start] = Int16(first); clips[start + 1] = Int16(last + 1)
        return true
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

    /// Marks the opaque runs of `shape` with its top-left at (`x`, `y`) as covered.
    mutating func add(_ shape: Shapes.Shape, _ data: UnsafeBufferPointer<Int32>, x: Int, y: Int) {
        let r0 = max(0, -y), r1 = min(shape.height, height - y)
        if r0 >= r1 { return }
        let wpr = wordsPerRow, canvasWidth = width
        bits.withUnsafeMutableBufferPointer { w in
            for r in r0..<r1 {
                let lo = max(x + Int(data[shape.opaque + 2 * r]), 0), hi = min(x + Int(data[shape.opaque + 2 * r + 1]), canvasWidth)
                if lo >= hi { continue }
                let row = (y + r) * wpr
                let wa = lo >> 6, wb = (hi - 1) >> 6
                if wa == wb {
                    w[row + wa] |= CoverageMask.mask(lo & 63, (hi - 1) & 63)
                } else {
                    w[row + wa] |= CoverageMask.mask(lo & 63, 63)
                    var k = wa + 1
                    while k < wb { w[row + k] = ~0; k += 1 }
                    w[row + wb] |= CoverageMask.mask(0, (hi - 1) & 63)
                }
            }
        }
    }
}

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

    mutating func reset() {
        for i in bits.indices { bits[i] = 0 }
    }

    @inline(__always) private static func mask(_ a: Int, _ b: Int) -> UInt64 {
        // Bits a...b (inclusive) of one word, 0 <= a <= b < 64.
        let hi: UInt64 = b == 63 ? ~0 : (UInt64(1) << UInt64(b + 1)) &- 1
        return hi & ~((UInt64(1) << UInt64(a)) &- 1)
    }

    /// True when every pixel of `sprite` with alpha > 0 that lies inside the canvas, the sprite's
    /// top-left being at (`x`, `y`), is covered.
    func covers(_ sprite: TileSprite, x: Int, y: Int) -> Bool {
        let spans = sprite.image.rowSpans
        let r0 = max(0, -y), r1 = min(sprite.height, height - y)
        if r0 >= r1 { return true }
        return bits.withUnsafeBufferPointer { w in
            spans.withUnsafeBufferPointer { sp in
                for r in r0..<r1 {
                    var lo = x, hi = x + sprite.width
                    if !sp.isEmpty { lo = x + Int(sp[2 * r]); hi = x + Int(sp[2 * r + 1]) }
                    lo = max(lo, 0); hi = min(hi, width)
                    if lo >= hi { continue }
                    let row = (y + r) * wordsPerRow
                    let wa = lo >> 6, wb = (hi - 1) >> 6
                    if wa == wb {
                        let m = CoverageMask.mask(lo & 63, (hi - 1) & 63)
                        if w[row + wa] & m != m { return false }
                    } else {
                        let m0 = CoverageMask.mask(lo & 63, 63)
                        if w[row + wa] & m0 != m0 { return false }
                        var k = wa + 1
                        while k < wb { if w[row + k] != ~0 { return false }; k += 1 }
                        let m1 = CoverageMask.mask(0, (hi - 1) & 63)
                        if w[row + wb] & m1 != m1 { return false }
                    }
                }
                return true
            }
        }
    }

    /// Marks the sprite's opaque runs as covered.
    mutating func add(_ sprite: TileSprite, x: Int, y: Int) {
        let runs = sprite.opaque
        let r0 = max(0, -y), r1 = min(sprite.height, height - y)
        if r0 >= r1 { return }
        let wpr = wordsPerRow, canvasWidth = width
        bits.withUnsafeMutableBufferPointer { w in
            for r in r0..<r1 {
                let lo = max(x + Int(runs[2 * r]), 0), hi = min(x + Int(runs[2 * r + 1]), canvasWidth)
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

/// A `width` x `height` premultiplied RGBA8 raster that sprites are composited onto, starting
/// fully transparent. Independent of markers: callers decide what to draw where and in which
/// order (later draws land on top).
///
/// Compositing is premultiplied source-over, per channel (R, G, B and A alike):
///
///     out = src + round(dst * (255 - srcAlpha) / 255)
///
/// with the division rounded to nearest (never a tie, as 255 is odd), computed exactly in
/// integers as `t = dst * (255 - srcAlpha) + 128; (t + (t >> 8)) >> 8`. For valid
/// premultiplied input (colour <= alpha) the result is valid premultiplied output and never
/// exceeds 255. Pixels with source alpha 0 leave the destination unchanged; pixels with
/// source alpha 255 are copied.
public struct TileCanvas: Sendable {
    /// Width in device pixels.
    public let width: Int
    /// Height in device pixels.
    public let height: Int
    /// `width * height * 4` bytes of premultiplied RGBA8, rows top to bottom.
    public private(set) var pixels: [UInt8]
    /// True until a draw changes at least one pixel (a sprite pixel with alpha > 0 lands inside
    /// the canvas). An empty canvas encodes to the shared transparent PNG.
    public private(set) var isEmpty: Bool = true

    /// A fully transparent canvas. `width` and `height` must be positive.
    public init(width: Int, height: Int) {
        precondition(width > 0 && height > 0, "invalid canvas size \(width)x\(height)")
        self.width = width
        self.height = height
        self.pixels = [UInt8](repeating: 0, count: width * height * 4)
    }

    /// Replaces the pixels under `patch`, placed with its top-left pixel at (`x`, `y`) and lying
    /// wholly inside this canvas, by `patch`'s (no compositing). `isEmpty` stays exact.
    mutating func paste(_ patch: TileCanvas, atX x: Int, y: Int) {
        precondition(x >= 0 && y >= 0 && x + patch.width <= width && y + patch.height <= height,
                     "patch \(patch.width)x\(patch.height) at (\(x), \(y)) outside \(width)x\(height)")
        let rowBytes = patch.width * 4, stride = width * 4
        pixels.withUnsafeMutableBytes { dst in
            patch.pixels.withUnsafeBytes { src in
                for r in 0..<patch.height {
                    (dst.baseAddress! + (y + r) * stride + x * 4).copyMemory(from: src.baseAddress! + r * rowBytes, byteCount: rowBytes)
                }
            }
        }
        if !patch.isEmpty { isEmpty = false } else if !isEmpty { isEmpty = pixels.allSatisfy { $0 == 0 } }
    }

    /// Makes the canvas fully transparent again, keeping its memory.
    public mutating func clear() {
        if isEmpty { return }
        _ = pixels.withUnsafeMutableBytes { $0.initializeMemory(as: UInt8.self, repeating: 0) }
        isEmpty = true
    }

    /// Composites `sprite` with its top-left pixel at device pixel (`x`, `y`) (which may lie
    /// outside the canvas). Only the part inside the canvas is drawn, so a sprite crossing a tile
    /// edge is drawn partially on each neighbouring tile and the halves meet seamlessly.
    public mutating func draw(sprite: RGBAImage, atX x: Int, y: Int) {
        draw(sprite: sprite, atX: x, y: y, times: 1, clips: nil)
    }

    /// Composites `sprite` `times` times in a row at the same place: exactly what `times` calls of
    /// `draw(sprite:atX:y:)` give, but each pixel stops as soon as one more draw would not change
    /// it (repeated source-over of the same premultiplied source is monotone in every channel, so
    /// a pixel reaches a fixed point within 256 draws; opaque source pixels after one).
    public mutating func draw(sprite: RGBAImage, atX x: Int, y: Int, times: Int) {
        draw(sprite: sprite, atX: x, y: y, times: times, clips: nil)
    }

    /// `draw(sprite:atX:y:times:)` limited by the renderer's clips (`CoverageMask.uncovered`): with
    /// `clips`, the sprite is drawn once per clip, each time on exactly the pixels its clip's
    /// masks hold; the clips are those of identical draws from the top of the draw order down,
    /// each holding the next one's pixels (a pixel in the first `n` clips only is drawn `n`
    /// times). nil: `times` whole draws.
    mutating func draw(sprite: RGBAImage, atX x: Int, y: Int, times: Int, clips: UnsafeBufferPointer<UnsafePointer<UInt64>>?) {
        if times < 1 { return }
        let (w, h) = (width, height)
        let drew = sprite.pixels.withUnsafeBytes { src in
            sprite.rowSpans.withUnsafeBufferPointer { spans in
                pixels.withUnsafeMutableBytes { dst in
                    TileCanvas.composite(SpritePixels(pixels: src.baseAddress, spans: spans.isEmpty ? nil : spans.baseAddress,
                                                      width: sprite.width, height: sprite.height),
                                         onto: dst, width: w, height: h, atX: x, y: y, times: times, clips: clips)
                }
            }
        }
        if drew { isEmpty = false }
    }

    /// A sprite's premultiplied RGBA8 rows and row spans (`RGBAImage.rowSpans`; nil: every row
    /// whole) as pointers, valid as long as the storage they point into.
    struct SpritePixels {
        var pixels: UnsafeRawPointer?
        var spans: UnsafePointer<Int32>?
        var width: Int
        var height: Int
    }

    /// Gives `body` the canvas's pixel bytes to composite onto (`composite`); `body` returns
    /// whether it changed a pixel. For loops of many draws: one exclusive access to the storage,
    /// not one (and a uniqueness check) per draw.
    mutating func withCompositing(_ body: (UnsafeMutableRawBufferPointer) -> Bool) {
        if pixels.withUnsafeMutableBytes(body) { isEmpty = false }
    }

    /// `draw(sprite:atX:y:times:clips:)` on the `width x height` canvas bytes `dst`; returns
    /// whether a sprite pixel with alpha > 0 landed (`isEmpty` is the caller's). With `clips`,
    /// `times` is their count.
    @inline(__always)
    static func composite(_ sprite: SpritePixels, onto dst: UnsafeMutableRawBufferPointer, width: Int, height: Int,
                          atX x: Int, y: Int, times: Int, clips: UnsafeBufferPointer<UnsafePointer<UInt64>>?) -> Bool {
        if times < 1 { return false }
        let sw = sprite.width
        let sh = sprite.height
        guard let src = sprite.pixels, sw > 0, sh > 0, x < width, y < height, x > -sw, y > -sh else { return false }
        let base = dst.baseAddress!
        guard let clips else {
            let sx0 = max(0, -x), sx1 = min(sw, width - x)
            let sy0 = max(0, -y), sy1 = min(sh, height - y)
            var drew = false
            // Wrapping arithmetic for the rows' offsets: the canvas and the sprite are far below
            // 2^31 px, and the rows and columns are clipped to both above.
            for sy in sy0..<sy1 {
                var lo = sx0, hi = sx1
                if let spans = sprite.spans {
                    lo = max(lo, Int(spans[2 &* sy])); hi = min(hi, Int(spans[2 &* sy &+ 1]))
                }
                if lo >= hi { continue }
                let srcRow = src.advanced(by: sy &* sw &* 4)
                let dstRow = base.advanced(by: ((y &+ sy) &* width &+ x) &* 4)
                if times == 1 {
                    if TileCanvas.compositeRow(dstRow + lo &* 4, srcRow + lo &* 4, count: hi &- lo) { drew = true }
                } else if compositePixels(dstRow, srcRow, lo, hi, times: times) {
                    drew = true
                }
            }
            return drew
        }
        // The clips' masks hold only pixels inside the canvas with alpha > 0 (`uncovered`).
        let words = (sw &+ 63) &>> 6
        let top = clips[0]
        let sy0 = Int(top[0]), sy1 = Int(top[1])
        var drew = false
        for sy in sy0..<sy1 {
            let srcRow = src.advanced(by: sy &* sw &* 4)
            let dstRow = base.advanced(by: ((y &+ sy) &* width &+ x) &* 4)
            var k = 0
            while k < words {
                defer { k &+= 1 }
                /// Clip `i`'s mask of word `k` in row `sy` (0 outside its rows).
                @inline(__always) func mask(_ i: Int) -> UInt64 {
                    let c = clips[i], r0 = Int(c[0])
                    return sy >= r0 && sy < Int(c[1]) ? c[2 &+ (sy &- r0) &* words &+ k] : 0
                }
                var m = top[2 &+ (sy &- sy0) &* words &+ k]
                if m == 0 { continue }
                drew = true
                let column = k &<< 6
                if clips.count == 1 {
                    // Runs of set bits, four pixels at a time where they are long.
                    while m != 0 {
                        let lo = m.trailingZeroBitCount
                        let run = (~(m &>> UInt64(lo))).trailingZeroBitCount
                        let at = column &+ lo
                        _ = TileCanvas.compositeRow(dstRow + at &* 4, srcRow + at &* 4, count: run)
                        m = run == 64 ? 0 : m & ~(((UInt64(1) &<< UInt64(run)) &- 1) &<< UInt64(lo))
                    }
                    continue
                }
                // Identical draws: clip `i + 1` holds a subset of clip `i`'s pixels, so the pixels
                // in the first `i + 1` clips only are drawn `i + 1` times.
                var i = 0
                while m != 0 {
                    let next = i &+ 1 < clips.count ? mask(i &+ 1) : 0
                    var only = m & ~next
                    while only != 0 {
                        let b = only.trailingZeroBitCount
                        only &= only &- 1
                        _ = compositePixels(dstRow, srcRow, column &+ b, column &+ b &+ 1, times: i &+ 1)
                    }
                    m = next
                    i &+= 1
                }
            }
        }
        return drew
    }

    /// Source-over of sprite row `srcRow`'s pixels `lo ..< hi` onto `dstRow`'s, `times` times each,
    /// stopping per pixel at the fixed point; returns whether a pixel had alpha > 0.
    @inline(__always)
    private static func compositePixels(_ dstRow: UnsafeMutableRawPointer, _ srcRow: UnsafeRawPointer, _ lo: Int, _ hi: Int,
                                        times: Int) -> Bool {
        var drew = false
        for sx in lo..<hi {
            let s = srcRow.loadUnaligned(fromByteOffset: sx &* 4, as: UInt32.self)
            let a = s >> 24
            if a == 0 { continue }
            drew = true
            if a == 255 {
                dstRow.storeBytes(of: s, toByteOffset: sx &* 4, as: UInt32.self)
                continue
            }
            var d = dstRow.loadUnaligned(fromByteOffset: sx &* 4, as: UInt32.self)
            var n = 0
            while n < times {
                let next = s &+ TileCanvas.scale(d, by: 255 - a)
                if next == d { break }
                d = next
                n &+= 1
            }
            dstRow.storeBytes(of: d, toByteOffset: sx &* 4, as: UInt32.self)
        }
        return drew
    }

    /// Source-over of `count` premultiplied source pixels at `src` onto those at `dst`, once:
    /// `d = s + scale(d, by: 255 - alpha(s))` for each, which leaves `d` as it is under a
    /// transparent source pixel and sets it to `s` under an opaque one. Four pixels per step in
    /// 16-bit lanes of two channels each (`scale`'s arithmetic, eight lanes at a time), the last
    /// one to three one by one. True when a source pixel has alpha > 0.
    @inline(__always)
    static func compositeRow(_ dst: UnsafeMutableRawPointer, _ src: UnsafeRawPointer, count: Int) -> Bool {
        var i = 0
        var seen = SIMD4<UInt32>(repeating: 0)
        let full = SIMD4<UInt32>(repeating: 255), round = SIMD8<UInt16>(repeating: 128)
        let lowByte = SIMD8<UInt16>(repeating: 0x00FF), highByte = SIMD8<UInt16>(repeating: 0xFF00)
        while i &+ 4 <= count {
            let s = src.loadUnaligned(fromByteOffset: i &* 4, as: SIMD4<UInt32>.self)
            // Each 16-bit lane holds two channels of a pixel (R and G, or B and A): `scale`'s
            // two lanes of a 32-bit word, eight at a time.
            let d = dst.loadUnaligned(fromByteOffset: i &* 4, as: SIMD8<UInt16>.self)
            seen |= s
            // 255 - alpha of each pixel, in both 16-bit lanes of the pixel.
            var k = full &- (s &>> 24)
            k |= k &<< 16
            let k16 = unsafeBitCast(k, to: SIMD8<UInt16>.self)
            var even = (d & lowByte) &* k16 &+ round
            var odd = (d &>> 8) &* k16 &+ round
            even = (even &+ (even &>> 8)) &>> 8
            odd = (odd &+ (odd &>> 8)) & highByte
            let scaled = unsafeBitCast(even | odd, to: SIMD16<UInt8>.self)
            dst.storeBytes(of: unsafeBitCast(s, to: SIMD16<UInt8>.self) &+ scaled, toByteOffset: i &* 4, as: SIMD16<UInt8>.self)
            i &+= 4
        }
        var any = (seen[0] | seen[1] | seen[2] | seen[3]) >> 24
        while i < count {
            let s = src.loadUnaligned(fromByteOffset: i &* 4, as: UInt32.self)
            let a = s >> 24
            any |= a
            if a != 0 {
                let d = dst.loadUnaligned(fromByteOffset: i &* 4, as: UInt32.self)
                dst.storeBytes(of: a == 255 ? s : s &+ TileCanvas.scale(d, by: 255 &- a), toByteOffset: i &* 4, as: UInt32.self)
            }
            i &+= 1
        }
        return any != 0
    }

    /// Each byte of `p` times `k / 255`, rounded to nearest, exactly; two bytes per 32-bit lane
    /// pair (R and B, then G and A), which cannot carry into each other since
    /// 255 * 255 + 128 + 255 < 65536.
    @inline(__always)
    static func scale(_ p: UInt32, by k: UInt32) -> UInt32 {
        var rb = (p & 0x00FF_00FF) &* k &+ 0x0080_0080
        rb = ((rb &+ ((rb >> 8) & 0x00FF_00FF)) >> 8) & 0x00FF_00FF
        var ga = ((p >> 8) & 0x00FF_00FF) &* k &+ 0x0080_0080
        ga = (ga &+ ((ga >> 8) & 0x00FF_00FF)) & 0xFF00_FF00
        return rb | ga
    }

    /// The canvas as an image (shares the pixel storage; no copy).
    public var image: RGBAImage {
        RGBAImage(width: width, height: height, pixels: pixels, computeSpans: false)
    }

    /// Encodes the canvas as PNG. An empty 256x256 or 512x512 canvas returns the shared
    /// `TransparentTile` bytes without encoding.
    public func encodePNG(options: PNGEncodeOptions = .default) -> [UInt8] {
        if isEmpty, width == height, let shared = TransparentTile.shared(size: width) {
            return shared
        }
        return pixels.withUnsafeBufferPointer { px in
            PNGCodec.encode(premultiplied: px, width: width, height: height, options: options)
        }
    }
}

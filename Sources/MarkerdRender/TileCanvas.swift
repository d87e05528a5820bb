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
        draw(sprite: sprite, atX: x, y: y, times: 1, clipAt: nil)
    }

    /// Composites `sprite` `times` times in a row at the same place: exactly what `times` calls of
    /// `draw(sprite:atX:y:)` give, but each pixel stops as soon as one more draw would not change
    /// it (repeated source-over of the same premultiplied source is monotone in every channel, so
    /// a pixel reaches a fixed point within 256 draws; opaque source pixels after one).
    ///
    /// `clip`, when given, limits the draw to sprite rows `c[0] ..< c[1]` and, in row `c[0] + i`,
    /// to the columns `c[2 + 2i] ..< c[3 + 2i]` (sprite coordinates; `c` counted from
    /// `clip.startIndex`): the renderer leaves out pixels that a later opaque draw replaces anyway.
    public mutating func draw(sprite: RGBAImage, atX x: Int, y: Int, times: Int, clip: ArraySlice<Int16>? = nil) {
        guard let clip else { return draw(sprite: sprite, atX: x, y: y, times: times, clipAt: nil) }
        clip.withUnsafeBufferPointer { draw(sprite: sprite, atX: x, y: y, times: times, clipAt: $0) }
    }

    /// `draw(sprite:atX:y:times:clip:)` with the clip as a buffer (`clip[0]` its first number):
    /// the renderer's loop passes its clips this way, without an array slice (and its reference
    /// count traffic) per draw.
    mutating func draw(sprite: RGBAImage, atX x: Int, y: Int, times: Int, clipAt clip: UnsafeBufferPointer<Int16>?) {
        if times < 1 { return }
        let (w, h) = (width, height)
        let drew = sprite.pixels.withUnsafeBytes { src in
            sprite.rowSpans.withUnsafeBufferPointer { spans in
                pixels.withUnsafeMutableBytes { dst in
                    TileCanvas.composite(SpritePixels(pixels: src.baseAddress, spans: spans.isEmpty ? nil : spans.baseAddress,
                                                      width: sprite.width, height: sprite.height),
                                         onto: dst, width: w, height: h, atX: x, y: y, times: times, clipAt: clip)
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

    /// `draw(sprite:atX:y:times:clip:)` on the `width x height` canvas bytes `dst`; returns
    /// whether a sprite pixel with alpha > 0 landed (`isEmpty` is the caller's).
    @inline(__always)
    static func composite(_ sprite: SpritePixels, onto dst: UnsafeMutableRawBufferPointer, width: Int, height: Int,
                          atX x: Int, y: Int, times: Int, clipAt clip: UnsafeBufferPointer<Int16>?) -> Bool {
        if times < 1 { return false }
        let sw = sprite.width
        let sh = sprite.height
        guard let src = sprite.pixels, sw > 0, sh > 0, x < width, y < height, x > -sw, y > -sh else { return false }
        let sx0 = max(0, -x), sx1 = min(sw, width - x)
        var sy0 = max(0, -y), sy1 = min(sh, height - y)
        var clipRows = 0
        if let clip {
            clipRows = Int(clip[0])
            sy0 = max(sy0, clipRows); sy1 = min(sy1, Int(clip[1]))
            if sy0 >= sy1 { return false }
        }
        var drew = false
        // Wrapping arithmetic for the rows' offsets: the canvas and the sprite are far below
        // 2^31 px, and the rows and columns are clipped to both above.
        let base = dst.baseAddress!
        for sy in sy0..<sy1 {
            var lo = sx0, hi = sx1
            if let spans = sprite.spans {
                lo = max(lo, Int(spans[2 &* sy])); hi = min(hi, Int(spans[2 &* sy &+ 1]))
            }
            if let clip {
                let c = 2 &+ 2 &* (sy &- clipRows)
                lo = max(lo, Int(clip[c])); hi = min(hi, Int(clip[c &+ 1]))
            }
            if lo >= hi { continue }
            let srcRow = src.advanced(by: sy &* sw &* 4)
            let dstRow = base.advanced(by: ((y &+ sy) &* width &+ x) &* 4)
            if times == 1 {
                // Four pixels at a time, the rest one by one (the same arithmetic).
                if TileCanvas.compositeRow(dstRow + lo &* 4, srcRow + lo &* 4, count: hi &- lo) { drew = true }
                continue
            }
            for sx in lo..<hi {
                let s = srcRow.loadUnaligned(fromByteOffset: sx * 4, as: UInt32.self)
                let a = s >> 24
                if a == 0 { continue }
                drew = true
                if a == 255 {
                    dstRow.storeBytes(of: s, toByteOffset: sx * 4, as: UInt32.self)
                    continue
                }
                var d = dstRow.loadUnaligned(fromByteOffset: sx * 4, as: UInt32.self)
                if times == 1 {
                    d = s &+ TileCanvas.scale(d, by: 255 - a)
                } else {
                    var n = 0
                    while n < times {
                        let next = s &+ TileCanvas.scale(d, by: 255 - a)
                        if next == d { break }
                        d = next
                        n += 1
                    }
                }
                dstRow.storeBytes(of: d, toByteOffset: sx * 4, as: UInt32.self)
            }
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

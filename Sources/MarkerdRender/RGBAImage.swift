#if _endian(big)
#error("MarkerdRender packs RGBA8 pixels into little-endian UInt32 words")
#endif

/// A `width` x `height` image of premultiplied RGBA8 pixels: 4 bytes per pixel (R, G, B, A),
/// rows top to bottom, no padding. Every colour byte is at most its alpha byte (premultiplied);
/// compositing assumes it.
///
/// Creating an image records, per row, the span of columns between the first and the last pixel
/// with non-zero alpha, so that drawing it skips fully transparent rows and row ends.
public struct RGBAImage: Sendable, Equatable {
    /// Width in pixels (>= 0).
    public let width: Int
    /// Height in pixels (>= 0).
    public let height: Int
    /// `width * height * 4` bytes of premultiplied RGBA8.
    public let pixels: [UInt8]
    /// Per row `y`: `rowSpans[2y] ..< rowSpans[2y+1]` are the columns from the first to the last
    /// pixel with alpha > 0 (an empty range for a fully transparent row). Empty when not computed
    /// (then every row is treated as a full span).
    let rowSpans: [Int32]

    /// Wraps premultiplied pixels. Traps if `pixels.count != width * height * 4`.
    public init(width: Int, height: Int, pixels: [UInt8]) {
        self.init(width: width, height: height, pixels: pixels, computeSpans: true)
    }

    init(width: Int, height: Int, pixels: [UInt8], computeSpans: Bool) {
        precondition(width >= 0 && height >= 0 && width <= Int(Int32.max), "invalid image size \(width)x\(height)")
        precondition(pixels.count == width * height * 4, "pixel count \(pixels.count) != \(width)x\(height)x4")
        self.width = width
        self.height = height
        self.pixels = pixels
        self.rowSpans = computeSpans ? RGBAImage.spans(pixels, width: width, height: height) : []
    }

    /// A fully transparent image.
    public static func transparent(width: Int, height: Int) -> RGBAImage {
        RGBAImage(width: width, height: height, pixels: [UInt8](repeating: 0, count: width * height * 4),
                  rowSpans: [Int32](repeating: 0, count: 2 * height))
    }

    private init(width: Int, height: Int, pixels: [UInt8], rowSpans: [Int32]) {
        self.width = width
        self.height = height
        self.pixels = pixels
        self.rowSpans = rowSpans
    }

    /// The premultiplied (R, G, B, A) at column `x`, row `y`. Traps outside the image.
    public subscript(x: Int, y: Int) -> SIMD4<UInt8> {
        precondition(x >= 0 && x < width && y >= 0 && y < height, "pixel (\(x), \(y)) outside \(width)x\(height)")
        let i = (y * width + x) * 4
        return SIMD4(pixels[i], pixels[i + 1], pixels[i + 2], pixels[i + 3])
    }

    /// True when every pixel has alpha 0.
    public var isFullyTransparent: Bool {
        if !rowSpans.isEmpty {
            var y = 0
            while y < height {
                if rowSpans[2 * y] < rowSpans[2 * y + 1] { return false }
                y += 1
            }
            return true
        }
        var i = 3
        while i < pixels.count {
            if pixels[i] != 0 { return false }
            i += 4
        }
        return true
    }

    public static func == (a: RGBAImage, b: RGBAImage) -> Bool {
        a.width == b.width && a.height == b.height && a.pixels == b.pixels
    }

    private static func spans(_ pixels: [UInt8], width: Int, height: Int) -> [Int32] {
        var spans = [Int32](repeating: 0, count: 2 * height)
        pixels.withUnsafeBufferPointer { px in
            for y in 0..<height {
                let row = y * width * 4
                var lo = 0
                while lo < width && px[row + lo * 4 + 3] == 0 { lo += 1 }
                if lo == width { continue }
                var hi = width
                while px[row + (hi - 1) * 4 + 3] == 0 { hi -= 1 }
                spans[2 * y] = Int32(lo)
                spans[2 * y + 1] = Int32(hi)
            }
        }
        return spans
    }
}

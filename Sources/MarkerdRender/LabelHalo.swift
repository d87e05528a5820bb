/// A label sprite's pixels from its glyphs' coverage mask: the halo is the mask dilated by a
/// disc, the text is the mask, composited text over halo (`LabelText.sprite`).
///
/// Dilating the antialiased mask gives what stroking the outlines `2 x radius` wide (round
/// joins) and filling them on top gives, at about a tenth of the stroke's cost (which was 70 %
/// of a cold label sprite): a pixel is halo where some glyph pixel lies within `radius` of it. Pure and deterministic: the same mask, paint and radius give the same bytes.
enum LabelHalo {
    /// The halo coverage (0...255 per pixel) of `mask` (glyph coverage, `width x height`, rows
    /// without padding) for a halo `radius` device px wide (> 0).
    ///
    /// A glyph pixel `q` of coverage `m` (0...1) covers the pixel `p` at distance `L` to
    /// `clamp(radius + m - L, 0, 1)`: `m - 0.5` is how far the glyph's edge lies beyond `q`'s
    /// centre (exact for an edge across the offset), so the halo's edge lies `radius` beyond
    /// it, antialiased over one pixel like a stroke's. A pixel takes the most any glyph pixel
    /// gives it. Work: the glyph pixels (but those inside a fully covered area) times the pixels
    /// within `radius + 1` of one (21 at 1.5 px).
    static func dilate(_ mask: [UInt8], width: Int, height: Int, radius: Double) -> [UInt8] {
        precondition(mask.count == width * height && radius > 0, "invalid mask or radius")
        // Dilated into a canvas `reach` px wider on every side (no bounds checks), then cropped.
        let reach = Int((radius + 1).rounded(.up))
        let pw = width + 2 * reach, ph = height + 2 * reach
        // The offsets a glyph pixel reaches (as index steps in the padded canvas) and what they
        // add to its coverage there (1/255 units).
        var steps: [Int] = [], adds: [Int] = []
        for dy in -reach...reach {
            for dx in -reach...reach {
                let add = Int(((radius - Double(dx * dx + dy * dy).squareRoot()) * 255).rounded())
                if add > -255 { steps.append(dy * pw + dx); adds.append(add) }
            }
        }
        var padded = [UInt8](repeating: 0, count: pw * ph)
        mask.withUnsafeBufferPointer { m in
            padded.withUnsafeMutableBufferPointer { out in
                steps.withUnsafeBufferPointer { steps in
                    adds.withUnsafeBufferPointer { adds in
                        for y in 0..<height {
                            for x in 0..<width {
                                let i = y * width + x
                                let coverage = Int(m[i])
                                if coverage == 0 { continue }
                                let centre = (y + reach) * pw + x + reach
                                // A fully covered pixel whose four neighbours are too gives nothing
                                // beyond itself that a neighbour nearer the receiving pixel does not.
                                if coverage == 255, x > 0, x < width - 1, y > 0, y < height - 1,
                                   m[i - 1] & m[i + 1] & m[i - width] & m[i + width] == 255 {
                                    out[centre] = 255
                                    continue
                                }
                                for k in 0..<steps.count {
                                    let v = coverage + adds[k]
                                    if v <= 0 { continue }
                                    let c = UInt8(truncatingIfNeeded: min(v, 255))
                                    let j = centre + steps[k]
                                    if c > out[j] { out[j] = c }
                                }
                            }
                        }
                    }
                }
            }
        }
        return [UInt8](unsafeUninitializedCapacity: width * height) { out, count in
            padded.withUnsafeBufferPointer { p in
                for y in 0..<height {
                    UnsafeMutableRawPointer(out.baseAddress! + y * width)
                        .copyMemory(from: p.baseAddress! + (y + reach) * pw + reach, byteCount: width)
                }
            }
            count = width * height
        }
    }

    /// Premultiplied RGBA8 of `color` at `mask`'s coverage over `haloColor` at `halo`'s (empty: no
    /// halo); colours 0xAARRGGBB (straight alpha). Both masks are `width x height`.
    static func composite(mask: [UInt8], halo: [UInt8], width: Int, height: Int,
                          color: UInt32, haloColor: UInt32) -> RGBAImage {
        /// Rounded `v / 255` for `v` in 0...255 x 255.
        @inline(__always) func div255(_ v: Int) -> Int { (v + 128 + ((v + 128) >> 8)) >> 8 }
        /// The colour's premultiplied (R, G, B, A).
        func premultiplied(_ argb: UInt32) -> (Int, Int, Int, Int) {
            let a = Int(argb >> 24)
            return (div255(Int((argb >> 16) & 0xFF) * a), div255(Int((argb >> 8) & 0xFF) * a), div255(Int(argb & 0xFF) * a), a)
        }
        let f = premultiplied(color), h = premultiplied(haloColor)
        // Per coverage: the text's premultiplied pixel (R, G, B, A bytes in one little-endian
        // word), and the halo's at that much of what the text leaves.
        let text = (0...255).map { m in UInt32(div255(f.0 * m) | div255(f.1 * m) << 8 | div255(f.2 * m) << 16 | div255(f.3 * m) << 24) }
        let under = (0...255).map { l in UInt32(div255(h.0 * l) | div255(h.1 * l) << 8 | div255(h.2 * l) << 16 | div255(h.3 * l) << 24) }
        let count = width * height
        if count == 0 { return RGBAImage(width: width, height: height, pixels: []) }
        let pixels = [UInt8](unsafeUninitializedCapacity: count * 4) { out, initialized in
            let words = UnsafeMutableRawPointer(out.baseAddress!)
            mask.withUnsafeBufferPointer { m in
                halo.withUnsafeBufferPointer { halo in
                    text.withUnsafeBufferPointer { text in
                        under.withUnsafeBufferPointer { under in
                            for i in 0..<count {
                                // Text at coverage m, over the halo through what the text leaves
                                // (the bytes never carry: each sum is at most 255).
                                let t = text[Int(m[i])]
                                let left = halo.isEmpty ? 0 : div255(Int(halo[i]) * (255 - Int(t >> 24)))
                                words.storeBytes(of: t &+ under[left], toByteOffset: 4 * i, as: UInt32.self)
                            }
                        }
                    }
                }
            }
            initialized = count * 4
        }
        return RGBAImage(width: width, height: height, pixels: pixels)
    }
}

private import CPNG

/// PNGs whose IDAT zlib stream is deflated in independent segments, one per run of rows, so that
/// the segments can be deflated on different threads (as pigz does): each segment is raw deflate
/// (32 KiB window, `PNGEncodeOptions`' level, memory level and strategy) of its rows' filtered
/// bytes (filter type None: the byte 0 and the row, un-premultiplied, fully transparent rows as
/// they are, as `encode` writes them), ended with a sync flush (byte-aligned, an empty stored block
/// of 5 bytes) or, for the image's last rows, finished. `encode(width:height:segments:options:)`
/// has libpng write the signature and IHDR (the same bytes as `encode`'s), one IDAT chunk holding
/// the zlib header, the segments back to back and the adler32 of all the filtered bytes (combined
/// from the segments'), and IEND.
///
/// Decodes to exactly the pixels of `encode` of the same image; the bytes differ (deflate cannot
/// match across a cut, and libpng splits its single stream into 8 KiB IDAT chunks). Row filters
/// other than None are not supported (the tiles' settings use none).
extension PNGCodec {
    /// Deflated rows of one image (`deflateSegment`), owned until the object goes away. Not
    /// shared between threads while being written; handed over through `BandThread.Result`.
    final class Segment: @unchecked Sendable {
        fileprivate var raw = cpng_segment()
        /// Rows the segment holds.
        var rows: Int { Int(raw.rows) }
        /// Deflated bytes.
        var byteCount: Int { raw.len }
        /// Ended with Z_FINISH: the image's last segment.
        var isLast: Bool { raw.last != 0 }

        fileprivate init() {}
        deinit { cpng_segment_free(&raw) }
    }

    /// Deflates whole rows of premultiplied RGBA8 (`px.count / (width * 4)` rows, possibly none)
    /// as one segment; `last`: the image's bottom rows (the stream ends here). Traps when
    /// `options.filters` is not empty (None only), on bad sizes and when memory runs out.
    static func deflateSegment(premultiplied px: UnsafeBufferPointer<UInt8>, width: Int, last: Bool,
                               options: PNGEncodeOptions, sizeHint: Int = 0) -> Segment {
        let stride = width * 4
        precondition(width > 0 && width < (1 << 30) && px.count % stride == 0 && px.count / stride <= Int(UInt32.max),
                     "\(px.count) bytes are not whole rows of width \(width)")
        precondition(options.filters.isEmpty || options.filters == .unfiltered, "segments are written with filter None only")
        let segment = Segment()
        var err = [CChar](repeating: 0, count: 256)
        if options.deflater == .pixel {
            let rows = px.count / stride, filtered = rows * (1 + stride)
            var adler: UInt32 = 1
            let rc = withUnsafeTemporaryAllocation(of: UInt8.self, capacity: max(filtered, 1)) { buf in
                err.withUnsafeMutableBufferPointer { e -> Int32 in
                    let rc = cpng_filter_rows(px.baseAddress, UInt32(width), UInt32(rows), stride, Int32(CPNG_ENCODE_PREMULTIPLIED),
                                              buf.baseAddress, filtered, &adler, e.baseAddress, e.count)
                    if rc != 0 { return rc }
                    let deflated = PixelDeflater.deflate(UnsafeBufferPointer(rebasing: buf[0..<filtered]), rowBytes: 1 + stride, last: last)
                    return deflated.withUnsafeBufferPointer { d in
                        cpng_segment_from(d.baseAddress, d.count, UInt32(width), UInt32(rows), adler, last ? 1 : 0, &segment.raw,
                                          e.baseAddress, e.count)
                    }
                }
            }
            if rc != 0 { fatalError("PNG encoding failed: \(error(rc, err).message)") }
            return segment
        }
        let rc = err.withUnsafeMutableBufferPointer { e in
            cpng_deflate_segment(px.baseAddress, UInt32(width), UInt32(px.count / stride), stride, Int32(options.level),
                                 options.strategy.rawValue, Int32(options.memoryLevel), Int32(CPNG_ENCODE_PREMULTIPLIED),
                                 last ? 1 : 0, sizeHint, &segment.raw, e.baseAddress, e.count)
        }
        if rc != 0 { fatalError("PNG encoding failed: \(error(rc, err).message)") }
        return segment
    }

    /// The PNG of a `width` x `height` image from its segments, top to bottom (`height` rows in
    /// all, only the last one `isLast`); `options` must be the segments' (for the zlib header's
    /// FLEVEL). Throws `.invalidArgument` when the segments do not fit the image.
    static func encode(width: Int, height: Int, segments: [Segment], options: PNGEncodeOptions,
                       sizeHint: Int = 0) throws(RenderError) -> [UInt8] {
        precondition(width > 0 && height > 0 && width < (1 << 30) && height <= Int(Int32.max),
                     "cannot encode a \(width)x\(height) image")
        var out: UnsafeMutablePointer<UInt8>? = nil
        var len = 0
        var err = [CChar](repeating: 0, count: 256)
        let raws = segments.map { $0.raw }
        let rc = raws.withUnsafeBufferPointer { s in
            err.withUnsafeMutableBufferPointer { e in
                cpng_encode_segments(UInt32(width), UInt32(height), Int32(options.level), options.strategy.rawValue,
                                     s.baseAddress, s.count, sizeHint, &out, &len, e.baseAddress, e.count)
            }
        }
        withExtendedLifetime(segments) {}
        guard rc == 0, let out else { throw error(rc, err) }
        defer { cpng_free(out) }
        return [UInt8](UnsafeBufferPointer(start: out, count: len))
    }

    /// `encode` of the whole image in segments cut at rows `cuts` (ascending, each in 0...height;
    /// a cut at 0 or `height` gives an empty segment), on this thread: the reference for the
    /// threaded paths and for tests.
    static func encodeSegmented(premultiplied px: UnsafeBufferPointer<UInt8>, width: Int, height: Int, cuts: [Int],
                                options: PNGEncodeOptions) throws(RenderError) -> [UInt8] {
        precondition(px.count == width * height * 4 && cuts.allSatisfy { (0...height).contains($0) }
                     && zip(cuts, cuts.dropFirst()).allSatisfy { $0 <= $1 }, "bad cuts \(cuts) for \(height) rows")
        let bounds = [0] + cuts + [height]
        let segments = zip(bounds, bounds.dropFirst()).enumerated().map { i, r in
            deflateSegment(premultiplied: UnsafeBufferPointer(rebasing: px[r.0 * width * 4 ..< r.1 * width * 4]), width: width,
                           last: i == bounds.count - 2, options: options)
        }
        return try encode(width: width, height: height, segments: segments, options: options)
    }

    /// Inflates a zlib stream of exactly `expected` bytes with zlib's `uncompress` (header,
    /// data and adler32 checked), independently of libpng: for checking IDAT streams. Throws
    /// `.corrupt` when zlib rejects it or its length differs.
    static func inflateZlib(_ stream: [UInt8], expected: Int) throws(RenderError) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: expected)
        var err = [CChar](repeating: 0, count: 256)
        let rc = stream.withUnsafeBufferPointer { s in
            out.withUnsafeMutableBufferPointer { o in
                err.withUnsafeMutableBufferPointer { e in
                    cpng_inflate_zlib(s.baseAddress, s.count, o.baseAddress, expected, e.baseAddress, e.count)
                }
            }
        }
        if rc != 0 { throw error(rc, err) }
        return out
    }

    /// The adler32 (RFC 1950) of `bytes` continued from `start` (1 for a new stream), as the
    /// segments' trailers take it from the filtered rows (`cpng_adler32`, SSE2 where built for
    /// x86-64): for tests.
    static func adler32(_ bytes: [UInt8], start: UInt32 = 1) -> UInt32 {
        bytes.withUnsafeBufferPointer { cpng_adler32(start, $0.baseAddress, $0.count) }
    }
}

/// PNG row filters (PNG spec, section 9) that libpng may choose from, row by row.
/// An empty set means filter type None only.
public struct PNGFilters: OptionSet, Sendable, Hashable {
    public let rawValue: Int32
    public init(rawValue: Int32) { self.rawValue = rawValue }

    /// Filter type 0 (None): the row as is.
    public static let unfiltered = PNGFilters(rawValue: 0x08)
    public static let sub = PNGFilters(rawValue: 0x10)
    public static let up = PNGFilters(rawValue: 0x20)
    public static let average = PNGFilters(rawValue: 0x40)
    public static let paeth = PNGFilters(rawValue: 0x80)
    /// All five, chosen per row by libpng's heuristic (minimum sum of absolute differences);
    /// libpng's default for RGBA8.
    public static let adaptive: PNGFilters = [.unfiltered, .sub, .up, .average, .paeth]
}

/// zlib deflate strategy (`deflateInit2`).
public enum PNGCompressionStrategy: Int32, Sendable, Hashable, CaseIterable {
    /// libpng's choice: `filtered` when any filter but None is enabled, else `standard`.
    case libpngDefault = -1
    /// Z_DEFAULT_STRATEGY.
    case standard = 0
    /// Z_FILTERED.
    case filtered = 1
    /// Z_HUFFMAN_ONLY: no string matching.
    case huffmanOnly = 2
    /// Z_RLE: matches only at distance 1 (runs); fast, good on flat areas.
    case rle = 3
    /// Z_FIXED: fixed Huffman codes.
    case fixed = 4
}

/// Which deflate encoder writes the PNG's IDAT stream.
public enum PNGDeflater: Sendable, Hashable {
    /// zlib's `deflate`, with `PNGEncodeOptions`' level, strategy and memory level.
    case zlib
    /// `PixelDeflater`: greedy matches of 4 bytes or more among the last two positions of the same
    /// hashed bytes and one row up, one block with its own Huffman codes; level, strategy and memory level are not
    /// used (the zlib header says level 1's "fast"), filters must be none.
    case pixel
}

/// How `PNGCodec.encode` compresses. Output is always 8-bit RGBA, non-interlaced.
///
/// The default, zlib level 6 with no row filters, was chosen by measurement
/// (`PNGSettingsTableTests`, `swift test -c release`, this 2-core machine under load; min of
/// 21 runs). 256 px tile, 50 pins at scale 0.5:
///
///     level 6, no filter      1.58 ms  12.2 KB   <- default
///     level 1, no filter      0.80 ms  15.5 KB   (`fast`)
///     level 6, Up             1.71 ms  15.3 KB
///     level 6, adaptive       2.97 ms  19.3 KB   (libpng's default)
///     level 9, no filter     15.9  ms  12.1 KB
///
/// With 50 20 px continuous-tone icons: 1.02 ms / 5.8 KB (level 6, none), 0.59 ms / 10.7 KB
/// (level 1, none), 2.73 ms / 9.3 KB (adaptive). On marker tiles the same sprite appears many
/// times in rows of transparent pixels; unfiltered, deflate matches each copy against earlier
/// ones byte for byte, while any filter rewrites the copies differently depending on what lies
/// to their left or above, and libpng's adaptive heuristic adds a pass per filter per row.
/// Z_FILTERED and Z_RLE were within 2% or clearly worse.
public struct PNGEncodeOptions: Sendable, Hashable {
    /// zlib compression level, 0 (store) ... 9 (smallest, slowest).
    public var level: Int
    /// Row filters libpng may use; empty: None only.
    public var filters: PNGFilters
    /// zlib strategy.
    public var strategy: PNGCompressionStrategy
    /// zlib memory level 1...9 (`deflateInit2`'s memLevel: a hash table of 2^(memoryLevel + 7)
    /// entries and a symbol buffer of 2^(memoryLevel + 6)); smaller is less memory to clear and
    /// to miss in cache per encoding, with shorter deflate blocks. zlib's default is 8.
    public var memoryLevel: Int
    /// The deflate encoder (default zlib).
    public var deflater: PNGDeflater = .zlib

    /// `level` is clamped to 0...9 and `memoryLevel` to 1...9. Defaults: level 6, no filters,
    /// libpng's strategy (which is Z_DEFAULT_STRATEGY without filters), memory level 8 (zlib's).
    public init(level: Int = 6, filters: PNGFilters = [], strategy: PNGCompressionStrategy = .libpngDefault,
                memoryLevel: Int = 8) {
        self.level = min(max(level, 0), 9)
        self.filters = filters
        self.strategy = strategy
        self.memoryLevel = min(max(memoryLevel, 1), 9)
    }

    /// Level 6, no filters: the measured best trade-off for marker tiles.
    public static let `default` = PNGEncodeOptions()
    /// What tiles use (`TileRenderer.renderTile`, its two-thread paths, the z0 sweep's tiles):
    /// `pixel`, since 2026-12-01. Measured on 10M city tiles (`marker-bench --only citytiles`,
    /// 500 tiles per zoom, each canvas encoded each way; CPU p50 / p99 and mean bytes):
    ///
    ///                      z10                      z14                      z18
    ///     tileZlib         1.71 / 3.31 ms 36.3 KB   1.41 / 2.34 ms 29.4 KB   0.55 / 0.89 ms 3.7 KB
    ///     zlib level 1     1.58 / 3.06 ms 38.4 KB   1.33 / 2.17 ms 31.2 KB   0.54 / 0.83 ms 3.7 KB
    ///     pixel, 1 entry   0.94 / 1.73 ms 41.7 KB   0.85 / 1.41 ms 33.4 KB   0.24 / 0.53 ms 3.4 KB
    ///
    /// With one position per hash (the first version) about half the CPU time of zlib's settings
    /// for 14-15 % more bytes on dense tiles (8 % fewer on sparse ones). Two positions per hash
    /// (the deflater now), alternating with one in later runs, ratios to `tileZlib` in the same run:
    ///
    ///                      z10                      z14                      z18
    ///     pixel, 1 entry   0.51x / 0.52x 41.7 KB    0.56x / 0.58x 33.4 KB    0.37x / 0.51x 3.4 KB
    ///     pixel, 2 entries 0.52-0.53x / 0.52-0.53x  0.59-0.60x / 0.57-0.58x  0.40x / 0.56x
    ///                      39.1 KB                  29.7 KB                  3.3 KB
    ///
    /// 4-5 % more time for 6 % (z10) and 11 % (z14) fewer bytes: within 8 % of zlib's bytes, at
    /// about half its time. A cold tile's budget (5 ms p99 at z >= 10) is the tighter limit.
    public static let tile = pixel
    /// The tiles' zlib settings until 2026-12-01 (`tile` before `pixel`): level 2, no filters,
    /// zlib memory level 7. On dense tiles level 6 is far
    /// slower than on the sparse one above; measured on tiles of marker-bench's synthetic layer
    /// (1M default pins, tiles at city centres, 256 px, CPU time per tile, mean of 30 tiles):
    ///
    ///                  z4               z10              z14
    ///     level 6      6.3 ms 30.5 KB   4.4 ms 23.7 KB   2.2 ms 14.1 KB
    ///     level 2      1.4 ms 39.6 KB   1.2 ms 29.8 KB   1.0 ms 19.6 KB   <- tiles
    ///     level 1      1.5 ms 43.1 KB   1.2 ms 31.9 KB   1.0 ms 20.3 KB
    ///     level 3      2.0 ms 36.0 KB   1.5 ms 27.5 KB   1.1 ms 18.7 KB
    ///     level 1, Sub 1.7 ms 48.7 KB   1.4 ms 36.4 KB   1.1 ms 23.7 KB
    ///     Z_RLE        2.6 ms  113 KB   1.5 ms 66.5 KB   1.7 ms 50.7 KB
    ///
    /// A cold tile's budget (5 ms p99 at z >= 10) cannot afford level 6's extra 1-3 ms for
    /// 20-25 % fewer bytes; cached tiles are sent as they are, whatever their level.
    ///
    /// Measured again on 10M city tiles (`marker-bench --only citytiles`: 500 tiles per zoom,
    /// each canvas encoded with each setting, CPU p50 / p99 and mean bytes; load average 5-6):
    ///
    ///                  z10                      z14                      z18
    ///     level 2      1.86 / 3.87 ms 36.3 KB   1.41 / 2.48 ms 29.3 KB   0.55 / 0.92 ms 3.7 KB
    ///     level 1      1.70 / 3.50 ms 38.4 KB   1.35 / 2.42 ms 31.1 KB   0.54 / 0.92 ms 3.7 KB
    ///     level 6      6.65 / 16.0 ms 28.9 KB   3.88 / 9.43 ms 22.2 KB   1.16 / 2.27 ms 2.6 KB
    ///     1, Z_RLE     2.29 / 4.47 ms 70.8 KB   2.76 / 5.56 ms 81.5 KB   0.57 / 1.22 ms 4.4 KB
    ///
    /// Level 1 saves 4-9 % of the encoding for 6 % more bytes; level 2 stays. An almost empty
    /// tile cost about 0.55 ms: every one of the 256 KB went through unpremultiplying, adler32
    /// (about 0.1 ms each) and deflate's match loop (most of it: the hash chain walk, missing in
    /// cache). A palette PNG (a quarter of the bytes to compress) is out: these tiles hold 550-900
    /// distinct colours (z10 / z14 p50), 208 at z18.
    ///
    /// Since then (branch `pngfast`) the encoder passes rows of zero bytes to libpng as they are,
    /// unpremultiplies four pixels at a time (zeroed when all 16 bytes are 0, copied when all four
    /// are opaque, else a reciprocal table instead of divisions), and tiles use zlib memory level 7
    /// (a hash table of 16 Ki entries instead of 32 Ki: less to clear and to miss in cache). The
    /// same 1M city tiles (`--only citytiles --sizes 1000000`, 500 tiles per zoom), main's binary and
    /// this one back to back, twice (load average 3.1-3.8), PNG CPU p50 / p99 of the same canvases:
    ///
    ///                          z10                      z14                      z18
    ///     before (level 2)     1.52 / 2.93 ms 26.5 KB   1.17-1.20 / 2.10-2.15    0.57-0.70 / 0.84-0.91
    ///     after, memory 7      1.53 / 2.96-3.05         0.96-1.02 / 1.97-1.99    0.43-0.49 / 0.67-0.74 ms
    ///     after, memory 8      1.52-1.53 / 2.96-3.00    1.00-1.05 / 1.94-1.97    0.48-0.56 / 0.77-0.85
    ///     after, memory 6      1.52-1.54 / 2.93-2.95    0.96-1.01 / 2.00-2.04    0.40-0.46 / 0.62-0.69
    ///
    /// (bytes: 26.5 / 14.4 / 2.5 KB for all three memory levels; 14.5 KB at z14 with memory 6.)
    /// z14 is 15-20 % faster, z18 25-30 %; z10 (dense, few empty rows, deflate-bound) does not
    /// move. Memory level 9 was 10-25 % slower than 8, 5 no better than 6; a smaller zlib window
    /// (13-14 bits instead of 15) was slower, not faster: fewer long matches, 5-30 % more bytes.
    public static let tileZlib = PNGEncodeOptions(level: 2, memoryLevel: 7)
    /// `PixelDeflater` (`PNGDeflater.pixel`), no filters.
    public static let pixel: PNGEncodeOptions = {
        var o = PNGEncodeOptions(level: 1)
        o.deflater = .pixel
        return o
    }()
    /// Level 1, no filters: about half the time of `default`, 25-85% larger.
    public static let fast = PNGEncodeOptions(level: 1)
    /// Level 9, no filters: a little smaller at about 10x the time; for images encoded once.
    public static let smallest = PNGEncodeOptions(level: 9)
    /// What libpng does when not told: level 6, adaptive filters, Z_FILTERED.
    public static let libpng = PNGEncodeOptions(level: 6, filters: .adaptive)
}

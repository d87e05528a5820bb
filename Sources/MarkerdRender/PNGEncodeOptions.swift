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

/// How `PNGCodec.encode` compresses. Output is always 8-bit RGBA, non-interlaced.
///
/// The default, zlib level 6 with the Up filter only, was chosen by measurement
/// (`PNGSettingsTableTests`, release build, this 2-core machine; numbers in the commit that set
/// it): on marker tiles - transparent rows, flat-coloured antialiased sprites - Up turns every
/// sprite interior into runs of zero bytes, so it gave both the smallest output of all settings
/// below level 9 (10-20% below unfiltered level 6) and about half the time of unfiltered
/// level 6. libpng's adaptive heuristic picks None for nearly every row of such tiles (0x00 and
/// 0xFF bytes count as small), so it costs time and gains nothing. Level 9 saves another 2-3%
/// at 5-10x the time.
public struct PNGEncodeOptions: Sendable, Hashable {
    /// zlib compression level, 0 (store) ... 9 (smallest, slowest).
    public var level: Int
    /// Row filters libpng may use; empty: None only.
    public var filters: PNGFilters
    /// zlib strategy.
    public var strategy: PNGCompressionStrategy

    /// `level` is clamped to 0...9. Defaults: level 6, Up filter, libpng's strategy.
    public init(level: Int = 6, filters: PNGFilters = .up, strategy: PNGCompressionStrategy = .libpngDefault) {
        self.level = min(max(level, 0), 9)
        self.filters = filters
        self.strategy = strategy
    }

    /// Level 6, Up filter: the measured best trade-off for marker tiles.
    public static let `default` = PNGEncodeOptions()
    /// Level 1, Up filter: about half the time of `default`, about 15% larger.
    public static let fast = PNGEncodeOptions(level: 1, filters: .up)
    /// Level 9, Up filter: smallest output, for images encoded once (goldens, shared constants).
    public static let smallest = PNGEncodeOptions(level: 9, filters: .up)
    /// Level 6, no filters.
    public static let unfiltered = PNGEncodeOptions(level: 6, filters: [])
    /// What libpng does when not told: level 6, adaptive filters, Z_FILTERED.
    public static let libpng = PNGEncodeOptions(level: 6, filters: .adaptive)
}

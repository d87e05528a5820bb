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
/// The default was chosen by measurement (see `PNGSettingsTableTests`, release build, this
/// machine, a sparse 256 px tile with 50 default pins): zlib level 6 with no filters. For such
/// tiles (mostly transparent zero rows, a few small opaque sprites repeated), filtering does not
/// help: the Sub/Up/Paeth residues of anti-aliased sprite edges are less repetitive than the
/// raw pixels that deflate already matches across repeated sprites, and adaptive filtering costs
/// a pass per filter per row. Level 6 unfiltered gives the smallest tiles of the fast settings at
/// about 1 ms per tile; `fast` halves the time for about 1.6x the bytes.
public struct PNGEncodeOptions: Sendable, Hashable {
    /// zlib compression level, 0 (store) ... 9 (smallest, slowest).
    public var level: Int
    /// Row filters libpng may use; empty: None only.
    public var filters: PNGFilters
    /// zlib strategy.
    public var strategy: PNGCompressionStrategy

    /// `level` is clamped to 0...9.
    public init(level: Int = 6, filters: PNGFilters = [], strategy: PNGCompressionStrategy = .libpngDefault) {
        self.level = min(max(level, 0), 9)
        self.filters = filters
        self.strategy = strategy
    }

    /// Level 6, no filters: the measured best trade-off for sparse marker tiles.
    public static let `default` = PNGEncodeOptions()
    /// Level 1, no filters: roughly half the time of `default`, larger files.
    public static let fast = PNGEncodeOptions(level: 1)
    /// Level 9, no filters: smallest output for images encoded once (shared constants).
    public static let smallest = PNGEncodeOptions(level: 9)
    /// What libpng does when not told: level 6, adaptive filters, Z_FILTERED.
    public static let libpng = PNGEncodeOptions(level: 6, filters: .adaptive)
}

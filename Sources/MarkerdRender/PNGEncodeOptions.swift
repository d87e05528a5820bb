/// How `PNGCodec.encode` compresses. Output is always 8-bit RGBA, non-interlaced, every row with
/// filter type None (on marker tiles the same sprite appears many times among transparent
/// pixels; unfiltered, deflate matches each copy against earlier ones byte for byte, while a
/// filter rewrites the copies differently depending on their neighbours), in one zlib stream
/// from libdeflate. The bytes are a function of the pixels and the level alone.
public struct PNGEncodeOptions: Sendable, Hashable {
    /// libdeflate compression level, 0 (stored) ... 12 (smallest, slowest).
    public var level: Int

    /// `level` is clamped to 0...12. Default 6 (libdeflate's own default).
    public init(level: Int = 6) {
        self.level = min(max(level, 0), 12)
    }

    /// Level 6: for images encoded once or rarely (icons, tests).
    public static let `default` = PNGEncodeOptions()
    /// What tiles use (`TileRenderer.renderTile`, patched and cluster tiles): chosen by
    /// measurement, see docs/decisions.md ("PNG through libdeflate").
    public static let tile = PNGEncodeOptions(level: 1)
    /// Level 12: the smallest libdeflate makes, at many times the time; for files written once.
    public static let smallest = PNGEncodeOptions(level: 12)
}

/// The fully transparent tile PNGs, encoded once (lazily, thread-safely) and shared by every
/// empty tile of that size. They are 1-bit gray PNGs with a tRNS entry (about 100 bytes; RGBA8
/// would take about 1 KiB at 512 px), which every PNG decoder expands to transparent RGBA.
public enum TransparentTile {
    /// A 256x256 fully transparent PNG.
    public static let png256: [UInt8] = encode(size: 256)
    /// A 512x512 fully transparent PNG.
    public static let png512: [UInt8] = encode(size: 512)
    /// 768x768 (a 256 px tile at density 3).
    public static let png768: [UInt8] = encode(size: 768)
    /// 1024x1024 (a 512 px tile at density 2).
    public static let png1024: [UInt8] = encode(size: 1024)
    /// 1536x1536 (a 512 px tile at density 3).
    public static let png1536: [UInt8] = encode(size: 1536)

    /// The shared bytes for a `size` x `size` tile, when `size` is 256, 512, 768, 1024 or 1536
    /// (every tile size x density 1, 2, 3).
    public static func shared(size: Int) -> [UInt8]? {
        switch size {
        case 256: return png256
        case 512: return png512
        case 768: return png768
        case 1024: return png1024
        case 1536: return png1536
        default: return nil
        }
    }

    /// A fully transparent `size` x `size` PNG: the shared bytes for 256 and 512, else encoded now.
    public static func png(size: Int) -> [UInt8] {
        shared(size: size) ?? encode(size: size)
    }

    private static func encode(size: Int) -> [UInt8] {
        PNGCodec.encodeTransparent(width: size, height: size)
    }
}

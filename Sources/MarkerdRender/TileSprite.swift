import MarkerdCore
private import Synchronization

/// An icon as drawn into raster tiles at one density: premultiplied pixels and the offset from the
/// sprite's top-left pixel corner to the marker's position (what covers what below it is worked
/// out from the pixels' alpha, `CoverageMask.Shapes`).
///
/// Geometry (device px, density d): the sprite is the icon's box `round(w*d) x round(h*d)`
/// (pins: `S x S` with `S = round(48 x scale x d)`, see `PinStyle.render(density:)`), and its
/// anchor point is `(round(anchor.x x width), round(anchor.y x height))` from the top-left corner.
/// A marker whose position rounds to device pixel corner `(X, Y)` has the sprite's top-left at
/// `(X - anchorX, Y - anchorY)`. Pin sprites widened by a long label are cropped to the pin's box,
/// so that every drawn pixel lies within the icon extents the core uses for queries, hit-tests
/// and tile versions (a label wider than the pin is clipped).
public struct TileSprite: Sendable {
    public let image: RGBAImage
    public let anchorX: Int
    public let anchorY: Int
    /// True when no pixel has alpha > 0.
    public let isBlank: Bool
    /// What the renderer's coverage mask reads of this sprite, made once here rather than for
    /// each raster (per pixel about 1.4 bytes beside the image's 4).
    let shape: CoverageMask.SpriteShape

    public init(image: RGBAImage, anchorX: Int, anchorY: Int) {
        self.image = image
        self.anchorX = anchorX
        self.anchorY = anchorY
        isBlank = image.isFullyTransparent
        shape = CoverageMask.SpriteShape(image)
    }

    /// Width in device px.
    public var width: Int { image.width }
    /// Height in device px.
    public var height: Int { image.height }

    /// The sprite of a pin drawn by `PinStyle.render(density:)`, cropped to the pin's square.
    static func pin(_ style: PinStyle, anchor: Anchor, density: Int, cache: PinSpriteCache) throws(RenderError) -> TileSprite {
        let full = try cache.sprite(for: style, density: Float(density))
        let s = full.height
        var image = full
        if full.width > s {
            let x0 = (full.width - s) / 2
            var px = [UInt8](repeating: 0, count: s * s * 4)
            full.pixels.withUnsafeBufferPointer { src in
                for y in 0..<s {
                    for i in 0..<(s * 4) { px[y * s * 4 + i] = src[(y * full.width + x0) * 4 + i] }
                }
            }
            image = RGBAImage(width: s, height: s, pixels: px)
        }
        return TileSprite(image: image, anchorX: Int((Double(anchor.x) * Double(s)).rounded()),
                          anchorY: Int((Double(anchor.y) * Double(s)).rounded()))
    }

    /// A registered image icon at `density`: each icon pixel becomes a `density x density` block
    /// (nearest neighbour; exact for the integer densities 1, 2 and 3, keeps premultiplied pixels
    /// valid and edges crisp).
    static func image(_ icon: RGBAImage, anchor: Anchor, density: Int) -> TileSprite {
        let scaled = scale(icon, by: density)
        return TileSprite(image: scaled, anchorX: Int((Double(anchor.x) * Double(scaled.width)).rounded()),
                          anchorY: Int((Double(anchor.y) * Double(scaled.height)).rounded()))
    }

    /// Nearest-neighbour upscaling by an integer factor (pixel replication).
    public static func scale(_ icon: RGBAImage, by d: Int) -> RGBAImage {
        if d <= 1 { return icon }
        let w = icon.width * d, h = icon.height * d
        var px = [UInt8](repeating: 0, count: w * h * 4)
        icon.pixels.withUnsafeBytes { src in
            px.withUnsafeMutableBytes { dst in
                for y in 0..<h {
                    let sy = y / d
                    for x in 0..<w {
                        let v = src.loadUnaligned(fromByteOffset: (sy * icon.width + x / d) * 4, as: UInt32.self)
                        dst.storeBytes(of: v, toByteOffset: (y * w + x) * 4, as: UInt32.self)
                    }
                }
            }
        }
        return RGBAImage(width: w, height: h, pixels: px)
    }
}

/// Tile sprites by (icon style, density): pins drawn once through a `PinSpriteCache`, image icons
/// scaled once per (icon, density) from the decoded pixels `images` returns (nil: not registered,
/// drawn as nothing). Bounded: a full cache drops an arbitrary entry.
public final class IconSpriteCache: Sendable {
    private struct Key: Hashable, Sendable { let style: IconStyle; let density: Int }
    private struct ImageKey: Hashable, Sendable { let id: String; let density: Int }

    public let pins: PinSpriteCache
    private let images: @Sendable (String) -> RGBAImage?
    private let sprites = Mutex<[Key: TileSprite]>([:])
    private let scaled = Mutex<[ImageKey: RGBAImage]>([:])
    public let capacity: Int

    public init(pins: PinSpriteCache = PinSpriteCache(), capacity: Int = 8192, images: @escaping @Sendable (String) -> RGBAImage?) {
        self.pins = pins
        self.images = images
        self.capacity = max(1, capacity)
    }

    /// The sprite of `style` at `density` (1, 2 or 3).
    public func sprite(_ style: IconStyle, density: Int) throws(RenderError) -> TileSprite {
        let key = Key(style: style, density: density)
        if let s = sprites.withLock({ $0[key] }) { return s }
        let made: TileSprite
        switch style.source {
        case .pin(let pin):
            made = try TileSprite.pin(pin, anchor: style.anchor, density: density, cache: pins)
        case .image(let id, _, _):
            let ik = ImageKey(id: id, density: density)
            if let img = scaled.withLock({ $0[ik] }) {
                made = TileSprite(image: img, anchorX: Int((Double(style.anchor.x) * Double(img.width)).rounded()),
                                  anchorY: Int((Double(style.anchor.y) * Double(img.height)).rounded()))
            } else if let icon = images(id) {
                made = TileSprite.image(icon, anchor: style.anchor, density: density)
                scaled.withLock { m in
                    if m.count >= capacity, let k = m.keys.first { m[k] = nil }
                    m[ik] = made.image
                }
            } else {
                made = TileSprite(image: .transparent(width: 1, height: 1), anchorX: 0, anchorY: 0)
            }
        }
        sprites.withLock { m in
            if m.count >= capacity, let k = m.keys.first { m[k] = nil }
            m[key] = made
        }
        return made
    }
}

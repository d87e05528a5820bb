import MarkerdCore
private import CCairo
private import Synchronization
#if canImport(Glibc)
private import Glibc  // floor
#elseif canImport(Darwin)
private import Darwin
#endif

/// A cluster's count bubble as drawn into raster tiles (`ClusteringOptions.raster`): a filled
/// circle with a white outline and the cluster's abbreviated count in white, centred on the
/// cluster's position.
///
/// Bands by count (px at density 1; the sprite is `diameter x density` device px square, anchored
/// at its centre, which is a pixel corner because every diameter is even):
///
/// | count | diameter | fill | label size |
/// | --- | --- | --- | --- |
/// | < 100 | 30 px | blue `#1E88E5` | 12 px |
/// | 100 ..< 1000 | 40 px | orange `#FB8C00` | 13 px |
/// | >= 1000 | 50 px | red `#E53935` | 14 px |
///
/// The outline is 2 px (times density) white, inside the sprite; the label is Noto Sans Bold
/// (through Pango, `TextEngine`: grayscale antialiasing, no hinting), centred by its ink box on
/// whole pixels.
public struct ClusterBubble: Hashable, Sendable {
    /// Size band: 0, 1 or 2 (see the table).
    public var band: Int
    /// The text drawn: `ClusterBubble.abbreviated(count)`.
    public var label: String

    public init(count: Int) {
        band = ClusterBubble.band(count: count)
        label = ClusterBubble.abbreviated(count)
    }

    /// The size band of a count: 0 below 100, 1 below 1000, else 2.
    public static func band(count: Int) -> Int { count < 100 ? 0 : count < 1000 ? 1 : 2 }

    /// Diameter in px at density 1 of a band.
    public static func diameter(band: Int) -> Int { [30, 40, 50][min(max(band, 0), 2)] }

    /// Fill colour (0xAARRGGBB, opaque) of a band.
    public static func fill(band: Int) -> UInt32 { [0xFF1E_88E5, 0xFFFB_8C00, 0xFFE5_3935][min(max(band, 0), 2)] }

    /// The most a bubble reaches from its centre, in px at density 1 (for finding the clusters
    /// that touch a raster).
    public static let maxRadiusPx: Double = 25

    /// supercluster's `point_count_abbreviated`: below 1000 the count itself ("999"); below
    /// 10,000 thousands to one decimal, rounded half up, without a trailing ".0" ("1.2k", "2k",
    /// "10k" for 9,950); from 10,000 whole thousands rounded half up ("12k", "1235k").
    /// Negative counts are drawn as "0".
    public static func abbreviated(_ count: Int) -> String {
        let c = max(0, count)
        if c >= 10_000 { return "\((c + 500) / 1000)k" }
        if c >= 1000 {
            let tenths = (c + 50) / 100
            return tenths % 10 == 0 ? "\(tenths / 10)k" : "\(tenths / 10).\(tenths % 10)k"
        }
        return "\(c)"
    }

    /// Draws the bubble with Cairo at `density` (1, 2 or 3; anything else counts as 1).
    ///
    /// - Returns: premultiplied RGBA8, `diameter x density` px square.
    /// - Throws: `.drawingFailed` if Cairo cannot allocate the surface.
    public func render(density: Int) throws(RenderError) -> RGBAImage {
        let d = (1...3).contains(density) ? Double(density) : 1
        let band = min(max(band, 0), 2)
        let size = Int(Double(ClusterBubble.diameter(band: band)) * d)
        return try CairoCanvas.drawImage(width: size, height: size, what: "a cluster bubble") { cr in

            let s = Double(size), stroke = 2 * d
            cairo_arc(cr, s / 2, s / 2, s / 2 - stroke / 2, 0, 2 * Double.pi)
            CairoCanvas.setSource(cr, ClusterBubble.fill(band: band))
            cairo_fill_preserve(cr)
            CairoCanvas.setSource(cr, 0xFFFF_FFFF)
            cairo_set_line_width(cr, stroke)
            cairo_stroke(cr)

            TextEngine.with { engine in
                let ink = engine.setText(label, family: TextEngine.uiFamily, sizePx: [12.0, 13, 14][band] * d, bold: true).ink
                engine.draw(on: cr, x: (s / 2 - (ink.x + ink.width / 2)).rounded(),
                            y: (s / 2 - (ink.y + ink.height / 2)).rounded(), color: 0xFFFF_FFFF)
            }
        }
    }
}

/// Bubble sprites by (label, size band, density), each drawn once, like `PinSpriteCache` for pins.
/// Thread-safe; bounded (a full cache drops an arbitrary entry). Drawing happens outside the
/// lock, so two first requests for one key may both draw (identical results).
public final class ClusterBubbleCache: Sendable {
    private struct Key: Hashable, Sendable { let bubble: ClusterBubble; let density: Int }

    /// The process-wide cache GetTile uses.
    public static let shared = ClusterBubbleCache()

    public let capacity: Int
    private let sprites = Mutex<[Key: TileSprite]>([:])
    private let draws = Atomic<Int>(0)

    public init(capacity: Int = 4096) {
        self.capacity = max(1, capacity)
    }

    /// The sprite of the bubble for `count` at `density`, anchored at its centre.
    public func sprite(count: Int, density: Int) throws(RenderError) -> TileSprite {
        let key = Key(bubble: ClusterBubble(count: count), density: density)
        if let s = sprites.withLock({ $0[key] }) { return s }
        let image = try key.bubble.render(density: density)
        draws.wrappingAdd(1, ordering: .relaxed)
        let made = TileSprite(image: image, anchorX: image.width / 2, anchorY: image.height / 2)
        sprites.withLock { m in
            if m.count >= capacity, let k = m.keys.first { m[k] = nil }
            m[key] = made
        }
        return made
    }

    /// Bubbles drawn since creation.
    public var drawCount: Int { draws.load(ordering: .relaxed) }
    /// Sprites currently cached.
    public var count: Int { sprites.withLock { $0.count } }
}

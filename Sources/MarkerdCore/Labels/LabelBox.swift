/// A label's rectangle in whole world px at density 1 at one pixel zoom `pz` (the world is
/// `W = 256 << pz` px wide and high; y grows southward from the north edge). `x` is in [0, W)
/// for a stored placement; a box may reach past the east edge (it wraps: the part beyond `W`
/// is drawn at x - W). Queries return copies shifted by multiples of `W` (see
/// `LabelPlacement.labels(inPixelRect:)`).
public struct LabelBox: Hashable, Sendable, CustomStringConvertible {
    public var x: Int64
    public var y: Int64
    /// At least `LabelGeometry.minimumSize`.
    public var width: Int64
    /// At least `LabelGeometry.minimumSize`.
    public var height: Int64

    public init(x: Int64, y: Int64, width: Int64, height: Int64) {
        self.x = x; self.y = y; self.width = width; self.height = height
    }

    public var description: String { "box(\(x), \(y), \(width)x\(height))" }
}

/// A placed label: the marker's slot, its box and the position it took.
public struct PlacedLabel: Hashable, Sendable {
    public var slot: Int32
    public var box: LabelBox
    public var position: LabelPosition
    public init(slot: Int32, box: LabelBox, position: LabelPosition) { self.slot = slot; self.box = box; self.position = position }
}

/// The geometry of label candidates (see `LabelPosition`), shared by placement and its tests.
public enum LabelGeometry {
    /// World units per px at pixel zoom `pz` (0...23) is 2^(24 - pz): a world x in units is at
    /// px `floor(x / 2^(24 - pz) + 0.5)`, the whole px `RasterView` anchors the marker's icon at.
    public static func anchor(_ p: WorldPoint, pixelZoom pz: Int) -> (x: Int64, y: Int64) {
        let shift = Int64(24 - pz), half = Int64(1) << (shift - 1)
        return ((Int64(p.x) + half) >> shift, (Int64(p.y) + half) >> shift)
    }

    /// The smallest box a label of `style` takes, in whole px: `2 inset + ceil(fontSize / 4)`
    /// wide and `2 inset + ceil(fontSize)` high (`inset` = ceil(haloWidth)), about one narrow
    /// glyph on one line. Measured sizes are raised to it (`wholeSize`), so it bounds every box
    /// from below: placement tests this box first (see `box`) and measures only labels that pass.
    public static func minimumSize(_ style: LabelTextStyle) -> (width: Int64, height: Int64) {
        let inset = 2 * CoreMath.ceil(Double(style.haloWidth))
        return (Int64(inset + CoreMath.ceil(Double(style.fontSize) / 4)), Int64(inset + CoreMath.ceil(Double(style.fontSize))))
    }

    /// The largest box a label of `style` takes, in whole px: `2 inset + ceil(maxWidth)` wide and
    /// `2 inset + lines * ceil(3 fontSize)` high (`lines`: `maxLines` when wrapping, 1 with an
    /// ellipsis; three font sizes per line is more than any font's line height). A measurer that
    /// honours `maxWidth` and `maxLines` stays within it; sizes beyond are cut to it (`wholeSize`),
    /// so it bounds every box from above: lazy placement (`LabelPlacement.decide(pixelRect:)`)
    /// searches this far for the labels that could collide with one.
    public static func maximumSize(_ style: LabelTextStyle) -> (width: Int64, height: Int64) {
        let inset = Int64(2 * CoreMath.ceil(Double(style.haloWidth)))
        let lines = Int64(style.overflow == .wrap ? Swift.max(1, style.maxLines) : 1)
        return (inset + Int64(CoreMath.ceil(Double(style.maxWidth))), inset + lines * Int64(CoreMath.ceil(3 * Double(style.fontSize))))
    }

    /// A measured size in whole px: each side rounded up, raised to `minimumSize(style)` and cut
    /// to `maximumSize(style)` (a non-finite side counts as the minimum).
    public static func wholeSize(_ s: LabelSize, style: LabelTextStyle) -> (width: Int64, height: Int64) {
        let least = minimumSize(style), most = maximumSize(style)
        func side(_ v: Float, _ lo: Int64, _ hi: Int64) -> Int64 {
            guard v.isFinite else { return lo }
            return Swift.max(lo, Swift.min(hi, Int64(CoreMath.ceil(Double(Swift.max(0, Swift.min(v, 1_048_576)))))))
        }
        return (side(s.width, least.width, most.width), side(s.height, least.height, most.height))
    }

    /// Nearest whole px, halves up: deterministic on every host.
    @inline(__always) static func roundPx(_ v: Double) -> Int64 { Int64(CoreMath.floor(v + 0.5)) }

    /// The box of a `width x height` px label at `position` beside an icon with extents `e` (px
    /// at density 1) anchored at whole px (`ax`, `ay`), `gap` px from the icon; the origin is
    /// rounded to whole px (`roundPx`) and `x` wrapped into [0, `worldWidth`).
    ///
    /// A box is monotone in its size: the box of a smaller size at the same position lies inside
    /// it (the origin is rounded with one monotone function). So the box of `minimumSize` (the
    /// "probe") lies inside every label's box there: a label whose probe collides cannot fit.
    public static func box(anchorX ax: Int64, anchorY ay: Int64, extents e: IconExtents, width w: Int64, height h: Int64,
                           gap: Float, position: LabelPosition, worldWidth: Int64) -> LabelBox {
        let g = Double(gap)
        let cx = (e.right - e.left) / 2, cy = (e.down - e.up) / 2   // the icon's centre from the anchor
        let dx: Int64, dy: Int64
        switch position {
        case .right: dx = roundPx(e.right + g); dy = roundPx(cy - Double(h) / 2)
        case .left: dx = -roundPx(e.left + g) - w; dy = roundPx(cy - Double(h) / 2)
        case .below: dx = roundPx(cx - Double(w) / 2); dy = roundPx(e.down + g)
        case .above: dx = roundPx(cx - Double(w) / 2); dy = -roundPx(e.up + g) - h
        }
        let x = (ax + dx) % worldWidth
        return LabelBox(x: x < 0 ? x + worldWidth : x, y: ay + dy, width: w, height: h)
    }

    /// Whether the boxes grown by `pad` px on every side overlap (share an area; touching edges
    /// do not count), comparing x modulo `worldWidth`. Boxes have x in [0, worldWidth).
    @inline(__always) static func overlap(_ a: LabelBox, _ b: LabelBox, pad: Int64, worldWidth: Int64) -> Bool {
        guard a.y - pad < b.y + b.height + pad, b.y - pad < a.y + a.height + pad else { return false }
        // d: how far b's left edge lies east of a's, around the world.
        var d = (b.x - a.x) % worldWidth
        if d < 0 { d += worldWidth }
        return d < a.width + 2 * pad || worldWidth - d < b.width + 2 * pad
    }
}

/// MapConductor's DefaultMarkerIcon (the proto's `DefaultPin`): a map pin - a round head with a
/// point at the bottom centre - 48 px x `scale` x density square, anchored at its tip,
/// (0.5, 1.0) of the sprite. Colours are ARGB `0xAARRGGBB` (straight alpha).
///
/// Invalid numbers (NaN, infinities, zero or negative sizes) are drawn as the defaults; see
/// `normalized`. Sizes are clamped so that no sprite exceeds 1024 px in either direction.
public struct PinStyle: Hashable, Sendable {
    /// Head and body colour. Default opaque red.
    public var fill: UInt32
    /// Outline colour. Default opaque white.
    public var stroke: UInt32
    /// Outline width in px at scale 1, density 1 (drawn as `strokeWidth x scale x density`
    /// device px, centred on the outline, as MapConductor does). Default 1; 0: no outline.
    public var strokeWidth: Float
    /// Size factor: the sprite is 48 x `scale` px at density 1. Default 1.
    public var scale: Float
    /// Text centred in the head, or nil (default) for none. An empty string means none.
    public var label: String?
    /// Label colour. Default opaque black.
    public var labelColor: UInt32
    /// Label font size in px at density 1 (not multiplied by `scale`, as in MapConductor).
    /// Default 18.
    public var labelSize: Float

    public init(
        fill: UInt32 = 0xFFFF_0000,
        stroke: UInt32 = 0xFFFF_FFFF,
        strokeWidth: Float = 1,
        scale: Float = 1,
        label: String? = nil,
        labelColor: UInt32 = 0xFF00_0000,
        labelSize: Float = 18
    ) {
        self.fill = fill
        self.stroke = stroke
        self.strokeWidth = strokeWidth
        self.scale = scale
        self.label = label
        self.labelColor = labelColor
        self.labelSize = labelSize
    }

    /// The same, with the proto's field names (`fill_color`, `stroke_color`); every argument
    /// required, so that `PinStyle()` stays unambiguous.
    public init(
        fillColor: UInt32, strokeColor: UInt32, strokeWidth: Float, scale: Float,
        label: String?, labelColor: UInt32, labelSize: Float
    ) {
        self.init(fill: fillColor, stroke: strokeColor, strokeWidth: strokeWidth, scale: scale,
                  label: label, labelColor: labelColor, labelSize: labelSize)
    }

    /// `fill`, by the proto's name.
    public var fillColor: UInt32 {
        get { fill }
        set { fill = newValue }
    }

    /// `stroke`, by the proto's name.
    public var strokeColor: UInt32 {
        get { stroke }
        set { stroke = newValue }
    }

    /// Every field at its default: a plain red pin with a white outline.
    public static let `default` = PinStyle()

    /// Size of the pin at scale 1, density 1, in px.
    public static let baseSize: Float = 48
    /// Where the sprite is anchored: the tip, as fractions of the sprite's width and height.
    public static let anchor: (x: Double, y: Double) = (0.5, 1.0)

    /// The style as drawn: NaN, infinite or non-positive `scale` and `labelSize` become their
    /// defaults, NaN, infinite or negative `strokeWidth` becomes 1, and an empty label becomes nil.
    /// Equal normalized styles draw identical sprites.
    public var normalized: PinStyle {
        var s = self
        if !(s.scale.isFinite && s.scale > 0) { s.scale = 1 }
        if !(s.strokeWidth.isFinite && s.strokeWidth >= 0) { s.strokeWidth = 1 }
        if !(s.labelSize.isFinite && s.labelSize > 0) { s.labelSize = 18 }
        if s.label?.isEmpty == true { s.label = nil }
        return s
    }
}

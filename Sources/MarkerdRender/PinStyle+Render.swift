import MarkerdCore
/// Rendering-side conveniences for `PinStyle` (MapConductor's DefaultMarkerIcon): a map pin -
/// a round head with a point at the bottom centre - 48 px x `scale` x density square, anchored at
/// its tip, (0.5, 1.0) of the sprite.
///
/// Drawing (`render(density:)`) treats the numbers like this: the outline is
/// `strokeWidth x scale x density` device px, centred on the outline (as MapConductor does);
/// the label is `labelSize x density` px (not multiplied by `scale`, as in MapConductor);
/// invalid numbers draw as the defaults (see `normalized`); no sprite exceeds 1024 px.
extension PinStyle {
    /// Every field at its default: a plain red pin with a white outline.
    public static var `default`: PinStyle { PinStyle() }

    /// Where pin sprites are anchored: the tip, as fractions of the sprite's width and height.
    public static var anchor: (x: Double, y: Double) { (0.5, 1.0) }

    /// `fillColor`.
    public var fill: UInt32 {
        get { fillColor }
        set { fillColor = newValue }
    }

    /// `strokeColor`.
    public var stroke: UInt32 {
        get { strokeColor }
        set { strokeColor = newValue }
    }

    /// The style as drawn: NaN, infinite or non-positive `scale` and `labelSize` become their
    /// defaults (1 and 18), NaN, infinite or negative `strokeWidth` becomes 1, and an empty label
    /// becomes nil. Equal normalized styles draw identical sprites.
    public var normalized: PinStyle {
        var s = self
        if !(s.scale.isFinite && s.scale > 0) { s.scale = 1 }
        if !(s.strokeWidth.isFinite && s.strokeWidth >= 0) { s.strokeWidth = 1 }
        if !(s.labelSize.isFinite && s.labelSize > 0) { s.labelSize = 18 }
        if s.label?.isEmpty == true { s.label = nil }
        return s
    }
}

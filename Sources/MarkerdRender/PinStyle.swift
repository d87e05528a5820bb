// INTEGRATION NOTE: the core branch defines `MarkerdCore.PinStyle` with exactly this API
// (same stored properties, initializer and `baseSize`). When it lands on main, delete this file:
// MarkerdRender imports MarkerdCore, and everything here (the `+Render` extension, the sprite
// cache, the tests) compiles unchanged against the core's type.

/// MapConductor's DefaultMarkerIcon (the proto's `DefaultPin`) parameters: a 48 px pin
/// (times `scale`). Colours are ARGB `0xAARRGGBB` (straight alpha).
public struct PinStyle: Hashable, Sendable {
    /// Head and body colour. Default opaque red.
    public var fillColor: UInt32
    /// Outline colour. Default opaque white.
    public var strokeColor: UInt32
    /// Outline width in px at scale 1, density 1. Default 1; 0: no outline.
    public var strokeWidth: Float
    /// Size factor: the pin is 48 x `scale` px at density 1. Default 1.
    public var scale: Float
    /// Text centred in the head, or nil (default) for none.
    public var label: String?
    /// Label colour. Default opaque black.
    public var labelColor: UInt32
    /// Label font size in px at density 1. Default 18.
    public var labelSize: Float

    /// The pin's base size in px at scale 1 and density 1.
    public static let baseSize: Float = 48

    public init(fillColor: UInt32 = 0xFFFF_0000, strokeColor: UInt32 = 0xFFFF_FFFF, strokeWidth: Float = 1,
                scale: Float = 1, label: String? = nil, labelColor: UInt32 = 0xFF00_0000, labelSize: Float = 18) {
        self.fillColor = fillColor
        self.strokeColor = strokeColor
        self.strokeWidth = strokeWidth
        self.scale = scale
        self.label = label
        self.labelColor = labelColor
        self.labelSize = labelSize
    }
}

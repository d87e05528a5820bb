/// Map labels: text beside a marker's icon, placed without collisions (see `LabelPlacement`).
/// These types are shared by the core (placement), the renderer (measuring and drawing text) and
/// the service (the API's `LabelOptions` and `Marker.label`). Sizes are px at density 1.

/// How a label's text is laid out: everything that changes its size or glyphs, except the text
/// and the colours. Validated by `LabelStyle.validate`.
public struct LabelTextStyle: Hashable, Sendable {
    /// Font size in px at density 1, within [6, 64]. Default 13.
    public var fontSize: Float
    /// A fontconfig family list, e.g. "Noto Sans" or "Noto Sans, Noto Sans CJK JP"; scripts the
    /// family lacks fall back to other installed fonts. Default "Noto Sans". 1-128 bytes.
    public var fontFamily: String
    /// Bold text. Default false.
    public var bold: Bool
    /// Longest line in px at density 1 before the text wraps (or is cut), within [16, 1024].
    /// Default 160.
    public var maxWidth: Float
    /// What text longer than `maxWidth` does. Default `.wrap`.
    public var overflow: LabelOverflow
    /// Most lines when wrapping (the last one ends with an ellipsis if the text goes on), 1-8.
    /// Default 2.
    public var maxLines: Int
    /// Halo (outline) around the glyphs in px at density 1, within [0, 8]. Default 1.5.
    public var haloWidth: Float

    public init(fontSize: Float = 13, fontFamily: String = "Noto Sans", bold: Bool = false, maxWidth: Float = 160,
                overflow: LabelOverflow = .wrap, maxLines: Int = 2, haloWidth: Float = 1.5) {
        self.fontSize = fontSize; self.fontFamily = fontFamily; self.bold = bold; self.maxWidth = maxWidth
        self.overflow = overflow; self.maxLines = maxLines; self.haloWidth = haloWidth
    }
}

/// What text longer than `LabelTextStyle.maxWidth` does.
public enum LabelOverflow: UInt8, Hashable, Sendable {
    /// Breaks between words (or graphemes) onto at most `maxLines` lines.
    case wrap = 1
    /// One line, cut with an ellipsis.
    case ellipsis = 2
}

/// A label's colours, 0xAARRGGBB (not premultiplied).
public struct LabelPaint: Hashable, Sendable {
    /// Default 0xFF202020 (near black).
    public var color: UInt32
    /// Default 0xFFFFFFFF (white). Alpha 0 or `haloWidth` 0: no halo.
    public var haloColor: UInt32
    public init(color: UInt32 = 0xFF20_2020, haloColor: UInt32 = 0xFFFF_FFFF) {
        self.color = color; self.haloColor = haloColor
    }
}

/// The box a laid-out label occupies, halo included, in px at density 1. The text's logical
/// rectangle starts at (`inset`, `inset`) inside it, `inset` being the halo width rounded up.
public struct LabelSize: Hashable, Sendable {
    public var width: Float
    public var height: Float
    public init(width: Float, height: Float) { self.width = width; self.height = height }
}

/// Measures laid-out text (the renderer implements it with its text stack).
public protocol LabelMeasurer: Sendable {
    /// The size of `text` laid out in `style`, in px at density 1, halo included. Pure: the same
    /// inputs give the same size on every call, thread and host with the same fonts.
    func measure(_ text: String, style: LabelTextStyle) -> LabelSize
}

/// Where a label sits relative to its icon. A layer tries its `positions` in order and takes
/// the first that collides with no label placed before it.
public enum LabelPosition: UInt8, Hashable, Sendable, CaseIterable {
    /// Left edge `gap` px right of the icon, centred on the icon vertically.
    case right = 1
    /// Right edge `gap` px left of the icon, centred vertically.
    case left = 2
    /// Top edge `gap` px below the icon, centred on the icon horizontally.
    case below = 3
    /// Bottom edge `gap` px above the icon, centred horizontally.
    case above = 4
}

/// A layer's labels (the API's `LabelOptions`). One style serves every marker of the layer: the
/// text comes from each marker (its `MarkerLabel.text`, else the attribute `textAttribute`), the
/// colour may come from an attribute (`colorAttribute` looked up in `colors`).
public struct LabelStyle: Hashable, Sendable {
    /// Labels drawn into the layer's raster tiles. Default false.
    public var enabled: Bool
    /// The attribute whose value is a marker's label when the marker has no `MarkerLabel.text`.
    /// Nil (default): only markers with their own label text are labelled.
    public var textAttribute: String?
    public var text: LabelTextStyle
    public var paint: LabelPaint
    /// The attribute whose value picks the text colour from `colors`; values not in `colors`
    /// (and markers without the attribute) take `paint.color`. Nil: `paint.color` for all.
    public var colorAttribute: String?
    public var colors: [String: UInt32]
    /// Candidate positions, tried in this order. Default right, left, below, above. 1-4 distinct.
    public var positions: [LabelPosition]
    /// Space between the icon and the label in px at density 1, within [0, 64]. Default 2.
    public var gap: Float
    /// Space kept free around each label (no other label comes nearer) in px at density 1,
    /// within [0, 64]. Default 2.
    public var padding: Float
    /// A numeric attribute (e.g. "population") giving the label priority of markers without
    /// their own `MarkerLabel.priority`; higher is placed first. Missing or not a number: 0.
    public var priorityAttribute: String?
    /// Whether a marker whose label could not be placed still has its icon drawn. Default true.
    public var showIconWithoutLabel: Bool
    /// Labels appear from this zoom on (tile zoom, 0-22). Default 0.
    public var minZoom: Int

    public static let defaultPositions: [LabelPosition] = [.right, .left, .below, .above]

    public init(enabled: Bool = false, textAttribute: String? = nil, text: LabelTextStyle = LabelTextStyle(),
                paint: LabelPaint = LabelPaint(), colorAttribute: String? = nil, colors: [String: UInt32] = [:],
                positions: [LabelPosition] = LabelStyle.defaultPositions, gap: Float = 2, padding: Float = 2,
                priorityAttribute: String? = nil, showIconWithoutLabel: Bool = true, minZoom: Int = 0) {
        self.enabled = enabled; self.textAttribute = textAttribute; self.text = text; self.paint = paint
        self.colorAttribute = colorAttribute; self.colors = colors; self.positions = positions
        self.gap = gap; self.padding = padding; self.priorityAttribute = priorityAttribute
        self.showIconWithoutLabel = showIconWithoutLabel; self.minZoom = minZoom
    }

    /// Every field within its documented range; `field` prefixes the names in errors
    /// (e.g. "labels").
    public func validate(field: String) throws(MarkerdCoreError) {
        func bad(_ name: String, _ reason: String) -> MarkerdCoreError {
            .invalidArgument(field: field + "." + name, reason: reason)
        }
        func within(_ v: Float, _ lo: Float, _ hi: Float, _ name: String) throws(MarkerdCoreError) {
            guard v.isFinite, v >= lo, v <= hi else { throw bad(name, "\(v) is not within [\(lo), \(hi)]") }
        }
        try within(text.fontSize, 6, 64, "font_size")
        try within(text.maxWidth, 16, 1024, "max_width")
        try within(text.haloWidth, 0, 8, "halo_width")
        try within(gap, 0, 64, "gap")
        try within(padding, 0, 64, "padding")
        guard (1...8).contains(text.maxLines) else { throw bad("max_lines", "\(text.maxLines) is not within 1...8") }
        guard (1...128).contains(text.fontFamily.utf8.count) else {
            throw bad("font_family", "\(text.fontFamily.utf8.count) bytes is not within 1...128")
        }
        guard !positions.isEmpty, positions.count <= LabelPosition.allCases.count, Set(positions).count == positions.count else {
            throw bad("positions", "\(positions.count) positions, some repeated or none: 1-4 distinct expected")
        }
        guard (0...22).contains(minZoom) else { throw bad("min_zoom", "\(minZoom) is not within 0...22") }
        for (name, a) in [("text_attribute", textAttribute), ("color_attribute", colorAttribute),
                          ("priority_attribute", priorityAttribute)] {
            if let a, a.isEmpty || a.utf8.count > 256 { throw bad(name, "must be 1-256 bytes") }
        }
        if colors.count > 1024 { throw bad("colors", "\(colors.count) entries, more than 1024") }
    }
}

/// A marker's own label settings (the API's `Marker.label`); unset fields take the layer's.
public struct MarkerLabel: Hashable, Sendable {
    /// The label text, at most 256 bytes of UTF-8; nil: the layer's `textAttribute`. Empty: no label.
    public var text: String?
    /// Placement priority (higher first); nil: the layer's `priorityAttribute`, else 0. Finite.
    public var priority: Double?
    /// Text colour 0xAARRGGBB; nil: the layer's (`colorAttribute`, else `paint.color`).
    public var color: UInt32?
    public init(text: String? = nil, priority: Double? = nil, color: UInt32? = nil) {
        self.text = text; self.priority = priority; self.color = color
    }
    public var isEmpty: Bool { text == nil && priority == nil && color == nil }
}

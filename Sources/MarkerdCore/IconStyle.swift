/// An icon anchor: the fraction of the icon's width from the left (x) and of its height from
/// the top (y) that sits on the marker's position. Both within [0, 1].
public struct Anchor: Hashable, Sendable {
    public var x: Float
    public var y: Float
    public init(x: Float, y: Float) { self.x = x; self.y = y }
    /// MapConductor's DefaultMarkerIcon: the pin's tip, (0.5, 1.0).
    public static let pinTip = Anchor(x: 0.5, y: 1.0)
    /// Registered image icons: the centre, (0.5, 0.5).
    public static let center = Anchor(x: 0.5, y: 0.5)
}

/// MapConductor's DefaultMarkerIcon parameters: a 48 px pin (times `scale`). Colors 0xAARRGGBB.
public struct PinStyle: Hashable, Sendable {
    public var fillColor: UInt32
    public var strokeColor: UInt32
    public var strokeWidth: Float
    public var scale: Float
    public var label: String?
    public var labelColor: UInt32
    public var labelSize: Float

    /// The pin's base size in px at scale 1 and density 1.
    public static let baseSize: Float = 48

    public init(fillColor: UInt32 = 0xFFFF_0000, strokeColor: UInt32 = 0xFFFF_FFFF, strokeWidth: Float = 1,
                scale: Float = 1, label: String? = nil, labelColor: UInt32 = 0xFF00_0000, labelSize: Float = 18) {
        self.fillColor = fillColor; self.strokeColor = strokeColor; self.strokeWidth = strokeWidth
        self.scale = scale; self.label = label; self.labelColor = labelColor; self.labelSize = labelSize
    }
}

/// What an icon is drawn from. The core only needs its size; the rest is kept for the
/// renderer and for returning markers with every default filled in.
public enum IconSource: Hashable, Sendable {
    /// A default pin: 48 * scale px square.
    case pin(PinStyle)
    /// A registered image icon; width and height in px at density 1 (any scale already applied).
    case image(id: String, width: Float, height: Float)
}

/// A marker's icon: source plus anchor. Interned per layer in a `StyleTable`.
public struct IconStyle: Hashable, Sendable {
    public var source: IconSource
    public var anchor: Anchor

    /// `anchor` nil: the source's default, (0.5, 1.0) for pins and (0.5, 0.5) for images.
    public init(source: IconSource, anchor: Anchor? = nil) {
        self.source = source
        switch source {
        case .pin: self.anchor = anchor ?? .pinTip
        case .image: self.anchor = anchor ?? .center
        }
    }

    /// The default pin with every default (48 px, red, anchor (0.5, 1.0)).
    public static let defaultPin = IconStyle(source: .pin(PinStyle()))

    /// Width in px at density 1 (scale applied).
    public var width: Double {
        switch source {
        case let .pin(p): return Double(PinStyle.baseSize) * Double(p.scale)
        case let .image(_, w, _): return Double(w)
        }
    }

    /// Height in px at density 1 (scale applied).
    public var height: Double {
        switch source {
        case let .pin(p): return Double(PinStyle.baseSize) * Double(p.scale)
        case let .image(_, _, h): return Double(h)
        }
    }

    /// How far the icon reaches from its anchor, in px at density 1.
    public var extents: IconExtents {
        let w = width, h = height, ax = Double(anchor.x), ay = Double(anchor.y)
        return IconExtents(left: w * ax, right: w * (1 - ax), up: h * ay, down: h * (1 - ay))
    }

    /// The icon's rectangle in device px when the marker sits at device pixel `(x, y)`:
    /// (w*d x h*d) with the anchor on the marker.
    public func rect(atPixelX x: Double, y: Double, density: Double) -> (minX: Double, minY: Double, maxX: Double, maxY: Double) {
        let e = extents
        return (x - e.left * density, y - e.up * density, x + e.right * density, y + e.down * density)
    }

    /// Width and height finite, > 0 and at most 4096 px; scale > 0; anchor within [0, 1].
    public func validate(field: String) throws(MarkerdCoreError) {
        if case let .pin(p) = source, !(p.scale.isFinite && p.scale > 0) {
            throw .invalidArgument(field: field + ".scale", reason: "\(p.scale) is not a finite scale > 0")
        }
        if case let .image(id, _, _) = source, id.isEmpty {
            throw .invalidArgument(field: field + ".icon_id", reason: "empty icon id")
        }
        let w = width, h = height
        if !(w.isFinite && w > 0 && w <= 4096) || !(h.isFinite && h > 0 && h <= 4096) {
            throw .invalidArgument(field: field, reason: "icon size \(w) x \(h) px is not within (0, 4096]")
        }
        if !(anchor.x >= 0 && anchor.x <= 1) || !(anchor.y >= 0 && anchor.y <= 1) {
            throw .invalidArgument(field: field + ".anchor", reason: "(\(anchor.x), \(anchor.y)) is not within [0, 1] x [0, 1]")
        }
    }
}

/// How far an icon reaches from its anchor in px at density 1: left, right, up (north) and
/// down (south). Because icon size and the world's pixel size both scale with the density, the
/// icon's extent in world units is independent of the density: extent * 2^(24 - zoom).
public struct IconExtents: Hashable, Sendable {
    public var left: Double, right: Double, up: Double, down: Double
    public init(left: Double, right: Double, up: Double, down: Double) {
        self.left = left; self.right = right; self.up = up; self.down = down
    }
    public static let zero = IconExtents(left: 0, right: 0, up: 0, down: 0)

    func union(_ o: IconExtents) -> IconExtents {
        IconExtents(left: max(left, o.left), right: max(right, o.right), up: max(up, o.up), down: max(down, o.down))
    }

    /// Side-by-side minimum.
    func intersection(_ o: IconExtents) -> IconExtents {
        IconExtents(left: min(left, o.left), right: min(right, o.right), up: min(up, o.up), down: min(down, o.down))
    }
}

/// The per-layer style table: interns `IconStyle`s, gives each a 32-bit index, refcounts them
/// (by markers using them) and tracks the largest icon extent in use, so that spatial queries
/// know how far to widen their search. Indices of released styles are reused.
public struct StyleTable: Sendable {
    private var styles: [IconStyle] = []
    private var refcounts: [UInt32] = []
    private(set) var extents: [IconExtents] = []
    private var lookup: [IconStyle: UInt32] = [:]
    private var free: [UInt32] = []
    /// Conservative (never too small) maximum extent over styles in use; recomputed after
    /// enough styles were released (amortized O(1) per release).
    public private(set) var maxExtents: IconExtents = .zero
    /// Conservative (never too large) minimum extent over styles in use, side by side: every
    /// marker's icon reaches at least this far (queries count points this far outside the
    /// viewport without looking at their icons). Maintained like `maxExtents`.
    public private(set) var minExtents: IconExtents = .zero
    private var releasedSinceRecompute = 0

    public init() {}

    /// Styles currently referenced by at least one marker.
    public var count: Int { lookup.count }

    /// The style at an index returned by `retain`.
    public func style(at index: UInt32) -> IconStyle { styles[Int(index)] }

    /// Indices handed out so far (in use or free): `0 ..< styleSlots`.
    var styleSlots: Int { styles.count }

    /// Whether a style index is referenced by a marker.
    func isInUse(_ index: UInt32) -> Bool { refcounts[Int(index)] > 0 }

    /// References `style` once more and returns its index.
    public mutating func retain(_ style: IconStyle) -> UInt32 {
        if let i = lookup[style] {
            refcounts[Int(i)] += 1
            return i
        }
        let i: UInt32
        if let f = free.popLast() {
            i = f
            styles[Int(i)] = style; refcounts[Int(i)] = 1; extents[Int(i)] = style.extents
        } else {
            i = UInt32(styles.count)
            styles.append(style); refcounts.append(1); extents.append(style.extents)
        }
        minExtents = lookup.isEmpty ? style.extents : minExtents.intersection(style.extents)
        lookup[style] = i
        maxExtents = maxExtents.union(style.extents)
        return i
    }

    /// `retain(style)` `n` times (n >= 1) in one lookup.
    public mutating func retain(_ style: IconStyle, times n: UInt32) -> UInt32 {
        let i = retain(style)
        refcounts[Int(i)] += n - 1
        return i
    }

    /// `retain(style)`, first trying `hint` (e.g. the previous marker's index): when it holds
    /// `style`, one comparison replaces a hash lookup (batches mostly repeat one style).
    public mutating func retain(_ style: IconStyle, hint: UInt32?) -> UInt32 {
        if let h = hint, Int(h) < styles.count, refcounts[Int(h)] > 0, styles[Int(h)] == style {
            refcounts[Int(h)] += 1
            return h
        }
        return retain(style)
    }

    /// Drops one reference; the index is freed when none remain.
    public mutating func release(_ index: UInt32) {
        let i = Int(index)
        precondition(refcounts[i] > 0, "style \(index) released too often")
        refcounts[i] -= 1
        guard refcounts[i] == 0 else { return }
        lookup[styles[i]] = nil
        styles[i] = .defaultPin
        free.append(index)
        releasedSinceRecompute += 1
        if releasedSinceRecompute * 2 > lookup.count + 8 { recomputeMaxExtents() }
    }

    private mutating func recomputeMaxExtents() {
        var m = IconExtents.zero
        var lo: IconExtents? = nil
        for (i, r) in refcounts.enumerated() where r > 0 {
            m = m.union(extents[i])
            lo = lo.map { $0.intersection(extents[i]) } ?? extents[i]
        }
        maxExtents = m
        minExtents = lo ?? .zero
        releasedSinceRecompute = 0
    }

    mutating func removeAll() { self = StyleTable() }

    var approximateBytes: Int {
        styles.capacity * (MemoryLayout<IconStyle>.stride + 4 + MemoryLayout<IconExtents>.stride) + lookup.capacity * 64
    }
}

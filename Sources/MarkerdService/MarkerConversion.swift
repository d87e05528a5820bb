import MarkerdAPI
import MarkerdCore

/// Converts between API markers (`V1.Marker`) and the core's `MarkerRecord`, filling in defaults
/// and checking what the core does not (ids, positions and icon geometry are checked by
/// `MarkerLayer`). Every error is INVALID_ARGUMENT naming the marker and the field, e.g.
/// `markers[3] (id "bus-7"): icon_id "truck" is not registered (RegisterIcon first)`.
public enum MarkerConversion {
    /// Markers per UpsertMarkers / MoveMarkers / RemoveMarkers / GetMarkers call.
    public static let maxBatch = 100_000
    /// Bytes of a layer or icon id.
    public static let maxNameBytes = 128
    /// Bytes of attributes (keys + values) plus extra, per marker.
    public static let maxPayloadBytes = 64 << 10
    /// Animation length used when a drop/bounce animation gives duration 0, ms.
    public static let defaultAnimationMs: UInt32 = 1_000
    /// Longest animation, ms (10 minutes).
    public static let maxAnimationMs: UInt32 = 600_000

    /// Layer and icon ids: 1-128 bytes of [A-Za-z0-9._-].
    public static func checkName(_ name: String, what: String) throws(RPCError) {
        let utf8 = name.utf8
        guard !utf8.isEmpty else { throw .invalidArgument("\(what) is empty", field: what) }
        guard utf8.count <= maxNameBytes else {
            throw .invalidArgument("\(what) \"\(name.prefix(40))...\" is longer than \(maxNameBytes) bytes", field: what)
        }
        for c in utf8 {
            switch c {
            case UInt8(ascii: "a")...UInt8(ascii: "z"), UInt8(ascii: "A")...UInt8(ascii: "Z"),
                 UInt8(ascii: "0")...UInt8(ascii: "9"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "-"):
                continue
            default:
                throw .invalidArgument("\(what) \"\(name)\" may only contain A-Z a-z 0-9 . _ -", field: what)
            }
        }
    }

    /// Checks a batch's size and that no id appears twice.
    public static func checkBatch<S: Sequence>(_ items: S, id: (S.Element) -> String, count: Int, what: String) throws(RPCError) {
        guard count <= maxBatch else {
            throw .invalidArgument("\(what) holds \(count) entries, more than \(maxBatch) per call", field: what)
        }
        var seen = Set<String>(minimumCapacity: count)
        var i = 0
        for item in items {
            let key = id(item)
            if !seen.insert(key).inserted {
                throw .invalidArgument("\(what)[\(i)]: id \"\(key.prefix(64))\" appears more than once in the batch", field: "\(what)[\(i)].id")
            }
            i += 1
        }
    }

    /// An API marker as the core stores it.
    /// - Parameters:
    ///   - index: position in the batch, for messages.
    ///   - nowUnixMs: server clock; an animation ends `duration_ms` after it.
    ///   - restoring: loading a snapshot: keep `animation.ends_at_unix_ms` as stored.
    ///   - icon: a registered icon's size in px and default anchor, or nil if it is not registered.
    public static func record(
        _ m: V1.Marker, index: Int, nowUnixMs: Int64, restoring: Bool = false,
        icon: (String) -> (width: Int, height: Int, anchor: Anchor)?
    ) throws(RPCError) -> MarkerRecord {
        // Built only for an error message (this runs once per marker on loads).
        var label: String { "markers[\(index)] (id \"\(m.id.prefix(64))\")" }
        let style = try iconStyle(m.icon, anchor: m.anchor, label: label, icon: icon)
        var animation: MarkerAnimation? = nil
        if let a = m.animation, a.kind != .unspecified {
            let duration = a.durationMs == 0 ? defaultAnimationMs : a.durationMs
            guard duration <= maxAnimationMs else {
                throw .invalidArgument("\(label): animation.duration_ms \(duration) is more than \(maxAnimationMs)", field: RPCError.fieldPath(label) + ".animation.duration_ms")
            }
            let end = restoring && a.endsAtUnixMs != 0 ? a.endsAtUnixMs : nowUnixMs + Int64(duration)
            animation = MarkerAnimation(kind: a.kind == .drop ? .drop : .bounce, endsAtUnixMs: end)
        }
        var payload = m.extra.count
        for (k, v) in m.attributes {
            guard !k.isEmpty else { throw .invalidArgument("\(label): attributes has an empty key", field: RPCError.fieldPath(label) + ".attributes") }
            payload += k.utf8.count + v.utf8.count
        }
        guard payload <= maxPayloadBytes else {
            throw .invalidArgument("\(label): attributes and extra take \(payload) bytes, more than \(maxPayloadBytes)", field: RPCError.fieldPath(label) + ".attributes")
        }
        let position = LatLng(latitude: m.position?.latitude ?? .nan, longitude: m.position?.longitude ?? .nan)
        if m.position == nil { throw .invalidArgument("\(label): position is missing", field: RPCError.fieldPath(label) + ".position") }
        var record = MarkerRecord(
            id: m.id, position: position,
            style: style,
            zIndex: m.zIndex, visible: m.visible ?? true, clickable: m.clickable ?? true,
            draggable: m.draggable ?? false, animation: animation, attributes: m.attributes, extra: m.extra)
        record.label = try LabelConversion.markerLabel(m.label, field: label)
        return record
    }

    /// A marker's icon and anchor as the core's style (see `record`; `label` names the marker in
    /// errors).
    static func iconStyle(_ icon: V1.Marker.Icon?, anchor apiAnchor: V1.Anchor?, label: @autoclosure () -> String,
                          icon registry: (String) -> (width: Int, height: Int, anchor: Anchor)?) throws(RPCError) -> IconStyle {
        let source: IconSource
        var anchor = apiAnchor.map { Anchor(x: $0.x, y: $0.y) }
        switch icon {
        case nil:
            source = .pin(PinStyle())
        case .pin(let pin):
            source = .pin(try pinStyle(pin, label: label()))
        case .iconID(let id):
            guard let registered = registry(id) else {
                throw .invalidArgument("\(label()): icon_id \"\(id)\" is not registered (RegisterIcon first)", field: RPCError.fieldPath(label()) + ".icon_id")
            }
            source = .image(id: id, width: Float(registered.width), height: Float(registered.height))
            anchor = anchor ?? registered.anchor
        }
        return IconStyle(source: source, anchor: anchor)
    }

    static func pinStyle(_ pin: V1.DefaultPin, label: @autoclosure () -> String) throws(RPCError) -> PinStyle {
        let d = PinStyle()
        let style = PinStyle(
            fillColor: pin.fillColor ?? d.fillColor, strokeColor: pin.strokeColor ?? d.strokeColor,
            strokeWidth: pin.strokeWidth ?? d.strokeWidth, scale: pin.scale ?? d.scale,
            label: (pin.label?.isEmpty ?? true) ? nil : pin.label,
            labelColor: pin.labelColor ?? d.labelColor, labelSize: pin.labelSize ?? d.labelSize)
        guard style.scale.isFinite, style.scale > 0, style.scale <= 16 else {
            throw .invalidArgument("\(label()): pin.scale \(style.scale) must be within (0, 16]", field: RPCError.fieldPath(label()) + ".pin.scale")
        }
        guard style.strokeWidth.isFinite, style.strokeWidth >= 0, style.strokeWidth <= 16 else {
            throw .invalidArgument("\(label()): pin.stroke_width \(style.strokeWidth) must be within [0, 16]", field: RPCError.fieldPath(label()) + ".pin.stroke_width")
        }
        guard style.labelSize.isFinite, style.labelSize > 0, style.labelSize <= 128 else {
            throw .invalidArgument("\(label()): pin.label_size \(style.labelSize) must be within (0, 128]", field: RPCError.fieldPath(label()) + ".pin.label_size")
        }
        if let l = style.label, l.utf8.count > 64 {
            throw .invalidArgument("\(label()): pin.label is \(l.utf8.count) bytes, more than 64", field: RPCError.fieldPath(label()) + ".pin.label")
        }
        return style
    }

    /// A stored marker as the API returns it, every default filled in.
    public static func apiMarker(_ r: MarkerRecord) -> V1.Marker {
        var m = V1.Marker()
        m.id = r.id
        var p = V1.LatLng()
        p.latitude = r.position.latitude
        p.longitude = r.position.longitude
        m.position = p
        switch r.style.source {
        case .pin(let s):
            var pin = V1.DefaultPin()
            pin.fillColor = s.fillColor
            pin.strokeColor = s.strokeColor
            pin.strokeWidth = s.strokeWidth
            pin.scale = s.scale
            pin.label = s.label
            pin.labelColor = s.labelColor
            pin.labelSize = s.labelSize
            m.icon = .pin(pin)
        case .image(let id, _, _):
            m.icon = .iconID(id)
        }
        var a = V1.Anchor()
        a.x = r.style.anchor.x
        a.y = r.style.anchor.y
        m.anchor = a
        m.zIndex = r.zIndex
        m.clickable = r.clickable
        m.draggable = r.draggable
        m.visible = r.visible
        if let anim = r.animation, anim.kind != .none {
            var va = V1.Animation()
            va.kind = anim.kind == .drop ? .drop : .bounce
            va.endsAtUnixMs = anim.endsAtUnixMs
            m.animation = va
        }
        m.attributes = r.attributes
        m.extra = r.extra
        m.label = LabelConversion.apiLabel(r.label)
        return m
    }

    static func latLng(_ p: V1.LatLng?) -> LatLng? {
        p.map { LatLng(latitude: $0.latitude, longitude: $0.longitude) }
    }

    static func apiLatLng(_ p: LatLng) -> V1.LatLng {
        var v = V1.LatLng()
        v.latitude = p.latitude
        v.longitude = p.longitude
        return v
    }
}

extension RPCError {
    /// The status for a core error: invalid input -> INVALID_ARGUMENT (naming the field),
    /// unknown marker/drag -> NOT_FOUND, not draggable -> FAILED_PRECONDITION, already dragging -> ABORTED.
    init(_ e: MarkerdCoreError) {
        switch e {
        case .invalidArgument(let field, _): self = .invalidArgument(e.description, field: Self.fieldPath(field))
        case .invalidPageToken: self = .invalidArgument(e.description, field: "page_token")
        case .markerNotFound, .dragNotFound: self.init(.notFound, e.description)
        case .notDraggable: self.init(.failedPrecondition, e.description)
        case .alreadyDragging: self.init(.aborted, e.description)
        }
    }
}

extension RPCError {
    /// A core error's field (e.g. `markers[2] (id "a").position.latitude`) as a request field
    /// path (`markers[2].position.latitude`): without the ` (id "…")` naming the marker. Marker
    /// ids may hold any character and field names no quotes, so the last `")` ends it.
    static func fieldPath(_ coreField: String) -> String {
        let b = Array(coreField.utf8), open = Array(#" (id ""#.utf8), close = Array(#"")"#.utf8)
        guard let start = b.indices.first(where: { b[$0...].starts(with: open) }),
              let end = b.indices.last(where: { $0 >= start + open.count && b[$0...].starts(with: close) })
        else { return coreField }
        return String(decoding: b[..<start] + b[(end + close.count)...], as: UTF8.self)
    }
}

/// Runs a core call, turning its error into the matching RPC status.
@inline(__always)
func mapCoreError<T>(_ body: () throws(MarkerdCoreError) -> T) throws(RPCError) -> T {
    do {
        return try body()
    } catch {
        throw RPCError(error)
    }
}

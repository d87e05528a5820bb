import MarkerdAPI
import MarkerdCore

/// The API's `LabelOptions` and `MarkerLabel` to and from the core's `LabelStyle` and `MarkerLabel`.
enum LabelConversion {
    /// `options.labels` with every default filled in (what GetLayer returns) and the core style.
    /// Out-of-range values are INVALID_ARGUMENT naming the field.
    static func resolve(_ options: V1.LabelOptions?) throws(RPCError) -> (api: V1.LabelOptions, style: LabelStyle) {
        typealias O = V1.LabelOptions
        var o = options ?? O()
        o.enabled = o.enabled ?? false
        o.textAttribute = o.textAttribute ?? ""
        o.fontSize = o.fontSize ?? O.defaultFontSize
        o.fontFamily = o.fontFamily ?? O.defaultFontFamily
        o.bold = o.bold ?? O.defaultBold
        o.maxWidth = o.maxWidth ?? O.defaultMaxWidth
        if o.overflow == nil || o.overflow == .unspecified { o.overflow = .wrap }
        o.maxLines = o.maxLines ?? O.defaultMaxLines
        o.haloWidth = o.haloWidth ?? O.defaultHaloWidth
        o.color = o.color ?? O.defaultColor
        o.haloColor = o.haloColor ?? O.defaultHaloColor
        o.colorAttribute = o.colorAttribute ?? ""
        if o.positions.isEmpty { o.positions = [.right, .left, .below, .above] }
        o.gap = o.gap ?? O.defaultGap
        o.padding = o.padding ?? O.defaultPadding
        o.priorityAttribute = o.priorityAttribute ?? ""
        o.showIconWithoutLabel = o.showIconWithoutLabel ?? O.defaultShowIconWithoutLabel
        o.minZoom = o.minZoom ?? 0

        var positions: [LabelPosition] = []
        for (i, p) in o.positions.enumerated() {
            guard let core = LabelPosition(rawValue: UInt8(clamping: max(0, p.rawValue))), p != .unspecified else {
                throw .invalidArgument("options.labels.positions[\(i)] \(p.name) is not RIGHT, LEFT, BELOW or ABOVE", field: "options.labels.positions[\(i)]")
            }
            positions.append(core)
        }
        var colors: [String: UInt32] = [:]
        for (i, c) in o.colors.enumerated() {
            let value = c.value
            guard colors.updateValue(c.color, forKey: value) == nil else {
                throw .invalidArgument("options.labels.colors[\(i)]: value \"\(value.prefix(64))\" is listed twice", field: "options.labels.colors[\(i)].value")
            }
        }
        let style = LabelStyle(
            enabled: o.enabled!, textAttribute: o.textAttribute!.isEmpty ? nil : o.textAttribute,
            text: LabelTextStyle(fontSize: o.fontSize!, fontFamily: o.fontFamily!, bold: o.bold!, maxWidth: o.maxWidth!,
                                 overflow: o.overflow == .ellipsis ? .ellipsis : .wrap,
                                 maxLines: Int(clamping: o.maxLines!), haloWidth: o.haloWidth!),
            paint: LabelPaint(color: o.color!, haloColor: o.haloColor!),
            colorAttribute: o.colorAttribute!.isEmpty ? nil : o.colorAttribute, colors: colors,
            positions: positions, gap: o.gap!, padding: o.padding!,
            priorityAttribute: o.priorityAttribute!.isEmpty ? nil : o.priorityAttribute,
            showIconWithoutLabel: o.showIconWithoutLabel!, minZoom: Int(clamping: o.minZoom!))
        do { try style.validate(field: "options.labels") } catch { throw RPCError(error) }
        return (o, style)
    }

    /// A marker's `label`, checked: text at most 256 bytes, priority finite. Nil when unset or
    /// empty of fields. `field` names the marker in errors.
    static func markerLabel(_ l: V1.MarkerLabel?, field: @autoclosure () -> String) throws(RPCError) -> MarkerLabel? {
        guard let l else { return nil }
        let core = MarkerLabel(text: l.text, priority: l.priority, color: l.color)
        if let t = core.text, t.utf8.count > 256 {
            throw .invalidArgument("\(field()): label.text is \(t.utf8.count) bytes, more than 256", field: RPCError.fieldPath(field()) + ".label.text")
        }
        if let p = core.priority, !p.isFinite {
            throw .invalidArgument("\(field()): label.priority \(p) is not finite", field: RPCError.fieldPath(field()) + ".label.priority")
        }
        return core.isEmpty ? nil : core
    }

    /// The API form of a marker's label (nil for none).
    static func apiLabel(_ l: MarkerLabel?) -> V1.MarkerLabel? {
        guard let l, !l.isEmpty else { return nil }
        var api = V1.MarkerLabel()
        api.text = l.text
        api.priority = l.priority
        api.color = l.color
        return api
    }
}

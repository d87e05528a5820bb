// A layer's label state: its `LabelStyle`, the markers' own `MarkerLabel`s (a sparse table:
// most markers have none) and how a marker's label text, colour, priority and placement rank
// resolve from them and from attributes (read through `attributeValue(_:slot:)` only).

extension MarkerLayer {
    /// Estimated bytes per marker with its own label settings (dictionary entry and text).
    static let labelEntryBytes = 96

    /// Replaces the layer's label style (version + 1). Throws `.invalidArgument` naming
    /// `labels.<field>` for a field out of range (see `LabelStyle.validate`). Placements made
    /// with the old style must be rebuilt (`LabelPlacement.update` does so by itself).
    public mutating func setLabelStyle(_ style: LabelStyle) throws(MarkerdCoreError) {
        try style.validate(field: "labels")
        labelStyle = style
        version &+= 1
    }

    /// Checks a marker's own label: text at most 256 bytes of UTF-8, a finite priority.
    static func validate(_ l: MarkerLabel, field: @autoclosure () -> String) throws(MarkerdCoreError) {
        if let t = l.text, t.utf8.count > maxLabelTextBytes {
            throw .invalidArgument(field: field() + ".text", reason: "\(t.utf8.count) bytes, more than \(maxLabelTextBytes)")
        }
        if let p = l.priority, !p.isFinite {
            throw .invalidArgument(field: field() + ".priority", reason: "\(p) is not finite")
        }
    }

    /// Longest label text a marker may carry, in bytes of UTF-8.
    public static let maxLabelTextBytes = 256

    /// Stores (or, nil or empty, drops) a slot's own label settings.
    @inline(__always) mutating func setLabel(_ slot: Int32, _ label: MarkerLabel?) {
        if let label, !label.isEmpty { labels[slot] = label } else if !labels.isEmpty { labels[slot] = nil }
    }

    /// The slot of a marker (valid until the layer next changes: a removed marker's slot is
    /// reused), or nil. For callers that collect the slots a change touches (`LabelPlacement.update`).
    public func slot(id: String) -> Int32? { table.find(id) }

    /// Slots whose animation ends at or before `now` and that `expireAnimations` has not turned
    /// static yet (what `LabelPlacement.update` needs as changed when its `now` moves past an
    /// animation's end; a superset is harmless). O(due heap entries).
    public func dueAnimationSlots(now: Int64) -> [Int32] {
        var out: [Int32] = []
        animationHeap.forEachDue(now) { e in
            if let a = animations[e.slot], a.seq == e.seq { out.append(e.slot) }
        }
        return out
    }

    /// The marker's label text: its own `MarkerLabel.text`, else the value of the style's
    /// `textAttribute`; nil when that is missing or empty (no label). Ignores `enabled`.
    public func labelText(slot: Int32) -> String? {
        let t = labels.isEmpty ? nil : labels[slot]?.text
        guard let text = t ?? labelStyle.textAttribute.flatMap({ attributeValue($0, slot: slot) }) else { return nil }
        return text.isEmpty ? nil : text
    }

    /// The marker's text colour (0xAARRGGBB): its own `MarkerLabel.color`, else `colors` of the
    /// value of `colorAttribute`, else `paint.color`.
    public func labelColor(slot: Int32) -> UInt32 {
        if !labels.isEmpty, let c = labels[slot]?.color { return c }
        if let a = labelStyle.colorAttribute, let v = attributeValue(a, slot: slot), let c = labelStyle.colors[v] { return c }
        return labelStyle.paint.color
    }

    /// The marker's label priority (higher is placed first): its own `MarkerLabel.priority`,
    /// else the value of `priorityAttribute` parsed as a Double; 0 when missing, not a number
    /// or not finite.
    public func labelPriority(slot: Int32) -> Double {
        if !labels.isEmpty, let p = labels[slot]?.priority { return p }
        guard let a = labelStyle.priorityAttribute, let v = attributeValue(a, slot: slot), let p = Double(v), p.isFinite else { return 0 }
        return p
    }

    /// Whether the marker takes part in label placement at `now`: labels enabled, the marker
    /// static (visible, not draggable, not animating) and its label text non-empty.
    public func isLabelled(slot: Int32, now: Int64) -> Bool {
        guard labelStyle.enabled, slot >= 0, Int(slot) < table.slotCount, table.flags[Int(slot)] != 0,
              isStatic(slot, now: now) else { return false }
        return labelText(slot: slot) != nil
    }

    /// The placement rank key of a slot (see `LabelRank`).
    func labelRank(_ slot: Int32) -> LabelRank {
        LabelRank(zIndex: table.zIndex[Int(slot)], priority: labelPriority(slot: slot), worldY: table.y[Int(slot)], slot: slot)
    }

    /// Whether `a` is placed before `b`: z-index descending, then label priority descending, then
    /// draw order descending (world y descending, then id bytes descending: the marker drawn on
    /// top first). A total order on the layer's markers.
    func placedBefore(_ a: LabelRank, _ b: LabelRank) -> Bool {
        if a.zIndex != b.zIndex { return a.zIndex > b.zIndex }
        if a.priority != b.priority { return a.priority > b.priority }
        if a.worldY != b.worldY { return a.worldY > b.worldY }
        return a.slot != b.slot && table.compareIDs(a.slot, b.slot) > 0
    }
}

/// What orders labels for placement (`MarkerLayer.placedBefore`); the id is read from the slot.
struct LabelRank: Sendable {
    var zIndex: Int32
    var priority: Double
    var worldY: UInt32
    var slot: Int32
}

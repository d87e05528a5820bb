/// The state of one marker layer: options, version, marker table, style table, grid index,
/// animations, drags and counters. A value type; not thread-safe by itself (the service guards
/// each layer with a reader/writer lock: queries are non-mutating, changes are `mutating`).
///
/// Operations that depend on animations take `now` (Unix ms, server clock): a marker whose
/// animation ends at or before `now` is static, whether or not `expireAnimations(now:)` ran.
///
/// Memory (measured in a release build, 10M markers with 12-byte ids, default pin, no
/// attributes): see the `MarkerdBench` test and the report; the fixed columns are
/// MarkerTable 29 B + id index ~6.7 B + grid entry 16 B + grid slot position and leaf level 5 B + grid block
/// slack and nodes (see `GridIndex`) per marker, plus the id bytes. Attributes add their encoded
/// size plus 8 B per slot, once the layer holds any (`AttributeArena`).
public struct MarkerLayer: Sendable {
    public internal(set) var options: TilingOptions
    /// Increments on every change: upsert, remove, move, drag moves, clear, options, expiry.
    public internal(set) var version: UInt64 = 0

    /// Raises `version` to `v` and numbers later drag sessions from `v` on, where they are lower
    /// (never lowers either): a layer created anew, or recovered after a restart, starts above
    /// every version and drag id its id had before, so that no version names two different
    /// states and a drag id handed out before (a client's stale one) never names another drag.
    public mutating func start(at v: UInt64) {
        version = max(version, v)
        nextDragNumber = max(nextDragNumber, v)
    }

    /// Sets `version` and the next drag session's number to what a snapshot recorded (both may
    /// go down: restoring the markers raised the version by its own count). Cluster mode's
    /// snapshot restore, so that the layer continues exactly as on the replicas that applied
    /// the whole log.
    public mutating func restoreState(version v: UInt64, nextDragNumber d: UInt64) {
        version = v
        nextDragNumber = max(1, d)
    }

    var table = MarkerTable()
    var grid = GridIndex()
    /// Interned icon styles (index -> style) of this layer.
    public internal(set) var styles = StyleTable()
    var animations: [Int32: AnimationState] = [:]
    var animationHeap = AnimationHeap()
    var animationSeq: UInt32 = 0
    /// Each marker's attributes, encoded (`AttributeEncoding`; see `AttributeArena` for the cost).
    var attributes = AttributeArena()
    var extras: [Int32: [UInt8]] = [:]
    /// The markers' own label settings, only for markers that have some (most have none; no
    /// flag bit is free, so removals and replacements look the slot up: see MarkerLayer+Labels.swift).
    var labels: [Int32: MarkerLabel] = [:]
    /// The layer's labels (see `setLabelStyle(_:)`). Default: disabled.
    public internal(set) var labelStyle = LabelStyle()
    var drags: [DragID: DragSession] = [:]
    var dragOfSlot: [Int32: DragID] = [:]
    var nextDragNumber: UInt64 = 1
    /// Grid clusters of the visible static markers (nil: not enabled); see MarkerLayer+Clusters.swift.
    var clusters: GridClusterIndex? = nil
    // Counters by flags (animations not yet expired by `expireAnimations` still count as live here).
    var staticCounter = 0
    var liveCounter = 0
    var hiddenCounter = 0

    public init(options: TilingOptions = TilingOptions()) throws(MarkerdCoreError) {
        try options.validate()
        self.options = options
    }

    /// Number of markers.
    public var count: Int { table.count }

    // MARK: Flags and classes

    @inline(__always) static func gridClass(_ f: UInt8) -> UInt32 {
        if f & (MarkerFlags.draggable | MarkerFlags.animating) != 0 { return GridIndex.Class.live.rawValue }
        return f & MarkerFlags.visible != 0 ? GridIndex.Class.staticMarker.rawValue : GridIndex.Class.hidden.rawValue
    }

    @inline(__always) mutating func account(_ f: UInt8, _ d: Int) {
        if f & (MarkerFlags.draggable | MarkerFlags.animating) != 0 { liveCounter += d }
        else if f & MarkerFlags.visible != 0 { staticCounter += d }
        if f & MarkerFlags.visible == 0 { hiddenCounter += d }
    }

    /// True while the slot's animation runs at `now`.
    @inline(__always) func isAnimating(_ s: Int32, now: Int64) -> Bool {
        guard table.flags[Int(s)] & MarkerFlags.animating != 0, let a = animations[s] else { return false }
        return a.endsAt > now
    }

    /// Visible, not draggable, not animating at `now`.
    @inline(__always) func isStatic(_ s: Int32, now: Int64) -> Bool {
        let f = table.flags[Int(s)]
        if f & MarkerFlags.visible == 0 || f & MarkerFlags.draggable != 0 { return false }
        return f & MarkerFlags.animating == 0 || !isAnimating(s, now: now)
    }

    /// Static and live counts at `now`, correcting the counters for animations that ended but
    /// were not expired yet (O(those animations)).
    func counts(now: Int64) -> (staticMarkers: Int, live: Int) {
        var st = staticCounter, live = liveCounter
        animationHeap.forEachDue(now) { e in
            guard let a = animations[e.slot], a.seq == e.seq else { return }
            let f = table.flags[Int(e.slot)]
            guard f & MarkerFlags.animating != 0, f & MarkerFlags.draggable == 0 else { return }
            live -= 1
            if f & MarkerFlags.visible != 0 { st += 1 }
        }
        return (st, live)
    }

    /// TILED when tiling is enabled and at least `minMarkerCount` markers are static at `now`.
    public func mode(now: Int64) -> TilingMode {
        guard options.enabled else { return .native }
        return counts(now: now).staticMarkers >= Int(options.minMarkerCount) ? .tiled : .native
    }

    // MARK: Options

    /// Replaces the tiling options (version + 1). Throws `.invalidArgument` for a bad tile size.
    public mutating func setOptions(_ o: TilingOptions) throws(MarkerdCoreError) {
        try o.validate()
        options = o
        version &+= 1
    }

    // MARK: Upsert

    /// Checks one marker: id 1-256 UTF-8 bytes, position, icon, animation end.
    /// `field` is only evaluated when the marker is invalid (validation runs per marker on loads).
    public static func validate(_ m: MarkerRecord, field: @autoclosure () -> String) throws(MarkerdCoreError) {
        let n = m.id.utf8.count
        if n == 0 || n > MarkerTable.maxIDBytes {
            throw .invalidArgument(field: field() + ".id", reason: "id of \(n) bytes is not 1-256 bytes of UTF-8")
        }
        if !m.position.isValid {
            try m.position.validate(field: "\(field()) (id \"\(m.id)\").position")
        }
        do {
            try m.style.validate(field: "icon")
        } catch {
            try m.style.validate(field: "\(field()) (id \"\(m.id)\").icon")
        }
        if let l = m.label { try validate(l, field: "\(field()) (id \"\(m.id)\").label") }
    }

    /// Creates or fully replaces markers, all or nothing: every marker is validated before any
    /// is applied (throws `.invalidArgument` naming `markers[i] (id "...")` and the field).
    /// A repeated id within the batch is applied in order (the last one wins; counted as updated).
    /// Animations ending at or before `now` are dropped. Re-upserting a marker that is being
    /// dragged keeps the drag unless the marker is no longer draggable. Version + 1 unless empty.
    public mutating func upsert(_ markers: [MarkerRecord], now: Int64) throws(MarkerdCoreError) -> UpsertResult {
        try upsert(markers, world: nil, now: now, deferIndexes: false)
    }

    /// `upsert(_:now:)` with the positions already projected (`world[i]` is
    /// `WorldPoint(markers[i].position)`; nil: project here) and, when `deferIndexes` (see
    /// MarkerLayer+Restore.swift), every marker in a new slot that neither the id index nor
    /// the grid lists yet.
    mutating func upsert(_ markers: [MarkerRecord], world: [WorldPoint]?, now: Int64,
                         deferIndexes: Bool) throws(MarkerdCoreError) -> UpsertResult {
        for (i, m) in markers.enumerated() { try MarkerLayer.validate(m, field: "markers[\(i)]") }
        // Encoded before anything is applied: a marker whose attributes are too long fails the batch.
        var encoded: [[UInt8]] = []
        for (i, m) in markers.enumerated() where !m.attributes.isEmpty {
            if encoded.isEmpty { encoded = Array(repeating: [], count: markers.count) }
            encoded[i] = AttributeEncoding.encode(m.attributes)
            if encoded[i].count > AttributeEncoding.maxEncodedBytes {
                throw .invalidArgument(field: "markers[\(i)] (id \"\(m.id)\").attributes",
                                       reason: "encoded in \(encoded[i].count) bytes, more than \(AttributeEncoding.maxEncodedBytes)")
            }
        }
        var created = 0, updated = 0
        var lastStyle: UInt32? = nil
        for (i, m) in markers.enumerated() {
            let (slot, isNew) = deferIndexes ? (table.appendUnindexed(m.id), true) : table.findOrInsert(m.id)
            let styleIndex = styles.retain(m.style, hint: lastStyle)
            lastStyle = styleIndex
            var f = MarkerFlags.occupied
            if m.visible { f |= MarkerFlags.visible }
            if m.clickable { f |= MarkerFlags.clickable }
            if m.draggable { f |= MarkerFlags.draggable }
            var anim: MarkerAnimation? = nil
            if let a = m.animation, a.kind != .none, a.endsAtUnixMs > now { anim = a; f |= MarkerFlags.animating }
            if !m.attributes.isEmpty { f |= MarkerFlags.hasAttributes }
            if !m.extra.isEmpty { f |= MarkerFlags.hasExtra }
            if isNew { created += 1 } else { updated += 1 }
            (encoded.isEmpty ? [] : encoded[i]).withUnsafeBytes { attributes in
                store(slot, isNew: isNew, at: world?[i] ?? WorldPoint(m.position), z: m.zIndex, style: styleIndex, flags: f,
                      animation: anim, attributes: attributes, extra: m.extra, label: m.label, indexGrid: !deferIndexes)
            }
        }
        if !markers.isEmpty { version &+= 1 }
        return UpsertResult(created: created, updated: updated)
    }

    /// Writes one upserted marker into `slot` (a new slot, or the one of the marker it fully
    /// replaces, whose style is released here): position, flags, z-index, style index (already
    /// retained), grid (unless `indexGrid` is false for a new slot), counters, attributes
    /// (canonical bytes, `AttributeEncoding`; empty: none), extra, animation, drag and clusters.
    /// `f` holds every flag but `dragging`; `animation` is non-nil exactly when `f` has
    /// `animating`, and `hasAttributes` exactly when `attributes` is not empty.
    @inline(__always)
    mutating func store(_ slot: Int32, isNew: Bool, at p: WorldPoint, z: Int32, style styleIndex: UInt32, flags f0: UInt8,
                        animation anim: MarkerAnimation?, attributes: UnsafeRawBufferPointer, extra: [UInt8], label: MarkerLabel?,
                        indexGrid: Bool) {
        let s = Int(slot)
        var f = f0
        if isNew {
            table.x[s] = p.x; table.y[s] = p.y
            if indexGrid { grid.insert(slot, x: p.x, y: p.y, z: z, cls: MarkerLayer.gridClass(f)) }
        } else {
            let old = table.flags[s]
            account(old, -1)
            styles.release(table.style[s])
            if old & MarkerFlags.dragging != 0 {
                if f & MarkerFlags.draggable != 0 { f |= MarkerFlags.dragging } else { dropDragSession(slot) }
            }
            grid.move(slot, fromX: table.x[s], y: table.y[s], cls: MarkerLayer.gridClass(old),
                      toX: p.x, y: p.y, z: z, cls: MarkerLayer.gridClass(f))
            table.x[s] = p.x; table.y[s] = p.y
        }
        table.flags[s] = f
        table.zIndex[s] = z
        table.style[s] = styleIndex
        account(f, 1)
        // A new slot has no attributes, extra or animation (removals drop them): no lookups.
        if !isNew {
            self.attributes.set(slot, attributes)
        } else if !attributes.isEmpty {
            self.attributes.setNew(slot, attributes)
        }
        if !isNew || !extra.isEmpty { extras[slot] = extra.isEmpty ? nil : extra }
        setLabel(slot, label)
        if let anim {
            animationSeq &+= 1
            animations[slot] = AnimationState(kind: anim.kind, endsAt: anim.endsAtUnixMs, seq: animationSeq)
            animationHeap.push(.init(endsAt: anim.endsAtUnixMs, slot: slot, seq: animationSeq))
        } else if !isNew && animations.removeValue(forKey: slot) != nil {
            compactAnimationHeapIfNeeded()
        }
        syncCluster(slot)
    }

    // MARK: Remove, get, clear

    /// Removes markers by id (ending their drags). Version + 1 when any was removed.
    public mutating func remove(ids: [String]) -> RemoveResult {
        var removed = 0
        var missing: [String] = []
        for id in ids {
            if let slot = table.find(id) { removeSlot(slot); removed += 1 } else { missing.append(id) }
        }
        if removed > 0 { version &+= 1 }
        return RemoveResult(removed: removed, notFound: missing.count, notFoundIDs: missing)
    }

    mutating func removeSlot(_ slot: Int32) {
        let s = Int(slot)
        let f = table.flags[s]
        account(f, -1)
        grid.remove(slot, x: table.x[s], y: table.y[s], cls: MarkerLayer.gridClass(f))
        styles.release(table.style[s])
        if f & MarkerFlags.dragging != 0 { dropDragSession(slot) }
        if f & MarkerFlags.hasAttributes != 0 { attributes.set(slot, UnsafeRawBufferPointer(start: nil, count: 0)) }
        if f & MarkerFlags.hasExtra != 0 { extras[slot] = nil }
        setLabel(slot, nil)
        if animations.removeValue(forKey: slot) != nil { compactAnimationHeapIfNeeded() }
        table.remove(slot)
        syncCluster(slot)
    }

    /// The full stored record of a marker, or nil. The animation is reported as stored (its
    /// end may be in the past until `expireAnimations` runs).
    public func marker(id: String) -> MarkerRecord? {
        table.find(id).map(record)
    }

    /// The stored record of a slot.
    func record(_ slot: Int32) -> MarkerRecord {
        let s = Int(slot)
        let f = table.flags[s]
        var anim: MarkerAnimation? = nil
        if f & MarkerFlags.animating != 0, let a = animations[slot] { anim = MarkerAnimation(kind: a.kind, endsAtUnixMs: a.endsAt) }
        return MarkerRecord(
            id: table.id(slot), position: WorldPoint(x: table.x[s], y: table.y[s]).latLng,
            style: styles.style(at: table.style[s]), zIndex: table.zIndex[s],
            visible: f & MarkerFlags.visible != 0, clickable: f & MarkerFlags.clickable != 0,
            draggable: f & MarkerFlags.draggable != 0, animation: anim,
            attributes: f & MarkerFlags.hasAttributes != 0 ? attributes.withBytes(slot, AttributeEncoding.decode) : [:],
            extra: f & MarkerFlags.hasExtra != 0 ? extras[slot] ?? [] : [], label: labels.isEmpty ? nil : labels[slot])
    }

    /// The stored position of a marker in world units, or nil.
    public func worldPosition(id: String) -> WorldPoint? {
        table.find(id).map { WorldPoint(x: table.x[Int($0)], y: table.y[Int($0)]) }
    }

    /// Removes every marker and drag; keeps options. Returns how many were removed. Version + 1.
    @discardableResult public mutating func clear() -> Int {
        let n = table.count
        table.removeAll(); grid.removeAll(); styles.removeAll()
        animations = [:]; animationHeap.removeAll(); attributes = AttributeArena(); extras = [:]; labels = [:]
        drags = [:]; dragOfSlot = [:]
        clusters?.removeAll()
        staticCounter = 0; liveCounter = 0; hiddenCounter = 0
        version &+= 1
        return n
    }

    // MARK: Move

    /// Moves one marker (O(1)); does not bump the version (callers batch: see `move(_:)`).
    mutating func moveSlot(_ slot: Int32, to p: WorldPoint) {
        let s = Int(slot)
        let cls = MarkerLayer.gridClass(table.flags[s])
        // Same class and z-index: the grid's fast path (`GridIndex.relink`, no node read within a leaf).
        grid.move(slot, fromX: table.x[s], y: table.y[s], cls: cls, toX: p.x, y: p.y, z: table.zIndex[s], cls: cls)
        table.x[s] = p.x; table.y[s] = p.y
        syncCluster(slot)
    }

    /// Moves one marker. Throws `.invalidArgument` for a bad position, `.markerNotFound`.
    /// Version + 1.
    public mutating func move(id: String, to position: LatLng) throws(MarkerdCoreError) {
        // The field name is only built for an invalid position (formatting it costs more than a move).
        if !position.isValid { try position.validate(field: "position (id \"\(id)\")") }
        guard let slot = table.find(id) else { throw .markerNotFound(id: id) }
        moveSlot(slot, to: WorldPoint(position))
        version &+= 1
    }

    /// Moves a batch (vehicle tracking). Invalid positions reject the whole batch (throws
    /// `.invalidArgument` naming `moves[i]`); unknown ids are reported. Version + 1 if any moved.
    public mutating func move(_ moves: [(id: String, position: LatLng)]) throws(MarkerdCoreError) -> MoveResult {
        for (i, m) in moves.enumerated() where !m.position.isValid {
            try m.position.validate(field: "moves[\(i)] (id \"\(m.id)\").position")
        }
        var moved = 0
        var missing: [String] = []
        for m in moves {
            if let slot = table.find(m.id) { moveSlot(slot, to: WorldPoint(m.position)); moved += 1 } else { missing.append(m.id) }
        }
        if moved > 0 { version &+= 1 }
        return MoveResult(moved: moved, notFoundIDs: missing)
    }

    // MARK: Animations

    /// Turns markers whose animation ended at or before `now` static for good. Costs
    /// O((expired + stale heap entries) log n). Returns how many markers changed; version + 1 if any.
    @discardableResult public mutating func expireAnimations(now: Int64) -> Int {
        var changed = 0
        while let top = animationHeap.min, top.endsAt <= now {
            animationHeap.pop()
            guard let a = animations[top.slot], a.seq == top.seq else { continue }
            let s = Int(top.slot)
            let old = table.flags[s]
            let f = old & ~MarkerFlags.animating
            animations[top.slot] = nil
            account(old, -1)
            account(f, 1)
            table.flags[s] = f
            grid.move(top.slot, fromX: table.x[s], y: table.y[s], cls: MarkerLayer.gridClass(old),
                      toX: table.x[s], y: table.y[s], z: table.zIndex[s], cls: MarkerLayer.gridClass(f))
            syncCluster(top.slot)
            changed += 1
        }
        if changed > 0 { version &+= 1 }
        return changed
    }

    /// The earliest pending animation end (Unix ms), if any: when to call `expireAnimations`.
    public var nextAnimationEnd: Int64? {
        // Stale entries may make this early; calling expireAnimations then is harmless.
        animationHeap.min?.endsAt
    }

    private mutating func compactAnimationHeapIfNeeded() {
        guard animationHeap.count > 64 && animationHeap.count > 2 * animations.count else { return }
        animationHeap.rebuild(keeping: animations.map { .init(endsAt: $0.value.endsAt, slot: $0.key, seq: $0.value.seq) })
    }

    // MARK: Stats

    /// Counters at `now` (O(1) plus animations ended but not yet expired).
    public func stats(now: Int64) -> LayerStats {
        let c = counts(now: now)
        let mode: TilingMode = options.enabled && c.staticMarkers >= Int(options.minMarkerCount) ? .tiled : .native
        return LayerStats(markers: table.count, staticMarkers: c.staticMarkers, liveMarkers: c.live,
                          hiddenMarkers: hiddenCounter, approximateBytes: approximateBytes, mode: mode, version: version)
    }

    /// Approximate bytes held: array capacities (the attributes' arena as `AttributeArena`
    /// counts it) plus estimates for the sparse dictionaries.
    public var approximateBytes: Int {
        var extraBytes = 0
        for (_, e) in extras { extraBytes += e.count + 48 }
        return table.approximateBytes + grid.approximateBytes + styles.approximateBytes
            + animations.capacity * 40 + animationHeap.count * 16
            + attributes.approximateBytes + extraBytes + labels.count * MarkerLayer.labelEntryBytes + drags.capacity * 48
            + (clusters?.approximateBytes ?? 0)
    }
}

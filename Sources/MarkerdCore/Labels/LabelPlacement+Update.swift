// Incremental placement: re-deciding only the labels a change can reach, in rank order.

extension LabelPlacement {
    /// Brings the placement up to date after markers changed, giving exactly what a placement
    /// from scratch of the layer at `now` gives. Returns the boxes (unpadded, x in [0, W)) to
    /// redraw: the old and new box of every label whose placement changed, and those of every
    /// slot in `changed` that had or has a label (its text or colour may differ); when the
    /// style hides icons without a label (`showIconWithoutLabel` false), also the icon box
    /// (`iconBox`) of each labelled marker whose label appeared or went. A box may appear twice.
    /// With a different `labelStyle` or tile size than the placement was made with, rebuilds
    /// from scratch and returns every old and new label box (a style change redraws the
    /// layer's tiles anyway).
    ///
    /// Lazy placements: only decided labels are re-decided (and the undecided ones they then
    /// need); the boxes cover every decided label whose placement changed. A changed label is
    /// decided when its candidates could reach a covered cell or a placed label, else left
    /// undecided (nothing was drawn from it; `decide` decides it when asked). Undecided labels
    /// need nothing: every label that could reach a decided rectangle is decided, and so is
    /// every label ranked before a decided one that could reach the box it took or that blocks
    /// a candidate it passed over; no decided label or drawn tile depends on an undecided one.
    ///
    /// - changed: every slot whose label inputs may have changed since the placement was made
    ///   or last updated: upserted (created or replaced), moved, removed (its freed slot, also
    ///   when reused since), turned static or not (animation ended, expired), or whose label,
    ///   attributes or z-index changed. Slots beyond the layer's are ignored when unlabelled.
    ///   Moving `now` past animation ends: pass `MarkerLayer.dueAnimationSlots(now:)`. After
    ///   `MarkerLayer.clear()`, make a new placement instead.
    ///
    /// Works by propagation: the changed labels leave the collision grid, then labels are
    /// re-decided in rank order (a min-heap on rank) starting from the changed ones and those
    /// that could gain from the boxes they left; a label whose decision changes queues the
    /// lower-ranked labels its old and new boxes can affect. Labels ranked before a popped one
    /// are final, so each decision is the greedy one. Which labels a box can affect: in a
    /// complete placement, a box left frees only the labels that found it in their way
    /// (`WatchLists`), and a box taken displaces only the placed labels it overlaps (a dropped
    /// one stays dropped); in a lazy one, every decided label whose candidates could reach it.
    ///
    /// Cost: O(k log k) for the k labels re-decided, plus per changed box its watchers or grid
    /// cells (complete), or a search of the layer's static markers within reach: icon extents +
    /// gap + largest label + padding around it (lazy, street zooms, where that is a handful).
    /// When more than max(4096, markers / 4) labels queue up (bulk changes), it places from
    /// scratch instead (O(n log n)) and diffs.
    public mutating func update(layer: MarkerLayer, changed: [Int32], measurer: some LabelMeasurer, now: Int64) -> [LabelBox] {
        if layer.labelStyle != style || layer.options.tileSize != tileSize {
            let old = labels.map(\.box)
            renew(layer: layer, measurer: measurer, now: now)
            return old + labels.map(\.box)
        }
        if indexOfSlot.count < layer.table.slotCount {
            indexOfSlot.append(contentsOf: repeatElement(Self.undecided, count: layer.table.slotCount - indexOfSlot.count))
        }
        if !blockedBy.isEmpty && blockedBy.count < Self.maxPositions * indexOfSlot.count {
            blockedBy.append(contentsOf: repeatElement(-1, count: Self.maxPositions * indexOfSlot.count - blockedBy.count))
        }
        let addedBefore = watchers.added
        var original: [Int32: PlacedLabel?] = [:]   // the decision before the update, of slots whose decision changed
        let changedSet = Set(changed)
        var queued = Set<Int32>()
        var heap = BinaryHeap<QueuedLabel>()
        // Past this many queued labels, re-deciding costs about as much as placing from scratch
        // (1M real places at pixel zoom 0, loaded 2-core host: ~6 µs per queued label, 3 s from scratch).
        let rebuildAbove = Swift.max(minQueueBeforeRebuild, layer.table.count / 4)
        // Lazy: only decided labels (and the changed ones `force`d) are re-decided.
        // Complete: a slot not changed by this update is labelled when decided (`undecided`
        // there means unlabelled), which spares reading its text.
        func enqueue(_ s: Int32, after current: LabelRank?, force: Bool = false) {
            guard queued.count <= rebuildAbove, !queued.contains(s) else { return }
            if force || !isComplete {
                guard force || indexOfSlot[Int(s)] != Self.undecided, layer.isLabelled(slot: s, now: now) else { return }
            } else {
                guard Int(s) < indexOfSlot.count, indexOfSlot[Int(s)] != Self.undecided else { return }
            }
            let r = layer.labelRank(s)
            if let current, !layer.placedBefore(current, r) { return }
            queued.insert(s)
            heap.push(QueuedLabel(rank: r, id: layer.table.idBytes(s)))
        }
        // A placed label leaving its box frees room for the labels it blocked: its watchers
        // (complete; entries no longer recorded are stale), or any decided label within reach
        // (lazy: a decision there may also have waited on undecided labels).
        // `next`: the label's new decision, settled once it left (before its watchers are
        // examined: its new box may block them as well).
        func left(_ s: Int32, _ box: LabelBox, after current: LabelRank?,
                  next: (rank: LabelRank, label: PlacedLabel?, blockers: Blockers)? = nil) {
            guard !blockedBy.isEmpty else {
                forEachNearby(box, side: reach, layer: layer, now: now) { enqueue($0, after: current) }
                remove(slot: s)
                if let next { settle(next.rank, next.label, blockers: next.blockers) }
                return
            }
            var listed: [Int32] = []
            watchers.take(s) { listed.append($0) }
            listed.removeAll { !isWatching($0, s) }   // stale entries
            for w in listed { unwatch(w, s) }   // a decision blocked by `s` again must list it again
            let rank = ranks[Int(indexOfSlot[Int(s)])]
            remove(slot: s)
            if let next { settle(next.rank, next.label, blockers: next.blockers) }
            for w in listed {
                if let others = blockedWithout(w, ranked: rank, layer: layer) {
                    watch(w, others)
                } else {
                    enqueue(w, after: current)
                }
            }
        }
        // The changed labels are re-decided whole: first their records go (so that none counts
        // as a watcher of another, and none is queued before its turn), then their boxes.
        let inRange = changedSet.filter { $0 >= 0 && Int($0) < indexOfSlot.count }
        if !blockedBy.isEmpty { for s in inRange { watch(s, Blockers()) } }
        for s in inRange {
            if let p = label(slot: s) {
                original[s] = p
                left(s, p.box, after: nil)
            }
        }
        for s in inRange { indexOfSlot[Int(s)] = Self.undecided }
        for s in changedSet where isComplete || mustDecide(s, layer: layer, now: now) { enqueue(s, after: nil, force: true) }
        while let q = heap.pop() {
            if queued.count > rebuildAbove {
                return rebuild(layer: layer, measurer: measurer, now: now, original: original, changed: changedSet)
            }
            let s = q.rank.slot
            let current = label(slot: s)
            let (_, decided, blockers) = decideWithNeeds(q.rank, layer: layer, measurer: measurer, now: now)
            guard decided != current else {
                if decided == nil { indexOfSlot[Int(s)] = Self.dropped }
                watch(s, blockers)
                continue
            }
            if original[s] == nil { original[s] = .some(current) }
            if let c = current {
                left(s, c.box, after: q.rank, next: (q.rank, decided, blockers))
            } else {
                settle(q.rank, decided, blockers: blockers)
            }
            // A label taking a box pushes the labels ranked after it that overlap it (complete:
            // the placed ones; a dropped one only gains a blocker), or any decided one within reach.
            guard let d = decided else { continue }
            if !blockedBy.isEmpty {
                forEachPlaced(overlapping: d.box) { if $0 != s { enqueue($0, after: q.rank) } }
            } else {
                forEachNearby(d.box, side: reach, layer: layer, now: now) { enqueue($0, after: q.rank) }
            }
        }
        watchers.staleBound += watchers.added - addedBefore
        if watchers.wantsCompaction { compactWatchers() }
        var boxes: [LabelBox] = []
        for (s, before) in original {
            appendChange(s, before, label(slot: s), changed: changedSet.contains(s), layer: layer, now: now, to: &boxes)
        }
        return boxes
    }

    /// When every candidate a label passed over (all, when dropped) is blocked by a placed label
    /// ranked before `rank` or by that label itself (the rank of a label it watched, which left
    /// its box and may have taken another: those labels are ranked before it too), its decision
    /// stands: returns those blockers, to record instead.
    /// Tests the probe (`LabelGeometry.minimumSize`, inside any box there), so it neither reads
    /// the label's text nor its rank. Nil when some candidate is not blocked so.
    func blockedWithout(_ w: Int32, ranked rank: LabelRank, layer: MarkerLayer) -> Blockers? {
        let s = Int(w)
        let taken = label(slot: w).map { p in style.positions.firstIndex(of: p.position) ?? 0 } ?? style.positions.count
        let (ax, ay) = LabelGeometry.anchor(WorldPoint(x: layer.table.x[s], y: layer.table.y[s]), pixelZoom: pixelZoom)
        let e = layer.styles.extents[Int(layer.table.style[s])]
        let probe = LabelGeometry.minimumSize(style.text)
        var found = Blockers()
        for i in 0..<taken {
            let b = LabelGeometry.box(anchorX: ax, anchorY: ay, extents: e, width: probe.width, height: probe.height, gap: style.gap,
                                      position: style.positions[i], worldWidth: worldWidth)
            guard let y = blocker(of: b, rank, layer, orItself: true) else { return nil }
            found.add(y)
        }
        return found
    }

    /// Bounds the watch lists: drops duplicates and the entries no longer recorded. O(entries).
    private mutating func compactWatchers() {
        var lists = watchers
        watchers = WatchLists()
        defer { watchers = lists }
        lists.compact { w, b in isWatching(w, b) }
    }

    /// Lazy: whether a changed slot must be decided now rather than left undecided: it is
    /// labelled and its candidates could reach a covered cell (a tile drawn there may show it)
    /// or a placed label (which may be ranked after it: its decision needed this one decided).
    private func mustDecide(_ s: Int32, layer: MarkerLayer, now: Int64) -> Bool {
        guard layer.isLabelled(slot: s, now: now) else { return false }
        let b = candidateBounds(s, layer)
        return meetsCovered(b) || grid.first(x0: b.x - pad, y0: b.y - pad, x1: b.x + b.width + pad, y1: b.y + b.height + pad) { _ in true }
    }

    /// Replaces the placement with a new one of the layer in the same mode (complete or lazy)
    /// and decides again the rectangles decided before (lazy), keeping the test knobs.
    private mutating func renew(layer: MarkerLayer, measurer: some LabelMeasurer, now: Int64) {
        let before = self
        self = LabelPlacement(layer: layer, pixelZoom: pixelZoom, measurer: measurer, now: now, mode: before.isComplete ? .eager : .lazy)
        minQueueBeforeRebuild = before.minQueueBeforeRebuild
        minWorkBeforeCompleting = before.minWorkBeforeCompleting
        for cell in before.covered {
            let x = Int64(cell >> 32) << 8, y = Int64(Int32(truncatingIfNeeded: UInt32(truncatingIfNeeded: cell))) << 8
            decide(pixelRect: x, y, x + 256, y + 256, layer: layer, measurer: measurer, now: now)
        }
        for r in before.coveredRects {
            decide(pixelRect: r.x, r.y, r.x + r.width, r.y + r.height, layer: layer, measurer: measurer, now: now)
        }
    }

    /// `update`'s way out when a change reaches too many labels (low zooms, bulk loads): places
    /// from scratch (lazy: decides the covered cells again) and returns the boxes that differ
    /// from the placement before the update, which is the current one with the decisions in
    /// `original` undone.
    private mutating func rebuild(layer: MarkerLayer, measurer: some LabelMeasurer, now: Int64,
                                  original: [Int32: PlacedLabel?], changed: Set<Int32>) -> [LabelBox] {
        let before = self
        renew(layer: layer, measurer: measurer, now: now)
        var boxes: [LabelBox] = []
        var slots = Set(original.keys)
        for l in before.labels { slots.insert(l.slot) }
        for l in labels { slots.insert(l.slot) }
        for s in slots {
            let old = original[s] ?? before.label(slot: s)
            appendChange(s, old, label(slot: s), changed: changed.contains(s), layer: layer, now: now, to: &boxes)
        }
        return boxes
    }

    /// The boxes to redraw for one slot: none when its placement is the same and its inputs did
    /// not change, else its old and new box (once when equal), and its icon's box when the style
    /// hides icons without a label and its label appeared or went.
    private func appendChange(_ slot: Int32, _ old: PlacedLabel?, _ new: PlacedLabel?, changed: Bool, layer: MarkerLayer,
                              now: Int64, to boxes: inout [LabelBox]) {
        guard old != new || changed else { return }
        if let o = old { boxes.append(o.box) }
        if let n = new, n.box != old?.box { boxes.append(n.box) }
        if !style.showIconWithoutLabel && (old == nil) != (new == nil) && layer.isLabelled(slot: slot, now: now) {
            boxes.append(iconBox(slot, layer: layer))
        }
    }

    /// The px box a marker's icon covers at this zoom, 1 px wider on every side than its extents
    /// around the anchor (tiles at any density anchor the icon within 1 px of it); x in [0, W).
    func iconBox(_ slot: Int32, layer: MarkerLayer) -> LabelBox {
        let s = Int(slot)
        let (ax, ay) = LabelGeometry.anchor(WorldPoint(x: layer.table.x[s], y: layer.table.y[s]), pixelZoom: pixelZoom)
        let e = layer.styles.extents[Int(layer.table.style[s])]
        let left = Int64(CoreMath.ceil(e.left)) + 1, up = Int64(CoreMath.ceil(e.up)) + 1
        let x = (ax - left) % worldWidth
        return LabelBox(x: x < 0 ? x + worldWidth : x, y: ay - up,
                        width: left + Int64(CoreMath.ceil(e.right)) + 1, height: up + Int64(CoreMath.ceil(e.down)) + 1)
    }

    /// Calls `body` with each static marker whose label candidates (or probes) could overlap
    /// `b` grown by `pad`, its labels' sides being at most `side` px (`reach` for decided labels,
    /// `largestSide` for any): anchors within the padded box widened by icon extents, `gap`,
    /// `side` and `pad`, plus 2 px for rounding.
    func forEachNearby(_ b: LabelBox, side: Int64, layer: MarkerLayer, now: Int64, _ body: (Int32) -> Void) {
        let u = CoreMath.pow2(24 - pixelZoom)
        let margin = CoreMath.ceil(Double(style.gap)) + Double(side + 2 * pad + 2)
        layer.forEachStaticMarker(viewX: [(Double(b.x - pad) * u, Double(b.x + b.width + pad) * u)],
                                  viewY0: Double(b.y - pad) * u, viewY1: Double(b.y + b.height + pad) * u,
                                  unitsPerPx: u, marginPx: margin, now: now, readStyles: false) { body($0.slot) }
    }
}

/// A label waiting in `LabelPlacement.update`'s heap: the one placed first pops first (the
/// order of `MarkerLayer.placedBefore`, with the id's bytes at hand).
struct QueuedLabel: Comparable {
    var rank: LabelRank
    var id: [UInt8]

    static func < (a: QueuedLabel, b: QueuedLabel) -> Bool {
        if a.rank.zIndex != b.rank.zIndex { return a.rank.zIndex > b.rank.zIndex }
        if a.rank.priority != b.rank.priority { return a.rank.priority > b.rank.priority }
        if a.rank.worldY != b.rank.worldY { return a.rank.worldY > b.rank.worldY }
        return b.id.lexicographicallyPrecedes(a.id)
    }

    static func == (a: QueuedLabel, b: QueuedLabel) -> Bool { a.rank.slot == b.rank.slot }
}

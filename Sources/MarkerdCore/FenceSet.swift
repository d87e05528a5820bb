/// What a fence reports (`FenceSet.markerChanged`).
public struct FenceDetect: OptionSet, Hashable, Sendable {
    public let rawValue: UInt8
    public init(rawValue: UInt8) { self.rawValue = rawValue }
    /// A marker comes inside (created inside, moved in, or made to match the filter while inside).
    public static let enter = FenceDetect(rawValue: 1)
    /// A marker that was inside is no longer (moved out, removed, or no longer matching the filter).
    public static let exit = FenceDetect(rawValue: 2)
    /// A marker that was inside changed and is still inside.
    public static let inside = FenceDetect(rawValue: 4)
    /// A marker moved from outside to outside through the shape (`CompiledFenceShape.segmentMeets`).
    public static let cross = FenceDetect(rawValue: 8)
}

/// The kind of a fence event; raw values are the API's `FenceEventKind` numbers.
public enum FenceEventKind: Int, Hashable, Sendable {
    case enter = 1, exit = 2, inside = 3, cross = 4
}

/// Markers a fence applies to: those whose attribute `name` is exactly `value`.
public struct FenceFilter: Hashable, Sendable {
    public var attribute: String
    public var value: String
    public init(attribute: String, value: String) { self.attribute = attribute; self.value = value }
}

/// A geofence over a layer.
public struct Fence: Sendable {
    public var id: String
    public var shape: CompiledFenceShape
    public var detect: FenceDetect
    /// nil: every marker of the layer.
    public var filter: FenceFilter?
    public init(id: String, shape: CompiledFenceShape, detect: FenceDetect, filter: FenceFilter?) {
        self.id = id; self.shape = shape; self.detect = detect; self.filter = filter
    }
}

/// One event a marker's change raised on a fence. `position` is the marker's position after the
/// change (before it, for the EXIT of a removed marker).
public struct FenceHit: Hashable, Sendable {
    public var fenceID: String
    public var kind: FenceEventKind
    public var markerID: String
    public var position: LatLng
}

/// The fences of one layer: each fence's shape, the markers inside it, and a hierarchical grid
/// (`FenceGrid`) so that a marker's change is checked against the fences near it only.
///
/// A marker is *inside* a fence when its position is in the shape and it matches the fence's
/// filter. The inside-sets are a function of the markers' current state: `insert` fills a new
/// fence's from the layer (no ENTER for markers already inside when it is created) and
/// `rebuild` recomputes every one (after a restore), so events depend only on the sequence of
/// applied changes. Events of one change come ordered by fence id (bytewise), then kind.
public struct FenceSet: Sendable {
    /// Most fences per layer.
    public static let maxFences = 100_000

    private struct Entry: Sendable {
        var fence: Fence
        var inside: Set<String>
    }

    private var entries: [Entry?] = []
    private var freeSlots: [Int32] = []
    private var slotByID: [String: Int32] = [:]
    private var grid = FenceGrid()
    private var seen: [UInt32] = []
    private var stamp: UInt32 = 0
    private var candidates: [Int32] = []

    public init() {}

    public var count: Int { slotByID.count }
    public var isEmpty: Bool { slotByID.isEmpty }

    public func fence(_ id: String) -> Fence? { slotByID[id].flatMap { entries[Int($0)]?.fence } }

    /// How many markers are inside fence `id` (nil: no such fence).
    public func insideCount(_ id: String) -> Int? { slotByID[id].flatMap { entries[Int($0)]?.inside.count } }

    /// Ids of the markers inside fence `id`, sorted (nil: no such fence).
    public func markersInside(_ id: String) -> [String]? {
        slotByID[id].flatMap { entries[Int($0)]?.inside.sorted { $0.utf8.lexicographicallyPrecedes($1.utf8) } }
    }

    /// Up to `limit` fences with ids after `after` (bytewise), in id order.
    public func fences(after: String?, limit: Int) -> [Fence] {
        var ids = slotByID.keys.filter { id in after.map { $0.utf8.lexicographicallyPrecedes(id.utf8) } ?? true }
        ids.sort { $0.utf8.lexicographicallyPrecedes($1.utf8) }
        return ids.prefix(limit).compactMap(fence)
    }

    /// Adds a fence, its inside-set taken from `layer`'s markers (nil: empty, for `rebuild`).
    /// Returns false (and changes nothing) when a fence with its id exists.
    @discardableResult
    public mutating func insert(_ fence: Fence, markersOf layer: MarkerLayer?) -> Bool {
        guard slotByID[fence.id] == nil else { return false }
        var entry = Entry(fence: fence, inside: [])
        if let layer { entry.inside = Self.inside(fence, layer) }
        let slot: Int32
        if let s = freeSlots.popLast() {
            slot = s
            entries[Int(s)] = entry
        } else {
            slot = Int32(entries.count)
            entries.append(entry)
            seen.append(0)
        }
        slotByID[fence.id] = slot
        grid.insert(slot, fence.shape.boundingBox)
        return true
    }

    /// Removes a fence; returns it, or nil when there is none with that id.
    @discardableResult
    public mutating func remove(_ id: String) -> Fence? {
        guard let slot = slotByID.removeValue(forKey: id), let e = entries[Int(slot)] else { return nil }
        grid.remove(slot, e.fence.shape.boundingBox)
        entries[Int(slot)] = nil
        freeSlots.append(slot)
        return e.fence
    }

    /// Recomputes every fence's inside-set from `layer` (after a restore: no events).
    public mutating func rebuild(from layer: MarkerLayer) {
        for i in entries.indices where entries[i] != nil {
            entries[i]!.inside = Self.inside(entries[i]!.fence, layer)
        }
    }

    /// The markers of `layer` inside `fence`.
    private static func inside(_ fence: Fence, _ layer: MarkerLayer) -> Set<String> {
        var out = Set<String>()
        layer.forEachMarker(in: fence.shape.boundingBox) { slot, p in
            guard fence.shape.contains(p) else { return }
            if let f = fence.filter, layer.attributeValue(f.attribute, slot: slot) != f.value { return }
            out.insert(layer.table.id(slot))
        }
        return out
    }

    /// Every marker leaves every fence (the layer was cleared): EXIT events, inside-sets emptied.
    public mutating func removeAllMarkers(positions: (String) -> LatLng?, into hits: inout [FenceHit]) {
        let occupied = slotByID.sorted { $0.key.utf8.lexicographicallyPrecedes($1.key.utf8) }.map { Int($0.value) }
        for slot in occupied {
            guard let e = entries[slot], !e.inside.isEmpty else { continue }
            if e.fence.detect.contains(.exit) {
                for id in e.inside.sorted(by: { $0.utf8.lexicographicallyPrecedes($1.utf8) }) {
                    hits.append(FenceHit(fenceID: e.fence.id, kind: .exit, markerID: id, position: positions(id) ?? LatLng(latitude: 0, longitude: 0)))
                }
            }
            entries[slot]!.inside.removeAll()
        }
    }

    /// Updates the inside-sets for one marker's change and appends its events to `hits`.
    /// - Parameters:
    ///   - from: its position before the change (nil: it did not exist).
    ///   - to: its position after the change (nil: it was removed).
    ///   - attribute: its attribute values after the change (for filters).
    /// Costs time proportional to the fences whose grid cells meet the move's bounding box.
    public mutating func markerChanged(_ id: String, from: LatLng?, to: LatLng?, attribute: (String) -> String?,
                                       into hits: inout [FenceHit]) {
        guard !slotByID.isEmpty, let query = Self.moveBox(from, to) else { return }
        stamp &+= 1
        if stamp == 0 { for i in seen.indices { seen[i] = 0 }; stamp = 1 }
        candidates.removeAll(keepingCapacity: true)
        grid.forEachCandidate(query) { slot in
            if seen[Int(slot)] != stamp { seen[Int(slot)] = stamp; candidates.append(slot) }
        }
        let first = hits.count
        for slot in candidates {
            let i = Int(slot)
            let fence = entries[i]!.fence
            // Cheap rejections first: the grid's cells are up to 4 times the fence's box each way.
            let box = fence.shape.boundingBox
            guard box.intersects(query) else { continue }
            let matches = fence.filter.map { attribute($0.attribute) == $0.value } ?? true
            let wasIn = entries[i]!.inside.contains(id)
            let isIn = matches && to.map { box.holds($0) && fence.shape.contains($0) } == true
            if wasIn != isIn {
                if isIn { entries[i]!.inside.insert(id) } else { entries[i]!.inside.remove(id) }
            }
            let kind: FenceEventKind?
            switch (wasIn, isIn) {
            case (false, true): kind = .enter
            case (true, false): kind = .exit
            case (true, true): kind = .inside
            case (false, false):
                if fence.detect.contains(.cross), matches, let from, let to, fence.shape.segmentMeets(from, to) { kind = .cross } else { kind = nil }
            }
            guard let kind, fence.detect.contains(Self.flag(kind)) else { continue }
            hits.append(FenceHit(fenceID: fence.id, kind: kind, markerID: id, position: (kind == .exit ? to ?? from : to)!))
        }
        if hits.count - first > 1 {
            hits[first...].sort { $0.fenceID == $1.fenceID ? $0.kind.rawValue < $1.kind.rawValue : $0.fenceID.utf8.lexicographicallyPrecedes($1.fenceID.utf8) }
        }
    }

    private static func flag(_ kind: FenceEventKind) -> FenceDetect {
        switch kind {
        case .enter: .enter
        case .exit: .exit
        case .inside: .inside
        case .cross: .cross
        }
    }

    /// The box a change touches: both ends of a move and the segment between them (the shorter
    /// way round in longitude).
    static func moveBox(_ from: LatLng?, _ to: LatLng?) -> GeoBounds? {
        switch (from, to) {
        case (nil, nil): return nil
        case (let p?, nil), (nil, let p?):
            return GeoBounds(west: p.longitude, south: p.latitude, east: p.longitude, north: p.latitude)
        case (let a?, let b?):
            var d = b.longitude - a.longitude
            if d > 180 { d -= 360 } else if d < -180 { d += 360 }
            return CompiledFenceShape.box(minX: Swift.min(a.longitude, a.longitude + d), maxX: Swift.max(a.longitude, a.longitude + d),
                                          south: Swift.min(a.latitude, b.latitude), north: Swift.max(a.latitude, b.latitude))
        }
    }
}

/// A hierarchical grid over latitude/longitude: level k has 2^k columns of 360 / 2^k degrees
/// and 2^k rows of 180 / 2^k degrees. A fence is registered at the finest level whose cells are
/// at least as large as its bounding box (so in at most 2 x 2 cells); a query looks, at each
/// level that has fences, in the cells its box covers (or, when those outnumber the level's
/// fences, at the level's fences directly), so its cost is bounded by the fences near it plus
/// one lookup per occupied level.
struct FenceGrid: Sendable {
    /// The finest level: cells of 360 / 2^16 degrees (about 610 m at the equator).
    static let maxLevel = 16
    private var cells: [UInt64: [Int32]] = [:]
    private var levels = [[Int32]](repeating: [], count: maxLevel + 1)

    private static func width(_ b: GeoBounds) -> Double { b.west <= b.east ? b.east - b.west : b.east + 360 - b.west }

    static func level(_ b: GeoBounds) -> Int {
        let w = width(b), h = b.north - b.south
        var k = 0
        while k < maxLevel, 360 / CoreMath.pow2(k + 1) >= w, 180 / CoreMath.pow2(k + 1) >= h { k += 1 }
        return k
    }

    /// The keys of the cells at `level` that `b` covers (at most 2 x 2 at a fence's own level).
    static func cellKeys(_ b: GeoBounds, level k: Int) -> [UInt64] {
        let n = 1 << k
        let c0 = index((b.west + 180) / 360, n), c1 = index((b.east + 180) / 360, n)
        let r0 = index((b.south + 90) / 180, n), r1 = index((b.north + 90) / 180, n)
        let cols = Swift.min(n, b.west <= b.east ? c1 - c0 + 1 : n - c0 + c1 + 1)
        var keys: [UInt64] = []
        keys.reserveCapacity(cols * (r1 - r0 + 1))
        for r in r0...r1 {
            for i in 0..<cols { keys.append(UInt64(k) << 48 | UInt64(r) << 24 | UInt64((c0 + i) % n)) }
        }
        return keys
    }

    mutating func insert(_ slot: Int32, _ box: GeoBounds) {
        let k = Self.level(box)
        levels[k].append(slot)
        for key in Self.cellKeys(box, level: k) { cells[key, default: []].append(slot) }
    }

    mutating func remove(_ slot: Int32, _ box: GeoBounds) {
        let k = Self.level(box)
        if let i = levels[k].firstIndex(of: slot) { levels[k].swapAt(i, levels[k].count - 1); levels[k].removeLast() }
        for key in Self.cellKeys(box, level: k) {
            guard var list = cells[key], let i = list.firstIndex(of: slot) else { continue }
            list.swapAt(i, list.count - 1)
            list.removeLast()
            cells[key] = list.isEmpty ? nil : list
        }
    }

    /// Calls `body` with every fence whose cells meet `box` (a fence may come more than once).
    func forEachCandidate(_ box: GeoBounds, _ body: (Int32) -> Void) {
        for k in 0...Self.maxLevel where !levels[k].isEmpty {
            let n = 1 << k
            let c0 = Self.index((box.west + 180) / 360, n), c1 = Self.index((box.east + 180) / 360, n)
            let r0 = Self.index((box.south + 90) / 180, n), r1 = Self.index((box.north + 90) / 180, n)
            let cols = Swift.min(n, box.west <= box.east ? c1 - c0 + 1 : n - c0 + c1 + 1)
            guard cols * (r1 - r0 + 1) <= Swift.max(4, levels[k].count) else {
                for s in levels[k] { body(s) }
                continue
            }
            for r in r0...r1 {
                for i in 0..<cols {
                    if let list = cells[UInt64(k) << 48 | UInt64(r) << 24 | UInt64((c0 + i) % n)] { for s in list { body(s) } }
                }
            }
        }
    }

    /// The cell index of fraction `f` (0...1) of an axis of `n` cells.
    @inline(__always) static func index(_ f: Double, _ n: Int) -> Int { Swift.min(n - 1, Swift.max(0, Int(f * Double(n)))) }
}

extension MarkerLayer {
    /// Calls `body` with the slot and position of every marker whose position lies in `box`
    /// (and maybe a few just outside it: callers test the exact shape). Needs the grid built.
    func forEachMarker(in box: GeoBounds, _ body: (Int32, LatLng) -> Void) {
        let top = Mercator.worldSize - 1
        for r in box.worldRects {
            let rect = CellRect(x0: UInt32(Swift.max(0, CoreMath.floor(r.minX) - 1)), y0: UInt32(Swift.max(0, CoreMath.floor(r.minY) - 1)),
                                x1: UInt32(Swift.min(top, CoreMath.ceil(r.maxX) + 1)), y1: UInt32(Swift.min(top, CoreMath.ceil(r.maxY) + 1)))
            for cls in [GridIndex.Class.staticMarker, .live, .hidden] {
                grid.forEach(cls: cls.rawValue, rect: rect) { e in body(e.slot, WorldPoint(x: e.x, y: e.y).latLng) }
            }
        }
    }
}

extension MarkerLayer {
    /// The slot and the position fences see of marker `id` (nil: no such marker): its stored
    /// position, or where its drag began while it is dragged (the last position a journal record
    /// set: `DragTo` is not journaled, so fence events follow EndDrag, the same on replay).
    public func fencePoint(id: String) -> (slot: Int32, position: LatLng)? {
        guard let slot = table.find(id) else { return nil }
        if table.flags[Int(slot)] & MarkerFlags.dragging != 0, let d = dragOfSlot[slot], let s = drags[d] {
            return (slot, s.start.latLng)
        }
        return (slot, WorldPoint(x: table.x[Int(slot)], y: table.y[Int(slot)]).latLng)
    }
}

extension GeoBounds {
    /// Whether the position lies in these bounds (edges included; across the antimeridian when west > east).
    @inline(__always) func holds(_ p: LatLng) -> Bool {
        p.latitude >= south && p.latitude <= north
            && (west <= east ? p.longitude >= west && p.longitude <= east : p.longitude >= west || p.longitude <= east)
    }

    /// Whether the two bounds share a point (either may cross the antimeridian).
    @inline(__always) func intersects(_ o: GeoBounds) -> Bool {
        guard south <= o.north && o.south <= north else { return false }
        if west > east && o.west > o.east { return true }  // both hold the antimeridian
        if west > east { return o.west <= east || o.east >= west }
        if o.west > o.east { return west <= o.east || east >= o.west }
        return west <= o.east && o.west <= east
    }
}

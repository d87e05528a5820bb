// Cluster maintenance of a layer: the optional GridClusterIndex of the layer's visible static
// markers follows every change. MarkerLayer calls `syncCluster(slot)` once per changed slot on
// every mutation path (upsert, removal, move / drag move via moveSlot, animation expiry) and
// empties the index on clear; everything else lives here.

/// An item of a layer's clustered view: a cluster, or a visible static marker left unclustered.
public enum LayerClusterItem: Sendable, Hashable {
    case cluster(GridCluster)
    /// An unclustered marker: its slot (the cluster point id) and its stored record.
    case marker(slot: Int32, MarkerRecord)

    /// Markers represented: the cluster's count, or 1.
    public var count: Int {
        switch self {
        case .cluster(let c): c.count
        case .marker: 1
        }
    }
}

/// A visible static marker as input of snapshot clustering (supercluster): slot order.
public struct ClusterableMarker: Sendable, Hashable {
    public var slot: Int32
    public var id: String
    /// The stored position (quantized to world units, rounded to 7 decimals: see `WorldPoint.latLng`).
    public var position: LatLng
    public var world: WorldPoint
}

extension MarkerLayer {
    /// Clustered: occupied, visible, neither draggable nor animating (by flag: an animation that
    /// ended joins when `expireAnimations` runs, which the service does before every query).
    @inline(__always) static func isClusterable(_ f: UInt8) -> Bool {
        f & MarkerFlags.occupied != 0
            && f & (MarkerFlags.visible | MarkerFlags.draggable | MarkerFlags.animating) == MarkerFlags.visible
    }

    /// Puts the slot into the cluster index, moves it, or takes it out, after a change. O(maxZoom);
    /// a no-op when grid clustering is off. A clusterable slot that kept its position still
    /// re-stamps the cells above it (`GridClusterIndex.upsert`): its record (style, z-index,
    /// clickable, attributes) may have changed, and GetClusters replies memoize the unclustered
    /// markers' bytes by subtree stamp.
    @inline(__always) mutating func syncCluster(_ slot: Int32) {
        guard clusters != nil else { return }
        let s = Int(slot)
        if s < table.slotCount && MarkerLayer.isClusterable(table.flags[s]) {
            clusters!.upsert(ClusterPoint(id: slot, x: table.x[s], y: table.y[s]))
        } else {
            clusters!.remove(id: slot)
        }
    }

    // MARK: Enabling

    /// Starts maintaining grid clusters with `options` (marker slots are the point ids), building the
    /// index in bulk from the current visible static markers (`GridClusterIndex(options:points:)`:
    /// a radix sort plus O(cells x log markers)). Replaces an index with other options; a no-op
    /// when the options are the same. Does not change the version.
    /// Traps on invalid options (`GridClusterOptions.isValid`).
    public mutating func enableGridClusters(_ options: GridClusterOptions) {
        if let c = clusters, c.options == options { return }
        var points: [ClusterPoint] = []
        points.reserveCapacity(staticCounter)
        for s in 0..<table.slotCount where MarkerLayer.isClusterable(table.flags[s]) {
            points.append(ClusterPoint(id: Int32(s), x: table.x[s], y: table.y[s]))
        }
        clusters = GridClusterIndex(options: options, points: points)
    }

    /// Stops maintaining grid clusters and frees the index.
    public mutating func disableGridClusters() { clusters = nil }

    /// The options of the maintained grid clusters, or nil when off.
    public var gridClusterOptions: GridClusterOptions? { clusters?.options }

    /// The maintained grid cluster index (a copy-on-write value), or nil when off.
    public var gridClusterIndex: GridClusterIndex? { clusters }

    // MARK: Queries (grid)

    /// Grid clusters and unclustered markers of the cells of `zoom` intersecting `box` (see
    /// `GridClusterIndex.clusters(in:zoom:)` for the inclusion rule and order); above the cluster
    /// max zoom, the visible static markers inside `box`. Nil when grid clustering is off.
    public func gridClusterItems(in box: ClusterBox, zoom: Int) -> [LayerClusterItem]? {
        guard let clusters else { return nil }
        return clusters.clusters(in: box, zoom: zoom).map(layerItem)
    }

    /// `gridClusterItems(in:zoom:)` plus each cluster's expansion zoom, in item order (see
    /// `GridClusterIndex.clustersWithExpansionZooms`). Nil when grid clustering is off.
    public func gridClusterItemsWithExpansionZooms(in box: ClusterBox, zoom: Int) -> (items: [LayerClusterItem], expansionZooms: [Int])? {
        guard let clusters else { return nil }
        let found = clusters.clustersWithExpansionZooms(in: box, zoom: zoom)
        return (found.items.map(layerItem), found.expansionZooms)
    }

    /// Hands `visitor` the grid clusters and unclustered points (slots) of `gridClusterItems(in:zoom:)`,
    /// in the same order, without building them (see `GridClusterIndex.visit(in:zoom:_:)`). False
    /// when grid clustering is off (the visitor then sees nothing).
    @discardableResult
    public func visitGridClusters<V: GridClusterVisitor>(in box: ClusterBox, zoom: Int, _ visitor: inout V) -> Bool {
        guard let clusters else { return false }
        clusters.visit(in: box, zoom: zoom, &visitor)
        return true
    }

    /// The generation of the grid cluster index (see `GridNodeStamp`), or nil when grid clustering is off.
    public var gridClusterGeneration: UInt64? { clusters?.generation }

    /// The visible static markers of `points` (cluster points: a slot and its position, as the
    /// layer's cluster index holds them) as query slots, for the encoders that read markers by
    /// slot (`gather(_:)`, `position(_:)`). Valid until the layer next changes.
    public func markerSlots(_ points: [ClusterPoint]) -> [MarkerSlot] {
        // The cluster index's positions are the table's (`syncCluster`): only the z-index is read.
        table.zIndex.withUnsafeBufferPointer { zs in
            points.map { p in MarkerSlot(GridEntry(x: p.x, y: p.y, z: zs[Int(p.id)], slot: p.id)) }
        }
    }

    /// For raster and vector tiles: the grid clusters and unclustered markers whose cells of zoom `z`
    /// lie in tile z/x/y (x wrapped; each cell belongs to exactly one tile), plus, when `buffer` > 0,
    /// those of the cells intersecting the tile grown by `buffer` (a fraction of the tile side, e.g.
    /// 0.0625), so that icons crossing the tile edge are drawn by both tiles. Nil when grid clustering is off.
    public func gridClusterTile(z: Int, x: Int, y: Int, buffer: Double = 0) -> [LayerClusterItem]? {
        guard let clusters, z >= 0, z <= 32, y >= 0, UInt64(y) < (UInt64(1) << UInt64(z)) else { return nil }
        return clusters.clusters(in: MarkerLayer.tileBox(z: z, x: x, y: y, buffer: buffer), zoom: z).map(layerItem)
    }

    /// The world box of tile z/x/y (x wrapped) grown by `buffer` tile sides on each side (clamped in y,
    /// wrapped across the antimeridian in x; the whole width when it covers the world).
    public static func tileBox(z: Int, x: Int, y: Int, buffer: Double) -> ClusterBox {
        let n = Int64(1) << Int64(z)
        let wx = ((Int64(x) % n) + n) % n
        let side = Double(UInt64(1) << UInt64(32 - z))
        let b = max(0, buffer) * side
        let x0 = Double(wx) * side - b, x1 = Double(wx + 1) * side - 1 + b
        let y0 = max(0, Double(y) * side - b), y1 = min(4_294_967_295, Double(y + 1) * side - 1 + b)
        let world = 4_294_967_296.0
        if x1 - x0 + 1 >= world { return ClusterBox(minX: 0, minY: UInt32(y0), maxX: .max, maxY: UInt32(y1)) }
        func wrap(_ v: Double) -> UInt32 {
            var w = v.rounded(.down).truncatingRemainder(dividingBy: world)
            if w < 0 { w += world }
            return UInt32(w)
        }
        return ClusterBox(minX: wrap(x0), minY: UInt32(y0), maxX: wrap(x1), maxY: UInt32(y1))
    }

    /// The grid cluster with this id now, or nil.
    public func gridCluster(_ id: GridClusterID) -> GridCluster? { clusters?.cluster(id) }

    /// A grid cluster's markers (`limit` after `offset`, in the index's order). Throws
    /// `.noCluster` for an id that names no cluster now (or when grid clustering is off).
    public func gridClusterLeaves(_ id: GridClusterID, limit: Int, offset: Int) throws(GridClusterError) -> [MarkerRecord] {
        guard let clusters else { throw .noCluster(id) }
        return try clusters.leaves(of: id, limit: limit, offset: offset).map { record($0.id) }
    }

    /// What a grid cluster splits into at the next zoom. Throws `.noCluster`.
    public func gridClusterChildren(_ id: GridClusterID) throws(GridClusterError) -> [LayerClusterItem] {
        guard let clusters else { throw .noCluster(id) }
        return try clusters.children(of: id).map(layerItem)
    }

    /// The first zoom at which a grid cluster splits. Throws `.noCluster`.
    public func gridClusterExpansionZoom(_ id: GridClusterID) throws(GridClusterError) -> Int {
        guard let clusters else { throw .noCluster(id) }
        return try clusters.expansionZoom(of: id)
    }

    private func layerItem(_ item: GridClusterItem) -> LayerClusterItem {
        switch item {
        case .cluster(let c): .cluster(c)
        case .point(let p): .marker(slot: p.id, record(p.id))
        }
    }

    // MARK: Snapshots (supercluster)

    /// The visible static markers (by flag, see `isClusterable`) in slot order: O(slots).
    /// Markers loaded into an empty layer get slots in load order.
    public func clusterableMarkers() -> [ClusterableMarker] {
        var out: [ClusterableMarker] = []
        out.reserveCapacity(staticCounter)
        for s in 0..<table.slotCount where MarkerLayer.isClusterable(table.flags[s]) {
            let w = WorldPoint(x: table.x[s], y: table.y[s])
            out.append(ClusterableMarker(slot: Int32(s), id: table.id(Int32(s)), position: w.latLng, world: w))
        }
        return out
    }

    /// The record stored in a slot, or nil for a free or out-of-range slot.
    public func markerRecord(slot: Int32) -> MarkerRecord? {
        guard slot >= 0, Int(slot) < table.slotCount, table.flags[Int(slot)] != 0 else { return nil }
        return record(slot)
    }
}

import Dispatch
import Foundation
import MarkerdAPI
import MarkerdCore

// Clustering RPCs (GetClusters, GetClusterLeaves, GetClusterChildren, GetClusterExpansionZoom) and
// the cluster view of a tile for the raster renderer and the point tiles.
//
// Two algorithms, per layer (`ClusteringOptions.algorithm`):
// - GRID (the default): the layer's GridClusterIndex, maintained by MarkerLayer on every change
//   (built when the layer is created with clustering enabled, else on the first cluster query).
//   Answers always reflect the current layer version. Cluster ids: `1 << 63 | GridClusterID`.
// - SUPERCLUSTER: exactly supercluster v8's clusters (positions, counts, members, ids) over a
//   snapshot of the layer's visible static markers in slot order, rebuilt in the background
//   (debounced) after changes; answers come from the last completed snapshot and carry its
//   layer version. The first query of a layer builds the snapshot synchronously.

/// A layer's clustering options with every default filled in.
struct LayerClustering: Sendable, Equatable {
    enum Algorithm: Sendable {
        case grid, supercluster
        var api: V1.ClusterAlgorithm { self == .grid ? .grid : .supercluster }
    }
    var enabled: Bool
    var algorithm: Algorithm
    var grid: GridClusterOptions
    var supercluster: SuperclusterOptions

    init(_ c: V1.ClusteringOptions?) {
        let c = c ?? V1.ClusteringOptions()
        enabled = c.enabled ?? false
        algorithm = c.algorithm == .supercluster ? .supercluster : .grid
        let radius = Double(c.radiusPx ?? 60), minPoints = Int(c.minPoints ?? 2)
        let maxZoom = Int(c.maxZoom ?? 16), extent = Double(c.extent ?? 512)
        grid = GridClusterOptions(radius: radius, minPoints: max(1, minPoints), maxZoom: maxZoom, extent: extent)
        supercluster = SuperclusterOptions(minZoom: 0, maxZoom: maxZoom, minPoints: minPoints, radius: radius, extent: extent)
    }

    /// Grid options to build at layer creation: clustering enabled with the grid algorithm
    /// (otherwise the grid is built by the first cluster query).
    static func eagerGridOptions(_ c: V1.ClusteringOptions?) -> GridClusterOptions? {
        let config = LayerClustering(c)
        return config.enabled && config.algorithm == .grid ? config.grid : nil
    }

    /// Checks clustering options beyond what `LayerOptionsResolution` checks (INVALID_ARGUMENT).
    static func validate(_ c: V1.ClusteringOptions) throws(RPCError) {
        let minPoints = c.minPoints ?? 2, maxZoom = c.maxZoom ?? 16, extent = c.extent ?? 512
        guard minPoints >= 1 else { throw .invalidArgument("options.clustering.min_points must be at least 1", field: "options.clustering.min_points") }
        guard extent >= 1 && extent <= 65536 else { throw .invalidArgument("options.clustering.extent \(extent) must be within 1...65536", field: "options.clustering.extent") }
        guard maxZoom <= 24 else { throw .invalidArgument("options.clustering.max_zoom \(maxZoom) must be within 0...24", field: "options.clustering.max_zoom") }
        let o = LayerClustering(c).grid
        guard o.isValid else {
            throw .invalidArgument("options.clustering: max_zoom \(maxZoom) with extent \(extent) / radius_px \(c.radiusPx ?? 60) "
                + "needs \(Int(maxZoom) + o.cellsPerTileLog2) grid levels, more than 29", field: "options.clustering.max_zoom")
        }
    }
}

/// A supercluster snapshot of a layer.
struct SuperclusterSnapshot: Sendable {
    /// The layer version the snapshot reflects.
    var layerVersion: UInt64
    let options: SuperclusterOptions
    let index: SuperclusterIndex
    /// Input index -> marker (slot order at snapshot time).
    let markers: [ClusterableMarker]
}

/// Per-layer clustering state kept by the service (the supercluster snapshot and its rebuilds).
final class ClusterState: @unchecked Sendable {
    private let lock = NSLock()
    /// Guarded by `lock`.
    private var current: SuperclusterSnapshot?
    /// Guarded by `lock`: a background rebuild is scheduled or running.
    private var rebuildPending = false
    /// Serializes snapshot builds (held while building, never under `lock` or the layer lock).
    let buildLock = NSLock()
    /// The grid GetClusters replies' memo (`ClusterReplyWriter`).
    let gridMemo = GridClusterMemo()

    var snapshot: SuperclusterSnapshot? { lock.withLock { current } }

    /// Installs `s` unless a snapshot of a later layer version is already there.
    func install(_ s: SuperclusterSnapshot) {
        lock.withLock {
            if let c = current, c.layerVersion > s.layerVersion, c.options == s.options { return }
            current = s
        }
    }

    /// Marks a rebuild pending; false when one already is.
    func claimRebuild() -> Bool {
        lock.withLock {
            if rebuildPending { return false }
            rebuildPending = true
            return true
        }
    }

    func rebuildDone() { lock.withLock { rebuildPending = false } }

    func drop() { lock.withLock { current = nil } }
}

/// One item of a tile's cluster view (`MarkerService.clusterTile`).
public enum ClusterTileItem: Sendable, Hashable {
    /// A cluster: its API id, member count and position (weighted centre).
    case cluster(id: UInt64, count: Int, position: WorldPoint)
    /// A visible static marker left unclustered (`slot`: its numeric id in the layer).
    case marker(slot: Int32, MarkerRecord)

    /// World position of the item.
    public var position: WorldPoint {
        switch self {
        case .cluster(_, _, let p): p
        case .marker(_, let r): WorldPoint(r.position)
        }
    }
}

/// The cluster view of one tile (`MarkerService.clusterTile`).
public struct ClusterTile: Sendable {
    /// The layer version the items reflect (supercluster: the snapshot's version).
    public var layerVersion: UInt64
    /// GRID or SUPERCLUSTER (never UNSPECIFIED).
    public var algorithm: V1.ClusterAlgorithm
    /// Items whose position lies in the tile grown by the buffer, in the algorithm's order.
    public var items: [ClusterTileItem]
}

extension MarkerService {
    /// Background rebuilds of supercluster snapshots wait this long after a change (ms), so a burst
    /// of changes costs one rebuild.
    static let superclusterDebounceMs = 150

    /// Grid cluster ids carry bit 63, so they never equal a marker slot (MVT feature ids) and are
    /// never taken for a supercluster id.
    static let gridIDBit: UInt64 = 1 << 63

    // MARK: Layer plumbing

    func clusterConfig(_ h: LayerHandle) -> LayerClustering {
        h.lock.withReadLock { LayerClustering(h.options.clustering) }
    }

    /// Makes sure the layer maintains its grid clusters (building them once if needed).
    func ensureGridClusters(_ h: LayerHandle, _ options: GridClusterOptions) {
        let ready = h.lock.withReadLock { h.layer.gridClusterOptions == options }
        if !ready { h.lock.withWriteLock { if !h.deleted { h.layer.enableGridClusters(options) } } }
    }

    /// Called by the write path after every change of a layer: schedules a supercluster rebuild when
    /// the layer has a snapshot. Cheap; call under or outside the layer lock.
    func clustersMayHaveChanged(_ h: LayerHandle) {
        guard h.clusterState.snapshot != nil else { return }
        scheduleSuperclusterRebuild(h)
    }

    func scheduleSuperclusterRebuild(_ h: LayerHandle) {
        guard h.clusterState.claimRebuild() else { return }
        DispatchQueue.global(qos: .utility).asyncAfter(deadline: .now() + .milliseconds(Self.superclusterDebounceMs)) { [weak self] in
            guard let self else { h.clusterState.rebuildDone(); return }
            let config = self.clusterConfig(h)
            // A failed build (due animations that cannot be expired) leaves it to the next query.
            let built = h.lock.withReadLock { h.deleted } ? nil : try? self.buildSuperclusterSnapshot(h, config.supercluster)
            h.clusterState.rebuildDone()
            // Changes that came in while building: go again.
            if let built, h.lock.withReadLock({ !h.deleted && h.layer.version != built.layerVersion }) {
                self.scheduleSuperclusterRebuild(h)
            }
        }
    }

    /// Builds (and installs) a snapshot of the layer's visible static markers. The layer's read lock
    /// is held only while copying the markers. When they equal the last snapshot's (ids and
    /// positions), the old index is kept and only its version moves on.
    /// - Throws: UNAVAILABLE when due animations cannot be expired (`expireDueAnimations`).
    @discardableResult
    func buildSuperclusterSnapshot(_ h: LayerHandle, _ options: SuperclusterOptions) throws(RPCError) -> SuperclusterSnapshot {
        h.clusterState.buildLock.lock()
        defer { h.clusterState.buildLock.unlock() }
        let now = nowUnixMs()
        try expireDueAnimations(h, now: now)
        let (version, markers) = h.lock.withReadLock { (h.layer.version, h.layer.clusterableMarkers()) }
        if var old = h.clusterState.snapshot, old.options == options, old.layerVersion <= version,
           old.markers.count == markers.count,
           zip(old.markers, markers).allSatisfy({ $0.world == $1.world && $0.id == $1.id }) {
            old.layerVersion = version
            h.clusterState.install(old)
            return old
        }
        let index = SuperclusterIndex(points: markers.map(\.position),
                                      options: options)
        let s = SuperclusterSnapshot(layerVersion: version, options: options, index: index, markers: markers)
        h.clusterState.install(s)
        return s
    }

    /// The snapshot to answer from: the last completed one (scheduling a rebuild when the layer
    /// moved on), or a synchronously built first one.
    /// - Throws: UNAVAILABLE when due animations cannot be expired (`expireDueAnimations`).
    func superclusterSnapshot(_ h: LayerHandle, _ options: SuperclusterOptions) throws(RPCError) -> SuperclusterSnapshot {
        if let s = h.clusterState.snapshot, s.options == options {
            try expireDueAnimations(h, now: nowUnixMs())
            if h.lock.withReadLock({ h.layer.version }) != s.layerVersion { scheduleSuperclusterRebuild(h) }
            return s
        }
        return try buildSuperclusterSnapshot(h, options)
    }

    /// Waits until the layer's supercluster snapshot reflects the current layer version (tests,
    /// benchmarks). Builds synchronously.
    public func refreshClusterSnapshot(layerID: String) throws(RPCError) {
        let h = try handle(layerID)
        let config = clusterConfig(h)
        guard config.algorithm == .supercluster else { return }
        try buildSuperclusterSnapshot(h, config.supercluster)
    }

    static func notFound(_ id: UInt64, _ h: LayerHandle, version: UInt64) -> RPCError {
        .notFound("cluster \(id) does not exist in layer \(h.id) at version \(version); it may have changed - query GetClusters again")
    }

    static func gridID(_ id: UInt64) -> GridClusterID? {
        id & gridIDBit != 0 ? GridClusterID(rawValue: id & ~gridIDBit) : nil
    }

    // MARK: API conversion

    static func apiBounds(_ b: ClusterBox) -> V1.Bounds {
        let a = WorldPoint(x: b.minX, y: b.maxY).fastLatLng, c = WorldPoint(x: b.maxX, y: b.minY).fastLatLng
        return V1.Bounds(west: a.longitude, south: a.latitude, east: c.longitude, north: c.latitude)
    }

    /// A grid cluster: its centre and bounds in degrees (`WorldPoint.latLng`'s values, computed
    /// by `fastLatLng`).
    static func apiCluster(_ c: GridCluster, expansionZoom: Int) -> V1.Cluster {
        let p = WorldPoint(x: c.x, y: c.y).fastLatLng
        return V1.Cluster(id: gridIDBit | c.id.rawValue, markerCount: UInt64(c.count),
                          position: V1.LatLng(latitude: p.latitude, longitude: p.longitude),
                          bounds: apiBounds(c.bounds), expansionZoom: UInt32(expansionZoom))
    }

    /// A supercluster cluster: bounds from its leaves (O(members)).
    static func apiCluster(_ f: SuperclusterFeature, _ s: SuperclusterSnapshot) -> V1.Cluster {
        var b = ClusterBox(minX: .max, minY: .max, maxX: 0, maxY: 0)
        if let leaves = try? s.index.leaves(of: f.id, limit: Int.max) {
            for l in leaves {
                let w = s.markers[l.id].world
                b.minX = min(b.minX, w.x); b.maxX = max(b.maxX, w.x)
                b.minY = min(b.minY, w.y); b.maxY = max(b.maxY, w.y)
            }
        }
        let zoom = (try? s.index.expansionZoom(of: f.id)) ?? 0
        return V1.Cluster(id: UInt64(f.id), markerCount: UInt64(f.pointCount),
                          position: V1.LatLng(latitude: f.latitude, longitude: f.longitude),
                          bounds: b.minX <= b.maxX ? apiBounds(b) : nil, expansionZoom: UInt32(max(0, zoom)))
    }

    /// The current record of a snapshot marker, at its snapshot position (so it agrees with the
    /// clusters); just the id and position when it was removed since. Call under the read lock.
    /// Grid cluster items as API clusters and markers. `expansionZooms`: one per cluster, in item
    /// order, when known (else each is looked up). Call under the layer's lock.
    static func apiItems(_ items: [LayerClusterItem], expansionZooms: [Int]? = nil, _ layer: MarkerLayer, maxZoom: Int) -> ([V1.Cluster], [V1.Marker]) {
        var clusters: [V1.Cluster] = []
        var markers: [V1.Marker] = []
        if let expansionZooms { clusters.reserveCapacity(expansionZooms.count) }
        for item in items {
            switch item {
            case .cluster(let c):
                let ez = expansionZooms?[clusters.count] ?? (try? layer.gridClusterExpansionZoom(c.id)) ?? (maxZoom + 1)
                clusters.append(apiCluster(c, expansionZoom: ez))
            case .marker(_, let m):
                markers.append(MarkerConversion.apiMarker(m))
            }
        }
        return (clusters, markers)
    }

    /// Supercluster features as API clusters and markers (marker details read under the layer's lock).
    func apiItems(_ features: [SuperclusterFeature], _ s: SuperclusterSnapshot, layerID: String) throws(RPCError) -> ([V1.Cluster], [V1.Marker]) {
        try read(layerID) { (h, _) throws(RPCError) in
            var clusters: [V1.Cluster] = []
            var markers: [V1.Marker] = []
            for f in features {
                if f.isCluster {
                    clusters.append(Self.apiCluster(f, s))
                } else {
                    markers.append(MarkerConversion.apiMarker(Self.snapshotRecord(s.markers[f.id], h.layer)))
                }
            }
            return (clusters, markers)
        }
    }

    static func snapshotRecord(_ m: ClusterableMarker, _ layer: MarkerLayer) -> MarkerRecord {
        var r = layer.marker(id: m.id) ?? MarkerRecord(id: m.id, position: m.position)
        r.position = m.position
        return r
    }

    static func zoomLevel(_ zoom: Double) throws(RPCError) -> Int {
        guard zoom.isFinite, zoom >= 0, zoom < 23 else { throw .invalidArgument("zoom \(zoom) is not within 0...22", field: "zoom") }
        return Int(zoom.rounded(.down))
    }

    // MARK: RPCs

    /// GetClusters: clusters and unclustered visible static markers in `bounds` (west > east crosses
    /// the antimeridian) at `floor(zoom)`.
    public func getClusters(_ r: V1.GetClustersRequest) throws(RPCError) -> V1.GetClustersResponse {
        let (b, zoom, h, config) = try clustersQuery(r)
        var response = V1.GetClustersResponse()
        response.algorithm = config.algorithm.api
        switch config.algorithm {
        case .grid:
            let box = ClusterBox(west: b.west, south: b.south, east: b.east, north: b.north)
            return try read(r.layerID) { (h, _) throws(RPCError) in
                guard let found = h.layer.gridClusterItemsWithExpansionZooms(in: box, zoom: zoom) else {
                    throw .unavailable("clusters are being rebuilt; retry")
                }
                (response.clusters, response.markers) = Self.apiItems(found.items, expansionZooms: found.expansionZooms, h.layer,
                                                                      maxZoom: config.grid.maxZoom)
                response.layerVersion = h.layer.version
                return response
            }
        case .supercluster:
            let s = try superclusterSnapshot(h, config.supercluster)
            let features = s.index.clusters(west: b.west, south: b.south, east: b.east, north: b.north, zoom: zoom)
            (response.clusters, response.markers) = try apiItems(features, s, layerID: r.layerID)
            response.layerVersion = s.layerVersion
            return response
        }
    }

    /// `getClusters` encoded: the same bytes as `getClusters(_:).serializedBytes()`. For the grid
    /// algorithm built without a `V1.Cluster` message or `V1.Marker` per item by
    /// `ClusterReplyWriter`: clusters written during the walk, markers straight from the layer by
    /// `MarkerWireEncoder` after it (both reused from the layer's memo of unchanged subtrees when
    /// no other reply holds it), then layer_version and algorithm.
    public func getClustersPayload(_ r: V1.GetClustersRequest) throws(RPCError) -> [UInt8] {
        let (b, zoom, _, config) = try clustersQuery(r)
        guard config.algorithm == .grid else { return try getClusters(r).serializedBytes() }
        let box = ClusterBox(west: b.west, south: b.south, east: b.east, north: b.north)
        return try read(r.layerID) { (h, _) throws(RPCError) in
            guard let generation = h.layer.gridClusterGeneration else { throw .unavailable("clusters are being rebuilt; retry") }
            let memo = h.clusterState.gridMemo
            let locked = memo.lock.try()
            defer { if locked { memo.lock.unlock() } }
            if locked { memo.prepare(generation: generation) }
            var writer = ClusterReplyWriter(memo: locked ? memo : nil)
            h.layer.visitGridClusters(in: box, zoom: zoom, &writer)
            return writer.payload(of: h.layer, algorithm: config.algorithm.api)
        }
    }

    /// `getClustersPayload` for the network thread, which must not wait: the payload when the
    /// layer uses the grid algorithm with its clusters built, its read lock and cluster memo are
    /// free, no animation is due, and the answer takes at most `budget` clusters encoded afresh
    /// plus markers (the rest comes from the memo); nil otherwise (also for a bad request), and
    /// the caller hands the request to `getClustersPayload`. A walk stopped by the budget keeps
    /// nothing in the memo (subtrees are kept once the fresh markers are encoded, after the walk):
    /// the worker's walk that follows keeps them all. The same bytes as `getClustersPayload`.
    ///
    /// The payload is not gathered in an array: `write` is called (at most once, with the
    /// layer's read lock and the memo's lock held) with its size in bytes and a function that
    /// writes it into a buffer of exactly that size, copying the memoized clusters straight from
    /// the memo (`ClusterReplyWriter.write(tail:into:)`). Returns whether `write` was called.
    public func inlineClustersPayload(_ r: V1.GetClustersRequest, budget: Int = 512,
                                      write: (_ size: Int, _ fill: (UnsafeMutableRawBufferPointer) -> Void) -> Void) -> Bool {
        guard let b = r.bounds, b.west.isFinite, b.east.isFinite, b.south.isFinite, b.north.isFinite,
              let zoom = try? Self.zoomLevel(r.zoom), let h = try? handle(r.layerID) else { return false }
        let box = ClusterBox(west: b.west, south: b.south, east: b.east, north: b.north)
        let now = nowUnixMs()
        let written = h.lock.withReadLockIfFree { () -> Bool in
            let config = LayerClustering(h.options.clustering)
            guard !h.deleted, config.algorithm == .grid, h.layer.gridClusterOptions == config.grid,
                  let generation = h.layer.gridClusterGeneration, h.layer.nextAnimationEnd.map({ $0 > now }) ?? true
            else { return false }
            let memo = h.clusterState.gridMemo
            guard memo.lock.try() else { return false }
            defer { memo.lock.unlock() }
            memo.prepare(generation: generation)
            var writer = ClusterReplyWriter(memo: memo, budget: budget)
            h.layer.visitGridClusters(in: box, zoom: zoom, &writer)
            guard !writer.isDone else { return false }
            let tail = writer.tail(of: h.layer, algorithm: config.algorithm.api)
            write(writer.bodyByteCount + tail.count) { writer.write(tail: tail, into: $0) }
            return true
        }
        return written ?? false
    }

    /// Bytes held by the layer's GetClusters memo (`GridClusterMemo.heldBytes`), or nil for an
    /// unknown layer or while a reply holds the memo; for benchmarks and tests (a drop between two
    /// calls means the memo was emptied: full, or the index was rebuilt).
    public func clusterMemoHeldBytes(layerID: String) -> Int? {
        guard let memo = try? handle(layerID).clusterState.gridMemo, memo.lock.try() else { return nil }
        defer { memo.lock.unlock() }
        return memo.heldBytes
    }

    /// Checks a GetClusters request; its bounds, integer zoom, layer and clustering options. For the
    /// grid algorithm, makes sure the layer maintains its grid clusters.
    private func clustersQuery(_ r: V1.GetClustersRequest) throws(RPCError) -> (V1.Bounds, Int, LayerHandle, LayerClustering) {
        guard let b = r.bounds else { throw .invalidArgument("bounds is missing", field: "bounds") }
        guard b.west.isFinite, b.east.isFinite, b.south.isFinite, b.north.isFinite else {
            throw .invalidArgument("bounds must be finite", field: "bounds")
        }
        let zoom = try Self.zoomLevel(r.zoom)
        let h = try handle(r.layerID)
        let config = clusterConfig(h)
        if config.algorithm == .grid { ensureGridClusters(h, config.grid) }
        return (b, zoom, h, config)
    }

    /// GetClusterLeaves: a cluster's markers, `limit` (default 10) after `offset`.
    /// GetClusterLeaves: a page of a cluster's leaves (`page_size` 0-100,000, default 10), with
    /// the token of the next page when there are more.
    public func getClusterLeaves(_ r: V1.GetClusterLeavesRequest) throws(RPCError) -> V1.GetClusterLeavesResponse {
        let pageSize = try PageToken.size(r.pageSize, default: 10, maximum: MarkerConversion.maxBatch)
        let offset = try PageToken.leavesOffset(r.pageToken, clusterID: r.clusterID)
        // One leaf more than the page tells whether there is a next page.
        let limit = pageSize + 1
        func next(_ found: Int) -> String {
            found > pageSize ? PageToken.leaves(clusterID: r.clusterID, offset: offset + pageSize) : ""
        }
        let h = try handle(r.layerID)
        let config = clusterConfig(h)
        var response = V1.GetClusterLeavesResponse()
        switch config.algorithm {
        case .grid:
            ensureGridClusters(h, config.grid)
            return try read(r.layerID) { (h, _) throws(RPCError) in
                guard let id = Self.gridID(r.clusterID),
                      let leaves = try? h.layer.gridClusterLeaves(id, limit: limit, offset: offset)
                else { throw Self.notFound(r.clusterID, h, version: h.layer.version) }
                response.markers = leaves.prefix(pageSize).map(MarkerConversion.apiMarker)
                response.nextPageToken = next(leaves.count)
                response.layerVersion = h.layer.version
                return response
            }
        case .supercluster:
            let s = try superclusterSnapshot(h, config.supercluster)
            guard r.clusterID < UInt64(Int.max),
                  let leaves = try? s.index.leaves(of: Int(r.clusterID), limit: limit, offset: offset)
            else { throw Self.notFound(r.clusterID, h, version: s.layerVersion) }
            try read(r.layerID) { (h, _) throws(RPCError) in
                response.markers = leaves.prefix(pageSize).map { MarkerConversion.apiMarker(Self.snapshotRecord(s.markers[$0.id], h.layer)) }
            }
            response.nextPageToken = next(leaves.count)
            response.layerVersion = s.layerVersion
            return response
        }
    }

    /// GetClusterChildren: what a cluster splits into at the next zoom.
    public func getClusterChildren(_ r: V1.GetClusterChildrenRequest) throws(RPCError) -> V1.GetClusterChildrenResponse {
        let h = try handle(r.layerID)
        let config = clusterConfig(h)
        var response = V1.GetClusterChildrenResponse()
        switch config.algorithm {
        case .grid:
            ensureGridClusters(h, config.grid)
            return try read(r.layerID) { (h, _) throws(RPCError) in
                guard let id = Self.gridID(r.clusterID), let items = try? h.layer.gridClusterChildren(id)
                else { throw Self.notFound(r.clusterID, h, version: h.layer.version) }
                (response.clusters, response.markers) = Self.apiItems(items, h.layer, maxZoom: config.grid.maxZoom)
                response.layerVersion = h.layer.version
                return response
            }
        case .supercluster:
            let s = try superclusterSnapshot(h, config.supercluster)
            guard r.clusterID < UInt64(Int.max), let children = try? s.index.children(of: Int(r.clusterID))
            else { throw Self.notFound(r.clusterID, h, version: s.layerVersion) }
            (response.clusters, response.markers) = try apiItems(children, s, layerID: r.layerID)
            response.layerVersion = s.layerVersion
            return response
        }
    }

    /// GetClusterExpansionZoom: the first zoom at which a cluster splits.
    public func getClusterExpansionZoom(_ r: V1.GetClusterExpansionZoomRequest) throws(RPCError) -> V1.GetClusterExpansionZoomResponse {
        let h = try handle(r.layerID)
        let config = clusterConfig(h)
        var response = V1.GetClusterExpansionZoomResponse()
        switch config.algorithm {
        case .grid:
            ensureGridClusters(h, config.grid)
            return try read(r.layerID) { (h, _) throws(RPCError) in
                guard let id = Self.gridID(r.clusterID), let z = try? h.layer.gridClusterExpansionZoom(id)
                else { throw Self.notFound(r.clusterID, h, version: h.layer.version) }
                response.zoom = UInt32(z)
                response.layerVersion = h.layer.version
                return response
            }
        case .supercluster:
            let s = try superclusterSnapshot(h, config.supercluster)
            guard r.clusterID < UInt64(Int.max), let z = try? s.index.expansionZoom(of: Int(r.clusterID))
            else { throw Self.notFound(r.clusterID, h, version: s.layerVersion) }
            response.zoom = UInt32(max(0, z))
            response.layerVersion = s.layerVersion
            return response
        }
    }

    // MARK: Tiles

    /// The clusters and unclustered visible static markers of tile z/x/y (x wrapped, 0 <= y < 2^z,
    /// z <= 24) at zoom z, for the raster renderer (cluster bubbles), the point tiles and the HTTP
    /// gateway: the items whose position lies in the tile grown by `buffer` tile sides on each side
    /// (0: the tile only; with the grid algorithm every cell of zoom z then belongs to exactly one
    /// tile). An item appears in every tile whose grown area contains its position, with the same id,
    /// so neighbouring tiles agree. Throws NOT_FOUND for an unknown layer, INVALID_ARGUMENT for a bad tile.
    public func clusterTile(layerID: String, z: Int, x: Int, y: Int, buffer: Double = 0) throws(RPCError) -> ClusterTile {
        try Self.checkTile(z: z, x: x, y: y)
        let h = try handle(layerID)
        let config = clusterConfig(h)
        let box = MarkerLayer.tileBox(z: z, x: x, y: y, buffer: buffer)
        switch config.algorithm {
        case .grid:
            ensureGridClusters(h, config.grid)
            return try read(layerID) { (h, _) throws(RPCError) in
                ClusterTile(layerVersion: h.layer.version, algorithm: .grid,
                            items: try clusterTileItems(h, nil, box: box, z: z))
            }
        case .supercluster:
            let s = try superclusterSnapshot(h, config.supercluster)
            return ClusterTile(layerVersion: s.layerVersion, algorithm: .supercluster,
                               items: try read(layerID) { (h, _) throws(RPCError) in try clusterTileItems(h, s, box: box, z: z) })
        }
    }

    /// The items of `clusterTile` at zoom `z` whose position lies in `box` (the tile grown by the buffer):
    /// from the grid cluster index (which must be built), or from `snapshot` when given (the
    /// layer's supercluster snapshot). Call under the layer's read lock.
    func clusterTileItems(_ h: LayerHandle, _ snapshot: SuperclusterSnapshot?, box: ClusterBox, z: Int) throws(RPCError) -> [ClusterTileItem] {
        var out: [ClusterTileItem] = []
        guard let s = snapshot else {
            guard let items = h.layer.gridClusterItems(in: box, zoom: z) else {
                throw .unavailable("clusters are being rebuilt; retry")
            }
            out.reserveCapacity(items.count)
            for item in items {
                let t: ClusterTileItem
                switch item {
                case .cluster(let c): t = .cluster(id: Self.gridIDBit | c.id.rawValue, count: c.count, position: WorldPoint(x: c.x, y: c.y))
                case .marker(let slot, let m): t = .marker(slot: slot, m)
                }
                let p = t.position
                if box.contains(x: p.x, y: p.y) { out.append(t) }
            }
            return out
        }
        let west = ClusterPoint.longitude(worldX: box.minX), east = box.maxX == .max ? 180 : ClusterPoint.longitude(worldX: box.maxX)
        let north = ClusterPoint.latitude(worldY: box.minY), south = ClusterPoint.latitude(worldY: box.maxY)
        let wide = box.minX == 0 && box.maxX == .max
        for f in s.index.clusters(west: wide ? -180 : west, south: south, east: wide ? 180 : east, north: north, zoom: z) {
            if f.isCluster {
                let p = WorldPoint(LatLng(latitude: f.latitude, longitude: f.longitude))
                guard box.contains(x: p.x, y: p.y) else { continue }
                out.append(.cluster(id: UInt64(f.id), count: f.pointCount, position: p))
            } else {
                let m = s.markers[f.id]
                guard box.contains(x: m.world.x, y: m.world.y) else { continue }
                out.append(.marker(slot: m.slot, Self.snapshotRecord(m, h.layer)))
            }
        }
        return out
    }

    static func checkTile(z: Int, x: Int, y: Int) throws(RPCError) {
        guard z >= 0 && z <= 24 else { throw .invalidArgument("tile zoom \(z) is not within 0...24", field: "z") }
        let n = 1 << z
        guard x >= 0 && x < n && y >= 0 && y < n else {
            throw .invalidArgument("tile \(z)/\(x)/\(y) does not exist (x and y must be below \(n))", field: x >= 0 && x < n ? "y" : "x")
        }
    }
}

// A port of the behaviour of mapbox/supercluster 8.0.1 (ISC licence, (c) Mapbox): hierarchical
// greedy clustering on per-zoom KD-trees. Written from the documented algorithm so that outputs
// (clusters, positions, cluster ids and ORDER) match supercluster for the same input. The custom
// `map`/`reduce` properties and `generateId` options are not ported: point features carry their
// input index instead, which callers map to their own ids/properties.

/// Options of `SuperclusterIndex` (supercluster 8.0.1 defaults).
public struct SuperclusterOptions: Sendable, Equatable {
    /// Lowest zoom at which clusters are generated. Default 0.
    public var minZoom: Int
    /// Highest zoom at which points are clustered; above it every point is returned alone. Default 16.
    /// `maxZoom + 1` must be below 32 (cluster ids carry the zoom in 5 bits).
    public var maxZoom: Int
    /// Minimum number of points that form a cluster. Default 2.
    public var minPoints: Int
    /// Cluster radius in pixels (relative to `extent`). Default 40.
    public var radius: Double
    /// Tile extent in pixels; the radius is relative to it. Default 512.
    public var extent: Double
    /// KD-tree leaf node size; affects speed only. Default 64.
    public var nodeSize: Int

    public init(minZoom: Int = 0, maxZoom: Int = 16, minPoints: Int = 2, radius: Double = 40,
                extent: Double = 512, nodeSize: Int = 64) {
        self.minZoom = minZoom
        self.maxZoom = maxZoom
        self.minPoints = minPoints
        self.radius = radius
        self.extent = extent
        self.nodeSize = nodeSize
    }
}

/// A cluster or a single input point, as returned by `SuperclusterIndex` (supercluster's GeoJSON features).
public struct SuperclusterFeature: Sendable, Equatable {
    /// True for a cluster, false for a single input point.
    public var isCluster: Bool
    /// Cluster id (`cluster_id`) for a cluster; index of the point in the input array for a point.
    public var id: Int
    /// Number of input points (`point_count`); 1 for a point.
    public var pointCount: Int
    /// Longitude in degrees: the weighted cluster centre, or the point's input longitude.
    public var longitude: Double
    /// Latitude in degrees: the weighted cluster centre, or the point's input latitude.
    public var latitude: Double

    /// supercluster's `point_count_abbreviated`: "16", "1.2k", "35k".
    public var pointCountAbbreviated: String { SuperclusterIndex.abbreviate(pointCount) }
}

/// A feature of a tile (`getTile`): geometry in tile pixel coordinates (0...extent inside the tile,
/// beyond it in the buffer of `radius` pixels).
public struct SuperclusterTileFeature: Sendable, Equatable {
    public var isCluster: Bool
    /// Cluster id for a cluster; index of the point in the input array for a point.
    public var id: Int
    /// Number of input points; 1 for a point.
    public var pointCount: Int
    /// Tile pixel x (rounded like JavaScript `Math.round`).
    public var x: Int
    /// Tile pixel y (rounded like JavaScript `Math.round`).
    public var y: Int

    /// supercluster's `point_count_abbreviated`.
    public var pointCountAbbreviated: String { SuperclusterIndex.abbreviate(pointCount) }
}

/// Errors of `SuperclusterIndex`.
public enum SuperclusterError: Error, Equatable, Sendable {
    /// No cluster with the specified id (supercluster: "No cluster with the specified id.").
    case noClusterWithId(Int)
}

/// Immutable supercluster index (supercluster 8.0.1 behaviour): build once over points, then query.
///
/// Internals mirror supercluster v8: one flat `[Double]` per zoom with `stride` values per item
/// (x, y, zoom, id, parent, numPoints; see the `offset*` constants), and one KD-tree per zoom
/// (`trees[z]` for minZoom...maxZoom+1; `maxZoom + 1` holds the input points).
/// Cluster ids are `((index << 5) + (zoom + 1)) + pointCount` where `index` is the position, in the
/// data of zoom `zoom + 1`, of the item the cluster grew from, and `pointCount` the number of input points.
public struct SuperclusterIndex: Sendable {
    public let options: SuperclusterOptions
    /// Input points, in input order; nil for an input feature without geometry (skipped, but it keeps
    /// its index and counts in the cluster-id offset, as in supercluster).
    public let points: [LatLng?]

    static let offsetX = 0
    static let offsetY = 1
    static let offsetZoom = 2
    static let offsetId = 3
    static let offsetParent = 4
    static let offsetNum = 5
    static let stride = 6

    /// `levels[z]` for z in minZoom...maxZoom+1 (nil below minZoom).
    private var levels: [Level?]

    struct Level: Sendable {
        var tree: ClusterKDTree
        var data: [Double]
    }

    /// Builds the index (supercluster's `load`). Cost: O(n log n) per zoom level.
    public init(points: [LatLng], options: SuperclusterOptions = SuperclusterOptions()) {
        self.init(optionalPoints: points, options: options)
    }

    /// Builds the index over points some of which may be missing (nil: a feature without geometry).
    public init(optionalPoints points: [LatLng?], options: SuperclusterOptions = SuperclusterOptions()) {
        precondition(options.minZoom >= 0 && options.minZoom <= options.maxZoom && options.maxZoom + 1 < 32,
                     "SuperclusterOptions: need 0 <= minZoom <= maxZoom <= 30")
        precondition(options.radius > 0 && options.extent > 0, "SuperclusterOptions: radius and extent must be positive")
        self.options = options
        self.points = points
        let stride = Self.stride
        var data = [Double]()
        data.reserveCapacity(points.count * stride)
        for (i, p) in points.enumerated() {
            guard let p else { continue }
            // supercluster rounds projected input coordinates to Float32 (`fround`).
            let x = Double(Float(ClusterMath.lngX(p.longitude)))
            let y = Double(Float(ClusterMath.latY(p.latitude)))
            data.append(x); data.append(y); data.append(.infinity)
            data.append(Double(i)); data.append(-1); data.append(1)
        }
        var levels = [Level?](repeating: nil, count: options.maxZoom + 2)
        levels[options.maxZoom + 1] = Level(tree: ClusterKDTree(data: data, stride: stride, nodeSize: options.nodeSize), data: data)
        data = []
        var z = options.maxZoom
        while z >= options.minZoom {
            var upper = levels[z + 1]!
            levels[z + 1] = nil // keep `upper.data` uniquely referenced while clustering mutates it
            let next = Self.cluster(&upper, zoom: z, options: options, pointCount: points.count)
            levels[z + 1] = upper
            levels[z] = Level(tree: ClusterKDTree(data: next, stride: stride, nodeSize: options.nodeSize), data: next)
            z -= 1
        }
        self.levels = levels
    }

    /// Number of items (clusters and points) at `zoom` (clamped like the queries).
    public func itemCount(zoom: Int) -> Int { levels[limitZoom(zoom)]!.tree.count }

    /// Clusters and points in a bounding box at `zoom` (supercluster's `getClusters`).
    /// Longitudes are wrapped into [-180, 180]; `west > east` after wrapping means the box crosses the
    /// antimeridian (eastern part first); a box 360 degrees wide or more covers all longitudes.
    /// Latitudes are clamped to [-90, 90]. `zoom` is clamped to minZoom...maxZoom+1.
    public func clusters(west: Double, south: Double, east: Double, north: Double, zoom: Int) -> [SuperclusterFeature] {
        var minLng = ClusterMath.jsRem(ClusterMath.jsRem(west + 180, 360) + 360, 360) - 180
        let minLat = max(-90, min(90, south))
        var maxLng = east == 180 ? 180 : ClusterMath.jsRem(ClusterMath.jsRem(east + 180, 360) + 360, 360) - 180
        let maxLat = max(-90, min(90, north))
        if east - west >= 360 {
            minLng = -180
            maxLng = 180
        } else if minLng > maxLng {
            let eastern = clusters(west: minLng, south: minLat, east: 180, north: maxLat, zoom: zoom)
            let western = clusters(west: -180, south: minLat, east: maxLng, north: maxLat, zoom: zoom)
            return eastern + western
        }
        let level = levels[limitZoom(zoom)]!
        let ids = level.tree.range(ClusterMath.lngX(minLng), ClusterMath.latY(maxLat),
                                   ClusterMath.lngX(maxLng), ClusterMath.latY(minLat))
        return ids.map { feature(level.data, $0 * Self.stride) }
    }

    /// The features of tile z/x/y (supercluster's `getTile`), including a buffer of `radius` pixels and
    /// the wrapped copies across the antimeridian for the first and last tile columns. Nil when empty.
    public func tile(z: Int, x: Int, y: Int) -> [SuperclusterTileFeature]? {
        let level = levels[limitZoom(z)]!
        let z2 = pow2(z)
        let p = options.radius / options.extent
        let dx = Double(x), dy = Double(y)
        let top = (dy - p) / z2
        let bottom = (dy + 1 + p) / z2
        var features: [SuperclusterTileFeature] = []
        addTileFeatures(level.tree.range((dx - p) / z2, top, (dx + 1 + p) / z2, bottom), level.data, dx, dy, z2, &features)
        if x == 0 {
            addTileFeatures(level.tree.range(1 - p / z2, top, 1, bottom), level.data, z2, dy, z2, &features)
        }
        if Double(x) == z2 - 1 {
            addTileFeatures(level.tree.range(0, top, p / z2, bottom), level.data, -1, dy, z2, &features)
        }
        return features.isEmpty ? nil : features
    }

    /// The children of a cluster on the next zoom (supercluster's `getChildren`), in supercluster's order.
    /// Throws `SuperclusterError.noClusterWithId` for an id that names no cluster.
    public func children(of clusterId: Int) throws(SuperclusterError) -> [SuperclusterFeature] {
        let originId = originIndex(clusterId)
        let originZoom = self.originZoom(clusterId)
        guard originZoom >= 0, originZoom < levels.count, let level = levels[originZoom],
              originId >= 0, originId * Self.stride < level.data.count
        else { throw .noClusterWithId(clusterId) }
        let r = options.radius / (options.extent * pow2(originZoom - 1))
        let k0 = originId * Self.stride
        var children: [SuperclusterFeature] = []
        let target = Double(clusterId)
        level.tree.within(level.data[k0], level.data[k0 + 1], r) { id in
            let k = id * Self.stride
            if level.data[k + Self.offsetParent] == target { children.append(feature(level.data, k)) }
        }
        if children.isEmpty { throw .noClusterWithId(clusterId) }
        return children
    }

    /// Input points of a cluster, `limit` of them after skipping `offset` (supercluster's `getLeaves`;
    /// same order). Pass `Int.max` as `limit` for all. Throws for an id that names no cluster.
    public func leaves(of clusterId: Int, limit: Int = 10, offset: Int = 0) throws(SuperclusterError) -> [SuperclusterFeature] {
        var result: [SuperclusterFeature] = []
        let limit = limit <= 0 ? 10 : limit // supercluster: `limit || 10`
        _ = try appendLeaves(&result, clusterId, limit, max(0, offset), 0)
        return result
    }

    /// The zoom at which a cluster expands into several children (supercluster's `getClusterExpansionZoom`).
    public func expansionZoom(of clusterId: Int) throws(SuperclusterError) -> Int {
        var clusterId = clusterId
        var expansionZoom = originZoom(clusterId) - 1
        while expansionZoom <= options.maxZoom {
            let children = try children(of: clusterId)
            expansionZoom += 1
            if children.count != 1 || !children[0].isCluster { break }
            clusterId = children[0].id
        }
        return expansionZoom
    }

    // MARK: internals

    static func abbreviate(_ count: Int) -> String {
        if count >= 10000 { return "\(Int(ClusterMath.jsRound(Double(count) / 1000)))k" }
        if count >= 1000 {
            let tenths = Int(ClusterMath.jsRound(Double(count) / 100))
            return tenths % 10 == 0 ? "\(tenths / 10)k" : "\(tenths / 10).\(tenths % 10)k"
        }
        return "\(count)"
    }

    private func pow2(_ z: Int) -> Double {
        z >= 0 ? Double(sign: .plus, exponent: z, significand: 1) : 1 / Double(sign: .plus, exponent: -z, significand: 1)
    }

    private func limitZoom(_ z: Int) -> Int { max(options.minZoom, min(z, options.maxZoom + 1)) }

    private func originIndex(_ clusterId: Int) -> Int { (clusterId - points.count) >> 5 }

    /// JavaScript `%` semantics (negative for ids below the point count).
    private func originZoom(_ clusterId: Int) -> Int { (clusterId - points.count) % 32 }

    private func feature(_ data: [Double], _ k: Int) -> SuperclusterFeature {
        let num = Int(data[k + Self.offsetNum])
        let id = Int(data[k + Self.offsetId])
        if num > 1 {
            return SuperclusterFeature(isCluster: true, id: id, pointCount: num,
                                       longitude: ClusterMath.xLng(data[k]), latitude: ClusterMath.yLat(data[k + 1]))
        }
        let p = points[id]!
        return SuperclusterFeature(isCluster: false, id: id, pointCount: 1, longitude: p.longitude, latitude: p.latitude)
    }

    private func addTileFeatures(_ ids: [Int], _ data: [Double], _ x: Double, _ y: Double, _ z2: Double,
                                 _ features: inout [SuperclusterTileFeature]) {
        let extent = options.extent
        for i in ids {
            let k = i * Self.stride
            let num = Int(data[k + Self.offsetNum])
            let id = Int(data[k + Self.offsetId])
            let px: Double, py: Double
            if num > 1 {
                px = data[k]
                py = data[k + 1]
            } else {
                // supercluster re-projects single points from their input coordinates (not Float-rounded)
                let p = points[id]!
                px = ClusterMath.lngX(p.longitude)
                py = ClusterMath.latY(p.latitude)
            }
            features.append(SuperclusterTileFeature(
                isCluster: num > 1, id: id, pointCount: num,
                x: Int(ClusterMath.jsRound(extent * (px * z2 - x))),
                y: Int(ClusterMath.jsRound(extent * (py * z2 - y)))))
        }
    }

    private func appendLeaves(_ result: inout [SuperclusterFeature], _ clusterId: Int, _ limit: Int, _ offset: Int,
                              _ skipped: Int) throws(SuperclusterError) -> Int {
        var skipped = skipped
        for child in try children(of: clusterId) {
            if child.isCluster {
                if skipped + child.pointCount <= offset {
                    skipped += child.pointCount // skip the whole cluster
                } else {
                    skipped = try appendLeaves(&result, child.id, limit, offset, skipped)
                }
            } else if skipped < offset {
                skipped += 1
            } else {
                result.append(child)
            }
            if result.count == limit { break }
        }
        return skipped
    }

    /// Clusters the items of `upper` (zoom z+1) into the items of zoom `zoom` (supercluster's `_cluster`).
    /// Marks visited items (offsetZoom) and parents (offsetParent) in `upper.data`.
    private static func cluster(_ upper: inout Level, zoom: Int, options: SuperclusterOptions, pointCount: Int) -> [Double] {
        let r = options.radius / (options.extent * Double(sign: .plus, exponent: zoom, significand: 1))
        let stride = Self.stride
        let zoomD = Double(zoom)
        let minPoints = Double(options.minPoints)
        let tree = upper.tree
        var next = [Double]()
        next.reserveCapacity(upper.data.count / 2)
        var neighbors: [Int] = []
        upper.data.withUnsafeMutableBufferPointer { data in
            var i = 0
            while i < data.count {
                defer { i += stride }
                if data[i + offsetZoom] <= zoomD { continue }
                data[i + offsetZoom] = zoomD

                let x = data[i], y = data[i + 1]
                neighbors.removeAll(keepingCapacity: true)
                tree.within(x, y, r) { neighbors.append($0) }

                let numPointsOrigin = data[i + offsetNum]
                var numPoints = numPointsOrigin
                for n in neighbors {
                    let k = n * stride
                    if data[k + offsetZoom] > zoomD { numPoints += data[k + offsetNum] }
                }

                if numPoints > numPointsOrigin && numPoints >= minPoints {
                    var wx = x * numPointsOrigin
                    var wy = y * numPointsOrigin
                    let id = Double(((i / stride) << 5) + (zoom + 1) + pointCount)
                    for n in neighbors {
                        let k = n * stride
                        if data[k + offsetZoom] <= zoomD { continue }
                        data[k + offsetZoom] = zoomD
                        let numPoints2 = data[k + offsetNum]
                        wx += data[k] * numPoints2
                        wy += data[k + 1] * numPoints2
                        data[k + offsetParent] = id
                    }
                    data[i + offsetParent] = id
                    next.append(wx / numPoints); next.append(wy / numPoints); next.append(.infinity)
                    next.append(id); next.append(-1); next.append(numPoints)
                } else {
                    for j in 0..<stride { next.append(data[i + j]) }
                    if numPoints > 1 {
                        for n in neighbors {
                            let k = n * stride
                            if data[k + offsetZoom] <= zoomD { continue }
                            data[k + offsetZoom] = zoomD
                            for j in 0..<stride { next.append(data[k + j]) }
                        }
                    }
                }
            }
        }
        return next
    }
}

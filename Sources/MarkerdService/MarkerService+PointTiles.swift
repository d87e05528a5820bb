import MarkerdAPI
import MarkerdCore

// GetPointTile: point-data (Mapbox Vector Tile 2.1) tiles of a layer's visible static markers,
// clustered or not, kept to the layer's budget (`options.point_tile`) and cached by version in
// the tile cache shared with the raster tiles.
//
// Tile version: the layer version (supercluster clusters: the snapshot's layer version), so any
// change of the layer changes every point tile's version: a thinned or clustered tile depends on
// markers up to a cell away from it, further than the raster tiles' per-tile versions track.

/// A layer's point-tile budget with every default filled in (`V1.PointTileOptions`).
struct PointTileBudget: Sendable, Equatable {
    /// THIN, CLUSTER or NONE (never `.unspecified`, which means THIN).
    var mode: V1.PointTileMode
    /// Most features of one tile.
    var maxFeatures: Int
    /// Most bytes of one encoded tile.
    var maxBytes: Int

    /// Allowed `max_features`.
    static let featureRange = 256...1_000_000
    /// Allowed `max_bytes`: 4 KiB to 64 MiB (the default `--max-message-bytes`).
    static let byteRange = 4096...(64 << 20)

    init(_ o: V1.PointTileOptions?) {
        mode = o?.mode ?? .unspecified
        if mode == .unspecified { mode = .thin }
        maxFeatures = Int(o?.maxFeatures ?? V1.PointTileOptions.defaultMaxFeatures)
        maxBytes = Int(o?.maxBytes ?? V1.PointTileOptions.defaultMaxBytes)
    }

    /// `o` with every default filled in, or INVALID_ARGUMENT for a value out of range.
    static func resolve(_ o: V1.PointTileOptions?) throws(RPCError) -> V1.PointTileOptions {
        let b = PointTileBudget(o)
        guard featureRange.contains(b.maxFeatures) else {
            throw .invalidArgument("options.point_tile.max_features \(b.maxFeatures) must be within \(featureRange.lowerBound)...\(featureRange.upperBound)", field: "options.point_tile.max_features")
        }
        guard byteRange.contains(b.maxBytes) else {
            throw .invalidArgument("options.point_tile.max_bytes \(b.maxBytes) must be within \(byteRange.lowerBound)...\(byteRange.upperBound)", field: "options.point_tile.max_bytes")
        }
        return V1.PointTileOptions(mode: b.mode, maxFeatures: UInt32(b.maxFeatures), maxBytes: UInt32(b.maxBytes))
    }
}

/// One feature of a point tile.
enum PointTileFeature {
    /// A cluster: its API id, member count and position.
    case cluster(id: UInt64, count: Int, position: WorldPoint)
    /// A visible static marker (`slot`: its feature id); `count`: in a thinned tile, the markers
    /// of the cell it stands for (its `point_count`), else nil.
    case marker(slot: Int32, MarkerRecord, count: Int?)

    init(_ item: ClusterTileItem) {
        switch item {
        case .cluster(let id, let count, let p): self = .cluster(id: id, count: count, position: p)
        case .marker(let slot, let m): self = .marker(slot: slot, m, count: nil)
        }
    }

    var position: WorldPoint {
        switch self {
        case .cluster(_, _, let p): p
        case .marker(_, let m, _): WorldPoint(m.position)
        }
    }
}

extension MarkerService {
    /// Buffer around point tiles, as a fraction of the tile side (64 units of 4096).
    static let pointTileBuffer = 1.0 / 64

    /// Property names markerd sets itself; marker attributes with these names are left out.
    static let reservedTileKeys: Set<String> = ["id", "cluster", "cluster_id", "point_count", "point_count_abbreviated"]

    /// GetPointTile: an MVT with one layer "markers" of POINT features in tile z/x/y (with a buffer
    /// of 1/64 of the tile): visible static markers (feature id = the marker's slot, property `id` =
    /// its string id, attributes as string properties), or with `clustered` the layer's clusters at
    /// zoom z (`cluster=true`, `cluster_id`, `point_count`, `point_count_abbreviated`; feature id =
    /// cluster id) and its unclustered markers. The version is the layer version, or, when the
    /// tile may show supercluster clusters (`clustered` or mode CLUSTER), their snapshot's;
    /// `known_version` equal to it -> `not_modified` and no bytes.
    ///
    /// Budget (`options.point_tile`, `PointTileBudget`): a tile holds at most `max_features`
    /// features (default 4,096) and `max_bytes` bytes (default 500,000). A tile whose markers fit
    /// holds them all, as before. Otherwise, by `mode`:
    /// - THIN (default): one marker per non-empty cell of the layer's grid clustering (the
    ///   finest zoom whose cells fit: at most 2^p x 2^p cells per tile side, 2^(2p) <= max_features,
    ///   halved until both limits hold), the cell's member nearest its centre of mass
    ///   (`GridClusterIndex.cellSamples`), with `point_count` = the markers of its cell.
    /// - CLUSTER: the layer's clusters at zoom z (as `clustered`); thinned as THIN if still over.
    /// - NONE: RESOURCE_EXHAUSTED, naming the budget.
    /// Clustered tiles over the budget are thinned (NONE: RESOURCE_EXHAUSTED) as well; above
    /// `clustering.max_zoom`, where every cluster is one marker, they are unclustered tiles. When even
    /// one marker per cell of the tile's size is over `max_bytes` (huge attributes) or the layer's
    /// cells are too fine to fit `max_features` (a tiny `clustering.radius_px`), RESOURCE_EXHAUSTED.
    /// Work per request is bounded by the budget: markers are counted from the grid cluster index's
    /// cell counts and thinned from its cells, never read one by one beyond the budget.
    ///
    /// Cached in `tileCache` (with the raster tiles, under `TileCache.Key.Kind.point`) by the layer
    /// version (unique across layer instances: `VersionCeiling`), so a repeated request for an unchanged tile is a
    /// lookup; the bytes depend only on the layer's content and options and on the request.
    /// Supercluster clusters are cached only while their snapshot is the layer's current version.
    public func getPointTile(_ r: V1.GetPointTileRequest) throws(RPCError) -> V1.GetPointTileResponse {
        let z = Int(r.z), x = Int(r.x), y = Int(r.y)
        try Self.checkTile(z: z, x: x, y: y)
        let extent = Int(r.extent ?? 4096)
        guard extent >= 16 && extent <= 65536 else { throw .invalidArgument("extent \(extent) is not within 16...65536", field: "extent") }
        let h = try handle(r.layerID)
        let (config, budget) = h.lock.withReadLock { (LayerClustering(h.options.clustering), PointTileBudget(h.options.pointTile)) }
        // Counting and thinning read the grid cluster index (built once if the layer has none).
        ensureGridClusters(h, config.grid)
        let snapshot = config.algorithm == .supercluster && (r.clustered || budget.mode == .cluster)
            ? try superclusterSnapshot(h, config.supercluster) : nil
        return try read(r.layerID) { (h, _) throws(RPCError) in
            let version = snapshot?.layerVersion ?? h.layer.version
            if r.knownVersion != 0 && r.knownVersion == version {
                return V1.GetPointTileResponse(mvt: [], version: version, notModified: true)
            }
            let build = { () throws(RPCError) -> TileCache.Tile in
                TileCache.Tile(png: try self.pointTileBytes(h, config, budget, snapshot, r, extent: extent), empty: false)
            }
            guard snapshot == nil || snapshot?.layerVersion == h.layer.version else {
                return V1.GetPointTileResponse(mvt: try build().png, version: version, notModified: false)
            }
            let key = TileCache.Key(layer: h.id, z: z, x: r.x, y: r.y, tileSize: 0, density: 0,
                                    version: h.layer.version,
                                    kind: .point(extent: extent, clustered: r.clustered))
            return V1.GetPointTileResponse(mvt: try tileCache.tile(key, render: build).png, version: version, notModified: false)
        }
    }

    /// The encoded point tile of `r` within `budget` (see `getPointTile`). Call under the layer's
    /// read lock, with the grid clusters built; `snapshot`: the supercluster snapshot when the
    /// layer's clusters are supercluster's and the tile may show them.
    func pointTileBytes(_ h: LayerHandle, _ config: LayerClustering, _ budget: PointTileBudget, _ snapshot: SuperclusterSnapshot?,
                        _ r: V1.GetPointTileRequest, extent: Int) throws(RPCError) -> [UInt8] {
        let z = Int(r.z), x = Int(r.x), y = Int(r.y)
        guard let index = h.layer.gridClusterIndex else { throw .unavailable("clusters are being rebuilt; retry") }
        let box = MarkerLayer.tileBox(z: z, x: x, y: y, buffer: Self.pointTileBuffer)
        func over(_ what: String) -> RPCError {
            .resourceExhausted("point tile \(z)/\(x)/\(y) of layer \"\(h.id)\" would hold \(what) (options.point_tile); "
                + "use point_tile.mode THIN or CLUSTER, raise the budget, or ask for a deeper zoom")
        }
        // Above the clusters' max zoom every marker is alone: clusters are the markers themselves.
        let clustersDiffer = z <= config.grid.maxZoom
        var features: [PointTileFeature]?
        if r.clustered && clustersDiffer {
            features = try clusterTileItems(h, snapshot, box: box, z: z).map(PointTileFeature.init)
        } else if index.count(in: box, atMost: budget.maxFeatures) <= budget.maxFeatures {
            // Above the cluster max zoom: every marker in the box, exactly.
            features = (h.layer.gridClusterItems(in: box, zoom: config.grid.maxZoom + 1) ?? []).compactMap { item in
                guard case .marker(let slot, let m) = item else { return nil }
                return .marker(slot: slot, m, count: nil)
            }
        } else if budget.mode == .none {
            throw over("more than \(budget.maxFeatures) features")
        } else if budget.mode == .cluster && clustersDiffer {
            features = try clusterTileItems(h, snapshot, box: box, z: z).map(PointTileFeature.init)
        }
        /// The tile of `f`, or nil when it is over `max_bytes` (not encoded at all when its strings alone are).
        func encoded(_ f: [PointTileFeature]) -> [UInt8]? {
            guard !Self.stringsExceed(f, budget.maxBytes) else { return nil }
            let bytes = Self.vectorLayer(f, z: z, x: x, y: y, extent: extent).encodedTile()
            return bytes.count <= budget.maxBytes ? bytes : nil
        }
        if let f = features, f.count <= budget.maxFeatures {
            if let bytes = encoded(f) { return bytes }
            if budget.mode == .none { throw over("more than \(budget.maxBytes) bytes") }
        } else if budget.mode == .none, let f = features {
            throw over("\(f.count) features, more than \(budget.maxFeatures)")
        }
        // Thin: from cells of about 2^p x 2^p per tile side (2^(2p) <= max_features) to one per tile.
        let k = config.grid.cellsPerTileLog2
        let p = (Int.bitWidth - 1 - budget.maxFeatures.leadingZeroBitCount) / 2
        let coarsest = max(0, z - k)
        for t in stride(from: min(max(z + p - k, coarsest), 29 - k), through: coarsest, by: -1) {
            guard let samples = index.cellSamples(in: box, zoom: t, limit: budget.maxFeatures) else { continue }
            let thinned = samples.compactMap { s in
                h.layer.markerRecord(slot: s.point.id).map { PointTileFeature.marker(slot: s.point.id, $0, count: s.count) }
            }
            if let bytes = encoded(thinned) { return bytes }
        }
        throw .resourceExhausted("point tile \(z)/\(x)/\(y) of layer \"\(h.id)\" does not fit options.point_tile (\(budget.maxFeatures) "
            + "features, \(budget.maxBytes) bytes) even thinned to one marker per cell of the layer's grid clustering: "
            + "the markers' attributes are too large or clustering.radius_px too small")
    }

    /// Whether an MVT of `features` must hold more than `maxBytes` bytes because the distinct
    /// strings of its markers (ids and the attribute values it keeps, each once in the layer's
    /// value table) already add up to more. Reads at most about `maxBytes` bytes of strings, so a
    /// tile of huge attributes is refused before anything is encoded.
    static func stringsExceed(_ features: [PointTileFeature], _ maxBytes: Int) -> Bool {
        var seen = Set<String>(), total = 0
        func add(_ s: String) -> Bool {
            if seen.insert(s).inserted { total += s.utf8.count }
            return total > maxBytes
        }
        for case .marker(_, let m, _) in features {
            if add(m.id) { return true }
            for (k, v) in m.attributes where !reservedTileKeys.contains(k) { if add(v) { return true } }
        }
        return false
    }

    /// Tile coordinates of a world point in tile z/x/y with `extent` units (x taken across the
    /// antimeridian when that is nearer the tile).
    static func tileCoordinates(_ p: WorldPoint, z: Int, x: Int, y: Int, extent: Int) -> (Int32, Int32) {
        let side = Double(UInt64(1) << UInt64(32 - z))
        let x0 = Double(x) * side, y0 = Double(y) * side
        var dx = Double(p.x) - x0 - side / 2
        let world = 4_294_967_296.0
        if dx >= world / 2 { dx -= world } else if dx < -world / 2 { dx += world }
        dx += side / 2
        let dy = Double(p.y) - y0
        let scale = Double(extent) / side
        return (Int32((dx * scale).rounded(.down)), Int32((dy * scale).rounded(.down)))
    }

    static func vectorLayer(_ features: [PointTileFeature], z: Int, x: Int, y: Int, extent: Int) -> VectorTilePointLayer {
        var layer = VectorTilePointLayer(name: "markers", extent: UInt32(extent))
        layer.features.reserveCapacity(features.count)
        for feature in features {
            let (tx, ty) = tileCoordinates(feature.position, z: z, x: x, y: y, extent: extent)
            switch feature {
            case .cluster(let id, let count, _):
                layer.features.append(.init(id: id, x: tx, y: ty, properties: [
                    ("cluster", .bool(true)), ("cluster_id", .uint(id)), ("point_count", .uint(UInt64(count))),
                    ("point_count_abbreviated", .string(SuperclusterFeature.abbreviate(count))),
                ]))
            case .marker(let slot, let m, let count):
                var props: [(key: String, value: VectorTilePointLayer.Value)] = [("id", .string(m.id))]
                if let count { props.append(("point_count", .uint(UInt64(count)))) }
                for k in m.attributes.keys.sorted() where !reservedTileKeys.contains(k) {
                    props.append((k, .string(m.attributes[k]!)))
                }
                layer.features.append(.init(id: UInt64(slot), x: tx, y: ty, properties: props))
            }
        }
        return layer
    }
}

extension SuperclusterFeature {
    /// supercluster's `point_count_abbreviated` for a count: "16", "1.2k", "35k".
    static func abbreviate(_ count: Int) -> String {
        func jsRound(_ x: Double) -> Int { Int((x + 0.5).rounded(.down)) }
        if count >= 10000 { return "\(jsRound(Double(count) / 1000))k" }
        if count >= 1000 {
            let tenths = jsRound(Double(count) / 100)
            return tenths % 10 == 0 ? "\(tenths / 10)k" : "\(tenths / 10).\(tenths % 10)k"
        }
        return "\(count)"
    }
}

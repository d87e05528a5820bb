// V1+Clusters.swift: Clustering: clusters, leaves, children, expansion zoom.
// Types mirror Protos/markerd/v1/markerd.proto; see `V1` for the field conventions.
private import CMarkerdProto
private import CProtobufC

extension V1 {
    /// The proto message `Cluster`.
    public struct Cluster: ProtoMessage {
        /// Stable while the cluster exists; NOT_FOUND once the layer changed it away.
        /// Proto field `id` = 1; absent decodes to 0, which is not encoded.
        public var id: UInt64 = 0
        /// Proto field `marker_count` = 2; absent decodes to 0, which is not encoded.
        public var markerCount: UInt64 = 0
        /// Weighted centre of the members.
        /// Proto field `position` = 3.
        public var position: LatLng? = nil
        /// Bounds of the members.
        /// Proto field `bounds` = 4.
        public var bounds: Bounds? = nil
        /// First zoom at which the cluster splits.
        /// Proto field `expansion_zoom` = 5; absent decodes to 0, which is not encoded.
        public var expansionZoom: UInt32 = 0

        public init() {}

        public init(
            id: UInt64 = 0,
            markerCount: UInt64 = 0,
            position: LatLng? = nil,
            bounds: Bounds? = nil,
            expansionZoom: UInt32 = 0
        ) {
            self.id = id
            self.markerCount = markerCount
            self.position = position
            self.bounds = bounds
            self.expansionZoom = expansionZoom
        }
    }

    /// The proto message `GetClustersRequest`.
    public struct GetClustersRequest: ProtoMessage {
        /// Proto field `layer_id` = 1; absent decodes to "", which is not encoded.
        public var layerID: String = ""
        /// Finite degrees. Longitudes wrap (west > east after wrapping crosses the antimeridian; 360
        /// degrees or more is the whole world) and latitudes are clamped, as supercluster does.
        /// supercluster: the items whose position lies in the bounds. grid: every item in the bounds,
        /// plus those of the grid cells next to them: each item lies within the bounds grown by 4 cells
        /// on every side (a cell is extent / 2^round(log2(extent / radius_px)) tile px: 64 of 512 with
        /// the defaults, so the margin is half a tile at that zoom); exact above max_zoom.
        /// Proto field `bounds` = 2.
        public var bounds: Bounds? = nil
        /// Integer zoom 0-22 (fractions are floored, as supercluster does).
        /// Proto field `zoom` = 3; absent decodes to 0, which is not encoded.
        public var zoom: Double = 0

        public init() {}

        public init(
            layerID: String = "",
            bounds: Bounds? = nil,
            zoom: Double = 0
        ) {
            self.layerID = layerID
            self.bounds = bounds
            self.zoom = zoom
        }
    }

    /// The proto message `GetClustersResponse`.
    public struct GetClustersResponse: ProtoMessage {
        /// Proto field `clusters` = 1.
        public var clusters: [Cluster] = []
        /// Markers not in any cluster (visible static markers only; live markers are never clustered).
        /// Proto field `markers` = 2.
        public var markers: [Marker] = []
        /// The layer version the clusters reflect (supercluster snapshots may lag behind).
        /// Proto field `layer_version` = 3; absent decodes to 0, which is not encoded.
        public var layerVersion: UInt64 = 0
        /// The layer's algorithm (never UNSPECIFIED). (Field 4 was its name as a string.)
        /// Proto field `algorithm` = 5; absent decodes to .unspecified, which is not encoded.
        public var algorithm: ClusterAlgorithm = .unspecified

        public init() {}

        public init(
            clusters: [Cluster] = [],
            markers: [Marker] = [],
            layerVersion: UInt64 = 0,
            algorithm: ClusterAlgorithm = .unspecified
        ) {
            self.clusters = clusters
            self.markers = markers
            self.layerVersion = layerVersion
            self.algorithm = algorithm
        }
    }

    /// The proto message `GetClusterLeavesRequest`.
    public struct GetClusterLeavesRequest: ProtoMessage {
        /// Proto field `layer_id` = 1; absent decodes to "", which is not encoded.
        public var layerID: String = ""
        /// Proto field `cluster_id` = 2; absent decodes to 0, which is not encoded.
        public var clusterID: UInt64 = 0
        /// Leaves per page, 0-100,000; 0 means 10.
        /// Proto field `page_size` = 3; absent decodes to 0, which is not encoded.
        public var pageSize: UInt32 = 0
        /// See the paging rule in the header; a token is for the cluster it came with. (Field 4 was
        /// `offset`.)
        /// Proto field `page_token` = 5; absent decodes to "", which is not encoded.
        public var pageToken: String = ""

        public init() {}

        public init(
            layerID: String = "",
            clusterID: UInt64 = 0,
            pageSize: UInt32 = 0,
            pageToken: String = ""
        ) {
            self.layerID = layerID
            self.clusterID = clusterID
            self.pageSize = pageSize
            self.pageToken = pageToken
        }
    }

    /// The proto message `GetClusterLeavesResponse`.
    public struct GetClusterLeavesResponse: ProtoMessage {
        /// In the cluster's leaf order (the same for every page while the cluster exists).
        /// Proto field `markers` = 1.
        public var markers: [Marker] = []
        /// Proto field `layer_version` = 2; absent decodes to 0, which is not encoded.
        public var layerVersion: UInt64 = 0
        /// Proto field `next_page_token` = 3; absent decodes to "", which is not encoded.
        public var nextPageToken: String = ""

        public init() {}

        public init(
            markers: [Marker] = [],
            layerVersion: UInt64 = 0,
            nextPageToken: String = ""
        ) {
            self.markers = markers
            self.layerVersion = layerVersion
            self.nextPageToken = nextPageToken
        }
    }

    /// The proto message `GetClusterChildrenRequest`.
    public struct GetClusterChildrenRequest: ProtoMessage {
        /// Proto field `layer_id` = 1; absent decodes to "", which is not encoded.
        public var layerID: String = ""
        /// Proto field `cluster_id` = 2; absent decodes to 0, which is not encoded.
        public var clusterID: UInt64 = 0

        public init() {}

        public init(
            layerID: String = "",
            clusterID: UInt64 = 0
        ) {
            self.layerID = layerID
            self.clusterID = clusterID
        }
    }

    /// The proto message `GetClusterChildrenResponse`.
    public struct GetClusterChildrenResponse: ProtoMessage {
        /// Proto field `clusters` = 1.
        public var clusters: [Cluster] = []
        /// Proto field `markers` = 2.
        public var markers: [Marker] = []
        /// Proto field `layer_version` = 3; absent decodes to 0, which is not encoded.
        public var layerVersion: UInt64 = 0

        public init() {}

        public init(
            clusters: [Cluster] = [],
            markers: [Marker] = [],
            layerVersion: UInt64 = 0
        ) {
            self.clusters = clusters
            self.markers = markers
            self.layerVersion = layerVersion
        }
    }

    /// The proto message `GetClusterExpansionZoomRequest`.
    public struct GetClusterExpansionZoomRequest: ProtoMessage {
        /// Proto field `layer_id` = 1; absent decodes to "", which is not encoded.
        public var layerID: String = ""
        /// Proto field `cluster_id` = 2; absent decodes to 0, which is not encoded.
        public var clusterID: UInt64 = 0

        public init() {}

        public init(
            layerID: String = "",
            clusterID: UInt64 = 0
        ) {
            self.layerID = layerID
            self.clusterID = clusterID
        }
    }

    /// The proto message `GetClusterExpansionZoomResponse`.
    public struct GetClusterExpansionZoomResponse: ProtoMessage {
        /// Proto field `zoom` = 1; absent decodes to 0, which is not encoded.
        public var zoom: UInt32 = 0
        /// Proto field `layer_version` = 2; absent decodes to 0, which is not encoded.
        public var layerVersion: UInt64 = 0

        public init() {}

        public init(
            zoom: UInt32 = 0,
            layerVersion: UInt64 = 0
        ) {
            self.zoom = zoom
            self.layerVersion = layerVersion
        }
    }
}

// MARK: - protobuf-c bridging

extension V1.Cluster: CBridged {
    static var protoName: String { "Cluster" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__cluster__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__Cluster.self)
        self.init(
            id: c.id,
            markerCount: c.marker_count,
            position: try swiftMessage(c.position),
            bounds: try swiftMessage(c.bounds),
            expansionZoom: c.expansion_zoom
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__Cluster()
        markerd__v1__cluster__init(&c)
        setPlain(self.id, &c.has_id, &c.id)
        setPlain(self.markerCount, &c.has_marker_count, &c.marker_count)
        c.position = arena.message(self.position)
        c.bounds = arena.message(self.bounds)
        setPlain(self.expansionZoom, &c.has_expansion_zoom, &c.expansion_zoom)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.GetClustersRequest: CBridged {
    static var protoName: String { "GetClustersRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__get_clusters_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__GetClustersRequest.self)
        self.init(
            layerID: try swiftString(c.layer_id, "GetClustersRequest.layer_id"),
            bounds: try swiftMessage(c.bounds),
            zoom: c.zoom
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__GetClustersRequest()
        markerd__v1__get_clusters_request__init(&c)
        c.layer_id = arena.cString(self.layerID)
        c.bounds = arena.message(self.bounds)
        setPlain(self.zoom, &c.has_zoom, &c.zoom)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.GetClustersResponse: CBridged {
    static var protoName: String { "GetClustersResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__get_clusters_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__GetClustersResponse.self)
        self.init(
            clusters: try swiftMessages(c.n_clusters, c.clusters),
            markers: try swiftMessages(c.n_markers, c.markers),
            layerVersion: c.layer_version,
            algorithm: swiftEnum(c.algorithm)
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__GetClustersResponse()
        markerd__v1__get_clusters_response__init(&c)
        (c.n_clusters, c.clusters) = arena.messages(self.clusters)
        (c.n_markers, c.markers) = arena.messages(self.markers)
        setPlain(self.layerVersion, &c.has_layer_version, &c.layer_version)
        setPlain(self.algorithm, &c.has_algorithm, &c.algorithm)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.GetClusterLeavesRequest: CBridged {
    static var protoName: String { "GetClusterLeavesRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__get_cluster_leaves_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__GetClusterLeavesRequest.self)
        self.init(
            layerID: try swiftString(c.layer_id, "GetClusterLeavesRequest.layer_id"),
            clusterID: c.cluster_id,
            pageSize: c.page_size,
            pageToken: try swiftString(c.page_token, "GetClusterLeavesRequest.page_token")
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__GetClusterLeavesRequest()
        markerd__v1__get_cluster_leaves_request__init(&c)
        c.layer_id = arena.cString(self.layerID)
        setPlain(self.clusterID, &c.has_cluster_id, &c.cluster_id)
        setPlain(self.pageSize, &c.has_page_size, &c.page_size)
        c.page_token = arena.cString(self.pageToken)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.GetClusterLeavesResponse: CBridged {
    static var protoName: String { "GetClusterLeavesResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__get_cluster_leaves_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__GetClusterLeavesResponse.self)
        self.init(
            markers: try swiftMessages(c.n_markers, c.markers),
            layerVersion: c.layer_version,
            nextPageToken: try swiftString(c.next_page_token, "GetClusterLeavesResponse.next_page_token")
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__GetClusterLeavesResponse()
        markerd__v1__get_cluster_leaves_response__init(&c)
        (c.n_markers, c.markers) = arena.messages(self.markers)
        setPlain(self.layerVersion, &c.has_layer_version, &c.layer_version)
        c.next_page_token = arena.cString(self.nextPageToken)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.GetClusterChildrenRequest: CBridged {
    static var protoName: String { "GetClusterChildrenRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__get_cluster_children_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__GetClusterChildrenRequest.self)
        self.init(
            layerID: try swiftString(c.layer_id, "GetClusterChildrenRequest.layer_id"),
            clusterID: c.cluster_id
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__GetClusterChildrenRequest()
        markerd__v1__get_cluster_children_request__init(&c)
        c.layer_id = arena.cString(self.layerID)
        setPlain(self.clusterID, &c.has_cluster_id, &c.cluster_id)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.GetClusterChildrenResponse: CBridged {
    static var protoName: String { "GetClusterChildrenResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__get_cluster_children_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__GetClusterChildrenResponse.self)
        self.init(
            clusters: try swiftMessages(c.n_clusters, c.clusters),
            markers: try swiftMessages(c.n_markers, c.markers),
            layerVersion: c.layer_version
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__GetClusterChildrenResponse()
        markerd__v1__get_cluster_children_response__init(&c)
        (c.n_clusters, c.clusters) = arena.messages(self.clusters)
        (c.n_markers, c.markers) = arena.messages(self.markers)
        setPlain(self.layerVersion, &c.has_layer_version, &c.layer_version)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.GetClusterExpansionZoomRequest: CBridged {
    static var protoName: String { "GetClusterExpansionZoomRequest" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__get_cluster_expansion_zoom_request__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__GetClusterExpansionZoomRequest.self)
        self.init(
            layerID: try swiftString(c.layer_id, "GetClusterExpansionZoomRequest.layer_id"),
            clusterID: c.cluster_id
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__GetClusterExpansionZoomRequest()
        markerd__v1__get_cluster_expansion_zoom_request__init(&c)
        c.layer_id = arena.cString(self.layerID)
        setPlain(self.clusterID, &c.has_cluster_id, &c.cluster_id)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

extension V1.GetClusterExpansionZoomResponse: CBridged {
    static var protoName: String { "GetClusterExpansionZoomResponse" }

    static func cUnpack(allocator: UnsafeMutableRawPointer, bytes: UnsafeRawBufferPointer) -> UnsafeRawPointer? {
        UnsafeRawPointer(markerd__v1__get_cluster_expansion_zoom_response__unpack(allocator.assumingMemoryBound(to: ProtobufCAllocator.self), bytes.count, bytes.cBytes))
    }

    init(cMessage: UnsafeRawPointer) throws(InvalidUTF8) {
        let c = cMessage.load(as: Markerd__V1__GetClusterExpansionZoomResponse.self)
        self.init(
            zoom: c.zoom,
            layerVersion: c.layer_version
        )
    }

    func cMessage(in arena: Arena) -> UnsafeMutableRawPointer {
        var c = Markerd__V1__GetClusterExpansionZoomResponse()
        markerd__v1__get_cluster_expansion_zoom_response__init(&c)
        setPlain(self.zoom, &c.has_zoom, &c.zoom)
        setPlain(self.layerVersion, &c.has_layer_version, &c.layer_version)
        return UnsafeMutableRawPointer(arena.store(c))
    }
}

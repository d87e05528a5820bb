import MarkerdAPI

extension MarkerdClient {
    /// One page of `forEachViewportPage`: its markers and, from the first page, how many the
    /// whole walk returns.
    public struct ViewportPage: Sendable {
        public var markers: [V1.Marker]
        /// The query's markers in view: every visible marker of a NATIVE layer; of a TILED one,
        /// its live markers only (`static_in_view` counts the rest, which QueryViewport does
        /// not return).
        public var total: Int
        public var mode: V1.TilingMode
        public var staticInView: Int
    }

    /// Pages through QueryViewport over the whole world (zoom 0) and calls `body` with each page,
    /// in QueryViewport's page order, until the last page (`next_page_token` empty).
    ///
    /// QueryViewport returns visible markers only, and of a TILED layer only the live ones
    /// (see `ViewportPage.total`). `pageSize`: markers per page, 1...100,000 (default 10,000).
    /// Throws the first failed call's `ClientError`, or what `body` throws.
    ///
    /// The one place markerctl pages through QueryViewport (its paging fields live here).
    public func forEachViewportPage(_ layerID: String, pageSize: Int = 10_000,
                                    _ body: (ViewportPage) throws -> Void) throws {
        var request = V1.QueryViewportRequest()
        request.layerID = layerID
        var bounds = V1.Bounds()
        (bounds.west, bounds.south, bounds.east, bounds.north) = (-180, -TileRange.maxLatitude, 180, TileRange.maxLatitude)
        request.bounds = bounds
        request.zoom = 0
        request.pageSize = UInt32(pageSize)
        while true {
            let r = try queryViewport(request)
            try body(ViewportPage(markers: r.markers, total: Int(r.mode == .tiled ? r.liveInViewCount : r.staticInViewCount + r.liveInViewCount),
                                  mode: r.mode, staticInView: Int(r.staticInViewCount)))
            guard !r.nextPageToken.isEmpty else { return }
            request.pageToken = r.nextPageToken
        }
    }
}

import MarkerdAPI

extension MarkerdClient {
    /// Pages through ListMarkers and calls `body` with each page's markers (every marker of the
    /// layer: static, live and hidden, in storage order; a page may be empty), until the last
    /// page (`next_page_token` empty). A marker that stays in the layer meanwhile comes exactly
    /// once (unless the server restarts meanwhile). `pageSize`: markers per page, 1...100,000 (default 10,000).
    /// Throws the first failed call's `ClientError`, or what `body` throws.
    ///
    /// The one place markerctl pages through ListMarkers (its paging fields live here).
    public func forEachMarkerPage(_ layerID: String, pageSize: Int = 10_000, _ body: ([V1.Marker]) throws -> Void) throws {
        var request = V1.ListMarkersRequest(layerID: layerID, pageSize: UInt32(pageSize))
        while true {
            let r = try listMarkers(request)
            try body(r.markers)
            guard !r.nextPageToken.isEmpty else { return }
            request.pageToken = r.nextPageToken
        }
    }
}

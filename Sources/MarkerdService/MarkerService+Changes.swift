import MarkerdAPI
import MarkerdCore

/// The change feed's source (`ChangeFeed`) and GetChanges (each layer's `ChangeHistory`).
extension MarkerService {
    /// Records the change `c` made to `h`: in the layer's history (for GetChanges) and, when the
    /// feed has sinks, as the event `mutate` releases once the reply is settled. Call under `h`'s
    /// write lock (or, for a layer just created, before it is visible), after the change and
    /// before journaling it. `ids`: the ids changed, or removed for REMOVE; `markers` builds the
    /// event's markers (only when the feed is active).
    func noteChange(_ h: LayerHandle, _ c: MutationCommit, _ kind: V1.ChangeKind, ids: @autoclosure () -> [String] = [],
                    markers: () -> [V1.Marker] = { [] }) {
        guard let pending = c.pending else { return }  // replaying
        let ids = ids()
        let previous = h.changes.last
        switch kind {
        case .upsert, .update, .move, .remove, .clear, .drag:
            h.changes.append(version: h.layer.version, kind: kind, ids: ids)
        default:
            break
        }
        guard changeFeed.isActive else { return }
        var event = V1.ChangeEvent()
        event.layerID = h.id
        event.version = h.layer.version
        event.kind = kind
        event.previousVersion = previous
        if kind == .remove { event.removedIDs = ids } else { event.markers = markers() }
        pending.ticket = changeFeed.ticket()
        pending.event = event
    }

    /// The event markers of a MOVE or DRAG: id and position (as stored: see `WorldPoint.latLng`).
    static func movedMarker(_ id: String, _ p: LatLng) -> V1.Marker {
        var m = V1.Marker()
        m.id = id
        m.position = MarkerConversion.apiLatLng(p)
        return m
    }

    /// The event markers of an UPSERT or UPDATE: each marker's full state. Call under the lock.
    static func currentMarkers(_ h: LayerHandle, _ ids: [String]) -> [V1.Marker] {
        ids.compactMap { h.layer.marker(id: $0).map(MarkerConversion.apiMarker) }
    }

    /// GetChanges: the changes of a layer after `since_version`, from its history, paged by
    /// whole changes (a page ends after the change that brings it to `page_size` ids).
    /// - Throws: FAILED_PRECONDITION naming `since_version` when it is below the history's oldest
    ///   version (the message and the violation name that version) or above the layer's version;
    ///   INVALID_ARGUMENT for bad bounds, page size or token; NOT_FOUND for an unknown layer.
    public func getChanges(_ r: V1.GetChangesRequest) throws(RPCError) -> V1.GetChangesResponse {
        let limit = try PageToken.size(r.pageSize, default: 1000, maximum: MarkerConversion.maxBatch)
        let bounds = try r.bounds.map { (b) throws(RPCError) -> GeoBounds in
            let g = GeoBounds(west: b.west, south: b.south, east: b.east, north: b.north)
            try mapCoreError { () throws(MarkerdCoreError) in try g.validate() }
            return g
        }
        let since = try PageToken.changesSince(r.pageToken, sinceVersion: r.sinceVersion)
        return try read(r.layerID) { (h, _) throws(RPCError) in
            let floor = h.changes.floor
            guard since >= floor, since <= h.layer.version else {
                let message = since < floor
                    ? "since_version \(since) is older than the change history of layer \"\(r.layerID)\", which starts after version \(floor) (the history is bounded and not kept across restarts): reload the layer"
                    : "since_version \(since) is above layer \"\(r.layerID)\"'s version \(h.layer.version) (a version of another server or layer): reload the layer"
                throw RPCError(.failedPrecondition, message,
                               fieldViolations: [V1.FieldViolation(field: "since_version", description: "oldest version available: \(floor)")])
            }
            var response = V1.GetChangesResponse()
            var seen = Set<String>()
            var ids: [String] = []
            var complete = h.layer.version
            let entries = h.changes.after(since)
            for (n, e) in entries.enumerated() {
                if e.kind == .clear {
                    response.cleared = true
                    seen.removeAll()
                    ids.removeAll()
                }
                for id in e.ids where seen.insert(id).inserted { ids.append(id) }
                if ids.count >= limit && n + 1 < entries.count {
                    complete = e.version
                    response.nextPageToken = PageToken.changes(after: e.version)
                    break
                }
            }
            for id in ids {
                if let m = h.layer.marker(id: id), bounds.map({ Self.contains($0, m.position) }) ?? true {
                    response.markers.append(MarkerConversion.apiMarker(m))
                } else {
                    response.removedIDs.append(id)
                }
            }
            response.version = complete
            return response
        }
    }

    /// Whether `p` lies within `b` (edges included; across the antimeridian when west > east).
    public static func contains(_ b: V1.Bounds, _ p: V1.LatLng) -> Bool {
        contains(GeoBounds(west: b.west, south: b.south, east: b.east, north: b.north), LatLng(latitude: p.latitude, longitude: p.longitude))
    }

    /// Whether `p` lies within `b` (edges included; across the antimeridian when west > east).
    static func contains(_ b: GeoBounds, _ p: LatLng) -> Bool {
        guard p.latitude >= b.south, p.latitude <= b.north else { return false }
        return b.crossesAntimeridian ? (p.longitude >= b.west || p.longitude <= b.east)
                                     : (p.longitude >= b.west && p.longitude <= b.east)
    }
}

extension PageToken {
    /// GetChanges: the changes after version `version`: "c1.<hex version>".
    static func changes(after version: UInt64) -> String { "c1.\(String(version, radix: 16))" }

    /// The version a GetChanges page starts after: `sinceVersion` for the first page (an empty
    /// token), else the token's, which must not be below `sinceVersion`.
    /// - Throws: INVALID_ARGUMENT naming `page_token` for a token `changes(after:)` did not make.
    static func changesSince(_ token: String, sinceVersion: UInt64) throws(RPCError) -> UInt64 {
        if token.isEmpty { return sinceVersion }
        guard token.hasPrefix("c1."), token.utf8.count <= 19, let v = UInt64(token.dropFirst(3), radix: 16),
              changes(after: v) == token, v >= sinceVersion
        else {
            throw .invalidArgument("page_token \"\(token.prefix(64))\" is malformed (pass a previous response's next_page_token with the same since_version)", field: "page_token")
        }
        return v
    }
}

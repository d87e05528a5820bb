import MarkerdAPI
import MarkerdCore
import Synchronization

/// One fence event on its way out, with the fence's webhook (if it has one).
public struct FenceNotice: Sendable {
    public var event: V1.FenceEvent
    public var webhook: V1.FenceWebhook?
}

/// Receives the fence events of applied mutations. `deliver` is called once per mutation that
/// raised events, in apply order (the journal's order), after the mutation is durable and
/// before it is acknowledged; never for a write that failed or while recovering. It runs on the
/// journal's completion thread (in `--ephemeral` mode, under the layer's write lock), so it must
/// not block: queue the work and return.
public protocol FenceEventSink: AnyObject, Sendable {
    func deliver(_ notices: [FenceNotice])
}

/// The sinks attached to a service (webhooks, the change feed's publisher).
public final class FenceEventSinks: Sendable {
    private let sinks = Mutex<[any FenceEventSink]>([])

    /// Attaches a sink: it receives the events of mutations applied from now on.
    public func attach(_ sink: any FenceEventSink) { sinks.withLock { $0.append(sink) } }

    func deliver(_ notices: [FenceNotice]) {
        guard !notices.isEmpty else { return }
        for s in sinks.withLock({ $0 }) { s.deliver(notices) }
    }
}

/// Geofences (see the Fence messages in markerd.proto): CreateFence and DeleteFence are
/// mutations like the others (idempotency keys, journal, snapshots); every journaled change of a
/// marker in a layer with fences is checked against the fences near it (`FenceSet`), and the
/// events go to `fenceSinks` once the change is durable.
extension MarkerService {
    /// Fences per ListFences page: default and maximum.
    public static let defaultFencesPage = 100
    public static let maxFencesPage = 1_000
    /// Longest webhook URL, bytes.
    public static let maxWebhookURLBytes = 2_048

    /// The core fence for an API one, checked (INVALID_ARGUMENT naming the field under `fence`).
    static func compiledFence(_ f: V1.Fence) throws(RPCError) -> Fence {
        try MarkerConversion.checkName(f.fenceID, what: "fence.fence_id")
        let shape: FenceShape
        switch f.shape {
        case .bounds(let b)?:
            shape = .bounds(GeoBounds(west: b.west, south: b.south, east: b.east, north: b.north))
        case .circle(let c)?:
            guard let center = MarkerConversion.latLng(c.center) else {
                throw .invalidArgument("fence.circle.center is missing", field: "fence.circle.center")
            }
            shape = .circle(center: center, radiusMeters: c.radiusMeters)
        case .polygon(let p)?:
            guard p.rings.count <= FenceShape.maxRings else {
                throw .invalidArgument("fence.polygon.rings holds \(p.rings.count) rings, more than \(FenceShape.maxRings)", field: "fence.polygon.rings")
            }
            shape = .polygon(rings: p.rings.map { $0.points.map { LatLng(latitude: $0.latitude, longitude: $0.longitude) } })
        case nil:
            throw .invalidArgument("fence has no shape: set bounds, circle or polygon", field: "fence.shape")
        }
        let compiled = try mapCoreError { () throws(MarkerdCoreError) in try CompiledFenceShape(shape) }
        var detect = FenceDetect()
        for (i, k) in f.detect.enumerated() {
            let field = "fence.detect[\(i)]"
            let flag: FenceDetect
            switch k {
            case .enter: flag = .enter
            case .exit: flag = .exit
            case .inside: flag = .inside
            case .cross: flag = .cross
            default: throw .invalidArgument("\(field) is \(k.name): name ENTER, EXIT, INSIDE or CROSS", field: field)
            }
            guard !detect.contains(flag) else { throw .invalidArgument("\(field) \(k.name) is named twice", field: field) }
            detect.insert(flag)
        }
        guard !detect.isEmpty else {
            throw .invalidArgument("fence.detect is empty: name at least one of ENTER, EXIT, INSIDE, CROSS", field: "fence.detect")
        }
        var filter: FenceFilter?
        if let fl = f.filter {
            guard !fl.attribute.isEmpty else { throw .invalidArgument("fence.filter.attribute is empty", field: "fence.filter.attribute") }
            guard fl.attribute.utf8.count <= MarkerConversion.maxNameBytes * 2, fl.value.utf8.count <= 1024 else {
                throw .invalidArgument("fence.filter is too long (attribute at most \(MarkerConversion.maxNameBytes * 2), value at most 1024 bytes)", field: "fence.filter")
            }
            filter = FenceFilter(attribute: fl.attribute, value: fl.value)
        }
        if let w = f.webhook {
            guard w.url.utf8.count <= maxWebhookURLBytes, WebhookURL(w.url) != nil else {
                throw .invalidArgument("fence.webhook.url \"\(w.url.prefix(64))\" is not http://HOST:PORT/PATH of at most \(maxWebhookURLBytes) bytes", field: "fence.webhook.url")
            }
            if !w.secretName.isEmpty { try MarkerConversion.checkName(w.secretName, what: "fence.webhook.secret_name") }
        }
        return Fence(id: f.fenceID, shape: compiled, detect: detect, filter: filter)
    }

    func createFence(_ r: V1.CreateFenceRequest, _ c: MutationCommit) throws(RPCError) -> V1.CreateFenceResponse {
        guard var api = r.fence else { throw .invalidArgument("fence is missing", field: "fence") }
        guard api.layerID.isEmpty || api.layerID == r.layerID else {
            throw .invalidArgument("fence.layer_id \"\(api.layerID.prefix(64))\" is not the request's layer_id \"\(r.layerID.prefix(64))\"", field: "fence.layer_id")
        }
        let fence = try Self.compiledFence(api)
        api.layerID = r.layerID
        api.insideCount = 0
        return try write(r.layerID, c) { (h) throws(RPCError) in
            if h.fenceDefinitions[fence.id] != nil {
                // Replay converges by replacing (a fuzzy snapshot may hold the fence already).
                guard c.replaying else { throw .alreadyExists("fence \"\(fence.id)\" already exists in layer \"\(r.layerID)\"") }
                h.fences.remove(fence.id)
            }
            guard h.fences.count < FenceSet.maxFences else {
                throw .resourceExhausted("layer \"\(r.layerID)\" has \(FenceSet.maxFences) fences, the most a layer may have")
            }
            // Restoring a snapshot leaves the inside-sets to `finishRestores` (markers come later).
            h.fences.insert(fence, markersOf: c.replaying && h.layer.hasDeferredGrid ? nil : h.layer)
            h.fenceDefinitions[fence.id] = api
            var response = V1.CreateFenceResponse()
            response.fence = h.apiFence(api)
            try journalAppend(c, response: response.serializedBytes())
            return response
        }
    }

    func deleteFence(_ r: V1.DeleteFenceRequest, _ c: MutationCommit) throws(RPCError) -> V1.DeleteFenceResponse {
        try write(r.layerID, c) { (h) throws(RPCError) in
            guard h.fenceDefinitions.removeValue(forKey: r.fenceID) != nil else {
                throw .notFound("fence \"\(r.fenceID.prefix(64))\" not found in layer \"\(r.layerID)\"")
            }
            h.fences.remove(r.fenceID)
            let response = V1.DeleteFenceResponse()
            try journalAppend(c, response: response.serializedBytes())
            return response
        }
    }

    /// ListFences: a layer's fences in id order, paged like ListLayers.
    public func listFences(_ r: V1.ListFencesRequest) throws(RPCError) -> V1.ListFencesResponse {
        let pageSize = try PageToken.size(r.pageSize, default: Self.defaultFencesPage, maximum: Self.maxFencesPage)
        let after = try PageToken.fencesAfter(r.pageToken, layerID: r.layerID)
        return try read(r.layerID) { h, _ in
            var response = V1.ListFencesResponse()
            let page = h.fences.fences(after: after, limit: pageSize + 1)
            for f in page.prefix(pageSize) {
                if let api = h.fenceDefinitions[f.id] { response.fences.append(h.apiFence(api)) }
            }
            if page.count > pageSize { response.nextPageToken = PageToken.fences(layerID: r.layerID, after: page[pageSize - 1].id) }
            return response
        }
    }
}

extension LayerHandle {
    /// The API view of a fence, with its inside count. Call under a lock.
    func apiFence(_ api: V1.Fence) -> V1.Fence {
        var f = api
        f.insideCount = UInt64(fences.insideCount(api.fenceID) ?? 0)
        return f
    }

    /// The positions of markers `ids` before a change, for `raiseFenceEvents`; nil (no work)
    /// when the layer has no fences. Call under the write lock.
    func positionsBefore(_ ids: some Sequence<String>) -> [LatLng?]? {
        guard !fences.isEmpty else { return nil }
        return ids.map { layer.fencePoint(id: $0)?.position }
    }

    /// Checks the changed markers `ids` (their positions before the change in `before`, from
    /// `positionsBefore`) against the fences and adds their events to `c`. Call under the write
    /// lock, after the change and before `journalAppend`.
    func raiseFenceEvents(_ ids: some Sequence<String>, before: [LatLng?]?, _ c: MutationCommit) {
        guard let before else { return }
        var hits: [FenceHit] = []
        for (i, id) in ids.enumerated() {
            let now = layer.fencePoint(id: id)
            fences.markerChanged(id, from: before[i], to: now?.position,
                                 attribute: { key in now.flatMap { layer.attributeValue(key, slot: $0.slot) } }, into: &hits)
        }
        notices(hits, c)
    }

    /// EXIT events for every marker inside a fence, before the layer is cleared.
    func raiseClearEvents(_ c: MutationCommit) {
        guard !fences.isEmpty else { return }
        var hits: [FenceHit] = []
        fences.removeAllMarkers(positions: { layer.fencePoint(id: $0)?.position }, into: &hits)
        notices(hits, c)
    }

    private func notices(_ hits: [FenceHit], _ c: MutationCommit) {
        guard !hits.isEmpty else { return }
        c.fenceNotices.reserveCapacity(c.fenceNotices.count + hits.count)
        for hit in hits {
            var e = V1.FenceEvent()
            e.fenceID = hit.fenceID
            e.layerID = id
            e.kind = V1.FenceEventKind(rawValue: Int32(hit.kind.rawValue)) ?? .unspecified
            e.markerID = hit.markerID
            e.position = MarkerConversion.apiLatLng(hit.position)
            e.layerVersion = layer.version
            e.atUnixMs = c.nowUnixMs
            c.fenceNotices.append(FenceNotice(event: e, webhook: fenceDefinitions[hit.fenceID]?.webhook))
        }
    }
}

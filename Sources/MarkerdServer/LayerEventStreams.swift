import Foundation
import MarkerdAPI
import MarkerdService
import MarkerdTransport
import Synchronization

/// The gateway's `/layers/{layer}/events`: a layer's changes as Server-Sent Events, from the
/// service's `ChangeFeed` (attached at the first stream). Each change is one `message` event
/// whose `id:` is the layer version after it and whose data is a JSON ``Change`` (only the
/// markers within the stream's bounding box, those outside listed as `left`); a client that
/// comes back with `Last-Event-ID` (or `?since=VERSION`) first gets one ``Change`` of kind
/// `changes` from GetChanges, or, when the history no longer reaches back that far (or the
/// server restarted), an event `reload` whose data is `{"oldest": VERSION}`: then it reloads
/// its view. A stream that falls 1 MiB behind (a slow client) is closed, never waited for.
final class LayerEventStreams: Sendable {
    /// One change as the browser gets it.
    struct Change: Encodable, Equatable {
        struct Marker: Encodable, Equatable { var id: String, lat: Double, lon: Double }
        /// "upsert", "update", "move", "remove", "clear", "drag", "layer_created",
        /// "layer_deleted", or "changes" (a catch-up: if `cleared`, drop every marker first).
        var kind: String
        var version: UInt64
        var markers: [Marker] = []
        /// Ids removed, or (with a bounding box) changed and now outside it.
        var removed: [String] = []
        var cleared: Bool? = nil
    }

    private final class Subscription: Sendable {
        let stream: HTTPBodyStream
        let bounds: V1.Bounds?
        init(stream: HTTPBodyStream, bounds: V1.Bounds?) { self.stream = stream; self.bounds = bounds }
    }

    private let service: MarkerService
    private let streams = Mutex<(attached: Bool, byLayer: [String: [ObjectIdentifier: Subscription]])>((false, [:]))

    init(service: MarkerService) { self.service = service }

    /// Opens a stream of `layer`'s changes (after `since`, if given) within `bounds`.
    /// - Throws: NOT_FOUND for an unknown layer.
    func open(layer: String, bounds: V1.Bounds?, since: UInt64?, keepAliveEvery: Duration) throws(RPCError) -> HTTPBodyStream {
        let version = try service.getLayer(V1.GetLayerRequest(layerID: layer)).layer?.version ?? 0
        let stream = HTTPBodyStream(keepAliveEvery: keepAliveEvery)
        let subscription = Subscription(stream: stream, bounds: bounds)
        let key = ObjectIdentifier(stream)
        stream.write(Array("retry: 2000\n\n".utf8))
        // Registered before catching up: events applied meanwhile come after the catch-up, and
        // the client skips those its catch-up already covers (their id is not above its version).
        let attach = streams.withLock { s -> Bool in
            s.byLayer[layer, default: [:]][key] = subscription
            defer { s.attached = true }
            return !s.attached
        }
        stream.onClose { [weak self] in self?.streams.withLock { _ = $0.byLayer[layer]?.removeValue(forKey: key) } }
        if attach { service.changeFeed.addSink { [weak self] event in self?.publish(event) } }
        if let since {
            do throws(RPCError) {
                var change = Change(kind: "changes", version: version, cleared: false)
                var request = V1.GetChangesRequest(layerID: layer, sinceVersion: since, bounds: bounds)
                repeat {
                    let page = try service.getChanges(request)
                    change.cleared = change.cleared! || page.cleared
                    if page.cleared { change.markers = []; change.removed = [] }
                    change.markers += page.markers.map { Change.Marker(id: $0.id, lat: $0.position?.latitude ?? 0, lon: $0.position?.longitude ?? 0) }
                    change.removed += page.removedIDs
                    change.version = page.version
                    request.pageToken = page.nextPageToken
                } while !request.pageToken.isEmpty
                stream.write(Self.sse(change))
            } catch where error.code == .failedPrecondition {
                let oldest = error.fieldViolations.first.map { $0.description.split(separator: " ").last.map(String.init) ?? "0" } ?? "0"
                stream.write(Array("event: reload\ndata: {\"oldest\": \(oldest)}\n\n".utf8))
            }
        }
        return stream
    }

    /// The feed's sink: writes `event` to its layer's streams (never waits: a full one closes).
    private func publish(_ event: V1.ChangeEvent) {
        let subscriptions = streams.withLock { Array(($0.byLayer[event.layerID] ?? [:]).values) }
        guard !subscriptions.isEmpty else { return }
        var whole: [UInt8]?
        for s in subscriptions {
            if let bounds = s.bounds {
                s.stream.write(Self.sse(Self.change(event, within: bounds)))
            } else {
                if whole == nil { whole = Self.sse(Self.change(event, within: nil)) }
                s.stream.write(whole!)
            }
        }
    }

    static func change(_ e: V1.ChangeEvent, within bounds: V1.Bounds?) -> Change {
        var c = Change(kind: kindName(e.kind), version: e.version, removed: e.removedIDs)
        for m in e.markers {
            let p = m.position ?? V1.LatLng()
            if let bounds, !MarkerService.contains(bounds, p) {
                c.removed.append(m.id)
            } else {
                c.markers.append(Change.Marker(id: m.id, lat: p.latitude, lon: p.longitude))
            }
        }
        return c
    }

    static func kindName(_ k: V1.ChangeKind) -> String {
        switch k {
        case .upsert: "upsert"
        case .update: "update"
        case .move: "move"
        case .remove: "remove"
        case .clear: "clear"
        case .drag: "drag"
        case .layerCreated: "layer_created"
        case .layerDeleted: "layer_deleted"
        default: "unspecified"
        }
    }

    /// One SSE message: `id: VERSION` and the JSON on one `data:` line.
    static func sse(_ c: Change) -> [UInt8] {
        let json = (try? JSONEncoder().encode(c)) ?? Data("{}".utf8)
        return Array("id: \(c.version)\ndata: ".utf8) + Array(json) + Array("\n\n".utf8)
    }
}

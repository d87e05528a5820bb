import MarkerdAPI
import MarkerdTransport
import Synchronization

/// What a ``ChangeSubscriber`` hands its app, in order.
public enum LayerChange: Sendable {
    /// A GetChanges page (catch-up): if `cleared`, drop every marker held first; then upsert
    /// `markers` and drop `removedIDs`.
    case changes(V1.GetChangesResponse)
    /// A feed event, newer than everything before it.
    case event(V1.ChangeEvent)
}

/// Keeps an app's copy of a layer current: subscribes to the change feed (`markerd --publish`),
/// catches up from the version the app holds with GetChanges, then applies events; when it
/// learns it missed events (an event's `previous_version` above the version it holds: NNG
/// dropped them, or the connection broke and came back) it catches up again from there.
///
///     let subscriber = try ChangeSubscriber(client: client, feedURL: "tcp://127.0.0.1:7451",
///                                           layerID: "fleet", since: loadedVersion)
///     try subscriber.run { change in apply(change) }   // until stop(); throws when history is gone
///
/// `run` throws ``ClientError`` FAILED_PRECONDITION when the server no longer holds the changes
/// after the app's version (its history is bounded and does not survive a restart): reload the
/// layer (e.g. ListMarkers or QueryViewport) and start a new subscriber from its version.
public final class ChangeSubscriber: Sendable {
    public let layerID: String
    private let client: MarkerdClient
    private let socket: NNGSubscriber
    private let held: Atomic<UInt64>
    private let stopped = Atomic<Bool>(false)

    /// Subscribes to `layerID`'s topic at `feedURL` (dialed in the background).
    /// - Parameters:
    ///   - since: the layer version the app holds (e.g. its last full load's `layer_version`).
    ///   - pollEvery: how often `run` wakes without events to check ``stop()``. Default 200 ms.
    /// - Throws: ``ClientError/transport(_:)`` for a bad URL.
    public init(client: MarkerdClient, feedURL: String, layerID: String, since: UInt64,
                pollEvery: Duration = .milliseconds(200)) throws(ClientError) {
        self.client = client
        self.layerID = layerID
        held = Atomic(since)
        do {
            socket = try NNGSubscriber(url: feedURL, topics: [Array("layer/\(layerID)/".utf8)], receiveTimeout: pollEvery)
        } catch {
            throw .transport(error)
        }
    }

    /// The layer version the app holds every change up to.
    public var version: UInt64 { held.load(ordering: .acquiring) }

    /// Catches up, then passes every change to `apply` on the calling thread until ``stop()``.
    /// - Throws: ``ClientError`` from GetChanges: FAILED_PRECONDITION when the history no
    ///   longer reaches back to ``version`` (reload), NOT_FOUND when the layer is gone; a
    ///   transport error when the server does not answer.
    public func run(_ apply: (LayerChange) -> Void) throws(ClientError) {
        try catchUp(apply)
        while !stopped.load(ordering: .acquiring) {
            let bytes: [UInt8]
            do { bytes = try socket.receive() } catch {
                if error == .timedOut { continue }
                if error == .closed { return }
                throw .transport(error)
            }
            let topic = "layer/\(layerID)/".utf8.count
            guard bytes.count >= topic, let feed = try? V1.FeedEvent(serializedBytes: Array(bytes[topic...])),
                  case .change(let event) = feed.event else { continue }
            let v = version
            if event.version <= v { continue }                 // already held (from a catch-up)
            if event.previousVersion > v { try catchUp(apply); continue }  // missed events: the page covers this one
            apply(.event(event))
            held.store(event.version, ordering: .releasing)
        }
    }

    /// GetChanges pages from ``version`` until complete.
    private func catchUp(_ apply: (LayerChange) -> Void) throws(ClientError) {
        var request = V1.GetChangesRequest()
        request.layerID = layerID
        request.sinceVersion = version
        repeat {
            let page: V1.GetChangesResponse = try client.call("GetChanges", request)
            apply(.changes(page))
            request.pageToken = page.nextPageToken
            if page.nextPageToken.isEmpty { held.store(page.version, ordering: .releasing) }
        } while !request.pageToken.isEmpty
    }

    /// Ends `run` (within `pollEvery`) and closes the socket. Idempotent.
    public func stop() {
        stopped.store(true, ordering: .releasing)
        socket.close()
    }
}

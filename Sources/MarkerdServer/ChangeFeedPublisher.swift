import MarkerdAPI
import MarkerdService
import MarkerdTransport

/// `--publish`: the change feed (`ChangeFeed`) on an NNG PUB socket. Each event goes out as one
/// message: the topic `layer/<layer id>/` (so that subscribing to `layer/a/` never takes layer
/// `ab`), then a `V1.FeedEvent` holding the `V1.ChangeEvent`. Fence events (as a
/// `FenceEventSink`) go out on `fence/<layer id>/<fence id>/`. Encoded and sent after the
/// write's reply (`ChangeFeed`), without waiting: NNG drops messages for a subscriber that reads too slowly (its
/// queue holds 1,024); it catches up with GetChanges.
final class ChangeFeedPublisher: Sendable {
    let socket: NNGPublisher

    /// Opens the PUB socket on `urls` (tcp://, ipc://).
    /// - Throws: `NNGError` when a URL cannot be listened on.
    init(urls: [String]) throws(NNGError) {
        socket = try NNGPublisher(listenURLs: urls)
    }

    /// The feed message of `event`: its topic, then the FeedEvent.
    static func message(_ event: V1.ChangeEvent) -> [UInt8] {
        var message = topic(layerID: event.layerID)
        message.append(contentsOf: V1.FeedEvent(event: .change(event)).serializedBytes())
        return message
    }

    /// The subscription topic of a layer's changes: "layer/<id>/".
    static func topic(layerID: String) -> [UInt8] { Array("layer/\(layerID)/".utf8) }

    /// Starts publishing `feed`'s events.
    func attach(to feed: ChangeFeed) {
        feed.addSink { [socket] event in
            do { try socket.send(Self.message(event)) } catch {
                // Only a closed socket (at shutdown) fails: nothing left to tell.
            }
        }
    }
}

extension ChangeFeedPublisher: FenceEventSink {
    /// The feed message of a fence event: its topic, then the FeedEvent.
    static func message(_ event: V1.FenceEvent) -> [UInt8] {
        var message = Array("fence/\(event.layerID)/\(event.fenceID)/".utf8)
        message.append(contentsOf: V1.FeedEvent(event: .fence(event)).serializedBytes())
        return message
    }

    /// Publishes the events (called once their mutation is durable, in apply order; never blocks).
    func deliver(_ notices: [FenceNotice]) {
        for notice in notices {
            do { try socket.send(Self.message(notice.event)) } catch {
                // Only a closed socket (at shutdown) fails: nothing left to tell.
            }
        }
    }
}

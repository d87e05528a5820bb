import Dispatch
import MarkerdAPI
import MarkerdService
import MarkerdTransport

/// markerd as a library: the service (recovered from the data directory), the RPC dispatcher
/// and the NNG REP server, wired together. `markerd` is a thin `main` around this; tests run it
/// in-process (inproc://, ipc://, tcp://127.0.0.1:0).
public final class MarkerServer: Sendable {
    public let configuration: MarkerdConfiguration
    public let service: MarkerService
    public let dispatcher: RPCDispatcher
    let transport: NNGReplyServer
    /// The HTTP gateway, when ``MarkerdConfiguration/httpAddress`` is set.
    public let gateway: TileGateway?

    /// Opens the service (loading the newest snapshot and replaying the journal, unless
    /// ephemeral) and prepares the listeners. Nothing is served until ``start()``.
    /// `progress` gets recovery's lines and, while serving, the journal's (see
    /// `MarkerService.open`).
    /// - Throws: a journal/recovery error that names the damaged file and offset.
    public init(configuration: MarkerdConfiguration, progress: (@Sendable (String) -> Void)? = nil) throws {
        self.configuration = configuration
        var serviceConfig = ServiceConfiguration()
        serviceConfig.dataDirectory = configuration.ephemeral ? nil : configuration.dataDirectory
        serviceConfig.fsync = switch configuration.fsync {
            case .always: .always
            case .everysec: .everySecond
            case .off: .off
        }
        serviceConfig.snapshotEveryBytes = configuration.snapshotEveryBytes
        serviceConfig.idempotencyTTL = configuration.idempotencyTTL
        serviceConfig.idempotencyMaxBytes = configuration.idempotencyMaxBytes
        serviceConfig.tileCacheBytes = configuration.tileCacheBytes
        serviceConfig.keptCanvasBytes = configuration.keptCanvasBytes
        service = try MarkerService.open(configuration: serviceConfig, progress: progress)
        dispatcher = RPCDispatcher(service: service)
        let handler = DispatchingHandler(dispatcher: dispatcher)
        transport = NNGReplyServer(
            configuration: ServerConfiguration(
                listenURLs: configuration.listenURLs, contexts: configuration.contexts,
                maxMessageBytes: configuration.maxMessageBytes),
            handler: handler)
        if let address = configuration.httpAddress {
            gateway = TileGateway(address: address, provider: ServiceTileProvider(service: service),
                                  metrics: dispatcher.metrics, headerTimeout: configuration.httpHeaderTimeout,
                                  idleTimeout: configuration.httpIdleTimeout, viewerFiles: configuration.viewerFiles)
        } else {
            gateway = nil
        }
    }

    /// Starts listening on every URL (and the HTTP gateway). Throws if a URL cannot be listened
    /// on (e.g. address in use); then nothing stays open.
    public func start() throws {
        try transport.start()
        do {
            try gateway?.start()
        } catch {
            transport.stop(drainTimeout: .zero)
            throw error
        }
    }

    /// `http://host:port` of the HTTP gateway as bound, or nil without one.
    public var httpURL: String? { gateway?.boundURL }

    /// The URLs actually bound (a tcp port 0 resolved to the real port).
    public var boundURLs: [String] { transport.boundURLs }

    /// Graceful stop: stop taking requests, let those in flight finish (bounded by
    /// `drainSeconds`), then flush, fsync and close the journal. The NNG socket is left open
    /// (not receiving) for the process to close at exit: closing a REP socket while peers
    /// disconnect can make nng 1.5 panic (nanomsg/nng#2110).
    public func stop() {
        service.beginDraining()
        gateway?.stop(drainTimeout: .milliseconds(Int64(min(configuration.drainSeconds, 2) * 1000)))
        transport.drain(timeout: .milliseconds(Int64(configuration.drainSeconds * 1000)))
        service.close()
    }
}

/// Hands each request from the nng callback thread to the RPC worker queue (never blocks), but
/// answers cached tiles, grid GetClusters mostly served from the cluster memo, and HitTest and
/// QueryViewport of bounded work at once (`RPCDispatcher.answerInline`), each only when the
/// layer's locks are free: the hop to a worker thread is most of the time a small reply spends
/// in markerd.
struct DispatchingHandler: RequestHandler {
    let dispatcher: RPCDispatcher
    static let queue = DispatchQueue(label: "markerd.rpc", qos: .userInitiated, attributes: .concurrent)

    func handle(_ request: IncomingRequest) {
        let dispatcher = self.dispatcher
        // Cached tiles, memoized clusters and bounded queries are answered here, without the
        // hop to a worker thread.
        if dispatcher.answerInline(body: request.body, receivedAt: request.receivedAt, respond: { size, fill in
            _ = request.respond(size: size, write: fill)
        }) {
            return
        }
        Self.queue.async {
            dispatcher.handle(body: request.body, receivedAt: request.receivedAt) { response in
                if let ok = OKReplyEnvelope(response) {
                    request.respond(size: ok.size) { ok.write(into: $0) }
                } else {
                    // serializedBytes builds the C message once (serializedSize + serialize would build it twice).
                    request.respond(response.serializedBytes())
                }
            }
        }
    }
}

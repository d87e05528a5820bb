import Dispatch
import Foundation
import MarkerdAPI
import MarkerdCluster
import MarkerdService
import MarkerdTransport

/// One markerd process as a library (a node): the service (recovered from the data directory), the RPC dispatcher
/// and the NNG REP server, wired together. `markerd` is a thin `main` around this; tests run it
/// in-process (inproc://, ipc://, tcp://127.0.0.1:0).
public final class MarkerdNode: Sendable {
    public let configuration: MarkerdConfiguration
    public let service: MarkerService
    public let dispatcher: RPCDispatcher
    let transport: NNGReplyServer
    /// The HTTP gateway, when ``MarkerdConfiguration/httpAddress`` is set.
    public let gateway: TileGateway?
    /// The HTTPS gateway, when ``MarkerdConfiguration/httpsAddress`` is set.
    public let httpsGateway: TileGateway?
    /// The operators' gateway (no tokens), when ``MarkerdConfiguration/opsHTTPAddress`` is set.
    public let opsGateway: TileGateway?
    /// Tokens, signing key, audit log (``reload()`` re-reads them).
    public let access: AccessControl
    /// Cluster mode's layer placement and members (`--cluster`); nil on a single node.
    public let shards: ShardRouter?
    /// Cluster mode: the replica group's log this node applies; nil on a single node.
    public let replicatedLog: JetStreamLog?
    /// `init`'s `progress`, for cluster warnings while starting.
    private let progress: (@Sendable (String) -> Void)?
    /// The change feed's PUB socket, when ``MarkerdConfiguration/publishURLs`` is not empty.
    let publisher: ChangeFeedPublisher?
    /// Posts fence events to webhooks, when ``MarkerdConfiguration/webhookSecretsFile`` is set.
    public let webhooks: FenceWebhooks?

    /// Why markerd does not start: protected mode, or an auth file, key or audit log that
    /// cannot be read.
    public struct StartupError: Error, CustomStringConvertible {
        public var description: String
    }

    /// Opens the service (loading the newest snapshot and replaying the journal, unless
    /// ephemeral) and prepares the listeners. Nothing is served until ``start()``.
    /// `progress` gets recovery's lines and, while serving, the journal's (see
    /// `MarkerService.open`).
    /// - Throws: ``StartupError`` (protected mode: a non-loopback address without
    ///   `--auth-file` or `--allow-anonymous`; an unreadable auth file, key or audit log), or a
    ///   journal/recovery error that names the damaged file and offset.
    /// `clock` is the service's wall clock (`ServiceConfiguration.clock`, Unix ms; tests inject one).
    public init(configuration: MarkerdConfiguration, progress: (@Sendable (String) -> Void)? = nil,
                clock: @escaping @Sendable () -> Int64 = MarkerService.systemUnixMs) throws {
        self.configuration = configuration
        self.progress = progress
        if let violation = configuration.protectedModeViolation() { throw StartupError(description: violation) }
        do {
            access = try AccessControl(configuration: configuration)
        } catch {
            throw StartupError(description: error.description)
        }
        var serviceConfig = ServiceConfiguration()
        serviceConfig.dataDirectory = configuration.ephemeral ? nil : configuration.dataDirectory
        serviceConfig.fsync = configuration.fsync
        serviceConfig.snapshotEveryBytes = configuration.snapshotEveryBytes
        serviceConfig.idempotencyTTL = configuration.idempotencyTTL
        serviceConfig.idempotencyMaxBytes = configuration.idempotencyMaxBytes
        serviceConfig.tileCacheBytes = configuration.tileCacheBytes
        serviceConfig.keptCanvasBytes = configuration.keptCanvasBytes
        let secrets = try configuration.webhookSecretsFile.map(FenceWebhooks.readSecrets)
        serviceConfig.changeHistoryCount = configuration.changeHistoryCount
        serviceConfig.changeHistoryBytes = configuration.changeHistoryBytes
        serviceConfig.clock = clock
        if configuration.clusterServers.isEmpty {
            replicatedLog = nil
            service = try MarkerService.open(configuration: serviceConfig, progress: progress)
        } else {
            // Cluster mode: no journal; the state is the group's log, applied from its start.
            let node = configuration.nodeID ?? ProcessInfo.processInfo.hostName
            let log = try Self.retryingCluster(progress) {
                try JetStreamLog(connection: NatsConnection(servers: configuration.clusterServers, name: "markerd-\(node)"),
                                 group: configuration.clusterGroup, replicas: configuration.effectiveClusterReplicas)
            }
            let service = MarkerService(configuration: serviceConfig, replicatedLog: log)
            let from = try Self.restoreClusterSnapshot(service, log, progress)
            service.onLogGap { gap in
                FileHandle.standardError.write("markerd: cluster error: \(gap); exiting\n".data(using: .utf8)!)
                exit(75)  // EX_TEMPFAIL: a restart restores the published snapshot
            }
            try Self.retryingCluster(progress) {
                service.expectCatchUp(to: try log.lastSequence())
                try log.follow(from: from) { sequence, record in service.applyLogged(sequence: sequence, record: record) }
            }
            progress?("cluster mode: node \(node), group \(configuration.clusterGroup), applying stream \(log.streamName) from sequence \(from)")
            self.service = service
            replicatedLog = log
        }
        if configuration.clusterServers.isEmpty {
            shards = nil
        } else {
            do {
                // Retried as the log is: JetStream answers "no responders" while it elects leaders.
                shards = try Self.retryingCluster(progress) {
                    try ShardRouter(servers: configuration.clusterServers, group: configuration.clusterGroup,
                                    node: configuration.nodeID ?? ProcessInfo.processInfo.hostName,
                                    replicas: configuration.effectiveClusterReplicas)
                }
            } catch {
                service.close()
                replicatedLog?.close()
                throw StartupError(description: "cluster: \(error)")
            }
        }
        dispatcher = RPCDispatcher(service: service, access: access, shards: shards)
        let counters = dispatcher.metrics.webhooks
        webhooks = secrets.map { FenceWebhooks(secrets: $0, counters: counters) }
        if let webhooks { service.fenceSinks.attach(webhooks) }
        let handler = DispatchingHandler(dispatcher: dispatcher)
        let tls = configuration.tlsCertificateFile.flatMap { cert in
            configuration.tlsKeyFile.map { TLSServerFiles(certificateFile: cert, keyFile: $0, clientCAFile: configuration.tlsClientCAFile) }
        }
        transport = NNGReplyServer(
            configuration: ServerConfiguration(
                listenURLs: configuration.listenURLs, contexts: configuration.contexts,
                maxMessageBytes: configuration.maxMessageBytes, tls: tls),
            handler: handler)
        // The gateways share the service, metrics, timeouts and viewer files; the operators' one
        // takes no tokens (`access: nil`), the HTTPS one the certificate.
        let provider = ServiceTileProvider(service: service), metrics = dispatcher.metrics, shards = shards
        let (header, idle, files) = (configuration.httpHeaderTimeout, configuration.httpIdleTimeout, configuration.viewerFiles)
        let makeGateway = { (address: String?, tls: TLSServerFiles?, access: AccessControl?) -> TileGateway? in
            address.map {
                TileGateway(address: $0, provider: provider, metrics: metrics, headerTimeout: header, idleTimeout: idle,
                            tls: tls, access: access, viewerFiles: files, shards: access == nil ? nil : shards)
            }
        }
        gateway = makeGateway(configuration.httpAddress, nil, access)
        httpsGateway = makeGateway(configuration.httpsAddress, tls, access)
        opsGateway = makeGateway(configuration.opsHTTPAddress, nil, nil)
        publisher = configuration.publishURLs.isEmpty ? nil : try ChangeFeedPublisher(urls: configuration.publishURLs)
    }

    /// Cluster mode, at start: restores the group's published snapshot (`MARKERD_SNAP_<group>`)
    /// when there is one, and returns the log sequence to apply from (the snapshot's + 1, else 1).
    /// - Throws: when the log was purged but no snapshot covers the purged records, or the
    ///   snapshot cannot be read or restored.
    static func restoreClusterSnapshot(_ service: MarkerService, _ log: JetStreamLog,
                                       _ progress: (@Sendable (String) -> Void)?) throws -> UInt64 {
        let (first, snapshot) = try retryingCluster(progress) { (try log.sequences().first, try log.latestSnapshot()) }
        guard let snapshot, snapshot.sequence + 1 >= first else {
            guard first <= 1 else {
                throw StartupError(description: "cluster mode: stream \(log.streamName) starts at sequence \(first) but no published snapshot in \(log.snapshotStreamName) covers the records before it")
            }
            return 1
        }
        let start = ContinuousClock.now
        try service.restoreClusterSnapshot(snapshot.bytes, sequence: snapshot.sequence)
        progress?("cluster mode: restored the published snapshot at sequence \(snapshot.sequence) (\(snapshot.bytes.count) bytes) in \(ContinuousClock.now - start)")
        return snapshot.sequence + 1
    }

    /// Cluster mode: how long a starting node retries connecting to NATS, opening its group's
    /// stream and subscribing to it (JetStream answers "temporarily unavailable" or times out
    /// until its servers elected a leader: right after they all started, or after one of them
    /// restarted). 30 s.
    static let clusterStartTimeout: Duration = .seconds(30)

    /// Runs `body` until it succeeds, for `clusterStartTimeout` (every 0.5 s; each failure is
    /// reported through `progress` as a "cluster warning:"); then throws its last error.
    static func retryingCluster<T>(_ progress: (@Sendable (String) -> Void)?, _ body: () throws -> T) throws -> T {
        let deadline = ContinuousClock.now + clusterStartTimeout
        while true {
            do {
                return try body()
            } catch {
                guard ContinuousClock.now < deadline else { throw error }
                progress?("cluster warning: \(error); retrying")
                Thread.sleep(forTimeInterval: 0.5)
            }
        }
    }

    /// Starts listening on every URL (and the HTTP gateway). Throws if a URL cannot be listened
    /// on (e.g. address in use); then nothing stays open.
    public func start() throws {
        try transport.start()
        do {
            try gateway?.start()
            try httpsGateway?.start()
            try opsGateway?.start()
            // Registered once bound (a port 0 resolved), so redirects name reachable URLs.
            if let shards {
                let endpoints = [configuration.advertiseURL ?? transport.boundURLs[0]]
                let httpEndpoints = (configuration.advertiseHTTPURL ?? httpURL).map { [$0] } ?? []
                try Self.retryingCluster(progress) { try shards.join(endpoints: endpoints, httpEndpoints: httpEndpoints) }
            }
            if let publisher {
                publisher.attach(to: service.changeFeed)
                service.fenceSinks.attach(publisher)
            }
        } catch {
            gateway?.stop(drainTimeout: .zero)
            transport.stop(drainTimeout: .zero)
            throw error
        }
    }

    /// `http://host:port` of the HTTP gateway as bound, or nil without one.
    public var httpURL: String? { gateway?.boundURL }

    /// `https://host:port` of the HTTPS gateway as bound, or nil without one.
    public var httpsURL: String? { httpsGateway?.boundURL }

    /// `http://host:port` of the operators' gateway as bound, or nil without one.
    public var opsHTTPURL: String? { opsGateway?.boundURL }

    /// SIGHUP: re-reads the auth file and the tile signing key, reopens the audit log, and
    /// re-reads the TLS certificate, key and client CA files for the `tls+tcp://` listeners and
    /// the HTTPS gateway (new connections use them, open ones keep the certificate they started
    /// with); connections stay open. What fails to load keeps its old state (logged, returned).
    @discardableResult
    public func reload() -> [String] {
        var failures = access.reload()
        do {
            try transport.reloadTLS()
            try httpsGateway?.reloadTLS()
            if configuration.tlsCertificateFile != nil {
                Log.info("TLS certificates reloaded", ["cert": configuration.tlsCertificateFile ?? ""])
            }
        } catch {
            let message = "TLS certificates not reloaded, keeping the old ones: \(error)"
            Log.error("TLS certificates not reloaded, keeping the old ones", ["error": "\(error)"])
            failures.append(message)
        }
        return failures
    }

    /// The URLs actually bound (a tcp port 0 resolved to the real port).
    public var boundURLs: [String] { transport.boundURLs }

    /// The change feed's URLs as bound (`--publish`; a tcp port 0 resolved), empty without it.
    public var publishURLs: [String] { publisher?.socket.boundURLs ?? [] }

    /// Graceful stop: stop taking requests, let those in flight finish (bounded by
    /// `drainSeconds`), then flush, fsync and close the journal. The NNG socket is left open
    /// (not receiving) for the process to close at exit: closing a REP socket while peers
    /// disconnect can make nng 1.5 panic (nanomsg/nng#2110).
    public func stop() {
        // Out of the members first, so redirects stop naming this replica.
        shards?.stop()
        service.beginDraining()
        // The gateways at once, so the HTTPS one adds nothing to the shutdown budget.
        let gateways = [gateway, httpsGateway]
        let gatewayDrain = Duration.milliseconds(Int64(min(configuration.drainSeconds, 2) * 1000))
        DispatchQueue.concurrentPerform(iterations: gateways.count) { gateways[$0]?.stop(drainTimeout: gatewayDrain) }
        opsGateway?.stop(drainTimeout: .zero)
        transport.drain(timeout: .milliseconds(Int64(configuration.drainSeconds * 1000)))
        service.close()
        replicatedLog?.close()
        webhooks?.stop()
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

/// The JetStream stream is the service's replicated log (cluster mode).
extension JetStreamLog: ReplicatedLog {}

import MarkerdJournal
import MarkerdService

/// markerd's settings, from the command line. Every option has a default, so `markerd` alone
/// runs a durable server on tcp://127.0.0.1:7450 with its data in ./data.
public struct MarkerdConfiguration: Sendable, Equatable {
    /// NNG listen URLs (`tcp://host:port`, `tls+tcp://host:port`, `ipc:///path`, `inproc://name`).
    /// Default tcp://127.0.0.1:7450.
    public var listenURLs: [String] = ["tcp://127.0.0.1:7450"]
    /// REP contexts, i.e. requests received concurrently. Default 64.
    public var contexts: Int = 64
    /// Largest request accepted, in bytes (NNG_OPT_RECVMAXSZ); a larger one drops the connection. Default 64 MiB.
    public var maxMessageBytes: Int = 64 << 20
    /// Where the journal and snapshots live. Default ./data.
    public var dataDirectory: String = "./data"
    /// Keep everything in memory only (no journal, no snapshots).
    public var ephemeral: Bool = false
    /// When an acknowledged write is on disk (`--fsync always|everysec|off`); see `SyncPolicy`. Default `.always`.
    public var fsync: SyncPolicy = .always
    /// Write a snapshot when the journal has grown by this many bytes since the last one. Default 256 MiB; 0 = never.
    public var snapshotEveryBytes: Int = 256 << 20
    /// How long a mutation's reply is remembered by its idempotency key
    /// (`ServiceConfiguration.idempotencyTTL`): a resend within it gets the first reply, after it
    /// the key is new. Default 24 h; from 1 s to `maxIdempotencyTTL`.
    public var idempotencyTTL: Duration = .seconds(24 * 3600)
    /// The longest `idempotencyTTL`: 366 days.
    public static let maxIdempotencyTTL: Duration = .seconds(366 * 24 * 3600)
    /// Bytes the remembered idempotency keys may take, oldest forgotten first
    /// (`ServiceConfiguration.idempotencyMaxBytes`). Default 64 MiB; at most `maxIdempotencyMaxBytes`.
    public var idempotencyMaxBytes: Int = 64 << 20
    /// The largest `idempotencyMaxBytes`: 1 GiB.
    public static let maxIdempotencyMaxBytes = 1 << 30
    /// How long a graceful shutdown waits for requests in flight. Default 8 s (exit within 10 s).
    public var drainSeconds: Double = 8
    /// `host:port` of the HTTP tile gateway (tiles, TileJSON, /metrics, /healthz, /readyz, the viewer at
    /// `/`); port 0 picks one. nil (the default): no HTTP gateway.
    public var httpAddress: String? = nil
    /// `host:port` of the same gateway over HTTPS (``tlsCertificateFile``); port 0 picks one. nil
    /// (the default): none. Independent of ``httpAddress``: either, both or neither.
    public var httpsAddress: String? = nil
    /// The server certificate (PEM, optionally followed by intermediates) of the `tls+tcp://`
    /// listeners and the HTTPS gateway; required by either, re-read on SIGHUP.
    public var tlsCertificateFile: String? = nil
    /// The certificate's private key (PEM, unencrypted); re-read on SIGHUP.
    public var tlsKeyFile: String? = nil
    /// CA certificates (PEM) for mutual TLS: when set, TLS clients must present a certificate
    /// signed by one of them (on `tls+tcp://` and HTTPS alike). nil (the default): no client
    /// certificate asked for. Re-read on SIGHUP.
    public var tlsClientCAFile: String? = nil
    /// How long an HTTP client may take to send a whole request once its first byte arrived;
    /// then it gets `408 Request Timeout` and the connection is closed. Default 10 s.
    public var httpHeaderTimeout: Duration = .seconds(10)
    /// How long an HTTP connection may sit idle (no request in progress) or stall a response
    /// write before it is closed. Default 60 s.
    public var httpIdleTimeout: Duration = .seconds(60)
    /// Where the viewer (`/` of the HTTP gateway) gets Leaflet (`--leaflet-dir`, default Debian's
    /// /usr/share/javascript/leaflet) and its basemap GeoJSON (`--basemap-dir`, default none).
    public var viewerFiles = ViewerFiles()
    /// Raster and point tiles kept in memory (LRU by bytes). Default 256 MiB; 0 = no tile cache.
    public var tileCacheBytes: Int = 256 << 20
    /// Bytes of dense rasters' canvases (the z0-z4 tiles of layers with millions of markers, and
    /// every tile at least 10,000 markers touch) kept so that after a small change only the
    /// changed markers' windows are rendered again (`ServiceConfiguration.keptCanvasBytes`).
    /// Default 64 MiB; 0: always from scratch. `--swept-canvas-bytes` is an older name of its flag.
    public var keptCanvasBytes: Int = 64 << 20
    /// NNG PUB listen URLs of the change feed (`tcp://host:port`, `ipc:///path`; `--publish`,
    /// repeatable). Empty: no feed. See `ChangeFeedPublisher`.
    public var publishURLs: [String] = []
    /// Changes kept per layer for GetChanges (`ServiceConfiguration.changeHistoryCount`). Default 10,000.
    public var changeHistoryCount: Int = 10_000
    /// Bytes of changes kept per layer (`ServiceConfiguration.changeHistoryBytes`). Default 16 MiB.
    public var changeHistoryBytes: Int = 16 << 20

    // Access (issue 38): see ``AccessControl`` and ``protectedModeViolation()``.
    /// The token file (``AuthFile``); nil: no authentication, which only loopback, ipc:// and
    /// inproc:// listeners allow unless ``allowAnonymous``. Reloaded on SIGHUP.
    public var authFile: String? = nil
    /// Serve non-loopback listeners without `--auth-file` (Redis's protected mode off).
    public var allowAnonymous: Bool = false
    /// The key of signed tile URLs; default `<authFile>.tile-key` (created when missing).
    public var tileSigningKeyFile: String? = nil
    /// JSON-lines audit log of write and admin calls (``AuditLog``); `-` is standard error. nil: none.
    public var auditLog: String? = nil
    /// `--webhook-secrets`: the secrets fences' webhooks name (``FenceWebhooks/readSecrets(path:)``).
    /// Fence webhooks are POSTed only when it is set. nil: none.
    public var webhookSecretsFile: String? = nil
    /// `--cors-origin`, repeatable (see ``TileGateway``). Empty: `*` for what is served to anyone.
    public var corsOrigins: [String] = []
    /// `host:port` of a second HTTP gateway that serves everything (viewer, /metrics, every
    /// layer) without tokens, for operators; loopback unless ``allowAnonymous``. nil: none.
    public var opsHTTPAddress: String? = nil

    // Cluster mode (issue 39): see docs/CLUSTER.md.
    /// NATS servers of the cluster (`--cluster nats://h1:4222,nats://h2:4222`). Empty (the
    /// default): a single node with its own journal. Set: writes go through the replica group's
    /// JetStream stream before they are acknowledged.
    public var clusterServers: [String] = []
    /// This replica's name, unique in the cluster (`--node-id`). Default: the host name.
    public var nodeID: String? = nil
    /// The replica group this node belongs to (`--cluster-group`): the replicas of a group hold the
    /// same layers and apply the same stream. 1-32 bytes of [A-Za-z0-9_-]. Default `default`.
    public var clusterGroup: String = "default"
    /// The NNG URL this replica's clients should use, named in MOVED redirects (`--advertise`).
    /// nil (the default): the first `--listen` URL as bound (a port 0 resolved); a wildcard host
    /// (0.0.0.0, ::) or inproc:// there needs an explicit `--advertise`. Cluster mode only.
    public var advertiseURL: String? = nil
    /// The HTTP gateway URL named in redirects and the gateway's 307s (`--advertise-http`).
    /// nil (the default): `http://` + the `--http` address as bound; none without `--http`.
    /// Cluster mode only.
    public var advertiseHTTPURL: String? = nil
    /// Copies JetStream keeps of each record of the group's log (`--cluster-replicas`, 1-5), used
    /// when this node creates the stream. nil (default): min(3, servers in ``clusterServers``).
    public var clusterReplicas: Int? = nil

    /// The stream's copies: ``clusterReplicas``, else min(3, servers listed).
    public var effectiveClusterReplicas: Int { clusterReplicas ?? min(3, max(1, clusterServers.count)) }

    public init() {}

    public static let usage = """
    usage: markerd [options]
           markerd check DIR     explain damage in a data directory
           markerd repair DIR    keep the valid prefix of a damaged journal, say what was dropped
           markerd token add|list|revoke ...   edit an auth file (markerd token --help)

    options:
      --listen URL               NNG listen URL, repeatable (tcp://, tls+tcp://, ipc://, inproc://). Default tcp://127.0.0.1:7450
      --contexts N               concurrent REP contexts. Default 64
      --max-message-bytes N      largest request in bytes. Default 67108864 (64 MiB)
      --data-dir DIR             journal and snapshots. Default ./data
      --ephemeral                keep everything in memory only
      --fsync always|everysec|off  durability of acknowledged writes. Default always
      --snapshot-every-bytes N   snapshot after this much journal (cluster mode: of log applied; the snapshot
                                 is published to the group and the log trimmed). Default 268435456; 0 = never
      --idempotency-ttl T        how long a mutation's reply is kept for a resend with the same idempotency
                                 key; after it the key is new. T is a whole number of hours, minutes or
                                 seconds: 24h, 90m, 3600s. Default 24h (NNG resends within 60 s)
      --idempotency-max-bytes N  bytes the kept replies may take (key + reply + 41 each), oldest dropped
                                 first. Default 67108864 (64 MiB); at most 1073741824 (1 GiB)
      --drain-seconds S          graceful shutdown budget for requests in flight. Default 8
      --http HOST:PORT           serve the HTTP tile gateway, /metrics, /healthz, /readyz and the viewer (e.g. 127.0.0.1:8080;
                                 port 0 picks one). Default off
      --https HOST:PORT          the same gateway over HTTPS (needs --tls-cert, --tls-key). Default off
      --tls-cert FILE            server certificate (PEM) for tls+tcp:// listeners and --https; re-read on SIGHUP
      --tls-key FILE             its private key (PEM, unencrypted); re-read on SIGHUP
      --tls-client-ca FILE       require TLS clients to present a certificate signed by these CAs (mutual TLS)
      --http-header-timeout-ms N  time a client has to send a whole request once it began; then
                                 408 and close. Default 10000
      --http-idle-timeout-ms N   close HTTP connections idle (or not reading a response) this long.
                                 Default 60000
      --leaflet-dir DIR          where the viewer's Leaflet files are (leaflet.js, leaflet.css).
                                 Default /usr/share/javascript/leaflet (Debian's libjs-leaflet)
      --basemap-dir DIR          the viewer's basemap GeoJSON (scripts/build-basemap.py --out DIR makes
                                 it; make run uses .build/basemap). Default none: no land under the markers
      --tile-cache-bytes N       raster and point tiles kept in memory. Default 268435456 (256 MiB); 0 = none
      --kept-canvas-bytes N      canvases of dense tiles (z0 over millions of markers, tiles of 10,000 markers
                                 or more) kept to re-render only what changed after a small change.
                                 Default 67108864 (64 MiB); 0 = always from scratch
      --publish URL              publish every applied, durable change on an NNG PUB socket, repeatable
                                 (tcp://, ipc://). Topic "layer/ID/" then a FeedEvent; a subscriber that
                                 reads too slowly misses events (GetChanges catches up). Default off
      --change-history-count N   changes kept per layer for GetChanges. Default 10000
      --change-history-bytes N   bytes of changes kept per layer for GetChanges (64 per change, 24 + its
                                 bytes per id). Default 16777216 (16 MiB)
      --auth-file PATH           tokens with scopes and layers (see `markerd token`); every RPC then needs
                                 one, private layers' tiles need a Bearer token or a signed URL. SIGHUP
                                 reloads it. Without it only loopback, ipc:// and inproc:// are served
      --allow-anonymous          serve non-loopback addresses without --auth-file
      --tile-signing-key-file PATH  key of signed tile URLs. Default PATH.tile-key beside --auth-file
                                 (created when missing)
      --audit-log PATH           JSON lines of write and admin calls and refused calls; - = stderr
      --webhook-secrets PATH     POST fence events to their fences' webhooks, signed with the secrets
                                 of PATH (lines NAME SECRET). Default off: no webhook is called
      --cors-origin ORIGIN       allowed browser origin, repeatable. Default * for public layers only
      --ops-http HOST:PORT       a second HTTP gateway for operators: viewer, /metrics and every layer
                                 without tokens (loopback unless --allow-anonymous)
      --cluster URLS             cluster mode: NATS JetStream servers, comma-separated (nats://h1:4222,...).
                                 Default off (a single node with its own journal)
      --node-id NAME             this replica's name in the cluster. Default the host name
      --cluster-group NAME       the replica group whose layers this node holds and whose stream it
                                 applies ([A-Za-z0-9_-], 1-32 bytes). Default default
      --advertise URL            the NNG URL other replicas send clients to (MOVED redirects).
                                 Default the first --listen URL as bound
      --advertise-http URL       the HTTP gateway URL redirects name (http:// or https://).
                                 Default http:// + the --http address as bound
      --cluster-replicas N       copies JetStream keeps of the group's log (1-5), when this node creates
                                 it. Default min(3, NATS servers listed in --cluster)
      -h, --help                 this text
      --version                  print the version
    """

    public struct ParseError: Error, CustomStringConvertible, Equatable {
        public var description: String
    }

    /// Parses `arguments` (without the program name). Throws with a message naming the bad option.
    public static func parse(_ arguments: [String]) throws(ParseError) -> MarkerdConfiguration {
        var config = MarkerdConfiguration()
        var listen: [String] = []
        var i = 0
        func value(_ name: String) throws(ParseError) -> String {
            i += 1
            guard i < arguments.count else { throw ParseError(description: "\(name) needs a value") }
            return arguments[i]
        }
        func integer(_ name: String, min: Int) throws(ParseError) -> Int {
            let text = try value(name)
            guard let n = Int(text), n >= min else {
                throw ParseError(description: "\(name) takes a whole number >= \(min), not \"\(text)\"")
            }
            return n
        }
        /// `HOST:PORT` (an optional `scheme` prefix dropped), port 0-65535.
        func hostPort(_ name: String, scheme: String) throws(ParseError) -> String {
            var text = try value(name)
            if text.hasPrefix(scheme) { text.removeFirst(scheme.count) }
            guard let colon = text.lastIndex(of: ":"), colon != text.startIndex,
                  let port = Int(text[text.index(after: colon)...]), (0...65535).contains(port) else {
                throw ParseError(description: "\(name) takes HOST:PORT (e.g. 127.0.0.1:8080), not \"\(text)\"")
            }
            return text
        }
        while i < arguments.count {
            let arg = arguments[i]
            switch arg {
            case "--listen":
                let url = try value(arg)
                guard ["tcp://", "tls+tcp://", "ipc://", "inproc://"].contains(where: url.hasPrefix) else {
                    throw ParseError(description: "--listen takes tcp://, tls+tcp://, ipc:// or inproc:// URLs, not \"\(url)\"")
                }
                listen.append(url)
            case "--contexts": config.contexts = try integer(arg, min: 1)
            case "--max-message-bytes": config.maxMessageBytes = try integer(arg, min: 1024)
            case "--data-dir": config.dataDirectory = try value(arg)
            case "--ephemeral": config.ephemeral = true
            case "--fsync":
                let text = try value(arg)
                guard let policy = SyncPolicy(flag: text) else {
                    throw ParseError(description: "--fsync takes always, everysec or off, not \"\(text)\"")
                }
                config.fsync = policy
            case "--snapshot-every-bytes": config.snapshotEveryBytes = try integer(arg, min: 0)
            case "--http-header-timeout-ms": config.httpHeaderTimeout = .milliseconds(try integer(arg, min: 1))
            case "--http-idle-timeout-ms": config.httpIdleTimeout = .milliseconds(try integer(arg, min: 1))
            case "--idempotency-ttl":
                let text = try value(arg)
                guard let ttl = parseDuration(text), ttl >= .seconds(1), ttl <= maxIdempotencyTTL else {
                    throw ParseError(description: "--idempotency-ttl takes a whole number of hours, minutes or seconds "
                                     + "from 1s to 8784h (e.g. 24h, 90m, 3600s), not \"\(text)\"")
                }
                config.idempotencyTTL = ttl
            case "--idempotency-max-bytes":
                config.idempotencyMaxBytes = try integer(arg, min: 0)
                guard config.idempotencyMaxBytes <= maxIdempotencyMaxBytes else {
                    throw ParseError(description: "--idempotency-max-bytes takes at most \(maxIdempotencyMaxBytes), not \(config.idempotencyMaxBytes)")
                }
            case "--leaflet-dir": config.viewerFiles.leafletDirectory = try value(arg)
            case "--basemap-dir": config.viewerFiles.basemapDirectory = try value(arg)
            case "--tile-cache-bytes": config.tileCacheBytes = try integer(arg, min: 0)
            case "--kept-canvas-bytes", "--swept-canvas-bytes": config.keptCanvasBytes = try integer(arg, min: 0)
            case "--publish":
                let url = try value(arg)
                guard ["tcp://", "ipc://"].contains(where: url.hasPrefix) else {
                    throw ParseError(description: "--publish takes tcp:// or ipc:// URLs, not \"\(url)\"")
                }
                config.publishURLs.append(url)
            case "--change-history-count": config.changeHistoryCount = try integer(arg, min: 1)
            case "--change-history-bytes": config.changeHistoryBytes = try integer(arg, min: 0)
            case "--drain-seconds":
                let text = try value(arg)
                guard let s = Double(text), s >= 0, s <= 60 else {
                    throw ParseError(description: "--drain-seconds takes seconds from 0 to 60, not \"\(text)\"")
                }
                config.drainSeconds = s
            case "--http": config.httpAddress = try hostPort(arg, scheme: "http://")
            case "--https": config.httpsAddress = try hostPort(arg, scheme: "https://")
            case "--tls-cert": config.tlsCertificateFile = try value(arg)
            case "--tls-key": config.tlsKeyFile = try value(arg)
            case "--tls-client-ca": config.tlsClientCAFile = try value(arg)
            case "--auth-file": config.authFile = try value(arg)
            case "--allow-anonymous": config.allowAnonymous = true
            case "--tile-signing-key-file": config.tileSigningKeyFile = try value(arg)
            case "--audit-log": config.auditLog = try value(arg)
            case "--webhook-secrets": config.webhookSecretsFile = try value(arg)
            case "--cors-origin": config.corsOrigins.append(try value(arg))
            case "--ops-http": config.opsHTTPAddress = try hostPort(arg, scheme: "http://")
            case "--cluster":
                let urls = try value(arg).split(separator: ",").map { String($0) }
                guard !urls.isEmpty, urls.allSatisfy({ $0.hasPrefix("nats://") || $0.hasPrefix("tls://") }) else {
                    throw ParseError(description: "--cluster takes nats://HOST:PORT URLs separated by commas")
                }
                config.clusterServers = urls
            case "--node-id":
                let name = try value(arg)
                guard Self.isClusterName(name, maxBytes: 64) else {
                    throw ParseError(description: "--node-id takes 1-64 bytes of [A-Za-z0-9_-], not \"\(name)\"")
                }
                config.nodeID = name
            case "--cluster-group":
                let name = try value(arg)
                guard Self.isClusterName(name, maxBytes: 32) else {
                    throw ParseError(description: "--cluster-group takes 1-32 bytes of [A-Za-z0-9_-], not \"\(name)\"")
                }
                config.clusterGroup = name
            case "--advertise":
                let url = try value(arg)
                guard ["tcp://", "tls+tcp://", "ipc://"].contains(where: url.hasPrefix), !Self.hasWildcardHost(url) else {
                    throw ParseError(description: "--advertise takes the tcp://HOST:PORT, tls+tcp://HOST:PORT or ipc:// URL "
                                     + "clients reach this replica at (not a wildcard host), not \"\(url)\"")
                }
                config.advertiseURL = url
            case "--advertise-http":
                let url = try value(arg)
                guard url.hasPrefix("http://") || url.hasPrefix("https://"), !Self.hasWildcardHost(url),
                      let port = url.split(separator: ":").last.flatMap({ Int($0) }), (1...65535).contains(port) else {
                    throw ParseError(description: "--advertise-http takes http://HOST:PORT or https://HOST:PORT "
                                     + "(not a wildcard host), not \"\(url)\"")
                }
                config.advertiseHTTPURL = url
            case "--cluster-replicas":
                let n = try integer(arg, min: 1)
                guard n <= 5 else { throw ParseError(description: "--cluster-replicas takes 1-5, not \(n)") }
                config.clusterReplicas = n
            default:
                throw ParseError(description: "unknown option \"\(arg)\"")
            }
            i += 1
        }
        if !listen.isEmpty { config.listenURLs = listen }
        let usesTLS = config.httpsAddress != nil || config.listenURLs.contains { $0.hasPrefix("tls+") }
        if usesTLS && (config.tlsCertificateFile == nil || config.tlsKeyFile == nil) {
            throw ParseError(description: "tls+tcp:// listeners and --https need --tls-cert and --tls-key")
        }
        if !usesTLS && (config.tlsCertificateFile != nil || config.tlsKeyFile != nil || config.tlsClientCAFile != nil) {
            throw ParseError(description: "--tls-cert, --tls-key and --tls-client-ca need a tls+tcp:// --listen URL or --https")
        }
        try config.checkAdvertisedURLs()
        return config
    }

    /// Cluster mode needs URLs other hosts can reach: `--advertise` / `--advertise-http`, or
    /// listen addresses whose host is not a wildcard. Without `--cluster` neither flag is allowed.
    func checkAdvertisedURLs() throws(ParseError) {
        guard !clusterServers.isEmpty else {
            if advertiseURL != nil || advertiseHTTPURL != nil {
                throw ParseError(description: "--advertise and --advertise-http need --cluster")
            }
            return
        }
        if advertiseURL == nil, let first = listenURLs.first, first.hasPrefix("inproc://") || Self.hasWildcardHost(first) {
            throw ParseError(description: "--listen \(first) is no address clients of other replicas can reach: "
                             + "give --advertise URL (e.g. tcp://10.0.0.5:7450)")
        }
        if advertiseHTTPURL == nil, let http = httpAddress, Self.hasWildcardHost("http://" + http) {
            throw ParseError(description: "--http \(http) is no address browsers sent from other replicas can reach: "
                             + "give --advertise-http URL (e.g. http://10.0.0.5:8080)")
        }
    }

    /// Whether a `scheme://HOST:PORT` URL's host is a wildcard (0.0.0.0, ::, *, empty).
    static func hasWildcardHost(_ url: String) -> Bool {
        guard let range = url.range(of: "://") else { return false }
        let rest = url[range.upperBound...]
        guard !url.hasPrefix("ipc://"), let colon = rest.lastIndex(of: ":") else { return false }
        return ["", "0.0.0.0", "[::]", "::", "*"].contains(String(rest[..<colon]))
    }

    /// Whether `name` is 1...`maxBytes` bytes of `[A-Za-z0-9_-]` (it becomes part of NATS
    /// stream, subject and key names).
    static func isClusterName(_ name: String, maxBytes: Int) -> Bool {
        (1...maxBytes).contains(name.utf8.count) && name.utf8.allSatisfy {
            ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) || ($0 >= 0x61 && $0 <= 0x7A) || $0 == 0x5F || $0 == 0x2D
        }
    }

    /// `24h`, `90m`, `3600s`: a whole number (at most 9 digits) and a unit; nil for anything else.
    static func parseDuration(_ text: String) -> Duration? {
        guard let unit = text.last, let n = Int64(text.dropLast()), n >= 0, text.count <= 10 else { return nil }
        switch unit {
        case "h": return .seconds(n * 3600)
        case "m": return .seconds(n * 60)
        case "s": return .seconds(n)
        default: return nil
        }
    }
}

import Foundation
import MarkerdAPI
import MarkerdCore
import MarkerdJournal
import MarkerdRender
import Synchronization

/// How the service keeps its state.
public struct ServiceConfiguration: Sendable {
    /// Journal and snapshots live here; nil = ephemeral (memory only).
    public var dataDirectory: String? = nil
    /// When an acknowledged write is on disk. Default `.always`.
    public var fsync: SyncPolicy = .always
    /// Snapshot after the journal grew by this many bytes since the last one; 0 = never. Default 256 MiB.
    public var snapshotEveryBytes: Int = 256 << 20
    /// How long the reply of a mutation is remembered by its idempotency key: a request resent
    /// with the key within it gets the first reply and applies nothing; after it, the key is new
    /// (NNG's REQ resends within 60 s, so anything far above that is safe). Default 24 h; zero
    /// or less remembers nothing.
    public var idempotencyTTL: Duration = .seconds(24 * 3600)
    /// Bytes the remembered keys may take, counting each as its key (half of it for a key of
    /// lowercase hex digits), its reply payload and 41 bytes (`IdempotencyStore`); the oldest
    /// are forgotten first beyond it. Default 64 MiB.
    public var idempotencyMaxBytes: Int = 64 << 20
    /// The service's wall clock, Unix ms: when animations end, how old idempotency keys are,
    /// snapshot times. Default: the system's real-time clock; tests inject one they move by hand.
    public var clock: @Sendable () -> Int64 = MarkerService.systemUnixMs
    /// Reported by GetServerInfo.
    public var version: String = "dev"
    /// XYZ template returned in TILED viewport answers (relative to the HTTP gateway).
    public var tileURLTemplate: String = "/tiles/{layer}/{size}/{z}/{x}/{y}.png"
    /// Raster (PNG) and point (MVT) tiles kept (LRU by their bytes). Default 256 MiB; 0 = no cache.
    public var tileCacheBytes: Int = 256 << 20
    /// `TileRenderer.sweepAbove` of the service's renderer: rasters with at least this many static
    /// markers around them take the node sweep, and their canvases are kept to be patched after
    /// small changes (`KeptCanvases`). Default 500,000 (the renderer's).
    public var tileSweepAbove: Int = 500_000
    /// Bytes of dense rasters' canvases kept for patching (`KeptCanvases`, LRU; 4 bytes per device
    /// pixel: 256 KiB per 256 px tile at density 1). Default 64 MiB; 0: none kept, every tile is
    /// rendered from scratch.
    public var keptCanvasBytes: Int = 64 << 20
    /// Tiles that at least this many static markers touch keep their canvas (`KeptCanvases`),
    /// besides the rasters that take the node sweep. Default 10,000: a tile that dense takes a
    /// millisecond or more to render from scratch (`marker-bench --only tiles`), a moved marker's
    /// windows a tenth of that; `Int.max`: swept rasters only.
    public var keepCanvasFrom: Int = 10_000
    /// Changes kept per layer for GetChanges (`ChangeHistory`; the oldest go first). Default 10,000.
    public var changeHistoryCount: Int = 10_000
    /// Bytes of changes kept per layer for GetChanges: each change counts 64 bytes and 24 more
    /// than each id it names. Default 16 MiB (about 400,000 ids of 16 bytes).
    public var changeHistoryBytes: Int = 16 << 20

    public init() {}
}

/// The behaviour of every RPC method, on Swift types. Thread-safe: queries run concurrently
/// under each layer's read lock, mutations of one layer are serialized under its write lock,
/// and layers never block each other. Mutations are journaled before they are acknowledged, or
/// in cluster mode published to the replica group's log and applied from it in log order.
public final class MarkerService: @unchecked Sendable {
    let configuration: ServiceConfiguration
    let layers = Mutex<[String: LayerHandle]>([:])
    let icons = IconRegistry()
    let idempotency: IdempotencyCache
    /// nil when ephemeral or in cluster mode.
    let journal: Journal?
    let startedAt = ContinuousClock.now
    let snapshots = SnapshotState()
    private let closed = Mutex(false)
    /// Set by `beginDraining()` and `close()` (see `readiness`).
    let draining = Atomic<Bool>(false)
    /// Raster tiles: the cache and the renderer (see MarkerService+Tiles.swift).
    public let tileCache: TileCache
    let tileRenderer: TileRenderer
    /// Measures and draws label text (Pango), for every labelled layer.
    let labelText = LabelText.shared
    /// Canvases of dense rasters, patched after small changes (see MarkerService+KeptCanvases.swift).
    let keptCanvases: KeptCanvases
    /// GetTile's renders, from scratch and patched (`tileRenderCounts`).
    let tileRenders = TileRenderCounters()
    /// The second thread of bulk upserts of new markers (see `BulkUpsertThread`).
    let writeHelper = BulkUpsertThread()
    /// Reservations that keep layer versions from ever repeating (see `VersionCeiling`).
    let versions: VersionCeiling
    /// Cluster mode's replicated log and apply state (`MarkerService+Replication.swift`); nil on
    /// a single node.
    let replication: Replication?
    /// Every applied, durable change, for `--publish` and the gateway's events (see `ChangeFeed`).
    public let changeFeed = ChangeFeed()
    /// Where fence events go once their mutation is durable (see `FenceEventSink`).
    public let fenceSinks = FenceEventSinks()

    init(configuration: ServiceConfiguration, journal: Journal?, replication: Replication? = nil) {
        self.configuration = configuration
        self.journal = journal
        self.replication = replication
        self.versions = VersionCeiling(journal: journal)
        self.idempotency = IdempotencyCache(ttlMs: Self.milliseconds(configuration.idempotencyTTL),
                                            maxBytes: configuration.idempotencyMaxBytes,
                                            clock: configuration.clock)
        self.tileCache = TileCache(capacityBytes: configuration.tileCacheBytes)
        self.tileRenderer = TileRenderer(sweepAbove: configuration.tileSweepAbove, images: { [icons] id in icons.icon(id)?.image })
        self.keptCanvases = KeptCanvases(capacityBytes: configuration.keptCanvasBytes)
    }

    /// An ephemeral service (memory only), for tests and `--ephemeral`.
    public convenience init(configuration: ServiceConfiguration = ServiceConfiguration()) {
        var c = configuration
        c.dataDirectory = nil
        self.init(configuration: c, journal: nil)
    }

    /// The service's clock (`ServiceConfiguration.clock`), Unix ms.
    func nowUnixMs() -> Int64 { configuration.clock() }

    /// The system's real-time clock, Unix ms.
    public static func systemUnixMs() -> Int64 {
        var ts = timespec()
        clock_gettime(CLOCK_REALTIME, &ts)
        return Int64(ts.tv_sec) * 1000 + Int64(ts.tv_nsec) / 1_000_000
    }

    /// Whole milliseconds of `d` (rounded down; saturating).
    static func milliseconds(_ d: Duration) -> Int64 {
        let (s, atto) = d.components
        let (ms, o1) = s.multipliedReportingOverflow(by: 1000)
        let (sum, o2) = ms.addingReportingOverflow(atto / 1_000_000_000_000_000)
        return o1 || o2 ? (s < 0 ? .min : .max) : sum
    }

    /// The layer, or NOT_FOUND.
    func handle(_ layerID: String) throws(RPCError) -> LayerHandle {
        guard let h = layers.withLock({ $0[layerID] }) else {
            throw .notFound("layer \"\(layerID)\" not found")
        }
        return h
    }

    /// Runs `body` under the layer's read lock, after expiring due animations.
    func read<T>(_ layerID: String, _ body: (LayerHandle, Int64) throws(RPCError) -> T) throws(RPCError) -> T {
        let h = try handle(layerID)
        let now = nowUnixMs()
        try expireDueAnimations(h, now: now)
        return try h.lock.withReadLock { () throws(RPCError) -> T in
            guard !h.deleted else { throw .notFound("layer \"\(layerID)\" not found") }
            return try body(h, now)
        }
    }

    /// `read` for the network thread, which must not wait: `body`'s result when the layer exists,
    /// its read lock can be taken at once and no animation is due (expiring one takes the write
    /// lock); nil otherwise, or when `body` throws or returns nil (the caller then runs the normal
    /// path, which waits, expires and answers the error).
    func readIfFree<T>(_ layerID: String, _ body: (LayerHandle, Int64) throws(RPCError) -> T?) -> T? {
        guard let h = layers.withLock({ $0[layerID] }) else { return nil }
        let now = nowUnixMs()
        let result = h.lock.withReadLockIfFree { () -> T? in
            guard !h.deleted, h.layer.nextAnimationEnd.map({ $0 > now }) ?? true else { return nil }
            return (try? body(h, now)) ?? nil
        }
        return result ?? nil
    }

    /// Flushes and closes the journal (graceful shutdown). Idempotent.
    public func close() {
        beginDraining()
        guard let journal, !closed.withLock({ (c: inout Bool) -> Bool in defer { c = true }; return c }) else { return }
        snapshots.cancel()
        snapshots.waitForRunning()
        do { try journal.close() } catch { FileHandle.standardError.write("markerd: closing the journal failed: \(error)\n".data(using: .utf8)!) }
    }

    /// Whether writes are journaled.
    public var isDurable: Bool { journal != nil }
}

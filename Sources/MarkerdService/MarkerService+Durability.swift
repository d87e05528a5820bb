import Foundation
import MarkerdAPI
import MarkerdCore
import MarkerdJournal
import Synchronization

/// Recovery on every core: the journal's reader thread hands each snapshot section or journal
/// record to `submit`; decode stages (one per core, taking items in turn) prepare them
/// (protobuf decode, marker conversion, projection) and an apply stage applies the results
/// strictly in submission order. At most `depth` items are in flight.
final class RecoveryPipeline: @unchecked Sendable {
    private let decoders: [DispatchQueue]
    private var nextDecoder = 0  // the submitting thread's
    private let apply = DispatchQueue(label: "markerd.recovery.apply")
    private let slots: DispatchSemaphore
    private let lock = NSLock()
    private var failure: Error?  // guarded by lock: the first error wins
    /// CPU time of each stage, ns (for the recovery summary).
    let decodeNanoseconds = Atomic<UInt64>(0)
    let applyNanoseconds = Atomic<UInt64>(0)

    /// One item between its decode stage and the apply stage.
    private final class Item: @unchecked Sendable {
        let ready = DispatchSemaphore(value: 0)
        var step: (@Sendable () throws -> Void)?  // written before `ready` is signalled
    }

    /// - Parameters:
    ///   - depth: items in flight (decoded or being decoded, not yet applied). Default 8.
    ///   - decoders: decode stages. Default: the number of cores, at least 2.
    init(depth: Int = 8, decoders: Int = max(2, ProcessInfo.processInfo.activeProcessorCount)) {
        slots = DispatchSemaphore(value: depth)
        self.decoders = (0..<max(1, decoders)).map { DispatchQueue(label: "markerd.recovery.decode\($0)") }
    }

    /// CPU time of the calling thread, ns.
    static func threadCPUNanoseconds() -> UInt64 {
        var t = timespec()
        clock_gettime(CLOCK_THREAD_CPUTIME_ID, &t)
        return UInt64(t.tv_sec) * 1_000_000_000 + UInt64(t.tv_nsec)
    }

    @inline(__always) private static func timed(_ counter: borrowing Atomic<UInt64>, _ body: () -> Void) {
        let t0 = threadCPUNanoseconds()
        body()
        counter.add(threadCPUNanoseconds() - t0, ordering: .relaxed)
    }

    private var failed: Error? { lock.lock(); defer { lock.unlock() }; return failure }
    private func fail(_ e: Error) { lock.lock(); if failure == nil { failure = e }; lock.unlock() }

    /// Queues one item; throws the first error of an earlier item (so recovery stops early).
    /// An `exclusive` item is prepared alone: after every earlier preparation and before any
    /// later one (for preparations with effects later ones depend on, e.g. registering icons).
    /// Call from one thread at a time.
    func submit(exclusive: Bool = false, prepare: @escaping @Sendable () throws -> (@Sendable () throws -> Void)) throws {
        if let e = failed { throw e }
        if exclusive { for q in decoders { q.sync {} } }
        slots.wait()
        let item = Item()
        let decoder = decoders[nextDecoder]
        nextDecoder = (nextDecoder + 1) % decoders.count
        decoder.async { [self] in
            Self.timed(decodeNanoseconds) {
                do { item.step = failed == nil ? try prepare() : nil } catch { fail(error); item.step = nil }
            }
            item.ready.signal()
        }
        apply.async { [self] in
            defer { slots.signal() }
            item.ready.wait()
            guard failed == nil, let work = item.step else { return }
            Self.timed(applyNanoseconds) {
                do { try work() } catch { fail(error) }
            }
        }
        if exclusive { decoder.sync {} }
    }

    /// Waits until every queued item is applied; throws the first error.
    func finish() throws {
        for q in decoders { q.sync {} }
        apply.sync {}
        if let e = failed { throw e }
    }
}

/// Serializes snapshots and remembers when the last one was taken.
final class SnapshotState: @unchecked Sendable {
    private let condition = NSCondition()
    private var running = false       // guarded by condition
    private var journalBytesAtLast: UInt64 = 0  // guarded by condition

    /// Claims the snapshot slot, waiting for a running snapshot to finish if `wait`.
    func begin(wait: Bool) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        if running && !wait { return false }
        while running { condition.wait() }
        running = true
        return true
    }

    func end(journalBytes: UInt64?) {
        condition.lock()
        running = false
        if let journalBytes { journalBytesAtLast = journalBytes }
        condition.broadcast()
        condition.unlock()
    }

    func isDue(journalBytes: UInt64, every: Int) -> Bool {
        condition.lock()
        defer { condition.unlock() }
        return every > 0 && !running && journalBytes >= journalBytesAtLast + UInt64(every)
    }

    func waitForRunning() {
        condition.lock()
        while running { condition.wait() }
        condition.unlock()
    }

    /// Set on shutdown: a running snapshot stops at its next chunk and is discarded (the journal
    /// holds everything it would have covered), so SIGTERM never waits for a long snapshot.
    private var cancelled = false  // guarded by condition

    func cancel() {
        condition.lock()
        cancelled = true
        condition.unlock()
    }

    var isCancelled: Bool {
        condition.lock()
        defer { condition.unlock() }
        return cancelled
    }
}

extension MarkerService {
    /// Snapshot format written by this version.
    static let snapshotFormatVersion: UInt32 = 1
    /// Markers per snapshot section; the layer's write lock is free between sections.
    static let snapshotChunk = 8_192
    /// Bytes of packed idempotency keys per snapshot section (about 256 KiB: below glibc's mmap
    /// threshold, so that recovery reuses the sections' buffers; the cache's lock is free
    /// between sections).
    static let snapshotIdempotencyChunkBytes = 256 << 10

    /// Opens the service: ephemeral, or recovered from `configuration.dataDirectory` (newest
    /// valid snapshot, then every journal record after it). Prints progress through `progress`,
    /// and later the journal's lines when writing fails and works again (lines that report
    /// trouble start with "recovery warning:" or "journal warning:").
    /// - Throws: when the data directory is damaged beyond a torn last record (the error names
    ///   the file and offset; `markerd check` / `markerd repair` explain and fix it), or is
    ///   locked by another markerd.
    ///
    /// The newest snapshot is replayed while it is read, unvalidated; should it turn out damaged,
    /// recovery starts over and validates the snapshots first (skipping a damaged one for an
    /// older one, with a warning).
    public static func open(configuration: ServiceConfiguration,
                            progress: (@Sendable (String) -> Void)? = nil) throws -> MarkerService {
        guard let directory = configuration.dataDirectory else {
            return MarkerService(configuration: configuration)
        }
        do {
            return try recover(directory: directory, configuration: configuration, validateSnapshotFirst: false, progress: progress)
        } catch let e as SnapshotDamagedWhileDelivered {
            progress?("recovery warning: \(e); starting over, validating the snapshots first")
            return try recover(directory: directory, configuration: configuration, validateSnapshotFirst: true, progress: progress)
        }
    }

    /// One recovery attempt (see `open`).
    private static func recover(directory: String, configuration: ServiceConfiguration, validateSnapshotFirst: Bool,
                                progress: (@Sendable (String) -> Void)?) throws -> MarkerService {
        let start = ContinuousClock.now
        let recovering = MarkerService(configuration: configuration, journal: nil)
        let replayErrors = Atomic<Int>(0)
        let pipeline = RecoveryPipeline()
        var lastPrinted = ContinuousClock.now
        let policy = configuration.fsync
        let firstSection = Mutex<ContinuousClock.Instant?>(nil)
        var snapshotFinished = false  // the reader thread's: grids built before the first record
        let gridNanoseconds = Atomic<UInt64>(0)
        let opened: (journal: Journal, report: RecoveryReport)
        do {
            opened = try Journal.open(
                directory: directory, options: JournalOptions(policy: policy, validateSnapshotFirst: validateSnapshotFirst, log: progress),
                progress: { p in
                    guard let progress, p.totalBytes > 64 << 20, ContinuousClock.now - lastPrinted > .seconds(1) else { return }
                    lastPrinted = .now
                    progress(String(format: "recovering %@: %.0f%% (%lld of %lld MB)", p.file,
                                    100 * Double(p.bytesRead) / Double(max(1, p.totalBytes)),
                                    p.bytesRead >> 20, p.totalBytes >> 20))
                },
                snapshotSection: { bytes in
                    firstSection.withLock { if $0 == nil { $0 = .now } }
                    try pipeline.submit(exclusive: !Self.isMarkersSection(bytes) && !Self.isIdempotencySection(bytes), prepare: { () throws -> (@Sendable () throws -> Void) in
                        try recovering.prepareSnapshotSection(bytes)
                    })
                },
                record: { _, bytes in
                    if !snapshotFinished {
                        snapshotFinished = true
                        try pipeline.submit(prepare: { { gridNanoseconds.add(recovering.finishRestores(), ordering: .relaxed) } })
                    }
                    try pipeline.submit(prepare: { () throws -> (@Sendable () throws -> Void) in
                    { if !recovering.replayJournalRecord(bytes) { replayErrors.add(1, ordering: .relaxed) } }
                }) })
        } catch {
            try? pipeline.finish()  // let queued work end before anything starts over
            throw error
        }
        let (journal, report) = opened
        let submitted = ContinuousClock.now
        try pipeline.finish()
        gridNanoseconds.add(recovering.finishRestores(), ordering: .relaxed)
        let drained = ContinuousClock.now
        let service = MarkerService(configuration: configuration, journal: journal)
        service.adopt(recovering)
        do {
            try service.startAboveRecoveredVersions()
        } catch {
            service.close()
            throw error
        }
        DispatchQueue.global(qos: .utility).async { [idempotency = service.idempotency] in idempotency.indexRestoredEntries() }
        let markers = service.layers.withLock { $0.values.reduce(0) { $0 + $1.layer.count } }
        let elapsed = ContinuousClock.now - start
        let seconds = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) / 1e18
        for w in report.warnings { progress?("recovery warning: \(w)") }
        progress?(String(format: "recovered %d layers, %d markers, %d icons in %.2f s (snapshot %@, %d journal records replayed%@)",
                         service.layers.withLock { $0.count }, markers, service.icons.count, seconds,
                         report.snapshot ?? "none", report.recordsReplayed,
                         replayErrors.load(ordering: .relaxed) > 0
                            ? ", \(replayErrors.load(ordering: .relaxed)) skipped as no-ops" : ""))
        func s(_ d: Duration) -> Double { Double(d.components.seconds) + Double(d.components.attoseconds) / 1e18 }
        progress?(String(format: "recovery stages: %.2f s before the first snapshot section, %.2f s reading, %.2f s draining; CPU: decode %.2f s, apply %.2f s (building grids %.2f s)",
                         s((firstSection.withLock { $0 } ?? submitted) - start), s(submitted - (firstSection.withLock { $0 } ?? submitted)),
                         s(drained - submitted),
                         Double(pipeline.decodeNanoseconds.load(ordering: .relaxed)) / 1e9,
                         Double(pipeline.applyNanoseconds.load(ordering: .relaxed)) / 1e9,
                         Double(gridNanoseconds.load(ordering: .relaxed)) / 1e9))
        service.snapshots.end(journalBytes: 0)
        return service
    }

    /// Takes over the state rebuilt by a recovering instance (the idempotency keys unindexed:
    /// `open` has them indexed on another thread, or the first mutation does it).
    private func adopt(_ other: MarkerService) {
        let all = other.layers.withLock { $0 }
        layers.withLock { $0 = all }
        versions.restore(other.versions.reservedCeiling)
        for icon in other.icons.all() { _ = try? icons.register(icon) }
        idempotency.adopt(other.idempotency)
    }

    /// The end of recovery: gives every layer a fresh version (`VersionCeiling.fresh`), above
    /// the highest reservation recovered and so above every version revealed before the restart
    /// or crash (replay cannot reproduce them: drags and animations are not journaled), and
    /// renews every tile's version with it; drag ids go on from there too (`MarkerLayer.start(at:)`).
    /// Journals one reservation and waits until it is durable, before anything is served.
    /// - Throws: when the journal refuses that reservation.
    func startAboveRecoveredVersions() throws {
        for h in layers.withLock({ Array($0.values) }) {
            try h.lock.withWriteLock { () throws(RPCError) in
                h.layer.start(at: try versions.fresh(above: h.layer.version))
                h.tileVersions.reset(seq: h.layer.version)
                h.changes.restart(at: h.layer.version)
            }
        }
    }

    // MARK: Replay

    /// Re-applies one journal record. Returns false if it did not apply (which is expected after
    /// a fuzzy snapshot, e.g. removing markers the snapshot no longer has).
    func replayJournalRecord(_ bytes: [UInt8]) -> Bool {
        guard let record = try? V1.JournalRecord(serializedBytes: bytes) else { return false }
        if record.versionCeiling != 0 {
            versions.restore(record.versionCeiling)
            return true
        }
        if !record.idempotencyKey.isEmpty, let response = try? V1.Response(serializedBytes: record.response), response.code == .ok {
            idempotency.restore(key: record.idempotencyKey, digest: record.requestDigest, payload: response.payload,
                                atUnixMs: record.appliedAtUnixMs)
        }
        guard let kind = MutationKind(methodName: record.method) else { return false }
        let commit = MutationCommit(kind: kind, payload: record.payload, key: record.idempotencyKey,
                                    digest: record.requestDigest, nowUnixMs: record.appliedAtUnixMs,
                                    context: nil, onDurable: nil)
        do {
            _ = try apply(commit)
            return true
        } catch {
            return false
        }
    }

    /// Whether a snapshot section's bytes hold a markers chunk (`SnapshotSection.markers`, field
    /// 4, length-delimited: its tag is the first byte, as a section sets exactly one field).
    /// Only those are decoded in parallel; a wrong guess only costs parallelism.
    static func isMarkersSection(_ bytes: [UInt8]) -> Bool { bytes.first == 4 << 3 | 2 }

    /// Whether a snapshot section's bytes hold packed idempotency keys
    /// (`SnapshotSection.idempotency_keys`, field 7).
    static func isIdempotencyKeysSection(_ bytes: [UInt8]) -> Bool { bytes.first == 7 << 3 | 2 }

    /// Whether a snapshot section's bytes hold idempotency keys, packed or one per section as
    /// older snapshots have them (`idempotency`, field 5): decoded in parallel like markers
    /// chunks, as their preparation has no effect that other sections depend on.
    static func isIdempotencySection(_ bytes: [UInt8]) -> Bool { isIdempotencyKeysSection(bytes) || bytes.first == 5 << 3 | 2 }

    /// Decodes one snapshot section and does the work that needs no layer lock (decoding,
    /// converting markers, registering icons); returns what is left to apply, in order.
    func prepareSnapshotSection(_ bytes: [UInt8]) throws -> @Sendable () throws -> Void {
        let now = nowUnixMs()
        let c = MutationCommit(kind: .upsertMarkers, payload: [], key: "", digest: 0, nowUnixMs: now, context: nil, onDurable: nil)
        // Marker chunks (nearly all of a snapshot) skip protobuf-c when they can.
        if Self.isMarkersSection(bytes),
           let (layerID, batch) = plainBatch(bytes, { V1.SnapshotSection.visitMarkersChunk($0, reserve: $1, each: $2) }) {
            return { [self] in try restoreBatch(batch, into: layerID, c) }
        }
        if Self.isIdempotencyKeysSection(bytes), let range = bytes.withUnsafeBytes(V1.SnapshotSection.packedIdempotencyKeys) {
            return { [self] in try idempotency.restore(packed: bytes[range]) }
        }
        switch try V1.SnapshotSection(serializedBytes: bytes).section {
        case .markers(let r)?:
            let records = try records(r, nowUnixMs: now, restoring: true)
            let world = records.map { WorldPoint($0.position) }
            return { [self] in try restoreRecords(records, world: world, into: r.layerID, c) }
        case .idempotency(let e)?:
            let response = try V1.Response(serializedBytes: e.response ?? [])
            return { [self] in restore(e, response) }
        case .icon?:
            // Icons come before the markers that use them; registering here (not in the apply
            // stage) lets the next sections' conversion find them.
            try restoreSnapshotSection(bytes)
            return {}
        default:
            return { [self] in try restoreSnapshotSection(bytes) }
        }
    }

    /// Applies one snapshot section's markers in columns like `upsertRecords`, leaving a new
    /// layer's grid for `finishRestores()`.
    func restoreBatch(_ batch: MarkerBatch, into layerID: String, _ c: MutationCommit) throws(RPCError) {
        try write(layerID, c) { (h) throws(RPCError) in
            _ = h.layer.restore(batch, now: c.nowUnixMs)
        }
    }

    /// Applies one snapshot section's converted markers (`world`: their projected positions)
    /// like `upsertRecords`, leaving a new layer's grid for `finishRestores()`.
    func restoreRecords(_ records: [MarkerRecord], world: [WorldPoint], into layerID: String, _ c: MutationCommit) throws(RPCError) {
        try write(layerID, c) { (h) throws(RPCError) in
            _ = try mapCoreError { () throws(MarkerdCoreError) in try h.layer.restore(records, world: world, now: c.nowUnixMs) }
        }
    }

    /// Builds the grids that `restoreRecords` deferred (see `MarkerLayer.finishRestore`). Runs
    /// before anything but snapshot markers touches the layers: the first journal record, or
    /// the end of recovery.
    /// Returns the CPU time it took, ns.
    func finishRestores() -> UInt64 {
        let t0 = RecoveryPipeline.threadCPUNanoseconds()
        for h in layers.withLock({ Array($0.values) }) {
            h.lock.withWriteLock {
                h.layer.finishRestore()
                h.fences.rebuild(from: h.layer)
            }
        }
        return RecoveryPipeline.threadCPUNanoseconds() - t0
    }

    /// Applies one snapshot section.
    func restoreSnapshotSection(_ bytes: [UInt8]) throws {
        let section = try V1.SnapshotSection(serializedBytes: bytes)
        let now = nowUnixMs()
        func commit(_ kind: MutationKind) -> MutationCommit {
            MutationCommit(kind: kind, payload: [], key: "", digest: 0, nowUnixMs: now, context: nil, onDurable: nil)
        }
        switch section.section {
        case .header(let h)?:
            if let v = h.formatVersion, v > Self.snapshotFormatVersion {
                throw RPCError.failedPrecondition("snapshot format \(v) is newer than this markerd understands (\(Self.snapshotFormatVersion))")
            }
            if let ceiling = h.versionCeiling { versions.restore(ceiling) }
        case .layer(var r)?:
            let c = commit(.createLayer)
            try Self.adoptLegacyAlgorithm(V1.CreateLayerRequest.legacyAlgorithmName(inSnapshotSection: bytes), into: &r, c)
            _ = try createLayer(r, c)
        case .icon(let r)?:
            _ = try registerIcon(r, commit(.registerIcon))
        case .markers(let r)?:
            _ = try upsertMarkers(r, commit(.upsertMarkers), restoring: true)
        case .idempotency(let e)?:
            restore(e, try V1.Response(serializedBytes: e.response ?? []))
        case .idempotencyKeys(let k)?:
            try idempotency.restore(packed: k.packed[...])
        case .fence(let r)?:
            _ = try createFence(r, commit(.createFence))
        case .layerState(let state)?:
            // After the layer's markers: their restore raised the version by its own count.
            let h = try handle(state.layerID)
            try h.lock.withWriteLock { () throws(RPCError) in
                h.layer.restoreState(version: state.version, nextDragNumber: state.nextDragID)
                h.tileVersions.reset(seq: state.version)
                for d in state.drags {
                    try mapCoreError { () throws(MarkerdCoreError) in
                        try h.layer.restoreDrag(DragID(rawValue: d.dragID), markerID: d.markerID, start: WorldPoint(x: d.startX, y: d.startY))
                    }
                }
            }
        case .footer?, nil:
            break
        }
    }

    /// Restores one key of an older snapshot (one `IdempotencyEntry` section per key) and its
    /// decoded `response`: only OK replies are remembered.
    private func restore(_ e: V1.IdempotencyEntry, _ response: V1.Response) {
        guard response.code == .ok else { return }
        idempotency.restore(key: e.key ?? "", digest: e.requestDigest ?? 0, payload: response.payload, atUnixMs: e.atUnixMs ?? 0)
    }

    // MARK: Snapshots

    /// CreateSnapshot: writes the whole state to a new snapshot file now (waiting for a
    /// running one to finish first), then drops the snapshots and journal segments that neither
    /// it nor the previous snapshot (kept as its fallback) needs. UNAVAILABLE while the journal
    /// retries after a failed write; FAILED_PRECONDITION when ephemeral.
    ///
    /// Cluster mode: snapshots this replica exact at the log sequence it applied, publishes it
    /// to the replica group (`ReplicatedLog.publishSnapshot`), which then drops the log up to
    /// it; `path` names where it was published. UNAVAILABLE when it was not published (the log
    /// is kept whole); FAILED_PRECONDITION before the replica applied anything.
    public func createSnapshot(_: V1.CreateSnapshotRequest) throws(RPCError) -> V1.CreateSnapshotResponse {
        if let replication {
            _ = snapshots.begin(wait: true)
            defer { snapshots.end(journalBytes: nil) }
            return try takeClusterSnapshot(replication)
        }
        guard journal != nil else {
            throw .failedPrecondition("markerd runs --ephemeral: there is nothing to snapshot to")
        }
        _ = snapshots.begin(wait: true)
        do {
            let r = try writeSnapshot()
            snapshots.end(journalBytes: journal?.stats.bytes)
            return r
        } catch {
            snapshots.end(journalBytes: nil)
            if let reason = journal?.retryingAfter {
                throw .unavailable("snapshot refused while the journal cannot write (it retries on its own): \(reason)")
            }
            throw .internal("snapshot failed: \(error)")
        }
    }

    /// Starts a snapshot on a background thread when the journal has grown enough.
    func maybeSnapshotInBackground() {
        guard let journal, snapshots.isDue(journalBytes: journal.stats.bytes, every: configuration.snapshotEveryBytes),
              snapshots.begin(wait: false) else { return }
        Thread.detachNewThread { [self] in
            do {
                let r = try writeSnapshot()
                FileHandle.standardError.write(String(format: "markerd: snapshot %@: %llu markers, %llu bytes, %llu ms\n",
                                                      r.path, r.markerCount, r.sizeBytes, r.durationMs).data(using: .utf8)!)
                snapshots.end(journalBytes: journal.stats.bytes)
            } catch {
                FileHandle.standardError.write("markerd: background snapshot failed: \(error)\n".data(using: .utf8)!)
                snapshots.end(journalBytes: journal.stats.bytes)
            }
        }
    }

    /// Writes a fuzzy snapshot: rotate the journal (every record <= S is in older segments),
    /// then write each layer in chunks, taking its read lock per chunk only, so reads and
    /// writes continue. Recovery replays records > S on top; they set state, so it converges.
    func writeSnapshot() throws -> V1.CreateSnapshotResponse {
        guard let journal else { throw RPCError.failedPrecondition("ephemeral") }
        let start = ContinuousClock.now
        let covered = try journal.rotate()
        let inFlight = idempotency.inFlightMark()
        let writer = try journal.makeSnapshotWriter(coveredSequence: covered)
        var markerCount: UInt64 = 0
        do {
            markerCount = try writeSnapshotSections(covering: covered, versionCeiling: versions.reservedCeiling,
                                                    beforeKeys: { idempotency.waitForInFlight(before: inFlight, stop: { snapshots.isCancelled }) },
                                                    put: writer.append)
        } catch {
            writer.abort()
            throw error
        }
        let path = try writer.commit()
        let bytes = writer.bytesWritten
        _ = try journal.dropSegments(coveredBy: covered)
        let elapsed = ContinuousClock.now - start
        var response = V1.CreateSnapshotResponse()
        response.path = path
        response.markerCount = markerCount
        response.sizeBytes = UInt64(bytes)
        response.durationMs = UInt64(Self.milliseconds(elapsed))
        return response
    }

    /// The sections of a snapshot covering sequence `covered`, in order, to `put` (each an
    /// encoded `SnapshotSection`): header, icons, per layer its options, marker chunks, fences
    /// and `LayerState`, then the idempotency keys and the footer. Takes each layer's read lock per
    /// chunk only; `beforeKeys` runs before the keys are packed. `openDrags`: whether each
    /// `LayerState` lists the layer's open drag sessions (cluster mode). Returns the markers
    /// written.
    /// - Throws: `put`'s errors; UNAVAILABLE when shutdown cancels the snapshot.
    func writeSnapshotSections(covering covered: UInt64, versionCeiling: UInt64, openDrags: Bool = false, beforeKeys: () -> Void,
                               put putBytes: ([UInt8]) throws -> Void) throws -> UInt64 {
        var markerCount: UInt64 = 0
        func put(_ s: V1.SnapshotSection.Section) throws {
            var section = V1.SnapshotSection()
            section.section = s
            try putBytes(section.serializedBytes())
        }
        var header = V1.SnapshotHeader()
        header.formatVersion = Self.snapshotFormatVersion
        header.coversSequence = covered
        header.createdAtUnixMs = nowUnixMs()
        // Single node: read after the rotation, covers every reservation in the segments this
        // snapshot lets go (recovery starts the layers above it).
        header.versionCeiling = versionCeiling
        try put(.header(header))
        for icon in icons.all() {
            var r = V1.RegisterIconRequest()
            r.iconID = icon.id
            r.png = icon.png
            var a = V1.Anchor()
            a.x = icon.anchor.x
            a.y = icon.anchor.y
            r.anchor = a
            try put(.icon(r))
        }
        let handles = layers.withLock { Array($0.values) }.sorted { $0.id < $1.id }
        for h in handles {
            var layerSection = V1.CreateLayerRequest()
            layerSection.layerID = h.id
            guard let options = h.lock.withReadLock({ h.deleted ? nil : h.options }) else { continue }
            layerSection.options = options
            try put(.layer(layerSection))
            var cursor = 0
            while true {
                if snapshots.isCancelled { throw RPCError.unavailable("snapshot cancelled: markerd is shutting down") }
                let (chunk, next): ([MarkerRecord], Int?) = h.lock.withReadLock {
                    h.deleted ? ([], nil) : h.layer.markers(fromSlot: cursor, limit: Self.snapshotChunk)
                }
                if !chunk.isEmpty {
                    var r = V1.UpsertMarkersRequest()
                    r.layerID = h.id
                    r.markers = chunk.map(MarkerConversion.apiMarker)
                    try put(.markers(r))
                    markerCount += UInt64(chunk.count)
                }
                guard let next else { break }
                cursor = next
            }
            // After the layer's markers: recovery seeds the fences' inside-sets once the grid is built.
            for fence in h.lock.withReadLock({ h.deleted ? [] : h.fenceDefinitions.values.sorted { $0.fenceID < $1.fenceID } }) {
                try put(.fence(V1.CreateFenceRequest(layerID: h.id, fence: fence)))
            }
            let state = h.lock.withReadLock {
                V1.LayerState(layerID: h.id, version: h.layer.version, nextDragID: h.layer.nextDragID.rawValue,
                              drags: openDrags ? h.layer.openDrags.map {
                                  V1.OpenDrag(dragID: $0.id.rawValue, markerID: $0.markerID, startX: $0.start.x, startY: $0.start.y)
                              } : [])
            }
            try put(.layerState(state))
        }
        // Mutations journaled up to `covered` lose their records with the segments dropped
        // below: their keys must be in the cache before it is packed.
        beforeKeys()
        if snapshots.isCancelled { throw RPCError.unavailable("snapshot cancelled: markerd is shutting down") }
        var next: UInt64 = 0
        while let (packed, after) = idempotency.packed(from: next, maxBytes: Self.snapshotIdempotencyChunkBytes) {
            try put(.idempotencyKeys(V1.IdempotencyKeys(packed: packed)))
            next = after
        }
        var footer = V1.SnapshotFooter()
        footer.layers = UInt64(handles.count)
        footer.markers = markerCount
        try put(.footer(footer))
        return markerCount
    }
}

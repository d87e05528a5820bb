internal import CNats
import Foundation
import MarkerdJournal

/// Cluster mode's replicated log of one replica group: the JetStream stream `MARKERD_<group>`
/// on subject `markerd.log.<group>` (file storage, `replicas` copies, no limits: nothing is
/// discarded but what markerd purges itself). Each record is one message; its stream sequence is
/// its log sequence (from 1, without gaps while nothing is purged).
///
/// Records are applied from an ordered push consumer (`jsSubOptions.Ordered`): an ephemeral
/// consumer without acks that the library re-creates from the next expected sequence whenever
/// it sees a gap or misses heartbeats (a NATS server restarted, a reconnect), so `follow`'s
/// `deliver` sees every record once, in order, across NATS failures, without markerd keeping
/// consumer state on the servers. `deliver` runs on the subscription's own library thread (one
/// per subscription), which is this log's apply thread: it takes layer locks, never one held
/// across a publish (`append` publishes before any lock is taken). Chosen over a pull
/// subscription because the library already implements the gap detection and re-creation.
public final class JetStreamLog: @unchecked Sendable {
    public let connection: NatsConnection
    /// `MARKERD_<group>`.
    public let streamName: String
    /// `markerd.log.<group>`.
    public let subject: String
    /// How long `append` waits for JetStream's acknowledgement, ms.
    public let publishTimeoutMs: Int64
    /// `MARKERD_SNAP_<group>`: the group's published snapshot (see `publishSnapshot`), on
    /// subjects `markerd.snap.<group>.chunk` and `markerd.snap.<group>.manifest`.
    public let snapshotStreamName: String
    private let snapshotSubject: String
    private let lock = NSLock()
    private var subscription: OpaquePointer?  // guarded by lock

    /// Opens the group's stream, creating it when missing (the first replica to start does; an
    /// identical configuration created meanwhile by another is taken as is).
    ///
    /// - Parameters:
    ///   - group: the replica group (`--cluster-group`: 1-32 of [A-Za-z0-9_-]).
    ///   - replicas: copies JetStream keeps of each record (1-5; a write is acknowledged once a
    ///     majority stored it). Only used when creating the stream.
    ///   - publishTimeoutMs: see `publishTimeoutMs`. Default 5,000.
    /// - Throws: `NatsError` when JetStream does not answer or refuses the stream (e.g. fewer
    ///   servers than `replicas`).
    public init(connection: NatsConnection, group: String, replicas: Int, publishTimeoutMs: Int64 = 5_000) throws(NatsError) {
        self.connection = connection
        self.streamName = "MARKERD_" + group
        self.subject = "markerd.log." + group
        self.publishTimeoutMs = publishTimeoutMs
        self.snapshotStreamName = "MARKERD_SNAP_" + group
        self.snapshotSubject = "markerd.snap." + group
        for (name, subject) in [(streamName, subject), (snapshotStreamName, snapshotSubject + ".*")] where try streamInfo(name) == nil {
            do {
                try createStream(name, subject: subject, replicas: replicas)
            } catch {
                // Another replica may have created it meanwhile.
                guard try streamInfo(name) != nil else { throw error }
            }
        }
    }

    /// The stream's first and last sequence (first is last + 1 while it is empty: 1 and 0 when
    /// new), or nil when it does not exist.
    private func streamInfo(_ name: String) throws(NatsError) -> (first: UInt64, last: UInt64)? {
        var si: UnsafeMutablePointer<jsStreamInfo>?
        var jerr = jsErrCode(0)
        let s = js_GetStreamInfo(&si, connection.jetStream, name, nil, &jerr)
        if s == NATS_NOT_FOUND { return nil }
        try NatsError.check(s, "read stream \(name)")
        defer { jsStreamInfo_Destroy(si) }
        return (si!.pointee.State.FirstSeq, si!.pointee.State.LastSeq)
    }

    private func createStream(_ streamName: String, subject: String, replicas: Int) throws(NatsError) {
        var cfg = jsStreamConfig()
        jsStreamConfig_Init(&cfg)
        cfg.Storage = js_FileStorage
        cfg.Retention = js_LimitsPolicy
        cfg.Replicas = Int64(replicas)
        cfg.MaxMsgs = -1
        cfg.MaxBytes = -1
        cfg.Discard = js_DiscardNew  // never drop a record to make room (there are no limits)
        var si: UnsafeMutablePointer<jsStreamInfo>?
        var jerr = jsErrCode(0)
        let s = streamName.withCString { name in
            subject.withCString { subj in
                var subjects: [UnsafePointer<CChar>?] = [subj]
                return subjects.withUnsafeMutableBufferPointer { buf in
                    cfg.Name = name
                    cfg.Subjects = buf.baseAddress
                    cfg.SubjectsLen = 1
                    return js_AddStream(&si, connection.jetStream, &cfg, nil, &jerr)
                }
            }
        }
        try NatsError.check(s, "create stream \(streamName) (subject \(subject), \(replicas) replicas, JetStream error \(jerr.rawValue))")
        jsStreamInfo_Destroy(si)
    }

    /// The stream's last sequence now (0 while empty): what a starting replica must apply
    /// before it is ready.
    /// - Throws: `NatsError` when JetStream does not answer, or the stream was deleted.
    public func lastSequence() throws(NatsError) -> UInt64 {
        try sequences().last
    }

    /// The log's first and last sequence now (first is last + 1 while it is empty: records up
    /// to first - 1 were purged after a snapshot covering them was published).
    /// - Throws: `NatsError` when JetStream does not answer, or the stream was deleted.
    public func sequences() throws(NatsError) -> (first: UInt64, last: UInt64) {
        guard let info = try streamInfo(streamName) else { throw NatsError(NATS_NOT_FOUND, "read stream \(streamName)") }
        return (max(1, info.first), info.last)
    }

    /// The largest record `append` takes: the servers' max_payload (1 MiB by default).
    public var maxRecordBytes: Int { Int(natsConnection_GetMaxPayload(connection.connection)) }

    /// Publishes `record` and waits (on the calling thread) for JetStream's acknowledgement, at
    /// most `publishTimeoutMs`; calls `completion` with the record's sequence, or the error.
    public func append(_ record: [UInt8], completion: @escaping @Sendable (Result<UInt64, any Error>) -> Void) {
        var ack: UnsafeMutablePointer<jsPubAck>?
        var jerr = jsErrCode(0)
        var opts = jsPubOptions()
        jsPubOptions_Init(&opts)
        opts.MaxWait = publishTimeoutMs
        let s = streamName.withCString { name in
            opts.ExpectStream = name
            return record.withUnsafeBytes { js_Publish(&ack, connection.jetStream, subject, $0.baseAddress, Int32($0.count), &opts, &jerr) }
        }
        guard s == NATS_OK, let ack else {
            completion(.failure(NatsError(s, "publish to \(subject) (JetStream error \(jerr.rawValue))")))
            return
        }
        let sequence = ack.pointee.Sequence
        jsPubAck_Destroy(ack)
        completion(.success(sequence))
    }

    /// What `follow` delivers to, kept alive by the subscription.
    private final class Delivery {
        let deliver: (UInt64, [UInt8]) -> Void
        init(_ deliver: @escaping (UInt64, [UInt8]) -> Void) { self.deliver = deliver }
    }

    /// Delivers every record from sequence `first` on, in order, each once, to `deliver(sequence,
    /// bytes)` on the subscription's thread (see the type's notes), until `close()`.
    /// - Throws: `NatsError` when the consumer cannot be created; `first` must not be below the
    ///   stream's first sequence (records before it were purged).
    public func follow(from first: UInt64, deliver: @escaping (UInt64, [UInt8]) -> Void) throws(NatsError) {
        let box = Unmanaged.passRetained(Delivery(deliver))
        var so = jsSubOptions()
        jsSubOptions_Init(&so)
        so.Ordered = true
        so.Config.DeliverPolicy = js_DeliverByStartSequence
        so.Config.OptStartSeq = max(1, first)
        var sub: OpaquePointer?
        var jerr = jsErrCode(0)
        let s = streamName.withCString { name in
            so.Stream = name
            return js_Subscribe(&sub, connection.jetStream, subject, { _, _, msg, closure in
                guard let msg, let closure else { return }
                defer { natsMsg_Destroy(msg) }
                var meta: UnsafeMutablePointer<jsMsgMetaData>?
                guard natsMsg_GetMetaData(&meta, msg) == NATS_OK, let meta else { return }
                let sequence = meta.pointee.Sequence.Stream
                jsMsgMetaData_Destroy(meta)
                Unmanaged<Delivery>.fromOpaque(closure).takeUnretainedValue().deliver(sequence, JetStreamLog.data(msg))
            }, box.toOpaque(), nil, &so, &jerr)
        }
        guard s == NATS_OK, let sub else {
            box.release()
            throw NatsError(s, "subscribe to stream \(streamName) from sequence \(first) (JetStream error \(jerr.rawValue))")
        }
        // The box lives until the subscription is closed and its last delivery returned.
        natsSubscription_SetOnCompleteCB(sub, { closure in
            if let closure { Unmanaged<Delivery>.fromOpaque(closure).release() }
        }, box.toOpaque())
        lock.withLock { subscription = sub }
    }

    /// A message's data.
    static func data(_ msg: OpaquePointer) -> [UInt8] {
        let count = Int(natsMsg_GetDataLength(msg))
        return natsMsg_GetData(msg).map { p in
            p.withMemoryRebound(to: UInt8.self, capacity: count) { Array(UnsafeBufferPointer(start: $0, count: count)) }
        } ?? []
    }

    // MARK: Snapshots

    /// The last message of a published snapshot: which log sequence it is exact at, and where
    /// its bytes are (`chunks` messages from stream sequence `firstChunk` on, in order).
    struct SnapshotManifest: Codable {
        /// The log sequence the snapshot is exact at.
        var sequence: UInt64
        /// Its bytes in all.
        var size: Int
        /// CRC-32C of its bytes.
        var crc32c: UInt32
        var firstChunk: UInt64
        var chunks: Int
    }

    /// Publishes a snapshot exact at log sequence `sequence`: its bytes in chunks (each below the
    /// servers' max_payload) on `markerd.snap.<group>.chunk`, then the manifest naming them on
    /// `markerd.snap.<group>.manifest`, each message after the first sent with JetStream's
    /// expected-last-sequence of the one before (so that two replicas publishing at once cannot
    /// interleave: the later fails). Then purges the snapshot stream below this snapshot's first
    /// chunk (only the newest complete one is kept) and the log below `sequence + 1`. Skipped
    /// when the published snapshot covers `sequence` already.
    /// - Returns: "nats:<snapshot stream>@<first chunk>-<manifest> covering sequence <S>".
    /// - Throws: `NatsError` when a message is not acknowledged (nothing is purged then; the
    ///   chunks sent stay unused until the next snapshot's purge).
    public func publishSnapshot(_ bytes: [UInt8], covering sequence: UInt64) throws -> String {
        if let published = try latestManifest(), published.manifest.sequence >= sequence {
            return "nats:\(snapshotStreamName)@\(published.manifest.firstChunk)-\(published.at) covering sequence \(published.manifest.sequence) (published already)"
        }
        let chunkBytes = max(4096, maxRecordBytes - 4096)  // room for the message's headers
        var previous: UInt64 = 0
        var firstChunk: UInt64 = 0
        var chunks = 0
        func publish(_ data: ArraySlice<UInt8>, _ subject: String) throws(NatsError) -> UInt64 {
            var ack: UnsafeMutablePointer<jsPubAck>?
            var jerr = jsErrCode(0)
            var opts = jsPubOptions()
            jsPubOptions_Init(&opts)
            opts.MaxWait = publishTimeoutMs
            opts.ExpectLastSeq = previous  // 0: not checked (the first chunk)
            let s = snapshotStreamName.withCString { name in
                opts.ExpectStream = name
                return data.withUnsafeBytes { js_Publish(&ack, connection.jetStream, subject, $0.baseAddress, Int32($0.count), &opts, &jerr) }
            }
            guard s == NATS_OK, let ack else {
                throw NatsError(s, "publish a snapshot to \(subject) (JetStream error \(jerr.rawValue)\(jerr.rawValue == 10071 ? ": another replica published one at the same time" : ""))")
            }
            defer { jsPubAck_Destroy(ack) }
            return ack.pointee.Sequence
        }
        var at = 0
        repeat {
            let end = min(bytes.count, at + chunkBytes)
            previous = try publish(bytes[at..<end], snapshotSubject + ".chunk")
            if firstChunk == 0 { firstChunk = previous }
            chunks += 1
            at = end
        } while at < bytes.count
        let manifest = SnapshotManifest(sequence: sequence, size: bytes.count, crc32c: CRC32C.checksum(bytes),
                                        firstChunk: firstChunk, chunks: chunks)
        let manifestAt = try publish(ArraySlice(try JSONEncoder().encode(manifest)), snapshotSubject + ".manifest")
        try purge(snapshotStreamName, below: firstChunk)
        try purge(streamName, below: sequence + 1)
        return "nats:\(snapshotStreamName)@\(firstChunk)-\(manifestAt) covering sequence \(sequence)"
    }

    /// The published snapshot's log sequence and bytes, or nil when none was published.
    /// - Throws: `NatsError` when JetStream does not answer; `JetStreamLog.SnapshotDamaged`
    ///   when its chunks are missing or do not match the manifest's size and checksum.
    public func latestSnapshot() throws -> (sequence: UInt64, bytes: [UInt8])? {
        guard let (manifest, at) = try latestManifest() else { return nil }
        var bytes: [UInt8] = []
        bytes.reserveCapacity(manifest.size)
        for i in 0..<UInt64(manifest.chunks) {
            var msg: OpaquePointer?
            var jerr = jsErrCode(0)
            let s = js_GetMsg(&msg, connection.jetStream, snapshotStreamName, manifest.firstChunk + i, nil, &jerr)
            if s == NATS_NOT_FOUND { throw SnapshotDamaged(reason: "chunk \(manifest.firstChunk + i) of the manifest at \(at) is missing") }
            try NatsError.check(s, "read snapshot chunk \(manifest.firstChunk + i) of \(snapshotStreamName)")
            bytes += Self.data(msg!)
            natsMsg_Destroy(msg)
        }
        guard bytes.count == manifest.size, CRC32C.checksum(bytes) == manifest.crc32c else {
            throw SnapshotDamaged(reason: "the manifest at \(at) names \(manifest.size) bytes with CRC-32C \(manifest.crc32c); its chunks hold \(bytes.count) bytes with \(CRC32C.checksum(bytes))")
        }
        return (manifest.sequence, bytes)
    }

    /// A published snapshot that cannot be read back whole.
    public struct SnapshotDamaged: Error, CustomStringConvertible {
        public let reason: String
        public var description: String { "the cluster's published snapshot is damaged: \(reason)" }
    }

    /// The newest manifest and its stream sequence, or nil when none was published.
    private func latestManifest() throws -> (manifest: SnapshotManifest, at: UInt64)? {
        var msg: OpaquePointer?
        var jerr = jsErrCode(0)
        let s = js_GetLastMsg(&msg, connection.jetStream, snapshotStreamName, snapshotSubject + ".manifest", nil, &jerr)
        if s == NATS_NOT_FOUND { return nil }
        try NatsError.check(s, "read the snapshot manifest of \(snapshotStreamName) (JetStream error \(jerr.rawValue))")
        defer { natsMsg_Destroy(msg) }
        let manifest = try JSONDecoder().decode(SnapshotManifest.self, from: Data(Self.data(msg!)))
        return (manifest, natsMsg_GetSequence(msg))
    }

    /// Purges `stream`'s messages below sequence `first` (none when `first` is 1: the server
    /// takes a purge up to sequence 0 or 1 for a purge of the whole stream).
    private func purge(_ stream: String, below first: UInt64) throws(NatsError) {
        guard first > 1 else { return }
        var o = jsOptions()
        jsOptions_Init(&o)
        o.Stream.Purge.Sequence = first
        var jerr = jsErrCode(0)
        try NatsError.check(js_PurgeStream(connection.jetStream, stream, &o, &jerr), "purge \(stream) below sequence \(first) (JetStream error \(jerr.rawValue))")
    }

    /// Stops delivering (a delivery in progress finishes on its thread) and closes the
    /// connection. Idempotent.
    public func close() {
        let sub = lock.withLock { () -> OpaquePointer? in
            defer { subscription = nil }
            return subscription
        }
        if let sub {
            natsSubscription_Unsubscribe(sub)
            natsSubscription_Destroy(sub)
        }
        connection.close()
    }
}

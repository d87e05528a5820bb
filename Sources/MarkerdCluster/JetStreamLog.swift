internal import CNats
import Foundation

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
        if try streamInfo() == nil {
            do {
                try createStream(replicas: replicas)
            } catch {
                // Another replica may have created it meanwhile.
                guard try streamInfo() != nil else { throw error }
            }
        }
    }

    /// The stream's last sequence and first sequence (0 and 0 while it is empty), or nil when it
    /// does not exist.
    private func streamInfo() throws(NatsError) -> (first: UInt64, last: UInt64)? {
        var si: UnsafeMutablePointer<jsStreamInfo>?
        var jerr = jsErrCode(0)
        let s = js_GetStreamInfo(&si, connection.jetStream, streamName, nil, &jerr)
        if s == NATS_NOT_FOUND { return nil }
        try NatsError.check(s, "read stream \(streamName)")
        defer { jsStreamInfo_Destroy(si) }
        return (si!.pointee.State.FirstSeq, si!.pointee.State.LastSeq)
    }

    private func createStream(replicas: Int) throws(NatsError) {
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
        guard let info = try streamInfo() else { throw NatsError(NATS_NOT_FOUND, "read stream \(streamName)") }
        return info.last
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
                let count = Int(natsMsg_GetDataLength(msg))
                let bytes = natsMsg_GetData(msg).map { p in
                    p.withMemoryRebound(to: UInt8.self, capacity: count) { Array(UnsafeBufferPointer(start: $0, count: count)) }
                } ?? []
                Unmanaged<Delivery>.fromOpaque(closure).takeUnretainedValue().deliver(sequence, bytes)
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

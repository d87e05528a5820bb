import Foundation
import Synchronization

/// One live replica as the others see it: its group, name and the URLs its clients use.
public struct Member: Sendable, Equatable, Codable {
    /// The replica group (`--cluster-group`).
    public var group: String
    /// The replica's name (`--node-id`).
    public var node: String
    /// NNG URLs of its RPC listeners (`--advertise`).
    public var endpoints: [String]
    /// Its HTTP gateway URLs (`--advertise-http`); empty without a gateway.
    public var httpEndpoints: [String]

    public init(group: String, node: String, endpoints: [String], httpEndpoints: [String]) {
        self.group = group
        self.node = node
        self.endpoints = endpoints
        self.httpEndpoints = httpEndpoints
    }

    /// The key in the members bucket: `GROUP.NODE` (both `[A-Za-z0-9_-]`).
    var key: String { group + "." + node }
}

/// The live replicas of the cluster, kept in the JetStream key-value bucket `markerd-members`.
///
/// Each replica writes its own ``Member`` under `GROUP.NODE` every ``heartbeat`` and watches the
/// bucket into a local table, so ``members(of:)`` is a local lookup (a lock and a dictionary).
/// A member whose last write is older than ``maxAge`` counts as dead (the bucket's values also
/// age out after it): a replica killed with SIGKILL drops out of redirects within `maxAge`; one
/// that stops gracefully (``stop()``) deletes its key and drops out at once. Ages are measured
/// from the NATS server's timestamp of each write, so replica and server clocks should agree
/// within a fraction of `maxAge` (NTP).
public final class MemberRegistry: @unchecked Sendable {
    /// The bucket's name.
    public static let bucketName = "markerd-members"
    /// How often this replica rewrites its entry. Default 1 s.
    public let heartbeat: Duration
    /// How long an entry counts as live after its last write. Default 3 s.
    public let maxAge: Duration
    /// This replica.
    public let me: Member

    private let bucket: KeyValueBucket
    /// key -> (member, when it was last written, on this host's monotonic clock).
    private let table = Mutex<[String: (member: Member, written: ContinuousClock.Instant)]>([:])
    /// Guards `watch` and `heartbeatTimer` (nil once stopped).
    private let lock = NSLock()
    private var watch: KeyValueBucket.Watch?
    private var heartbeatTimer: DispatchSourceTimer?
    /// Where the heartbeat runs (serial: ``stop()`` waits on it for a beat in flight).
    private let heartbeatQueue = DispatchQueue(label: "markerd.members.heartbeat")

    /// Opens (or creates) the bucket, writes `me` once, watches the bucket and starts the heartbeat.
    /// - Throws: ``NatsError`` when JetStream does not answer (the first write must succeed).
    public init(connection: NatsConnection, me: Member, replicas: Int = 1,
                heartbeat: Duration = .seconds(1), maxAge: Duration = .seconds(3)) throws(NatsError) {
        self.me = me
        self.heartbeat = heartbeat
        self.maxAge = maxAge
        bucket = try KeyValueBucket(connection: connection, name: Self.bucketName,
                                    maxAge: maxAge,
                                    replicas: replicas)
        let value = Array(try! JSONEncoder().encode(me))  // plain strings: cannot fail
        try bucket.put(me.key, value)
        let w = try bucket.watch { [weak self] change in
            guard let self, let change else { return }
            let member = change.value.flatMap { try? JSONDecoder().decode(Member.self, from: Data($0)) }
            self.table.withLock { t in
                if let member {
                    t[change.key] = (member, ContinuousClock.now - .nanoseconds(change.ageNs))
                } else {
                    t[change.key] = nil
                }
            }
        }
        let timer = DispatchSource.makeTimerSource(queue: heartbeatQueue)
        timer.schedule(deadline: .now() + .nanoseconds(Int(heartbeat.nanoseconds)), repeating: .nanoseconds(Int(heartbeat.nanoseconds)))
        timer.setEventHandler { [bucket] in
            // A failed write (NATS down) is retried at the next beat; others see us age out meanwhile.
            try? bucket.put(me.key, value)
        }
        timer.resume()
        lock.withLock { (watch, heartbeatTimer) = (w, timer) }
    }

    /// The live members of `group` (written within ``maxAge``), ordered by node name.
    public func members(of group: String) -> [Member] {
        let now = ContinuousClock.now
        return table.withLock { t in
            t.values.filter { $0.member.group == group && now - $0.written <= maxAge }.map(\.member)
        }.sorted { $0.node < $1.node }
    }

    /// Stops the heartbeat and the watcher and deletes this replica's entry (others drop it at once).
    /// Idempotent.
    public func stop() {
        let (w, timer) = lock.withLock { () -> (KeyValueBucket.Watch?, DispatchSourceTimer?) in
            defer { (watch, heartbeatTimer) = (nil, nil) }
            return (watch, heartbeatTimer)
        }
        guard let timer else { return }
        timer.cancel()
        heartbeatQueue.sync {}  // a beat already running ends before the delete, so it cannot write the entry back
        w?.stop()
        try? bucket.delete(me.key)
    }

    deinit { stop() }
}

extension Duration {
    /// Whole nanoseconds (saturating).
    var nanoseconds: Int64 {
        let c = components
        return c.seconds.multipliedReportingOverflow(by: 1_000_000_000).overflow ? .max
            : c.seconds * 1_000_000_000 + c.attoseconds / 1_000_000_000
    }
}

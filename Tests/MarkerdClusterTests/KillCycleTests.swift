import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdTestSupport
import Synchronization
import Testing

/// The failover test of issue 39: a client that knows all three replicas writes under load while
/// one markerd replica (kill -9) and then one NATS server (kill -9) are killed and restarted, in
/// turn, `CLUSTER_KILL_CYCLES` times (default 3; the issue's target run uses 30). Afterwards no
/// acknowledged write is lost and the replicas hold the same layer.
@Suite(.serialized)
struct KillCycleTests {
    /// Kill cycles: `CLUSTER_KILL_CYCLES`, default 3 (`make test` stays fast).
    static var cycles: Int { ProcessInfo.processInfo.environment["CLUSTER_KILL_CYCLES"].flatMap(Int.init) ?? 3 }

    /// A client of all replicas: a write goes to the current one and, when that fails with a
    /// transport error or UNAVAILABLE, to the next, with the same idempotency key (so it applies
    /// at most once), until `patience` passed.
    final class FailoverWriter: @unchecked Sendable {
        let clients: [MarkerdClient]
        var current = 0

        init(_ clients: [MarkerdClient]) { self.clients = clients }

        /// The reply, or nil when no replica acknowledged the write within `patience`.
        func upsert(_ layer: String, _ markers: [V1.Marker], patience: Duration = .seconds(30)) -> V1.UpsertMarkersResponse? {
            let key = MarkerdClient.newIdempotencyKey()
            let deadline = ContinuousClock.now + patience
            while ContinuousClock.now < deadline {
                do {
                    return try clients[current].upsertMarkers(layer, markers, idempotencyKey: key)
                } catch let e where e.code == .unavailable || e.code == .deadlineExceeded {
                    current = (current + 1) % clients.count
                } catch {
                    Issue.record("write failed for another reason than a replica or NATS being down: \(error)")
                    return nil
                }
            }
            return nil
        }

        /// The highest sequence any of the clients saw.
        var lastSequence: UInt64 { clients.map(\.lastSequence).max() ?? 0 }
    }

    @Test func noAcknowledgedWriteIsLostWhileReplicasAndNATSServersDie() throws {
        let cluster = try ClusterHarness()
        for i in 0..<3 { try cluster.startReplica(i) }
        let writer = FailoverWriter(try (0..<3).map { try cluster.client($0, timeout: .seconds(3)) })
        try ReplicationTests.createLayer(writer.clients[0])
        // The load: one writer thread, each write a new marker, recorded once acknowledged.
        let acknowledged = Mutex<[String]>([])
        let stop = Atomic<Bool>(false)
        let done = DispatchSemaphore(value: 0)
        Thread.detachNewThread {
            var n = 0
            while !stop.load(ordering: .relaxed) {
                let id = "w\(n)"
                if writer.upsert(ReplicationTests.layer, [marker(id, Double(n % 80), Double(n % 170))]) != nil {
                    acknowledged.withLock { $0.append(id) }
                }
                n += 1
            }
            done.signal()
        }
        func writesGoOn(_ what: String) throws {
            let before = acknowledged.withLock { $0.count }
            try waitUntil("writes are acknowledged again after \(what)", timeout: .seconds(60)) {
                acknowledged.withLock { $0.count } >= before + 10
            }
        }
        for cycle in 0..<Self.cycles {
            let replica = cycle % 3
            cluster.killReplica(replica)
            try writesGoOn("killing replica \(replica)")
            try cluster.startReplica(replica)
            let server = (cycle + 1) % 3
            cluster.killNats(server)
            try writesGoOn("killing NATS server \(server)")
            try cluster.startNats(server)
            try writesGoOn("restarting NATS server \(server)")
        }
        stop.store(true, ordering: .relaxed)
        done.wait()
        let acked = acknowledged.withLock { $0 }
        let last = writer.lastSequence
        let states = try (0..<3).map { try LayerState.read(ReplicationTests.layer, from: try cluster.client($0, readYourWrites: true), atLeast: last) }
        let held = Set(states[0].markers.map { String($0.prefix { $0 != "@" }) })
        let lost = acked.filter { !held.contains($0) }
        #expect(acked.count >= 20 * Self.cycles)
        #expect(lost.isEmpty, "acknowledged but lost: \(lost.prefix(20))")
        #expect(states[1] == states[0])
        #expect(states[2] == states[0])
    }
}

import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdCluster
import MarkerdTestSupport
import Testing

/// Cluster mode's snapshots end to end: CreateSnapshot publishes a snapshot exact at the log
/// sequence the replica applied to `MARKERD_SNAP_<group>` and purges the log below it; a replica
/// started empty restores it and applies only the log's tail.
@Suite(.serialized)
struct SnapshotTests {
    @Test func anEmptyReplicaRestoresThePublishedSnapshotAndTheTail() throws {
        let cluster = try ClusterHarness()
        let clients = try (0..<2).map { try cluster.startReplica($0) }
        try ReplicationTests.createLayer(clients[0])
        var rng = SplitMix64(seed: testSeed())
        // Long ids, so that the snapshot (about 2 MB) takes more than one message of NATS's
        // default 1 MiB max_payload.
        func write(_ batches: Range<Int>) throws {
            for batch in batches {
                let markers = (0..<500).map { i in
                    marker("marker-\(String(repeating: "x", count: 48))-\(batch * 500 + i)", -60 + 120 * rng.unit(), -170 + 340 * rng.unit())
                }
                _ = try clients[batch % 2].upsertMarkers(ReplicationTests.layer, markers)
            }
        }
        let log = try JetStreamLog(connection: NatsConnection(servers: cluster.natsURLs.split(separator: ",").map(String.init), name: "test"),
                                   group: "default", replicas: 3)
        defer { log.close() }
        try write(0..<24)
        let first = try clients[1].createSnapshot()
        #expect(first.sizeBytes > 1 << 20)
        try write(24..<30)
        // A second snapshot replaces the first (its chunks are purged) and trims the log further.
        let snapshot = try clients[0].createSnapshot()
        #expect(snapshot.path.hasPrefix("nats:MARKERD_SNAP_default@"))
        let covered = try #require(snapshot.path.split(separator: " ").last.flatMap { UInt64($0) })
        #expect(covered >= 31)
        let published = try #require(try log.latestSnapshot())
        #expect(published.sequence == covered)
        #expect(published.bytes.count == Int(snapshot.sizeBytes))
        try write(30..<34)
        // The log holds only the records after the snapshot.
        let (firstSequence, last) = try log.sequences()
        #expect(firstSequence == covered + 1)
        #expect(last == clients.map(\.lastSequence).max())

        try cluster.startReplica(2)
        try waitUntil("replica 2 is ready") { try cluster.readyzStatus(2) == 200 }
        let restored = try LayerState.read(ReplicationTests.layer, from: try cluster.client(2, readYourWrites: true), atLeast: last)
        let reference = try LayerState.read(ReplicationTests.layer, from: try cluster.client(0, readYourWrites: true), atLeast: last)
        #expect(restored.markers.count == 17_000)
        #expect(restored == reference)
    }
}

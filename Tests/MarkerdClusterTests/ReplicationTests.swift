import Foundation
import MarkerdAPI
import MarkerdClient
import MarkerdTestSupport
import Testing

/// Cluster mode's replicated log end to end: three real `nats-server -js` and three real markerd
/// replicas of one group on loopback. Serialized: each test starts its own six processes.
@Suite(.serialized)
struct ReplicationTests {
    static let layer = "shops"

    static func createLayer(_ client: MarkerdClient) throws {
        var r = V1.CreateLayerRequest()
        r.layerID = layer
        _ = try client.createLayer(r)
    }

    @Test func writesThroughDifferentReplicasConverge() throws {
        let cluster = try ClusterHarness()
        let clients = try (0..<3).map { try cluster.startReplica($0) }
        try Self.createLayer(clients[0])
        var rng = SplitMix64(seed: testSeed())
        for batch in 0..<30 {
            let markers = (0..<20).map { i in
                marker("m\((batch * 7 + i) % 200)", -60 + 120 * rng.unit(), -170 + 340 * rng.unit())
            }
            _ = try clients[batch % 3].upsertMarkers(Self.layer, markers)
            if batch % 5 == 4 { _ = try clients[(batch + 1) % 3].removeMarkers(Self.layer, ids: ["m\(batch)", "m\(batch + 1)"]) }
        }
        let last = clients.map(\.lastSequence).max()!
        #expect(last >= 31)
        let readers = try (0..<3).map { try cluster.client($0, readYourWrites: true) }
        let states = try readers.map { try LayerState.read(Self.layer, from: $0, atLeast: last) }
        #expect(states[0].markers.count > 100)
        #expect(states[1] == states[0])
        #expect(states[2] == states[0])
    }

    @Test func minSequenceReadsYourWritesOnAnotherReplica() throws {
        let cluster = try ClusterHarness()
        let writer = try cluster.startReplica(0)
        try cluster.startReplica(1)
        try Self.createLayer(writer)
        let reader = try cluster.client(1, readYourWrites: true)
        for i in 0..<20 {
            _ = try writer.upsertMarkers(Self.layer, [marker("m\(i)", 1, Double(i))])
            reader.observe(sequence: writer.lastSequence)
            // Answered only once replica 1 applied the write: no retry, no wait in the test.
            let got = try reader.getMarkers(Self.layer, ids: ["m\(i)"])
            #expect(got.markers.map(\.id) == ["m\(i)"])
            #expect(reader.lastSequence >= writer.lastSequence)
        }
        // A sequence the log does not hold yet: UNAVAILABLE after the bounded wait, naming it.
        let ahead = writer.lastSequence + 1_000
        reader.observe(sequence: ahead)
        #expect {
            _ = try reader.getLayer(Self.layer)
        } throws: { e in
            guard let e = e as? ClientError else { return false }
            return e.code == .unavailable && "\(e)".contains("min_sequence \(ahead)")
        }
    }

    @Test func retryOnAnotherReplicaAppliesOnce() throws {
        let cluster = try ClusterHarness()
        let clients = try (0..<3).map { try cluster.startReplica($0) }
        try Self.createLayer(clients[0])
        let key = MarkerdClient.newIdempotencyKey()
        let first = try clients[0].upsertMarkers(Self.layer, [marker("a", 1, 1)], idempotencyKey: key)
        #expect(first.createdCount == 1)
        // The same request and key through the other replicas (a client that lost the reply):
        // the first reply, nothing applied again.
        for c in clients[1...] {
            c.observe(sequence: clients[0].lastSequence)
            let again = try c.upsertMarkers(Self.layer, [marker("a", 1, 1)], idempotencyKey: key)
            #expect(again == first)
        }
        // The key with another payload: refused on every replica alike.
        #expect {
            _ = try clients[2].upsertMarkers(Self.layer, [marker("a", 2, 2)], idempotencyKey: key)
        } throws: { e in (e as? ClientError)?.code == .invalidArgument }
        let last = clients.map(\.lastSequence).max()!
        let readers = try (0..<3).map { try cluster.client($0, readYourWrites: true) }
        let states = try readers.map { try LayerState.read(Self.layer, from: $0, atLeast: last) }
        #expect(states[0] == LayerState(version: states[0].version, markers: ["a@1.0,1.0"]))
        #expect(states.allSatisfy { $0 == states[0] })
    }

    @Test func replicaRestartedEmptyCatchesUpBeforeReady() throws {
        let cluster = try ClusterHarness()
        let clients = try (0..<3).map { try cluster.startReplica($0) }
        try Self.createLayer(clients[0])
        cluster.killReplica(2)
        try? FileManager.default.removeItem(at: cluster.dir.appendingPathComponent("r2"))  // whatever it kept
        for batch in 0..<50 {
            _ = try clients[batch % 2].upsertMarkers(Self.layer, (0..<100).map { marker("m\(batch)-\($0)", 10, Double($0)) })
        }
        let last = clients[0...1].map(\.lastSequence).max()!
        try cluster.startReplica(2)
        // /readyz says 503 until the replica applied the log up to its last sequence at start.
        try waitUntil("replica 2 is ready") { try cluster.readyzStatus(2) == 200 }
        let reader = try cluster.client(2, readYourWrites: true)
        let caughtUp = try LayerState.read(Self.layer, from: reader, atLeast: 0, timeout: .seconds(1))
        let reference = try LayerState.read(Self.layer, from: try cluster.client(0, readYourWrites: true), atLeast: last)
        #expect(caughtUp.markers.count == 5_000)
        #expect(caughtUp == reference)
    }
}

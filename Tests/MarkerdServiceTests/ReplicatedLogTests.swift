import Foundation
import MarkerdAPI
import MarkerdService
import MarkerdTestSupport
import Synchronization
import Testing

/// Cluster mode's apply path without NATS: services share an in-memory `ReplicatedLog` whose
/// records the test hands to every replica in order (`deliver`), as JetStream's ordered consumer
/// does on each markerd.
@Suite struct ReplicatedLogTests {
    /// An in-memory log: `append` stores (or refuses, while `refusing`), `deliver` applies every
    /// record not yet applied to every replica, in order, on the calling thread.
    final class MemoryLog: ReplicatedLog, @unchecked Sendable {
        let lock = NSLock()
        var records: [[UInt8]] = []
        var delivered: [ObjectIdentifier: Int] = [:]
        var refusing = false
        var maxRecordBytes: Int { 1 << 20 }

        func append(_ record: [UInt8], completion: @escaping @Sendable (Result<UInt64, any Error>) -> Void) {
            let sequence: UInt64? = lock.withLock {
                if refusing { return nil }
                records.append(record)
                return UInt64(records.count)
            }
            if let sequence { completion(.success(sequence)) } else { completion(.failure(CancellationError())) }
        }

        func deliver(to replicas: [MarkerService]) {
            for r in replicas {
                let (from, all) = lock.withLock { (delivered[ObjectIdentifier(r), default: 0], records) }
                for i in from..<all.count { r.applyLogged(sequence: UInt64(i + 1), record: all[i]) }
                lock.withLock { delivered[ObjectIdentifier(r)] = all.count }
            }
        }
    }

    /// Sends a mutation to `service`, delivers the log to `replicas`, returns the reply (nil while
    /// no reply came: it waits for its record).
    static func write(_ service: MarkerService, _ kind: MutationKind, _ request: some ProtoMessage, key: String,
                      log: MemoryLog, replicas: [MarkerService]) -> Result<[UInt8], RPCError>? {
        let reply = Mutex<Result<[UInt8], RPCError>?>(nil)
        service.mutate(kind, payload: request.serializedBytes(), context: CallContext(method: kind.methodName, idempotencyKey: key)) { r in
            reply.withLock { $0 = r }
        }
        log.deliver(to: replicas)
        return reply.withLock { $0 }
    }

    static func markers(_ s: MarkerService) throws -> [String] {
        try s.listMarkers(V1.ListMarkersRequest(layerID: "l", pageSize: 1000)).markers.map {
            "\($0.id)@\($0.position!.latitude),\($0.position!.longitude)"
        }.sorted()
    }

    @Test func replicasApplyTheLogAlikeAndAnswerTheWriter() throws {
        let log = MemoryLog()
        let replicas = (0..<3).map { _ in MarkerService(configuration: ServiceConfiguration(), replicatedLog: log) }
        let created = try #require(Self.write(replicas[0], .createLayer, V1.CreateLayerRequest(layerID: "l"), key: "c", log: log, replicas: replicas))
        #expect(try V1.CreateLayerResponse(serializedBytes: created.get()).layer?.version == 1)  // its log sequence
        for i in 0..<9 {
            let r = try #require(Self.write(replicas[i % 3], .upsertMarkers,
                                            V1.UpsertMarkersRequest(layerID: "l", markers: [marker("m\(i % 4)", Double(i), 1)]),
                                            key: "u\(i)", log: log, replicas: replicas))
            _ = try r.get()
        }
        // A failed mutation fails on every replica alike (and answers the writer).
        let missing = try #require(Self.write(replicas[1], .removeMarkers, V1.RemoveMarkersRequest(layerID: "nope", ids: ["x"]),
                                              key: "r", log: log, replicas: replicas))
        #expect(throws: RPCError.self) { try missing.get() }
        let versions = try replicas.map { try $0.getLayer(V1.GetLayerRequest(layerID: "l")).layer?.version }
        #expect(versions == [10, 10, 10])
        #expect(replicas.map(\.appliedSequence) == [11, 11, 11])
        let held = try replicas.map(Self.markers)
        #expect(held[0] == ["m0@8.0,1.0", "m1@5.0,1.0", "m2@6.0,1.0", "m3@7.0,1.0"])
        #expect(held[1] == held[0] && held[2] == held[0])
    }

    @Test func aKeyInTheLogTwiceAppliesOnceEverywhere() throws {
        let log = MemoryLog()
        let replicas = (0..<2).map { _ in MarkerService(configuration: ServiceConfiguration(), replicatedLog: log) }
        _ = try #require(Self.write(replicas[0], .createLayer, V1.CreateLayerRequest(layerID: "l"), key: "c", log: log, replicas: replicas)).get()
        let request = V1.UpsertMarkersRequest(layerID: "l", markers: [marker("a", 1, 1)])
        // Both replicas publish the same key before either applied it (a client retry that
        // raced its first attempt): the second record is a no-op answering the first reply.
        let first = Mutex<Result<[UInt8], RPCError>?>(nil), second = Mutex<Result<[UInt8], RPCError>?>(nil)
        replicas[0].mutate(.upsertMarkers, payload: request.serializedBytes(), context: CallContext(method: "", idempotencyKey: "k")) { r in first.withLock { $0 = r } }
        replicas[1].mutate(.upsertMarkers, payload: request.serializedBytes(), context: CallContext(method: "", idempotencyKey: "k")) { r in second.withLock { $0 = r } }
        #expect(log.records.count == 3)
        log.deliver(to: replicas)
        let a = try #require(first.withLock { $0 }).get(), b = try #require(second.withLock { $0 }).get()
        #expect(a == b)
        #expect(try V1.UpsertMarkersResponse(serializedBytes: a).createdCount == 1)
        #expect(try replicas.map { try $0.getLayer(V1.GetLayerRequest(layerID: "l")).layer?.version } == [2, 2])
        // The key with another request: INVALID_ARGUMENT, before publishing (it is applied here).
        let other = try #require(Self.write(replicas[1], .upsertMarkers, V1.UpsertMarkersRequest(layerID: "l", markers: [marker("a", 2, 2)]),
                                            key: "k", log: log, replicas: replicas))
        #expect(throws: RPCError.self) { try other.get() }
        #expect(log.records.count == 3)
    }

    @Test func aWriteTheLogDidNotTakeIsUnavailableAndNotApplied() throws {
        let log = MemoryLog()
        let replicas = [MarkerService(configuration: ServiceConfiguration(), replicatedLog: log)]
        _ = try #require(Self.write(replicas[0], .createLayer, V1.CreateLayerRequest(layerID: "l"), key: "c", log: log, replicas: replicas)).get()
        log.refusing = true
        let refused = try #require(Self.write(replicas[0], .upsertMarkers, V1.UpsertMarkersRequest(layerID: "l", markers: [marker("a", 1, 1)]),
                                              key: "k", log: log, replicas: replicas))
        #expect {
            try refused.get()
        } throws: { ($0 as? RPCError)?.code == .unavailable }
        #expect(try Self.markers(replicas[0]).isEmpty)
        // The retry with the same key applies once the log takes it.
        log.refusing = false
        let retried = try #require(Self.write(replicas[0], .upsertMarkers, V1.UpsertMarkersRequest(layerID: "l", markers: [marker("a", 1, 1)]),
                                              key: "k", log: log, replicas: replicas))
        #expect(try V1.UpsertMarkersResponse(serializedBytes: retried.get()).createdCount == 1)
        #expect(try Self.markers(replicas[0]) == ["a@1.0,1.0"])
    }

    @Test func minSequenceWaitsThenAnswersUnavailableNamingTheAppliedSequence() throws {
        let log = MemoryLog()
        let replica = MarkerService(configuration: ServiceConfiguration(), replicatedLog: log)
        _ = try #require(Self.write(replica, .createLayer, V1.CreateLayerRequest(layerID: "l"), key: "c", log: log, replicas: [replica])).get()
        try replica.waitUntilApplied(1, timeout: .zero)
        #expect {
            try replica.waitUntilApplied(2, timeout: .milliseconds(50))
        } throws: { e in
            guard let e = e as? RPCError else { return false }
            return e.code == .unavailable && e.message.contains("up to sequence 1")
        }
        replica.expectCatchUp(to: 3)
        #expect(replica.readiness.notReadyReason?.contains("applied sequence 1 of 3") == true)
    }
}

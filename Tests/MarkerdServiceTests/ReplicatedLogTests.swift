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

        /// The published snapshot (`publishSnapshot`) and the first sequence the log still holds.
        var snapshot: (sequence: UInt64, bytes: [UInt8])?
        var firstSequence: UInt64 = 1

        func publishSnapshot(_ bytes: [UInt8], covering sequence: UInt64) throws -> String {
            lock.withLock {
                snapshot = (sequence, bytes)
                firstSequence = sequence + 1
            }
            return "memory@\(sequence)"
        }

        /// A replica started now: restores the published snapshot, then applies the log's tail.
        func startReplica() throws -> MarkerService {
            let replica = MarkerService(configuration: ServiceConfiguration(), replicatedLog: self)
            if let snapshot = lock.withLock({ snapshot }) {
                try replica.restoreClusterSnapshot(snapshot.bytes, sequence: snapshot.sequence)
                lock.withLock { delivered[ObjectIdentifier(replica)] = Int(snapshot.sequence) }
            }
            deliver(to: [replica])
            return replica
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

    /// Everything a replica's state shows through the API: layers with versions, markers with
    /// positions and flags.
    static func state(_ s: MarkerService) throws -> [String] {
        try s.listLayers(V1.ListLayersRequest()).layers.sorted { $0.id < $1.id }.flatMap { l in
            ["\(l.id) v\(l.version) n\(l.markerCount)"] + (try s.listMarkers(V1.ListMarkersRequest(layerID: l.id, pageSize: 1000)).markers.map {
                "\($0.id)@\($0.position!.latitude),\($0.position!.longitude) visible=\($0.visible ?? true) draggable=\($0.draggable ?? false)"
            }.sorted())
        }
    }

    /// A cluster snapshot exact at S plus the log after S gives the replica that applied the
    /// log from 1: the same layers, markers, versions, drag ids, open drags and idempotency keys.
    @Test func snapshotAtSPlusTheTailEqualsTheWholeLog() throws {
        let log = MemoryLog()
        var replicas = (0..<2).map { _ in MarkerService(configuration: ServiceConfiguration(), replicatedLog: log) }
        func ok(_ via: Int, _ kind: MutationKind, _ request: some ProtoMessage, key: String) throws -> [UInt8] {
            try #require(Self.write(replicas[via], kind, request, key: key, log: log, replicas: replicas)).get()
        }
        _ = try ok(0, .createLayer, V1.CreateLayerRequest(layerID: "l"), key: "c1")
        _ = try ok(1, .createLayer, V1.CreateLayerRequest(layerID: "k"), key: "c2")
        var rng = SplitMix64(seed: testSeed())
        for i in 0..<20 {
            let batch = (0..<5).map { j in
                marker("m\((i * 5 + j) % 37)", Double(rng.next() % 170) - 85, Double(rng.next() % 360) - 180)
            }
            _ = try ok(i % 2, .upsertMarkers, V1.UpsertMarkersRequest(layerID: i % 3 == 0 ? "k" : "l", markers: batch), key: "u\(i)")
        }
        let removed = try ok(0, .removeMarkers, V1.RemoveMarkersRequest(layerID: "l", ids: ["m1", "m2"]), key: "r1")
        let draggable = ["d1", "d2"].map { marker($0, 10, 20) { $0.draggable = true } }
        _ = try ok(0, .upsertMarkers, V1.UpsertMarkersRequest(layerID: "l", markers: draggable), key: "u-drag")
        // A drag raises the layer's next drag id (kept by the snapshot's LayerState).
        let drag = try V1.BeginDragResponse(serializedBytes: ok(1, .beginDrag, V1.BeginDragRequest(layerID: "l", markerID: "d1"), key: "d1"))
        _ = try ok(1, .endDrag, V1.EndDragRequest(layerID: "l", dragID: drag.dragID, position: V1.LatLng(latitude: 1, longitude: 2)), key: "d2")
        // A drag begun before the snapshot and ended after it, through the restored replica.
        let open = try V1.BeginDragResponse(serializedBytes: ok(0, .beginDrag, V1.BeginDragRequest(layerID: "l", markerID: "d2"), key: "d-open"))

        let snapshot = try replicas[0].createSnapshot(V1.CreateSnapshotRequest())
        let covered = replicas[0].appliedSequence
        #expect(snapshot.path == "memory@\(covered)")
        #expect(log.firstSequence == covered + 1)
        // The tail: more writes after the snapshot.
        _ = try ok(1, .moveMarkers, V1.MoveMarkersRequest(layerID: "l", moves: [V1.MarkerMove(id: "m3", position: V1.LatLng(latitude: 3, longitude: 4))]), key: "v1")
        _ = try ok(0, .upsertMarkers, V1.UpsertMarkersRequest(layerID: "k", markers: [marker("late", 5, 6)]), key: "u-late")

        let restored = try log.startReplica()
        replicas.append(restored)
        #expect(restored.appliedSequence == replicas[0].appliedSequence)
        let states = try replicas.map(Self.state)
        #expect(states[0].count > 10)
        #expect(states[1] == states[0])
        #expect(states[2] == states[0])
        _ = try ok(2, .endDrag, V1.EndDragRequest(layerID: "l", dragID: open.dragID, position: V1.LatLng(latitude: 9, longitude: 9)), key: "d-close")
        #expect(try replicas.map(Self.state) == Array(repeating: try Self.state(replicas[0]), count: 3))
        // Drag ids continue alike: a drag begun through the restored replica ends through another.
        let next = try V1.BeginDragResponse(serializedBytes: ok(2, .beginDrag, V1.BeginDragRequest(layerID: "l", markerID: "d1"), key: "d3"))
        _ = try ok(0, .endDrag, V1.EndDragRequest(layerID: "l", dragID: next.dragID, position: V1.LatLng(latitude: 7, longitude: 8)), key: "d4")
        #expect(try replicas.map(Self.state) == Array(repeating: try Self.state(replicas[0]), count: 3))
        // Keys applied before the snapshot are known to the restored replica: a retry answers the
        // first reply and appends nothing.
        let records = log.records.count
        let again = try #require(Self.write(restored, .removeMarkers, V1.RemoveMarkersRequest(layerID: "l", ids: ["m1", "m2"]),
                                            key: "r1", log: log, replicas: replicas)).get()
        #expect(again == removed)
        #expect(log.records.count == records)
    }

    /// Snapshots without `LayerState` sections (written before markerd kept them) still load:
    /// the markers come back, only the versions are not exact.
    @Test func aSnapshotWithoutLayerStatesStillLoads() throws {
        let log = MemoryLog()
        let writer = MarkerService(configuration: ServiceConfiguration(), replicatedLog: log)
        _ = try #require(Self.write(writer, .createLayer, V1.CreateLayerRequest(layerID: "l"), key: "c", log: log, replicas: [writer])).get()
        _ = try #require(Self.write(writer, .upsertMarkers, V1.UpsertMarkersRequest(layerID: "l", markers: [marker("a", 1, 1), marker("b", 2, 2)]),
                                    key: "u", log: log, replicas: [writer])).get()
        let (sequence, bytes, _) = try writer.encodeClusterSnapshot()
        var withoutStates: [UInt8] = [], stripped = 0
        var at = 0
        while at < bytes.count {
            let n = Int(bytes[at]) | Int(bytes[at + 1]) << 8 | Int(bytes[at + 2]) << 16 | Int(bytes[at + 3]) << 24
            let section = try V1.SnapshotSection(serializedBytes: Array(bytes[at + 4..<at + 4 + n]))
            if case .layerState? = section.section { stripped += 1 } else { withoutStates += bytes[at..<at + 4 + n] }
            at += 4 + n
        }
        #expect(stripped == 1)
        let restored = MarkerService(configuration: ServiceConfiguration(), replicatedLog: log)
        try restored.restoreClusterSnapshot(withoutStates, sequence: sequence)
        #expect(try Self.markers(restored) == Self.markers(writer))
        #expect(restored.appliedSequence == sequence)
    }

    /// A replica that missed records the log purged after a snapshot applies nothing past the
    /// gap and says why it is not ready.
    @Test func aGapInTheLogStopsTheApply() throws {
        let log = MemoryLog()
        let replica = MarkerService(configuration: ServiceConfiguration(), replicatedLog: log)
        let reported = Mutex<[String]>([])
        replica.onLogGap { gap in reported.withLock { $0.append(gap) } }
        var create = V1.JournalRecord()
        create.method = MutationKind.createLayer.methodName
        create.payload = V1.CreateLayerRequest(layerID: "l").serializedBytes()
        replica.applyLogged(sequence: 1, record: create.serializedBytes())
        create.payload = V1.CreateLayerRequest(layerID: "after-gap").serializedBytes()
        replica.applyLogged(sequence: 3, record: create.serializedBytes())
        replica.applyLogged(sequence: 4, record: create.serializedBytes())
        #expect(replica.appliedSequence == 1)
        #expect(try replica.listLayers(V1.ListLayersRequest()).layers.map(\.id) == ["l"])
        #expect(reported.withLock { $0.count } == 1)
        #expect(replica.readiness.notReadyReason?.contains("continues at sequence 3") == true)
    }

    /// An animation that ended is expired (the layer's version raised) at the same log position
    /// on every replica: a read that finds it due appends an expiry record instead of raising
    /// the version by its own clock.
    @Test func animationsExpireAtTheSameLogPositionOnEveryReplica() throws {
        let log = MemoryLog()
        let replicas = (0..<2).map { _ in MarkerService(configuration: ServiceConfiguration(), replicatedLog: log) }
        _ = try #require(Self.write(replicas[0], .createLayer, V1.CreateLayerRequest(layerID: "l"), key: "c", log: log, replicas: replicas)).get()
        let animated = marker("a", 1, 1) { $0.animation = V1.Animation(kind: .drop, durationMs: 1) }
        let upserted = try #require(Self.write(replicas[0], .upsertMarkers, V1.UpsertMarkersRequest(layerID: "l", markers: [animated]),
                                               key: "u", log: log, replicas: replicas)).get()
        let before = try V1.UpsertMarkersResponse(serializedBytes: upserted).layerVersion
        func versions() throws -> [UInt64?] { try replicas.map { try $0.getLayer(V1.GetLayerRequest(layerID: "l")).layer?.version } }
        // Reads on replica 1 only, until one finds the animation ended and appends the expiry.
        try waitUntil("a read appended the expiry record", timeout: .seconds(10)) {
            _ = try replicas[1].getLayer(V1.GetLayerRequest(layerID: "l"))
            return log.lock.withLock { log.records.count } == 3
        }
        // The reading replica did not raise its version by its own clock (replica 0 is not read
        // before the delivery: its read would append an expiry record too).
        #expect(try replicas[1].getLayer(V1.GetLayerRequest(layerID: "l")).layer?.version == before)
        log.deliver(to: replicas)
        #expect(try versions() == [before + 1, before + 1])
        // Expired for good: further reads append nothing.
        _ = try versions()
        #expect(log.lock.withLock { log.records.count } == 3)
    }

    /// DragTo goes through the log in cluster mode: every replica moves the marker and raises
    /// the version alike; a drag this replica does not know is NOT_FOUND without a record.
    @Test func dragToIsReplicated() throws {
        let log = MemoryLog()
        let replicas = (0..<2).map { _ in MarkerService(configuration: ServiceConfiguration(), replicatedLog: log) }
        func ok(_ via: Int, _ kind: MutationKind, _ request: some ProtoMessage, key: String) throws -> [UInt8] {
            try #require(Self.write(replicas[via], kind, request, key: key, log: log, replicas: replicas)).get()
        }
        _ = try ok(0, .createLayer, V1.CreateLayerRequest(layerID: "l"), key: "c")
        _ = try ok(0, .upsertMarkers, V1.UpsertMarkersRequest(layerID: "l", markers: [marker("a", 1, 1) { $0.draggable = true }]), key: "u")
        let drag = try V1.BeginDragResponse(serializedBytes: ok(1, .beginDrag, V1.BeginDragRequest(layerID: "l", markerID: "a"), key: "b"))
        for i in 1...3 {
            _ = try replicas[i % 2].dragTo(V1.DragToRequest(layerID: "l", dragID: drag.dragID, position: V1.LatLng(latitude: Double(i), longitude: 5)))
        }
        #expect(log.records.count == 6)
        log.deliver(to: replicas)
        let states = try replicas.map(Self.state)
        #expect(states[0].contains("a@3.0,5.0 visible=true draggable=true"))
        #expect(states[1] == states[0])
        #expect {
            _ = try replicas[0].dragTo(V1.DragToRequest(layerID: "l", dragID: "drag-999", position: V1.LatLng(latitude: 1, longitude: 1)))
        } throws: { ($0 as? RPCError)?.code == .notFound }
        #expect(log.records.count == 6)
    }
}

import Dispatch
import Foundation
import MarkerdAPI
import MarkerdJournal
@testable import MarkerdService
import MarkerdTestSupport
import Synchronization
import Testing

/// Idempotency keys through the service: a repeat returns the first reply byte for byte and
/// applies nothing, before and after restarts (from the journal, from a snapshot, from a
/// snapshot of the old one-section-per-key format); an expired key is new; a key reused for
/// another method with the same payload bytes is INVALID_ARGUMENT.
@Suite struct IdempotencyRestartTests {
    static let hour: Int64 = 3_600_000

    /// A data directory removed at the end, and the configuration of a service on it.
    final class DataDir {
        let path = FileManager.default.temporaryDirectory.appendingPathComponent("idem-\(UUID().uuidString)").path
        /// The system clock, moved ahead by the test (mutations are stamped by the system clock).
        let clock = ManualClock()
        var config = ServiceConfiguration()
        init() {
            config.dataDirectory = path
            config.fsync = .off
            config.snapshotEveryBytes = 0
            config.clock = clock.read
        }
        deinit { try? FileManager.default.removeItem(atPath: path) }
        func open() throws -> MarkerService { try MarkerService.open(configuration: config) }
    }

    /// One mutation with the given key, awaited.
    static func call(_ s: MarkerService, _ kind: MutationKind, _ payload: [UInt8], key: String) -> Result<[UInt8], RPCError> {
        let done = DispatchSemaphore(value: 0)
        let box = Mutex<Result<[UInt8], RPCError>?>(nil)
        s.mutate(kind, payload: payload, context: CallContext(method: kind.methodName, idempotencyKey: key)) { r in
            box.withLock { $0 = r }
            done.signal()
        }
        done.wait()
        return box.withLock { $0! }
    }

    static func layerVersion(_ s: MarkerService, _ id: String) throws -> UInt64 {
        try #require(s.getLayerStats(V1.GetLayerStatsRequest(layerID: id)).stats).version
    }

    static func moveRequest(_ lat: Double) -> [UInt8] {
        V1.MoveMarkersRequest(layerID: "l", moves: [move("a", lat, 1)]).serializedBytes()
    }

    @Test("a repeat after a restart gets the first reply byte for byte, from the journal and from a snapshot")
    func repeatAcrossRestarts() throws {
        let dir = DataDir()
        var s = try dir.open()
        try makeLayer(s, "l")
        try upsert(s, "l", [marker("a", 1, 1), marker("b", 2, 2)])
        let first = try Self.call(s, .moveMarkers, Self.moveRequest(10), key: "move-1").get()
        _ = try Self.call(s, .moveMarkers, Self.moveRequest(20), key: "move-2").get()
        for restart in ["journal", "snapshot", "snapshot and journal"] {
            if restart == "snapshot" { _ = try s.createSnapshot(V1.CreateSnapshotRequest()) }
            if restart == "snapshot and journal" {
                // Keys in both: the snapshot's (taken before) and the journal's after it.
                _ = try Self.call(s, .moveMarkers, Self.moveRequest(30), key: "move-3").get()
                _ = try s.createSnapshot(V1.CreateSnapshotRequest())
                _ = try Self.call(s, .moveMarkers, Self.moveRequest(20), key: "move-4").get()
            }
            s.close()
            s = try dir.open()
            let version = try Self.layerVersion(s, "l")
            let again = try Self.call(s, .moveMarkers, Self.moveRequest(10), key: "move-1").get()
            #expect(byteMismatch(again, first) == nil, "after a restart from the \(restart)")
            #expect(try Self.layerVersion(s, "l") == version, "applied again after a restart from the \(restart)")
            #expect(try s.getMarkers(V1.GetMarkersRequest(layerID: "l", ids: ["a"])).markers.first?.position?.latitude == 20)
            #expect(throws: RPCError.self) { try Self.call(s, .moveMarkers, Self.moveRequest(11), key: "move-1").get() }
        }
        s.close()
    }

    @Test("a key whose mutation the snapshot covers but whose reply comes after the snapshot's rotation is in the snapshot")
    func replyAfterRotation() throws {
        let dir = DataDir()
        var s = try dir.open()
        try makeLayer(s, "l")
        try upsert(s, "l", [marker("a", 1, 1)])
        // A record whose completion waits for the gate holds back the completions after it
        // (the journal runs them in order), so the move below stays in flight.
        let gate = DispatchSemaphore(value: 0)
        _ = try #require(s.journal).append([0xFF]) { _ in gate.wait() }
        let moved = Mutex<Result<[UInt8], RPCError>?>(nil)
        let movedDone = DispatchSemaphore(value: 0)
        s.mutate(.moveMarkers, payload: Self.moveRequest(10), context: CallContext(method: MutationKind.moveMarkers.methodName, idempotencyKey: "m")) { r in
            moved.withLock { $0 = r }
            movedDone.signal()
        }
        let snapshotted = DispatchSemaphore(value: 0)
        Thread.detachNewThread { [s] in
            _ = try? s.createSnapshot(V1.CreateSnapshotRequest())
            snapshotted.signal()
        }
        // Before the fix the snapshot finished here without the key; now it waits for the move.
        let finishedEarly = snapshotted.wait(timeout: .now() + .seconds(1)) == .success
        gate.signal()
        if !finishedEarly { snapshotted.wait() }
        movedDone.wait()
        let first = try #require(moved.withLock { $0 }).get()
        s.close()
        s = try dir.open()
        defer { s.close() }
        let version = try Self.layerVersion(s, "l")
        #expect(byteMismatch(try Self.call(s, .moveMarkers, Self.moveRequest(10), key: "m").get(), first) == nil)
        #expect(try Self.layerVersion(s, "l") == version)
    }

    @Test("a key is remembered for its TTL and new after it, across restarts (from a snapshot and from the journal)")
    func expiryAcrossRestarts() throws {
        let dir = DataDir()
        var s = try dir.open()
        try makeLayer(s, "l")
        try upsert(s, "l", [marker("a", 1, 1)])
        let inSnapshot = try Self.call(s, .moveMarkers, Self.moveRequest(10), key: "in-snapshot").get()
        _ = try s.createSnapshot(V1.CreateSnapshotRequest())
        let inJournal = try Self.call(s, .moveMarkers, Self.moveRequest(20), key: "in-journal").get()
        s.close()
        dir.clock.advance(23 * Self.hour)
        s = try dir.open()
        var version = try Self.layerVersion(s, "l")
        #expect(byteMismatch(try Self.call(s, .moveMarkers, Self.moveRequest(10), key: "in-snapshot").get(), inSnapshot) == nil)
        #expect(byteMismatch(try Self.call(s, .moveMarkers, Self.moveRequest(20), key: "in-journal").get(), inJournal) == nil)
        #expect(try Self.layerVersion(s, "l") == version)
        s.close()
        dir.clock.advance(Self.hour)
        s = try dir.open()
        defer { s.close() }
        // 24 h on, both keys are new: applied afresh, and free for another request.
        version = try Self.layerVersion(s, "l")
        let fresh = try V1.MoveMarkersResponse(serializedBytes: Self.call(s, .moveMarkers, Self.moveRequest(10), key: "in-snapshot").get())
        #expect(fresh.layerVersion == version + 1)
        _ = try Self.call(s, .moveMarkers, Self.moveRequest(5), key: "in-journal").get()
        #expect(try s.getMarkers(V1.GetMarkersRequest(layerID: "l", ids: ["a"])).markers.first?.position?.latitude == 5)
    }

    @Test("one key for ClearLayer then DeleteLayer of the same layer (byte-identical payloads) is INVALID_ARGUMENT, also after restarts")
    func sameKeyOtherMethod() throws {
        let dir = DataDir()
        var s = try dir.open()
        try makeLayer(s, "l")
        try upsert(s, "l", [marker("a", 1, 1)])
        let clear = V1.ClearLayerRequest(layerID: "l").serializedBytes()
        let delete = V1.DeleteLayerRequest(layerID: "l").serializedBytes()
        #expect(clear == delete)
        _ = try Self.call(s, .clearLayer, clear, key: "k").get()
        for restart in ["none", "journal", "snapshot"] {
            if restart == "snapshot" { _ = try s.createSnapshot(V1.CreateSnapshotRequest()) }
            if restart != "none" {
                s.close()
                s = try dir.open()
            }
            #expect(throws: RPCError.invalidArgument("idempotency_key \"k\" was already used for a different request"), "restart: \(restart)") {
                try Self.call(s, .deleteLayer, delete, key: "k").get()
            }
            #expect(try s.listLayers(V1.ListLayersRequest()).layers.map(\.id) == ["l"], "restart: \(restart)")
        }
        s.close()
    }

    @Test("snapshots of the old format (one IdempotencyEntry section per key) still restore their keys")
    func oldSnapshotFormat() throws {
        let dir = DataDir()
        let upsertA = V1.UpsertMarkersRequest(layerID: "l", markers: [marker("a", 1, 1)]).serializedBytes()
        var reply = V1.UpsertMarkersResponse()
        reply.createdCount = 1
        reply.layerVersion = 41
        func entry(_ key: String, at: Int64) -> V1.SnapshotSection.Section {
            var response = V1.Response()
            response.code = .ok
            response.payload = reply.serializedBytes()
            return .idempotency(V1.IdempotencyEntry(key: key, requestDigest: RequestDigest.digest(method: MutationKind.upsertMarkers.methodName, payload: upsertA),
                                                    response: response.serializedBytes(), atUnixMs: at))
        }
        let (journal, _) = try Journal.open(directory: dir.path, snapshotSection: { _ in }, record: { _, _ in })
        let writer = try journal.makeSnapshotWriter(coveredSequence: 0)
        for section: V1.SnapshotSection.Section in [
            .header(V1.SnapshotHeader(formatVersion: 1, coversSequence: 0, createdAtUnixMs: dir.clock.now)),
            .layer(V1.CreateLayerRequest(layerID: "l")),
            entry("kept", at: dir.clock.now - Self.hour),
            entry("expired", at: dir.clock.now - 24 * Self.hour),
            .footer(V1.SnapshotFooter(layers: 1, markers: 0)),
        ] {
            var s = V1.SnapshotSection()
            s.section = section
            try writer.append(s.serializedBytes())
        }
        try writer.commit()
        try journal.close()

        let s = try dir.open()
        defer { s.close() }
        let kept = try Self.call(s, .upsertMarkers, upsertA, key: "kept").get()
        #expect(byteMismatch(kept, reply.serializedBytes()) == nil)
        #expect(try s.getLayerStats(V1.GetLayerStatsRequest(layerID: "l")).stats?.markerCount == 0)
        let fresh = try V1.UpsertMarkersResponse(serializedBytes: Self.call(s, .upsertMarkers, upsertA, key: "expired").get())
        #expect(fresh.createdCount == 1)
        #expect(try s.getLayerStats(V1.GetLayerStatsRequest(layerID: "l")).stats?.markerCount == 1)
    }

    /// Journals and snapshots store these digests: the function must never change.
    @Test("RequestDigest.digest is pinned")
    func digestPinned() {
        let clear = V1.ClearLayerRequest(layerID: "l").serializedBytes()
        let pattern = (0..<100).map { UInt8(truncatingIfNeeded: $0 &* 37 &+ 11) }
        #expect(RequestDigest.digest(method: "", payload: []) == 14_497_247_894_268_771_653)
        #expect(RequestDigest.digest(method: MutationKind.clearLayer.methodName, payload: clear) == 2_456_569_507_069_699_077)
        #expect(RequestDigest.digest(method: MutationKind.deleteLayer.methodName, payload: clear) == 12_233_332_332_574_016_960)
        #expect(RequestDigest.digest(method: MutationKind.upsertMarkers.methodName, payload: pattern) == 16_591_864_433_023_858_852)
        #expect(RequestDigest.digest(method: MutationKind.upsertMarkers.methodName, payload: Array(pattern.prefix(99))) == 15_845_453_793_590_403_060)
    }
}

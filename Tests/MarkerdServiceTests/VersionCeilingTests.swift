import Foundation
import MarkerdAPI
import MarkerdCore
@testable import MarkerdJournal
@testable import MarkerdService
import MarkerdTestSupport
import Testing

/// Layer versions (and the tile versions made of them) never repeat: a reopened service, a
/// layer created again and a snapshot all start above every version revealed before, while
/// drags (not journaled) cost one reservation record per `VersionCeiling.block` versions.
@Suite struct VersionCeilingTests {
    static func version(_ s: MarkerService, _ layer: String) throws -> UInt64 {
        try #require(try s.getLayer(V1.GetLayerRequest(layerID: layer)).layer).version
    }

    static func configuration(_ dir: String) -> ServiceConfiguration {
        var config = ServiceConfiguration()
        config.dataDirectory = dir
        config.fsync = .off
        config.snapshotEveryBytes = 0
        return config
    }

    /// A layer "L" with a draggable marker "d" at (10, 10) and an open drag of it; its drag id.
    static func layerWithDrag(_ s: MarkerService) throws -> String {
        try makeLayer(s, "L")
        try upsert(s, "L", [marker("d", 10, 10) { $0.draggable = true }, marker("s", 10, 10)])
        return try mutate(s, .beginDrag, V1.BeginDragRequest(layerID: "L", markerID: "d"), as: V1.BeginDragResponse.self).dragID
    }

    static func drag(_ s: MarkerService, _ drag: String, times: Int) throws {
        for i in 0..<times {
            _ = try s.dragTo(V1.DragToRequest(layerID: "L", dragID: drag,
                                              position: V1.LatLng(latitude: 10 + Double(i % 100) / 100, longitude: 10)))
        }
    }

    static func temporaryDirectory() -> String {
        FileManager.default.temporaryDirectory.appendingPathComponent("versions-\(UUID().uuidString)").path
    }

    @Test func aLayerCreatedAgainStartsAboveEveryVersionItHad() throws {
        let s = MarkerService()
        let d = try Self.layerWithDrag(s)
        try Self.drag(s, d, times: 5)
        let before = try Self.version(s, "L")
        let tileBefore = try tile(s, "L", 0, 0, 0)
        try mutate(s, .deleteLayer, V1.DeleteLayerRequest(layerID: "L"), as: V1.DeleteLayerResponse.self)
        try makeLayer(s, "L")
        #expect(try Self.version(s, "L") > before)
        #expect(try tile(s, "L", 0, 0, 0).version > tileBefore.version)
    }

    @Test func dragsReserveVersionsOncePerBlockAndAReopenedServiceStartsAboveThem() throws {
        let dir = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var s = try MarkerService.open(configuration: Self.configuration(dir))
        let d = try Self.layerWithDrag(s)
        let records = try #require(s.journal).stats.records
        let drags = 2 * Int(VersionCeiling.block) + 100
        try Self.drag(s, d, times: drags)
        let reservations = try #require(s.journal).stats.records - records
        // One per block of versions, the next one journaled when half of the current one is used.
        #expect(reservations >= UInt64(drags) / VersionCeiling.block && reservations <= UInt64(drags) / VersionCeiling.block + 2,
                "\(reservations) reservation records for \(drags) drags")
        let before = try Self.version(s, "L")
        let tileBefore = try tile(s, "L", 0, 0, 0)
        s.close()
        s = try MarkerService.open(configuration: Self.configuration(dir))
        defer { s.close() }
        #expect(try Self.version(s, "L") > before)
        let after = try tile(s, "L", 0, 0, 0)
        #expect(after.version > tileBefore.version)
        #expect(byteMismatch(after.png, tileBefore.png) == nil, "nothing drawn into tiles changed")
    }

    @Test func aSnapshotKeepsTheReservationsOfTheJournalItLetsGo() throws {
        let dir = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        var s = try MarkerService.open(configuration: Self.configuration(dir))
        let d = try Self.layerWithDrag(s)
        try Self.drag(s, d, times: Int(VersionCeiling.block) + 10)
        let before = try Self.version(s, "L")
        _ = try s.createSnapshot(V1.CreateSnapshotRequest())
        // Every reservation was in the segments the snapshot replaced.
        #expect(try #require(s.journal).nextSequenceNumber == (try DirectoryListing(directory: dir)).segments.last?.first)
        s.close()
        s = try MarkerService.open(configuration: Self.configuration(dir))
        defer { s.close() }
        #expect(try Self.version(s, "L") > before)
    }

    @Test func aVersionThatCannotBeReservedIsRefusedAndChangesNothing() throws {
        let dir = Self.temporaryDirectory()
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try MarkerService.open(configuration: Self.configuration(dir))
        defer { s.close() }
        let d = try Self.layerWithDrag(s)
        try #require(s.journal).faults.failWrites.store(true, ordering: .relaxed)
        var refused: RPCError?
        var latitude = 10.0
        for i in 1...3 * Int(VersionCeiling.block) {
            let before = try Self.version(s, "L")
            do {
                _ = try s.dragTo(V1.DragToRequest(layerID: "L", dragID: d, position: V1.LatLng(latitude: Double(i) / 1000, longitude: 10)))
                latitude = Double(i) / 1000
            } catch {
                refused = error
                #expect(try Self.version(s, "L") == before, "the refused drag changed the version")
                break
            }
        }
        let error = try #require(refused, "every drag was taken although no reservation could be written")
        #expect(error.code == .unavailable && error.message.contains("version reservation"))
        let dragged = try #require(try s.getMarkers(V1.GetMarkersRequest(layerID: "L", ids: ["d"])).markers.first)
        let at = try #require(dragged.position?.latitude)
        #expect(abs(at - latitude) < 1e-6, "the refused drag moved the marker to \(at)")
    }
}

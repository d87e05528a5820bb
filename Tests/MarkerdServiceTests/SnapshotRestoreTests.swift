import Foundation
import MarkerdAPI
@testable import MarkerdCore
@testable import MarkerdService
import MarkerdJournal
import MarkerdTestSupport
import Synchronization
import Testing

/// Recovery from a snapshot plus a journal tail through the restore path (marker chunks decoded
/// without protobuf-c where they can be, id index and grid built once per layer) gives back the
/// state the service had: every marker, counters, answers; also for a layer with clusters (plain
/// upserts), markers with attributes (decoded without protobuf-c, stored encoded; updated and
/// dropped in the journal tail) and chunks with animations (decoded by protobuf-c).
@Suite struct SnapshotRestoreTests {
    static func state(_ s: MarkerService, ids: [String: [String]]) -> [String: [MarkerRecord?]] {
        var out: [String: [MarkerRecord?]] = [:]
        for (layer, list) in ids {
            let h = s.layers.withLock { $0[layer] }!
            out[layer] = h.lock.withReadLock { list.map { h.layer.marker(id: $0) } }
        }
        return out
    }

    @Test func recoveredStateEqualsTheStateBeforeTheRestart() throws {
        let seed = testSeed("SnapshotRestoreTests.recoveredStateEqualsTheStateBeforeTheRestart")
        var rng = SplitMix64(seed: seed)
        let (config, dir) = temporaryDurableConfiguration("restore")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try MarkerService.open(configuration: config)
        var icon = V1.RegisterIconRequest()
        icon.iconID = "red"
        icon.png = redSquarePNG
        try mutate(s, .registerIcon, icon, as: V1.RegisterIconResponse.self)
        try makeLayer(s, "plain")
        var clustered = V1.CreateLayerRequest()
        clustered.layerID = "clustered"
        var options = V1.LayerOptions()
        var c = V1.ClusteringOptions()
        c.enabled = true
        options.clustering = c
        clustered.options = options
        try mutate(s, .createLayer, clustered, as: V1.CreateLayerResponse.self)

        var ids: [String: [String]] = ["plain": [], "clustered": []]
        func batch(_ layer: String, _ range: Range<Int>, tail: Bool = false) throws {
            let markers = range.map { i in
                marker("\(layer)-\(i)", Double.random(in: -60...60, using: &rng), Double.random(in: -170...170, using: &rng)) { m in
                    m.zIndex = Int32(i % 5)
                    if i % 7 == 0 { m.icon = .iconID("red") }
                    if i % 11 == 0 { m.visible = false }
                    if i % 13 == 0 { m.draggable = true }
                    if i % 3 == (tail ? 1 : 0) {
                        m.attributes = ["name": "\(layer) \(i) \(tail ? "東京" : "Paris")", "category": "town", "population": "\(i * 37)"]
                    }
                    if i % 4_999 == 3 { m.animation = V1.Animation(kind: .bounce, durationMs: 600_000) }
                }
            }
            try upsert(s, layer, markers)
            ids[layer, default: []] += markers.map(\.id)
        }
        for k in 0..<6 { try batch("plain", k * 5_000..<(k + 1) * 5_000) }
        try batch("clustered", 0..<3_000)
        _ = try s.createSnapshot(V1.CreateSnapshotRequest())
        // The journal tail: new and updated markers, moves, removals.
        try batch("plain", 28_000..<32_000, tail: true)   // attributes replaced, added and dropped
        try mutate(s, .moveMarkers, V1.MoveMarkersRequest(layerID: "plain", moves: (0..<500).map { move("plain-\($0 * 3)", 10, Double($0 % 300) - 150) }),
                   as: V1.MoveMarkersResponse.self)
        var remove = V1.RemoveMarkersRequest()
        remove.layerID = "plain"
        remove.ids = (0..<700).map { "plain-\($0 * 7)" }
        try mutate(s, .removeMarkers, remove, as: V1.RemoveMarkersResponse.self)
        let before = Self.state(s, ids: ids)
        let stats = try s.getLayerStats(V1.GetLayerStatsRequest(layerID: "plain"))
        var viewport = V1.QueryViewportRequest()
        viewport.layerID = "plain"
        viewport.bounds = V1.Bounds(west: -20, south: -10, east: 30, north: 40)
        viewport.zoom = 3
        viewport.pageSize = 2_000
        let answer = try s.queryViewport(viewport)
        s.close()

        let r = try MarkerService.open(configuration: config)
        defer { r.close() }
        #expect(Self.state(r, ids: ids) == before, "seed \(seed)")
        let withAttributes = before["plain"]!.filter { $0?.attributes.isEmpty == false }.count
        #expect(withAttributes > 9_000, "\(withAttributes) markers with attributes")
        let h = r.layers.withLock { $0["plain"] }!
        h.lock.withReadLock {
            #expect(!h.layer.hasDeferredGrid)
            #expect(h.layer.grid.validate().problems.isEmpty, "seed \(seed)")
        }
        let again = try r.getLayerStats(V1.GetLayerStatsRequest(layerID: "plain"))
        #expect(again.stats?.markerCount == stats.stats?.markerCount && again.stats?.staticMarkerCount == stats.stats?.staticMarkerCount
                && again.stats?.liveMarkerCount == stats.stats?.liveMarkerCount && again.stats?.hiddenMarkerCount == stats.stats?.hiddenMarkerCount)
        #expect(try r.queryViewport(viewport).markers == answer.markers, "seed \(seed)")
        let clusteredLayer = r.layers.withLock { $0["clustered"] }!
        clusteredLayer.lock.withReadLock { #expect(clusteredLayer.layer.clusters != nil && clusteredLayer.layer.count == 3_000) }
    }

    /// The snapshot is replayed unvalidated; damage in it starts recovery over with validation,
    /// which falls back to the journal from sequence 1 (kept as the first snapshot's fallback)
    /// with a warning naming the damaged file; without that journal nothing older can stand in,
    /// and the error names the file.
    @Test func damagedSnapshotStartsOverWithValidation() throws {
        let (config, dir) = temporaryDurableConfiguration("restore")
        defer { try? FileManager.default.removeItem(atPath: dir) }
        let s = try MarkerService.open(configuration: config)
        try makeLayer(s, "a")
        for k in 0..<4 { try upsert(s, "a", (0..<5_000).map { marker("m\(k)-\($0)", Double($0 % 80), Double(k)) }) }
        let snap = try s.createSnapshot(V1.CreateSnapshotRequest())
        s.close()
        let path = snap.path.hasPrefix("/") ? snap.path : dir + "/" + snap.path
        let name = URL(fileURLWithPath: path).lastPathComponent
        var bytes = [UInt8](FileManager.default.contents(atPath: path)!)
        bytes[bytes.count * 3 / 4] ^= 0x40
        _ = FileManager.default.createFile(atPath: path, contents: Data(bytes))
        let lines = Mutex<[String]>([])
        let recovered = try MarkerService.open(configuration: config, progress: { l in lines.withLock { $0.append(l) } })
        #expect(try recovered.getLayerStats(V1.GetLayerStatsRequest(layerID: "a")).stats?.markerCount == 20_000)
        recovered.close()
        #expect(lines.withLock { $0.contains { $0.contains("starting over, validating the snapshots first") } })
        #expect(lines.withLock { $0.contains { $0.contains(name) && $0.contains("damaged") && $0.contains("the journal from sequence 1") } })

        try FileManager.default.moveItem(atPath: path + ".corrupt", toPath: path)
        try FileManager.default.removeItem(atPath: dir + "/journal-0000000000000001.log")
        do {
            _ = try MarkerService.open(configuration: config)
            Issue.record("recovered from a damaged snapshot")
        } catch let JournalError.damaged(file, _, _) {
            #expect(file == path)
        }
    }
}

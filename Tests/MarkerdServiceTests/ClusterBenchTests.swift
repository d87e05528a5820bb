import Foundation
import MarkerdAPI
import MarkerdCore
import MarkerdService
import MarkerdTestSupport
import Testing

/// Clustering figures (not timed assertions); run with
/// `MARKERD_BENCH=1 swift test -c release --filter ClusterBenchTests` (`MARKERD_BENCH_N=10000000` for 10M).
/// Compares with pysupercluster (clients/python/bench_supercluster.py) when it is installed.
@Suite struct ClusterBenchTests {
    typealias S = ClusterTestService

    static func residentBytes() -> Int {
        guard let s = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        return (Int(s.split(separator: " ")[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    static func ms(_ d: Duration) -> Double { Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15 }

    static func percentiles(_ samples: [Double]) -> String {
        let s = samples.sorted()
        return String(format: "p50 %.3f ms, p99 %.3f ms", s[s.count / 2], s[min(s.count - 1, s.count * 99 / 100)])
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment["MARKERD_BENCH"] == "1"))
    func clusterBenchmarks() throws {
        let n = Int(ProcessInfo.processInfo.environment["MARKERD_BENCH_N"] ?? "") ?? 1_000_000
        var rng = SplitMix64(seed: 42)
        let records = (0..<n).map { i in
            MarkerRecord(id: "m\(i)", position: LatLng(latitude: rng.unit() * 170 - 85, longitude: rng.unit() * 360 - 180))
        }
        // Core: a freshly loaded layer, then build its grid clusters.
        var layer = try MarkerLayer()
        for start in stride(from: 0, to: n, by: 100_000) { _ = try layer.upsert(Array(records[start..<min(n, start + 100_000)]), now: 0) }
        let rss0 = Self.residentBytes()
        var t0 = ContinuousClock.now
        layer.enableGridClusters(GridClusterOptions())
        let build = ContinuousClock.now - t0
        let rss1 = Self.residentBytes()
        let index = layer.gridClusterIndex!
        print(String(format: "BENCH clusters n=%d: grid build %.0f ms, RSS +%d MiB (index ~%d MiB, %d cells)",
                     n, Self.ms(build), (rss1 - rss0) >> 20, index.approximateBytes >> 20, index.cellCount))

        // One marker update (a move) with the clusters maintained, in-process.
        let moves = 100_000
        var targets: [(id: String, position: LatLng)] = []
        for _ in 0..<moves {
            targets.append((records[Int(rng.next() % UInt64(n))].id, LatLng(latitude: rng.unit() * 170 - 85, longitude: rng.unit() * 360 - 180)))
        }
        t0 = ContinuousClock.now
        for m in targets { try layer.move(id: m.id, to: m.position) }
        let perMove = Self.ms(ContinuousClock.now - t0) * 1000 / Double(moves)
        layer.disableGridClusters()
        t0 = ContinuousClock.now
        for m in targets { try layer.move(id: m.id, to: m.position) }
        let perMoveNoClusters = Self.ms(ContinuousClock.now - t0) * 1000 / Double(moves)
        print(String(format: "BENCH clusters: one marker move %.2f us with grid clusters (%.2f us without)", perMove, perMoveNoClusters))
        layer = try MarkerLayer()

        // Service: load, query world z0-3 and a city at z12.
        let s = S()
        var clustering = V1.ClusteringOptions()
        clustering.enabled = true
        try s.createLayer("b", clustering: clustering)
        t0 = ContinuousClock.now
        for start in stride(from: 0, to: n, by: 100_000) {
            try s.upsert("b", records[start..<min(n, start + 100_000)].map {
                S.marker($0.id, lat: $0.position.latitude, lng: $0.position.longitude)
            })
        }
        print(String(format: "BENCH clusters: service load of %d markers with grid clusters maintained %.0f ms", n, Self.ms(ContinuousClock.now - t0)))
        func query(_ bounds: V1.Bounds, _ z: Double, _ reps: Int) throws -> (String, Int) {
            var samples: [Double] = []
            var items = 0
            for _ in 0..<reps {
                let t = ContinuousClock.now
                let r = try s.service.getClusters(V1.GetClustersRequest(layerID: "b", bounds: bounds, zoom: z))
                samples.append(Self.ms(ContinuousClock.now - t))
                items = r.clusters.count + r.markers.count
            }
            return (Self.percentiles(samples), items)
        }
        let city = V1.Bounds(west: 2.2, south: 48.75, east: 2.5, north: 48.95)
        for z in 0...3 {
            let (p, items) = try query(S.world, Double(z), 30)
            print("BENCH clusters: GetClusters world z\(z): \(p) (\(items) items)")
        }
        let (pc, itemsCity) = try query(city, 12, 200)
        print("BENCH clusters: GetClusters city z12: \(pc) (\(itemsCity) items)")

        // Move 1 % of the markers (one MoveMarkers call per 10k) and query again.
        let k = n / 100
        t0 = ContinuousClock.now
        for start in stride(from: 0, to: k, by: 10_000) {
            try s.move("b", (start..<min(k, start + 10_000)).map { ("m\($0)", rng.unit() * 170 - 85, rng.unit() * 360 - 180) })
        }
        _ = try s.service.getClusters(V1.GetClustersRequest(layerID: "b", bounds: S.world, zoom: 2))
        print(String(format: "BENCH clusters: move 1%% (%d markers) + GetClusters world z2: %.0f ms", k, Self.ms(ContinuousClock.now - t0)))

        // pysupercluster on the same kind of input (uniform, seeded) for comparison.
        let p = Process()
        p.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        let root = URL(fileURLWithPath: #filePath).deletingLastPathComponent().deletingLastPathComponent().deletingLastPathComponent()
        p.arguments = ["python3", root.appendingPathComponent("clients/python/bench_supercluster.py").path, "\(n)", "42"]
        let out = Pipe()
        p.standardOutput = out
        p.standardError = FileHandle.nullDevice
        if (try? p.run()) != nil {
            let data = out.fileHandleForReading.readDataToEndOfFile()
            p.waitUntilExit()
            print("BENCH pysupercluster: \(String(decoding: data, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines))")
        }
    }
}

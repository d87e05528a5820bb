import Foundation
import MarkerdCore
import Testing

/// Spatial-index measurements (printed as a table, never asserted). Run with
/// `MARKERD_BENCH=1 swift test -c release -Xswiftc -enable-testing --filter GridBenchTests`.
/// `MARKERD_BENCH_SIZES=1000000,10000000` (default) picks the layer sizes,
/// `MARKERD_BENCH_LAYOUTS=city,world` the layouts.
@Suite struct GridBenchTests {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["MARKERD_BENCH"] == "1"))
    func gridBenchmarks() throws {
        let env = ProcessInfo.processInfo.environment
        let sizes = (env["MARKERD_BENCH_SIZES"] ?? "1000000,10000000").split(separator: ",").compactMap { Int($0) }
        let layouts = (env["MARKERD_BENCH_LAYOUTS"] ?? "city,world").split(separator: ",").map(String.init)
        var rows: [(String, [String: String])] = []
        for n in sizes {
            for layout in layouts { rows.append(try GridBenchBody.run(count: n, city: layout == "city")) }
        }
        GridBenchBody.printTable(rows)
    }
}

enum GridBenchBody {
    typealias Rng = CoreBenchBody.Rng

    static let columns: [String] = [
        "build s", "RSS B/marker", "RSS-id B/marker", "approx B/marker", "move far us", "move near us",
        "TILED z12", "TILED z14", "TILED z16", "NATIVE z12", "NATIVE z14", "NATIVE z16", "TILED z3", "NATIVE z3",
        "NATIVE z12 limit 1", "NATIVE z14 limit 1", "NATIVE z16 limit 1",
        "hit z12", "hit z14", "hit z16",
    ]

    static func us(_ d: Duration) -> Double {
        Double(d.components.seconds) * 1e6 + Double(d.components.attoseconds) / 1e12
    }

    static func fmt(_ v: Double) -> String {
        v >= 1000 ? String(format: "%.0f", v) : (v >= 10 ? String(format: "%.1f", v) : String(format: "%.2f", v))
    }

    /// "p50 / p99" in us of a sample set.
    static func pct(_ xs: [Double]) -> String {
        let s = xs.sorted()
        guard !s.isEmpty else { return "-" }
        let p50 = s[s.count / 2], p99 = s[min(s.count - 1, Int(Double(s.count) * 0.99))]
        return "\(fmt(p50)) / \(fmt(p99))" + (s.count < 100 ? " (n=\(s.count))" : "")
    }

    static func run(count n: Int, city: Bool) throws -> (String, [String: String]) {
        var rng = Rng(state: 42)
        let label = "\(n / 1_000_000)M \(city ? "city" : "world")"
        var row: [String: String] = [:]
        let rss0 = CoreBenchBody.residentBytes()
        var layer = try MarkerLayer()
        let t0 = ContinuousClock.now
        var i = 0
        while i < n {
            let batch = (i..<min(n, i + 100_000)).map { MarkerRecord(id: "veh-\($0 + 10_000_000)", position: CoreBenchBody.position(city, &rng)) }
            _ = try layer.upsert(batch, now: 0)
            i += batch.count
        }
        row["build s"] = String(format: "%.1f", us(ContinuousClock.now - t0) / 1e6)
        let rss = Double(CoreBenchBody.residentBytes() - rss0) / Double(n)
        row["RSS B/marker"] = String(format: "%.1f", rss)
        row["RSS-id B/marker"] = String(format: "%.1f", rss - 12)   // ids are 12 bytes
        row["approx B/marker"] = String(format: "%.1f", Double(layer.approximateBytes) / Double(n))
        print("[\(label)] built: \(row["build s"]!) s, RSS \(row["RSS B/marker"]!) B/marker")

        // Single moves: anywhere in the layout ("far") and by up to ~50 m ("near", vehicle tracking).
        let k = 200_000
        let moveIDs = (0..<k).map { _ in "veh-\(Int.random(in: 0..<n, using: &rng) + 10_000_000)" }
        let far = (0..<k).map { _ in CoreBenchBody.position(city, &rng) }
        var tm = ContinuousClock.now
        for j in 0..<k { try layer.move(id: moveIDs[j], to: far[j]) }
        row["move far us"] = fmt(us(ContinuousClock.now - tm) / Double(k))
        let near = (0..<k).map { j in
            LatLng(latitude: max(-60, min(60, far[j].latitude + Double.random(in: -0.0005...0.0005, using: &rng))),
                   longitude: max(-180, min(180, far[j].longitude + Double.random(in: -0.0005...0.0005, using: &rng))))
        }
        tm = ContinuousClock.now
        for j in 0..<k { try layer.move(id: moveIDs[j], to: near[j]) }
        row["move near us"] = fmt(us(ContinuousClock.now - tm) / Double(k))
        print("[\(label)] move far \(row["move far us"]!) us, near \(row["move near us"]!) us")

        // NATIVE with limit 1 shows the search without the cost of building 1000 MarkerRecords.
        for (zoom, native, limit) in [(12.0, false, 1000), (14.0, false, 1000), (16.0, false, 1000), (12.0, true, 1000), (14.0, true, 1000),
                                      (16.0, true, 1000), (3.0, false, 1000), (3.0, true, 1000), (12.0, true, 1), (14.0, true, 1), (16.0, true, 1)] {
            try layer.setOptions(TilingOptions(enabled: !native))
            var times: [Double] = []
            var inView = 0
            let u = Mercator.worldUnitsPerPixel(zoom: zoom)
            let budget = ContinuousClock.now + .seconds(20)
            for _ in 0..<300 {
                let c = CoreBenchBody.position(city, &rng)
                let cx = Mercator.worldX(longitude: c.longitude), cy = Mercator.worldY(latitude: c.latitude)
                let b = GeoBounds(west: Mercator.longitude(worldX: max(0, cx - 540 * u)), south: Mercator.latitude(worldY: min(Mercator.worldSize, cy + 960 * u)),
                                  east: Mercator.longitude(worldX: min(Mercator.worldSize, cx + 540 * u)), north: Mercator.latitude(worldY: max(0, cy - 960 * u)))
                let t = ContinuousClock.now
                let q = try layer.queryViewport(bounds: b, zoom: zoom, density: 1, limit: limit, now: 0)
                times.append(us(ContinuousClock.now - t))
                inView += q.staticInView + q.liveInView
                if ContinuousClock.now > budget { break }
            }
            let name = "\(native ? "NATIVE" : "TILED") z\(Int(zoom))" + (limit == 1000 ? "" : " limit \(limit)")
            row[name] = pct(times)
            print("[\(label)] viewport \(name): p50 / p99 \(row[name]!) us, avg in view \(inView / max(1, times.count))")
        }
        try layer.setOptions(TilingOptions())
        for zoom in [12.0, 14.0, 16.0] {
            var times: [Double] = []
            var hits = 0
            for _ in 0..<2000 {
                let p = CoreBenchBody.position(city, &rng)
                let t = ContinuousClock.now
                hits += try layer.hitTest(point: p, zoom: zoom, now: 0).count
                times.append(us(ContinuousClock.now - t))
            }
            row["hit z\(Int(zoom))"] = pct(times)
            print("[\(label)] hitTest z\(Int(zoom)): p50 / p99 \(row["hit z\(Int(zoom))"]!) us, \(Double(hits) / 2000) hits avg")
        }
        withExtendedLifetime(layer) {}
        return (label, row)
    }

    static func printTable(_ rows: [(String, [String: String])]) {
        var out = "| | " + rows.map(\.0).joined(separator: " | ") + " |\n|---|" + rows.map { _ in "---|" }.joined() + "\n"
        for c in columns {
            out += "| \(c)\(c.hasPrefix("TILED") || c.hasPrefix("NATIVE") || c.hasPrefix("hit") ? " p50/p99 us" : "") | "
                + rows.map { $0.1[c] ?? "-" }.joined(separator: " | ") + " |\n"
        }
        print(out)
    }
}

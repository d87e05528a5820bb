import Foundation
import MarkerdCore

/// Measurements for MarkerdCore (printed, never asserted). Run by `BenchTests` when
/// MARKERD_BENCH=1 (build with -c release), or from a throwaway executable.
enum CoreBenchBody {
    static func residentBytes() -> Int {
        guard let s = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let parts = s.split(separator: " ")
        return (Int(parts[1]) ?? 0) * 4096
    }

    struct Rng: RandomNumberGenerator {
        var state: UInt64
        mutating func next() -> UInt64 {
            state &+= 0x9E37_79B9_7F4A_7C15
            var z = state
            z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
            z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
            return z ^ (z >> 31)
        }
    }

    static func ms(_ d: Duration) -> Double {
        Double(d.components.seconds) * 1000 + Double(d.components.attoseconds) / 1e15
    }

    /// `city`: uniform over a 60 x 60 km box around Tokyo; else uniform over latitudes +-60.
    static func position(_ city: Bool, _ rng: inout Rng) -> LatLng {
        city ? LatLng(latitude: 35.68 + Double.random(in: -0.27...0.27, using: &rng),
                      longitude: 139.76 + Double.random(in: -0.33...0.33, using: &rng))
             : LatLng(latitude: Double.random(in: -60...60, using: &rng), longitude: Double.random(in: -180...180, using: &rng))
    }

    static func run(count n: Int, city: Bool) throws {
        var rng = Rng(state: 42)
        let label = "\(n / 1_000_000)M \(city ? "city 60x60km" : "world +-60")"
        let rss0 = residentBytes()
        var layer = try MarkerLayer()
        let t0 = ContinuousClock.now
        var i = 0
        while i < n {
            let batch = (i..<min(n, i + 100_000)).map { MarkerRecord(id: "veh-\($0 + 10_000_000)", position: position(city, &rng)) }
            _ = try layer.upsert(batch, now: 0)
            i += batch.count
        }
        let build = ContinuousClock.now - t0
        let rss1 = residentBytes()
        let idBytes = 12.0
        print("[\(label)] build \(String(format: "%.1f", ms(build) / 1000)) s; RSS delta \(String(format: "%.1f", Double(rss1 - rss0) / Double(n))) B/marker, approximateBytes \(String(format: "%.1f", Double(layer.approximateBytes) / Double(n))) B/marker (ids \(idBytes) B each)")

        // Single moves of random markers to a nearby spot.
        let moveIDs = (0..<200_000).map { _ in "veh-\(Int.random(in: 0..<n, using: &rng) + 10_000_000)" }
        let targets = (0..<200_000).map { _ in position(city, &rng) }
        let tm = ContinuousClock.now
        for k in 0..<moveIDs.count { try layer.move(id: moveIDs[k], to: targets[k]) }
        print("[\(label)] move: \(String(format: "%.3f", ms(ContinuousClock.now - tm) * 1000 / Double(moveIDs.count))) us per single move")

        for (zoom, native) in [(12.0, false), (14.0, false), (16.0, false), (16.0, true), (14.0, true), (3.0, false)] {
            try layer.setOptions(TilingOptions(enabled: !native))
            var times: [Double] = []
            var inView = 0, returned = 0
            let u = Mercator.worldUnitsPerPixel(zoom: zoom)
            for _ in 0..<100 {
                let c = position(city, &rng)
                let cx = Mercator.worldX(longitude: c.longitude), cy = Mercator.worldY(latitude: c.latitude)
                let b = GeoBounds(west: Mercator.longitude(worldX: max(0, cx - 540 * u)), south: Mercator.latitude(worldY: min(Mercator.worldSize, cy + 960 * u)),
                                  east: Mercator.longitude(worldX: min(Mercator.worldSize, cx + 540 * u)), north: Mercator.latitude(worldY: max(0, cy - 960 * u)))
                let t = ContinuousClock.now
                let q = try layer.queryViewport(bounds: b, zoom: zoom, density: 1, limit: 1000, now: 0)
                times.append(ms(ContinuousClock.now - t))
                inView += q.staticInView + q.liveInView
                returned += q.markers.count
            }
            times.sort()
            print("[\(label)] viewport 1080x1920 px z\(Int(zoom)) \(native ? "NATIVE limit 1000" : "TILED"): median \(String(format: "%.3f", times[50])) ms, p99 \(String(format: "%.3f", times[98])) ms; avg in view \(inView / 100), returned \(returned / 100)")
        }
        for zoom in [12.0, 14.0, 16.0] {
            var hitsFound = 0
            let th = ContinuousClock.now
            for _ in 0..<10_000 { hitsFound += try layer.hitTest(point: position(city, &rng), zoom: zoom, now: 0).count }
            print("[\(label)] hitTest z\(Int(zoom)): \(String(format: "%.2f", ms(ContinuousClock.now - th) / 10)) us avg, \(Double(hitsFound) / 10_000) hits avg")
        }
        withExtendedLifetime(layer) {}
    }
}

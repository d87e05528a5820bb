import Foundation
import MarkerdTestSupport
import Testing
@testable import MarkerdCore

/// GridClusterIndex build time and memory; run with
/// `MARKERD_BENCH=1 swift test -c release -Xswiftc -enable-testing --filter ClusterIndexBenchTests`.
@Suite struct ClusterIndexBenchTests {
    /// Resident set size of this process in bytes (Linux /proc/self/statm).
    static func residentBytes() -> Int {
        guard let s = try? String(contentsOfFile: "/proc/self/statm", encoding: .utf8) else { return 0 }
        let f = s.split(separator: " ")
        return (Int(f[1]) ?? 0) * Int(sysconf(Int32(_SC_PAGESIZE)))
    }

    static func uniformPoints(_ n: Int, seed: UInt64) -> [ClusterPoint] {
        var rng = SplitMix64(seed: seed)
        return (0..<n).map { i in
            // uniform in longitude and latitude (-85...85), as pysupercluster's benchmark input
            let lng = rng.unit() * 360 - 180, lat = rng.unit() * 170 - 85
            return ClusterPoint(id: Int32(i), longitude: lng, latitude: lat)
        }
    }

    @Test(.enabled(if: ProcessInfo.processInfo.environment["MARKERD_BENCH"] == "1"))
    func gridIndexBuildMemory() throws {
        for n in [1_000_000] {
            let pts = Self.uniformPoints(n, seed: 42)
            let before = Self.residentBytes()
            let t0 = ContinuousClock.now
            let index = GridClusterIndex(options: GridClusterOptions(), points: pts)
            let dt = ContinuousClock.now - t0
            let after = Self.residentBytes()
            print("BENCH grid-index build n=\(n) uniform: \(dt), RSS +\((after - before) >> 20) MiB, cells \(index.cellCount)")
            withExtendedLifetime(index) {}
        }
    }
}

import Foundation
import Testing

/// Speed and memory measurements; run with
/// `MARKERD_BENCH=1 swift test -c release -Xswiftc -enable-testing --filter BenchTests`.
@Suite struct BenchTests {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["MARKERD_BENCH"] == "1"))
    func coreBenchmarks() throws {
        for n in [1_000_000, 10_000_000] {
            for city in [true, false] { try CoreBenchBody.run(count: n, city: city) }
        }
    }
}

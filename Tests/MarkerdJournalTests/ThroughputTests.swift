import Foundation
import Synchronization
import Testing
@testable import MarkerdJournal

/// Measures 1 KB appends from 8 threads (targets live in Benchmarks/; only that every append
/// succeeds is asserted). Off by default; run with
/// `MARKERD_BENCH=1 swift test -c release -Xswiftc -enable-testing --filter ThroughputTests`.
@Suite(.serialized) struct ThroughputTests {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["MARKERD_BENCH"] == "1"))
    func appendThroughputAlwaysVersusOff() throws {
        for policy in [SyncPolicy.always, .off] {
            let dir = makeTempDirectory()
            defer { removeDirectory(dir) }
            let r = try recover(dir, policy: policy)
            let j = r.journal
            let threads = 8, perThread = 2_500
            let record = [UInt8](repeating: 0x5A, count: 1024)
            let group = DispatchGroup()
            let failed = Atomic<Int>(0)
            let start = ContinuousClock.now
            for _ in 0..<threads {
                group.enter()
                Thread {
                    // Each thread waits for its previous record, like a client awaiting its ack.
                    let sem = DispatchSemaphore(value: 0)
                    for _ in 0..<perThread {
                        _ = try! j.append(record) { r in
                            if case .failure = r { failed.add(1, ordering: .relaxed) }
                            sem.signal()
                        }
                        sem.wait()
                    }
                    group.leave()
                }.start()
            }
            group.wait()
            let elapsed = ContinuousClock.now - start
            let secs = Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18
            let stats = j.stats
            try j.close()
            #expect(failed.load(ordering: .relaxed) == 0 && stats.records == UInt64(threads * perThread))
            let n = Double(threads * perThread)
            print(String(format: "throughput %@: %.0f appends/s, %.1f MB/s (%d records, %.2f s, %llu fsyncs, largest group %d)",
                         "\(policy)", n / secs, n * 1040 / secs / 1e6, threads * perThread, secs, stats.syncs, stats.largestGroup))
        }
    }
}

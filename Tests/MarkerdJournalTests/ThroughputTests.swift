import Foundation
import Testing
@testable import MarkerdJournal

/// Measures, never asserts (targets live in Benchmarks/): 1 KB records from 8 threads.
@Suite(.serialized) struct ThroughputTests {
    @Test func appendThroughputAlwaysVersusOff() throws {
        for policy in [SyncPolicy.always, .off] {
            let dir = makeTempDirectory()
            defer { removeDirectory(dir) }
            let r = try recover(dir, policy: policy)
            let j = r.journal
            let threads = 8, perThread = 2_500
            let record = [UInt8](repeating: 0x5A, count: 1024)
            let group = DispatchGroup()
            let start = ContinuousClock.now
            for _ in 0..<threads {
                group.enter()
                Thread {
                    // Each thread waits for its previous record, like a client awaiting its ack.
                    let sem = DispatchSemaphore(value: 0)
                    for _ in 0..<perThread {
                        _ = try! j.append(record) { _ in sem.signal() }
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
            let n = Double(threads * perThread)
            print(String(format: "throughput %@: %.0f appends/s, %.1f MB/s (%d records, %.2f s, %llu fsyncs, largest group %d)",
                         "\(policy)", n / secs, n * 1040 / secs / 1e6, threads * perThread, secs, stats.syncs, stats.largestGroup))
        }
    }
}

import Foundation
@testable import MarkerdService
import Synchronization
import Testing

/// `BulkUpsertThread.run`: each of the two pieces of work runs exactly once, `run` returns only
/// when both are done, and the second piece is taken by whichever thread gets to it first.
@Suite struct BulkUpsertThreadTests {
    @Test func eachPartRunsOnceAndRunWaitsForBoth() {
        let helper = BulkUpsertThread()
        let here = Atomic<Int>(0), there = Atomic<Int>(0), onHelper = Atomic<Int>(0)
        let caller = Thread.current
        for k in 0..<2_000 {
            var written = 0   // written by `there`, read after `run`: needs run's happens-before
            helper.run({
                here.add(1, ordering: .relaxed)
                if k % 3 == 0 { for _ in 0..<200 { _ = Thread.current } }   // sometimes slower than the hand-over
                if k == 0 {
                    // Once, wait (30 s at most) for the helper thread to take the other part, so that
                    // the helper's side is exercised however busy the machine is.
                    let deadline = ContinuousClock.now + .seconds(30)
                    while there.load(ordering: .acquiring) == 0 && ContinuousClock.now < deadline { Thread.sleep(forTimeInterval: 0.001) }
                }
            }, alongside: {
                there.add(1, ordering: .relaxed)
                if Thread.current != caller { onHelper.add(1, ordering: .relaxed) }
                written = k + 1
            })
            #expect(written == k + 1, "round \(k): run returned before `there` was done")
        }
        #expect(here.load(ordering: .relaxed) == 2_000 && there.load(ordering: .relaxed) == 2_000)
        #expect(onHelper.load(ordering: .relaxed) > 0, "the helper thread never took a part")
    }
}

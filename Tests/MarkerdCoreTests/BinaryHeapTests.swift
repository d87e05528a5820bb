import MarkerdTestSupport
import Testing
@testable import MarkerdCore

@Suite struct BinaryHeapTests {
    /// Random pushes and pops (with many equal keys) come out as a sorted array would.
    @Test func popsInSortedOrder() {
        let seed = testSeed("BinaryHeapTests.popsInSortedOrder")
        var rng = SplitMix64(seed: seed)
        for round in 0..<200 {
            var heap = BinaryHeap<Int>()
            var oracle: [Int] = []
            for _ in 0..<Int(rng.next() % 300) {
                if rng.next() % 3 == 0, !oracle.isEmpty {
                    oracle.sort()
                    #expect(heap.first == oracle.first, "seed \(seed) round \(round)")
                    #expect(heap.pop() == oracle.removeFirst(), "seed \(seed) round \(round)")
                } else {
                    let v = Int(rng.next() % 50)
                    heap.push(v)
                    oracle.append(v)
                }
                #expect(heap.count == oracle.count)
            }
            var drained: [Int] = []
            while let v = heap.pop() { drained.append(v) }
            #expect(drained == oracle.sorted(), "seed \(seed) round \(round)")
            #expect(heap.isEmpty && heap.pop() == nil)
        }
    }
}

extension BinaryHeapTests {
    /// With an ordering passed in (here: greatest first) and `replaceFirst`, a heap bounded to
    /// `k` elements keeps the k least, as a sorted array would.
    @Test func boundedHeapWithOrderingKeepsTheLeast() {
        let seed = testSeed("BinaryHeapTests.boundedHeapWithOrderingKeepsTheLeast")
        var rng = SplitMix64(seed: seed)
        let greater = { (a: Int, b: Int) in a > b }
        for round in 0..<100 {
            let k = 1 + Int(rng.next() % 20)
            var heap = BinaryHeap<Int>()
            var all: [Int] = []
            for _ in 0..<Int(rng.next() % 200) {
                let v = Int(rng.next() % 100)
                all.append(v)
                if heap.count < k { heap.push(v, by: greater) } else if let w = heap.first, v < w { heap.replaceFirst(with: v, by: greater) }
                #expect(heap.first == all.sorted().prefix(k).last, "seed \(seed) round \(round)")
            }
            #expect(heap.elements.sorted() == Array(all.sorted().prefix(k)), "seed \(seed) round \(round)")
        }
    }
}

@testable import MarkerdCore
@testable import MarkerdService
import MarkerdTestSupport
import Testing

/// `GridClusterMemo` (entries found by cell index, chains of target zooms per cell, an arena of
/// cluster and marker bytes that is emptied without clearing the per-cell index) against a dictionary oracle on seeded random
/// keeps, look-ups, changed stamps, new generations and emptying for want of room.
@Suite struct GridClusterMemoTests {
    struct Kept: Equatable {
        var stamp: UInt32
        var bytes: [UInt8]
        var markerBytes: [UInt8]
        var clusters: Int
        var markers: Int
    }

    /// What `find` answers, with the cluster and marker bytes copied out of the arena; nil for a miss.
    static func found(_ memo: GridClusterMemo, cell: Int32, stamp: UInt32, target: Int) -> Kept? {
        guard let hit = memo.find(GridNodeStamp(cell: cell, stamp: stamp, zoom: 0), target: target) else { return nil }
        let (bytes, markerBytes) = memo.withArena {
            (Array($0[hit.start ..< hit.start + hit.clusterBytes]),
             Array($0[hit.start + hit.clusterBytes ..< hit.start + hit.clusterBytes + hit.markerBytes]))
        }
        return Kept(stamp: stamp, bytes: bytes, markerBytes: markerBytes, clusters: hit.clusters, markers: hit.markers)
    }

    /// Runs of random fresh bytes and of outputs found in the memo for other cells (their cluster
    /// or marker bytes), as a walk writes them: the pieces, the fresh bytes, and all the bytes in order.
    static func randomPieces(_ memo: GridClusterMemo, stamps: [Int32: UInt32], markers: Bool,
                             _ rng: inout SplitMix64) -> ([ClusterReplyWriter.Piece], [UInt8], [UInt8]) {
        var fresh: [UInt8] = []
        var pieces: [ClusterReplyWriter.Piece] = []
        var bytes: [UInt8] = []
        for _ in 0..<Int(rng.next() % 4) {
            let other = Int32(rng.next() % 64), otherTarget = Int(rng.next() % 6)
            if rng.next() % 3 == 0,
               let h = memo.find(GridNodeStamp(cell: other, stamp: stamps[other, default: 0], zoom: 0), target: otherTarget) {
                let start = markers ? h.start + h.clusterBytes : h.start, count = markers ? h.markerBytes : h.clusterBytes
                pieces.append(.init(inMemo: true, start: start, count: count))
                bytes += memo.withArena { Array($0[start ..< start + count]) }
            } else {
                let run = (0..<Int(rng.next() % 90)).map { _ in UInt8(truncatingIfNeeded: rng.next()) }
                pieces.append(.init(inMemo: false, start: fresh.count, count: run.count))
                fresh += run
                bytes += run
            }
        }
        return (pieces, fresh, bytes)
    }

    @Test func findsWhatWasKeptLikeADictionary() {
        let seed = testSeed("GridClusterMemoTests.findsWhatWasKeptLikeADictionary")
        var rng = SplitMix64(seed: seed)
        let memo = GridClusterMemo(budgetBytes: 24 << 10)
        var oracle: [Int64: Kept] = [:]  // cell << 8 | target
        var stamps: [Int32: UInt32] = [:]
        var generation: UInt64 = 1
        var emptied = 0, hits = 0, kept = 0, replaced = 0
        memo.prepare(generation: generation)
        func key(_ cell: Int32, _ target: Int) -> Int64 { Int64(cell) << 8 | Int64(target) }
        for step in 0..<20_000 {
            // A reply: prepare (which empties a full memo, or one of another generation), then work.
            if step % 25 == 0 {
                if rng.next() % 40 == 0 { generation += 1 }
                let held = memo.heldBytes
                memo.prepare(generation: generation)
                if memo.heldBytes < held {
                    #expect(memo.heldBytes == 0)
                    oracle.removeAll()
                    emptied += 1
                }
            }
            // Mostly small cell numbers (chains of several targets per cell), some far ones (growth).
            let cell = rng.next() % 10 == 0 ? Int32(rng.next() % 20_000) : Int32(rng.next() % 64)
            let target = Int(rng.next() % 6)
            if rng.next() % 8 == 0 { stamps[cell, default: 0] &+= 1 }  // the subtree changed
            let stamp = stamps[cell, default: 0]
            let got = Self.found(memo, cell: cell, stamp: stamp, target: target)
            let expected = oracle[key(cell, target)].flatMap { $0.stamp == stamp ? $0 : nil }
            #expect(got == expected, "step \(step) cell \(cell) target \(target) seed \(seed)")
            if got != nil {
                hits += 1
                continue
            }
            // A miss: the walk writes the output (fresh bytes, and sometimes runs of the arena found
            // for other cells) and keeps it.
            let (pieces, fresh, bytes) = Self.randomPieces(memo, stamps: stamps, markers: false, &rng)
            let (markerPieces, freshMarkers, markerBytes) = Self.randomPieces(memo, stamps: stamps, markers: true, &rng)
            let clusters = Int(rng.next() % 9), markers = Int(rng.next() % 5)
            let before = oracle[key(cell, target)]
            pieces.withUnsafeBufferPointer { pieces in
                markerPieces.withUnsafeBufferPointer { markerPieces in
                    fresh.withUnsafeBytes { fresh in
                        freshMarkers.withUnsafeBytes { freshMarkers in
                            memo.keep(pieces, of: fresh, markers: markerPieces, of: freshMarkers, clusterCount: clusters, markerCount: markers,
                                      of: GridNodeStamp(cell: cell, stamp: stamp, zoom: 0), target: target)
                        }
                    }
                }
            }
            // Kept unless the memo is full (then nothing changes until the next prepare empties it).
            if let now = Self.found(memo, cell: cell, stamp: stamp, target: target) {
                #expect(now == Kept(stamp: stamp, bytes: bytes, markerBytes: markerBytes, clusters: clusters, markers: markers),
                        "keep at step \(step) seed \(seed)")
                if before != nil { replaced += 1 }
                oracle[key(cell, target)] = now
                kept += 1
            }
        }
        #expect(emptied > 10 && hits > 1500 && kept > 5000 && replaced > 300,
                "emptied \(emptied), hits \(hits), kept \(kept), replaced \(replaced) (seed \(seed))")
    }
}

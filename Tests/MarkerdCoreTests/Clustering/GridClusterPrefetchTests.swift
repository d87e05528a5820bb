import MarkerdTestSupport
import Testing
@testable import MarkerdCore

/// The level-by-level read-ahead of `GridClusterIndex.visit(in:zoom:_:)` (`prefetchesWalk`): it
/// must not change what a visitor is handed, whatever `probeSubtree` answers, and it must ask
/// about cells of the walk only (never below the target zoom). Seeded random indexes and boxes
/// (the seed is printed; `SEED=<n>` replays), compared with the walk without read-ahead.
@Suite struct GridClusterPrefetchTests {
    /// Collects the items like `clusters(in:zoom:)`, with read-ahead on and `probeSubtree`
    /// answering yes for a seeded pseudo-random part of the cells.
    final class ProbingCollector: GridClusterVisitor {
        var items: [GridClusterItem] = []
        var probes = 0, probedYes = 0
        var deepestProbe = -1
        let salt: UInt64
        init(salt: UInt64) { self.salt = salt }

        var wantsExpansionZooms: Bool { false }
        var prefetchesWalk: Bool { true }
        func probeSubtree(_ node: GridNodeStamp, target: Int) -> Bool {
            probes += 1
            deepestProbe = max(deepestProbe, node.zoom)
            #expect(node.zoom <= target, "probed zoom \(node.zoom) below target \(target)")
            var h = SplitMix64(seed: salt ^ UInt64(UInt32(bitPattern: node.cell)) << 8 ^ UInt64(node.stamp))
            let yes = h.next() % 3 == 0
            if yes { probedYes += 1 }
            return yes
        }
        func visitCluster(_ cluster: GridCluster, expansionZoom: Int) { items.append(.cluster(cluster)) }
        func visitPoint(_ point: ClusterPoint) { items.append(.point(point)) }
    }

    @Test func readAheadChangesNothingTheVisitorIsHanded() {
        let seed = GridClusterIndexTests.seed(0x9e7)
        print("GridClusterPrefetchTests seed=\(seed &- 0x9e7); replay with SEED=\(seed &- 0x9e7)")
        var rng = SplitMix64(seed: seed)
        let options = ClusterOptions()
        let hotspots: [(UInt32, UInt32)] = (0..<5).map { _ in
            (UInt32(truncatingIfNeeded: rng.next()), UInt32(truncatingIfNeeded: rng.next()))
        }
        let ids: Int32 = 6_000
        var index = GridClusterIndex(options: options, points: (0..<Int32(4_000)).map {
            GridClusterIndexTests.randomPoint($0, &rng, hotspots: hotspots)
        })
        var probes = 0, probedYes = 0
        for round in 0..<4 {
            // some updates between rounds (new cells, freed cells, restamped cells)
            for _ in 0..<500 {
                let id = Int32(rng.next() % UInt64(ids))
                if rng.next() % 4 == 0 { index.remove(id: id) } else {
                    index.upsert(GridClusterIndexTests.randomPoint(id, &rng, hotspots: hotspots))
                }
            }
            for q in 0..<60 {
                let box = q % 10 == 0 ? ClusterBox.world : GridClusterIndexTests.randomBox(&rng)
                let zoom = Int(rng.next() % UInt64(options.maxZoom + 1))
                let collector = ProbingCollector(salt: rng.next())
                var visitor = collector
                index.visit(in: box, zoom: zoom, &visitor)
                #expect(collector.items == index.clusters(in: box, zoom: zoom),
                        "round \(round) query \(q) box \(box) zoom \(zoom) seed \(seed &- 0x9e7)")
                #expect(collector.deepestProbe <= zoom)
                probes += collector.probes
                probedYes += collector.probedYes
            }
        }
        // The read-ahead ran and stopped below some of the cells probed (seeded: about a third).
        #expect(probes > 100 && probedYes > 0 && probedYes < probes, "\(probes) probes, \(probedYes) yes (seed \(seed &- 0x9e7))")
    }
}

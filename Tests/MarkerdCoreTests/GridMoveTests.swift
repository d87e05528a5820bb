import MarkerdTestSupport
import Testing
@testable import MarkerdCore

/// `GridIndex`'s move fast path (`relink`, which `move` takes when class and z-index stay)
/// against the walk from the root every move took before
/// (`moveFromRoot`), on seeded random layers: two grids get the same inserts, removals and
/// moves, one moving by the fast path, the other by the walk; after every batch their node
/// tables, entries and `pos` must be identical (the fast path makes exactly the changes the
/// walk makes), both must pass `validate()`, and every entry must sit where a dictionary of
/// the markers says.
@Suite struct GridMoveTests {
    struct Marker { var x: UInt32, y: UInt32, z: Int32, cls: UInt32 }

    /// Whether two grids have the same nodes (key, head, count, z bounds, in the same cells),
    /// entries and `pos`.
    static func identical(_ a: GridIndex, _ b: GridIndex) -> Bool {
        guard a.nodes.cells.count == b.nodes.cells.count, a.entries.count == b.entries.count, a.pos == b.pos else { return false }
        for (p, q) in zip(a.nodes.cells, b.nodes.cells) where p.key != q.key
            || p.key != GridCellTable.emptyKey && (p.head != q.head || p.count != q.count || p.minZ != q.minZ || p.maxZ != q.maxZ) {
            return false
        }
        for (e, f) in zip(a.entries, b.entries) where e.slot != f.slot || e.slot >= 0 && (e.x != f.x || e.y != f.y || e.z != f.z) {
            return false
        }
        return true
    }

    @Test func fastMovesMatchTheWalkFromTheRoot() {
        let seed = testSeed("GridMoveTests.fastMovesMatchTheWalkFromTheRoot")
        var rng = SplitMix64(seed: seed)
        // A few spots (one at the world's centre, where x and y cross a top-level split, one
        // at the edge) and jitters from one world unit to half the world.
        let spots: [(UInt32, UInt32)] = [(1 << 31, 1 << 31), (0x1234_5678, 0x9ABC_DEF0), (UInt32.max - 5, 7), (0x7FFF_FFF0, 0x8000_0010)]
        let jitters: [UInt32] = [0, 1, 40, 3_000, 200_000, 30_000_000, 1 << 31]
        func near(_ c: UInt32, _ j: UInt32) -> UInt32 {
            let d = Int64(rng.next() % (UInt64(j) * 2 + 1)) - Int64(j)
            return UInt32(clamping: Swift.max(0, Swift.min(Int64(UInt32.max), Int64(c) + d)))
        }
        func randomPoint() -> (UInt32, UInt32) {
            let s = spots[Int(rng.next() % UInt64(spots.count))], j = jitters[Int(rng.next() % UInt64(jitters.count))]
            return (near(s.0, j), near(s.1, j))
        }
        var fast = GridIndex(), walk = GridIndex()
        var markers: [Int32: Marker] = [:]
        var nextSlot: Int32 = 0
        var fastMoves = 0
        for batch in 0..<40 {
            // Grow in the first half, shrink in the second (merges), moving all along.
            let grow = batch < 20
            for _ in 0..<400 {
                let op = rng.next() % 10
                if op < (grow ? 3 : 1) || markers.isEmpty {
                    let (x, y) = randomPoint()
                    let m = Marker(x: x, y: y, z: Int32(rng.next() % 3) - 1, cls: UInt32(rng.next() % 3))
                    fast.insert(nextSlot, x: x, y: y, z: m.z, cls: m.cls)
                    walk.insert(nextSlot, x: x, y: y, z: m.z, cls: m.cls)
                    markers[nextSlot] = m
                    nextSlot += 1
                    continue
                }
                let slot = markers.keys.randomElement(using: &rng)!
                var m = markers[slot]!
                if op < (grow ? 4 : 3) {
                    fast.remove(slot, x: m.x, y: m.y, cls: m.cls)
                    walk.remove(slot, x: m.x, y: m.y, cls: m.cls)
                    markers[slot] = nil
                    continue
                }
                // A move: mostly short (within a few leaves), sometimes far; rarely a new z or class.
                let (x, y) = rng.next() % 4 == 0 ? randomPoint() : (near(m.x, jitters[Int(rng.next() % 5)]), near(m.y, jitters[Int(rng.next() % 5)]))
                let z = op == 9 ? Int32(rng.next() % 3) - 1 : m.z
                let cls = op == 9 && rng.next() % 2 == 0 ? UInt32(rng.next() % 3) : m.cls
                if z == m.z && cls == m.cls { fastMoves += 1 }
                fast.move(slot, fromX: m.x, y: m.y, cls: m.cls, toX: x, y: y, z: z, cls: cls)
                walk.moveFromRoot(slot, fromX: m.x, y: m.y, cls: m.cls, toX: x, y: y, z: z, cls: cls)
                m.x = x; m.y = y; m.z = z; m.cls = cls
                markers[slot] = m
            }
            let same = Self.identical(fast, walk)   // (not inside #expect, which would print both grids)
            #expect(same, "seed \(seed) batch \(batch): the fast path's grid differs from the walk's")
            let (problems, counts) = fast.validate()
            #expect(problems.isEmpty, "seed \(seed) batch \(batch): \(problems.prefix(5))")
            #expect(counts.values.reduce(0, +) == markers.count, "seed \(seed) batch \(batch)")
            for (slot, m) in markers {
                let e = fast.entries[Int(fast.pos[Int(slot)])]
                if e.slot != slot || e.x != m.x || e.y != m.y || e.z != m.z {
                    Issue.record("seed \(seed) batch \(batch): slot \(slot) entry \(e), expected \(m)")
                    return
                }
            }
            var listed: [UInt32: Int] = [:]
            for cls: UInt32 in 0...2 {
                fast.forEach(cls: cls, rect: CellRect(x0: 0, y0: 0, x1: .max, y1: .max)) { e in
                    if markers[e.slot]?.cls == cls { listed[cls, default: 0] += 1 }
                }
            }
            #expect(listed.values.reduce(0, +) == markers.count, "seed \(seed) batch \(batch): entries in the wrong class")
        }
        #expect(fastMoves > 5_000 && fast.deepestLevel >= 20, "seed \(seed): \(fastMoves) fast moves, deepest level \(fast.deepestLevel)")
    }
}

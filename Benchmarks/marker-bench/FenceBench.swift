import Foundation
import MarkerdCore

/// Geofences in this process (`--only fences`): the N synthetic markers in a `MarkerLayer`,
/// 10,000 fences (circles of 0.3-3 km, 12-vertex polygons with a hole, boxes; each centred on a
/// random marker, so mostly in the city clusters where moves happen) in a `FenceSet` seeded from
/// the layer, then random small moves (the in-process move section's) one by one with the fence
/// check `MarkerService` adds to a move: the position before (`fencePoint`), the move, the
/// position after and `FenceSet.markerChanged`. Thread CPU time per move, with and without the
/// fence work (the same moves on the same layer, moved back, in turn).
struct FenceBench {
    let options: Options
    let layer: SyntheticLayer
    let table: Table
    static let fenceCount = 10_000

    func run() throws {
        let label = Table.count(layer.count)
        Progress.log("[\(label)] fences: building MarkerLayer with \(label) markers")
        var core = try layer.coreLayer().layer
        var rng = SeededRNG(seed: options.seed &+ 91)
        var fences = FenceSet()
        let t0 = Machine.threadCPUSeconds
        for i in 0..<Self.fenceCount {
            let c = layer.position(rng.index(layer.count))
            let km = rng.uniform(0.3...3)
            let shape: FenceShape
            switch i % 3 {
            case 0: shape = .circle(center: c, radiusMeters: km * 1000)
            case 1:
                func ring(_ scale: Double) -> [LatLng] {
                    (0..<12).map { k in
                        let a = Double(k) / 12 * 2 * .pi
                        return SyntheticLayer.offset(c, northKm: km * scale * sin(a), eastKm: km * scale * cos(a))
                    }
                }
                shape = .polygon(rings: [ring(1), ring(0.3)])
            default:
                let sw = SyntheticLayer.offset(c, northKm: -km, eastKm: -km), ne = SyntheticLayer.offset(c, northKm: km, eastKm: km)
                shape = .bounds(GeoBounds(west: sw.longitude, south: sw.latitude, east: ne.longitude, north: ne.latitude))
            }
            let compiled = try CompiledFenceShape(shape)
            fences.insert(Fence(id: "f\(i)", shape: compiled, detect: [.enter, .exit, .inside, .cross], filter: nil), markersOf: core)
        }
        let seedCPU = Machine.threadCPUSeconds - t0
        let count = options.inProcessMoves
        var moves: [(id: String, to: LatLng)] = []
        moves.reserveCapacity(count)
        for _ in 0..<count {
            let m = layer.randomMove(&rng)
            moves.append((SyntheticLayer.id(m.index), m.position))
        }
        Progress.log("[\(label)] fences: \(Table.count(count)) single moves with and without fence checks")
        var hits: [FenceHit] = []
        hits.reserveCapacity(1024)
        var events = 0
        var plainCPU = 0.0, fencedCPU = 0.0
        for k in 0..<count {
            let id = moves[k].id
            let back = core.fencePoint(id: id)!.position
            var t = Machine.threadCPUSeconds
            try core.move(id: id, to: moves[k].to)
            plainCPU += Machine.threadCPUSeconds - t
            try core.move(id: id, to: back)
            t = Machine.threadCPUSeconds
            let before = core.fencePoint(id: id)?.position
            try core.move(id: id, to: moves[k].to)
            let after = core.fencePoint(id: id)
            fences.markerChanged(id, from: before, to: after?.position, attribute: { _ in nil }, into: &hits)
            fencedCPU += Machine.threadCPUSeconds - t
            events += hits.count
            hits.removeAll(keepingCapacity: true)
        }
        let fencedNs = fencedCPU * 1e9 / Double(count), plainNs = plainCPU * 1e9 / Double(count)
        table.add(Row(size: label, measure: "in-process single move with fence checks (\(Table.count(Self.fenceCount)) fences), thread CPU time",
                      value: Table.fixed(fencedNs, 0), unit: "ns/move",
                      target: Target(text: "< 5 µs with 10,000 fences on 1M", met: fencedNs < 5000, atTargetSize: layer.count == 1_000_000),
                      note: String(format: "the move alone %.0f ns; %@ moves of up to ~50 m, %.2f events per move; seeding the fences' inside-sets took %.2f s",
                                   plainNs, Table.count(count), Double(events) / Double(count), seedCPU)))
    }
}

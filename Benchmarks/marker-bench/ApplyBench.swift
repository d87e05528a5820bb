import Foundation
import MarkerdCore
import MarkerdService

/// The load's work under the layer's write lock, in this process (`--only apply`): the N
/// synthetic markers as `MarkerBatch`es of 50,000 (BulkLoader's batch size), each with its
/// layout prepared ahead (`prepareLayout`, as `MarkerService.upsertPlainMarkers` does before
/// taking the lock), then upserted one after the other into one fresh `MarkerLayer`. Thread CPU
/// time of the upserts alone (what the RPC load serializes on the write lock) and of the batch
/// building plus layouts (what the load's decoding threads do in parallel), per marker. Each
/// batch also goes into a second layer with markerd's `BulkUpsertThread` (the grid inserts on a second
/// thread): the wall time of those upserts is what the lock is held for with it, against the
/// first layer's wall time without (the order alternates batch by batch). Same seeded markers
/// every run, so two builds can be compared back to back.
struct ApplyBench {
    let layer: SyntheticLayer
    let table: Table
    static let batchSize = 50_000

    func run() throws {
        let label = Table.count(layer.count)
        Progress.log("[\(label)] apply: building \(label) markers as batches of \(Table.count(Self.batchSize))")
        var core = try MarkerLayer()
        let seed = core.idHashSeed
        var helped = try MarkerLayer()
        let helper = BulkUpsertThread()
        var serialWall = 0.0, helpedWall = 0.0
        let dragSet = Set(layer.draggable)
        var prepareCPU = 0.0, applyCPU = 0.0
        var start = 0
        while start < layer.count {
            let end = min(layer.count, start + Self.batchSize)
            let cpu0 = Machine.threadCPUSeconds
            var batch = MarkerBatch(capacity: end - start)
            guard let style = batch.styleIndex(IconStyle.defaultPin, hint: nil) else { throw BenchError("default pin rejected") }
            for i in start..<end {
                guard batch.append(id: SyntheticLayer.id(i), position: layer.position(i), style: style, zIndex: 0, visible: true,
                                   clickable: true, draggable: dragSet.contains(i), extra: []) else { throw BenchError("marker \(i) rejected") }
            }
            var other = batch
            batch.prepareLayout(idHashSeed: seed)
            other.prepareLayout(idHashSeed: helped.idHashSeed)
            let cpu1 = Machine.threadCPUSeconds
            func helpedUpsert() {
                let t = ContinuousClock.now
                _ = helped.upsert(other, now: 0, alongside: helper)
                helpedWall += (ContinuousClock.now - t).seconds
            }
            if (start / Self.batchSize) % 2 == 1 { helpedUpsert() }
            let cpu2 = Machine.threadCPUSeconds
            let t = ContinuousClock.now
            _ = core.upsert(batch, now: 0)
            serialWall += (ContinuousClock.now - t).seconds
            let cpu3 = Machine.threadCPUSeconds
            if (start / Self.batchSize) % 2 == 0 { helpedUpsert() }
            prepareCPU += cpu1 - cpu0
            applyCPU += cpu3 - cpu2
            start = end
            if start % 1_000_000 == 0 { Progress.log("[\(label)] apply: \(Table.count(start)) markers") }
        }
        guard core.count == layer.count, helped.count == layer.count else {
            throw BenchError("in-process layers hold \(core.count) and \(helped.count) markers")
        }
        let n = Double(layer.count)
        table.add(Row(size: label, measure: "in-process batch upserts (the RPC load's work under the write lock), thread CPU",
                      value: Table.fixed(applyCPU * 1e9 / n, 0), unit: "ns/marker",
                      note: String(format: "%d batches of %d into one layer, layouts prepared ahead; %.2f s in all",
                                   (layer.count + Self.batchSize - 1) / Self.batchSize, Self.batchSize, applyCPU)))
        table.add(Row(size: label, measure: "in-process batch building + prepareLayout (the load's work outside the lock), thread CPU",
                      value: Table.fixed(prepareCPU * 1e9 / n, 0), unit: "ns/marker",
                      note: "MarkerBatch.append per marker (projection included) and the layout's sorts and hashes; no protobuf decode"))
        table.add(Row(size: label, measure: "in-process batch upserts, wall: one thread -> with BulkUpsertThread (grid inserts on a second thread)",
                      value: String(format: "%.0f -> %.0f", serialWall * 1e9 / n, helpedWall * 1e9 / n), unit: "ns/marker",
                      note: String(format: "%.2fx the one-thread time; the same batches into two layers, in turn", helpedWall / serialWall)))
    }
}

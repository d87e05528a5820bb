import Foundation
import MarkerdCore

/// The load's work under the layer's write lock, in this process (`--only apply`): the N
/// synthetic markers as `RestoreBatch`es of 50,000 (BulkLoader's batch size), each with its
/// layout prepared ahead (`prepareLayout`, as `MarkerService.upsertPlainMarkers` does before
/// taking the lock), then upserted one after the other into one fresh `MarkerLayer`. Thread CPU
/// time of the upserts alone (what the RPC load serializes on the write lock) and of the batch
/// building plus layouts (what the load's decoding threads do in parallel), per marker. Same
/// seeded markers every run, so two builds can be compared back to back.
struct ApplyBench {
    let layer: SyntheticLayer
    let table: Table
    static let batchSize = 50_000

    func run() throws {
        let label = Table.count(layer.count)
        Progress.log("[\(label)] apply: building \(label) markers as batches of \(Table.count(Self.batchSize))")
        var core = try MarkerLayer()
        let seed = core.idHashSeed
        let dragSet = Set(layer.draggable)
        var prepareCPU = 0.0, applyCPU = 0.0
        var start = 0
        while start < layer.count {
            let end = min(layer.count, start + Self.batchSize)
            let cpu0 = Machine.threadCPUSeconds
            var batch = RestoreBatch(capacity: end - start)
            guard let style = batch.styleIndex(IconStyle.defaultPin, hint: nil) else { throw BenchError("default pin rejected") }
            for i in start..<end {
                guard batch.append(id: SyntheticLayer.id(i), position: layer.position(i), style: style, zIndex: 0, visible: true,
                                   clickable: true, draggable: dragSet.contains(i), extra: []) else { throw BenchError("marker \(i) rejected") }
            }
            batch.prepareLayout(idHashSeed: seed)
            let cpu1 = Machine.threadCPUSeconds
            _ = core.upsert(batch, now: 0)
            let cpu2 = Machine.threadCPUSeconds
            prepareCPU += cpu1 - cpu0
            applyCPU += cpu2 - cpu1
            start = end
            if start % 1_000_000 == 0 { Progress.log("[\(label)] apply: \(Table.count(start)) markers") }
        }
        guard core.count == layer.count else { throw BenchError("in-process layer holds \(core.count) markers") }
        let n = Double(layer.count)
        table.add(Row(size: label, measure: "in-process batch upserts (the RPC load's work under the write lock), thread CPU",
                      value: Table.fixed(applyCPU * 1e9 / n, 0), unit: "ns/marker",
                      note: String(format: "%d batches of %d into one layer, layouts prepared ahead; %.2f s in all",
                                   (layer.count + Self.batchSize - 1) / Self.batchSize, Self.batchSize, applyCPU)))
        table.add(Row(size: label, measure: "in-process batch building + prepareLayout (the load's work outside the lock), thread CPU",
                      value: Table.fixed(prepareCPU * 1e9 / n, 0), unit: "ns/marker",
                      note: "RestoreBatch.append per marker (projection included) and the layout's sorts and hashes; no protobuf decode"))
    }
}

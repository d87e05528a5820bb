import Foundation
import MarkerdAPI
import MarkerdService

/// GetClusters' server work in this process (`--only clusterwork`; never part of a full run): a
/// `MarkerService` loaded with the N synthetic markers through its upsert path, a layer with the
/// default clustering options (grid, built by the first call), then the clusters section's calls
/// (the whole world at zoom 0-3, and its 1080x1920 px viewports at zoom 12 near cities, same seed)
/// answered as markerd's network thread answers them: `inlineClustersPayload` writing into a
/// buffer, and `getClustersPayload` (the worker thread's path) when it declines. Each call is
/// timed by this thread's CPU time (a quick A/B of the server side between builds, without the
/// RPC's noise) and by the wall clock; the note counts the calls the inline path declined and the
/// slow calls (over 2x the median wall time), to tell the server's tails from the RPC's, and how
/// often the layer's GetClusters memo was emptied (it holds at most 128 MiB).
struct ClusterWorkBench {
    let options: Options
    let layer: SyntheticLayer
    let markers: [V1.Marker]
    let table: Table

    func run() throws {
        let label = Table.count(layer.count)
        let service = MarkerService()
        defer { service.close() }
        let id = ClusterBench.layerID
        Progress.log("[\(label)] clusterwork: loading \(label) markers in process")
        try InProcessService.load(service, markers, into: id, options: nil)
        let (_, build) = try timed { () throws(RPCError) in
            try service.getClustersPayload(V1.GetClustersRequest(layerID: id, bounds: ClusterBench.world, zoom: 0))
        }
        Progress.log("[\(label)] clusterwork: grid clusters built by the first GetClusters in \(Table.fixed(build.seconds, 2)) s")

        let calls = options.queries
        var cases: [(String, [V1.GetClustersRequest])] = (0...3).map { z in
            ("whole world z\(z)", Array(repeating: V1.GetClustersRequest(layerID: id, bounds: ClusterBench.world, zoom: Double(z)),
                                        count: 2 * calls))
        }
        cases.append(("1080x1920 px z12 (512 px tiles) near cities",
                      ClusterBench.cityRequests(layer, seed: options.seed, count: 2 * calls, layerID: id)))
        let buffer = UnsafeMutableRawBufferPointer.allocate(byteCount: 16 << 20, alignment: 16)
        defer { buffer.deallocate() }
        for (name, requests) in cases where ProcessInfo.processInfo.environment["CW_ONLY_CITY"] == nil || name.contains("cities") {
            Progress.log("[\(label)] clusterwork: \(calls) GetClusters \(name) (after as many to warm up)")
            var cpu: [Double] = [], wall: [Double] = []
            var bytes = 0, declined = 0, emptied = 0, held = service.clusterMemoHeldBytes(layerID: id) ?? 0
            for (k, r) in requests.enumerated() {
                var size = 0
                let cpu0 = Machine.threadCPUSeconds
                let (inline, elapsed) = try timed { () throws(RPCError) -> Bool in
                    if service.inlineClustersPayload(r, write: { n, fill in
                        size = n
                        fill(UnsafeMutableRawBufferPointer(rebasing: buffer[0..<n]))
                    }) { return true }
                    size = try service.getClustersPayload(r).count
                    return false
                }
                let cpu1 = Machine.threadCPUSeconds
                let nowHeld = service.clusterMemoHeldBytes(layerID: id) ?? held
                if nowHeld < held { emptied += 1 }
                held = nowHeld
                guard k >= calls else { continue }   // the first half warms up
                cpu.append((cpu1 - cpu0) * 1e6)
                wall.append(elapsed.nanos / 1e3)
                bytes += size
                if !inline { declined += 1 }
            }
            cpu.sort(); wall.sort()
            let median = Stats.percentile(wall, 0.5)
            let slow = wall.filter { $0 > 2 * median }.count
            table.add(Row(size: label, measure: "in-process GetClusters server work, \(name) (grid), thread CPU time",
                          value: "\(Table.micros(Stats.percentile(cpu, 0.5))) / \(Table.micros(Stats.percentile(cpu, 0.99)))",
                          unit: "µs p50 / p99",
                          note: "\(calls) calls of inlineClustersPayload (else getClustersPayload: \(declined) declined), mean "
                              + "\(Table.micros(Stats.mean(cpu))) µs, max \(Table.micros(cpu.last ?? 0)) µs; wall clock "
                              + "\(Table.micros(Stats.percentile(wall, 0.5))) / \(Table.micros(Stats.percentile(wall, 0.99))) µs, "
                              + "\(slow) calls over 2x the median; mean reply \(bytes / max(1, calls)) B; memo emptied \(emptied) times "
                              + "(warm-up included), \(Table.bytes(held)) held at the end"))
        }
    }
}

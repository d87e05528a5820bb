import Foundation
import MarkerdAPI
import MarkerdService

/// A `MarkerService` in this process, driven through its RPC entry points (as markerd drives it,
/// minus the network): for the in-process sections (`--only viewport`, `--only clusterwork`).
enum InProcessService {
    /// Creates layer `id` with `options` and upserts `markers` into it in batches of 50,000
    /// through the upsert path (slots in spatial order within a batch, as over RPC).
    static func load(_ service: MarkerService, _ markers: [V1.Marker], into id: String, options: V1.LayerOptions?) throws {
        try mutate(service, .createLayer, V1.CreateLayerRequest(layerID: id, options: options).serializedBytes())
        for start in stride(from: 0, to: markers.count, by: 50_000) {
            var request = V1.UpsertMarkersRequest()
            request.layerID = id
            request.markers = Array(markers[start..<min(markers.count, start + 50_000)])
            try mutate(service, .upsertMarkers, request.serializedBytes())
        }
    }

    /// Runs a mutation synchronously (the service calls back on its own thread).
    static func mutate(_ service: MarkerService, _ kind: MutationKind, _ payload: [UInt8]) throws {
        let done = DispatchSemaphore(value: 0)
        nonisolated(unsafe) var result: Result<[UInt8], RPCError>? = nil
        service.mutate(kind, payload: payload, context: CallContext(method: kind.methodName, idempotencyKey: "bench-\(UUID())")) { r in
            result = r
            done.signal()
        }
        done.wait()
        _ = try result!.get()
    }
}

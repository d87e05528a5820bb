import Foundation
import MarkerdAPI
import Testing

#if canImport(Glibc)
import Glibc
#endif

/// Thread CPU time of `body` in seconds (the machine is shared: wall time would count waiting for a core).
private func seconds(_ body: () throws -> Void) rethrows -> Double {
    var start = timespec(), end = timespec()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &start)
    try body()
    clock_gettime(CLOCK_THREAD_CPUTIME_ID, &end)
    return Double(end.tv_sec - start.tv_sec) + Double(end.tv_nsec - start.tv_nsec) / 1e9
}

/// Prints decode/encode figures for a 100k-marker UpsertMarkersRequest. Not an assertion: speed targets
/// belong to marker-bench. Off by default; meaningful figures need a release build:
///   MARKERD_BENCH=1 swift test -c release --filter MarkerdAPITests.PerformanceTests
@Suite struct PerformanceTests {
    @Test(.enabled(if: ProcessInfo.processInfo.environment["MARKERD_BENCH"] == "1"))
    func upsert100kMarkers() throws {
        let count = 100_000
        var request = V1.UpsertMarkersRequest(layerID: "bench")
        request.markers.reserveCapacity(count)
        for i in 0..<count {
            var marker = V1.Marker(id: "m\(i)", position: V1.LatLng(latitude: Double(i % 170) - 85 + 0.123, longitude: Double(i % 360) - 180 + 0.456))
            if i % 4 == 0 { marker.icon = .pin(V1.DefaultPin(fillColor: 0xFF00_80FF)) }
            request.markers.append(marker)
        }
        var wire: [UInt8] = []
        var bestEncode = Double.infinity, bestDecode = Double.infinity
        var decoded = V1.UpsertMarkersRequest()
        // Separate loops, as in a server that decodes requests back to back.
        for _ in 0..<10 {
            bestEncode = min(bestEncode, seconds { wire = request.serializedBytes() })
        }
        for _ in 0..<10 {
            decoded = V1.UpsertMarkersRequest()  // freeing the previous result is not part of decoding
            bestDecode = try min(bestDecode, seconds { decoded = try V1.UpsertMarkersRequest(serializedBytes: wire) })
        }
        #expect(decoded == request)
        #if DEBUG
        let build = "debug build"
        #else
        let build = "release build"
        #endif
        let perMarker = { (s: Double) in String(Int((s / Double(count) * 1e9).rounded())) + " ns/marker" }
        print("UpsertMarkersRequest, \(count) markers, \(wire.count) bytes (\(build), CPU time, best of 10): "
            + "decode \(perMarker(bestDecode)) (\(Int(Double(count) / bestDecode)) markers/s), "
            + "encode \(perMarker(bestEncode)) (\(Int(Double(count) / bestEncode)) markers/s)")
    }
}

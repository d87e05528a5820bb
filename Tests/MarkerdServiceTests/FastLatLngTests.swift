import Foundation
import MarkerdCore
import MarkerdTestSupport
import Testing
@testable import MarkerdService

/// `WorldPoint.fastLatLng` (libm plus a guard band) must equal `WorldPoint.latLng` bit for bit.
@Suite struct FastLatLngTests {
    @Test func equalsLatLngOnRandomAndEdgePoints() {
        let seed = testSeed()
        var rng = SplitMix64(seed: seed)
        var points: [WorldPoint] = []
        for x: UInt32 in [0, 1, 1 << 31, .max - 1, .max] {
            for y: UInt32 in [0, 1, 1 << 31, (1 << 31) - 1, .max - 1, .max] { points.append(WorldPoint(x: x, y: y)) }
        }
        for _ in 0..<200_000 {
            points.append(WorldPoint(x: UInt32(truncatingIfNeeded: rng.next()), y: UInt32(truncatingIfNeeded: rng.next())))
        }
        var nearBoundary = 0
        for p in points {
            let fast = p.fastLatLng, exact = p.latLng
            if fast != exact {
                Issue.record("SEED=\(seed): \(p): fastLatLng \(fast) != latLng \(exact)")
                return
            }
            let u = Mercator.latitude(worldY: Double(p.y)) * 1e7
            if ((u - u.rounded(.towardZero)).magnitude - 0.5).magnitude <= WorldPoint.fastLatLngGuard { nearBoundary += 1 }
        }
        // The guard band was exercised (about 0.2 % of random points fall in it).
        #expect(nearBoundary > 0, "SEED=\(seed): no point near a rounding boundary")
    }

    /// Latitudes given with 7 decimals come back exactly through the world point, as with `latLng`.
    @Test func sevenDecimalLatitudesRoundTrip() {
        let seed = testSeed()
        var rng = SplitMix64(seed: seed)
        for _ in 0..<20_000 {
            let lat = (rng.unit() * 170 - 85).rounded(.down) + Double(rng.next() % 10_000_000) / 1e7
            let p = WorldPoint(LatLng(latitude: min(lat, Mercator.maxLatitude), longitude: 12.5))
            #expect(p.fastLatLng == p.latLng, "SEED=\(seed): latitude \(lat)")
        }
    }
}

import Foundation
import MarkerdCore
import MarkerdTestSupport
import Testing
@testable import MarkerdService

/// `NearbyLatitudes` (one `exp` and `atan` per centre, a Taylor series for the y values near it,
/// the exact path near rounding boundaries and far from the centre) must give
/// `WorldPoint.latLng`'s latitudes and longitudes bit for bit.
@Suite struct NearbyLatitudesTests {
    @Test func equalsLatLngAroundRandomCentres() {
        let seed = testSeed("NearbyLatitudesTests.equalsLatLngAroundRandomCentres")
        var rng = SplitMix64(seed: seed)
        var checked = 0, inSeries = 0, nearBoundary = 0
        for round in 0..<20_000 {
            // A centre anywhere (the poles' edges included), and y values up to a cell of zoom 0-20
            // away (default options: cells of 2^(29 - zoom) world units), beyond `maxSpan` too.
            let y0: UInt32 = round < 4 ? [0, 1, .max - 1, .max][round] : UInt32(truncatingIfNeeded: rng.next())
            let near = NearbyLatitudes(y: y0)
            let span = Int64(1) << Int64(9 + rng.next() % 21)
            var ys = (0..<8).map { _ in UInt32(clamping: Int64(y0) + Int64(rng.next() % UInt64(2 * span + 1)) - span) }
            // y values whose exact latitude lies next to a 7-decimal rounding boundary.
            let boundary = (WorldPoint(x: 0, y: y0).latLng.latitude * 1e7).rounded(.down) / 1e7 + 0.5e-7
            if abs(boundary) < Mercator.maxLatitude {
                let yb = WorldPoint(LatLng(latitude: boundary, longitude: 0)).y
                ys += [yb &- 1, yb, yb &+ 1]
            }
            for y in ys + [y0] {
                let exact = WorldPoint(x: 0, y: y).latLng.latitude
                let got = near.latitude(y)
                if got.bitPattern != exact.bitPattern {
                    Issue.record("SEED=\(seed): centre \(y0), y \(y): \(got) != latLng \(exact)")
                    return
                }
                checked += 1
                let h = Double(Int64(y0) - Int64(y)) * (2 * Double.pi / Mercator.worldSize)
                if h.magnitude <= NearbyLatitudes.maxSpan { inSeries += 1 }
                let u = Mercator.latitude(worldY: Double(y)) * 1e7
                if ((u - u.rounded(.towardZero)).magnitude - 0.5).magnitude <= WorldPoint.fastLatLngGuard { nearBoundary += 1 }
            }
            let x = UInt32(truncatingIfNeeded: rng.next())
            for x in [x, 0, .max - 1, .max] {
                #expect(NearbyLatitudes.longitude(x).bitPattern == WorldPoint(x: x, y: 0).latLng.longitude.bitPattern, "SEED=\(seed): x \(x)")
            }
        }
        #expect(inSeries > checked / 3 && nearBoundary > 100, "SEED=\(seed): \(inSeries) of \(checked) by the series, \(nearBoundary) near a boundary")
        print("NearbyLatitudesTests: \(checked) latitudes, \(inSeries) by the series, \(nearBoundary) near a boundary (seed \(seed))")
    }
}

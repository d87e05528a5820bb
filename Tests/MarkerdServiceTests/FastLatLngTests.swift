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

/// `FastLatitude` (the table and polynomial behind `fastLatLng`) against MarkerdCore's
/// `Mercator.latitude` and the C library: its error must stay far inside the guard band, or
/// `fastLatLng` could round differently from `latLng` without falling back.
@Suite struct FastLatitudeTests {
    @Test func staysFarInsideTheGuardBand() {
        let seed = testSeed()
        var rng = SplitMix64(seed: seed)
        var ys: [UInt32] = [0, 1, .max - 1, .max, 1 << 31]
        // Both ends and the centre of random segments, where the polynomial is least and most exact.
        for _ in 0..<2_000 {
            let bits = UInt32(FastLatitude.segmentBits)
            let s = (UInt32(truncatingIfNeeded: rng.next()) >> bits) << bits
            ys += [s, s | (1 << UInt32(FastLatitude.segmentBits - 1)), s | ((1 << UInt32(FastLatitude.segmentBits)) - 1)]
        }
        for _ in 0..<200_000 { ys.append(UInt32(truncatingIfNeeded: rng.next())) }
        var worstCore = 0.0, worstLibm = 0.0
        for y in ys {
            let fast = FastLatitude.units(y)
            let core = Mercator.latitude(worldY: Double(y)) * 1e7
            let t = Double.pi * (1 - 2 * Double(y) / Mercator.worldSize)
            let libm = (2 * Foundation.atan(Foundation.exp(t)) - Double.pi / 2) * (180 / Double.pi) * 1e7
            worstCore = max(worstCore, (fast - core).magnitude)
            worstLibm = max(worstLibm, (fast - libm).magnitude)
        }
        #expect(worstCore < 2e-5 && worstLibm < 2e-5, "SEED=\(seed): \(worstCore) / \(worstLibm) units, guard \(WorldPoint.fastLatLngGuard)")
    }
}

extension FastLatitudeTests {
    /// `WorldPoint.roundedAwayFromZero` against `rounded(.toNearestOrAwayFromZero)`, bit for bit
    /// (signed zeros included), on halves, near-halves and random values of coordinate size.
    @Test func integerRoundingMatchesTheLibraryBitForBit() {
        let seed = testSeed()
        var rng = SplitMix64(seed: seed)
        var values: [Double] = [0, -0.0, 0.5, -0.5, 0.49999999999999994, -0.49999999999999994, 1.5, -1.5, 2.5, -2.5, -0.3, 0.3, 1.8e9, -1.8e9]
        for _ in 0..<200_000 {
            let whole = Double(Int64(rng.next() % 3_600_000_000) - 1_800_000_000)
            switch rng.next() % 3 {
            case 0: values.append(whole + 0.5)
            case 1: values.append((whole + 0.5).nextUp)
            default: values.append(whole + rng.unit() * (rng.next() % 2 == 0 ? 1 : -1))
            }
        }
        for v in values {
            let got = WorldPoint.roundedAwayFromZero(v), expected = v.rounded(.toNearestOrAwayFromZero)
            if got.bitPattern != expected.bitPattern {
                Issue.record("SEED=\(seed): \(v) rounds to \(got), expected \(expected)")
                return
            }
        }
    }
}

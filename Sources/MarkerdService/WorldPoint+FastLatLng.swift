import Foundation
import MarkerdCore

extension WorldPoint {
    /// Half-width, in units of 1e-7 degree, of the band around a 7-decimal rounding boundary in
    /// which `fastLatLng` falls back to the exact `latLng`: 1e-3 (1e-10 degree), far more than the
    /// difference between `FastLatitude` and MarkerdCore's functions (under 1e-5 units: tests).
    static let fastLatLngGuard = 1e-3

    /// The same value as `latLng` (degrees rounded to 7 decimals, latitude clamped), bit for bit,
    /// faster: the latitude comes from `FastLatitude` (a table and a polynomial) instead of libm's
    /// `exp` and `atan` (`Mercator.latitude`), and when it lies within `fastLatLngGuard` of a
    /// 7-decimal rounding boundary (about 1 point in 500) `latLng` itself is computed, so the
    /// rounding can never differ. For the positions of QueryViewport pages and GetClusters
    /// answers: it takes 27-30 % off QueryViewport NATIVE's server work (docs/decisions.md).
    var fastLatLng: LatLng {
        let u = FastLatitude.units(y)
        let fraction = u.magnitude - Double(Int64(u.magnitude))   // |u| < 9e8
        guard (fraction - 0.5).magnitude > Self.fastLatLngGuard else { return latLng }
        let latitude = min(max(Self.roundedAwayFromZero(u) / 1e7, -Mercator.maxLatitude), Mercator.maxLatitude)
        let longitude = x == .max ? 180 : Self.roundedAwayFromZero(Mercator.longitude(worldX: Double(x)) * 1e7) / 1e7
        return LatLng(latitude: latitude, longitude: longitude)
    }

    /// `v.rounded(.toNearestOrAwayFromZero)` (sign of zero included) for |v| < 2^62, through an
    /// integer conversion (the `rounded` call is a C library `round` call on baseline x86-64, a
    /// few ns per coordinate): trunc(|v|), one more when the dropped fraction (exact: a
    /// difference of two doubles within 1 of each other) is at least 1/2, and v's sign.
    @inline(__always) static func roundedAwayFromZero(_ v: Double) -> Double {
        let whole = Int64(v.magnitude)
        let r = Double(whole + (v.magnitude - Double(whole) >= 0.5 ? 1 : 0))
        return v.sign == .minus ? -r : r
    }
}

/// The latitude of a world y in units of 1e-7 degree, as a degree-4 Taylor polynomial of the
/// Gudermannian around the centre of the y's segment (2^32 world units cut into
/// `segmentCount` segments of 2^20 units; coefficients from the C library's `exp`, `atan` and
/// `cosh` when first used, 160 KB). Error: the remainder is below 1e-8 units (the segment's
/// half-width in t is 2 pi / 2^13 = 7.7e-4, and |gd^(5)| stays small), the evaluation's rounding
/// a few ulp of 8.5e8 (about 1e-6 units); tests compare it with libm and `Mercator.latitude`.
enum FastLatitude {
    static let segmentBits = 20
    static let segmentCount = 1 << (32 - segmentBits)
    static let degree = 4

    /// Per segment, c0 ... c4 of u(y) = sum c_n * (y - centre)^n: `table` (allocated once,
    /// never freed, so that reading it retains no array; read-only after its initialisation).
    nonisolated(unsafe) static let coefficients: UnsafePointer<Double> = {
        let c = table()
        let p = UnsafeMutablePointer<Double>.allocate(capacity: c.count)
        p.initialize(from: c, count: c.count)
        return UnsafePointer(p)
    }()

    /// The coefficients, computed.
    static func table() -> [Double] {
        let k = 180 / Double.pi * 1e7                 // units of 1e-7 degree per radian
        let dt = -2 * Double.pi / Mercator.worldSize  // d t / d y
        var c: [Double] = []
        c.reserveCapacity(segmentCount * (degree + 1))
        for s in 0..<segmentCount {
            let yc = Double(s << segmentBits) + Double(1 << (segmentBits - 1))
            let t = Double.pi * (1 - 2 * yc / Mercator.worldSize)
            let sech = 1 / Foundation.cosh(t), th = Foundation.tanh(t)
            // gd(t) and its derivatives: gd' = sech, gd'' = -sech tanh, gd''' = sech (tanh^2 - sech^2),
            // gd'''' = sech tanh (5 sech^2 - tanh^2); each divided by n! and scaled by (dt)^n.
            let d: [Double] = [2 * Foundation.atan(Foundation.exp(t)) - Double.pi / 2, sech, -sech * th,
                               sech * (th * th - sech * sech), sech * th * (5 * sech * sech - th * th)]
            var factorial = 1.0, scale = 1.0
            for n in 0...degree {
                if n > 0 { factorial *= Double(n); scale *= dt }
                c.append(k * d[n] / factorial * scale)
            }
        }
        return c
    }

    /// Latitude of world y in units of 1e-7 degree (not rounded, not clamped).
    @inline(__always) static func units(_ y: UInt32) -> Double {
        let s = Int(y >> UInt32(segmentBits))
        let d = Double(Int64(y & (1 << UInt32(segmentBits) - 1)) - Int64(1 << (segmentBits - 1)))
        let c = coefficients + s * (degree + 1)
        return c[0] + d * (c[1] + d * (c[2] + d * (c[3] + d * c[4])))
    }
}

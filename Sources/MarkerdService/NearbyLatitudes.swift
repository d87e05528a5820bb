import Foundation
import MarkerdCore

/// The latitudes (degrees rounded to 7 decimals, as `WorldPoint.latLng` gives them, bit for bit)
/// of world y values near one centre, from one `exp` and one `atan` for them all: a grid cluster's
/// centre and the y bounds of its members (3 latitudes per cluster, which were three `exp` and
/// three `atan` with `WorldPoint.fastLatLng`, the largest cost of encoding a cluster afresh).
///
/// With t = pi (1 - 2 y / 2^32), the latitude is gd(t) = 2 atan(exp t) - pi/2, and near the
/// centre's t0 it is the Taylor series gd(t0) + gd'(t0) h + ... + gd''''(t0) h^4 / 24
/// (h = t - t0; gd' = sech, gd'' = -sech tanh, gd''' = sech tanh^2 - sech^3, gd'''' = 5 sech^3
/// tanh - sech tanh^3), used while |h| <= `maxSpan` (1e-3: a cell of zoom 8 or finer, for the
/// default options): the remainder is below 1e-16 rad and the rounding of the doubles about
/// 1e-15 rad, far inside `WorldPoint.fastLatLngGuard` (1e-10 degree). As in `fastLatLng`, a
/// value within that guard of a 7-decimal rounding boundary, or farther than `maxSpan` from the
/// centre, is computed by `WorldPoint.latLng` itself, so the rounding never differs.
struct NearbyLatitudes {
    /// Largest |t - t0| (radians) served by the series.
    static let maxSpan = 1e-3
    private let y0: UInt32
    /// gd(t0) in radians, then the series' coefficients gd^(n)(t0) / n!.
    private let lat0: Double
    private let c1: Double, c2: Double, c3: Double, c4: Double

    /// The series around world y `y` (0 ..< 2^32).
    init(y: UInt32) {
        y0 = y
        let t0 = Double.pi * (1 - 2 * Double(y) / Mercator.worldSize)
        let e = Foundation.exp(t0)
        lat0 = 2 * Foundation.atan(e) - Double.pi / 2
        let sech = 2 * e / (1 + e * e), tanh = (e * e - 1) / (e * e + 1)
        c1 = sech
        c2 = -sech * tanh / 2
        c3 = (sech * tanh * tanh - sech * sech * sech) / 6
        c4 = (5 * sech * sech * sech * tanh - sech * tanh * tanh * tanh) / 24
    }

    /// The latitude of world y `y`: `WorldPoint(x: 0, y: y).latLng.latitude`, bit for bit.
    func latitude(_ y: UInt32) -> Double {
        let h = Double(Int64(y0) - Int64(y)) * (2 * Double.pi / Mercator.worldSize)
        if h.magnitude <= Self.maxSpan {
            // In units of 1e-7 degree, as `fastLatLng` rounds it (h = 0: the same operations).
            let u = (h == 0 ? lat0 : lat0 + h * (c1 + h * (c2 + h * (c3 + h * c4)))) * (180 / Double.pi) * 1e7
            let fraction = (u - u.rounded(.towardZero)).magnitude
            if (fraction - 0.5).magnitude > WorldPoint.fastLatLngGuard {
                return min(max(u.rounded(.toNearestOrAwayFromZero) / 1e7, -Mercator.maxLatitude), Mercator.maxLatitude)
            }
        }
        return WorldPoint(x: 0, y: y).latLng.latitude
    }

    /// The longitude of world x `x` (`WorldPoint.latLng`'s, bit for bit).
    static func longitude(_ x: UInt32) -> Double {
        x == .max ? 180 : (Mercator.longitude(worldX: Double(x)) * 1e7).rounded(.toNearestOrAwayFromZero) / 1e7
    }
}

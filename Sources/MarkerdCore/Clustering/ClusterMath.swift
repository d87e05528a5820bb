// Supercluster's projection and JavaScript's rounding, for the Supercluster-compatible index
// (its numbers must match supercluster's bit for bit, hence its own formulas beside `Mercator`'s;
// the elementary functions are `CoreMath`'s, the C library's).

/// Namespace for the clustering module's private math (named to avoid colliding with MarkerdCore's own helpers).
enum ClusterMath {
    /// Longitude (degrees) to x in [0, 1] (supercluster's `lngX`).
    @inline(__always)
    static func lngX(_ lng: Double) -> Double { lng / 360 + 0.5 }

    /// Latitude (degrees) to y in [0, 1], north at 0, clamped (supercluster's `latY`). The latitude
    /// is clamped to [-90, 90] first: a finite but huge one (1e308) would overflow `lat * pi` to
    /// infinity and `sin` would give NaN. NaN in, NaN out: callers reject non-finite input.
    @inline(__always)
    static func latY(_ lat: Double) -> Double {
        let s = CoreMath.sin((lat < -90 ? -90 : (lat > 90 ? 90 : lat)) * Double.pi / 180)
        let y = 0.5 - 0.25 * CoreMath.log((1 + s) / (1 - s)) / Double.pi
        return y < 0 ? 0 : (y > 1 ? 1 : y)
    }

    /// x in [0, 1] back to longitude (supercluster's `xLng`).
    @inline(__always)
    static func xLng(_ x: Double) -> Double { (x - 0.5) * 360 }

    /// y in [0, 1] back to latitude (supercluster's `yLat`).
    @inline(__always)
    static func yLat(_ y: Double) -> Double {
        let y2 = (180 - y * 360) * Double.pi / 180
        return 360 * CoreMath.atan(CoreMath.exp(y2)) / Double.pi - 90
    }

    /// JavaScript `Math.round`: nearest integer, halves rounded toward +infinity.
    @inline(__always)
    static func jsRound(_ x: Double) -> Double {
        let f = x.rounded(.down)
        return x - f >= 0.5 ? f + 1 : f
    }

    /// JavaScript `%` on numbers (truncating remainder, sign of the dividend).
    @inline(__always)
    static func jsRem(_ a: Double, _ b: Double) -> Double { a.truncatingRemainder(dividingBy: b) }
}

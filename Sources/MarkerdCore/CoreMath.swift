// Elementary functions in pure Swift. The standard library has no `sin`/`log`/`exp`/`atan`
// (they come from Glibc or Foundation, which this module does not import), so the few that
// Web Mercator needs are implemented here with argument reduction and short series.
// Accuracy: a few ulps over the ranges used (checked against Glibc in the tests).

@usableFromInline
enum CoreMath {
    @usableFromInline static let ln2 = 0.693_147_180_559_945_309_417_232_121_458
    @usableFromInline static let pi = Double.pi

    // Rounding without libm: `Double.rounded(_:)` and `squareRoot()` call libm's floor/ceil/
    // round/sqrt in unoptimized builds, and nothing links libm for a module that imports no C.

    /// Largest integer <= x.
    @inlinable static func floor(_ x: Double) -> Double {
        if !(x.magnitude < 4_503_599_627_370_496) { return x }   // already integral, inf or nan
        let t = Double(Int64(x))
        return t > x ? t - 1 : t
    }

    /// Smallest integer >= x.
    @inlinable static func ceil(_ x: Double) -> Double {
        if !(x.magnitude < 4_503_599_627_370_496) { return x }
        let t = Double(Int64(x))
        return t < x ? t + 1 : t
    }

    /// Nearest integer, halves away from zero.
    @inlinable static func round(_ x: Double) -> Double {
        if !(x.magnitude < 4_503_599_627_370_496) { return x }
        let t = Double(Int64(x))
        let d = x - t
        if d >= 0.5 { return t + 1 }
        if d <= -0.5 { return t - 1 }
        return t
    }

    /// Square root for v in [1, 2] (Newton's method from a linear first guess, within 3 %:
    /// the relative error squares each step, 3e-2 -> 4.5e-4 -> 1e-7 -> 5e-15 -> below an ulp).
    @usableFromInline static func sqrt12(_ v: Double) -> Double {
        var r = 0.5858 + 0.4142 * v
        for _ in 0..<4 { r = 0.5 * (r + v / r) }
        return r
    }

    /// 2^e for an integer e, exactly.
    @inlinable static func pow2(_ e: Int) -> Double {
        Double(sign: .plus, exponent: e, significand: 1)
    }

    /// Natural logarithm for finite x > 0.
    @usableFromInline static func log(_ x: Double) -> Double {
        precondition(x > 0 && x.isFinite, "log of \(x)")
        var m = x.significand          // [1, 2)
        var e = Int(x.exponent)
        if m > 1.414_213_562_373_095_1 { m *= 0.5; e += 1 }   // m in [0.707, 1.414]
        let s = (m - 1) / (m + 1)     // |s| <= 0.1716
        let s2 = s * s
        // 2 * atanh(s) = 2 (s + s^3/3 + s^5/5 + ...), Horner form; s^2 <= 0.0295.
        let p = 1.0 / 3 + s2 * (1.0 / 5 + s2 * (1.0 / 7 + s2 * (1.0 / 9 + s2 * (1.0 / 11 + s2 * (1.0 / 13
            + s2 * (1.0 / 15 + s2 * (1.0 / 17 + s2 * (1.0 / 19 + s2 * (1.0 / 21 + s2 * (1.0 / 23))))))))))
        let sum = s + s * s2 * p
        return Double(e) * ln2 + 2 * sum
    }

    /// e^x for |x| < 700.
    @usableFromInline static func exp(_ x: Double) -> Double {
        let k = round(x / ln2)
        let r = x - k * ln2          // |r| <= 0.347
        // Taylor series to r^16 (the rest < 1e-19) in Horner form with the coefficients 1/n!
        // as constants: no division on the dependency chain (this runs per returned marker).
        let p = 1 + r * (1 + r * (0.5 + r * (0.16666666666666666 + r * (0.041666666666666664 + r * (0.008333333333333333
            + r * (0.001388888888888889 + r * (0.0001984126984126984 + r * (2.48015873015873e-05 + r * (2.7557319223985893e-06
            + r * (2.755731922398589e-07 + r * (2.505210838544172e-08 + r * (2.08767569878681e-09 + r * (1.6059043836821613e-10
            + r * (1.1470745597729725e-11 + r * (7.647163731819816e-13 + r * 4.779477332387385e-14)))))))))))))))
        return p * pow2(Int(k))
    }

    /// sin(x) for |x| <= pi/2 (latitudes in radians).
    @usableFromInline static func sin(_ x: Double) -> Double {
        let x2 = x * x
        // Taylor series in Horner form (coefficients (-1)^k / (2k+1)!, k = 1...13).
        let p: Double = -0.16666666666666666 + x2 * (0.0083333333333333332 + x2 * (-0.00019841269841269841 + x2 * (2.7557319223985893e-06 + x2 * (-2.505210838544172e-08 + x2 * (1.6059043836821613e-10 + x2 * (-7.6471637318198164e-13 + x2 * (2.8114572543455206e-15 + x2 * (-8.2206352466243295e-18 + x2 * (1.9572941063391263e-20 + x2 * (-3.8681701706306841e-23 + x2 * (6.4469502843844736e-26 + x2 * (-9.183689863795546e-29))))))))))))
        return x + x * x2 * p
    }

    /// atan(x) for finite x.
    @usableFromInline static func atan(_ x: Double) -> Double {
        if x < 0 { return -atan(-x) }
        if x > 1 { return pi / 2 - atan(1 / x) }
        // Halve the angle twice: atan(z) = 2 atan(z / (1 + sqrt(1 + z^2))); z <= 0.199.
        var z = x
        for _ in 0..<2 { z = z / (1 + sqrt12(1 + z * z)) }
        let z2 = z * z               // <= 0.0396: terms past z^25 / 25 are below 1e-19 of z
        // z (1 - z2/3 + z2^2/5 - ... + z2^12/25), Horner form with constant coefficients.
        let p = 1 + z2 * (-1.0 / 3 + z2 * (1.0 / 5 + z2 * (-1.0 / 7 + z2 * (1.0 / 9 + z2 * (-1.0 / 11 + z2 * (1.0 / 13
            + z2 * (-1.0 / 15 + z2 * (1.0 / 17 + z2 * (-1.0 / 19 + z2 * (1.0 / 21 + z2 * (-1.0 / 23 + z2 * (1.0 / 25))))))))))))
        return 4 * (z * p)
    }

    /// atan(c) for c = 0, 1/16, ..., 1 (see `atanUnit`).
    @usableFromInline static let atanSixteenths: [Double] = (0...16).map { atan(Double($0) / 16) }

    /// atan(x) for |x| <= 1, faster than `atan`: atan(x) = atan(c) + atan((x - c) / (1 + x c))
    /// with c the nearest sixteenth, which leaves |r| <= 1/32 for a 6-term series.
    @usableFromInline static func atanUnit(_ x: Double) -> Double {
        if x < 0 { return -atanUnit(-x) }
        let i = Int(x * 16 + 0.5)
        let c = Double(i) / 16
        let r = (x - c) / (1 + x * c)
        let r2 = r * r               // <= 0.001: terms past r^13 / 13 are below 1e-19 of r
        let p = 1 + r2 * (-1.0 / 3 + r2 * (1.0 / 5 + r2 * (-1.0 / 7 + r2 * (1.0 / 9 + r2 * (-1.0 / 11 + r2 * (1.0 / 13))))))
        return atanSixteenths[i] + r * p
    }

    /// 2^x for a finite x (exact for integers).
    @usableFromInline static func exp2(_ x: Double) -> Double {
        let i = floor(x)
        let f = x - i
        let whole = pow2(Int(i))
        return f == 0 ? whole : whole * exp(f * ln2)
    }
}

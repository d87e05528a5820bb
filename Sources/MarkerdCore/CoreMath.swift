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

    /// Square root for v in [1, 2] (Newton's method).
    @usableFromInline static func sqrt12(_ v: Double) -> Double {
        var r = 1.2
        for _ in 0..<6 { r = 0.5 * (r + v / r) }
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
        // Taylor series in Horner form: 1 + r(1 + r/2(1 + r/3(...))).
        var p = 1.0
        var n = 21.0
        while n >= 1 {
            p = 1 + p * r / n
            n -= 1
        }
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
        let z2 = z * z
        var term = z
        var sum = z
        var k = 3.0
        var sign = -1.0
        while k < 50 {
            term *= z2
            sum += sign * term / k
            sign = -sign
            k += 2
        }
        return 4 * sum
    }

    /// 2^x for a finite x (exact for integers).
    @usableFromInline static func exp2(_ x: Double) -> Double {
        let i = floor(x)
        let f = x - i
        let whole = pow2(Int(i))
        return f == 0 ? whole : whole * exp(f * ln2)
    }
}

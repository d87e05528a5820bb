#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

// The C library's elementary functions (the Swift standard library has none), under names
// that `CoreMath`'s members do not shadow.
private func cLog(_ x: Double) -> Double { log(x) }
private func cExp(_ x: Double) -> Double { exp(x) }
private func cExp2(_ x: Double) -> Double { exp2(x) }
private func cLog2(_ x: Double) -> Double { log2(x) }
private func cSin(_ x: Double) -> Double { sin(x) }
private func cAtan(_ x: Double) -> Double { atan(x) }
private func cCos(_ x: Double) -> Double { cos(x) }
private func cAsin(_ x: Double) -> Double { asin(x) }

/// The core's numbers: rounding through an integer conversion, and the C library's elementary
/// functions (for Web Mercator and the clustering); the module's one import of the C library.
@usableFromInline
enum CoreMath {
    // Rounding through an integer conversion: `Double.rounded(_:)` calls the C library's
    // floor/ceil/round on baseline x86-64 (no SSE4.1 `roundsd`) and in unoptimised builds.

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

    /// 2^e for an integer e, exactly.
    @inlinable static func pow2(_ e: Int) -> Double {
        Double(sign: .plus, exponent: e, significand: 1)
    }

    /// Natural logarithm (NaN for x < 0, -infinity for 0).
    @usableFromInline static func log(_ x: Double) -> Double { cLog(x) }
    /// e^x.
    @usableFromInline static func exp(_ x: Double) -> Double { cExp(x) }
    /// 2^x (exact for integers in the Double exponent range).
    @usableFromInline static func exp2(_ x: Double) -> Double { cExp2(x) }
    /// log2(x) (exact for powers of 2).
    @usableFromInline static func log2(_ x: Double) -> Double { cLog2(x) }
    /// sin(x), x in radians.
    @usableFromInline static func sin(_ x: Double) -> Double { cSin(x) }
    /// atan(x) in radians, in (-pi/2, pi/2).
    @usableFromInline static func atan(_ x: Double) -> Double { cAtan(x) }
    /// cos(x), x in radians.
    @usableFromInline static func cos(_ x: Double) -> Double { cCos(x) }
    /// asin(x) in radians, in [-pi/2, pi/2] (NaN outside [-1, 1]).
    @usableFromInline static func asin(_ x: Double) -> Double { cAsin(x) }
}

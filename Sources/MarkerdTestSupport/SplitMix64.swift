import Foundation

/// SplitMix64: a tiny, fast, seeded generator, so randomised tests replay exactly.
public struct SplitMix64: RandomNumberGenerator, Sendable {
    public var state: UInt64

    public init(seed: UInt64) { state = seed }

    public mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }

    /// A uniform Double in [0, 1).
    public mutating func unit() -> Double { Double(next() >> 11) / Double(1 << 53) }
}

/// The seed of a randomised test: `SEED` from the environment (to replay a failure), else
/// `fixed` when given (tests that must run the same requests in every `make test`), else a
/// fresh random one. Printed as "<name>: SEED=<n>" so a failing run says how to replay it.
public func testSeed(_ name: String = #function, fixed: UInt64? = nil) -> UInt64 {
    let seed = ProcessInfo.processInfo.environment["SEED"].flatMap { UInt64($0) } ?? fixed
        ?? UInt64.random(in: 1...UInt64(UInt32.max))
    print("\(name): SEED=\(seed)")
    return seed
}

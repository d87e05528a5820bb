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

/// The seed of a randomised test: `SEED=N` from the environment replays seed N; `SEED=random`
/// draws a fresh one (to explore); otherwise `fixed` when given, else a fixed seed made from the
/// test's name, so that `make test` runs the same cases every time. Printed as "<name>: SEED=<n>".
public func testSeed(_ name: String = #function, fixed: UInt64? = nil) -> UInt64 {
    let env = ProcessInfo.processInfo.environment["SEED"]
    let seed: UInt64
    if let env, let n = UInt64(env) {
        seed = n
    } else if env == "random" {
        seed = UInt64.random(in: 1...UInt64(UInt32.max))
    } else if let fixed {
        seed = fixed
    } else {
        // FNV-1a of the name, folded to 32 bits like the random seeds.
        var h: UInt64 = 0xCBF2_9CE4_8422_2325
        for b in name.utf8 { h = (h ^ UInt64(b)) &* 0x100_0000_01B3 }
        seed = (h ^ (h >> 32)) & 0xFFFF_FFFF | 1
    }
    print("\(name): SEED=\(seed)")
    return seed
}

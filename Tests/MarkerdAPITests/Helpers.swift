#if canImport(Glibc)
import Glibc
#endif
import MarkerdAPI

/// "0a02..." -> bytes.
func bytes(hex: String) -> [UInt8] {
    var out: [UInt8] = []
    var high: UInt8?
    for c in hex.utf8 {
        let v: UInt8
        switch c {
        case UInt8(ascii: "0")...UInt8(ascii: "9"): v = c - UInt8(ascii: "0")
        case UInt8(ascii: "a")...UInt8(ascii: "f"): v = c - UInt8(ascii: "a") + 10
        default: continue  // spaces, line breaks
        }
        if let h = high { out.append(h << 4 | v); high = nil } else { high = v }
    }
    return out
}

func hex(_ bytes: [UInt8]) -> String {
    let digits = Array("0123456789abcdef")
    return String(bytes.flatMap { [digits[Int($0 >> 4)], digits[Int($0 & 15)]] })
}

/// SplitMix64: a small seeded generator, so that failures can be replayed with SEED=.
struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    init(seed: UInt64) { state = seed }
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

/// The seed from the SEED environment variable, or a fresh one; printed either way.
func testSeed(_ test: String) -> UInt64 {
    let seed = getenvSeed() ?? UInt64.random(in: 0...UInt64.max)
    print("\(test): SEED=\(seed)")
    return seed
}

private func getenvSeed() -> UInt64? {
    guard let raw = getenv("SEED") else { return nil }
    return UInt64(String(cString: raw))
}

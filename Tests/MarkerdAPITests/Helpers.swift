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



private func getenvSeed() -> UInt64? {
    guard let raw = getenv("SEED") else { return nil }
    return UInt64(String(cString: raw))
}

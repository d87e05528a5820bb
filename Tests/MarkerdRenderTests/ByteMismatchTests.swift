import MarkerdTestSupport
import Testing

/// `byteMismatch` and `mismatch`, the expectation helpers for big buffers and long arrays.
@Suite struct ByteMismatchTests {
    @Test func sameBytesGiveNil() {
        #expect(byteMismatch([UInt8](), [UInt8]()) == nil)
        #expect(byteMismatch([1, 2, 3] as [UInt8], [1, 2, 3] as [UInt8]) == nil)
        #expect(byteMismatch([UInt8](repeating: 7, count: 1 << 20), [UInt8](repeating: 7, count: 1 << 20)[...]) == nil)
    }

    @Test func differencesAreDescribed() {
        #expect(byteMismatch([1, 2, 3, 4] as [UInt8], [1, 9, 3, 8] as [UInt8])
                == "lengths 4 and 4; first difference at offset 1: 0x2 against 0x9; 2 of the first 4 bytes differ")
        #expect(byteMismatch([1, 2] as [UInt8], [1, 2, 0xFF] as [UInt8]) == "lengths 2 and 3; the first 2 bytes are the same")
        #expect(byteMismatch([0xAB, 2, 3] as [UInt8], [0xCD] as [UInt8])
                == "lengths 3 and 1; first difference at offset 0: 0xAB against 0xCD; 1 of the first 1 bytes differ")
    }

    @Test func otherElements() {
        #expect(mismatch([Int32](), [Int32]()) == nil)
        #expect(mismatch(["a", "b"], ["a", "b"]) == nil)
        #expect(mismatch([3, 1, 2] as [Int32], [3, 2, 1] as [Int32])
                == "lengths 3 and 3; first difference at offset 1: 1 against 2; 2 of the first 3 elements differ")
        #expect(mismatch(["x"], ["x", "y"]) == "lengths 1 and 2; the first 1 elements are the same")
    }

    /// What the helper is for: two different 1 MiB buffers fail at once.
    @Test func bigBuffersAreDescribed() {
        let a = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 31) }, b = (0..<(1 << 20)).map { UInt8(truncatingIfNeeded: $0 &* 17) }
        let m = byteMismatch(a, b)
        #expect(m?.hasPrefix("lengths 1048576 and 1048576; first difference at offset 1: 0x1F against 0x11") == true, "\(m ?? "nil")")
    }
}

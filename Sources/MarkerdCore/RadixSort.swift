/// The project's one radix sort (stable, least significant digit first): the spatial order of a
/// bulk upsert and of a grid batch insert, the id index build, the cluster index's bulk build
/// and a tile's draw order.
public enum RadixSort {
    /// Sorts `items` stably by the bits `bits` of `key(item)` (the other bits are ignored), in
    /// passes over digits of equal width, at most `maxDigitBits` (as few passes as the width
    /// needs). Every pass's digit counts are taken in one read up front, and a pass whose digit
    /// all items share is skipped. O(n x passes) time; one scratch copy of `items` and
    /// passes x 2^digit counters. `bits` must lie within 0..<64.
    @inlinable public static func sort<T>(_ items: inout [T], bits: Range<Int>, maxDigitBits: Int = 12,
                                          key: (T) -> UInt64) {
        precondition(bits.lowerBound >= 0 && bits.upperBound <= 64 && maxDigitBits > 0, "RadixSort: bits \(bits) outside 0..<64")
        let n = items.count, width = bits.count
        guard n > 1, width > 0 else { return }
        let passes = (width + maxDigitBits - 1) / maxDigitBits, digitBits = (width + passes - 1) / passes
        let buckets = 1 << digitBits, digitMask = UInt64(buckets - 1)
        let low = UInt64(bits.lowerBound), widthMask = width == 64 ? UInt64.max : (UInt64(1) << UInt64(width)) - 1
        @inline(__always) func digits(_ e: T) -> UInt64 { (key(e) &>> low) & widthMask }
        var counts = [Int](repeating: 0, count: passes * buckets)
        items.withUnsafeBufferPointer { src in
            counts.withUnsafeMutableBufferPointer { c in
                for i in 0..<n {
                    let v = digits(src[i])
                    for p in 0..<passes { c[p &* buckets &+ Int(truncatingIfNeeded: (v &>> UInt64(p &* digitBits)) & digitMask)] &+= 1 }
                }
            }
        }
        var scratch = items
        for p in 0..<passes {
            let shift = UInt64(p &* digitBits)
            let moved: Bool = counts.withUnsafeMutableBufferPointer { all in
                let c = UnsafeMutableBufferPointer(rebasing: all[p &* buckets..<(p &+ 1) &* buckets])
                var sum = 0
                for d in 0..<buckets {
                    let k = c[d]
                    if k == n { return false }   // a digit every item shares leaves the order as it is
                    c[d] = sum; sum &+= k
                }
                items.withUnsafeBufferPointer { src in
                    scratch.withUnsafeMutableBufferPointer { dst in
                        for i in 0..<n {
                            let d = Int(truncatingIfNeeded: (digits(src[i]) &>> shift) & digitMask)
                            dst[c[d]] = src[i]
                            c[d] &+= 1
                        }
                    }
                }
                return true
            }
            if moved { swap(&items, &scratch) }
        }
    }

    /// The permutation that sorts `keys` stably: `keys[order[0]] <= keys[order[1]] <= ...`,
    /// equal keys in index order. Short arrays (under 2,048) take a comparison sort; longer ones
    /// sort `key - min` by digits of at most 12 bits, as few as the keys' range needs (a z10
    /// tile's world ys: two passes over 4,096 counters, not four over 65,536). When the range
    /// and the index fit in 64 bits together (a tile's keys always do), each key is packed with
    /// its index into one word that the passes move (one sequential read per pass); otherwise
    /// the passes move indexes and read the keys through them.
    public static func order(_ keys: [UInt64]) -> [Int32] {
        let n = keys.count
        var idx = [Int32](unsafeUninitializedCapacity: n) { b, c in
            for i in 0..<n { b[i] = Int32(i) }
            c = n
        }
        if n < 2048 {
            idx.sort { a, b in keys[Int(a)] != keys[Int(b)] ? keys[Int(a)] < keys[Int(b)] : a < b }
            return idx
        }
        var lo = UInt64.max, hi = UInt64.min
        for k in keys { lo = min(lo, k); hi = max(hi, k) }
        let bits = 64 - (hi - lo).leadingZeroBitCount
        let indexBits = 64 - UInt64(n - 1).leadingZeroBitCount
        if bits + indexBits <= 64 {
            var words = [UInt64](unsafeUninitializedCapacity: n) { w, c in
                keys.withUnsafeBufferPointer { k in
                    for i in 0..<n { w[i] = (k[i] &- lo) &<< UInt64(indexBits) | UInt64(truncatingIfNeeded: i) }
                }
                c = n
            }
            sort(&words, bits: indexBits..<(indexBits + bits)) { $0 }
            let indexMask = (UInt64(1) &<< UInt64(indexBits)) &- 1  // indexBits < 64: fewer than 2^63 keys
            return words.map { Int32(truncatingIfNeeded: $0 & indexMask) }
        }
        keys.withUnsafeBufferPointer { k in
            sort(&idx, bits: 0..<bits) { k[Int($0)] &- lo }
        }
        return idx
    }
}

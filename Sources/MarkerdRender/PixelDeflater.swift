/// A fast raw deflate encoder (RFC 1951) for PNG rows of tiles: greedy matching of at least 4
/// bytes against three candidates, the last two positions of the same hashed 4-byte value (a
/// two-entry bucket per hash) and the position straight above (one PNG row back, `rowBytes`); all
/// of the input in one block with Huffman codes made for it (dynamic, lengths at most 15). It
/// reads its input once and searches no further: on marker tiles it takes about half the CPU time
/// of zlib's level 2 (the filtering and adler32 included), for up to 8 % more bytes on dense tiles
/// and fewer on sparse ones (`PNGEncodeOptions.tile`, measured there). Its working memory is
/// allocated per call: a 128 KiB hash table, 4 bytes per input byte for the symbols and 6 bytes
/// per symbol for the output. On the 23,333-pin z10 tile of `marker-bench --only onecity` (262 KB of
/// filtered rows, 33k symbols) the matching takes about 125 instructions a symbol and the output
/// about 50 (callgrind, 2026-12-02; before the loops used wrapping arithmetic and wrote the
/// output without a closure, 152 and 63).
///
/// The output is raw deflate that any inflater reads (zlib's `uncompress` checks every test's
/// streams). It ends byte-aligned: after a final block when `last`, else after an empty stored
/// block, as zlib's Z_SYNC_FLUSH ends (so that the blocks of the next segment of the same zlib
/// stream can follow it, `PNGCodec+Segments.swift`).
enum PixelDeflater {
    /// log2 of the hash table's buckets (16 Ki buckets of two positions, 128 KiB).
    static let hashBits = 14
    /// Deflate's window: the farthest a match may look back.
    static let window = 32768
    /// Longest match deflate can say.
    static let maxMatch = 258

    /// Length codes 257...285 (index 0...28): the shortest length of each, and its extra bits.
    static let lengthBase: [Int] = [3, 4, 5, 6, 7, 8, 9, 10, 11, 13, 15, 17, 19, 23, 27, 31, 35, 43, 51, 59, 67, 83, 99, 115,
                                    131, 163, 195, 227, 258]
    static let lengthExtra: [Int] = [0, 0, 0, 0, 0, 0, 0, 0, 1, 1, 1, 1, 2, 2, 2, 2, 3, 3, 3, 3, 4, 4, 4, 4, 5, 5, 5, 5, 0]
    /// Distance codes 0...29: the shortest distance of each, and its extra bits.
    static let distanceBase: [Int] = [1, 2, 3, 4, 5, 7, 9, 13, 17, 25, 33, 49, 65, 97, 129, 193, 257, 385, 513, 769, 1025, 1537,
                                      2049, 3073, 4097, 6145, 8193, 12289, 16385, 24577]
    static let distanceExtra: [Int] = [0, 0, 0, 0, 1, 1, 2, 2, 3, 3, 4, 4, 5, 5, 6, 6, 7, 7, 8, 8, 9, 9, 10, 10, 11, 11, 12, 12,
                                       13, 13]
    /// The length code index (0...28) of each match length 3...258, at `length - 3`.
    static let lengthCode: [UInt8] = {
        var t = [UInt8](repeating: 0, count: 256)
        for c in 0..<29 {
            for l in lengthBase[c]..<(lengthBase[c] + (1 << lengthExtra[c])) where l <= 258 { t[l - 3] = UInt8(c) }
        }
        return t
    }()
    /// The distance code of `d = distance - 1`: at `d` below 256, else at `256 + d >> 7` (codes
    /// from 16 on have at least 7 extra bits, so each such group of 128 has one code).
    static let distanceCode: [UInt8] = {
        var t = [UInt8](repeating: 0, count: 512)
        for c in 0..<30 {
            for dist in distanceBase[c]..<(distanceBase[c] + (1 << distanceExtra[c])) {
                let d = dist - 1
                t[d < 256 ? d : 256 + d >> 7] = UInt8(c)
            }
        }
        return t
    }()
    /// The order of the code length code's lengths in a dynamic block's header.
    static let codeLengthOrder: [Int] = [16, 17, 18, 0, 8, 7, 9, 6, 10, 5, 11, 4, 12, 3, 13, 2, 14, 1, 15]

    /// Raw deflate of `input` (a PNG's filtered rows, `rowBytes` bytes each with the filter byte;
    /// another positive number only changes which matches are found): one block, final when
    /// `last`, else followed by an empty stored block. Empty input gives just the empty stored
    /// block (final when `last`).
    static func deflate(_ input: UnsafeBufferPointer<UInt8>, rowBytes: Int, last: Bool) -> [UInt8] {
        let n = input.count
        // Symbols: a literal byte, or 1 << 31 | (length - 3) << 15 | (distance - 1).
        let symbols = UnsafeMutablePointer<UInt32>.allocate(capacity: max(n, 1))
        defer { symbols.deallocate() }
        var litFreq = [Int](repeating: 0, count: 286), distFreq = [Int](repeating: 0, count: 30)
        let count = match(input, rowBytes: rowBytes, into: symbols, &litFreq, &distFreq)
        // At most 48 bits a symbol (a match: 15 + 5 and 15 + 13), the header (under 600 bytes:
        // 316 code lengths of at most 14 bits each, and 74 bits more)
        // and the end.
        var writer = BitWriter(capacity: 6 * count + 1024)
        defer { writer.deallocate() }
        if count > 0 {
            litFreq[256] = 1
            writeBlock(symbols, count, &litFreq, &distFreq, final: last, &writer)
            if !last { writer.emptyStoredBlock(final: false) }
        } else {
            writer.emptyStoredBlock(final: last)
        }
        return writer.bytes()
    }

    /// Greedy matching; returns the number of symbols written to `symbols`, their frequencies
    /// counted (length and distance codes, not yet the end of block).
    private static func match(_ input: UnsafeBufferPointer<UInt8>, rowBytes: Int, into symbols: UnsafeMutablePointer<UInt32>,
                              _ litFreq: inout [Int], _ distFreq: inout [Int]) -> Int {
        let n = input.count
        guard n > 0, let p = input.baseAddress else { return 0 }
        let raw = UnsafeRawPointer(p)
        let above = rowBytes > 0 && rowBytes <= window ? rowBytes : 0
        let table = UnsafeMutablePointer<Int32>.allocate(capacity: 2 << hashBits)
        defer { table.deallocate() }
        // Far enough back that no position looks within the window.
        table.initialize(repeating: -Int32(window) - 1, count: 2 << hashBits)
        var count = 0
        lengthCode.withUnsafeBufferPointer { lcode in
        distanceCode.withUnsafeBufferPointer { dcode in
        litFreq.withUnsafeMutableBufferPointer { lf in
        distFreq.withUnsafeMutableBufferPointer { df in
            @inline(__always) func load32(_ i: Int) -> UInt32 { raw.loadUnaligned(fromByteOffset: i, as: UInt32.self) }
            // Equal bytes at `a` and `b` (a < b), up to `limit`. (Wrapping arithmetic here and
            // below: every index is below the input's count, far from overflowing.)
            @inline(__always) func common(_ a: Int, _ b: Int, _ limit: Int) -> Int {
                var k = 0
                while k &+ 8 <= limit {
                    let x = raw.loadUnaligned(fromByteOffset: a &+ k, as: UInt64.self) ^ raw.loadUnaligned(fromByteOffset: b &+ k, as: UInt64.self)
                    if x != 0 { return k &+ x.trailingZeroBitCount &>> 3 }
                    k &+= 8
                }
                while k < limit && p[a &+ k] == p[b &+ k] { k &+= 1 }
                return k
            }
            var i = 0
            while i &+ 4 <= n {
                let v = load32(i)
                let h = Int((v &* 2_654_435_761) &>> UInt32(32 &- hashBits))
                let candidate = Int(table[2 &* h]), older = Int(table[2 &* h &+ 1])
                table[2 &* h &+ 1] = Int32(truncatingIfNeeded: candidate)
                table[2 &* h] = Int32(truncatingIfNeeded: i)
                let limit = min(maxMatch, n &- i) &- 4
                var length = 0, distance = 0
                if i &- candidate <= window && load32(candidate) == v {
                    length = 4 &+ common(candidate &+ 4, i &+ 4, limit); distance = i &- candidate
                }
                if length < maxMatch && i &- older <= window && load32(older) == v {
                    let l = 4 &+ common(older &+ 4, i &+ 4, limit)
                    if l > length { length = l; distance = i &- older }
                }
                if above > 0 && i >= above && length < maxMatch && i &- above != candidate && load32(i &- above) == v {
                    let l = 4 &+ common(i &- above &+ 4, i &+ 4, limit)
                    if l > length { length = l; distance = above }
                }
                if length > 0 {
                    symbols[count] = 1 << 31 | UInt32(truncatingIfNeeded: length &- 3) &<< 15 | UInt32(truncatingIfNeeded: distance &- 1)
                    lf[257 &+ Int(lcode[length &- 3])] &+= 1
                    let d = distance &- 1
                    df[Int(dcode[d < 256 ? d : 256 &+ d &>> 7])] &+= 1
                    i &+= length
                } else {
                    symbols[count] = UInt32(p[i])
                    lf[Int(p[i])] &+= 1
                    i &+= 1
                }
                count &+= 1
            }
            while i < n {
                symbols[count] = UInt32(p[i]); lf[Int(p[i])] += 1
                i += 1; count += 1
            }
        }
        }
        }
        }
        return count
    }

    /// One dynamic block of `count` symbols with the end of block.
    private static func writeBlock(_ symbols: UnsafeMutablePointer<UInt32>, _ count: Int, _ litFreq: inout [Int],
                                   _ distFreq: inout [Int], final: Bool, _ w: inout BitWriter) {
        // Every code gets at least two symbols, so that it is complete (inflaters reject
        // incomplete codes but for a single code of length 1); unused ones are never written.
        ensureTwo(&litFreq); ensureTwo(&distFreq)
        let litLengths = codeLengths(litFreq, limit: 15), distLengths = codeLengths(distFreq, limit: 15)
        let litCodes = canonicalCodes(litLengths), distCodes = canonicalCodes(distLengths)
        let hlit = max(257, (litLengths.lastIndex { $0 != 0 } ?? 0) + 1)
        let hdist = max(1, (distLengths.lastIndex { $0 != 0 } ?? 0) + 1)
        // The code lengths, run-length coded (symbols 0...18, with their extra bits).
        let all = Array(litLengths[0..<hlit]) + Array(distLengths[0..<hdist])
        var runs: [(symbol: Int, extra: Int)] = []
        var i = 0
        while i < all.count {
            let l = all[i]
            var run = 1
            while i + run < all.count && all[i + run] == l { run += 1 }
            i += run
            if l == 0 {
                while run >= 11 { let k = min(run, 138); runs.append((18, k - 11)); run -= k }
                if run >= 3 { runs.append((17, run - 3)); run = 0 }
                while run > 0 { runs.append((0, 0)); run -= 1 }
            } else {
                runs.append((Int(l), 0)); run -= 1
                while run >= 3 { let k = min(run, 6); runs.append((16, k - 3)); run -= k }
                while run > 0 { runs.append((Int(l), 0)); run -= 1 }
            }
        }
        var clFreq = [Int](repeating: 0, count: 19)
        for r in runs { clFreq[r.symbol] += 1 }
        ensureTwo(&clFreq)
        let clLengths = codeLengths(clFreq, limit: 7), clCodes = canonicalCodes(clLengths)
        var hclen = 19
        while hclen > 4 && clLengths[codeLengthOrder[hclen - 1]] == 0 { hclen -= 1 }

        w.put(final ? 1 : 0, 1); w.put(2, 2)
        w.put(UInt64(hlit - 257), 5); w.put(UInt64(hdist - 1), 5); w.put(UInt64(hclen - 4), 4)
        for k in 0..<hclen { w.put(UInt64(clLengths[codeLengthOrder[k]]), 3) }
        for r in runs {
            w.put(UInt64(clCodes[r.symbol]), Int(clLengths[r.symbol]))
            // Symbols 16, 17 and 18 carry 2, 3 and 7 extra bits.
            if r.symbol >= 16 { w.put(UInt64(r.extra), [2, 3, 7][r.symbol - 16]) }
        }

        // The symbols. Per literal its code and length; per match length (3...258) its length
        // code's Huffman code with the extra bits above it, and the total bits; per distance code
        // its Huffman code, code length, base and extra bits.
        var literal = [UInt64](repeating: 0, count: 256)
        for c in 0..<256 { literal[c] = UInt64(litCodes[c]) | UInt64(litLengths[c]) << 32 }
        var length = [UInt64](repeating: 0, count: 256)
        for l in 3...258 {
            let lc = Int(lengthCode[l - 3]), bits = UInt64(litLengths[257 + lc])
            length[l - 3] = (UInt64(litCodes[257 + lc]) | UInt64(l - lengthBase[lc]) << bits) | (bits + UInt64(lengthExtra[lc])) << 32
        }
        var distance = [UInt64](repeating: 0, count: 30)
        for c in 0..<30 {
            distance[c] = UInt64(distCodes[c]) | UInt64(distLengths[c]) << 24 | UInt64(distanceBase[c]) << 32 | UInt64(distanceExtra[c]) << 48
        }
        literal.withUnsafeBufferPointer { lit in
        length.withUnsafeBufferPointer { len in
        distance.withUnsafeBufferPointer { dist in
        distanceCode.withUnsafeBufferPointer { dcode in
            w.emit(symbols, count, literals: lit, lengths: len, distances: dist, distanceCode: dcode)
        }
        }
        }
        }
        w.put(UInt64(litCodes[256]), Int(litLengths[256]))
    }

    /// Gives frequency 1 to the first symbols with none until at least two have some.
    private static func ensureTwo(_ freq: inout [Int]) {
        var used = freq.reduce(0) { $0 + ($1 > 0 ? 1 : 0) }
        var s = 0
        while used < 2 { if freq[s] == 0 { freq[s] = 1; used += 1 }; s += 1 }
    }

    /// Huffman code lengths for `freq` (at least two non-zero), none longer than `limit`: when
    /// the optimal code is too deep, the frequencies are halved (rounding up, so none becomes 0)
    /// and it is built again, until it fits (equal frequencies give a balanced code).
    static func codeLengths(_ freq: [Int], limit: Int) -> [UInt8] {
        var f = freq
        while true {
            let lengths = huffmanLengths(f)
            if Int(lengths.max() ?? 0) <= limit { return lengths }
            for s in f.indices where f[s] > 0 { f[s] = (f[s] + 1) / 2 }
        }
    }

    /// Optimal code lengths (two-queue Huffman over the symbols sorted by frequency).
    private static func huffmanLengths(_ freq: [Int]) -> [UInt8] {
        let leaves = freq.indices.filter { freq[$0] > 0 }.sorted { (freq[$0], $0) < (freq[$1], $1) }
        var lengths = [UInt8](repeating: 0, count: freq.count)
        let n = leaves.count
        if n == 1 { lengths[leaves[0]] = 1 }
        if n <= 1 { return lengths }
        // Nodes 0 ..< n: the leaves in order; n ..< 2n - 1: merged nodes, in the order made.
        var weight = leaves.map { freq[$0] } + [Int](repeating: 0, count: n - 1)
        var parent = [Int](repeating: 0, count: 2 * n - 1)
        var nextLeaf = 0, nextMerged = n
        for made in n..<(2 * n - 1) {
            var pair = (0, 0)
            for k in 0..<2 {
                let node: Int
                if nextLeaf < n && (nextMerged >= made || weight[nextLeaf] <= weight[nextMerged]) {
                    node = nextLeaf; nextLeaf += 1
                } else {
                    node = nextMerged; nextMerged += 1
                }
                if k == 0 { pair.0 = node } else { pair.1 = node }
            }
            weight[made] = weight[pair.0] + weight[pair.1]
            parent[pair.0] = made; parent[pair.1] = made
        }
        var depth = [Int](repeating: 0, count: 2 * n - 1)
        for node in stride(from: 2 * n - 3, through: 0, by: -1) { depth[node] = depth[parent[node]] + 1 }
        for (k, s) in leaves.enumerated() { lengths[s] = UInt8(depth[k]) }
        return lengths
    }

    /// Canonical codes for `lengths` (RFC 1951, 3.2.2), bit-reversed for writing LSB first.
    static func canonicalCodes(_ lengths: [UInt8]) -> [UInt32] {
        var countOf = [Int](repeating: 0, count: 16)
        for l in lengths where l > 0 { countOf[Int(l)] += 1 }
        var next = [Int](repeating: 0, count: 16)
        var code = 0
        for bits in 1..<16 { code = (code + countOf[bits - 1]) << 1; next[bits] = code }
        var codes = [UInt32](repeating: 0, count: lengths.count)
        for (s, l) in lengths.enumerated() where l > 0 {
            var c = next[Int(l)], r: UInt32 = 0
            next[Int(l)] += 1
            for _ in 0..<Int(l) { r = r << 1 | UInt32(c & 1); c >>= 1 }
            codes[s] = r
        }
        return codes
    }

    /// Bits written least significant first (deflate's order) into a buffer of fixed capacity.
    struct BitWriter {
        private let start: UnsafeMutablePointer<UInt8>
        private let capacity: Int
        private var at = 0
        private var acc: UInt64 = 0
        private var bits = 0

        init(capacity: Int) {
            self.capacity = capacity
            start = .allocate(capacity: capacity)
        }

        func deallocate() { start.deallocate() }

        /// Writes the low `count` bits of `value` (count <= 32; higher bits must be 0).
        @inline(__always) mutating func put(_ value: UInt64, _ count: Int) {
            acc |= value << UInt64(bits)
            bits += count
            if bits >= 32 {
                precondition(at + 4 <= capacity, "deflate output over its bound")
                UnsafeMutableRawPointer(start + at).storeBytes(of: UInt32(truncatingIfNeeded: acc).littleEndian, as: UInt32.self)
                at += 4; acc >>= 32; bits -= 32
            }
        }

        /// Writes `count` symbols (`deflate`'s form: a literal byte, or 1 << 31 | (length - 3) << 15
        /// | (distance - 1)) with the block's tables: per literal its code | length << 32; per match
        /// length (3 ... 258, at length - 3) its length code's Huffman code with the extra bits
        /// above it | the total bits << 32; per distance code its Huffman code | code length << 24
        /// | base << 32 | extra bits << 48; `distanceCode` as `PixelDeflater.distanceCode`. The bit
        /// buffer stays in locals (the stores could alias the writer's fields), with wrapping
        /// shifts (every count is below 64), and the room is checked once: at most 48 bits a symbol.
        mutating func emit(_ symbols: UnsafeMutablePointer<UInt32>, _ count: Int, literals: UnsafeBufferPointer<UInt64>,
                           lengths: UnsafeBufferPointer<UInt64>, distances: UnsafeBufferPointer<UInt64>,
                           distanceCode: UnsafeBufferPointer<UInt8>) {
            precondition(at + 6 * count + 8 <= capacity, "deflate output over its bound")
            var acc = self.acc, bits = UInt64(self.bits), at = self.at
            let out = UnsafeMutableRawPointer(start)
            @inline(__always) func put(_ value: UInt64, _ n: UInt64) {
                acc |= value &<< bits
                bits &+= n
                if bits >= 32 {
                    out.storeBytes(of: UInt32(truncatingIfNeeded: acc).littleEndian, toByteOffset: at, as: UInt32.self)
                    at &+= 4; acc &>>= 32; bits &-= 32
                }
            }
            var k = 0
            while k < count {
                let s = symbols[k]
                k &+= 1
                if s < 256 {
                    let e = literals[Int(s)]
                    put(e & 0xFFFF_FFFF, e &>> 32)
                    continue
                }
                let l = lengths[Int(s &>> 15 & 0xFF)]
                put(l & 0xFFFF_FFFF, l &>> 32)
                let d = Int(s & 0x7FFF)
                let e = distances[Int(distanceCode[d < 256 ? d : 256 &+ d &>> 7])]
                let codeBits = e &>> 24 & 0xFF
                put(e & 0xFF_FFFF | UInt64(truncatingIfNeeded: d &+ 1 &- Int(e &>> 32 & 0xFFFF)) &<< codeBits, codeBits &+ (e &>> 48))
            }
            self.acc = acc; self.bits = Int(bits); self.at = at
        }

        /// Pads with zero bits to a byte boundary.
        mutating func align() {
            while bits > 0 {
                precondition(at < capacity, "deflate output over its bound")
                start[at] = UInt8(truncatingIfNeeded: acc); at += 1
                acc >>= 8; bits = max(0, bits - 8)
            }
            acc = 0
        }

        /// A stored block of no bytes (3 header bits, padding, LEN 0, NLEN 0xFFFF): byte-aligned after it.
        mutating func emptyStoredBlock(final: Bool) {
            put(final ? 1 : 0, 3)
            align()
            for b: UInt8 in [0, 0, 0xFF, 0xFF] { precondition(at < capacity); start[at] = b; at += 1 }
        }

        /// The bytes written, once aligned.
        mutating func bytes() -> [UInt8] {
            align()
            return [UInt8](UnsafeBufferPointer(start: start, count: at))
        }
    }
}

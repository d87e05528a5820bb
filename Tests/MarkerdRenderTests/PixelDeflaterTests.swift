import MarkerdCore
import MarkerdTestSupport
@testable import MarkerdRender
import Testing

/// `PixelDeflater` against zlib's inflater as the oracle (`PNGCodec.inflateZlib`: header, data
/// and adler32 checked), on inputs chosen to reach every path: empty and tiny inputs, runs longer
/// than a match, matches at the window's edge, incompressible bytes, tile-like rows.
@Suite struct PixelDeflaterTests {
    /// `raw` wrapped as a zlib stream of `data` (header 78 01, adler32 trailer), inflated by zlib.
    static func inflate(_ raw: [UInt8], of data: [UInt8]) throws -> [UInt8] {
        try PNGCodec.inflateZlib([0x78, 0x01] + raw + PNGSegmentTests.adler32(data).bigEndianBytes, expected: data.count)
    }

    static func deflate(_ data: [UInt8], rowBytes: Int, last: Bool = true) -> [UInt8] {
        data.withUnsafeBufferPointer { PixelDeflater.deflate($0, rowBytes: rowBytes, last: last) }
    }

    /// Inputs of many shapes, each with a few row lengths.
    static func inputs(using rng: inout SplitMix64) -> [(String, [UInt8])] {
        var out: [(String, [UInt8])] = []
        for n in 0...9 { out.append(("\(n) random bytes", (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) })) }
        out.append(("zeros", [UInt8](repeating: 0, count: 70_000)))
        out.append(("one byte repeated, odd length", [UInt8](repeating: 7, count: 1_031)))
        out.append(("incompressible", (0..<50_000).map { _ in UInt8.random(in: 0...255, using: &rng) }))
        // A random block repeated at distances around the window's size: 32,768 may match, 32,769 may not.
        for gap in [32_764, 32_768, 32_769, 40_000] {
            let block = (0..<300).map { _ in UInt8.random(in: 0...255, using: &rng) }
            let filler = (0..<(gap - block.count)).map { _ in UInt8.random(in: 0...255, using: &rng) }
            out.append(("a block again after \(gap) bytes", block + filler + block))
        }
        // The older of a hash's two positions gives the longer match: 4 bytes followed by a long
        // tail, the same 4 bytes followed by something else, then the 4 bytes with the long tail.
        let key = (0..<4).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let tail = (0..<40).map { _ in UInt8.random(in: 0...255, using: &rng) }
        let filler = (0..<10).map { _ in UInt8.random(in: 0...255, using: &rng) }
        out.append(("the older candidate longer", key + tail + filler + key + filler + key + tail + filler))
        // Few distinct values (long codes and short ones), runs of every length around 3...258.
        var runs: [UInt8] = []
        for len in [1, 2, 3, 4, 5, 8, 9, 10, 11, 130, 257, 258, 259, 260, 600] {
            runs += [UInt8](repeating: UInt8.random(in: 0...3, using: &rng), count: len)
            runs.append(UInt8.random(in: 0...255, using: &rng))
        }
        out.append(("runs", runs))
        // Tile-like: rows of 1 + 4 x 64 bytes, a few "pins" copied across rows, transparent between.
        let pin = (0..<48).map { _ in UInt8.random(in: 0...255, using: &rng) }
        var tile = [UInt8]()
        for y in 0..<120 {
            var row = [UInt8](repeating: 0, count: 1 + 256)
            for x in stride(from: 1 + (y % 5) * 4, to: 257 - pin.count, by: 80) where y % 7 != 0 {
                row.replaceSubrange(x..<(x + pin.count), with: pin)
            }
            tile += row
        }
        out.append(("tile-like rows", tile))
        // Skewed byte frequencies (Fibonacci-like counts), deep enough to need the length limit.
        var skewed = [UInt8]()
        var (a, b) = (1, 1)
        for s in 0..<24 { skewed += [UInt8](repeating: UInt8(s * 10), count: a); (a, b) = (b, min(a + b, 40_000)) }
        skewed.shuffle(using: &rng)
        out.append(("skewed frequencies", skewed))
        return out
    }

    /// Every input inflates back exactly, as one final block and as a non-final segment followed
    /// by another (the two joined into one stream, as the PNG segments are).
    @Test func roundTripsThroughZlib() throws {
        var rng = SplitMix64(seed: testSeed())
        for (what, data) in Self.inputs(using: &rng) {
            for rowBytes in [1, 4, 257, 1025, 40_000] {
                let raw = Self.deflate(data, rowBytes: rowBytes)
                #expect(try Self.inflate(raw, of: data) == data, "\(what), rows of \(rowBytes)")
                let cut = data.isEmpty ? 0 : Int.random(in: 0...data.count, using: &rng)
                let head = Array(data[..<cut]), tail = Array(data[cut...])
                let joined = Self.deflate(head, rowBytes: rowBytes, last: false) + Self.deflate(tail, rowBytes: rowBytes)
                #expect(try Self.inflate(joined, of: data) == data, "\(what), rows of \(rowBytes), cut at \(cut)")
            }
        }
    }

    /// A non-final segment ends byte-aligned with an empty stored block (00 00 FF FF), as zlib's
    /// sync flush does; a final one alone is not a complete stream's middle.
    @Test func segmentsEndWithSyncFlush() throws {
        var rng = SplitMix64(seed: testSeed())
        for (what, data) in Self.inputs(using: &rng) {
            let raw = Self.deflate(data, rowBytes: 1025, last: false)
            #expect(Array(raw.suffix(4)) == [0, 0, 0xFF, 0xFF], "\(what)")
            // Not final: zlib wants more after it.
            #expect(throws: RenderError.self, "\(what): a non-final segment alone is not a stream") { try Self.inflate(raw, of: data) }
        }
    }

    /// The output is smaller than the input where the input repeats: zeros shrink to a few
    /// hundred bytes, and tile-like rows to well under half.
    @Test func compressesRepeats() {
        var rng = SplitMix64(seed: testSeed())
        let inputs = Dictionary(uniqueKeysWithValues: Self.inputs(using: &rng))
        #expect(Self.deflate(inputs["zeros"]!, rowBytes: 1025).count < 400)
        let tile = inputs["tile-like rows"]!
        #expect(Self.deflate(tile, rowBytes: 257).count * 4 < tile.count)
    }

    /// Code lengths are at most the limit and make a complete prefix code (Kraft sum exactly 1),
    /// also for frequencies whose optimal code is deeper than the limit; used symbols only.
    @Test func codeLengthsAreLimitedAndComplete() {
        var rng = SplitMix64(seed: testSeed())
        var cases: [[Int]] = [[1, 1], [5, 0, 0, 9], (0..<286).map { _ in Int.random(in: 0...1000, using: &rng) }]
        var fib = [1, 1]
        while fib.count < 40 { fib.append(fib[fib.count - 1] + fib[fib.count - 2]) }
        cases.append(fib)
        cases.append(fib.reversed() + [0, 0, 3])
        for (k, freq) in cases.enumerated() {
            for limit in [7, 15] where freq.filter({ $0 > 0 }).count <= 1 << limit {
                let lengths = PixelDeflater.codeLengths(freq, limit: limit)
                #expect(lengths.allSatisfy { $0 <= limit }, "case \(k), limit \(limit)")
                #expect(zip(freq, lengths).allSatisfy { ($0 > 0) == ($1 > 0) }, "case \(k): used symbols only")
                let kraft = lengths.filter { $0 > 0 }.reduce(0.0) { $0 + 1 / Double(1 << Int($1)) }
                #expect(kraft == 1, "case \(k), limit \(limit): Kraft sum \(kraft)")
            }
        }
        #expect(PixelDeflater.codeLengths(fib, limit: 64).max()! > 15, "the Fibonacci case needs the limit")
    }

    /// Canonical codes (RFC 1951's example: lengths 3, 3, 3, 3, 3, 2, 4, 4 give codes 010, 011,
    /// 100, 101, 110, 00, 1110, 1111), bit-reversed.
    @Test func canonicalCodesMatchTheRFC() {
        let codes = PixelDeflater.canonicalCodes([3, 3, 3, 3, 3, 2, 4, 4])
        let rfc: [(UInt32, Int)] = [(0b010, 3), (0b011, 3), (0b100, 3), (0b101, 3), (0b110, 3), (0b00, 2), (0b1110, 4), (0b1111, 4)]
        for (s, (code, bits)) in rfc.enumerated() {
            var reversed: UInt32 = 0
            for b in 0..<bits { reversed |= (code >> UInt32(b) & 1) << UInt32(bits - 1 - b) }
            #expect(codes[s] == reversed, "symbol \(s)")
        }
    }

    /// Rendered tiles of dense random layers (default pins, 256 and 512 px, densities 1 and 2)
    /// encoded as PNGs with `.pixel` decode (libpng) to exactly the canvas, and are at most 1.5x
    /// the bytes of the tiles' zlib settings (`.tileZlib`): the deflater finds the pins' repeats.
    @Test func renderedTilesRoundTrip() throws {
        var rng = SplitMix64(seed: testSeed())
        let now: Int64 = 1_700_000_000_000
        let r = makeRenderer()
        var pixelBytes = 0, zlibBytes = 0
        for round in 0..<6 {
            let center = LatLng(latitude: (rng.unit() - 0.5) * 140, longitude: (rng.unit() - 0.5) * 340)
            let layer = try randomLayer(count: 3000, center: center, spreadDegrees: [0.01, 0.05, 0.2][round % 3], rng: &rng, now: now)
            let view = RasterView.tile(TileID.containing(center, zoom: 9 + round % 4), tileSize: [256, 512][round % 2], density: 1 + round % 2)
            let canvas = try r.render(layer, view: view, now: now).canvas
            let png = canvas.encodePNG(options: .pixel), reference = canvas.encodePNG(options: .tileZlib)
            let decoded = try PNGCodec.decode(png, maxWidth: 1024, maxHeight: 1024, maxBytes: 64 << 20)
            #expect(byteMismatch(decoded.pixels, canvas.pixels) == nil, "round \(round): pixels")
            #expect(png.count * 2 <= reference.count * 3, "round \(round): \(png.count) bytes against zlib's \(reference.count)")
            pixelBytes += png.count; zlibBytes += reference.count
        }
        #expect(zlibBytes > 6 * 2_000, "the tiles hold pins (\(zlibBytes) bytes)")
    }
}

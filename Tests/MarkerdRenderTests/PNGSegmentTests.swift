import MarkerdTestSupport
import Foundation
@testable import MarkerdRender
import Testing

/// PNGs whose IDAT stream is deflated in segments (`PNGCodec+Segments.swift`) against the
/// one-stream encoder (`PNGCodec.encode`, libpng's own deflate) as the oracle.
@Suite struct PNGSegmentTests {
    /// The chunks of a PNG after the signature: (type, data).
    static func chunks(_ png: [UInt8]) -> [(type: String, data: [UInt8])] {
        var out: [(String, [UInt8])] = []
        var i = 8
        while i + 12 <= png.count {
            let len = Int(png[i]) << 24 | Int(png[i + 1]) << 16 | Int(png[i + 2]) << 8 | Int(png[i + 3])
            let type = String(decoding: png[(i + 4)..<(i + 8)], as: UTF8.self)
            out.append((type, Array(png[(i + 8)..<(i + 8 + len)])))
            i += 12 + len
        }
        return out
    }

    /// The zlib stream: every IDAT chunk's data, in order.
    static func idat(_ png: [UInt8]) -> [UInt8] { chunks(png).filter { $0.type == "IDAT" }.flatMap(\.data) }

    /// adler32, computed directly (RFC 1950), continued from `start` (1 for a new stream).
    static func adler32(_ bytes: [UInt8], start: UInt32 = 1) -> UInt32 {
        var a: UInt32 = start & 0xFFFF, b: UInt32 = start >> 16
        for x in bytes { a = (a + UInt32(x)) % 65521; b = (b + a) % 65521 }
        return b << 16 | a
    }

    /// The shim's adler32 (16 bytes a step, reduced every 5,552 bytes) equals the direct sum on
    /// every length around its steps and its reduction, on random bytes and on 0xFF bytes (the
    /// largest sums), continued from a start other than 1 and in two parts.
    @Test func adler32MatchesTheDirectSum() {
        var rng = SplitMix64(seed: testSeed())
        let lengths = Array(0...70) + [5_535, 5_551, 5_552, 5_553, 5_568, 11_104, 11_121, 65_536, 262_401]
        for n in lengths {
            for (what, bytes) in [("random", (0..<n).map { _ in UInt8.random(in: 0...255, using: &rng) }),
                                  ("0xFF", [UInt8](repeating: 0xFF, count: n))] {
                #expect(PNGCodec.adler32(bytes) == Self.adler32(bytes), "\(what), \(n) bytes")
                let cut = Int.random(in: 0...n, using: &rng)
                let continued = PNGCodec.adler32(Array(bytes[cut...]), start: PNGCodec.adler32(Array(bytes[..<cut])))
                #expect(continued == Self.adler32(bytes), "\(what), \(n) bytes cut at \(cut)")
            }
        }
        // A start whose sums are just below the modulus.
        let start: UInt32 = 65_520 << 16 | 65_520, bytes = [UInt8](repeating: 0xFF, count: 20_000)
        #expect(PNGCodec.adler32(bytes, start: start) == Self.adler32(bytes, start: start))
    }

    /// A random premultiplied image whose rows are each fully transparent, fully opaque or of
    /// random alpha (`randomImage`'s pixels).
    static func randomRows(width: Int, height: Int, using rng: inout SplitMix64) -> RGBAImage {
        var px = randomImage(width: width, height: height, using: &rng).pixels
        for y in 0..<height {
            let row = (y * width * 4)..<((y + 1) * width * 4)
            switch Int.random(in: 0..<3, using: &rng) {
            case 0: for i in row { px[i] = 0 }
            case 1: for i in stride(from: row.lowerBound, to: row.upperBound, by: 4) {
                px[i + 3] = 255
                for c in 0..<3 { px[i + c] = UInt8.random(in: 0...255, using: &rng) }
            }
            default: break
            }
        }
        return RGBAImage(width: width, height: height, pixels: px)
    }

    /// Cuts at 0, 1, h-1, h, in the middle, at random, and several at once (up to four segments).
    static func cutSets(height h: Int, using rng: inout SplitMix64) -> [[Int]] {
        var sets: [[Int]] = [[0], [1], [h - 1], [h], [h / 2], [Int.random(in: 0...h, using: &rng)], []]
        sets.append((0..<3).map { _ in Int.random(in: 0...h, using: &rng) }.sorted())
        sets.append([0, h])
        return sets.map { $0.map { min(max($0, 0), h) } }
    }

    /// Segmented PNGs decode (libpng) to exactly the image and to the one-stream PNG's pixels;
    /// their zlib stream inflates (zlib's `uncompress`, not libpng) to exactly the one-stream
    /// PNG's filtered bytes; the zlib header has a valid FCHECK and the trailer is the adler32 of
    /// those bytes; the signature, IHDR and IEND are the one-stream PNG's bytes. Sizes 1x1, 1xN,
    /// Nx1, 256, 512, 768 and odd heights; every cut set of `cutSets`; every setting without filters.
    @Test func segmentsDecodeLikeOneStream() throws {
        var rng = SplitMix64(seed: testSeed())
        let settings: [PNGEncodeOptions] = [.tileZlib, .default, .fast, PNGEncodeOptions(level: 9), PNGEncodeOptions(level: 0),
                                            PNGEncodeOptions(level: 1, strategy: .rle), PNGEncodeOptions(level: 2, strategy: .huffmanOnly), .pixel]
        var sizes = [(1, 1), (1, 37), (41, 1), (256, 256), (512, 512), (768, 3), (3, 768), (256, 255), (100, 77)]
        for _ in 0..<6 { sizes.append((Int.random(in: 1...90, using: &rng), Int.random(in: 1...90, using: &rng))) }
        for (round, (width, height)) in sizes.enumerated() {
            let image = Self.randomRows(width: width, height: height, using: &rng)
            let options = settings[round % settings.count]
            // The one-stream oracle is zlib's (`.pixel` encodes through the segments themselves).
            let one = PNGCodec.encode(image, options: options.deflater == .pixel ? .tileZlib : options)
            let filtered = try PNGCodec.inflateZlib(Self.idat(one), expected: height * (1 + width * 4))
            for cuts in Self.cutSets(height: height, using: &rng) {
                let what = "round \(round): \(width)x\(height) cuts \(cuts) \(options)"
                let png = try image.pixels.withUnsafeBufferPointer {
                    try PNGCodec.encodeSegmented(premultiplied: $0, width: width, height: height, cuts: cuts, options: options)
                }
                #expect(try PNGCodec.decode(png, maxWidth: 1024, maxHeight: 1024, maxBytes: 64 << 20) == image, "\(what): pixels")
                #expect(try PNGCodec.decode(png, maxWidth: 1024, maxHeight: 1024, maxBytes: 64 << 20, premultiplied: false)
                        == PNGCodec.decode(one, maxWidth: 1024, maxHeight: 1024, maxBytes: 64 << 20, premultiplied: false), "\(what): straight pixels")
                #expect(png.prefix(33) == one.prefix(33), "\(what): signature and IHDR")
                #expect(png.suffix(12) == one.suffix(12), "\(what): IEND")
                let chunks = Self.chunks(png)
                #expect(chunks.map(\.type) == ["IHDR", "IDAT", "IEND"], "\(what): chunks")
                let stream = Self.idat(png)
                #expect(stream[0] == 0x78 && (Int(stream[0]) << 8 | Int(stream[1])) % 31 == 0, "\(what): zlib header")
                if options.deflater == .pixel {
                    #expect(PNGCodec.encode(image, options: options) == png || cuts != [], "\(what): encode is one segment")
                }
                #expect(stream.suffix(4) == Self.adler32(filtered).bigEndianBytes, "\(what): adler32 trailer")
                #expect(try PNGCodec.inflateZlib(stream, expected: filtered.count) == filtered, "\(what): zlib inflate")
            }
        }
    }

    /// A stream with a wrong adler32 (its IDAT CRC made right again, so only zlib can tell) is
    /// rejected by libpng and by zlib, whichever bit is flipped; so is a wrong FCHECK.
    @Test func corruptTrailerOrHeaderIsRejected() throws {
        var rng = SplitMix64(seed: testSeed())
        let (width, height) = (64, 48)
        // Four images, every bit of the trailer and of FLG: whether libpng meets a bad adler32
        // while it inflates the last row or only when it finishes the stream depends on the
        // bit layout (at some seeds, before the fix in cpng_decode_rgba8, only the trailer's last
        // two bytes got through).
        for _ in 0..<4 {
            let image = Self.randomRows(width: width, height: height, using: &rng)
            let png = try image.pixels.withUnsafeBufferPointer {
                try PNGCodec.encodeSegmented(premultiplied: $0, width: width, height: height, cuts: [20], options: .tile)
            }
            let stream = Self.idat(png)
            // Each case is the same file with the IDAT data replaced and its CRC recomputed.
            let idatStart = 33, type = Array("IDAT".utf8)
            let cases = (stream.count - 4..<stream.count).map { ("adler32", $0) } + [("FCHECK", 1)]
            for (what, at) in cases {
                for bit in 0..<8 {
                    var bad = stream
                    bad[at] ^= UInt8(1 << bit)
                    var file = Array(png[..<(idatStart + 8)]) + bad
                    file += crc32(type + bad).bigEndianBytes
                    file += png[(idatStart + 12 + stream.count)...]
                    #expect(throws: RenderError.self, "libpng takes a bad \(what) (byte \(at), bit \(bit))") { try PNGCodec.decode(file) }
                    #expect(throws: RenderError.self, "zlib takes a bad \(what) (byte \(at), bit \(bit))") {
                        try PNGCodec.inflateZlib(bad, expected: height * (1 + width * 4))
                    }
                }
            }
        }
    }

    /// Segments that do not make up the image are refused: too few or too many rows, the last
    /// segment not finished, a finished one before the last.
    @Test func mismatchedSegmentsAreRefused() throws {
        let px = [UInt8](repeating: 0x40, count: 8 * 6 * 4)
        func rows(_ a: Int, _ b: Int, last: Bool) -> PNGCodec.Segment {
            px.withUnsafeBufferPointer {
                PNGCodec.deflateSegment(premultiplied: UnsafeBufferPointer(rebasing: $0[(a * 32)..<(b * 32)]), width: 8, last: last, options: .tile)
            }
        }
        let good = [rows(0, 2, last: false), rows(2, 6, last: true)]
        #expect(try PNGCodec.decode(PNGCodec.encode(width: 8, height: 6, segments: good, options: .tile)).pixels == px)
        let bad = [[rows(0, 2, last: false), rows(2, 5, last: true)], [rows(0, 3, last: false), rows(2, 6, last: true)],
                   [rows(0, 2, last: false), rows(2, 6, last: false)], [rows(0, 2, last: true), rows(2, 6, last: true)], []]
        for segments in bad {
            #expect(throws: RenderError.self) { try PNGCodec.encode(width: 8, height: 6, segments: segments, options: .tile) }
        }
    }
}

extension UInt32 {
    /// The four bytes, most significant first (PNG and zlib order).
    var bigEndianBytes: [UInt8] { [UInt8(self >> 24), UInt8(self >> 16 & 0xFF), UInt8(self >> 8 & 0xFF), UInt8(self & 0xFF)] }
}

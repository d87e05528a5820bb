import MarkerdTestSupport
import MarkerdRender
import Testing
import Dispatch
import Synchronization

/// The shim's own PNG writer (`PNGDeflater.zlib`, `.libdeflate`; what tiles use) against
/// libpng's writer: the same header, well-formed chunks with correct CRCs, and the same pixels
/// after decoding. (The pixel conversion itself is checked in `PNGUnpremultiplyTests`.)
@Suite struct PNGDirectWriterTests {
    /// (type, data) of each chunk after the signature; fails the test on a bad length or CRC.
    static func chunks(_ png: [UInt8]) -> [(String, [UInt8])] {
        var out: [(String, [UInt8])] = []
        var p = 8
        while p + 12 <= png.count {
            let len = Int(png[p]) << 24 | Int(png[p + 1]) << 16 | Int(png[p + 2]) << 8 | Int(png[p + 3])
            guard p + 12 + len <= png.count else { Issue.record("chunk overruns the PNG"); return out }
            let typeAndData = Array(png[(p + 4)..<(p + 8 + len)])
            #expect(Array(png[(p + 8 + len)..<(p + 12 + len)]) == be32(crc32(typeAndData)))
            out.append((String(decoding: typeAndData[0..<4], as: UTF8.self), Array(typeAndData[4...])))
            p += 12 + len
        }
        #expect(p == png.count)
        return out
    }

    @Test func chunksAndPixelsMatchLibpngsWriter() throws {
        let seed = testSeed()
        print("PNGDirectWriterTests: SEED=\(seed) libdeflate loaded: \(PNGCodec.libdeflateAvailable)")
        var rng = SplitMix64(seed: seed)
        for round in 0..<12 {
            let width = Int.random(in: 1...300, using: &rng), height = Int.random(in: 1...64, using: &rng)
            var canvas = TileCanvas(width: width, height: height)
            for _ in 0..<Int.random(in: 0...20, using: &rng) {
                let sprite = randomImage(width: Int.random(in: 1...40, using: &rng), height: Int.random(in: 1...40, using: &rng), using: &rng)
                canvas.draw(sprite: sprite, atX: Int.random(in: -20...width, using: &rng), y: Int.random(in: -20...height, using: &rng))
            }
            let reference = PNGCodec.encode(canvas.image, options: PNGEncodeOptions(level: 2))
            let decoded = try PNGCodec.decode(reference, maxWidth: 4096, maxHeight: 4096, maxBytes: 1 << 26, premultiplied: true)
            for deflater in [PNGDeflater.zlib, .libdeflate, .adaptive] {
                let level = Int.random(in: 0...9, using: &rng)
                let png = PNGCodec.encode(canvas.image, options: PNGEncodeOptions(level: level, deflater: deflater))
                #expect(Array(png[0..<33]) == Array(reference[0..<33]), "round \(round) \(deflater): signature and IHDR")
                let types = Self.chunks(png).map(\.0)
                #expect(types == ["IHDR", "IDAT", "IEND"], "round \(round) \(deflater)")
                let back = try PNGCodec.decode(png, maxWidth: 4096, maxHeight: 4096, maxBytes: 1 << 26, premultiplied: true)
                #expect(back.pixels == decoded.pixels, "round \(round) \(deflater) level \(level) \(width)x\(height)")
            }
        }
    }

    /// Encodings running at the same time take separate scratch states from the pool: each
    /// output equals the one encoded alone.
    @Test func concurrentEncodingsMatchSerialOnes() {
        var rng = SplitMix64(seed: 11)
        let images = (0..<16).map { i in randomImage(width: 64 + 8 * i, height: 48, using: &rng) }
        let serial = images.map { PNGCodec.encode($0, options: .tile) }
        let out = Mutex([[UInt8]](repeating: [], count: images.count))
        DispatchQueue.concurrentPerform(iterations: images.count) { i in
            let png = PNGCodec.encode(images[i], options: .tile)
            out.withLock { $0[i] = png }
        }
        #expect(out.withLock { $0 } == serial)
    }

    /// Filters other than None go through libpng whatever the deflater says (the direct writer
    /// writes None only): the bytes equal libpng's.
    @Test func filtersFallBackToLibpng() {
        var rng = SplitMix64(seed: 7)
        let image = randomImage(width: 40, height: 30, using: &rng)
        let viaLibpng = PNGCodec.encode(image, options: PNGEncodeOptions(level: 6, filters: .adaptive))
        #expect(PNGCodec.encode(image, options: PNGEncodeOptions(level: 6, filters: .adaptive, deflater: .libdeflate)) == viaLibpng)
    }
}

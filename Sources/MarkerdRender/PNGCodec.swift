private import CPNG

/// PNG decoding over libpng and encoding over libdeflate (through the `CPNG` shim).
///
/// Images in memory are premultiplied RGBA8 (`RGBAImage`); PNG files hold straight alpha.
/// Decoding premultiplies with c' = round(c * a / 255); encoding un-premultiplies with
/// c = min(255, round(c' * 255 / a)). Both are exact integer computations, so for any valid
/// premultiplied image `decode(encode(image)) == image`.
public enum PNGCodec {
    /// Largest icon PNG accepted by RegisterIcon, in bytes (1 MiB).
    public static let maxIconBytes = 1 << 20
    /// Largest icon width and height accepted by RegisterIcon, in pixels.
    public static let maxIconDimension = 1024

    /// Width and height from the PNG header (signature + IHDR, the first 33 bytes), without
    /// decoding. Throws `.notPNG`, `.truncated` or `.corrupt`.
    public static func header(_ bytes: [UInt8]) throws(RenderError) -> (width: Int, height: Int) {
        var w: UInt32 = 0
        var h: UInt32 = 0
        var err = [CChar](repeating: 0, count: 256)
        let rc = bytes.withUnsafeBufferPointer { b in
            err.withUnsafeMutableBufferPointer { e in
                cpng_read_header(b.baseAddress, b.count, &w, &h, e.baseAddress, e.count)
            }
        }
        if rc != 0 { throw error(rc, err) }
        return (Int(w), Int(h))
    }

    /// Decodes a PNG of any colour type, bit depth and interlace to premultiplied RGBA8.
    /// 16-bit samples are scaled to 8 bits with rounding; gamma and colour-space chunks are
    /// ignored.
    ///
    /// - Parameters:
    ///   - maxWidth, maxHeight: largest accepted size in pixels (defaults: the icon limit, 1024).
    ///   - maxBytes: largest accepted input in bytes (default: the icon limit, 1 MiB).
    ///   - premultiplied: `true` (default) premultiplies; `false` returns the PNG's straight-alpha
    ///     samples as they are (an `RGBAImage` holding straight alpha, for checking an encoder).
    /// - Throws: `.tooLarge` ("PNG too large: 2048x2048 > 1024x1024" or
    ///   "PNG too large: N bytes > M bytes"), checked from the header before pixel memory is
    ///   allocated; `.notPNG` ("not a PNG"); `.truncated`; `.corrupt`; `.outOfMemory`.
    public static func decode(
        _ bytes: [UInt8],
        maxWidth: Int = maxIconDimension,
        maxHeight: Int = maxIconDimension,
        maxBytes: Int = maxIconBytes,
        premultiplied: Bool = true
    ) throws(RenderError) -> RGBAImage {
        precondition(maxWidth > 0 && maxHeight > 0 && maxBytes > 0, "limits must be positive")
        let maxW = UInt32(clamping: maxWidth)
        let maxH = UInt32(clamping: maxHeight)
        if bytes.count > maxBytes {
            throw RenderError(.tooLarge, "PNG too large: \(bytes.count) bytes > \(maxBytes) bytes")
        }
        let (width, height) = try header(bytes)
        if width > maxWidth || height > maxHeight {
            throw RenderError(.tooLarge, "PNG too large: \(width)x\(height) > \(maxW)x\(maxH)")
        }
        var err = [CChar](repeating: 0, count: 256)
        var rc: Int32 = 0
        let count = width * height * 4
        let pixels = [UInt8](unsafeUninitializedCapacity: count) { buf, initialized in
            var w: UInt32 = 0
            var h: UInt32 = 0
            rc = bytes.withUnsafeBufferPointer { b in
                err.withUnsafeMutableBufferPointer { e in
                    cpng_decode_rgba8(b.baseAddress, b.count, maxBytes, maxW, maxH,
                                      premultiplied ? Int32(CPNG_DECODE_PREMULTIPLY) : 0,
                                      buf.baseAddress, count, nil, &w, &h, e.baseAddress, e.count)
                }
            }
            initialized = rc == 0 ? count : 0
        }
        if rc != 0 { throw error(rc, err) }
        return RGBAImage(width: width, height: height, pixels: pixels)
    }

    /// Encodes a premultiplied image as an 8-bit RGBA PNG (straight alpha).
    /// Traps if the image is empty (0 pixels) or memory runs out.
    public static func encode(_ image: RGBAImage, options: PNGEncodeOptions = .default) -> [UInt8] {
        image.pixels.withUnsafeBufferPointer { px in
            encode(premultiplied: px, width: image.width, height: image.height, options: options)
        }
    }

    /// Shared by `encode(_:options:)` and `TileCanvas`.
    static func encode(premultiplied px: UnsafeBufferPointer<UInt8>, width: Int, height: Int,
                       options: PNGEncodeOptions) -> [UInt8] {
        precondition(width > 0 && height > 0 && width < (1 << 30) && height <= Int(Int32.max) && px.count == width * height * 4,
                     "cannot encode a \(width)x\(height) image")
        var out: UnsafeMutablePointer<UInt8>? = nil
        var len = 0
        var err = [CChar](repeating: 0, count: 256)
        let rc = err.withUnsafeMutableBufferPointer { e in
            cpng_encode_rgba8(px.baseAddress, UInt32(width), UInt32(height), width * 4, Int32(options.level),
                              Int32(CPNG_ENCODE_PREMULTIPLIED), &out, &len, e.baseAddress, e.count)
        }
        guard rc == 0, let out else {
            fatalError("PNG encoding failed: \(error(rc, err).message)")
        }
        defer { cpng_free(out) }
        return [UInt8](UnsafeBufferPointer(start: out, count: len))
    }

    /// A fully transparent `width` x `height` PNG in the most compact form (1-bit gray with a
    /// tRNS entry; decodes to RGBA (0, 0, 0, 0) everywhere). Traps on invalid sizes or when memory
    /// runs out.
    public static func encodeTransparent(width: Int, height: Int) -> [UInt8] {
        precondition(width > 0 && height > 0 && width <= Int(Int32.max) && height <= Int(Int32.max),
                     "cannot encode a \(width)x\(height) image")
        var out: UnsafeMutablePointer<UInt8>? = nil
        var len = 0
        var err = [CChar](repeating: 0, count: 256)
        let rc = err.withUnsafeMutableBufferPointer { e in
            cpng_encode_transparent(UInt32(width), UInt32(height), &out, &len, e.baseAddress, e.count)
        }
        guard rc == 0, let out else {
            fatalError("PNG encoding failed: \(error(rc, err).message)")
        }
        defer { cpng_free(out) }
        return [UInt8](UnsafeBufferPointer(start: out, count: len))
    }

    /// The typed error for a shim status `rc` and its message in `err`.
    static func error(_ rc: Int32, _ err: [CChar]) -> RenderError {
        let message = err.withUnsafeBufferPointer { String(cString: $0.baseAddress!) }
        let code: RenderError.Code
        switch rc {
        case Int32(CPNG_E_NOT_PNG): code = .notPNG
        case Int32(CPNG_E_INPUT_TOO_LARGE), Int32(CPNG_E_TOO_LARGE): code = .tooLarge
        case Int32(CPNG_E_TRUNCATED): code = .truncated
        case Int32(CPNG_E_NO_MEMORY): code = .outOfMemory
        case Int32(CPNG_E_INVALID_ARGUMENT): code = .invalidArgument
        default: code = .corrupt
        }
        return RenderError(code, message.isEmpty ? "PNG error \(rc)" : message)
    }
}

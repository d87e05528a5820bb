private import CCairo

/// The Cairo plumbing shared by pins, cluster bubbles and the debug overlay.
enum CairoCanvas {
    /// Sets the source colour from 0xAARRGGBB.
    static func setSource(_ cr: OpaquePointer, _ argb: UInt32) {
        cairo_set_source_rgba(cr, Double((argb >> 16) & 0xFF) / 255, Double((argb >> 8) & 0xFF) / 255,
                              Double(argb & 0xFF) / 255, Double(argb >> 24) / 255)
    }

    /// Draws with `draw` on a new A8 `width` x `height` surface (antialias gray) and returns its
    /// coverage (see `mask`). Throws `.drawingFailed` naming `what` if Cairo fails.
    static func drawMask(width: Int, height: Int, what: String, _ draw: (_ cr: OpaquePointer) -> Void) throws(RenderError) -> [UInt8] {
        try drawing(CAIRO_FORMAT_A8, width: width, height: height, what: what) { (surface, cr) throws(RenderError) in
            draw(cr)
            return try mask(surface, cr, width: width, height: height, what: what)
        }
    }

    /// Draws with `draw` on a new ARGB32 `width` x `height` surface (antialias gray) and returns
    /// its pixels (see `image`). Throws `.drawingFailed` naming `what` if Cairo fails.
    static func drawImage(width: Int, height: Int, what: String, _ draw: (_ cr: OpaquePointer) -> Void) throws(RenderError) -> RGBAImage {
        try drawing(CAIRO_FORMAT_ARGB32, width: width, height: height, what: what) { (surface, cr) throws(RenderError) in
            draw(cr)
            return try image(surface, cr, width: width, height: height, what: what)
        }
    }

    /// A new `format` surface and a context on it (antialias gray) for `body`, destroyed after.
    private static func drawing<T>(_ format: cairo_format_t, width: Int, height: Int, what: String,
                                   _ body: (OpaquePointer, OpaquePointer) throws(RenderError) -> T) throws(RenderError) -> T {
        guard let surface = cairo_image_surface_create(format, Int32(width), Int32(height)),
              cairo_surface_status(surface) == CAIRO_STATUS_SUCCESS
        else { throw RenderError(.drawingFailed, "cairo: cannot create a \(width)x\(height) surface for \(what)") }
        defer { cairo_surface_destroy(surface) }
        guard let cr = cairo_create(surface) else { throw RenderError(.drawingFailed, "cairo: cannot create a context for \(what)") }
        defer { cairo_destroy(cr) }
        cairo_set_antialias(cr, CAIRO_ANTIALIAS_GRAY)
        return try body(surface, cr)
    }

    /// Flushes `surface` and returns its pixel data; throws `.drawingFailed` naming `what` and
    /// Cairo's status if drawing failed.
    private static func flushed(_ surface: OpaquePointer, _ cr: OpaquePointer, what: String) throws(RenderError) -> UnsafeMutablePointer<UInt8> {
        cairo_surface_flush(surface)
        let status = cairo_status(cr)
        guard status == CAIRO_STATUS_SUCCESS, let data = cairo_image_surface_get_data(surface) else {
            let reason = cairo_status_to_string(status).map { String(cString: $0) } ?? "unknown"
            throw RenderError(.drawingFailed, "cairo: drawing \(what) failed: \(reason)")
        }
        return data
    }

    /// Flushes `surface` (A8, `width` x `height`) and returns its coverage bytes, rows without
    /// padding. Throws `.drawingFailed` naming `what` and Cairo's status if drawing failed.
    static func mask(_ surface: OpaquePointer, _ cr: OpaquePointer, width: Int, height: Int,
                     what: String) throws(RenderError) -> [UInt8] {
        let data = try flushed(surface, cr, what: what)
        let stride = Int(cairo_image_surface_get_stride(surface))
        return [UInt8](unsafeUninitializedCapacity: width * height) { out, count in
            for y in 0..<height { UnsafeMutableRawPointer(out.baseAddress! + y * width).copyMemory(from: data + y * stride, byteCount: width) }
            count = width * height
        }
    }

    /// Flushes `surface` (ARGB32, `width` x `height`) and returns its pixels as premultiplied RGBA8.
    /// Throws `.drawingFailed` naming `what` and Cairo's status if drawing failed.
    static func image(_ surface: OpaquePointer, _ cr: OpaquePointer, width: Int, height: Int,
                      what: String) throws(RenderError) -> RGBAImage {
        let data = try flushed(surface, cr, what: what)
        let stride = Int(cairo_image_surface_get_stride(surface))
        let raw = UnsafeRawPointer(data)
        // Cairo ARGB32: premultiplied, one native-endian 0xAARRGGBB word per pixel.
        let pixels = [UInt8](unsafeUninitializedCapacity: width * height * 4) { out, count in
            var i = 0
            for y in 0..<height {
                for x in 0..<width {
                    let v = raw.loadUnaligned(fromByteOffset: y * stride + x * 4, as: UInt32.self)
                    out[i] = UInt8(truncatingIfNeeded: v >> 16)
                    out[i + 1] = UInt8(truncatingIfNeeded: v >> 8)
                    out[i + 2] = UInt8(truncatingIfNeeded: v)
                    out[i + 3] = UInt8(truncatingIfNeeded: v >> 24)
                    i += 4
                }
            }
            count = i
        }
        return RGBAImage(width: width, height: height, pixels: pixels)
    }
}

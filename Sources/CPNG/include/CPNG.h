// PNG behind a C shim, seen only by MarkerdRender: decoding through libpng (which reports errors
// with longjmp, which Swift cannot call, so every entry point here sets up setjmp itself and
// returns a status), encoding through libdeflate.
//
// Conventions
// - Every function returns CPNG_OK (0) or a negative CPNG_E_* code. On failure a NUL-terminated
//   message is written to `err` (when `err` is not NULL and `err_cap` > 0) and no memory is leaked.
// - Pixels are RGBA8, 4 bytes per pixel, rows top to bottom, `width * 4` bytes per row.
// - Every call is independent and thread-safe. Encoding keeps per thread, for the thread's life,
//   a libdeflate compressor per level used and a scratch buffer of up to 1 MiB.
#ifndef CPNG_H
#define CPNG_H
#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum {
    CPNG_OK = 0,
    /// The bytes do not start with the 8-byte PNG signature followed by an IHDR chunk.
    CPNG_E_NOT_PNG = -1,
    /// The input is longer than `max_bytes`.
    CPNG_E_INPUT_TOO_LARGE = -2,
    /// The header's width or height exceeds the limits (found from IHDR, before any allocation).
    CPNG_E_TOO_LARGE = -3,
    /// The data ended before the image was complete.
    CPNG_E_TRUNCATED = -4,
    /// libpng rejected the data (bad CRC, bad zlib stream, invalid header fields, ...).
    CPNG_E_CORRUPT = -5,
    /// malloc/realloc failed.
    CPNG_E_NO_MEMORY = -6,
    /// An argument is invalid (NULL pointer, zero size, caller buffer too small, ...).
    CPNG_E_INVALID_ARGUMENT = -7,
};

/// Decode flags.
enum {
    /// Output premultiplied RGBA: c' = round(c * a / 255), computed exactly in integers.
    CPNG_DECODE_PREMULTIPLY = 1,
};

/// Encode flags.
enum {
    /// The input is premultiplied RGBA; it is un-premultiplied row by row before being written
    /// (PNG stores straight alpha): c = min(255, round(c' * 255 / a)), 0 when a == 0.
    /// For valid premultiplied input (every c' <= a) decoding with CPNG_DECODE_PREMULTIPLY gives
    /// back exactly the same bytes.
    CPNG_ENCODE_PREMULTIPLIED = 1,
};

/// Highest compression level of cpng_encode_rgba8 (libdeflate's 0...12).
#define CPNG_LEVEL_MAX 12

/// Length of a PNG signature plus a complete IHDR chunk: the bytes cpng_read_header needs.
#define CPNG_HEADER_BYTES 33

/// Reads width and height from the IHDR chunk, which must be the first chunk. Checks the
/// signature, the IHDR length and CRC, and that width and height are in 1...2^31-1.
/// Reads at most CPNG_HEADER_BYTES bytes; does not allocate.
/// Errors: CPNG_E_NOT_PNG (no signature), CPNG_E_TRUNCATED (shorter than the header),
/// CPNG_E_CORRUPT (bad IHDR length, CRC or size).
int cpng_read_header(const uint8_t *data, size_t len,
                     uint32_t *width, uint32_t *height,
                     char *err, size_t err_cap);

/// Decodes a whole PNG from memory to RGBA8: any colour type, bit depth and interlace
/// (palette, tRNS and gray are expanded, 16-bit samples are scaled to 8 bits with rounding,
/// missing alpha is 255). Gamma and colour-space chunks are ignored (samples are taken as-is).
///
/// Guards, checked in this order before any pixel memory is allocated:
///   len > max_bytes (when max_bytes > 0)              -> CPNG_E_INPUT_TOO_LARGE
///   signature / IHDR (see cpng_read_header)            -> CPNG_E_NOT_PNG / _TRUNCATED / _CORRUPT
///   width > max_width or height > max_height (if > 0)  -> CPNG_E_TOO_LARGE
/// `*width` and `*height` are set as soon as the header is read, also on the errors after it.
///
/// Output: when `out` is not NULL, pixels go there and `out_cap` must be at least
/// width * height * 4 (else CPNG_E_INVALID_ARGUMENT). When `out` is NULL, a buffer is malloc'd and
/// returned in `*out_alloc` (free it with cpng_free); on failure `*out_alloc` is NULL.
/// On failure the contents of `out` are unspecified.
int cpng_decode_rgba8(const uint8_t *data, size_t len,
                      size_t max_bytes, uint32_t max_width, uint32_t max_height,
                      int flags,
                      uint8_t *out, size_t out_cap, uint8_t **out_alloc,
                      uint32_t *width, uint32_t *height,
                      char *err, size_t err_cap);

/// Encodes RGBA8 pixels as a non-interlaced PNG in memory: indexed colour (8-bit indexes, PLTE and
/// tRNS in order of first appearance) when the image holds at most 256 distinct straight-alpha
/// colours, else 8-bit RGBA; every row with filter type None, one zlib stream from libdeflate in
/// one IDAT chunk. Decoders give back exactly the same straight-alpha pixels either way. The
/// bytes are a function of the pixels, `level` and `flags` alone (libdeflate is deterministic).
///   stride: bytes from one row to the next (>= width * 4).
///   level:  libdeflate compression level 0 (stored) ... CPNG_LEVEL_MAX (smallest, slowest).
///   flags:  CPNG_ENCODE_* bits.
/// On success `*out` (free with cpng_free) holds `*out_len` bytes. On failure `*out` is NULL:
/// CPNG_E_INVALID_ARGUMENT (NULL pointer, empty or too large image, short stride, bad level),
/// CPNG_E_NO_MEMORY.
int cpng_encode_rgba8(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride, int level, int flags,
                      uint8_t **out, size_t *out_len, char *err, size_t err_cap);

/// Encodes a fully transparent width x height image as compactly as PNG allows: 1-bit gray with a
/// tRNS entry making gray 0 transparent, level CPNG_LEVEL_MAX (about 100 bytes for 512 x 512,
/// against about 1 KiB as RGBA8). Decoders expand it to RGBA (0, 0, 0, 0). Output as
/// cpng_encode_rgba8.
int cpng_encode_transparent(uint32_t width, uint32_t height, uint8_t **out, size_t *out_len,
                            char *err, size_t err_cap);

/// Frees a buffer returned by this module (NULL is fine).
void cpng_free(void *p);

#ifdef __cplusplus
}
#endif
#endif

// libpng behind a C shim: libpng reports errors with longjmp, which Swift cannot call, so every
// entry point here sets up setjmp itself and returns a status. Seen only by MarkerdRender.
//
// Conventions
// - Every function returns CPNG_OK (0) or a negative CPNG_E_* code. On failure a NUL-terminated
//   message is written to `err` (when `err` is not NULL and `err_cap` > 0) and no memory is leaked.
// - Pixels are RGBA8, 4 bytes per pixel, rows top to bottom, `width * 4` bytes per row.
// - Nothing here keeps global state; every call is independent and thread-safe.
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

/// Filter-set bits for cpng_encode_rgba8 (the libpng PNG_FILTER_* values). 0 means "None only".
enum {
    CPNG_FILTER_NONE = 0x08,
    CPNG_FILTER_SUB = 0x10,
    CPNG_FILTER_UP = 0x20,
    CPNG_FILTER_AVG = 0x40,
    CPNG_FILTER_PAETH = 0x80,
    CPNG_FILTER_ALL = 0xF8,
};

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

/// Encodes RGBA8 pixels (8-bit RGBA, not interlaced) to a PNG in memory.
///   stride:    bytes from one row to the next (>= width * 4).
///   level:     zlib compression level 0...9 (-1: zlib's default, 6).
///   strategy:  zlib strategy (0 Z_DEFAULT_STRATEGY, 1 Z_FILTERED, 2 Z_HUFFMAN_ONLY, 3 Z_RLE,
///              4 Z_FIXED), or -1 for libpng's choice (Z_FILTERED when filtering, else default).
///   mem_level: zlib memory level 1...9 (deflateInit2's memLevel: hash table 2^(mem_level + 7)
///              entries, symbol buffer 2^(mem_level + 6)), or -1 for zlib's default, 8.
///   filters:   CPNG_FILTER_* bits, 0 for None only, or -1 for libpng's default (all filters,
///              adaptive).
///   flags:     CPNG_ENCODE_* bits.
/// With CPNG_ENCODE_PREMULTIPLIED, rows of zero bytes (fully transparent) are passed to libpng
/// as they are; other rows are converted into a scratch row first.
/// The output buffer starts at `size_hint` bytes (0: a guess) and grows by doubling; on success
/// `*out` (free with cpng_free) holds `*out_len` bytes. On failure `*out` is NULL.
int cpng_encode_rgba8(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride,
                      int level, int strategy, int mem_level, int filters, int flags, size_t size_hint,
                      uint8_t **out, size_t *out_len,
                      char *err, size_t err_cap);

/// An RGBA8 PNG being written row by row (cpng_writer_begin, cpng_writer_rows, cpng_writer_finish):
/// the same bytes as cpng_encode_rgba8 of all the rows at once, for callers that have the top of
/// an image before its bottom. One writer is used by one thread at a time.
typedef struct cpng_writer cpng_writer;

/// Starts a PNG; the parameters are cpng_encode_rgba8's. On success `*writer` (finish it with
/// cpng_writer_finish or drop it with cpng_writer_free) has written the header; on failure it is
/// NULL.
int cpng_writer_begin(uint32_t width, uint32_t height, int level, int strategy, int mem_level, int filters,
                      int flags, size_t size_hint, cpng_writer **writer, char *err, size_t err_cap);

/// Writes the next `rows` rows (`stride` bytes apart, >= width * 4). Writing more rows than the
/// image has left is CPNG_E_INVALID_ARGUMENT (nothing written). After any other failure the
/// writer only accepts cpng_writer_free / cpng_writer_finish (which then fails).
int cpng_writer_rows(cpng_writer *writer, const uint8_t *pixels, uint32_t rows, size_t stride,
                     char *err, size_t err_cap);

/// Ends the PNG (every row must have been written, else CPNG_E_INVALID_ARGUMENT) and frees the
/// writer, whatever the result. Output as cpng_encode_rgba8.
int cpng_writer_finish(cpng_writer *writer, uint8_t **out, size_t *out_len, char *err, size_t err_cap);

/// Frees a writer without finishing it (NULL is fine).
void cpng_writer_free(cpng_writer *writer);

/// One segment of a PNG's IDAT zlib stream, deflated on its own (cpng_deflate_segment): raw deflate
/// (no zlib header) of a run of whole filtered rows, ended with Z_SYNC_FLUSH (byte-aligned, so the
/// next segment's blocks can follow it) or, for the image's last segment, Z_FINISH. Segments of
/// consecutive rows, deflated on different threads, are joined into one PNG by cpng_encode_segments
/// (as pigz joins its blocks). Free `data` with cpng_segment_free.
typedef struct {
    /// `len` bytes of raw deflate (malloc'd).
    uint8_t *data;
    size_t len;
    /// Filtered bytes the segment holds: rows * (1 + width * 4).
    size_t raw_len;
    /// adler32 of those filtered bytes (starting from 1), for the stream's trailer.
    uint32_t adler;
    /// Rows the segment holds.
    uint32_t rows;
    /// 1 when ended with Z_FINISH (must be the last segment), 0 with Z_SYNC_FLUSH.
    int last;
} cpng_segment;

/// Deflates `rows` rows of an RGBA8 image `width` pixels wide (`stride` bytes apart) into `*seg`,
/// each row as PNG filter type 0 (None): the byte 0, then the row (un-premultiplied with
/// CPNG_ENCODE_PREMULTIPLIED in `flags`, rows of zero bytes as they are, as cpng_encode_rgba8).
/// `level`, `strategy` and `mem_level` are cpng_encode_rgba8's (strategy -1: Z_DEFAULT_STRATEGY,
/// libpng's choice without filters); window 32 KiB. `last`: end with Z_FINISH (the image's last
/// rows) instead of Z_SYNC_FLUSH. `rows` may be 0 (an empty block, a few bytes). The output starts
/// at `size_hint` bytes (0: a guess) and doubles as needed. On failure `*seg` is zeroed.
int cpng_deflate_segment(const uint8_t *pixels, uint32_t width, uint32_t rows, size_t stride,
                         int level, int strategy, int mem_level, int flags, int last, size_t size_hint,
                         cpng_segment *seg, char *err, size_t err_cap);

/// Writes the PNG whose IDAT stream is `count` segments of one `width` x `height` RGBA8 image,
/// top to bottom: libpng writes the signature and IHDR (as cpng_encode_rgba8 does), then one IDAT
/// chunk holding the 2-byte zlib header (32 KiB window, FLEVEL from the segments' `level` and
/// `strategy` as zlib sets it, valid FCHECK), the
/// segments back to back and the big-endian adler32 of all the filtered bytes (the segments'
/// adlers combined), then IEND; libpng computes the CRCs. The segments must hold `height` rows in
/// all, only the last one with `last` set (else CPNG_E_INVALID_ARGUMENT). The segments stay the
/// caller's. Output as cpng_encode_rgba8.
int cpng_encode_segments(uint32_t width, uint32_t height, int level, int strategy, const cpng_segment *segments, size_t count,
                         size_t size_hint, uint8_t **out, size_t *out_len, char *err, size_t err_cap);

/// Frees a segment's data and zeroes it (NULL is fine).
void cpng_segment_free(cpng_segment *seg);

/// adler32 (RFC 1950) of `len` bytes at `buf` continued from `adler` (1 to start), as zlib's
/// adler32() gives it; SSE2 16 bytes a step where the compiler targets it.
uint32_t cpng_adler32(uint32_t adler, const uint8_t *buf, size_t len);

/// Writes `rows` rows of an RGBA8 image `width` pixels wide (`stride` bytes apart) as PNG filter
/// type 0 (None) to `out` (at least rows * (1 + width * 4) bytes, `out_cap`): per row the byte 0,
/// then the row, un-premultiplied with CPNG_ENCODE_PREMULTIPLIED in `flags` (rows of zero bytes
/// as they are), as cpng_deflate_segment filters them; `*adler_out` gets the adler32 of all the
/// bytes written (starting from 1). For a deflater other than zlib's (`PixelDeflater`).
int cpng_filter_rows(const uint8_t *pixels, uint32_t width, uint32_t rows, size_t stride, int flags,
                     uint8_t *out, size_t out_cap, uint32_t *adler_out, char *err, size_t err_cap);

/// Makes `*seg` a segment of `rows` filtered rows of an image `width` pixels wide from `len`
/// bytes of raw deflate at `data` (copied; ended byte-aligned as a sync flush leaves it, or, with
/// `last`, by a final block) and the adler32 of the filtered bytes: a segment deflated by a
/// deflater other than zlib's, for cpng_encode_segments. On failure `*seg` is zeroed.
int cpng_segment_from(const uint8_t *data, size_t len, uint32_t width, uint32_t rows, uint32_t adler, int last,
                      cpng_segment *seg, char *err, size_t err_cap);

/// Inflates a zlib stream (header, deflate data, adler32 trailer) of exactly `expected` bytes
/// with zlib's `uncompress`, independently of libpng: for checking IDAT streams in tests.
/// CPNG_E_CORRUPT when zlib rejects the stream (bad header, data or adler32) or its length
/// differs; `out` must hold `expected` bytes.
int cpng_inflate_zlib(const uint8_t *data, size_t len, uint8_t *out, size_t expected,
                      char *err, size_t err_cap);

/// Encodes a fully transparent width x height image as compactly as PNG allows: 1-bit gray with a
/// tRNS entry making gray 0 transparent, zlib level 9 (about 100 bytes for 512 x 512, against
/// about 1 KiB as RGBA8). Decoders expand it to RGBA (0, 0, 0, 0). Output as cpng_encode_rgba8.
int cpng_encode_transparent(uint32_t width, uint32_t height, uint8_t **out, size_t *out_len,
                            char *err, size_t err_cap);

/// Frees a buffer returned by this module (NULL is fine).
void cpng_free(void *p);

#ifdef __cplusplus
}
#endif
#endif

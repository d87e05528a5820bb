// libpng shim. Every libpng call that can fail runs under a setjmp established in this file;
// libpng's error callback records the message and longjmps back here, and the public functions
// turn that into a negative status. Variables changed between setjmp and a possible longjmp
// are `volatile` (C11 7.13.2.1).
#include "CPNG.h"

#include <png.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>
#if defined(__SSE2__)
#include <emmintrin.h>
#endif

typedef struct {
    jmp_buf jmp;
    char *err;
    size_t err_cap;
    int truncated;  // the reader ran out of input
    int no_memory;  // an allocation in our callbacks failed
    // reading
    const uint8_t *data;
    size_t len;
    size_t pos;
    // writing
    uint8_t *out;
    size_t out_len;
    size_t out_cap;
} cpng_ctx;

static void cpng_set_err(char *err, size_t cap, const char *fmt, ...) {
    if (err == NULL || cap == 0) return;
    va_list ap;
    va_start(ap, fmt);
    vsnprintf(err, cap, fmt, ap);
    va_end(ap);
}

static int cpng_fail(char *err, size_t cap, int code, const char *fmt, ...) {
    if (err != NULL && cap > 0) {
        va_list ap;
        va_start(ap, fmt);
        vsnprintf(err, cap, fmt, ap);
        va_end(ap);
    }
    return code;
}

static void cpng_error_fn(png_structp png, png_const_charp msg) {
    cpng_ctx *ctx = (cpng_ctx *)png_get_error_ptr(png);
    cpng_set_err(ctx->err, ctx->err_cap, "%s", msg ? msg : "libpng error");
    longjmp(ctx->jmp, 1);
}

static void cpng_warning_fn(png_structp png, png_const_charp msg) {
    (void)png;
    (void)msg;
}

static void cpng_read_fn(png_structp png, png_bytep out, size_t n) {
    cpng_ctx *ctx = (cpng_ctx *)png_get_io_ptr(png);
    if (ctx->len - ctx->pos < n) {
        ctx->truncated = 1;
        png_error(png, "truncated PNG");
    }
    memcpy(out, ctx->data + ctx->pos, n);
    ctx->pos += n;
}

static void cpng_write_fn(png_structp png, png_bytep data, size_t n) {
    cpng_ctx *ctx = (cpng_ctx *)png_get_io_ptr(png);
    if (ctx->out_cap - ctx->out_len < n) {
        size_t cap = ctx->out_cap ? ctx->out_cap : 4096;
        while (cap - ctx->out_len < n) {
            if (cap > SIZE_MAX / 2) {
                ctx->no_memory = 1;
                png_error(png, "out of memory");
            }
            cap *= 2;
        }
        uint8_t *grown = (uint8_t *)realloc(ctx->out, cap);
        if (grown == NULL) {
            ctx->no_memory = 1;
            png_error(png, "out of memory");
        }
        ctx->out = grown;
        ctx->out_cap = cap;
    }
    memcpy(ctx->out + ctx->out_len, data, n);
    ctx->out_len += n;
}

static void cpng_flush_fn(png_structp png) { (void)png; }

// Exact round(x * y / 255) for x, y in 0...255.
static inline uint32_t cpng_mul255(uint32_t x, uint32_t y) {
    uint32_t t = x * y + 128;
    return (t + (t >> 8)) >> 8;
}

static const uint8_t cpng_signature[8] = {0x89, 'P', 'N', 'G', 0x0D, 0x0A, 0x1A, 0x0A};

static uint32_t cpng_be32(const uint8_t *p) {
    return ((uint32_t)p[0] << 24) | ((uint32_t)p[1] << 16) | ((uint32_t)p[2] << 8) | (uint32_t)p[3];
}

int cpng_read_header(const uint8_t *data, size_t len, uint32_t *width, uint32_t *height,
                     char *err, size_t err_cap) {
    if (len == 0) return cpng_fail(err, err_cap, CPNG_E_NOT_PNG, "not a PNG");
    if (data == NULL) return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "NULL data");
    size_t sig = len < 8 ? len : 8;
    if (memcmp(data, cpng_signature, sig) != 0)
        return cpng_fail(err, err_cap, CPNG_E_NOT_PNG, "not a PNG");
    if (len < CPNG_HEADER_BYTES)
        return cpng_fail(err, err_cap, CPNG_E_TRUNCATED, "truncated PNG: %zu bytes, header needs %d",
                         len, CPNG_HEADER_BYTES);
    if (cpng_be32(data + 8) != 13 || memcmp(data + 12, "IHDR", 4) != 0)
        return cpng_fail(err, err_cap, CPNG_E_CORRUPT, "corrupt PNG: first chunk is not a 13-byte IHDR");
    uint32_t crc = (uint32_t)crc32(0L, data + 12, 17);
    if (crc != cpng_be32(data + 29))
        return cpng_fail(err, err_cap, CPNG_E_CORRUPT, "corrupt PNG: IHDR CRC mismatch");
    uint32_t w = cpng_be32(data + 16), h = cpng_be32(data + 20);
    if (w == 0 || h == 0 || w > 0x7FFFFFFFu || h > 0x7FFFFFFFu)
        return cpng_fail(err, err_cap, CPNG_E_CORRUPT, "corrupt PNG: invalid size %ux%u", w, h);
    if (width) *width = w;
    if (height) *height = h;
    return CPNG_OK;
}

static void cpng_premultiply(uint8_t *px, size_t count) {
    for (size_t i = 0; i < count; i++, px += 4) {
        uint32_t a = px[3];
        if (a == 255) continue;
        if (a == 0) {
            px[0] = px[1] = px[2] = 0;
            continue;
        }
        px[0] = (uint8_t)cpng_mul255(px[0], a);
        px[1] = (uint8_t)cpng_mul255(px[1], a);
        px[2] = (uint8_t)cpng_mul255(px[2], a);
    }
}

int cpng_decode_rgba8(const uint8_t *data, size_t len, size_t max_bytes, uint32_t max_width,
                      uint32_t max_height, int flags, uint8_t *out, size_t out_cap,
                      uint8_t **out_alloc, uint32_t *width, uint32_t *height, char *err,
                      size_t err_cap) {
    if (out_alloc) *out_alloc = NULL;
    if ((data == NULL && len > 0) || (out == NULL && out_alloc == NULL))
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid argument");
    if (max_bytes > 0 && len > max_bytes)
        return cpng_fail(err, err_cap, CPNG_E_INPUT_TOO_LARGE, "PNG too large: %zu bytes > %zu bytes",
                         len, max_bytes);

    uint32_t w = 0, h = 0;
    int rc = cpng_read_header(data, len, &w, &h, err, err_cap);
    if (rc != CPNG_OK) return rc;
    if (width) *width = w;
    if (height) *height = h;
    if ((max_width > 0 && w > max_width) || (max_height > 0 && h > max_height))
        return cpng_fail(err, err_cap, CPNG_E_TOO_LARGE, "PNG too large: %ux%u > %ux%u", w, h,
                         max_width, max_height);
    if ((size_t)w > SIZE_MAX / 4 / (size_t)h)
        return cpng_fail(err, err_cap, CPNG_E_TOO_LARGE, "PNG too large: %ux%u", w, h);
    size_t row_bytes = (size_t)w * 4;
    size_t need = row_bytes * (size_t)h;
    if (out != NULL && out_cap < need)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT,
                         "output buffer too small: %zu bytes < %zu", out_cap, need);

    cpng_ctx ctx;
    memset(&ctx, 0, sizeof ctx);
    ctx.err = err;
    ctx.err_cap = err_cap;
    ctx.data = data;
    ctx.len = len;

    png_structp png = png_create_read_struct(PNG_LIBPNG_VER_STRING, &ctx, cpng_error_fn, cpng_warning_fn);
    if (png == NULL) return cpng_fail(err, err_cap, CPNG_E_NO_MEMORY, "out of memory");
    png_infop info = png_create_info_struct(png);
    if (info == NULL) {
        png_destroy_read_struct(&png, NULL, NULL);
        return cpng_fail(err, err_cap, CPNG_E_NO_MEMORY, "out of memory");
    }

    uint8_t *volatile pixels = NULL;
    png_bytep *volatile rows = NULL;

    if (setjmp(ctx.jmp)) {
        png_destroy_read_struct(&png, &info, NULL);
        free(rows);
        if (pixels != NULL && pixels != out) free(pixels);
        if (ctx.no_memory) return CPNG_E_NO_MEMORY;
        if (ctx.truncated) {
            cpng_set_err(err, err_cap, "truncated PNG");
            return CPNG_E_TRUNCATED;
        }
        // ctx.err already holds libpng's message; prefix it.
        if (err != NULL && err_cap > 0) {
            char msg[200];
            snprintf(msg, sizeof msg, "%s", err);
            cpng_set_err(err, err_cap, "corrupt PNG: %s", msg);
        }
        return CPNG_E_CORRUPT;
    }

    png_set_read_fn(png, &ctx, cpng_read_fn);
    // Second line of defence: libpng enforces the same limits itself.
    png_set_user_limits(png, max_width > 0 ? max_width : 0x7FFFFFFFu,
                        max_height > 0 ? max_height : 0x7FFFFFFFu);
    // Ancillary chunks are never larger than the input; compressed text cannot expand past 1 MiB.
    png_set_chunk_malloc_max(png, 1u << 20);
    // Skip the chunks we would only decompress to throw away.
    static const png_byte ignored[] = {
        'i', 'C', 'C', 'P', '\0', 'i', 'T', 'X', 't', '\0', 't', 'E', 'X', 't', '\0',
        'z', 'T', 'X', 't', '\0',
    };
    png_set_keep_unknown_chunks(png, PNG_HANDLE_CHUNK_NEVER, ignored, 4);

    png_read_info(png, info);
    int color_type = png_get_color_type(png, info);
    int bit_depth = png_get_bit_depth(png, info);
    int has_trns = png_get_valid(png, info, PNG_INFO_tRNS) != 0;

    if (color_type == PNG_COLOR_TYPE_PALETTE) png_set_palette_to_rgb(png);
    if (color_type == PNG_COLOR_TYPE_GRAY && bit_depth < 8) png_set_expand_gray_1_2_4_to_8(png);
    if (has_trns) png_set_tRNS_to_alpha(png);
    if (bit_depth == 16) png_set_scale_16(png);
    if (color_type == PNG_COLOR_TYPE_GRAY || color_type == PNG_COLOR_TYPE_GRAY_ALPHA)
        png_set_gray_to_rgb(png);
    if ((color_type & PNG_COLOR_MASK_ALPHA) == 0 && !has_trns)
        png_set_add_alpha(png, 0xFF, PNG_FILLER_AFTER);
    (void)png_set_interlace_handling(png);
    png_read_update_info(png, info);
    if (png_get_rowbytes(png, info) != row_bytes || png_get_bit_depth(png, info) != 8)
        png_error(png, "unexpected row layout after transformations");

    pixels = out != NULL ? out : (uint8_t *)malloc(need);
    if (pixels == NULL) {
        ctx.no_memory = 1;
        png_error(png, "out of memory");
    }
    rows = (png_bytep *)malloc(sizeof(png_bytep) * (size_t)h);
    if (rows == NULL) {
        ctx.no_memory = 1;
        png_error(png, "out of memory");
    }
    for (uint32_t y = 0; y < h; y++) rows[y] = pixels + (size_t)y * row_bytes;
    // libpng 1.6 reports a zlib error (a wrong adler32, data after the image) as an error while
    // it inflates a row, but as a benign error, a warning by default on read, when it finishes
    // the stream after the last row; which of the two a damaged file meets depends on where its
    // bits fall. From here on benign errors are errors, so the verdict does not. (The header
    // chunks above stay lenient: odd gAMA or cHRM values in an icon are not worth refusing it.)
    png_set_benign_errors(png, 0);
    png_read_image(png, rows);
    png_read_end(png, NULL);

    png_destroy_read_struct(&png, &info, NULL);
    free(rows);
    if (flags & CPNG_DECODE_PREMULTIPLY) cpng_premultiply(pixels, (size_t)w * h);
    if (out == NULL) *out_alloc = pixels;
    if (err != NULL && err_cap > 0) err[0] = '\0';
    return CPNG_OK;
}

// m = ceil(2^32 / a) for a in 1...255 (entry 0 unused). For n < 2^16, (n * m) >> 32 == n / a
// exactly: m = (2^32 + e) / a with e < a, so n * m / 2^32 exceeds n / a by n * e / (a * 2^32)
// < 2^-16, less than the 1 / a that separates n / a from the next integer. Checked for every
// (c', a) byte pair by PNGUnpremultiplyTests through the decoder.
static const uint64_t cpng_reciprocal[256] = {
    0x000000000u, 0x100000000u, 0x080000000u, 0x055555556u, 0x040000000u, 0x033333334u,
    0x02aaaaaabu, 0x024924925u, 0x020000000u, 0x01c71c71du, 0x01999999au, 0x01745d175u,
    0x015555556u, 0x013b13b14u, 0x012492493u, 0x011111112u, 0x010000000u, 0x00f0f0f10u,
    0x00e38e38fu, 0x00d79435fu, 0x00ccccccdu, 0x00c30c30du, 0x00ba2e8bbu, 0x00b21642du,
    0x00aaaaaabu, 0x00a3d70a4u, 0x009d89d8au, 0x0097b425fu, 0x00924924au, 0x008d3dcb1u,
    0x008888889u, 0x008421085u, 0x008000000u, 0x007c1f07du, 0x007878788u, 0x007507508u,
    0x0071c71c8u, 0x006eb3e46u, 0x006bca1b0u, 0x006906907u, 0x006666667u, 0x0063e7064u,
    0x006186187u, 0x005f417d1u, 0x005d1745eu, 0x005b05b06u, 0x00590b217u, 0x00572620bu,
    0x005555556u, 0x00539782au, 0x0051eb852u, 0x005050506u, 0x004ec4ec5u, 0x004d4873fu,
    0x004bda130u, 0x004a7904bu, 0x004924925u, 0x0047dc120u, 0x00469ee59u, 0x00456c798u,
    0x004444445u, 0x004325c54u, 0x004210843u, 0x004104105u, 0x004000000u, 0x003f03f04u,
    0x003e0f83fu, 0x003d22636u, 0x003c3c3c4u, 0x003b5cc0fu, 0x003a83a84u, 0x0039b0ad2u,
    0x0038e38e4u, 0x00381c0e1u, 0x003759f23u, 0x00369d037u, 0x0035e50d8u, 0x003531dedu,
    0x003483484u, 0x0033d91d3u, 0x003333334u, 0x003291620u, 0x0031f3832u, 0x003159722u,
    0x0030c30c4u, 0x003030304u, 0x002fa0be9u, 0x002f14991u, 0x002e8ba2fu, 0x002e05c0cu,
    0x002d82d83u, 0x002d02d03u, 0x002c8590cu, 0x002c0b02du, 0x002b93106u, 0x002b1da47u,
    0x002aaaaabu, 0x002a3a0feu, 0x0029cbc15u, 0x00295fad5u, 0x0028f5c29u, 0x00288df0du,
    0x002828283u, 0x0027c4598u, 0x002762763u, 0x002702703u, 0x0026a43a0u, 0x002647c6au,
    0x0025ed098u, 0x002593f6au, 0x00253c826u, 0x0024e6a18u, 0x002492493u, 0x00243f6f1u,
    0x0023ee090u, 0x00239e0d6u, 0x00234f72du, 0x002302303u, 0x0022b63ccu, 0x00226b903u,
    0x002222223u, 0x0021d9eaeu, 0x002192e2au, 0x00214d022u, 0x002108422u, 0x0020c49bbu,
    0x002082083u, 0x002040811u, 0x002000000u, 0x001fc07f1u, 0x001f81f82u, 0x001f4465au,
    0x001f07c20u, 0x001ecc07cu, 0x001e9131bu, 0x001e573adu, 0x001e1e1e2u, 0x001de5d6fu,
    0x001dae608u, 0x001d77b66u, 0x001d41d42u, 0x001d0cb59u, 0x001cd8569u, 0x001ca4b31u,
    0x001c71c72u, 0x001c3f8f1u, 0x001c0e071u, 0x001bdd2b9u, 0x001bacf92u, 0x001b7d6c4u,
    0x001b4e81cu, 0x001b20365u, 0x001af286cu, 0x001ac5702u, 0x001a98ef7u, 0x001a6d01bu,
    0x001a41a42u, 0x001a16d40u, 0x0019ec8eau, 0x0019c2d15u, 0x00199999au, 0x001970e50u,
    0x001948b10u, 0x001920fb5u, 0x0018f9c19u, 0x0018d3019u, 0x0018acb91u, 0x001886e60u,
    0x001861862u, 0x00183c978u, 0x001818182u, 0x0017f4060u, 0x0017d05f5u, 0x0017ad221u,
    0x00178a4c9u, 0x001767dcfu, 0x001745d18u, 0x001724288u, 0x001702e06u, 0x0016e1f77u,
    0x0016c16c2u, 0x0016a13ceu, 0x001681682u, 0x001661ec7u, 0x001642c86u, 0x001623fa8u,
    0x001605817u, 0x0015e75bcu, 0x0015c9883u, 0x0015ac057u, 0x00158ed24u, 0x001571ed4u,
    0x001555556u, 0x001539095u, 0x00151d07fu, 0x001501502u, 0x0014e5e0bu, 0x0014cab89u,
    0x0014afd6bu, 0x00149539fu, 0x00147ae15u, 0x001460cbdu, 0x001446f87u, 0x00142d663u,
    0x001414142u, 0x0013fb014u, 0x0013e22ccu, 0x0013c995bu, 0x0013b13b2u, 0x0013991c3u,
    0x001381382u, 0x0013698e0u, 0x0013521d0u, 0x00133ae46u, 0x001323e35u, 0x00130d191u,
    0x0012f684cu, 0x0012e025du, 0x0012c9fb5u, 0x0012b404bu, 0x00129e413u, 0x001288b02u,
    0x00127350cu, 0x00125e228u, 0x00124924au, 0x001234568u, 0x00121fb79u, 0x00120b471u,
    0x0011f7048u, 0x0011e2ef4u, 0x0011cf06bu, 0x0011bb4a5u, 0x0011a7b97u, 0x001194539u,
    0x001181182u, 0x00116e069u, 0x00115b1e6u, 0x0011485f1u, 0x001135c82u, 0x00112358fu,
    0x001111112u, 0x0010fef02u, 0x0010ecf57u, 0x0010db20bu, 0x0010c9715u, 0x0010b7e6fu,
    0x0010a6811u, 0x0010953f4u, 0x001084211u, 0x001073261u, 0x0010624deu, 0x001051980u,
    0x001041042u, 0x00103091cu, 0x001020409u, 0x001010102u,
};

// True when all `n` bytes at `p` are 0 (a fully transparent premultiplied row). Reads 8 bytes at
// a time and stops at the first 64-byte block holding a non-zero byte.
static int cpng_is_zero(const uint8_t *p, size_t n) {
    size_t i = 0;
    for (; i + 64 <= n; i += 64) {
        uint64_t w[8];
        memcpy(w, p + i, 64);
        if ((w[0] | w[1] | w[2] | w[3] | w[4] | w[5] | w[6] | w[7]) != 0) return 0;
    }
    for (; i < n; i++)
        if (p[i] != 0) return 0;
    return 1;
}

// One pixel, straight from premultiplied: c = min(255, round(c' * 255 / a)) = min(255,
// floor((c' * 255 + floor(a / 2)) / a)), all 0 when a == 0 (whatever c' is). The division is a
// multiplication by cpng_reciprocal[a].
static inline void cpng_unpremultiply_pixel(const uint8_t *src, uint8_t *dst) {
    uint32_t a = src[3];
    if (a == 255) {
        memcpy(dst, src, 4);
    } else if (a == 0) {
        memset(dst, 0, 4);
    } else {
        uint64_t m = cpng_reciprocal[a];
        uint32_t half = a >> 1;
        for (int c = 0; c < 3; c++) {
            uint32_t v = (uint32_t)((((uint64_t)src[c] * 255 + half) * m) >> 32);
            dst[c] = (uint8_t)(v > 255 ? 255 : v);
        }
        dst[3] = (uint8_t)a;
    }
}

// A row, straight from premultiplied. Four pixels at a time are zeroed when all 16 bytes are 0
// (transparent) and copied when all four alphas are 255 (opaque), the two common cases on tiles;
// other blocks and the tail go pixel by pixel.
static void cpng_unpremultiply_row(const uint8_t *src, uint8_t *dst, uint32_t width) {
    uint32_t x = 0;
    for (; x + 4 <= width; x += 4, src += 16, dst += 16) {
        uint64_t w[2];
        memcpy(w, src, 16);
        if ((w[0] | w[1]) == 0) {
            memset(dst, 0, 16);
        } else if ((src[3] & src[7] & src[11] & src[15]) == 255) {
            memcpy(dst, src, 16);
        } else {
            for (int i = 0; i < 16; i += 4) cpng_unpremultiply_pixel(src + i, dst + i);
        }
    }
    for (; x < width; x++, src += 4, dst += 4) cpng_unpremultiply_pixel(src, dst);
}

// Checks the zlib parameters shared by the writer and the segments.
static int cpng_check_zlib(int level, int strategy, int mem_level, char *err, size_t err_cap) {
    if (level < -1 || level > 9)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid zlib level %d", level);
    if (strategy < -1 || strategy > Z_FIXED)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid zlib strategy %d", strategy);
    if (mem_level != -1 && (mem_level < 1 || mem_level > MAX_MEM_LEVEL))
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid zlib memory level %d", mem_level);
    return CPNG_OK;
}

struct cpng_writer {
    cpng_ctx ctx;
    png_structp png;
    png_infop info;
    uint8_t *scratch;       // one un-premultiplied row (CPNG_ENCODE_PREMULTIPLIED only)
    uint32_t width;
    uint32_t height;
    uint32_t rows_written;
    int premultiplied;
};

// Frees everything the writer holds, the output buffer included.
static void cpng_writer_destroy(cpng_writer *w) {
    if (w == NULL) return;
    if (w->png != NULL) png_destroy_write_struct(&w->png, w->info ? &w->info : NULL);
    free(w->scratch);
    free(w->ctx.out);
    free(w);
}

// After a longjmp from libpng: the status for the error (message already in err), w destroyed.
static int cpng_writer_failed(cpng_writer *w, char *err, size_t err_cap) {
    int no_memory = w->ctx.no_memory;
    cpng_writer_destroy(w);
    if (no_memory) return cpng_fail(err, err_cap, CPNG_E_NO_MEMORY, "out of memory");
    return CPNG_E_CORRUPT;  // libpng rejected our parameters; message already in err
}

int cpng_writer_begin(uint32_t width, uint32_t height, int level, int strategy, int mem_level, int filters,
                      int flags, size_t size_hint, cpng_writer **writer, char *err, size_t err_cap) {
    if (writer) *writer = NULL;
    if (writer == NULL)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid argument: NULL pointer");
    if (width == 0 || height == 0 || width > 0x7FFFFFFFu || height > 0x7FFFFFFFu)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid size %ux%u", width, height);
    int zrc = cpng_check_zlib(level, strategy, mem_level, err, err_cap);
    if (zrc != CPNG_OK) return zrc;
    if (filters < -1 || filters > 0xFF || (filters > 0 && (filters & 0x07) != 0))
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid filter set 0x%x", filters);

    cpng_writer *w = (cpng_writer *)calloc(1, sizeof *w);
    if (w == NULL) return cpng_fail(err, err_cap, CPNG_E_NO_MEMORY, "out of memory");
    w->ctx.err = err;
    w->ctx.err_cap = err_cap;
    w->width = width;
    w->height = height;
    w->premultiplied = (flags & CPNG_ENCODE_PREMULTIPLIED) != 0;
    w->png = png_create_write_struct(PNG_LIBPNG_VER_STRING, &w->ctx, cpng_error_fn, cpng_warning_fn);
    if (w->png != NULL) w->info = png_create_info_struct(w->png);
    // The output buffer belongs to ctx, whose address libpng holds; after this point only the
    // write callback changes it.
    size_t initial = size_hint > 0 ? size_hint : 16384;
    w->ctx.out = (uint8_t *)malloc(initial);
    w->ctx.out_cap = initial;
    if (w->premultiplied) w->scratch = (uint8_t *)malloc((size_t)width * 4);
    if (w->png == NULL || w->info == NULL || w->ctx.out == NULL || (w->premultiplied && w->scratch == NULL)) {
        cpng_writer_destroy(w);
        return cpng_fail(err, err_cap, CPNG_E_NO_MEMORY, "out of memory");
    }

    if (setjmp(w->ctx.jmp)) return cpng_writer_failed(w, err, err_cap);
    png_set_write_fn(w->png, &w->ctx, cpng_write_fn, cpng_flush_fn);
    png_set_IHDR(w->png, w->info, width, height, 8, PNG_COLOR_TYPE_RGB_ALPHA, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    if (level >= 0) png_set_compression_level(w->png, level);
    if (strategy >= 0) png_set_compression_strategy(w->png, strategy);
    if (mem_level > 0) png_set_compression_mem_level(w->png, mem_level);
    // libpng 1.6 stores 0 (PNG_NO_FILTERS) as "unset" and then applies its default (all
    // filters, adaptive) in png_write_IHDR, so "None only" must be asked for explicitly.
    if (filters >= 0) png_set_filter(w->png, PNG_FILTER_TYPE_BASE, filters == 0 ? PNG_FILTER_NONE : filters);
    png_write_info(w->png, w->info);
    *writer = w;
    if (err != NULL && err_cap > 0) err[0] = '\0';
    return CPNG_OK;
}

int cpng_writer_rows(cpng_writer *w, const uint8_t *pixels, uint32_t rows, size_t stride,
                     char *err, size_t err_cap) {
    if (w == NULL || (pixels == NULL && rows > 0))
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid argument: NULL pointer");
    if (w->png == NULL)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "the writer failed earlier");
    if (stride / 4 < w->width)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "stride %zu < width * 4", stride);
    if (rows > w->height - w->rows_written)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "%u rows after %u of %u", rows,
                         w->rows_written, w->height);
    w->ctx.err = err;
    w->ctx.err_cap = err_cap;
    if (setjmp(w->ctx.jmp)) {
        // The writer is unusable now; keep the struct so that the caller's finish/free frees it.
        png_destroy_write_struct(&w->png, &w->info);
        w->png = NULL;
        w->info = NULL;
        return w->ctx.no_memory ? cpng_fail(err, err_cap, CPNG_E_NO_MEMORY, "out of memory") : CPNG_E_CORRUPT;
    }
    const size_t row_bytes = (size_t)w->width * 4;
    for (uint32_t y = 0; y < rows; y++) {
        const uint8_t *row = pixels + (size_t)y * stride;
        // A row of zero bytes (fully transparent) is its own straight-alpha form: written as is.
        if (w->premultiplied && !cpng_is_zero(row, row_bytes)) {
            cpng_unpremultiply_row(row, w->scratch, w->width);
            row = w->scratch;
        }
        png_write_row(w->png, row);
    }
    w->rows_written += rows;
    if (err != NULL && err_cap > 0) err[0] = '\0';
    return CPNG_OK;
}

int cpng_writer_finish(cpng_writer *w, uint8_t **out, size_t *out_len, char *err, size_t err_cap) {
    if (out) *out = NULL;
    if (out_len) *out_len = 0;
    if (w == NULL || out == NULL || out_len == NULL) {
        cpng_writer_destroy(w);
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid argument: NULL pointer");
    }
    if (w->png == NULL) {
        cpng_writer_destroy(w);
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "the writer failed earlier");
    }
    if (w->rows_written != w->height) {
        uint32_t written = w->rows_written, height = w->height;
        cpng_writer_destroy(w);
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "%u of %u rows written", written, height);
    }
    w->ctx.err = err;
    w->ctx.err_cap = err_cap;
    if (setjmp(w->ctx.jmp)) return cpng_writer_failed(w, err, err_cap);
    png_write_end(w->png, NULL);
    *out = w->ctx.out;
    *out_len = w->ctx.out_len;
    w->ctx.out = NULL;  // now the caller's
    cpng_writer_destroy(w);
    if (err != NULL && err_cap > 0) err[0] = '\0';
    return CPNG_OK;
}

void cpng_writer_free(cpng_writer *w) { cpng_writer_destroy(w); }

int cpng_encode_rgba8(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride,
                      int level, int strategy, int mem_level, int filters, int flags,
                      size_t size_hint, uint8_t **out, size_t *out_len, char *err, size_t err_cap) {
    if (out) *out = NULL;
    if (out_len) *out_len = 0;
    if (pixels == NULL || out == NULL || out_len == NULL)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid argument: NULL pointer");
    if (stride / 4 < width)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "stride %zu < width * 4", stride);
    cpng_writer *w = NULL;
    int rc = cpng_writer_begin(width, height, level, strategy, mem_level, filters, flags, size_hint, &w, err, err_cap);
    if (rc != CPNG_OK) return rc;
    rc = cpng_writer_rows(w, pixels, height, stride, err, err_cap);
    if (rc != CPNG_OK) {
        cpng_writer_free(w);
        return rc;
    }
    return cpng_writer_finish(w, out, out_len, err, err_cap);
}

// Output of a raw deflate stream, grown by doubling.
typedef struct {
    z_stream zs;
    uint8_t *buf;
    size_t cap;
} cpng_deflater;

// Deflates `n` bytes at `in` with `flush` until zlib has taken all of them (and, for Z_FINISH,
// ended the stream; for Z_SYNC_FLUSH, flushed with output space left over, which is when zlib
// says the flush is complete). CPNG_E_NO_MEMORY when the output cannot grow.
static int cpng_deflate_feed(cpng_deflater *d, const uint8_t *in, size_t n, int flush) {
    d->zs.next_in = (Bytef *)in;
    d->zs.avail_in = (uInt)n;
    for (;;) {
        if (d->zs.avail_out == 0) {
            size_t used = d->cap;
            if (d->cap > SIZE_MAX / 2 || d->cap * 2 - used > UINT32_MAX) return CPNG_E_NO_MEMORY;
            uint8_t *grown = (uint8_t *)realloc(d->buf, d->cap * 2);
            if (grown == NULL) return CPNG_E_NO_MEMORY;
            d->buf = grown;
            d->cap *= 2;
            d->zs.next_out = grown + used;
            d->zs.avail_out = (uInt)(d->cap - used);
        }
        int rc = deflate(&d->zs, flush);
        if (rc == Z_STREAM_ERROR) return CPNG_E_CORRUPT;
        if (flush == Z_FINISH) {
            if (rc == Z_STREAM_END) return CPNG_OK;
        } else if (d->zs.avail_in == 0 && d->zs.avail_out != 0) {
            return CPNG_OK;
        }
    }
}

// adler32 (RFC 1950) of `len` more bytes, as zlib's adler32() gives it. With SSE2 (every x86-64)
// 16 bytes a step: s1 gains the block's byte sum (_mm_sad_epu8), s2 gains 16 times the s1 before
// the block plus the bytes weighted 16 ... 1 (_mm_madd_epi16 of the bytes widened to 16 bits),
// summed in 32-bit lanes for at most 5,552 bytes (zlib's NMAX: no lane can overflow) and then
// reduced modulo 65521 in 64 bits; the last bytes go to zlib. zlib 1.2.13's own loop is scalar, 16 bytes unrolled: about 3.6
// instructions a byte, this one under 1 (a dense 256 px tile's PNG filters 262 KB of rows).
uint32_t cpng_adler32(uint32_t adler, const uint8_t *buf, size_t len) {
    uint64_t s1 = adler & 0xFFFF, s2 = adler >> 16;
#if defined(__SSE2__)
    const uint32_t base = 65521;
    const __m128i zero = _mm_setzero_si128();
    const __m128i first8 = _mm_setr_epi16(16, 15, 14, 13, 12, 11, 10, 9), last8 = _mm_setr_epi16(8, 7, 6, 5, 4, 3, 2, 1);
    while (len >= 16) {
        size_t blocks = (len < 5552 ? len : 5552) / 16;
        len -= blocks * 16;
        // sums: byte sums since the chunk's start; prefix: those sums before each block, added up.
        __m128i sums = zero, prefix = zero, weighted = zero;
        for (size_t k = 0; k < blocks; k++, buf += 16) {
            __m128i v = _mm_loadu_si128((const __m128i *)buf);
            prefix = _mm_add_epi32(prefix, sums);
            sums = _mm_add_epi32(sums, _mm_sad_epu8(v, zero));
            weighted = _mm_add_epi32(weighted, _mm_madd_epi16(_mm_unpacklo_epi8(v, zero), first8));
            weighted = _mm_add_epi32(weighted, _mm_madd_epi16(_mm_unpackhi_epi8(v, zero), last8));
        }
        uint32_t a[4], p[4], w[4];
        _mm_storeu_si128((__m128i *)a, sums);
        _mm_storeu_si128((__m128i *)p, prefix);
        _mm_storeu_si128((__m128i *)w, weighted);
        s2 += 16 * ((uint64_t)blocks * s1 + (uint64_t)p[0] + p[1] + p[2] + p[3]) + (uint64_t)w[0] + w[1] + w[2] + w[3];
        s1 += (uint64_t)a[0] + a[1] + a[2] + a[3];
        s1 %= base;
        s2 %= base;
    }
#endif
    // The rest (under 16 bytes with SSE2, else all of it): zlib's own loop.
    return (uint32_t)adler32_z((uLong)(s2 << 16 | s1), buf, (z_size_t)len);
}

// adler32 after `n` more zero bytes: the sum s1 stays, s2 grows by n * s1.
static uint32_t cpng_adler32_zeros(uint32_t adler, size_t n) {
    uint64_t s1 = adler & 0xFFFFu, s2 = adler >> 16;
    s2 = (s2 + (uint64_t)(n % 65521u) * s1) % 65521u;
    return (uint32_t)((s2 << 16) | s1);
}

// One row as PNG filter type None into `dst` (1 + width * 4 bytes: the byte 0, then the row,
// un-premultiplied when `premultiplied`; a row of zero bytes is its own straight-alpha form);
// returns `adler` updated with those bytes. `*dst_zero` says whether dst's row bytes are all 0
// already (then a transparent row is not written again) and is updated.
static uint32_t cpng_filter_row(const uint8_t *row, uint8_t *dst, uint32_t width, int premultiplied, int *dst_zero,
                                uint32_t adler) {
    const size_t row_bytes = (size_t)width * 4;
    dst[0] = 0;
    if (premultiplied && cpng_is_zero(row, row_bytes)) {
        if (!*dst_zero) memset(dst + 1, 0, row_bytes);
        *dst_zero = 1;
        return cpng_adler32_zeros(adler, 1 + row_bytes);
    }
    if (premultiplied) cpng_unpremultiply_row(row, dst + 1, width);
    else memcpy(dst + 1, row, row_bytes);
    *dst_zero = 0;
    return cpng_adler32(adler, dst, 1 + row_bytes);
}

// Checks a segment's or filter's arguments: a width libpng takes and, unless `stride` is 0, a
// stride of at least a row.
static int cpng_check_rows(uint32_t width, size_t stride, char *err, size_t err_cap) {
    if (width == 0 || width > 0x3FFFFFFEu)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid width %u", width);
    if (stride != 0 && stride / 4 < width)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "stride %zu < width * 4", stride);
    return CPNG_OK;
}

int cpng_deflate_segment(const uint8_t *pixels, uint32_t width, uint32_t rows, size_t stride,
                         int level, int strategy, int mem_level, int flags, int last, size_t size_hint,
                         cpng_segment *seg, char *err, size_t err_cap) {
    if (seg) memset(seg, 0, sizeof *seg);
    if (seg == NULL || (pixels == NULL && rows > 0))
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid argument: NULL pointer");
    int rc = cpng_check_rows(width, stride, err, err_cap);
    if (rc != CPNG_OK) return rc;
    rc = cpng_check_zlib(level, strategy, mem_level, err, err_cap);
    if (rc != CPNG_OK) return rc;

    const size_t row_bytes = (size_t)width * 4;
    const int premultiplied = (flags & CPNG_ENCODE_PREMULTIPLIED) != 0;
    cpng_deflater d;
    memset(&d, 0, sizeof d);
    d.cap = size_hint > 0 && size_hint < UINT32_MAX ? size_hint : 16384;
    d.buf = (uint8_t *)malloc(d.cap);
    uint8_t *scratch = (uint8_t *)calloc(1 + row_bytes, 1);  // filter byte 0, then the row
    if (d.buf == NULL || scratch == NULL) {
        free(d.buf);
        free(scratch);
        return cpng_fail(err, err_cap, CPNG_E_NO_MEMORY, "out of memory");
    }
    if (deflateInit2(&d.zs, level, Z_DEFLATED, -15, mem_level > 0 ? mem_level : 8,
                     strategy >= 0 ? strategy : Z_DEFAULT_STRATEGY) != Z_OK) {
        free(d.buf);
        free(scratch);
        return cpng_fail(err, err_cap, CPNG_E_NO_MEMORY, "out of memory (deflateInit2)");
    }
    d.zs.next_out = d.buf;
    d.zs.avail_out = (uInt)d.cap;

    uint32_t adler = 1;
    int scratch_zero = 1;  // scratch holds a row of zeros
    for (uint32_t y = 0; y < rows && rc == CPNG_OK; y++) {
        adler = cpng_filter_row(pixels + (size_t)y * stride, scratch, width, premultiplied, &scratch_zero, adler);
        rc = cpng_deflate_feed(&d, scratch, 1 + row_bytes, Z_NO_FLUSH);
    }
    if (rc == CPNG_OK) rc = cpng_deflate_feed(&d, NULL, 0, last ? Z_FINISH : Z_SYNC_FLUSH);
    size_t len = d.cap - d.zs.avail_out;
    deflateEnd(&d.zs);
    free(scratch);
    if (rc != CPNG_OK) {
        free(d.buf);
        return cpng_fail(err, err_cap, rc, rc == CPNG_E_NO_MEMORY ? "out of memory" : "deflate failed");
    }
    seg->data = d.buf;
    seg->len = len;
    seg->raw_len = (size_t)rows * (1 + row_bytes);
    seg->adler = adler;
    seg->rows = rows;
    seg->last = last ? 1 : 0;
    if (err != NULL && err_cap > 0) err[0] = '\0';
    return CPNG_OK;
}

void cpng_segment_free(cpng_segment *seg) {
    if (seg == NULL) return;
    free(seg->data);
    memset(seg, 0, sizeof *seg);
}

int cpng_filter_rows(const uint8_t *pixels, uint32_t width, uint32_t rows, size_t stride, int flags,
                     uint8_t *out, size_t out_cap, uint32_t *adler_out, char *err, size_t err_cap) {
    if (out == NULL || adler_out == NULL || (pixels == NULL && rows > 0))
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid argument: NULL pointer");
    int rc = cpng_check_rows(width, stride, err, err_cap);
    if (rc != CPNG_OK) return rc;
    const size_t row_bytes = (size_t)width * 4;
    if (out_cap / (1 + row_bytes) < rows)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "output of %zu bytes < %u filtered rows", out_cap, rows);
    const int premultiplied = (flags & CPNG_ENCODE_PREMULTIPLIED) != 0;
    uint32_t adler = 1;
    for (uint32_t y = 0; y < rows; y++) {
        int zero = 0;  // the output is not cleared
        adler = cpng_filter_row(pixels + (size_t)y * stride, out + (size_t)y * (1 + row_bytes), width, premultiplied, &zero, adler);
    }
    *adler_out = adler;
    if (err != NULL && err_cap > 0) err[0] = '\0';
    return CPNG_OK;
}

int cpng_segment_from(const uint8_t *data, size_t len, uint32_t width, uint32_t rows, uint32_t adler, int last,
                      cpng_segment *seg, char *err, size_t err_cap) {
    if (seg) memset(seg, 0, sizeof *seg);
    if (seg == NULL || (data == NULL && len > 0))
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid argument: NULL pointer");
    int rc = cpng_check_rows(width, 0, err, err_cap);
    if (rc != CPNG_OK) return rc;
    seg->data = (uint8_t *)malloc(len > 0 ? len : 1);
    if (seg->data == NULL) return cpng_fail(err, err_cap, CPNG_E_NO_MEMORY, "out of memory");
    if (len > 0) memcpy(seg->data, data, len);
    seg->len = len;
    seg->raw_len = (size_t)rows * (1 + (size_t)width * 4);
    seg->adler = adler;
    seg->rows = rows;
    seg->last = last ? 1 : 0;
    if (err != NULL && err_cap > 0) err[0] = '\0';
    return CPNG_OK;
}


// `*ctx` zeroed with `err` set, and a libpng write struct reporting to it (NULL: out of memory)
// with its info struct in `*info` (NULL when that failed; the caller checks). `ctx` must stay at
// its address while libpng uses it.
static png_structp cpng_create_write(cpng_ctx *ctx, png_infop *info, char *err, size_t err_cap) {
    memset(ctx, 0, sizeof *ctx);
    ctx->err = err;
    ctx->err_cap = err_cap;
    png_structp png = png_create_write_struct(PNG_LIBPNG_VER_STRING, ctx, cpng_error_fn, cpng_warning_fn);
    *info = png != NULL ? png_create_info_struct(png) : NULL;
    return png;
}
int cpng_encode_segments(uint32_t width, uint32_t height, int level, int strategy, const cpng_segment *segments,
                         size_t count, size_t size_hint, uint8_t **out, size_t *out_len, char *err, size_t err_cap) {
    if (out) *out = NULL;
    if (out_len) *out_len = 0;
    if (out == NULL || out_len == NULL || segments == NULL || count == 0)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid argument: NULL pointer or no segment");
    if (width == 0 || height == 0 || width > 0x3FFFFFFEu || height > 0x7FFFFFFFu)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid size %ux%u", width, height);
    int rc = cpng_check_zlib(level, strategy, -1, err, err_cap);
    if (rc != CPNG_OK) return rc;
    const size_t row_raw = 1 + (size_t)width * 4;
    uint64_t rows = 0, idat = 2 + 4;
    uint32_t adler = 1;
    for (size_t i = 0; i < count; i++) {
        const cpng_segment *s = &segments[i];
        if ((s->data == NULL && s->len > 0) || s->raw_len != (size_t)s->rows * row_raw || s->last != (i + 1 == count))
            return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT,
                             "segment %zu of %zu: inconsistent (rows %u, raw %zu, last %d)", i, count, s->rows,
                             s->raw_len, s->last);
        rows += s->rows;
        idat += s->len;
        adler = (uint32_t)adler32_combine(adler, s->adler, (z_off_t)s->raw_len);
    }
    if (rows != height)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "segments hold %llu of %u rows",
                         (unsigned long long)rows, height);
    if (idat > 0x7FFFFFFFu)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "IDAT of %llu bytes", (unsigned long long)idat);

    // zlib's header for these settings (deflate.c): CMF 0x78 (deflate, 32 KiB window), FLEVEL,
    // FCHECK making CMF * 256 + FLG a multiple of 31.
    int lvl = level < 0 ? 6 : level;
    int level_flags = (strategy >= Z_HUFFMAN_ONLY || lvl < 2) ? 0 : lvl < 6 ? 1 : lvl == 6 ? 2 : 3;
    unsigned header = (0x78u << 8) | ((unsigned)level_flags << 6);
    header += 31 - header % 31;
    const uint8_t head[2] = {(uint8_t)(header >> 8), (uint8_t)header};
    const uint8_t trailer[4] = {(uint8_t)(adler >> 24), (uint8_t)(adler >> 16), (uint8_t)(adler >> 8), (uint8_t)adler};

    cpng_ctx ctx;
    png_infop info = NULL;
    png_structp png = cpng_create_write(&ctx, &info, err, err_cap);
    if (png == NULL) return cpng_fail(err, err_cap, CPNG_E_NO_MEMORY, "out of memory");
    ctx.out_cap = size_hint > (size_t)idat + 64 ? size_hint : (size_t)idat + 64;  // + signature, IHDR, IEND
    ctx.out = (uint8_t *)malloc(ctx.out_cap);
    if (info == NULL || ctx.out == NULL) {
        png_destroy_write_struct(&png, info ? &info : NULL);
        free(ctx.out);
        return cpng_fail(err, err_cap, CPNG_E_NO_MEMORY, "out of memory");
    }
    if (setjmp(ctx.jmp)) {
        png_destroy_write_struct(&png, &info);
        free(ctx.out);
        if (ctx.no_memory) return cpng_fail(err, err_cap, CPNG_E_NO_MEMORY, "out of memory");
        return CPNG_E_CORRUPT;  // message already in err
    }
    png_set_write_fn(png, &ctx, cpng_write_fn, cpng_flush_fn);
    png_set_IHDR(png, info, width, height, 8, PNG_COLOR_TYPE_RGB_ALPHA, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_write_info(png, info);
    png_write_chunk_start(png, (png_const_bytep) "IDAT", (size_t)idat);
    png_write_chunk_data(png, head, 2);
    for (size_t i = 0; i < count; i++)
        if (segments[i].len > 0) png_write_chunk_data(png, segments[i].data, segments[i].len);
    png_write_chunk_data(png, trailer, 4);
    png_write_chunk_end(png);
    png_write_chunk(png, (png_const_bytep) "IEND", NULL, 0);
    png_destroy_write_struct(&png, &info);
    *out = ctx.out;
    *out_len = ctx.out_len;
    if (err != NULL && err_cap > 0) err[0] = '\0';
    return CPNG_OK;
}

int cpng_inflate_zlib(const uint8_t *data, size_t len, uint8_t *out, size_t expected, char *err, size_t err_cap) {
    if ((data == NULL && len > 0) || (out == NULL && expected > 0))
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid argument: NULL pointer");
    uLongf got = (uLongf)expected;
    int rc = uncompress(out, &got, data, (uLong)len);
    if (rc != Z_OK) return cpng_fail(err, err_cap, CPNG_E_CORRUPT, "zlib: %s (%d)", zError(rc), rc);
    if (got != expected)
        return cpng_fail(err, err_cap, CPNG_E_CORRUPT, "zlib: %lu bytes, expected %zu", (unsigned long)got, expected);
    if (err != NULL && err_cap > 0) err[0] = '\0';
    return CPNG_OK;
}

int cpng_encode_transparent(uint32_t width, uint32_t height, uint8_t **out, size_t *out_len,
                            char *err, size_t err_cap) {
    if (out) *out = NULL;
    if (out_len) *out_len = 0;
    if (out == NULL || out_len == NULL)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid argument: NULL pointer");
    if (width == 0 || height == 0 || width > 0x7FFFFFFFu || height > 0x7FFFFFFFu)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid size %ux%u", width, height);

    cpng_ctx ctx;
    png_infop info = NULL;
    png_structp png = cpng_create_write(&ctx, &info, err, err_cap);
    if (png == NULL) return cpng_fail(err, err_cap, CPNG_E_NO_MEMORY, "out of memory");
    size_t row_bytes = ((size_t)width + 7) / 8;
    uint8_t *row = (uint8_t *)calloc(row_bytes, 1);
    ctx.out = (uint8_t *)malloc(4096);
    ctx.out_cap = 4096;
    if (info == NULL || row == NULL || ctx.out == NULL) {
        png_destroy_write_struct(&png, info ? &info : NULL);
        free(row);
        free(ctx.out);
        return cpng_fail(err, err_cap, CPNG_E_NO_MEMORY, "out of memory");
    }

    if (setjmp(ctx.jmp)) {
        png_destroy_write_struct(&png, &info);
        free(row);
        free(ctx.out);
        if (ctx.no_memory) {
            cpng_set_err(err, err_cap, "out of memory");
            return CPNG_E_NO_MEMORY;
        }
        return CPNG_E_CORRUPT;
    }

    png_set_write_fn(png, &ctx, cpng_write_fn, cpng_flush_fn);
    png_set_IHDR(png, info, width, height, 1, PNG_COLOR_TYPE_GRAY, PNG_INTERLACE_NONE,
                 PNG_COMPRESSION_TYPE_DEFAULT, PNG_FILTER_TYPE_DEFAULT);
    png_color_16 transparent;
    memset(&transparent, 0, sizeof transparent);
    png_set_tRNS(png, info, NULL, 0, &transparent);
    png_set_compression_level(png, 9);
    png_set_filter(png, PNG_FILTER_TYPE_BASE, PNG_FILTER_NONE);
    png_write_info(png, info);
    for (uint32_t y = 0; y < height; y++) png_write_row(png, row);
    png_write_end(png, NULL);
    png_destroy_write_struct(&png, &info);
    free(row);

    *out = ctx.out;
    *out_len = ctx.out_len;
    if (err != NULL && err_cap > 0) err[0] = '\0';
    return CPNG_OK;
}

void cpng_free(void *p) { free(p); }

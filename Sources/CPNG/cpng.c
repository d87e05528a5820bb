// PNG shim. Decoding goes through libpng: every libpng call that can fail runs under a setjmp
// established in this file; libpng's error callback records the message and longjmps back here,
// and the public functions turn that into a negative status. Variables changed between setjmp
// and a possible longjmp are `volatile` (C11 7.13.2.1). Encoding writes the few chunks itself
// (signature, IHDR, tRNS, one IDAT, IEND) around one zlib stream from libdeflate.
#include "CPNG.h"

#include <libdeflate.h>
#include <png.h>
#include <pthread.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

typedef struct {
    jmp_buf jmp;
    char *err;
    size_t err_cap;
    int truncated;  // the reader ran out of input
    int no_memory;  // an allocation in our callbacks failed
    const uint8_t *data;
    size_t len;
    size_t pos;
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
    uint32_t crc = libdeflate_crc32(0, data + 12, 17);
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
// One thread's encoding state: a libdeflate compressor per level used (made on first use) and a
// scratch buffer for the filtered rows, kept for the thread's life (freed when it exits), so that
// a tile costs no allocation but its output.
typedef struct {
    struct libdeflate_compressor *compressors[CPNG_LEVEL_MAX + 1];
    uint8_t *scratch;
    size_t scratch_cap;
} cpng_thread_state;

// Filtered images up to this size (1 MiB: a 512 px tile) use the thread's scratch buffer; larger
// ones get a buffer of their own for the call, so that a big icon does not pin memory per thread.
#define CPNG_SCRATCH_MAX ((size_t)1 << 20)

static pthread_key_t cpng_state_key;
static pthread_once_t cpng_state_once = PTHREAD_ONCE_INIT;

static void cpng_state_free(void *p) {
    cpng_thread_state *s = (cpng_thread_state *)p;
    for (int i = 0; i <= CPNG_LEVEL_MAX; i++) libdeflate_free_compressor(s->compressors[i]);
    free(s->scratch);
    free(s);
}

static void cpng_state_key_make(void) { (void)pthread_key_create(&cpng_state_key, cpng_state_free); }

// This thread's state (NULL: out of memory).
static cpng_thread_state *cpng_state(void) {
    (void)pthread_once(&cpng_state_once, cpng_state_key_make);
    cpng_thread_state *s = (cpng_thread_state *)pthread_getspecific(cpng_state_key);
    if (s != NULL) return s;
    s = (cpng_thread_state *)calloc(1, sizeof *s);
    if (s == NULL) return NULL;
    if (pthread_setspecific(cpng_state_key, s) != 0) {
        free(s);
        return NULL;
    }
    return s;
}

static void cpng_put_be32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24);
    p[1] = (uint8_t)(v >> 16);
    p[2] = (uint8_t)(v >> 8);
    p[3] = (uint8_t)v;
}

// Writes a chunk whose `len` data bytes are already at p + 8 (length, type, CRC around them);
// returns the bytes after it.
static uint8_t *cpng_chunk(uint8_t *p, const char type[4], uint32_t len) {
    cpng_put_be32(p, len);
    memcpy(p + 4, type, 4);
    cpng_put_be32(p + 8 + len, libdeflate_crc32(0, p + 4, 4 + (size_t)len));
    return p + 12 + len;
}

// The PNG of `filtered` (the image's rows, each its filter byte then its samples): signature,
// IHDR (`bit_depth`, `color_type`, no interlace), a PLTE chunk of `plte_len` bytes when
// `plte_len` > 0, a tRNS chunk of `trns_len` bytes when `trns_len` > 0, one IDAT chunk holding the
// zlib stream libdeflate makes (`compressor`), IEND. Output as cpng_encode_rgba8.
static int cpng_write_png(struct libdeflate_compressor *compressor, uint32_t width, uint32_t height, uint8_t bit_depth,
                          uint8_t color_type, const uint8_t *plte, size_t plte_len, const uint8_t *trns, size_t trns_len,
                          const uint8_t *filtered, size_t filtered_len, uint8_t **out, size_t *out_len, char *err,
                          size_t err_cap) {
    size_t bound = libdeflate_zlib_compress_bound(compressor, filtered_len);
    if (bound > 0x7FFFFFFFu)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "image too large for one IDAT chunk");
    size_t cap = 8 + 25 + 12 + plte_len + 12 + trns_len + 12 + bound + 12;
    uint8_t *png = (uint8_t *)malloc(cap);
    if (png == NULL) return cpng_fail(err, err_cap, CPNG_E_NO_MEMORY, "out of memory");
    memcpy(png, cpng_signature, 8);
    uint8_t *p = png + 8;
    cpng_put_be32(p + 8, width);
    cpng_put_be32(p + 12, height);
    p[16] = bit_depth;
    p[17] = color_type;
    p[18] = p[19] = p[20] = 0;  // deflate, adaptive filtering (method 0), no interlace
    p = cpng_chunk(p, "IHDR", 13);
    if (plte_len > 0) {
        memcpy(p + 8, plte, plte_len);
        p = cpng_chunk(p, "PLTE", (uint32_t)plte_len);
    }
    if (trns_len > 0) {
        memcpy(p + 8, trns, trns_len);
        p = cpng_chunk(p, "tRNS", (uint32_t)trns_len);
    }
    size_t deflated = libdeflate_zlib_compress(compressor, filtered, filtered_len, p + 8, bound);
    if (deflated == 0) {  // cannot happen with the bound's room
        free(png);
        return cpng_fail(err, err_cap, CPNG_E_NO_MEMORY, "libdeflate: output does not fit its bound");
    }
    p = cpng_chunk(p, "IDAT", (uint32_t)deflated);
    p = cpng_chunk(p, "IEND", 0);
    *out = png;
    *out_len = (size_t)(p - png);
    if (err != NULL && err_cap > 0) err[0] = '\0';
    return CPNG_OK;
}

// The thread's compressor for `level` (made on first use) and a buffer of `len` bytes (the
// thread's scratch, or malloc'd into `*owned` above CPNG_SCRATCH_MAX); NULL when out of memory.
static struct libdeflate_compressor *cpng_prepare(int level, size_t len, uint8_t **buffer, uint8_t **owned) {
    *owned = NULL;
    cpng_thread_state *s = cpng_state();
    if (s == NULL) return NULL;
    if (s->compressors[level] == NULL) s->compressors[level] = libdeflate_alloc_compressor(level);
    if (s->compressors[level] == NULL) return NULL;
    if (len > CPNG_SCRATCH_MAX) {
        *owned = *buffer = (uint8_t *)malloc(len);
        return *buffer ? s->compressors[level] : NULL;
    }
    if (s->scratch_cap < len) {
        free(s->scratch);
        s->scratch_cap = 0;
        s->scratch = (uint8_t *)malloc(len);
        if (s->scratch == NULL) return NULL;
        s->scratch_cap = len;
    }
    *buffer = s->scratch;
    return s->compressors[level];
}

// Up to 256 straight-alpha RGBA colours (each the 4 bytes R, G, B, A read as one word), in order of
// first appearance, with an open-addressing table from colour to index.
typedef struct {
    uint32_t colours[256];
    int count;
    uint32_t keys[1024];
    int16_t slots[1024];  // index into `colours`, -1: empty
} cpng_palette;

// The index of `c`, added when new; -1 when the palette is full.
static inline int cpng_palette_index(cpng_palette *p, uint32_t c) {
    uint32_t h = (c * 2654435761u) >> 22;
    for (;;) {
        int16_t i = p->slots[h];
        if (i < 0) {
            if (p->count == 256) return -1;
            p->slots[h] = (int16_t)p->count;
            p->keys[h] = c;
            p->colours[p->count] = c;
            return p->count++;
        }
        if (p->keys[h] == c) return i;
        h = (h + 1) & 1023;
    }
}

// Writes the image as indexed rows (filter byte 0, then one palette index per pixel) to
// `filtered` and its colours to `*p` when it holds at most 256 distinct straight-alpha colours
// (returns 1); else returns 0, with `filtered` partly written. Fully transparent blocks of four
// pixels take one lookup; a pixel equal to the one before it takes none.
static int cpng_index_rows(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride, int premultiplied,
                           uint8_t *filtered, cpng_palette *p) {
    p->count = 0;
    memset(p->slots, 0xFF, sizeof p->slots);
    int zero = -1;  // index of (0, 0, 0, 0) once seen
    uint32_t last = 0;
    int last_index = -1;
    for (uint32_t y = 0; y < height; y++) {
        const uint8_t *src = pixels + (size_t)y * stride;
        uint8_t *dst = filtered + (size_t)y * (1 + (size_t)width);
        *dst++ = 0;  // filter type None
        uint32_t x = 0;
        while (x < width) {
            if (x + 4 <= width) {
                uint64_t w[2];
                memcpy(w, src, 16);
                if ((w[0] | w[1]) == 0) {
                    if (zero < 0 && (zero = cpng_palette_index(p, 0)) < 0) return 0;
                    memset(dst, zero, 4);
                    x += 4, src += 16, dst += 4;
                    continue;
                }
            }
            uint32_t c;
            memcpy(&c, src, 4);
            if (c != last || last_index < 0) {
                uint8_t s[4];
                if (premultiplied) cpng_unpremultiply_pixel(src, s);
                else memcpy(s, src, 4);
                uint32_t straight;
                memcpy(&straight, s, 4);
                last = c;
                if ((last_index = cpng_palette_index(p, straight)) < 0) return 0;
            }
            *dst++ = (uint8_t)last_index;
            x++, src += 4;
        }
    }
    return 1;
}

int cpng_encode_rgba8(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride, int level, int flags,
                      uint8_t **out, size_t *out_len, char *err, size_t err_cap) {
    if (out) *out = NULL;
    if (out_len) *out_len = 0;
    if (pixels == NULL || out == NULL || out_len == NULL)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid argument: NULL pointer");
    if (width == 0 || height == 0 || width > 0x3FFFFFFEu || height > 0x7FFFFFFFu)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid size %ux%u", width, height);
    if (stride / 4 < width)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "stride %zu < width * 4", stride);
    if (level < 0 || level > CPNG_LEVEL_MAX)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid compression level %d", level);
    const size_t row_bytes = (size_t)width * 4, filtered_row = 1 + row_bytes;
    if ((size_t)height > SIZE_MAX / filtered_row)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid size %ux%u", width, height);
    uint8_t *filtered, *owned;
    struct libdeflate_compressor *compressor = cpng_prepare(level, (size_t)height * filtered_row, &filtered, &owned);
    if (compressor == NULL) return cpng_fail(err, err_cap, CPNG_E_NO_MEMORY, "out of memory");
    const int premultiplied = (flags & CPNG_ENCODE_PREMULTIPLIED) != 0;
    cpng_palette palette;
    if (cpng_index_rows(pixels, width, height, stride, premultiplied, filtered, &palette)) {
        uint8_t plte[3 * 256], trns[256];
        for (int i = 0; i < palette.count; i++) {
            uint8_t rgba[4];
            memcpy(rgba, &palette.colours[i], 4);
            memcpy(plte + 3 * i, rgba, 3);
            trns[i] = rgba[3];
        }
        int rc = cpng_write_png(compressor, width, height, 8, 3, plte, 3 * (size_t)palette.count, trns, (size_t)palette.count,
                                filtered, (size_t)height * (1 + (size_t)width), out, out_len, err, err_cap);
        free(owned);
        return rc;
    }
    for (uint32_t y = 0; y < height; y++) {
        const uint8_t *row = pixels + (size_t)y * stride;
        uint8_t *dst = filtered + (size_t)y * filtered_row;
        dst[0] = 0;  // filter type None
        if (premultiplied) cpng_unpremultiply_row(row, dst + 1, width);
        else memcpy(dst + 1, row, row_bytes);
    }
    int rc = cpng_write_png(compressor, width, height, 8, 6, NULL, 0, NULL, 0, filtered, (size_t)height * filtered_row,
                            out, out_len, err, err_cap);
    free(owned);
    return rc;
}

int cpng_encode_transparent(uint32_t width, uint32_t height, uint8_t **out, size_t *out_len,
                            char *err, size_t err_cap) {
    if (out) *out = NULL;
    if (out_len) *out_len = 0;
    if (out == NULL || out_len == NULL)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid argument: NULL pointer");
    if (width == 0 || height == 0 || width > 0x7FFFFFFFu || height > 0x7FFFFFFFu)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid size %ux%u", width, height);
    // Each row: filter type None, then width bits of gray 0.
    const size_t filtered_row = 1 + ((size_t)width + 7) / 8;
    if ((size_t)height > SIZE_MAX / filtered_row)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid size %ux%u", width, height);
    uint8_t *filtered, *owned;
    struct libdeflate_compressor *compressor = cpng_prepare(CPNG_LEVEL_MAX, (size_t)height * filtered_row, &filtered, &owned);
    if (compressor == NULL) return cpng_fail(err, err_cap, CPNG_E_NO_MEMORY, "out of memory");
    memset(filtered, 0, (size_t)height * filtered_row);
    static const uint8_t gray0[2] = {0, 0};
    int rc = cpng_write_png(compressor, width, height, 1, 0, NULL, 0, gray0, 2, filtered, (size_t)height * filtered_row,
                            out, out_len, err, err_cap);
    free(owned);
    return rc;
}

void cpng_free(void *p) { free(p); }

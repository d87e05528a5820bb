// Direct PNG writer for 8-bit RGBA without row filters: the rows (filter byte 0 and the pixels,
// unpremultiplied when asked) are laid out in one buffer and deflated in one call, by libdeflate
// when the shared library libdeflate.so.0 can be loaded at run time (about 40 % less CPU than
// zlib's level 1-2 on marker tiles, for the same or fewer bytes), else by zlib; the chunks
// (IHDR, one IDAT, IEND) are written here. No libpng involved, so no setjmp either.
#include "CPNG.h"
#include "cpng_internal.h"

#include <dlfcn.h>
#include <pthread.h>
#include <stdlib.h>
#include <string.h>
#include <zlib.h>

// libdeflate's API (libdeflate.h, stable since 1.0), declared here so that building needs no
// libdeflate headers; the library is looked up once with dlopen.
struct libdeflate_compressor;
typedef struct libdeflate_compressor *(*cpng_ld_alloc_fn)(int);
typedef size_t (*cpng_ld_compress_fn)(struct libdeflate_compressor *, const void *, size_t, void *, size_t);
typedef size_t (*cpng_ld_bound_fn)(struct libdeflate_compressor *, size_t);
typedef void (*cpng_ld_free_fn)(struct libdeflate_compressor *);
typedef uint32_t (*cpng_ld_crc32_fn)(uint32_t, const void *, size_t);

static struct {
    cpng_ld_alloc_fn alloc;
    cpng_ld_compress_fn compress;
    cpng_ld_bound_fn bound;
    cpng_ld_free_fn free;
    cpng_ld_crc32_fn crc32;
} cpng_ld;
static int cpng_ld_loaded;
static pthread_once_t cpng_ld_once = PTHREAD_ONCE_INIT;

// Scratch state of one encoding: the rows' buffer and libdeflate compressors by level (0...12),
// reused across encodings through a LIFO pool that hands out the state used last. (Per thread,
// as first written, z18 GetTile cost more markerd CPU in two of three benchmark pairs though not
// in process: markerd renders on Dispatch's worker threads, which take turns, presumably finding
// their own buffer cold in cache; not profiled.)
typedef struct cpng_scratch {
    struct cpng_scratch *next;
    uint8_t *raw;
    size_t raw_cap;
    struct libdeflate_compressor *compressors[13];
} cpng_scratch;

static pthread_mutex_t cpng_pool_lock = PTHREAD_MUTEX_INITIALIZER;
static cpng_scratch *cpng_pool;
static int cpng_pool_size;
/// States kept in the pool at most (one per encoding running at the same time, usually 1-2).
#define CPNG_POOL_MAX 8

static void cpng_scratch_free(cpng_scratch *t) {
    for (int i = 0; i < 13; i++)
        if (t->compressors[i] != NULL) cpng_ld.free(t->compressors[i]);
    free(t->raw);
    free(t);
}

static cpng_scratch *cpng_scratch_take(void) {
    pthread_mutex_lock(&cpng_pool_lock);
    cpng_scratch *t = cpng_pool;
    if (t != NULL) {
        cpng_pool = t->next;
        cpng_pool_size--;
    }
    pthread_mutex_unlock(&cpng_pool_lock);
    return t != NULL ? t : (cpng_scratch *)calloc(1, sizeof *t);
}

static void cpng_scratch_give(cpng_scratch *t) {
    pthread_mutex_lock(&cpng_pool_lock);
    if (cpng_pool_size < CPNG_POOL_MAX) {
        t->next = cpng_pool;
        cpng_pool = t;
        cpng_pool_size++;
        t = NULL;
    }
    pthread_mutex_unlock(&cpng_pool_lock);
    if (t != NULL) cpng_scratch_free(t);
}

static void cpng_ld_load(void) {
    if (getenv("CPNG_NO_LIBDEFLATE") != NULL) return;
    void *h = dlopen("libdeflate.so.0", RTLD_NOW | RTLD_LOCAL);
    if (h == NULL) return;
    cpng_ld.alloc = (cpng_ld_alloc_fn)dlsym(h, "libdeflate_alloc_compressor");
    cpng_ld.compress = (cpng_ld_compress_fn)dlsym(h, "libdeflate_zlib_compress");
    cpng_ld.bound = (cpng_ld_bound_fn)dlsym(h, "libdeflate_zlib_compress_bound");
    cpng_ld.free = (cpng_ld_free_fn)dlsym(h, "libdeflate_free_compressor");
    cpng_ld.crc32 = (cpng_ld_crc32_fn)dlsym(h, "libdeflate_crc32");
    cpng_ld_loaded = cpng_ld.alloc && cpng_ld.compress && cpng_ld.bound && cpng_ld.free && cpng_ld.crc32;
}

int cpng_libdeflate_available(void) {
    pthread_once(&cpng_ld_once, cpng_ld_load);
    return cpng_ld_loaded;
}

static void cpng_put32(uint8_t *p, uint32_t v) {
    p[0] = (uint8_t)(v >> 24); p[1] = (uint8_t)(v >> 16); p[2] = (uint8_t)(v >> 8); p[3] = (uint8_t)v;
}

static uint32_t cpng_crc(int use_ld, const uint8_t *p, size_t n) {
    if (use_ld) return cpng_ld.crc32(0, p, n);
    uint32_t c = (uint32_t)crc32(0L, Z_NULL, 0);
    while (n > 0) {
        uInt step = n > 0x40000000u ? 0x40000000u : (uInt)n;
        c = (uint32_t)crc32(c, p, step);
        p += step; n -= step;
    }
    return c;
}

// Chunk at `p`: length and type already written, `len` data bytes after them; writes the CRC.
static void cpng_finish_chunk(int use_ld, uint8_t *p, size_t len) {
    cpng_put32(p + 8 + len, cpng_crc(use_ld, p + 4, len + 4));
}

// Non-zero 16-byte blocks of a row (single pixels at the tail), as cpng_unpremultiply_row counts.
static uint32_t cpng_count_nonzero(const uint8_t *p, uint32_t width) {
    uint32_t x = 0, n = 0;
    for (; x + 4 <= width; x += 4, p += 16) {
        uint64_t w[2];
        memcpy(w, p, 16);
        n += (w[0] | w[1]) != 0;
    }
    for (; x < width; x++, p += 4) n += (p[0] | p[1] | p[2] | p[3]) != 0;
    return n;
}

static int cpng_encode_with(cpng_scratch *t, const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride,
                            int use_ld, int engine, int level, int sparse_level, int strategy, int mem_level, int flags,
                            uint8_t **out, size_t *out_len, char *err, size_t err_cap);

int cpng_encode_rgba8_direct(const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride,
                             int engine, int level, int sparse_level, int strategy, int mem_level, int flags,
                             uint8_t **out, size_t *out_len, char *err, size_t err_cap) {
    if (out) *out = NULL;
    if (out_len) *out_len = 0;
    if (pixels == NULL || out == NULL || out_len == NULL)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid argument: NULL pointer");
    if (width == 0 || height == 0 || width > 0x7FFFFFFFu || height > 0x7FFFFFFFu)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid size %ux%u", width, height);
    if (stride / 4 < width)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "stride %zu < width * 4", stride);
    if (engine != CPNG_DEFLATE_ZLIB && engine != CPNG_DEFLATE_LIBDEFLATE && engine != CPNG_DEFLATE_ADAPTIVE)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid deflate engine %d", engine);
    int use_ld = engine != CPNG_DEFLATE_ZLIB && cpng_libdeflate_available();
    if (use_ld ? (level < 0 || level > 12) : (level < -1 || level > 9))
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid compression level %d", level);
    if (engine == CPNG_DEFLATE_ADAPTIVE && (sparse_level < -1 || sparse_level > 9))
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid sparse compression level %d", sparse_level);
    if (strategy < -1 || strategy > Z_FIXED)
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid zlib strategy %d", strategy);
    if (mem_level != -1 && (mem_level < 1 || mem_level > MAX_MEM_LEVEL))
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "invalid zlib memory level %d", mem_level);
    size_t row_bytes = (size_t)width * 4;
    if ((size_t)height > (SIZE_MAX / 2) / (row_bytes + 1))
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "image too large");

    cpng_scratch *t = cpng_scratch_take();
    if (t == NULL) return cpng_fail(err, err_cap, CPNG_E_NO_MEMORY, "out of memory");
    int rc = cpng_encode_with(t, pixels, width, height, stride, use_ld, engine, level, sparse_level, strategy,
                              mem_level, flags, out, out_len, err, err_cap);
    cpng_scratch_give(t);
    return rc;
}

// cpng_encode_rgba8_direct after the checks, with scratch state `t`.
static int cpng_encode_with(cpng_scratch *t, const uint8_t *pixels, uint32_t width, uint32_t height, size_t stride,
                            int use_ld, int engine, int level, int sparse_level, int strategy, int mem_level, int flags,
                            uint8_t **out, size_t *out_len, char *err, size_t err_cap) {
    size_t row_bytes = (size_t)width * 4, raw_len = (size_t)height * (row_bytes + 1);
    if (t->raw_cap < raw_len) {
        free(t->raw);
        t->raw_cap = 0;
        t->raw = (uint8_t *)malloc(raw_len);
        if (t->raw == NULL) return cpng_fail(err, err_cap, CPNG_E_NO_MEMORY, "out of memory");
        t->raw_cap = raw_len;
    }
    const int premultiplied = (flags & CPNG_ENCODE_PREMULTIPLIED) != 0;
    const int adaptive = engine == CPNG_DEFLATE_ADAPTIVE;
    uint64_t nonzero = 0;  // blocks of 4 pixels holding a non-zero byte (counted when adaptive)
    for (uint32_t y = 0; y < height; y++) {
        const uint8_t *src = pixels + (size_t)y * stride;
        uint8_t *dst = t->raw + (size_t)y * (row_bytes + 1);
        dst[0] = 0;  // filter type None
        if (cpng_is_zero(src, row_bytes)) {
            memset(dst + 1, 0, row_bytes);
        } else if (premultiplied) {
            nonzero += cpng_unpremultiply_row(src, dst + 1, width);
        } else {
            memcpy(dst + 1, src, row_bytes);
            if (adaptive) nonzero += cpng_count_nonzero(src, width);
        }
    }
    // Sparse images: zlib (see CPNG_DEFLATE_ADAPTIVE).
    if (adaptive && nonzero * 8 < (uint64_t)height * ((width + 3) / 4)) {
        use_ld = 0;
        level = sparse_level;
    }

    struct libdeflate_compressor *c = NULL;
    z_stream z;
    size_t bound;
    if (use_ld) {
        c = t->compressors[level];
        if (c == NULL) c = t->compressors[level] = cpng_ld.alloc(level);
        if (c == NULL) return cpng_fail(err, err_cap, CPNG_E_NO_MEMORY, "out of memory");
        bound = cpng_ld.bound(c, raw_len);
    } else {
        memset(&z, 0, sizeof z);
        int rc = deflateInit2(&z, level, Z_DEFLATED, 15, mem_level > 0 ? mem_level : 8,
                              strategy >= 0 ? strategy : Z_DEFAULT_STRATEGY);
        if (rc != Z_OK) return cpng_fail(err, err_cap, CPNG_E_NO_MEMORY, "deflateInit2 failed (%d)", rc);
        bound = deflateBound(&z, (uLong)raw_len);
    }
    // Signature, IHDR chunk (25), IDAT header (8) + data + CRC (4), IEND chunk (12).
    const size_t head = 8 + 25 + 8;
    uint8_t *buf = (uint8_t *)malloc(head + bound + 4 + 12);
    if (buf == NULL) {
        if (!use_ld) deflateEnd(&z);
        return cpng_fail(err, err_cap, CPNG_E_NO_MEMORY, "out of memory");
    }
    size_t zlen;
    if (use_ld) {
        zlen = cpng_ld.compress(c, t->raw, raw_len, buf + head, bound);
        if (zlen == 0) {
            free(buf);
            return cpng_fail(err, err_cap, CPNG_E_NO_MEMORY, "libdeflate: output larger than its bound");
        }
    } else {
        z.next_in = t->raw;
        z.next_out = buf + head;
        size_t in_left = raw_len, out_left = bound;
        int rc;
        do {  // uInt counts: feed at most 1 GiB at a time
            uInt in_step = in_left > 0x40000000u ? 0x40000000u : (uInt)in_left;
            uInt out_step = out_left > 0x40000000u ? 0x40000000u : (uInt)out_left;
            z.avail_in = in_step;
            z.avail_out = out_step;
            rc = deflate(&z, in_step == in_left ? Z_FINISH : Z_NO_FLUSH);
            in_left -= in_step - z.avail_in;
            out_left -= out_step - z.avail_out;
        } while (rc == Z_OK || (rc == Z_BUF_ERROR && z.avail_out > 0 && in_left > 0));
        zlen = bound - out_left;
        deflateEnd(&z);
        if (rc != Z_STREAM_END) {
            free(buf);
            return cpng_fail(err, err_cap, CPNG_E_NO_MEMORY, "deflate failed (%d)", rc);
        }
    }
    if (zlen > 0x7FFFFFFFu) {
        free(buf);
        return cpng_fail(err, err_cap, CPNG_E_INVALID_ARGUMENT, "image too large for one IDAT chunk");
    }
    static const uint8_t signature[8] = {137, 80, 78, 71, 13, 10, 26, 10};
    memcpy(buf, signature, 8);
    uint8_t *p = buf + 8;
    cpng_put32(p, 13);
    memcpy(p + 4, "IHDR", 4);
    cpng_put32(p + 8, width);
    cpng_put32(p + 12, height);
    p[16] = 8;   // bit depth
    p[17] = 6;   // colour type RGBA
    p[18] = 0;   // compression: deflate
    p[19] = 0;   // filter method 0
    p[20] = 0;   // not interlaced
    cpng_finish_chunk(use_ld, p, 13);
    p += 25;
    cpng_put32(p, (uint32_t)zlen);
    memcpy(p + 4, "IDAT", 4);
    cpng_finish_chunk(use_ld, p, zlen);
    p += 12 + zlen;
    cpng_put32(p, 0);
    memcpy(p + 4, "IEND", 4);
    cpng_finish_chunk(use_ld, p, 0);
    p += 12;
    *out = buf;
    *out_len = (size_t)(p - buf);
    if (err != NULL && err_cap > 0) err[0] = '\0';
    return CPNG_OK;
}

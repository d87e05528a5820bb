// Helpers shared by cpng.c (libpng shim) and cpng_direct.c (direct writer); not part of the
// module's public header.
#ifndef CPNG_INTERNAL_H
#define CPNG_INTERNAL_H
#include <stddef.h>
#include <stdint.h>

/// Formats the message into `err` (when not NULL) and returns `code`.
int cpng_fail(char *err, size_t cap, int code, const char *fmt, ...);
/// True when all `n` bytes at `p` are 0 (a fully transparent premultiplied row).
int cpng_is_zero(const uint8_t *p, size_t n);
/// `width` pixels straight from premultiplied (see CPNG_ENCODE_PREMULTIPLIED); returns how many
/// 16-byte blocks (4 pixels; single pixels at the tail) hold a non-zero byte.
uint32_t cpng_unpremultiply_row(const uint8_t *src, uint8_t *dst, uint32_t width);
#endif

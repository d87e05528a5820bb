// libmbedcrypto 2.28 (Debian 12's libmbedtls-dev; the library libnng's TLS is built with), seen
// only by MarkerdAuth: SHA-256 and HMAC-SHA256; and getrandom(2), which Swift's Glibc module
// does not export.
#ifndef CMBEDCRYPTO_SHIM_H
#define CMBEDCRYPTO_SHIM_H
#include <stddef.h>
#include <mbedtls/md.h>
#include <mbedtls/sha256.h>
#include <sys/random.h>
#include <sys/types.h>

// getrandom(2): up to `n` bytes from the kernel's CSPRNG; the count, or -1 with errno.
static inline ssize_t cmbed_getrandom(void *out, size_t n) { return getrandom(out, n, 0); }

// One-shot SHA-256 of `n` bytes into `out` (32 bytes). 0 on success (mbedTLS 2.x name; 3.x
// renamed it mbedtls_sha256, so the one call site is here).
static inline int cmbed_sha256(const void *in, size_t n, unsigned char *out) {
    return mbedtls_sha256_ret((const unsigned char *)in, n, out, 0);
}

// HMAC-SHA256 of `n` bytes under a `keylen`-byte key into `out` (32 bytes). 0 on success.
static inline int cmbed_hmac_sha256(const void *key, size_t keylen, const void *in, size_t n, unsigned char *out) {
    const mbedtls_md_info_t *md = mbedtls_md_info_from_type(MBEDTLS_MD_SHA256);
    if (md == NULL) return -1;
    return mbedtls_md_hmac(md, (const unsigned char *)key, keylen, (const unsigned char *)in, n, out);
}
#endif

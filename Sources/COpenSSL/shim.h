// SPDX-License-Identifier: Apache-2.0
// OpenSSL for signing (MD5, HMAC-SHA256), constant-time comparison, AES-256-ECB (refund notify)
// and TLS. Everything used from Swift is a plain function, so no wrappers are needed yet.
#ifndef WXPAY_COPENSSL_SHIM_H
#define WXPAY_COPENSSL_SHIM_H
// Suppress OpenSSL 3's deprecation attributes for the one-shot digests below: `MD5()` runs the
// digest directly, while the EVP path pays a provider fetch and a context allocation per call, which
// is most of the cost of signing a 400-byte string. Revisit if OpenSSL removes the legacy entry points.
#define OPENSSL_SUPPRESS_DEPRECATED 1
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/md5.h>
#include <openssl/rand.h>
#include <openssl/err.h>
#include <openssl/opensslv.h>

/// `OPENSSL_VERSION_TEXT` is a macro Swift cannot see through `OpenSSL_version` alone in every
/// build; expose the linked library's version string for diagnostics.
static inline const char *_Nonnull wxpay_openssl_version(void) {
    return OpenSSL_version(OPENSSL_VERSION);
}

/// MD5 of `length` bytes into `out` (16 bytes).
static inline void wxpay_md5(const void *_Nonnull data, size_t length, unsigned char *_Nonnull out) {
    MD5((const unsigned char *)data, length, out);
}

/// HMAC-SHA256 of `length` bytes keyed by `key` into `out` (32 bytes). Returns 1 on success.
static inline int wxpay_hmac_sha256(const void *_Nonnull key, int key_length,
                                    const void *_Nonnull data, size_t length,
                                    unsigned char *_Nonnull out) {
    unsigned int out_length = 32;
    return HMAC(EVP_sha256(), key, key_length, (const unsigned char *)data, length, out, &out_length) != NULL;
}
#endif

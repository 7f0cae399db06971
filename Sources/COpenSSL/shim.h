// SPDX-License-Identifier: Apache-2.0
// OpenSSL for signing (MD5, HMAC-SHA256), constant-time comparison, AES-256-ECB (refund notify)
// TLS, and reading certificates; X.509 chains and P-256 ECDSA (x509_ecdsa.h) for the App Store.
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
#include <openssl/sha.h>
// The client certificate's start-up check (HTTP's TLSClientIdentity+Inspection.swift).
#include <openssl/bio.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/x509.h>
// App receipts (StoreKit 1): PKCS #7 / CMS signed data and the ASN.1 inside it, read by the
// AppStore module and issued by the App Store simulator.
#include <openssl/asn1.h>
#include <openssl/cms.h>
#include <openssl/objects.h>
#include <string.h>
#include <stdio.h>

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

/// HMAC-SHA256 keyed once: `wxpay_hmac_sha256_key` absorbs (key ^ ipad) and (key ^ opad) into two
/// SHA-256 states that a signer keeps; `wxpay_hmac_sha256_keyed` copies them by value per message.
/// The one-shot `HMAC()` re-derives both pads and, in OpenSSL 3, fetches the digest and allocates
/// a context on every call, which costs more than hashing a 450-byte signing string. The low-level
/// SHA256_* functions are deprecated in OpenSSL 3 but run the same assembly; revisit if removed.
static inline void wxpay_hmac_sha256_key(const void *_Nonnull key, size_t key_length,
                                         SHA256_CTX *_Nonnull inner, SHA256_CTX *_Nonnull outer) {
    unsigned char block[64] = {0};
    unsigned char pad[64];
    if (key_length > sizeof block) {
        SHA256((const unsigned char *)key, key_length, block);
    } else {
        memcpy(block, key, key_length);
    }
    for (size_t i = 0; i < sizeof pad; i++) pad[i] = block[i] ^ 0x36;
    SHA256_Init(inner);
    SHA256_Update(inner, pad, sizeof pad);
    for (size_t i = 0; i < sizeof pad; i++) pad[i] = block[i] ^ 0x5c;
    SHA256_Init(outer);
    SHA256_Update(outer, pad, sizeof pad);
    OPENSSL_cleanse(block, sizeof block);
    OPENSSL_cleanse(pad, sizeof pad);
}

/// HMAC-SHA256 of `length` bytes from states made by `wxpay_hmac_sha256_key`, into `out` (32 bytes).
static inline void wxpay_hmac_sha256_keyed(const SHA256_CTX *_Nonnull inner, const SHA256_CTX *_Nonnull outer,
                                           const void *_Nonnull data, size_t length,
                                           unsigned char *_Nonnull out) {
    SHA256_CTX context = *inner;
    unsigned char digest[32];
    SHA256_Update(&context, data, length);
    SHA256_Final(digest, &context);
    context = *outer;
    SHA256_Update(&context, digest, sizeof digest);
    SHA256_Final(out, &context);
    OPENSSL_cleanse(&context, sizeof context);
}
#include "x509_ecdsa.h"
#endif

// SPDX-License-Identifier: Apache-2.0
// OpenSSL, for the Crypto module only (and its C half, CCrypto): no other Swift module imports
// this. What stays here are typed wrappers for what Swift cannot call (macros); logic lives in
// Crypto (Swift) or CCrypto (C).
#ifndef WXPAY_COPENSSL_SHIM_H
#define WXPAY_COPENSSL_SHIM_H
// Suppress OpenSSL 3's deprecation attributes: the one-shot `MD5()` and the SHA256_* contexts run
// the digest directly, while the EVP path pays a provider fetch and a context allocation per call,
// which is most of the cost of signing a 400-byte string (and the HMAC key schedule keeps SHA-256
// states by value). Revisit if OpenSSL removes the legacy entry points.
#ifndef OPENSSL_SUPPRESS_DEPRECATED
#define OPENSSL_SUPPRESS_DEPRECATED 1
#endif
#include <openssl/crypto.h>
#include <openssl/evp.h>
#include <openssl/hmac.h>
#include <openssl/md5.h>
#include <openssl/rand.h>
#include <openssl/err.h>
#include <openssl/opensslv.h>
#include <openssl/provider.h>
#include <openssl/sha.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/ec.h>
#include <openssl/pem.h>
#include <openssl/pkcs12.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
// App receipts (StoreKit 1): PKCS #7 / CMS signed data and the ASN.1 inside it.
#include <openssl/asn1.h>
#include <openssl/cms.h>
#include <openssl/objects.h>

/// `OPENSSL_VERSION_TEXT` is a macro Swift cannot see through `OpenSSL_version` alone in every
/// build; expose the linked library's version string for diagnostics.
static inline const char *_Nonnull wxpay_openssl_version(void) {
    return OpenSSL_version(OPENSSL_VERSION);
}

/// `OPENSSL_free` is a macro.
static inline void wxpay_openssl_free(void *_Nullable pointer) { OPENSSL_free(pointer); }
#endif

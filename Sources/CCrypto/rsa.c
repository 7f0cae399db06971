// SPDX-License-Identifier: Apache-2.0
// The RSA-2048 fast path for WeChat Pay API v3: SHA256withRSA signed and verified through the RSA
// key itself.
//
// EVP_DigestVerifyInit costs a provider fetch and a context per call, about a fifth of a whole
// RSA-2048 verify; WeChat Pay v3 verifies every answer and notify. RSA_verify on the key's RSA
// (cached inside the EVP_PKEY by OpenSSL on first use) checks the same PKCS#1 v1.5 DigestInfo,
// as `openssl speed rsa2048` measures it. Signing (twice per v3 create) goes the same way for the
// same reason: EVP_DigestSignInit on OpenSSL 3.0 fetches the signature and digest methods under
// the provider store's locks on every call, which the gateway's threads then contend for;
// RSA_sign on the same RSA (blinded, CRT, the result checked as the provider does) is the
// operation `openssl speed rsa2048` times. Deprecated in OpenSSL 3 (suppressed in ccrypto.h);
// revisit if the low-level RSA API goes. On a CPU with AVX-512 IFMA, verification's public
// operation runs in rsa2048_ifma.c instead, with this function as its fallback.
#include "internal.h"
#include <openssl/crypto.h>
#include <openssl/err.h>
#include <openssl/obj_mac.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>

int wxpay_rsa_sha256_verify(EVP_PKEY *key, const void *data, size_t length, const unsigned char *signature,
                            size_t signature_length) {
    const RSA *rsa = EVP_PKEY_get0_RSA(key);
    if (rsa == NULL || signature_length == 0 || signature_length > 1024) {
        ERR_clear_error();
        return 0;
    }
    unsigned char digest[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)data, length, digest);
    int ok = RSA_verify(NID_sha256, digest, sizeof digest, signature, (unsigned int)signature_length, (RSA *)rsa) == 1;
    ERR_clear_error();
    return ok;
}

int wxpay_rsa_sha256_sign(EVP_PKEY *key, const void *data, size_t length, unsigned char *out, size_t capacity) {
    const RSA *rsa = EVP_PKEY_get0_RSA(key);
    if (rsa == NULL || capacity < (size_t)RSA_size(rsa)) {
        ERR_clear_error();
        return 0;
    }
    unsigned char digest[SHA256_DIGEST_LENGTH];
    SHA256((const unsigned char *)data, length, digest);
    unsigned int written = 0;
    int ok = RSA_sign(NID_sha256, digest, sizeof digest, out, &written, (RSA *)rsa) == 1;
    OPENSSL_cleanse(digest, sizeof digest);
    ERR_clear_error();
    return ok ? (int)written : 0;
}

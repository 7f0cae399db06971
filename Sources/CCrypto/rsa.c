// SPDX-License-Identifier: Apache-2.0
// The RSA-2048 fast path for WeChat Pay API v3: SHA256withRSA verified through the RSA key itself.
//
// EVP_DigestVerifyInit costs a provider fetch and a context per call, about a fifth of a whole
// RSA-2048 verify; WeChat Pay v3 verifies every answer and notify. RSA_verify on the key's RSA
// (cached inside the EVP_PKEY by OpenSSL on first use) checks the same PKCS#1 v1.5 DigestInfo,
// as `openssl speed rsa2048` measures it. Deprecated in OpenSSL 3 (suppressed in ccrypto.h);
// revisit if the low-level RSA API goes.
#include "internal.h"
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

// SPDX-License-Identifier: Apache-2.0
// HMAC-SHA256 with its key schedule computed once (Crypto's HMACSHA256Key): the code the v2 signer
// ran as static inline functions of the COpenSSL shim, now a C file of its own. The states are
// passed by address and copied here, on the C stack, once per MAC.
#include "internal.h"
#include <openssl/crypto.h>
#include <string.h>

void wxpay_hmac_sha256_key(const void *key, size_t key_length, SHA256_CTX *inner, SHA256_CTX *outer) {
    unsigned char block[64] = {0};
    unsigned char pad[64];
    // RFC 2104: a key longer than the block is hashed first; a shorter one is zero-padded (an
    // empty key is still a key: the all-zero block).
    if (key_length > sizeof block) {
        SHA256((const unsigned char *)key, key_length, block);
    } else if (key_length > 0) {
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

void wxpay_hmac_sha256_keyed(const SHA256_CTX *inner, const SHA256_CTX *outer, const void *data, size_t length,
                             unsigned char *out) {
    SHA256_CTX context = *inner;
    unsigned char digest[32];
    SHA256_Update(&context, data, length);
    SHA256_Final(digest, &context);
    context = *outer;
    SHA256_Update(&context, digest, sizeof digest);
    SHA256_Final(out, &context);
    OPENSSL_cleanse(&context, sizeof context);
    OPENSSL_cleanse(digest, sizeof digest);
}

// SPDX-License-Identifier: Apache-2.0
// Keys: PEM in and out, generation, signatures, and the P-256 fast path for ES256.
#include "internal.h"
#include <openssl/bn.h>
#include <openssl/ecdsa.h>
#include <openssl/err.h>
#include <openssl/obj_mac.h>
#include <openssl/pem.h>
#include <openssl/rsa.h>
#include <string.h>

int wxpay_bio_take(BIO *bio, int written, char **out) {
    *out = NULL;
    int length = 0;
    if (written == 1) {
        char *data = NULL;
        long size = BIO_get_mem_data(bio, &data);
        if (size > 0 && data != NULL) {
            *out = (char *)OPENSSL_malloc((size_t)size);
            if (*out != NULL) {
                memcpy(*out, data, (size_t)size);
                length = (int)size;
            }
        }
    }
    BIO_free(bio);
    ERR_clear_error();
    return length;
}

/// The pass phrase callback for a key read without a password: none (OpenSSL's default callback
/// would ask on the terminal, which a server must never do).
static int wxpay_no_password(char *buffer, int size, int writing, void *user) {
    (void)buffer; (void)size; (void)writing; (void)user;
    return 0;
}

EVP_PKEY *wxpay_pkey_private_from_pem(const char *pem, size_t length, const char *password) {
    BIO *bio = BIO_new_mem_buf(pem, (int)length);
    if (bio == NULL) return NULL;
    // With no callback, OpenSSL takes the last argument as the pass phrase itself.
    EVP_PKEY *key = password != NULL ? PEM_read_bio_PrivateKey(bio, NULL, NULL, (void *)password)
                                     : PEM_read_bio_PrivateKey(bio, NULL, wxpay_no_password, NULL);
    BIO_free(bio);
    ERR_clear_error();
    return key;
}

EVP_PKEY *wxpay_pkey_public_from_pem(const char *pem, size_t length) {
    BIO *bio = BIO_new_mem_buf(pem, (int)length);
    if (bio == NULL) return NULL;
    EVP_PKEY *key = PEM_read_bio_PUBKEY(bio, NULL, wxpay_no_password, NULL);
    if (key == NULL && BIO_reset(bio) == 1) {
        RSA *rsa = PEM_read_bio_RSAPublicKey(bio, NULL, wxpay_no_password, NULL);
        if (rsa != NULL) {
            key = EVP_PKEY_new();
            if (key == NULL || EVP_PKEY_set1_RSA(key, rsa) != 1) {
                EVP_PKEY_free(key);
                key = NULL;
            }
            RSA_free(rsa);
        }
    }
    BIO_free(bio);
    ERR_clear_error();
    return key;
}

int wxpay_pkey_to_pem(EVP_PKEY *key, int private_part, char **out) {
    *out = NULL;
    BIO *bio = BIO_new(BIO_s_mem());
    if (bio == NULL) return 0;
    int written = private_part ? PEM_write_bio_PKCS8PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL)
                               : PEM_write_bio_PUBKEY(bio, key);
    return wxpay_bio_take(bio, written, out);
}

EVP_PKEY *wxpay_ec_generate(int nid) {
    EVP_PKEY_CTX *context = EVP_PKEY_CTX_new_id(EVP_PKEY_EC, NULL);
    EVP_PKEY *key = NULL;
    if (context == NULL || EVP_PKEY_keygen_init(context) != 1
        || EVP_PKEY_CTX_set_ec_paramgen_curve_nid(context, nid) != 1
        || EVP_PKEY_CTX_set_ec_param_enc(context, OPENSSL_EC_NAMED_CURVE) != 1
        || EVP_PKEY_keygen(context, &key) != 1) {
        EVP_PKEY_free(key);
        key = NULL;
    }
    EVP_PKEY_CTX_free(context);
    ERR_clear_error();
    return key;
}

EVP_PKEY *wxpay_rsa_generate(unsigned int bits) {
    EVP_PKEY *key = EVP_RSA_gen(bits);
    ERR_clear_error();
    return key;
}

int wxpay_pkey_ec_curve(const EVP_PKEY *key) {
    if (EVP_PKEY_get_base_id(key) != EVP_PKEY_EC) return 0;
    const EC_KEY *ec = EVP_PKEY_get0_EC_KEY(key);
    const EC_GROUP *group = ec != NULL ? EC_KEY_get0_group(ec) : NULL;
    int nid = group != NULL ? EC_GROUP_get_curve_name(group) : NID_undef;
    ERR_clear_error();
    return nid == NID_undef ? 0 : nid;
}

int wxpay_pkey_sign(EVP_PKEY *key, const EVP_MD *md, const void *data, size_t length, unsigned char *out,
                    size_t capacity) {
    EVP_MD_CTX *context = EVP_MD_CTX_new();
    size_t written = capacity;
    int ok = context != NULL && EVP_DigestSignInit(context, NULL, md, NULL, key) == 1
        && EVP_DigestSign(context, out, &written, (const unsigned char *)data, length) == 1;
    EVP_MD_CTX_free(context);
    ERR_clear_error();
    return ok ? (int)written : 0;
}

int wxpay_pkey_verify(EVP_PKEY *key, const EVP_MD *md, const void *data, size_t length,
                      const unsigned char *signature, size_t signature_length) {
    EVP_MD_CTX *context = EVP_MD_CTX_new();
    int ok = context != NULL && EVP_DigestVerifyInit(context, NULL, md, NULL, key) == 1
        && EVP_DigestVerify(context, signature, signature_length, (const unsigned char *)data, length) == 1;
    EVP_MD_CTX_free(context);
    ERR_clear_error();
    return ok;
}

// MARK: - P-256 and ES256

/// The EC_KEY of `key` when it is EC on P-256 (named curve), or NULL.
static EC_KEY *wxpay_p256_of(const EVP_PKEY *key) {
    if (key == NULL || EVP_PKEY_get_base_id(key) != EVP_PKEY_EC) return NULL;
    EC_KEY *ec = EVP_PKEY_get1_EC_KEY((EVP_PKEY *)key);
    if (ec == NULL) return NULL;
    const EC_GROUP *group = EC_KEY_get0_group(ec);
    if (group == NULL || EC_GROUP_get_curve_name(group) != NID_X9_62_prime256v1) {
        EC_KEY_free(ec);
        return NULL;
    }
    return ec;
}

EC_KEY *wxpay_x509_p256_key(const X509 *certificate) {
    EC_KEY *ec = wxpay_p256_of(X509_get0_pubkey(certificate));
    ERR_clear_error();
    return ec;
}

EC_KEY *wxpay_pkey_p256_key(EVP_PKEY *key) {
    EC_KEY *ec = wxpay_p256_of(key);
    ERR_clear_error();
    return ec;
}

int wxpay_p256_verify_raw(EC_KEY *key, const unsigned char *digest, const unsigned char *signature) {
    ECDSA_SIG *sig = ECDSA_SIG_new();
    if (sig == NULL) return 0;
    BIGNUM *r = BN_bin2bn(signature, 32, NULL);
    BIGNUM *s = BN_bin2bn(signature + 32, 32, NULL);
    if (r == NULL || s == NULL || ECDSA_SIG_set0(sig, r, s) != 1) {
        BN_free(r);
        BN_free(s);
        ECDSA_SIG_free(sig);
        ERR_clear_error();
        return 0;
    }
    int result = ECDSA_do_verify(digest, 32, sig, key);
    ECDSA_SIG_free(sig);
    ERR_clear_error();
    return result == 1;
}

int wxpay_ecdsa_der_to_raw(const unsigned char *der, size_t length, unsigned char *raw, int half) {
    const unsigned char *cursor = der;
    ECDSA_SIG *sig = d2i_ECDSA_SIG(NULL, &cursor, (long)length);
    int ok = 0;
    if (sig != NULL && cursor == der + length) {
        const BIGNUM *r = NULL, *s = NULL;
        ECDSA_SIG_get0(sig, &r, &s);
        ok = BN_bn2binpad(r, raw, half) == half && BN_bn2binpad(s, raw + half, half) == half;
    }
    ECDSA_SIG_free(sig);
    ERR_clear_error();
    return ok;
}

int wxpay_ecdsa_raw_to_der(const unsigned char *raw, int half, unsigned char *out) {
    ECDSA_SIG *sig = ECDSA_SIG_new();
    BIGNUM *r = BN_bin2bn(raw, half, NULL);
    BIGNUM *s = BN_bin2bn(raw + half, half, NULL);
    int length = 0;
    if (sig != NULL && r != NULL && s != NULL && ECDSA_SIG_set0(sig, r, s) == 1) {
        r = s = NULL;  // owned by sig now
        unsigned char *cursor = out;
        length = i2d_ECDSA_SIG(sig, &cursor);
    }
    BN_free(r);
    BN_free(s);
    ECDSA_SIG_free(sig);
    ERR_clear_error();
    return length > 0 ? length : 0;
}

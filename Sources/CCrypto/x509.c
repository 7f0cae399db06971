// SPDX-License-Identifier: Apache-2.0
// Certificates: reading, writing, the chain check, issuing (the App Store simulator's PKI and the
// tests' hostile chains).
#include "internal.h"
#include <openssl/asn1.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509v3.h>
#include <stdio.h>
#include <string.h>
#include <time.h>

X509 *wxpay_x509_from_der(const unsigned char *der, size_t length) {
    const unsigned char *cursor = der;
    X509 *certificate = d2i_X509(NULL, &cursor, (long)length);
    if (certificate != NULL && cursor != der + length) {
        X509_free(certificate);
        certificate = NULL;
    }
    ERR_clear_error();
    return certificate;
}

X509 *wxpay_x509_from_pem(const char *pem, size_t length) {
    BIO *bio = BIO_new_mem_buf(pem, (int)length);
    if (bio == NULL) return NULL;
    X509 *certificate = PEM_read_bio_X509(bio, NULL, NULL, NULL);
    BIO_free(bio);
    ERR_clear_error();
    return certificate;
}

int wxpay_x509_to_der(X509 *certificate, unsigned char **out) {
    *out = NULL;
    int length = i2d_X509(certificate, out);
    ERR_clear_error();
    return length > 0 ? length : 0;
}

int wxpay_x509_to_pem(X509 *certificate, char **out) {
    *out = NULL;
    BIO *bio = BIO_new(BIO_s_mem());
    if (bio == NULL) return 0;
    return wxpay_bio_take(bio, PEM_write_bio_X509(bio, certificate), out);
}

int wxpay_x509_has_extension(const X509 *certificate, const char *oid) {
    ASN1_OBJECT *object = OBJ_txt2obj(oid, 1);
    if (object == NULL) { ERR_clear_error(); return 0; }
    int index = X509_get_ext_by_OBJ(certificate, object, -1);
    ASN1_OBJECT_free(object);
    return index >= 0;
}

static int wxpay_asn1_time_to_epoch(const ASN1_TIME *time, int64_t *seconds) {
    struct tm broken;
    memset(&broken, 0, sizeof broken);
    if (time == NULL || ASN1_TIME_to_tm(time, &broken) != 1) { ERR_clear_error(); return 0; }
    *seconds = (int64_t)timegm(&broken);
    return 1;
}

int wxpay_x509_validity(const X509 *certificate, int64_t *not_before, int64_t *not_after) {
    return wxpay_asn1_time_to_epoch(X509_get0_notBefore(certificate), not_before)
        && wxpay_asn1_time_to_epoch(X509_get0_notAfter(certificate), not_after);
}

int wxpay_x509_serial(const X509 *certificate, unsigned char *out, size_t capacity) {
    const ASN1_INTEGER *serial = X509_get0_serialNumber(certificate);
    BIGNUM *number = serial != NULL ? ASN1_INTEGER_to_BN(serial, NULL) : NULL;
    int length = 0;
    if (number != NULL) {
        if (BN_is_negative(number)) {
            length = -1;
        } else if (BN_is_zero(number)) {
            if (capacity >= 1) { out[0] = 0; length = 1; }
        } else if ((size_t)BN_num_bytes(number) <= capacity) {
            length = BN_bn2bin(number, out);
        }
    }
    BN_free(number);
    ERR_clear_error();
    return length;
}

X509_STORE *wxpay_x509_store_new(X509 *const *roots, int count) {
    X509_STORE *store = X509_STORE_new();
    if (store == NULL) return NULL;
    for (int i = 0; i < count; i++) {
        if (X509_STORE_add_cert(store, roots[i]) != 1) {
            X509_STORE_free(store);
            ERR_clear_error();
            return NULL;
        }
    }
    return store;
}

int wxpay_x509_verify_chain(X509_STORE *store, X509 *leaf, X509 *intermediate, X509 *expected_root, int64_t at,
                            int *error) {
    *error = 0;
    STACK_OF(X509) *untrusted = sk_X509_new_null();
    X509_STORE_CTX *context = X509_STORE_CTX_new();
    int outcome = WXPAY_CHAIN_INTERNAL;
    if (untrusted == NULL || context == NULL || !sk_X509_push(untrusted, intermediate)
        || X509_STORE_CTX_init(context, store, leaf, untrusted) != 1) {
        goto done;
    }
    X509_STORE_CTX_set_flags(context, X509_V_FLAG_X509_STRICT);
    X509_STORE_CTX_set_time(context, 0, (time_t)at);
    if (X509_verify_cert(context) != 1) {
        *error = X509_STORE_CTX_get_error(context);
        outcome = WXPAY_CHAIN_REFUSED;
        goto done;
    }
    STACK_OF(X509) *chain = X509_STORE_CTX_get0_chain(context);
    if (chain == NULL || sk_X509_num(chain) != 3 || X509_cmp(sk_X509_value(chain, 1), intermediate) != 0
        || (expected_root != NULL && X509_cmp(sk_X509_value(chain, 2), expected_root) != 0)) {
        outcome = WXPAY_CHAIN_WRONG_PATH;
        goto done;
    }
    outcome = WXPAY_CHAIN_OK;
done:
    if (context != NULL) X509_STORE_CTX_free(context);
    if (untrusted != NULL) sk_X509_free(untrusted);
    ERR_clear_error();
    return outcome;
}

// MARK: - Issuing

static int wxpay_x509_add_extension(X509 *certificate, X509V3_CTX *context, int nid, const char *value) {
    X509_EXTENSION *extension = X509V3_EXT_conf_nid(NULL, context, nid, value);
    if (extension == NULL) return 0;
    int ok = X509_add_ext(certificate, extension, -1);
    X509_EXTENSION_free(extension);
    return ok == 1;
}

/// Adds a non-critical extension `oid` whose value is DER NULL (05 00), the shape of Apple's
/// marker extensions (1.2.840.113635.100.6.11.1 on receipt-signing leaves, …6.2.1 on the WWDR
/// intermediate).
static int wxpay_x509_add_marker_extension(X509 *certificate, const char *oid) {
    static const unsigned char der_null[2] = {0x05, 0x00};
    ASN1_OBJECT *object = OBJ_txt2obj(oid, 1);
    ASN1_OCTET_STRING *value = ASN1_OCTET_STRING_new();
    int ok = 0;
    if (object != NULL && value != NULL && ASN1_OCTET_STRING_set(value, der_null, 2) == 1) {
        X509_EXTENSION *extension = X509_EXTENSION_create_by_OBJ(NULL, object, 0, value);
        if (extension != NULL) {
            ok = X509_add_ext(certificate, extension, -1) == 1;
            X509_EXTENSION_free(extension);
        }
    }
    ASN1_OBJECT_free(object);
    ASN1_OCTET_STRING_free(value);
    return ok;
}

X509 *wxpay_x509_issue(EVP_PKEY *subject_key, const char *common_name, const char *organization, const char *country,
                       X509 *issuer, EVP_PKEY *issuer_key, const unsigned char *serial, size_t serial_length,
                       int64_t not_before, int64_t not_after, int is_ca, int path_length, const char *marker_oid,
                       int use_sha384) {
    X509 *certificate = X509_new();
    if (certificate == NULL) return NULL;
    int ok = X509_set_version(certificate, 2) == 1;
    ASN1_INTEGER *serial_number = ASN1_INTEGER_new();
    BIGNUM *serial_bn = BN_bin2bn(serial, (int)serial_length, NULL);
    ok = ok && serial_number != NULL && serial_bn != NULL && BN_to_ASN1_INTEGER(serial_bn, serial_number) != NULL
        && X509_set_serialNumber(certificate, serial_number) == 1;
    ASN1_INTEGER_free(serial_number);
    BN_free(serial_bn);
    ok = ok && ASN1_TIME_set(X509_getm_notBefore(certificate), (time_t)not_before) != NULL
        && ASN1_TIME_set(X509_getm_notAfter(certificate), (time_t)not_after) != NULL
        && X509_set_pubkey(certificate, subject_key) == 1;
    X509_NAME *name = X509_get_subject_name(certificate);
    ok = ok && name != NULL
        && X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_UTF8, (const unsigned char *)common_name, -1, -1, 0) == 1
        && X509_NAME_add_entry_by_txt(name, "O", MBSTRING_UTF8, (const unsigned char *)organization, -1, -1, 0) == 1
        && X509_NAME_add_entry_by_txt(name, "C", MBSTRING_UTF8, (const unsigned char *)country, -1, -1, 0) == 1
        && X509_set_issuer_name(certificate, issuer != NULL ? X509_get_subject_name(issuer) : name) == 1;
    if (ok) {
        X509V3_CTX context;
        X509V3_set_ctx(&context, issuer != NULL ? issuer : certificate, certificate, NULL, NULL, 0);
        char constraints[48];
        if (is_ca && path_length >= 0) {
            snprintf(constraints, sizeof constraints, "critical,CA:TRUE,pathlen:%d", path_length);
        } else {
            snprintf(constraints, sizeof constraints, "%s", is_ca ? "critical,CA:TRUE" : "critical,CA:FALSE");
        }
        ok = wxpay_x509_add_extension(certificate, &context, NID_basic_constraints, constraints)
            && wxpay_x509_add_extension(certificate, &context, NID_key_usage,
                                        is_ca ? "critical,keyCertSign,cRLSign" : "critical,digitalSignature")
            && wxpay_x509_add_extension(certificate, &context, NID_subject_key_identifier, "hash")
            && (issuer == NULL
                || wxpay_x509_add_extension(certificate, &context, NID_authority_key_identifier, "keyid:always"))
            && (marker_oid == NULL || wxpay_x509_add_marker_extension(certificate, marker_oid));
    }
    ok = ok && X509_sign(certificate, issuer_key, use_sha384 ? EVP_sha384() : EVP_sha256()) > 0;
    if (!ok) {
        X509_free(certificate);
        certificate = NULL;
    }
    ERR_clear_error();
    return certificate;
}

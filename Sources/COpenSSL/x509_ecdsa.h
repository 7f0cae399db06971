// SPDX-License-Identifier: Apache-2.0
// X.509 chains and P-256 ECDSA for App Store signed data (JWS with an x5c chain), the App Store
// Server API's ES256 tokens, the App Store simulator's own PKI, and the signature and chain of app
// receipts (PKCS #7 / CMS signed data).
//
// Why C here: STACK_OF(X509), OPENSSL_free, BIO_get_mem_data and the EVP_PKEY_CTX_set_* helpers
// are function-like macros Swift cannot call, and building a certificate takes a dozen calls whose
// failures are simpler to unwind in one C function than across the Swift boundary. Every function
// returns NULL / 0 on failure and leaves OpenSSL's error queue cleared.
#ifndef WXPAY_COPENSSL_X509_ECDSA_H
#define WXPAY_COPENSSL_X509_ECDSA_H
#include <openssl/asn1.h>
#include <openssl/bio.h>
#include <openssl/bn.h>
#include <openssl/cms.h>
#include <openssl/ec.h>
#include <openssl/ecdsa.h>
#include <openssl/obj_mac.h>
#include <openssl/objects.h>
#include <openssl/pem.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <openssl/x509v3.h>
#include <stdint.h>
#include <string.h>
#include <time.h>

/// `OPENSSL_free` is a macro.
static inline void wxpay_openssl_free(void *_Nullable pointer) { OPENSSL_free(pointer); }

/// SHA-256 of `length` bytes into `out` (32 bytes), one shot (no EVP fetch per call).
static inline void wxpay_sha256(const void *_Nonnull data, size_t length, unsigned char *_Nonnull out) {
    SHA256((const unsigned char *)data, length, out);
}

// MARK: - Certificates

/// A certificate from DER, or NULL. Trailing bytes after the certificate are refused.
static inline X509 *_Nullable wxpay_x509_from_der(const unsigned char *_Nonnull der, size_t length) {
    const unsigned char *cursor = der;
    X509 *certificate = d2i_X509(NULL, &cursor, (long)length);
    if (certificate != NULL && cursor != der + length) {
        X509_free(certificate);
        certificate = NULL;
    }
    ERR_clear_error();
    return certificate;
}

/// The first certificate of a PEM text, or NULL.
static inline X509 *_Nullable wxpay_x509_from_pem(const char *_Nonnull pem, size_t length) {
    BIO *bio = BIO_new_mem_buf(pem, (int)length);
    if (bio == NULL) return NULL;
    X509 *certificate = PEM_read_bio_X509(bio, NULL, NULL, NULL);
    BIO_free(bio);
    ERR_clear_error();
    return certificate;
}

/// The DER encoding of `certificate` into a buffer the caller frees with `wxpay_openssl_free`;
/// returns its length, or 0.
static inline int wxpay_x509_to_der(X509 *_Nonnull certificate, unsigned char *_Nullable *_Nonnull out) {
    *out = NULL;
    int length = i2d_X509(certificate, out);
    ERR_clear_error();
    return length > 0 ? length : 0;
}

/// Whether `certificate` carries the extension `oid` (dotted text), critical or not.
static inline int wxpay_x509_has_extension(const X509 *_Nonnull certificate, const char *_Nonnull oid) {
    ASN1_OBJECT *object = OBJ_txt2obj(oid, 1);
    if (object == NULL) { ERR_clear_error(); return 0; }
    int index = X509_get_ext_by_OBJ(certificate, object, -1);
    ASN1_OBJECT_free(object);
    return index >= 0;
}

static inline int wxpay_asn1_time_to_epoch(const ASN1_TIME *_Nullable time, int64_t *_Nonnull seconds) {
    struct tm broken;
    memset(&broken, 0, sizeof broken);
    if (time == NULL || ASN1_TIME_to_tm(time, &broken) != 1) { ERR_clear_error(); return 0; }
    *seconds = (int64_t)timegm(&broken);
    return 1;
}

/// notBefore and notAfter as seconds since 1970. Returns 1 on success.
static inline int wxpay_x509_validity(const X509 *_Nonnull certificate, int64_t *_Nonnull not_before,
                                      int64_t *_Nonnull not_after) {
    return wxpay_asn1_time_to_epoch(X509_get0_notBefore(certificate), not_before)
        && wxpay_asn1_time_to_epoch(X509_get0_notAfter(certificate), not_after);
}

/// A trust store holding exactly `count` roots, or NULL.
static inline X509_STORE *_Nullable wxpay_x509_store_new(X509 *_Nonnull const *_Nonnull roots, int count) {
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

/// Outcomes of `wxpay_x509_verify_chain`.
enum {
    WXPAY_CHAIN_OK = 0,
    /// OpenSSL refused the chain; `*error` holds the X509_V_ERR_* code.
    WXPAY_CHAIN_REFUSED = 1,
    /// The verified path is not leaf → the given intermediate → a trusted root.
    WXPAY_CHAIN_WRONG_PATH = 2,
    WXPAY_CHAIN_INTERNAL = 3,
};

/// Verifies `leaf` through `intermediate` (the only untrusted certificate offered) to a root of
/// `store`, at `at` seconds since 1970, with the verification `flags` (X509_V_FLAG_*). The path must
/// be exactly three certificates and pass through `intermediate`; the verified root is compared
/// with `expected_root` when it is not NULL.
static inline int wxpay_x509_verify_chain_flags(X509_STORE *_Nonnull store, X509 *_Nonnull leaf,
                                                X509 *_Nonnull intermediate, X509 *_Nullable expected_root,
                                                int64_t at, unsigned long flags, int *_Nonnull error) {
    *error = 0;
    STACK_OF(X509) *untrusted = sk_X509_new_null();
    X509_STORE_CTX *context = X509_STORE_CTX_new();
    int outcome = WXPAY_CHAIN_INTERNAL;
    if (untrusted == NULL || context == NULL || !sk_X509_push(untrusted, intermediate)
        || X509_STORE_CTX_init(context, store, leaf, untrusted) != 1) {
        goto done;
    }
    if (flags != 0) X509_STORE_CTX_set_flags(context, flags);
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

/// `wxpay_x509_verify_chain_flags` with X509_V_FLAG_X509_STRICT, as Apple's own library verifies
/// the chains of signed transactions and notifications (Apple Root CA - G3).
static inline int wxpay_x509_verify_chain(X509_STORE *_Nonnull store, X509 *_Nonnull leaf,
                                          X509 *_Nonnull intermediate, X509 *_Nullable expected_root,
                                          int64_t at, int *_Nonnull error) {
    return wxpay_x509_verify_chain_flags(store, leaf, intermediate, expected_root, at, X509_V_FLAG_X509_STRICT, error);
}

/// Outcomes of `wxpay_cms_verify_signer`.
enum {
    WXPAY_CMS_OK = 0,
    /// Not exactly one signer.
    WXPAY_CMS_NOT_ONE_SIGNER = 1,
    /// The signature does not verify over the content, or the signer's certificate is not carried.
    WXPAY_CMS_BAD_SIGNATURE = 2,
    /// No certificate carried beside the signer's leads it to a root of the store as leaf,
    /// intermediate, root; `*error` holds the last X509_V_ERR_* code (0: no issuer was carried).
    WXPAY_CMS_CHAIN_REFUSED = 3,
    WXPAY_CMS_INTERNAL = 4,
};

/// Verifies a PKCS #7 / CMS SignedData whose content is attached (an App Store receipt): exactly
/// one signer, whose certificate must be among the ones carried (nothing is looked up elsewhere),
/// and whose signature over the content verifies (CMS_verify, without its S/MIME certificate
/// checks). Then the signer's certificate is verified through one of the other certificates
/// carried that issued it (at most 8 tried) to a root of `store`, at `at` seconds since 1970, with
/// `chain_flags`: three certificates exactly (`wxpay_x509_verify_chain_flags`). On success `*leaf`
/// and `*intermediate` are the signer's certificate and the one its chain went through, each with
/// a reference the caller releases with X509_free.
static inline int wxpay_cms_verify_signer(CMS_ContentInfo *_Nonnull cms, X509_STORE *_Nonnull store, int64_t at,
                                          unsigned long chain_flags, X509 *_Nullable *_Nonnull leaf,
                                          X509 *_Nullable *_Nonnull intermediate, int *_Nonnull error) {
    *leaf = NULL;
    *intermediate = NULL;
    *error = 0;
    STACK_OF(CMS_SignerInfo) *infos = CMS_get0_SignerInfos(cms);
    if (infos == NULL || sk_CMS_SignerInfo_num(infos) != 1) {
        ERR_clear_error();
        return WXPAY_CMS_NOT_ONE_SIGNER;
    }
    if (CMS_verify(cms, NULL, NULL, NULL, NULL, CMS_NO_SIGNER_CERT_VERIFY | CMS_BINARY) != 1) {
        ERR_clear_error();
        return WXPAY_CMS_BAD_SIGNATURE;
    }
    STACK_OF(X509) *signers = CMS_get0_signers(cms);
    if (signers == NULL || sk_X509_num(signers) != 1) {
        if (signers != NULL) sk_X509_free(signers);
        ERR_clear_error();
        return WXPAY_CMS_NOT_ONE_SIGNER;
    }
    X509 *signer = sk_X509_value(signers, 0);
    sk_X509_free(signers);  /* the stack only: its certificate belongs to the CMS structure */
    STACK_OF(X509) *certificates = CMS_get1_certs(cms);
    int outcome = WXPAY_CMS_CHAIN_REFUSED;
    int tried = 0;
    for (int i = 0; certificates != NULL && i < sk_X509_num(certificates) && tried < 8; i++) {
        X509 *candidate = sk_X509_value(certificates, i);
        if (X509_cmp(candidate, signer) == 0 || X509_check_issued(candidate, signer) != X509_V_OK) continue;
        tried++;
        int result = wxpay_x509_verify_chain_flags(store, signer, candidate, NULL, at, chain_flags, error);
        if (result == WXPAY_CHAIN_OK) {
            if (X509_up_ref(signer) != 1) { outcome = WXPAY_CMS_INTERNAL; break; }
            if (X509_up_ref(candidate) != 1) { X509_free(signer); outcome = WXPAY_CMS_INTERNAL; break; }
            *leaf = signer;
            *intermediate = candidate;
            outcome = WXPAY_CMS_OK;
            break;
        }
        if (result == WXPAY_CHAIN_INTERNAL) { outcome = WXPAY_CMS_INTERNAL; break; }
    }
    if (certificates != NULL) sk_X509_pop_free(certificates, X509_free);
    ERR_clear_error();
    return outcome;
}

/// OpenSSL's text for an X509_V_ERR_* code (static storage).
static inline const char *_Nonnull wxpay_x509_error_text(int error) {
    return X509_verify_cert_error_string(error);
}

// MARK: - P-256 keys and ES256

/// The P-256 public key of `certificate` as an EC_KEY the caller frees with `EC_KEY_free`, or NULL
/// when the key is not EC on P-256 (named curve).
static inline EC_KEY *_Nullable wxpay_x509_p256_key(const X509 *_Nonnull certificate) {
    EVP_PKEY *key = X509_get0_pubkey(certificate);
    if (key == NULL || EVP_PKEY_get_base_id(key) != EVP_PKEY_EC) { ERR_clear_error(); return NULL; }
    EC_KEY *ec = EVP_PKEY_get1_EC_KEY(key);
    if (ec == NULL) { ERR_clear_error(); return NULL; }
    const EC_GROUP *group = EC_KEY_get0_group(ec);
    if (group == NULL || EC_GROUP_get_curve_name(group) != NID_X9_62_prime256v1) {
        EC_KEY_free(ec);
        ERR_clear_error();
        return NULL;
    }
    return ec;
}

/// The P-256 public key of an EVP_PKEY (private or public) as an EC_KEY, or NULL.
static inline EC_KEY *_Nullable wxpay_pkey_p256_key(EVP_PKEY *_Nonnull key) {
    if (EVP_PKEY_get_base_id(key) != EVP_PKEY_EC) return NULL;
    EC_KEY *ec = EVP_PKEY_get1_EC_KEY(key);
    if (ec == NULL) { ERR_clear_error(); return NULL; }
    const EC_GROUP *group = EC_KEY_get0_group(ec);
    if (group == NULL || EC_GROUP_get_curve_name(group) != NID_X9_62_prime256v1) {
        EC_KEY_free(ec);
        return NULL;
    }
    return ec;
}

/// Verifies a raw r‖s signature (64 bytes) over a SHA-256 digest with a P-256 key. Returns 1 only
/// for a valid signature. ECDSA_do_verify skips the EVP provider fetch and context allocation a
/// one-shot EVP verify pays, which is a measurable part of one verification.
static inline int wxpay_p256_verify_raw(EC_KEY *_Nonnull key, const unsigned char *_Nonnull digest,
                                        const unsigned char *_Nonnull signature) {
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

/// A DER ECDSA-Sig-Value (SEQUENCE of two INTEGERs) as raw r‖s, each left-padded to `half`
/// bytes (32 for P-256). Returns 1 on success; 0 for malformed DER or an integer longer than
/// `half` bytes.
static inline int wxpay_ecdsa_der_to_raw(const unsigned char *_Nonnull der, size_t length,
                                         unsigned char *_Nonnull raw, int half) {
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

/// Raw r‖s (`2 * half` bytes) as DER into `out` (at least 2 * half + 8 bytes); returns the DER
/// length, or 0.
static inline int wxpay_ecdsa_raw_to_der(const unsigned char *_Nonnull raw, int half, unsigned char *_Nonnull out) {
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

/// Signs `length` bytes with `key` and SHA-256 (EVP_DigestSign: DER output) into `out` (at least
/// 80 bytes for P-256); returns the DER length, or 0.
static inline int wxpay_pkey_sign_sha256(EVP_PKEY *_Nonnull key, const void *_Nonnull data, size_t length,
                                         unsigned char *_Nonnull out, size_t capacity) {
    EVP_MD_CTX *context = EVP_MD_CTX_new();
    size_t written = capacity;
    int ok = context != NULL && EVP_DigestSignInit(context, NULL, EVP_sha256(), NULL, key) == 1
        && EVP_DigestSign(context, out, &written, (const unsigned char *)data, length) == 1;
    EVP_MD_CTX_free(context);
    ERR_clear_error();
    return ok ? (int)written : 0;
}

/// A private key from PEM (PKCS#8 `BEGIN PRIVATE KEY`, as App Store Connect's .p8 files, or
/// `BEGIN EC PRIVATE KEY`), or NULL.
static inline EVP_PKEY *_Nullable wxpay_pkey_private_from_pem(const char *_Nonnull pem, size_t length) {
    BIO *bio = BIO_new_mem_buf(pem, (int)length);
    if (bio == NULL) return NULL;
    EVP_PKEY *key = PEM_read_bio_PrivateKey(bio, NULL, NULL, NULL);
    BIO_free(bio);
    ERR_clear_error();
    return key;
}

/// A public key from PEM (`BEGIN PUBLIC KEY`), or NULL.
static inline EVP_PKEY *_Nullable wxpay_pkey_public_from_pem(const char *_Nonnull pem, size_t length) {
    BIO *bio = BIO_new_mem_buf(pem, (int)length);
    if (bio == NULL) return NULL;
    EVP_PKEY *key = PEM_read_bio_PUBKEY(bio, NULL, NULL, NULL);
    BIO_free(bio);
    ERR_clear_error();
    return key;
}

/// Copies what a memory BIO holds into a buffer the caller frees with `wxpay_openssl_free`, and
/// frees the BIO; returns the length, or 0 when `written` is not 1 or the BIO is empty.
static inline int wxpay_bio_take(BIO *_Nonnull bio, int written, char *_Nullable *_Nonnull out) {
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

/// PEM text of `key` (PKCS#8 private key when `private_part`, else SubjectPublicKeyInfo) into a
/// buffer the caller frees with `wxpay_openssl_free`; returns its length, or 0.
static inline int wxpay_pkey_to_pem(EVP_PKEY *_Nonnull key, int private_part, char *_Nullable *_Nonnull out) {
    *out = NULL;
    BIO *bio = BIO_new(BIO_s_mem());
    if (bio == NULL) return 0;
    int written = private_part ? PEM_write_bio_PKCS8PrivateKey(bio, key, NULL, NULL, 0, NULL, NULL)
                               : PEM_write_bio_PUBKEY(bio, key);
    return wxpay_bio_take(bio, written, out);
}

/// A new EC key pair on the curve `nid` (NID_X9_62_prime256v1, NID_secp384r1), named-curve
/// encoded, or NULL.
static inline EVP_PKEY *_Nullable wxpay_ec_generate(int nid) {
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

// MARK: - Issuing certificates (the simulator's PKI and the tests' hostile chains)

static inline int wxpay_x509_add_extension(X509 *_Nonnull certificate, X509V3_CTX *_Nonnull context, int nid,
                                           const char *_Nonnull value) {
    X509_EXTENSION *extension = X509V3_EXT_conf_nid(NULL, context, nid, value);
    if (extension == NULL) return 0;
    int ok = X509_add_ext(certificate, extension, -1);
    X509_EXTENSION_free(extension);
    return ok == 1;
}

/// Adds a non-critical extension `oid` whose value is DER NULL (05 00), the shape of Apple's
/// marker extensions (1.2.840.113635.100.6.11.1 on receipt-signing leaves, …6.2.1 on the WWDR
/// intermediate).
static inline int wxpay_x509_add_marker_extension(X509 *_Nonnull certificate, const char *_Nonnull oid) {
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

/// Issues a v3 certificate for `subject_key`, signed by `issuer_key` with `digest` (SHA-256 or
/// SHA-384). `issuer` NULL makes it self-signed. `common_name`, `organization` and `country` name
/// the subject (the issuer's subject becomes the issuer name). A CA gets basicConstraints
/// critical CA:TRUE (with `path_length` when >= 0) and keyUsage keyCertSign, cRLSign; a leaf
/// CA:FALSE and digitalSignature. Every certificate gets a subject key identifier, and those not
/// self-signed an authority key identifier, as X509_V_FLAG_X509_STRICT demands. `marker_oid`, when
/// not NULL, adds that non-critical marker extension. Returns NULL on failure.
static inline X509 *_Nullable wxpay_x509_issue(
    EVP_PKEY *_Nonnull subject_key, const char *_Nonnull common_name, const char *_Nonnull organization,
    const char *_Nonnull country, X509 *_Nullable issuer, EVP_PKEY *_Nonnull issuer_key, uint64_t serial,
    int64_t not_before, int64_t not_after, int is_ca, int path_length, const char *_Nullable marker_oid,
    int use_sha384) {
    X509 *certificate = X509_new();
    if (certificate == NULL) return NULL;
    int ok = X509_set_version(certificate, 2) == 1;
    ASN1_INTEGER *serial_number = ASN1_INTEGER_new();
    BIGNUM *serial_bn = BN_new();
    ok = ok && serial_number != NULL && serial_bn != NULL && BN_set_word(serial_bn, (BN_ULONG)serial) == 1
        && BN_to_ASN1_INTEGER(serial_bn, serial_number) != NULL
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

/// PEM text of `certificate` into a buffer the caller frees with `wxpay_openssl_free`; returns
/// its length, or 0.
static inline int wxpay_x509_to_pem(X509 *_Nonnull certificate, char *_Nullable *_Nonnull out) {
    *out = NULL;
    BIO *bio = BIO_new(BIO_s_mem());
    if (bio == NULL) return 0;
    return wxpay_bio_take(bio, PEM_write_bio_X509(bio, certificate), out);
}
#endif

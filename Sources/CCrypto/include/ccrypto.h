// SPDX-License-Identifier: Apache-2.0
// The C half of the Crypto module: the OpenSSL work Swift cannot do itself, or not simply.
//
// Why C here: STACK_OF(X509), OPENSSL_free, BIO_get_mem_data and EVP_RSA_gen are function-like
// macros Swift cannot call, and building a certificate takes a dozen calls whose failures are
// simpler to unwind in one C function than across the Swift boundary. Only Crypto calls these
// (Tests/CCryptoTests calls them directly). Every function returns NULL / 0 on failure and leaves
// OpenSSL's error queue cleared: libcurl reads that queue after its own TLS calls on the same
// thread, so nothing may linger there.
#ifndef WXPAY_CCRYPTO_H
#define WXPAY_CCRYPTO_H
// As in the COpenSSL shim: the EC_KEY calls below (the fast P-256 verify) are deprecated in
// OpenSSL 3 but run the same code; both headers must agree on this before OpenSSL's own.
#ifndef OPENSSL_SUPPRESS_DEPRECATED
#define OPENSSL_SUPPRESS_DEPRECATED 1
#endif
#include <openssl/cms.h>
#include <openssl/ec.h>
#include <openssl/evp.h>
#include <openssl/sha.h>
#include <openssl/x509.h>
#include <openssl/x509_vfy.h>
#include <stddef.h>
#include <stdint.h>

// MARK: - HMAC-SHA256

/// Absorbs (key ^ ipad) and (key ^ opad) into two SHA-256 states a caller keeps (the key
/// schedule); `key` may be NULL when `key_length` is 0.
void wxpay_hmac_sha256_key(const void *_Nullable key, size_t key_length, SHA256_CTX *_Nonnull inner,
                           SHA256_CTX *_Nonnull outer);

/// HMAC-SHA256 of `length` bytes from states made by `wxpay_hmac_sha256_key`, into `out` (32
/// bytes); `data` may be NULL when `length` is 0. The states are copied, never changed.
void wxpay_hmac_sha256_keyed(const SHA256_CTX *_Nonnull inner, const SHA256_CTX *_Nonnull outer,
                             const void *_Nullable data, size_t length, unsigned char *_Nonnull out);

// MARK: - Certificates

/// A certificate from DER, or NULL. Trailing bytes after the certificate are refused.
X509 *_Nullable wxpay_x509_from_der(const unsigned char *_Nonnull der, size_t length);

/// The first certificate of a PEM text, or NULL.
X509 *_Nullable wxpay_x509_from_pem(const char *_Nonnull pem, size_t length);

/// The DER encoding of `certificate` into a buffer the caller frees with `wxpay_openssl_free`;
/// returns its length, or 0.
int wxpay_x509_to_der(X509 *_Nonnull certificate, unsigned char *_Nullable *_Nonnull out);

/// PEM text of `certificate` into a buffer the caller frees with `wxpay_openssl_free`; returns
/// its length, or 0.
int wxpay_x509_to_pem(X509 *_Nonnull certificate, char *_Nullable *_Nonnull out);

/// Whether `certificate` carries the extension `oid` (dotted text), critical or not.
int wxpay_x509_has_extension(const X509 *_Nonnull certificate, const char *_Nonnull oid);

/// notBefore and notAfter as seconds since 1970. Returns 1 on success.
int wxpay_x509_validity(const X509 *_Nonnull certificate, int64_t *_Nonnull not_before, int64_t *_Nonnull not_after);

/// The serial number's magnitude, big-endian, without leading zero bytes (one zero byte for 0),
/// into `out` (`capacity` bytes; X.509 allows 20). Returns the length, 0 when it does not fit,
/// -1 for a negative serial (which RFC 5280 forbids).
int wxpay_x509_serial(const X509 *_Nonnull certificate, unsigned char *_Nonnull out, size_t capacity);

/// A trust store holding exactly `count` roots, or NULL.
X509_STORE *_Nullable wxpay_x509_store_new(X509 *_Nonnull const *_Nonnull roots, int count);

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
/// `store`, at `at` seconds since 1970, with X509_V_FLAG_X509_STRICT (as Apple's own library
/// does). The path must be exactly three certificates and pass through `intermediate`; the
/// verified root is compared with `expected_root` when it is not NULL.
int wxpay_x509_verify_chain(X509_STORE *_Nonnull store, X509 *_Nonnull leaf, X509 *_Nonnull intermediate,
                            X509 *_Nullable expected_root, int64_t at, int *_Nonnull error);

/// `wxpay_x509_verify_chain` with the verification `flags` (X509_V_FLAG_*; 0: OpenSSL's default
/// profile) instead of X509_V_FLAG_X509_STRICT: app receipts chain to Apple's older root, whose
/// certificates predate the strict profile.
int wxpay_x509_verify_chain_flags(X509_STORE *_Nonnull store, X509 *_Nonnull leaf, X509 *_Nonnull intermediate,
                                  X509 *_Nullable expected_root, int64_t at, unsigned long flags, int *_Nonnull error);

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
int wxpay_cms_verify_signer(CMS_ContentInfo *_Nonnull cms, X509_STORE *_Nonnull store, int64_t at,
                            unsigned long chain_flags, X509 *_Nullable *_Nonnull leaf,
                            X509 *_Nullable *_Nonnull intermediate, int *_Nonnull error);

/// Issues a v3 certificate for `subject_key`, signed by `issuer_key` with SHA-384 when
/// `use_sha384`, else SHA-256. `issuer` NULL makes it self-signed. `common_name`, `organization`
/// and `country` name the subject (the issuer's subject becomes the issuer name). A CA gets
/// basicConstraints critical CA:TRUE (with `path_length` when >= 0) and keyUsage keyCertSign,
/// cRLSign; a leaf CA:FALSE and digitalSignature. Every certificate gets a subject key identifier,
/// and those not self-signed an authority key identifier, as X509_V_FLAG_X509_STRICT demands.
/// `marker_oid`, when not NULL, adds that non-critical extension with a DER NULL value (the shape
/// of Apple's marker extensions). `serial` is big-endian, `serial_length` bytes. Returns NULL on
/// failure.
X509 *_Nullable wxpay_x509_issue(EVP_PKEY *_Nonnull subject_key, const char *_Nonnull common_name,
                                 const char *_Nonnull organization, const char *_Nonnull country,
                                 X509 *_Nullable issuer, EVP_PKEY *_Nonnull issuer_key,
                                 const unsigned char *_Nonnull serial, size_t serial_length, int64_t not_before,
                                 int64_t not_after, int is_ca, int path_length, const char *_Nullable marker_oid,
                                 int use_sha384);

// MARK: - Keys

/// A private key from PEM: PKCS#8 (`BEGIN PRIVATE KEY`, `BEGIN ENCRYPTED PRIVATE KEY`), PKCS#1
/// (`BEGIN RSA PRIVATE KEY`) or SEC1 (`BEGIN EC PRIVATE KEY`), or NULL. An encrypted key needs
/// `password`; with NULL, OpenSSL is never let to prompt for one on a terminal.
EVP_PKEY *_Nullable wxpay_pkey_private_from_pem(const char *_Nonnull pem, size_t length,
                                                const char *_Nullable password);

/// A public key from PEM: SubjectPublicKeyInfo (`BEGIN PUBLIC KEY`) or PKCS#1 (`BEGIN RSA PUBLIC
/// KEY`), or NULL.
EVP_PKEY *_Nullable wxpay_pkey_public_from_pem(const char *_Nonnull pem, size_t length);

/// PEM text of `key` (PKCS#8 private key when `private_part`, else SubjectPublicKeyInfo) into a
/// buffer the caller frees with `wxpay_openssl_free`; returns its length, or 0.
int wxpay_pkey_to_pem(EVP_PKEY *_Nonnull key, int private_part, char *_Nullable *_Nonnull out);

/// A new EC key pair on the curve `nid` (NID_X9_62_prime256v1, NID_secp384r1), named-curve
/// encoded, or NULL.
EVP_PKEY *_Nullable wxpay_ec_generate(int nid);

/// A new RSA key pair of `bits` bits (public exponent 65537), or NULL.
EVP_PKEY *_Nullable wxpay_rsa_generate(unsigned int bits);

/// The curve of an EC key (`NID_…`), or 0 when `key` is not EC.
int wxpay_pkey_ec_curve(const EVP_PKEY *_Nonnull key);

/// Signs `length` bytes with `key` and the digest `md` (EVP_DigestSign): DER ECDSA-Sig-Value for
/// an EC key, PKCS#1 v1.5 for RSA, into `out` (`capacity` bytes, at least EVP_PKEY_get_size);
/// returns the signature's length, or 0.
int wxpay_pkey_sign(EVP_PKEY *_Nonnull key, const EVP_MD *_Nonnull md, const void *_Nonnull data, size_t length,
                    unsigned char *_Nonnull out, size_t capacity);

/// Whether `signature` signs `length` bytes under `key` with the digest `md` (EVP_DigestVerify;
/// PKCS#1 v1.5 for RSA, DER ECDSA for EC). 1 valid, 0 anything else.
int wxpay_pkey_verify(EVP_PKEY *_Nonnull key, const EVP_MD *_Nonnull md, const void *_Nonnull data, size_t length,
                      const unsigned char *_Nonnull signature, size_t signature_length);

/// Whether `signature` is the SHA256withRSA (PKCS#1 v1.5) signature of `length` bytes under the
/// RSA key `key`, through the key's RSA directly (rsa.c: WeChat Pay v3's hot path). 1 valid, 0
/// anything else, a key that is not RSA included.
int wxpay_rsa_sha256_verify(EVP_PKEY *_Nonnull key, const void *_Nonnull data, size_t length,
                            const unsigned char *_Nonnull signature, size_t signature_length);

/// The SHA256withRSA (PKCS#1 v1.5) signature of `length` bytes with the RSA private key `key`,
/// through the key's RSA directly (rsa.c); written to `out` (`capacity` at least the modulus'
/// size). Returns the signature's length, or 0 (a key that is not RSA included).
int wxpay_rsa_sha256_sign(EVP_PKEY *_Nonnull key, const void *_Nonnull data, size_t length,
                          unsigned char *_Nonnull out, size_t capacity);

/// An RSA-2048 public key prepared for the public operation on AVX-512 IFMA (rsa2048_ifma.c).
typedef struct wxpay_rsa2048_ifma wxpay_rsa2048_ifma;

/// Whether keys are prepared at all: the CPU has AVX-512F and IFMA (and the OS saves ZMM state),
/// and OPENSSL_ia32cap is not set (the operator steers OpenSSL's CPU dispatch: we stay off too).
int wxpay_rsa2048_ifma_supported(void);

/// `key` prepared for the IFMA public operation, or NULL when it cannot be: not supported
/// (above), a key that is not RSA with a 2048-bit modulus and an exponent below 2^63, or a
/// prepared key that does not compute what BN_mod_exp does for its self-check values. Free with
/// `wxpay_rsa2048_ifma_free`; a prepared key is never changed, so threads may share it.
wxpay_rsa2048_ifma *_Nullable wxpay_rsa2048_ifma_new(EVP_PKEY *_Nonnull key);

void wxpay_rsa2048_ifma_free(wxpay_rsa2048_ifma *_Nullable key);

/// signature^e mod n for a 256-byte big-endian `signature`, into `out` (256 bytes). Returns 1, or
/// 0 when the signature is not below the modulus.
int wxpay_rsa2048_ifma_public(const wxpay_rsa2048_ifma *_Nonnull key, const unsigned char *_Nonnull signature,
                              unsigned char *_Nonnull out);

/// `wxpay_rsa_sha256_verify` with the public operation on IFMA when `prepared` is given: 1 only
/// when the result is byte for byte the PKCS#1 v1.5 encoding of the data's SHA-256. Anything else
/// is asked of `wxpay_rsa_sha256_verify` again, so the answer is always RSA_verify's.
int wxpay_rsa_sha256_verify_prepared(const wxpay_rsa2048_ifma *_Nullable prepared, EVP_PKEY *_Nonnull key,
                                     const void *_Nonnull data, size_t length, const unsigned char *_Nonnull signature,
                                     size_t signature_length);

// MARK: - P-256 and ES256

/// The P-256 public key of `certificate` as an EC_KEY the caller frees with `EC_KEY_free`, or NULL
/// when the key is not EC on P-256 (named curve).
EC_KEY *_Nullable wxpay_x509_p256_key(const X509 *_Nonnull certificate);

/// The P-256 public key of an EVP_PKEY (private or public) as an EC_KEY, or NULL.
EC_KEY *_Nullable wxpay_pkey_p256_key(EVP_PKEY *_Nonnull key);

/// Verifies a raw r‖s signature (64 bytes) over a SHA-256 digest with a P-256 key. Returns 1 only
/// for a valid signature. ECDSA_do_verify skips the EVP provider fetch and context allocation a
/// one-shot EVP verify pays, which is a measurable part of one verification.
int wxpay_p256_verify_raw(EC_KEY *_Nonnull key, const unsigned char *_Nonnull digest,
                          const unsigned char *_Nonnull signature);

/// A DER ECDSA-Sig-Value (SEQUENCE of two INTEGERs) as raw r‖s, each left-padded to `half`
/// bytes (32 for P-256). Returns 1 on success; 0 for malformed DER or an integer longer than
/// `half` bytes.
int wxpay_ecdsa_der_to_raw(const unsigned char *_Nonnull der, size_t length, unsigned char *_Nonnull raw, int half);

/// Raw r‖s (`2 * half` bytes) as DER into `out` (at least 2 * half + 8 bytes); returns the DER
/// length, or 0.
int wxpay_ecdsa_raw_to_der(const unsigned char *_Nonnull raw, int half, unsigned char *_Nonnull out);

#endif

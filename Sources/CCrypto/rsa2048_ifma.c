// SPDX-License-Identifier: Apache-2.0
// The RSA-2048 public operation (s^e mod n) on AVX-512 IFMA, for verifying WeChat Pay API v3's
// SHA256withRSA signatures.
//
// Why: every v3 notify and answer is verified, and on OpenSSL 3.0 the public operation runs
// through BN_mod_exp_mont on 64-bit words (about 0.9 µs per 2048-bit Montgomery multiplication
// on the machines we measure); OpenSSL uses IFMA only for private-key CRT halves. The same
// exponentiation in radix 2^52 with VPMADD52LUQ/HUQ takes under half the time, which is what
// brings a whole notify's open (headers, verify, envelope, AES-GCM, transaction) within reach of
// OpenSSL's bare verify rate. It runs on 256-bit registers, as OpenSSL's own IFMA code does:
// 512-bit ones were a quarter faster alone, but they slowed the core's other work by about 3 %
// for a while after each verify (the frequency a core keeps for heavy 512-bit instructions), which
// at a gateway's notify rate cost more than they saved (BENCHMARKS.md).
//
// Only public data goes through here (the signature, the modulus, the exponent): nothing needs to
// be constant-time. A prepared key is checked against BN_mod_exp before it is handed out, and
// `wxpay_rsa_sha256_verify_prepared` asks RSA_verify again whenever the fast path finds no match,
// so this code can make an answer faster but never different: a valid signature is never refused
// because of it, and it accepts only a result equal byte for byte to the PKCS#1 v1.5 encoding of
// the message's digest.
//
// The arithmetic: almost-Montgomery multiplication (AMM) with R = 2^2080 over 40 limbs of 52 bits,
// operands and results below 2n (4n < R keeps them there without a subtraction), one limb of b per
// step (operand scanning). The products' low halves go into the columns they belong to, the
// columns shift down one limb, then the high halves go in: they belong one column up, which after
// the shift is the same lane. Column 0, the one the next step's Montgomery factor y depends
// on, is kept exactly in a scalar register (the vectors' lane 0 is never read). A lane gains at
// most 4 * 2^52 per step (two low and two high halves) and lives at most 40 steps, so nothing
// overflows 64 bits; the carries are propagated once, at the end of each multiplication.
#include "internal.h"
#include <cpuid.h>
#include <immintrin.h>
#include <openssl/bn.h>
#include <openssl/err.h>
#include <openssl/obj_mac.h>
#include <openssl/rsa.h>
#include <openssl/sha.h>
#include <stdatomic.h>
#include <stdlib.h>
#include <string.h>

#define LIMBS 40
#define BYTES 256
#define MASK52 ((1ULL << 52) - 1)

struct wxpay_rsa2048_ifma {
    uint64_t n[LIMBS];
    /// R^2 mod n: multiplying by it takes a value into Montgomery form.
    uint64_t rr[LIMBS];
    /// -n^-1 mod 2^52.
    uint64_t k0;
    uint64_t e;
    unsigned char n_bytes[BYTES];
};

/// AVX-512F, VL and IFMA, and an OS that saves the AVX-512 state (XCR0: SSE, AVX, opmask, ZMM).
static int cpu_has_ifma(void) {
    unsigned int a, b, c, d;
    if (!__get_cpuid(1, &a, &b, &c, &d) || !(c & bit_OSXSAVE)) return 0;
    unsigned int xcr0_low, xcr0_high;
    __asm__ volatile("xgetbv" : "=a"(xcr0_low), "=d"(xcr0_high) : "c"(0));
    if ((xcr0_low & 0xE6) != 0xE6) return 0;
    if (!__get_cpuid_count(7, 0, &a, &b, &c, &d)) return 0;
    return (b & bit_AVX512F) && (b & bit_AVX512VL) && (b & bit_AVX512IFMA);
}

/// Whether to use IFMA at all: the CPU has it and the operator is not steering OpenSSL's own CPU
/// dispatch (OPENSSL_ia32cap set, for instance to keep AVX-512 off): then we stay off it too.
int wxpay_rsa2048_ifma_supported(void) {
    static atomic_int supported = -1; // asked once; threads that race all compute the same answer
    int answer = atomic_load_explicit(&supported, memory_order_relaxed);
    if (answer < 0) {
        answer = getenv("OPENSSL_ia32cap") == NULL && cpu_has_ifma();
        atomic_store_explicit(&supported, answer, memory_order_relaxed);
    }
    return answer;
}

__attribute__((target("avx512f,avx512vl,avx512ifma")))
static inline void amm52x40(uint64_t *res, const uint64_t *a, const uint64_t *b, const struct wxpay_rsa2048_ifma *key) {
    const uint64_t *m = key->n;
    const uint64_t k0 = key->k0;
    const __m256i zero = _mm256_setzero_si256();
    __m256i A[10], M[10], C[10]; // C: the columns, four limbs a register
    for (int r = 0; r < 10; r++) {
        A[r] = _mm256_loadu_si256((const __m256i *)(a + 4 * r));
        M[r] = _mm256_loadu_si256((const __m256i *)(m + 4 * r));
        C[r] = zero;
    }
    const uint64_t a0 = a[0], a1 = a[1], m0 = m[0], m1 = m[1];
    uint64_t column0 = 0;
    for (int i = 0; i < LIMBS; i++) {
        const uint64_t bi = b[i];
        const __m256i B = _mm256_set1_epi64x((long long)bi);
        // Column 1 before this step's products: it becomes column 0 after the shift.
        const uint64_t column1 = (uint64_t)_mm256_extract_epi64(C[0], 1);
        const unsigned __int128 a0bi = (unsigned __int128)a0 * bi;
        column0 += (uint64_t)a0bi & MASK52;
        const uint64_t y = (column0 * k0) & MASK52;
        const __m256i Y = _mm256_set1_epi64x((long long)y);
        const unsigned __int128 m0y = (unsigned __int128)m0 * y;
        // column0 + lo(m0*y) is 0 mod 2^52 by the choice of y: what is left is its carry.
        const uint64_t carry = (column0 + ((uint64_t)m0y & MASK52)) >> 52;
        column0 = column1 + ((a1 * bi) & MASK52) + ((m1 * y) & MASK52) + (uint64_t)(a0bi >> 52) + (uint64_t)(m0y >> 52)
                + carry;
        for (int r = 0; r < 10; r++) {
            C[r] = _mm256_madd52lo_epu64(C[r], A[r], B);
            C[r] = _mm256_madd52lo_epu64(C[r], M[r], Y);
        }
        for (int r = 0; r < 9; r++) C[r] = _mm256_alignr_epi64(C[r + 1], C[r], 1);
        C[9] = _mm256_alignr_epi64(zero, C[9], 1);
        for (int r = 0; r < 10; r++) {
            C[r] = _mm256_madd52hi_epu64(C[r], A[r], B);
            C[r] = _mm256_madd52hi_epu64(C[r], M[r], Y);
        }
    }
    uint64_t columns[LIMBS];
    for (int r = 0; r < 10; r++) _mm256_storeu_si256((__m256i *)(columns + 4 * r), C[r]);
    uint64_t carry = column0 >> 52;
    res[0] = column0 & MASK52;
    for (int j = 1; j < LIMBS; j++) {
        const uint64_t v = columns[j] + carry;
        res[j] = v & MASK52;
        carry = v >> 52;
    }
}

/// 256 big-endian bytes into 40 limbs of 52 bits, least significant first.
static void limbs_from_bytes(uint64_t *limbs, const unsigned char *bytes) {
    memset(limbs, 0, LIMBS * sizeof *limbs);
    for (int i = 0; i < BYTES; i++) {
        const int bit = 8 * (BYTES - 1 - i);
        const uint64_t byte = bytes[i];
        limbs[bit / 52] |= (byte << (bit % 52)) & MASK52;
        if (bit % 52 > 44) limbs[bit / 52 + 1] |= byte >> (52 - bit % 52);
    }
}

/// 40 normalised limbs (a value below 2^2048) into 256 big-endian bytes.
static void bytes_from_limbs(unsigned char *bytes, const uint64_t *limbs) {
    for (int i = 0; i < BYTES; i++) {
        const int bit = 8 * (BYTES - 1 - i);
        uint64_t v = limbs[bit / 52] >> (bit % 52);
        if (bit % 52 > 44) v |= limbs[bit / 52 + 1] << (52 - bit % 52);
        bytes[i] = (unsigned char)v;
    }
}

/// a - n when a ≥ n (both normalised limbs; a < 2n).
static void reduce_once(uint64_t *a, const uint64_t *n) {
    for (int j = LIMBS - 1; j >= 0; j--) {
        if (a[j] == n[j]) continue;
        if (a[j] < n[j]) return;
        break;
    }
    uint64_t borrow = 0;
    for (int j = 0; j < LIMBS; j++) {
        const uint64_t v = a[j] - n[j] - borrow;
        borrow = v >> 63;
        a[j] = v & MASK52;
    }
}

__attribute__((target("avx512f,avx512vl,avx512ifma")))
static int public_operation(const struct wxpay_rsa2048_ifma *key, const unsigned char *signature, unsigned char *out) {
    if (memcmp(signature, key->n_bytes, BYTES) >= 0) return 0;
    uint64_t s[LIMBS], s_mont[LIMBS], x[LIMBS];
    const uint64_t one[LIMBS] = {1};
    limbs_from_bytes(s, signature);
    amm52x40(s_mont, s, key->rr, key);
    memcpy(x, s_mont, sizeof x);
    for (int bit = 62 - __builtin_clzll(key->e); bit >= 0; bit--) {
        amm52x40(x, x, x, key);
        if ((key->e >> bit) & 1) amm52x40(x, x, s_mont, key);
    }
    amm52x40(x, x, one, key); // out of Montgomery form: at most n
    reduce_once(x, key->n);
    bytes_from_limbs(out, x);
    return 1;
}

void wxpay_rsa2048_ifma_free(wxpay_rsa2048_ifma *key) { free(key); }

/// Whether the prepared key computes what BN_mod_exp computes for a few values: 2, n - 1 and
/// 2^2047 - 1 (every limb full).
static int self_check(const wxpay_rsa2048_ifma *key, const BIGNUM *n, const BIGNUM *e, BN_CTX *context) {
    BIGNUM *s = BN_CTX_get(context), *want = BN_CTX_get(context);
    if (want == NULL) return 0;
    unsigned char input[BYTES], expected[BYTES], got[BYTES];
    for (int round = 0; round < 3; round++) {
        int ok = round == 0 ? BN_set_word(s, 2)
               : round == 1 ? BN_copy(s, n) != NULL && BN_sub_word(s, 1)
                            : BN_set_word(s, 0) && BN_set_bit(s, 2047) && BN_sub_word(s, 1);
        if (!ok || !BN_mod_exp(want, s, e, n, context) || BN_bn2binpad(s, input, BYTES) != BYTES
            || BN_bn2binpad(want, expected, BYTES) != BYTES)
            return 0;
        if (!public_operation(key, input, got) || memcmp(got, expected, BYTES) != 0) return 0;
    }
    return 1;
}

wxpay_rsa2048_ifma *wxpay_rsa2048_ifma_new(EVP_PKEY *pkey) {
    if (!wxpay_rsa2048_ifma_supported()) return NULL;
    const RSA *rsa = EVP_PKEY_get0_RSA(pkey);
    if (rsa == NULL) {
        ERR_clear_error();
        return NULL;
    }
    const BIGNUM *n = NULL, *e = NULL;
    RSA_get0_key(rsa, &n, &e, NULL);
    if (n == NULL || e == NULL || BN_num_bits(n) != 2048 || !BN_is_odd(n) || BN_num_bits(e) > 63 || BN_num_bits(e) < 2) {
        return NULL;
    }
    wxpay_rsa2048_ifma *key = calloc(1, sizeof *key);
    BN_CTX *context = BN_CTX_new();
    if (key == NULL || context == NULL) goto fail;
    BN_CTX_start(context);
    BIGNUM *rr = BN_CTX_get(context);
    unsigned char bytes[BYTES];
    if (rr == NULL || BN_bn2binpad(n, key->n_bytes, BYTES) != BYTES || !BN_set_bit(rr, 2 * 52 * LIMBS)
        || !BN_mod(rr, rr, n, context) || BN_bn2binpad(rr, bytes, BYTES) != BYTES)
        goto fail;
    limbs_from_bytes(key->n, key->n_bytes);
    limbs_from_bytes(key->rr, bytes);
    // n^-1 mod 2^64 by Newton's iteration (each step doubles the correct low bits; n is odd).
    uint64_t inverse = 1;
    for (int i = 0; i < 6; i++) inverse *= 2 - key->n[0] * inverse;
    key->k0 = (0 - inverse) & MASK52;
    key->e = BN_get_word(e);
    if (!self_check(key, n, e, context)) goto fail;
    BN_CTX_end(context);
    BN_CTX_free(context);
    return key;
fail:
    if (context != NULL) {
        BN_CTX_end(context);
        BN_CTX_free(context);
    }
    free(key);
    ERR_clear_error();
    return NULL;
}

int wxpay_rsa2048_ifma_public(const wxpay_rsa2048_ifma *key, const unsigned char *signature, unsigned char *out) {
    return public_operation(key, signature, out);
}

/// The DER DigestInfo prefix of SHA-256 in PKCS#1 v1.5 (RFC 8017, section 9.2, note 1).
static const unsigned char sha256_digest_info[19] = {0x30, 0x31, 0x30, 0x0d, 0x06, 0x09, 0x60, 0x86, 0x48, 0x01,
                                                     0x65, 0x03, 0x04, 0x02, 0x01, 0x05, 0x00, 0x04, 0x20};

int wxpay_rsa_sha256_verify_prepared(const wxpay_rsa2048_ifma *prepared, EVP_PKEY *key, const void *data, size_t length,
                                     const unsigned char *signature, size_t signature_length) {
    if (prepared != NULL && signature_length == BYTES) {
        unsigned char encoded[BYTES], expected[BYTES];
        if (public_operation(prepared, signature, encoded)) {
            // EMSA-PKCS1-v1_5: 00 01 FF…FF 00 DigestInfo digest.
            const size_t digest_at = BYTES - SHA256_DIGEST_LENGTH, info_at = digest_at - sizeof sha256_digest_info;
            expected[0] = 0x00;
            expected[1] = 0x01;
            memset(expected + 2, 0xFF, info_at - 3);
            expected[info_at - 1] = 0x00;
            memcpy(expected + info_at, sha256_digest_info, sizeof sha256_digest_info);
            SHA256((const unsigned char *)data, length, expected + digest_at);
            if (memcmp(encoded, expected, BYTES) == 0) return 1;
        }
    }
    return wxpay_rsa_sha256_verify(key, data, length, signature, signature_length);
}

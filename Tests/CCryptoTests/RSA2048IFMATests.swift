// SPDX-License-Identifier: Apache-2.0
import CCrypto
import COpenSSL
import Testing

/// The RSA-2048 public operation on AVX-512 IFMA (rsa2048_ifma.c) against OpenSSL's BN_mod_exp,
/// and the verify built on it against RSA_verify. On a CPU without IFMA no key is prepared; the
/// tests that need a prepared key say so and do not run there.
struct RSA2048IFMATests {
    /// Whether this machine prepares keys at all (AVX-512 IFMA, OPENSSL_ia32cap unset): asked of
    /// the CPU, not of a preparation, so a broken implementation fails these tests instead of
    /// skipping them.
    static let available = wxpay_rsa2048_ifma_supported() == 1

    /// A key's modulus and exponent as BIGNUMs the caller frees.
    static func parameters(_ key: OpaquePointer) throws -> (n: OpaquePointer, e: OpaquePointer) {
        var n: OpaquePointer?, e: OpaquePointer?
        try #require(EVP_PKEY_get_bn_param(key, "n", &n) == 1 && EVP_PKEY_get_bn_param(key, "e", &e) == 1)
        return (try #require(n), try #require(e))
    }

    static func bytes(_ number: OpaquePointer) -> [UInt8] {
        var out = [UInt8](repeating: 0, count: 256)
        #expect(BN_bn2binpad(number, &out, 256) == 256)
        return out
    }

    @Test("the public operation computes BN_mod_exp's s^e mod n for random values and the edges of several keys, and refuses s ≥ n",
          .enabled(if: available, "the CPU has no AVX-512 IFMA"))
    func publicOperationMatchesOpenSSL() throws {
        let context = try #require(BN_CTX_new())
        defer { BN_CTX_free(context) }
        let s = try #require(BN_new()), expected = try #require(BN_new())
        defer { BN_free(s); BN_free(expected) }
        for _ in 0..<3 {
            let key = try #require(wxpay_rsa_generate(2048))
            defer { EVP_PKEY_free(key) }
            let prepared = try #require(wxpay_rsa2048_ifma_new(key))
            defer { wxpay_rsa2048_ifma_free(prepared) }
            let (n, e) = try Self.parameters(key)
            defer { BN_free(n); BN_free(e) }
            var mismatches = 0
            for round in 0..<1_500 {
                switch round {
                case 0: BN_set_word(s, 0)
                case 1: BN_set_word(s, 1)
                case 2: BN_copy(s, n); BN_sub_word(s, 1)
                case 3: BN_copy(s, n); BN_sub_word(s, 2)
                case 4: BN_set_word(s, 0); BN_set_bit(s, 2047); BN_sub_word(s, 1)  // every limb full
                case 5: BN_set_word(s, 0); BN_set_bit(s, 2047)
                default: #expect(BN_rand_range(s, n) == 1)
                }
                #expect(BN_mod_exp(expected, s, e, n, context) == 1)
                var out = [UInt8](repeating: 0xEE, count: 256)
                #expect(wxpay_rsa2048_ifma_public(prepared, Self.bytes(s), &out) == 1)
                if out != Self.bytes(expected) { mismatches += 1 }
            }
            #expect(mismatches == 0)
            var out = [UInt8](repeating: 0, count: 256)
            #expect(wxpay_rsa2048_ifma_public(prepared, Self.bytes(n), &out) == 0)
            #expect(wxpay_rsa2048_ifma_public(prepared, [UInt8](repeating: 0xFF, count: 256), &out) == 0)
        }
        #expect(ERR_peek_error() == 0)
    }

    @Test("the prepared verify accepts a valid signature on the IFMA path itself and leaves every refusal to RSA_verify",
          .enabled(if: available, "the CPU has no AVX-512 IFMA"))
    func preparedVerifyDefersRefusals() throws {
        let signer = try #require(wxpay_rsa_generate(2048)), other = try #require(wxpay_rsa_generate(2048))
        defer { EVP_PKEY_free(signer); EVP_PKEY_free(other) }
        let prepared = try #require(wxpay_rsa2048_ifma_new(signer))
        defer { wxpay_rsa2048_ifma_free(prepared) }
        let message = Array("1554208460\n593BEC0C930BF1AFEB40B4A08C8FB242\n{\"id\":\"EV-2018022511223320873\"}\n".utf8)
        var signature = [UInt8](repeating: 0, count: 256)
        #expect(message.withUnsafeBytes { wxpay_rsa_sha256_sign(signer, $0.baseAddress!, $0.count, &signature, 256) } == 256)
        func verify(_ prepared: OpaquePointer?, _ key: OpaquePointer, _ message: [UInt8], _ signature: [UInt8]) -> Int32 {
            message.withUnsafeBytes { wxpay_rsa_sha256_verify_prepared(prepared, key, $0.baseAddress!, $0.count, signature, signature.count) }
        }
        // Handed another key for the fallback, a valid signature still verifies: the IFMA path accepted it.
        #expect(verify(prepared, other, message, signature) == 1)
        #expect(verify(nil, other, message, signature) == 0)
        #expect(verify(prepared, signer, message, signature) == 1)
        var tampered = signature
        tampered[128] ^= 0x01
        #expect(verify(prepared, signer, message, tampered) == 0)
        var changed = message
        changed[0] ^= 0x01
        #expect(verify(prepared, signer, changed, signature) == 0)
        #expect(verify(prepared, signer, message, Array(signature.dropLast())) == 0)
        #expect(verify(prepared, signer, message, [UInt8](repeating: 0xFF, count: 256)) == 0)
        // The signature of another key: the fast path finds no match and RSA_verify (of `other`) decides.
        var otherSignature = [UInt8](repeating: 0, count: 256)
        #expect(message.withUnsafeBytes { wxpay_rsa_sha256_sign(other, $0.baseAddress!, $0.count, &otherSignature, 256) } == 256)
        #expect(verify(prepared, other, message, otherSignature) == 1)
        #expect(verify(prepared, signer, message, otherSignature) == 0)
        #expect(ERR_peek_error() == 0)
    }

    @Test("only RSA-2048 keys are prepared: a 3072-bit RSA key and an EC key are not, and leave no error queued")
    func onlyRSA2048IsPrepared() throws {
        let large = try #require(wxpay_rsa_generate(3072)), ec = try #require(wxpay_ec_generate(NID_X9_62_prime256v1))
        defer { EVP_PKEY_free(large); EVP_PKEY_free(ec) }
        #expect(wxpay_rsa2048_ifma_new(large) == nil)
        #expect(wxpay_rsa2048_ifma_new(ec) == nil)
        #expect(ERR_peek_error() == 0)
    }
}

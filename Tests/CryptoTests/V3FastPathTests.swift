// SPDX-License-Identifier: Apache-2.0
import Crypto
import Testing

/// The fast paths WeChat Pay v3 verifies and decrypts through agree with the general ones.
struct V3FastPathTests {
    @Test("the RSA fast path accepts exactly what EVP_DigestVerify accepts: valid, tampered, short, empty, another key's")
    func rsaFastPathAgreesWithEVP() throws {
        let key = RSAPrivateKey.generate()
        let other = RSAPrivateKey.generate()
        let message = Array("1554208460\n593BEC0C930BF1AFEB40B4A08C8FB242\n{\"prepay_id\":\"wx1\"}\n".utf8)
        let good = key.signature(for: message)
        var tampered = good
        tampered[10] ^= 0x40
        for (signature, valid) in [(good, true), (tampered, false), (Array(good.prefix(255)), false), ([], false),
                                   (other.signature(for: message), false), (good + [0], false)] {
            #expect(key.publicKey.isValidSignature(signature, for: message) == valid)
            #expect(key.publicKey.key.isValidSignature(signature, for: message, digest: .sha256) == valid)
        }
        #expect(!key.publicKey.isValidSignature(good, for: message + [0x0A]))
    }

    @Test("the RSA signing fast path makes EVP_DigestSign's bytes for every message length and key size, and openssl verifies them")
    func rsaSignFastPathAgreesWithEVP() async throws {
        for bits in [2048, 3072] {
            let key = RSAPrivateKey.generate(bits: bits)
            for message in [[], Array("wxd678efh567hg6787\n1554208460\n5K8264ILTKCH16CQ2502SI8ZNMTM67VS\nwx2017\n".utf8),
                            (0..<4096).map { UInt8(truncatingIfNeeded: $0 &* 7) }] {
                let signature = key.signature(for: message)
                #expect(signature.count == bits / 8)
                #expect(signature == key.key.signature(for: message, digest: .sha256))
                #expect(key.publicKey.isValidSignature(signature, for: message))
            }
        }
        // The openssl tool, on the same key and message, agrees (PKCS#1 v1.5 is deterministic).
        let key = RSAPrivateKey.generate()
        let message = Array("POST\n/v3/pay/transactions/app\n1554208460\n593BEC0C930BF1AFEB40B4A08C8FB242\n{}\n".utf8)
        let openssl = try OpenSSLCommand()
        defer { openssl.remove() }
        try openssl.write("key.pem", Array(key.key.pkcs8PEM.utf8))
        try openssl.write("message", message)
        try await openssl.run(["dgst", "-sha256", "-sign", openssl.path("key.pem"), "-out", openssl.path("signature"),
                               openssl.path("message")])
        #expect(try openssl.read("signature") == key.signature(for: message))
    }

    @Test("an expanded AES-256-GCM key seals and opens as AES256GCM does, and refuses what it refuses")
    func gcmKeyAgreesWithOneShot() throws {
        let keyBytes = Array("a7cde1ZJB1kG2e7VfTs3jQzaWizur8Gb".utf8)
        let key = try AES256GCMKey(keyBytes)
        let nonce = Array("fdasflkja484".utf8)
        for plaintext in [[], Array("x".utf8), (0..<1500).map { UInt8(truncatingIfNeeded: $0) }] {
            for aad in [[], Array("transaction".utf8)] {
                let sealed = try key.seal(plaintext, nonce: nonce, associatedData: aad)
                #expect(sealed == (try AES256GCM.encrypt(plaintext, key: keyBytes, nonce: nonce, associatedData: aad)))
                #expect(try key.open(sealed, nonce: nonce, associatedData: aad) == plaintext)
                var broken = sealed
                broken[broken.count - 1] ^= 1
                #expect(throws: CryptoError.decryptionFailed) { try key.open(broken, nonce: nonce, associatedData: aad) }
                #expect(throws: CryptoError.decryptionFailed) { try key.open(sealed, nonce: nonce, associatedData: aad + [1]) }
            }
        }
        // Another nonce length than 12 bytes, as GCM allows.
        let long = Array("a sixteen-byte n".utf8)
        let sealed = try key.seal(Array("p".utf8), nonce: long)
        #expect(sealed == (try AES256GCM.encrypt(Array("p".utf8), key: keyBytes, nonce: long)))
        #expect(throws: CryptoError.decryptionFailed) { try key.open(Array(sealed.prefix(15)), nonce: nonce) }
        #expect(throws: CryptoError.self) { try AES256GCMKey(Array(keyBytes.prefix(31))) }
    }

    @Test("pooled GCM contexts never carry a nonce length over: 12, 16, 8 and 12 bytes again, one after the other, each as the one-shot")
    func gcmKeyAlternatingNonceLengths() throws {
        let keyBytes = Array("a7cde1ZJB1kG2e7VfTs3jQzaWizur8Gb".utf8)
        let key = try AES256GCMKey(keyBytes)
        let plaintext = Array("{\"trade_state\":\"SUCCESS\"}".utf8)
        for round in 0..<3 {
            for length in [12, 16, 8, 12, 1, 12] {
                let nonce = (0..<length).map { UInt8(truncatingIfNeeded: $0 &+ round &* 7) }
                let sealed = try key.seal(plaintext, nonce: nonce, associatedData: [1, 2])
                #expect(sealed == (try AES256GCM.encrypt(plaintext, key: keyBytes, nonce: nonce, associatedData: [1, 2])))
                #expect(try key.open(sealed, nonce: nonce, associatedData: [1, 2]) == plaintext)
                #expect(try AES256GCM.decrypt(sealed, key: keyBytes, nonce: nonce, associatedData: [1, 2]) == plaintext)
                // The same bytes under a nonce one byte longer or shorter are refused.
                #expect(throws: CryptoError.decryptionFailed) {
                    try key.open(sealed, nonce: nonce + [0], associatedData: [1, 2])
                }
            }
        }
    }
}

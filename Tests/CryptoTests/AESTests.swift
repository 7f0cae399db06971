// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Testing

/// AES-256-ECB (WeChat Pay v2's req_info) and AES-256-GCM (API v3's notify resources and
/// certificates): published vectors, then the openssl command-line tool on fresh inputs.
struct AESTests {
    // NIST SP 800-38A, F.1.5 (ECB-AES256.Encrypt), the first two blocks.
    static let ecbKey = [UInt8](hex: "603deb1015ca71be2b73aef0857d77811f352c073b6108d72d9810a30914dff4")
    static let ecbPlaintext = [UInt8](hex: "6bc1bee22e409f96e93d7e117393172a ae2d8a571e03ac9c9eb76fac45af8e51")
    static let ecbCiphertext = [UInt8](hex: "f3eed1bdb5d2a03c064b5a7e3db181f8 591ccb10d410ed26dc5ba74a31362870")

    @Test("AES-256-ECB gives NIST SP 800-38A's blocks, then one block of PKCS#7 padding")
    func ecbKnownAnswer() throws {
        let sealed = try AES256ECB.encrypt(Self.ecbPlaintext, key: Self.ecbKey)
        #expect(sealed.count == 48)
        #expect(Array(sealed.prefix(32)) == Self.ecbCiphertext)
        #expect(try AES256ECB.decrypt(sealed, key: Self.ecbKey) == Self.ecbPlaintext)
    }

    @Test("AES-256-ECB refuses a wrong key, a broken block and a wrong key length, always the same way")
    func ecbRefusals() throws {
        let sealed = try AES256ECB.encrypt(Array("<root><a>1</a></root>".utf8), key: Self.ecbKey)
        // This wrong key fails the padding check. (About one wrong key in 256 passes it with
        // garbage, which is why req_info's caller also checks what the plaintext says.)
        #expect(throws: CryptoError.decryptionFailed) { _ = try AES256ECB.decrypt(sealed, key: [UInt8](repeating: 0, count: 32)) }
        #expect(throws: CryptoError.decryptionFailed) { _ = try AES256ECB.decrypt(Array(sealed.dropLast()), key: Self.ecbKey) }
        #expect(throws: CryptoError.decryptionFailed) { _ = try AES256ECB.decrypt([], key: Self.ecbKey) }
        #expect(throws: CryptoError.self) { _ = try AES256ECB.encrypt([1], key: Array(Self.ecbKey.prefix(16))) }
    }

    @Test("AES-256-ECB agrees with openssl enc in both directions")
    func ecbAgreesWithOpenSSL() async throws {
        let openssl = try OpenSSLCommand()
        defer { openssl.remove() }
        let plaintext = Array("<root><out_refund_no>R1</out_refund_no><refund_status>SUCCESS</refund_status></root>".utf8)
        let key = Array("0123456789abcdef0123456789abcdef".utf8)  // 32 ASCII bytes, like WeChat's MD5-hex key
        try openssl.write("plain", plaintext)
        let theirs = try await openssl.run(["enc", "-aes-256-ecb", "-K", Hex.encode(key), "-in", openssl.path("plain")])
        #expect(try AES256ECB.encrypt(plaintext, key: key) == theirs)
        try openssl.write("sealed", try AES256ECB.encrypt(plaintext, key: key))
        #expect(try await openssl.run(["enc", "-d", "-aes-256-ecb", "-K", Hex.encode(key), "-in", openssl.path("sealed")]) == plaintext)
    }

    // The GCM specification's (McGrew and Viega) AES-256 test cases 13, 14 and 16.
    @Test("AES-256-GCM gives the GCM specification's test cases, with and without associated data")
    func gcmKnownAnswers() throws {
        let zeroKey = [UInt8](repeating: 0, count: 32)
        let zeroNonce = [UInt8](repeating: 0, count: 12)
        #expect(try AES256GCM.encrypt([], key: zeroKey, nonce: zeroNonce) == [UInt8](hex: "530f8afbc74536b9a963b4f1c4cb738b"))
        #expect(try AES256GCM.encrypt([UInt8](repeating: 0, count: 16), key: zeroKey, nonce: zeroNonce)
                == [UInt8](hex: "cea7403d4d606b6e074ec5d3baf39d18 d0d1c8a799996bf0265b98b5d48ab919"))

        let key = [UInt8](hex: "feffe9928665731c6d6a8f9467308308feffe9928665731c6d6a8f9467308308")
        let nonce = [UInt8](hex: "cafebabefacedbaddecaf888")
        let plaintext = [UInt8](hex: """
            d9313225f88406e5a55909c5aff5269a86a7a9531534f7da2e4c303d8a318a72
            1c3c0c95956809532fcf0e2449a6b525b16aedf5aa0de657ba637b39
            """)
        let aad = [UInt8](hex: "feedfacedeadbeeffeedfacedeadbeefabaddad2")
        let expected = [UInt8](hex: """
            522dc1f099567d07f47f37a32a84427d643a8cdcbfe5c0c97598a2bd2555d1aa
            8cb08e48590dbb3da7b08b1056828838c5f61e6393ba7a0abcc9f662
            76fc6ece0f4e1768cddf8853bb2d551b
            """)
        let sealed = try AES256GCM.encrypt(plaintext, key: key, nonce: nonce, associatedData: aad)
        #expect(sealed == expected)
        #expect(try AES256GCM.decrypt(sealed, key: key, nonce: nonce, associatedData: aad) == plaintext)
    }

    @Test("AES-256-GCM refuses a changed ciphertext, tag, nonce or associated data, and a short input")
    func gcmRefusesTampering() throws {
        let key = Array("8c1bd9e6a3f04b7d92e5c6a1f0d3b7e4".utf8)  // an API v3 key: 32 ASCII characters
        let nonce = Array("5K8264ILTKCH".utf8)
        let aad = Array("transaction".utf8)
        let sealed = try AES256GCM.encrypt(Array(#"{"out_trade_no":"1217752501201407033233368018"}"#.utf8), key: key,
                                           nonce: nonce, associatedData: aad)
        for index in [0, sealed.count - 17, sealed.count - 1] {
            var tampered = sealed
            tampered[index] ^= 0x01
            #expect(throws: CryptoError.decryptionFailed) { _ = try AES256GCM.decrypt(tampered, key: key, nonce: nonce, associatedData: aad) }
        }
        #expect(throws: CryptoError.decryptionFailed) {
            _ = try AES256GCM.decrypt(sealed, key: key, nonce: Array("5K8264ILTKCI".utf8), associatedData: aad)
        }
        #expect(throws: CryptoError.decryptionFailed) { _ = try AES256GCM.decrypt(sealed, key: key, nonce: nonce, associatedData: []) }
        #expect(throws: CryptoError.decryptionFailed) { _ = try AES256GCM.decrypt(Array(sealed.prefix(15)), key: key, nonce: nonce) }
        #expect(throws: CryptoError.self) { _ = try AES256GCM.decrypt(sealed, key: Array(key.prefix(31)), nonce: nonce) }
        #expect(throws: CryptoError.self) { _ = try AES256GCM.encrypt([1], key: key, nonce: []) }
        // A refusal says so in fixed words, never the key or the plaintext.
        #expect(String(describing: CryptoError.decryptionFailed) == "the ciphertext does not decrypt under this key")
    }

    /// `openssl enc` has no AEAD mode, so the two halves of GCM are checked separately: the
    /// ciphertext is AES-CTR from the counter block nonce ‖ 00000002 (GCM's first data block), and
    /// the tag of an empty plaintext is the GMAC of the associated data (`openssl mac GMAC`).
    @Test("AES-256-GCM's ciphertext is openssl's CTR stream and its tag openssl's GMAC")
    func gcmAgreesWithOpenSSL() async throws {
        let openssl = try OpenSSLCommand()
        defer { openssl.remove() }
        let key = Array("8c1bd9e6a3f04b7d92e5c6a1f0d3b7e4".utf8)
        let nonce = Array("5K8264ILTKCH".utf8)
        let plaintext = Array(#"{"mchid":"1900000109","out_trade_no":"20261130153045000123456789","trade_state":"SUCCESS"}"#.utf8)
        let aad = Array("transaction".utf8)
        let sealed = try AES256GCM.encrypt(plaintext, key: key, nonce: nonce, associatedData: aad)

        try openssl.write("plain", plaintext)
        let counter = Hex.encode(nonce) + "00000002"
        let stream = try await openssl.run(["enc", "-aes-256-ctr", "-K", Hex.encode(key), "-iv", counter, "-in", openssl.path("plain")])
        #expect(Array(sealed.dropLast(16)) == stream)

        try openssl.write("aad", aad)
        let gmac = try await openssl.run(["mac", "-cipher", "AES-256-GCM", "-macopt", "hexkey:" + Hex.encode(key),
                                          "-macopt", "hexiv:" + Hex.encode(nonce), "-in", openssl.path("aad"), "GMAC"])
        let tag = String(decoding: gmac, as: UTF8.self).trimmingCharacters(in: .whitespacesAndNewlines).lowercased()
        #expect(Hex.encode(try AES256GCM.encrypt([], key: key, nonce: nonce, associatedData: aad)) == tag)
    }
}

/// scrypt against RFC 7914 section 12.
struct ScryptTests {
    @Test("scrypt gives RFC 7914's test vectors")
    func rfc7914Vectors() {
        #expect(Scrypt.derive(password: [], salt: [], logN: 4, r: 1, p: 1, length: 64)
                == [UInt8](hex: """
                    77d6576238657b203b19ca42c18a0497f16b4844e3074ae8dfdffa3fede21442
                    fcd0069ded0948f8326a753a0fc81f17e8d3e0fb2e0d3628cf35e20c38d18906
                    """))
        #expect(Scrypt.derive(password: Array("password".utf8), salt: Array("NaCl".utf8), logN: 10, r: 8, p: 16, length: 64)
                == [UInt8](hex: """
                    fdbabe1c9d3472007856e7190d01e9fe7c6ad7cbc8237830e77376634b373162
                    2eaf30d92e22a3886ff109279d9830dac727afb94a83ee6d8360cbdfa2cc0640
                    """))
    }

    @Test("scrypt refuses parameters it cannot run rather than deriving something else")
    func refusesBadParameters() {
        #expect(Scrypt.derive(password: [1], salt: [2], logN: 0, r: 8, p: 1, length: 32) == nil)
        #expect(Scrypt.derive(password: [1], salt: [2], logN: 4, r: 0, p: 1, length: 32) == nil)
        #expect(Scrypt.derive(password: [1], salt: [2], logN: 4, r: 8, p: 1, length: 0) == nil)
        // A memory need beyond 64 bits (128 · r · N): refused, not trapped on.
        #expect(Scrypt.derive(password: [1], salt: [2], logN: 62, r: 8, p: 1, length: 32) == nil)
        #expect(Scrypt.derive(password: [1], salt: [2], logN: 4, r: Int.max, p: 1, length: 32) == nil)
    }
}

// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Testing

/// RSA (what WeChat Pay API v3 signs with) and EC keys: PEM in every format OpenSSL writes,
/// signatures checked both ways against the openssl command-line tool.
struct RSAKeyTests {
    @Test("a 2048-bit RSA key loads from PKCS#8 and PKCS#1 PEM, its public half from SPKI and PKCS#1")
    func rsaKeysLoadFromEveryPEMForm() async throws {
        let openssl = try OpenSSLCommand()
        defer { openssl.remove() }
        try await openssl.run(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", openssl.path("key.pem")])
        try await openssl.run(["rsa", "-in", openssl.path("key.pem"), "-traditional", "-out", openssl.path("pkcs1.pem")])
        try await openssl.run(["pkey", "-in", openssl.path("key.pem"), "-pubout", "-out", openssl.path("pub.pem")])
        try await openssl.run(["rsa", "-in", openssl.path("key.pem"), "-RSAPublicKey_out", "-out", openssl.path("pub1.pem")])
        #expect(try openssl.text("key.pem").hasPrefix("-----BEGIN PRIVATE KEY-----"))
        #expect(try openssl.text("pkcs1.pem").hasPrefix("-----BEGIN RSA PRIVATE KEY-----"))
        #expect(try openssl.text("pub1.pem").hasPrefix("-----BEGIN RSA PUBLIC KEY-----"))

        let pkcs8 = try RSAPrivateKey(pem: try openssl.text("key.pem"))
        let pkcs1 = try RSAPrivateKey(pem: try openssl.text("pkcs1.pem"))
        let spki = try RSAPublicKey(pem: try openssl.text("pub.pem"))
        let pkcs1Public = try RSAPublicKey(pem: try openssl.text("pub1.pem"))
        #expect(pkcs8.key.algorithm == .rsa(bits: 2048))
        #expect(spki.matches(pkcs8) && spki.matches(pkcs1) && pkcs1Public.matches(pkcs8))
        #expect(pkcs8.publicKey.key.pem == spki.key.pem)
        #expect(pkcs1Public.key.pem == spki.key.pem)
        // Both loads are the same key: PKCS#1 v1.5 signatures are deterministic.
        let message = Array("GET\n/v3/certificates\n1554208460\n593BEC0C930BF1AFEB40B4A08C8FB242\n\n".utf8)
        #expect(pkcs8.signature(for: message) == pkcs1.signature(for: message))
    }

    /// A PKCS#1 public key (`BEGIN RSA PUBLIC KEY`) of a fixed odd 2048-bit modulus and `exponent`:
    /// keys no generator makes, written as DER by hand.
    static func publicKeyPEM(exponent: Int64) -> String {
        // The leading zero keeps the INTEGER positive; 0xC5 makes it 2048 bits; 0x01 makes it odd.
        let modulus: [UInt8] = [0x00, 0xC5] + [UInt8](repeating: 0x5A, count: 254) + [0x01]
        let base64 = Array(Base64.encode(DER.sequence([DER.element(0x02, modulus), DER.integer(exponent)]), .standardPadded))
        let lines = stride(from: 0, to: base64.count, by: 64).map { String(base64[$0..<min($0 + 64, base64.count)]) }
        return "-----BEGIN RSA PUBLIC KEY-----\n" + lines.joined(separator: "\n") + "\n-----END RSA PUBLIC KEY-----\n"
    }

    @Test("an RSA public key whose exponent is even or below 3 is refused (with 1 anyone can sign); 3 and 65537 load",
          arguments: [(1, false), (2, false), (4, false), (65536, false), (3, true), (65537, true)] as [(Int64, Bool)])
    func exponents(exponent: Int64, loads: Bool) throws {
        let pem = Self.publicKeyPEM(exponent: exponent)
        #expect(try PublicKey(pem: pem).algorithm == .rsa(bits: 2048), "OpenSSL reads the key itself")
        if loads {
            #expect(try RSAPublicKey(pem: pem).key.algorithm == .rsa(bits: 2048))
        } else {
            #expect(throws: CryptoError.rsaExponentUnsound) { try RSAPublicKey(pem: pem) }
        }
    }

    @Test("SHA256withRSA signatures are openssl dgst's, and each side verifies the other's")
    func sha256WithRSAAgreesWithOpenSSL() async throws {
        let openssl = try OpenSSLCommand()
        defer { openssl.remove() }
        try await openssl.run(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", openssl.path("key.pem")])
        try await openssl.run(["pkey", "-in", openssl.path("key.pem"), "-pubout", "-out", openssl.path("pub.pem")])
        let key = try RSAPrivateKey(pem: try openssl.text("key.pem"))
        let publicKey = try RSAPublicKey(pem: try openssl.text("pub.pem"))
        let message = Array("POST\n/v3/pay/transactions/app\n1554208460\n593BEC0C930BF1AFEB40B4A08C8FB242\n{\"appid\":\"wx\"}\n".utf8)
        try openssl.write("message", message)

        let theirs = try await openssl.run(["dgst", "-sha256", "-sign", openssl.path("key.pem"), openssl.path("message")])
        let ours = key.signature(for: message)
        #expect(ours.count == 256)
        #expect(ours == theirs)
        #expect(publicKey.isValidSignature(theirs, for: message))

        try openssl.write("ours.sig", ours)
        let verified = try await openssl.run(["dgst", "-sha256", "-verify", openssl.path("pub.pem"), "-signature", openssl.path("ours.sig"),
                                              openssl.path("message")])
        #expect(String(decoding: verified, as: UTF8.self).contains("Verified OK"))

        var tampered = ours
        tampered[100] ^= 1
        #expect(!publicKey.isValidSignature(tampered, for: message))
        #expect(!publicKey.isValidSignature(ours, for: message + [0x0A]))
        #expect(!publicKey.isValidSignature([], for: message))
        #expect(!publicKey.isValidSignature(ours.prefix(255), for: message))
    }

    @Test("an RSA key under 2048 bits, an EC key, and text that is no key are refused in fixed words")
    func refusals() throws {
        let small = PrivateKey.generateRSA(bits: 1024)
        #expect(throws: CryptoError.rsaKeyTooSmall) { _ = try RSAPrivateKey(small) }
        #expect(throws: CryptoError.rsaKeyTooSmall) { _ = try RSAPublicKey(small.publicKey) }
        #expect(throws: CryptoError.privateKeyNotRSA) { _ = try RSAPrivateKey(PrivateKey.generateEC(.p256)) }
        #expect(throws: CryptoError.publicKeyNotRSA) { _ = try RSAPublicKey(PrivateKey.generateEC(.p256).publicKey) }
        let secretLooking = "-----BEGIN PRIVATE KEY-----\nMIIsecretsecretsecret\n-----END PRIVATE KEY-----\n"
        do {
            _ = try RSAPrivateKey(pem: secretLooking)
            Issue.record("garbage loaded as a key")
        } catch {
            #expect(error == .notAPrivateKey)
            #expect(!error.description.contains("secret"))
        }
        #expect(throws: CryptoError.notAPublicKey) { _ = try RSAPublicKey(pem: "-----BEGIN PUBLIC KEY-----\n-----END PUBLIC KEY-----\n") }
    }

    @Test("a generated key signs and verifies, and its PEM round-trips")
    func generatedKeysRoundTrip() throws {
        let key = RSAPrivateKey.generate()
        let message = Array("message".utf8)
        #expect(key.publicKey.isValidSignature(key.signature(for: message), for: message))
        let reloaded = try RSAPrivateKey(pem: key.key.pkcs8PEM)
        #expect(reloaded.signature(for: message) == key.signature(for: message))
        #expect(!RSAPrivateKey.generate().publicKey.matches(key))
    }
}

struct ECKeyTests {
    @Test("an encrypted PKCS#8 key loads with its password and is refused without it, never prompting")
    func encryptedKeysNeedTheirPassword() async throws {
        let openssl = try OpenSSLCommand()
        defer { openssl.remove() }
        try await openssl.run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", openssl.path("key.pem")])
        try await openssl.run(["pkcs8", "-topk8", "-in", openssl.path("key.pem"), "-v2", "aes-256-cbc", "-passout", "pass:s3cret",
                               "-out", openssl.path("encrypted.pem")])
        let encrypted = try openssl.text("encrypted.pem")
        #expect(encrypted.hasPrefix("-----BEGIN ENCRYPTED PRIVATE KEY-----"))
        let key = try PrivateKey(pem: encrypted, password: "s3cret")
        #expect(key.algorithm == .ec(.p256))
        #expect(key.publicKeyPEM == (try PrivateKey(pem: try openssl.text("key.pem"))).publicKeyPEM)
        #expect(throws: CryptoError.notAPrivateKey) { _ = try PrivateKey(pem: encrypted) }
        #expect(throws: CryptoError.notAPrivateKey) { _ = try PrivateKey(pem: encrypted, password: "wrong") }
    }

    @Test("ES256 signatures are raw r‖s that openssl verifies as DER, and openssl's verify here")
    func es256AgreesWithOpenSSL() async throws {
        let openssl = try OpenSSLCommand()
        defer { openssl.remove() }
        try await openssl.run(["genpkey", "-algorithm", "EC", "-pkeyopt", "ec_paramgen_curve:P-256", "-out", openssl.path("key.pem")])
        try await openssl.run(["pkey", "-in", openssl.path("key.pem"), "-pubout", "-out", openssl.path("pub.pem")])
        let key = try ES256PrivateKey(pem: try openssl.text("key.pem"))
        let publicKey = try #require(ES256PublicKey(pem: try openssl.text("pub.pem")))
        let message = Array("eyJhbGciOiJFUzI1NiJ9.eyJpc3MiOiJ0ZXN0In0".utf8)
        try openssl.write("message", message)

        let raw = key.signature(for: message)
        #expect(raw.count == 64)
        #expect(publicKey.isValidSignature(raw, for: message))
        try openssl.write("ours.sig", try #require(ECDSASignature.der(fromRaw: raw)))
        let verified = try await openssl.run(["dgst", "-sha256", "-verify", openssl.path("pub.pem"), "-signature", openssl.path("ours.sig"),
                                              openssl.path("message")])
        #expect(String(decoding: verified, as: UTF8.self).contains("Verified OK"))

        let theirs = try await openssl.run(["dgst", "-sha256", "-sign", openssl.path("key.pem"), openssl.path("message")])
        let theirsRaw = try #require(ECDSASignature.raw(fromDER: theirs))
        #expect(publicKey.isValidSignature(theirsRaw, for: message))
        // The DER form itself is never accepted where raw r‖s is due.
        #expect(!publicKey.isValidSignature(theirs, for: message))
        #expect(ECDSASignature.der(fromRaw: theirsRaw) == theirs)
        #expect(key.key.publicKey.isValidSignature(theirs, for: message))
    }

    @Test("ES256 keys are P-256 only; P-384 keys exist for certificate authorities")
    func curves() throws {
        let p384 = PrivateKey.generateEC(.p384)
        #expect(p384.algorithm == .ec(.p384))
        #expect(throws: CryptoError.privateKeyNotP256) { _ = try ES256PrivateKey(pem: p384.pkcs8PEM) }
        #expect(ES256PublicKey(pem: p384.publicKeyPEM) == nil)
        let key = ES256PrivateKey.generate()
        #expect(key.key.algorithm == .ec(.p256))
        #expect(try ES256PrivateKey(pem: key.pkcs8PEM).publicKeyPEM == key.publicKeyPEM)
        #expect(key.pkcs8PEM.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        // A private key's PEM gives its public half for verification too.
        let message: [UInt8] = [1, 2, 3]
        #expect(try #require(ES256PublicKey(pem: key.pkcs8PEM)).isValidSignature(key.signature(for: message), for: message))
        #expect(ECDSASignature.raw(fromDER: [0x30, 0x00]) == nil)
        #expect(ECDSASignature.raw(fromDER: []) == nil)
        #expect(ECDSASignature.der(fromRaw: [1, 2, 3]) == nil)
    }
}

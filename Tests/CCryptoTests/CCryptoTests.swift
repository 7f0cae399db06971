// SPDX-License-Identifier: Apache-2.0
import CCrypto
import COpenSSL
import Testing

extension Array where Element == UInt8 {
    /// Bytes from hex written with spaces or line breaks for reading.
    init(hex: String) {
        let digits = Array(hex.utf8.filter { $0 != 0x20 && $0 != 0x0A })
        self = stride(from: 0, to: digits.count, by: 2).map { UInt8(String(decoding: digits[$0..<$0 + 2], as: UTF8.self), radix: 16)! }
    }
}

/// The CCrypto target called directly, as the Crypto module calls it: the C contract underneath
/// Crypto's types (CryptoTests check those end to end, against published vectors and the openssl
/// tool). Every function must leave OpenSSL's error queue empty, failure or not: libcurl reads that
/// queue after its own TLS calls on the same thread.
struct CCryptoTests {
    static let start: Int64 = 946_684_800  // 2000-01-01
    static let end: Int64 = 4_102_444_800  // 2100-01-01

    /// One certificate, issued in C; the caller frees it.
    static func issue(key: OpaquePointer, commonName: String, issuer: OpaquePointer?, issuerKey: OpaquePointer,
                      serial: [UInt8], isCA: Bool, pathLength: Int32 = -1, notBefore: Int64 = start, notAfter: Int64 = end,
                      marker: String? = nil) -> OpaquePointer? {
        serial.withUnsafeBufferPointer { serial in
            wxpay_x509_issue(key, commonName, "CCrypto Tests", "US", issuer, issuerKey, serial.baseAddress!, serial.count,
                             notBefore, notAfter, isCA ? 1 : 0, pathLength, marker, 0)
        }
    }

    /// A root, an intermediate under it and a P-256 leaf under that, and their keys; freed by `free`.
    struct Chain {
        let rootKey = wxpay_ec_generate(NID_secp384r1)!
        let intermediateKey = wxpay_ec_generate(NID_secp384r1)!
        let leafKey = wxpay_ec_generate(NID_X9_62_prime256v1)!
        let root: OpaquePointer
        let intermediate: OpaquePointer
        let leaf: OpaquePointer

        init(leafNotAfter: Int64 = CCryptoTests.end) throws {
            root = try #require(CCryptoTests.issue(key: rootKey, commonName: "Root", issuer: nil, issuerKey: rootKey, serial: [1], isCA: true))
            intermediate = try #require(CCryptoTests.issue(key: intermediateKey, commonName: "Intermediate", issuer: root,
                                                           issuerKey: rootKey, serial: [2], isCA: true, pathLength: 0))
            leaf = try #require(CCryptoTests.issue(key: leafKey, commonName: "Leaf", issuer: intermediate, issuerKey: intermediateKey,
                                                   serial: [3], isCA: false, notAfter: leafNotAfter, marker: "1.2.840.113635.100.6.11.1"))
        }

        func free() {
            for certificate in [root, intermediate, leaf] { X509_free(certificate) }
            for key in [rootKey, intermediateKey, leafKey] { EVP_PKEY_free(key) }
        }

        /// A store trusting `roots`; the caller frees it.
        static func store(_ roots: [OpaquePointer]) -> OpaquePointer? {
            roots.withUnsafeBufferPointer { wxpay_x509_store_new($0.baseAddress!, Int32($0.count)) }
        }
    }

    static func der(of certificate: OpaquePointer) -> [UInt8] {
        var buffer: UnsafeMutablePointer<UInt8>?
        let length = wxpay_x509_to_der(certificate, &buffer)
        defer { wxpay_openssl_free(buffer) }
        guard length > 0, let buffer else { return [] }
        return Array(UnsafeBufferPointer(start: buffer, count: Int(length)))
    }

    static func serial(of certificate: OpaquePointer, capacity: Int = 64) -> (length: Int32, bytes: [UInt8]) {
        var out = [UInt8](repeating: 0xEE, count: max(capacity, 1))
        let length = wxpay_x509_serial(certificate, &out, capacity)
        return (length, length > 0 ? Array(out.prefix(Int(length))) : [])
    }

    @Test("the HMAC-SHA256 key schedule and MAC give RFC 4231's answer, a NULL empty key and message included, and keep their states")
    func hmacKeySchedule() {
        var inner = SHA256_CTX()
        var outer = SHA256_CTX()
        let key = Array("Jefe".utf8)
        wxpay_hmac_sha256_key(key, key.count, &inner, &outer)
        let copyOfInner = withUnsafeBytes(of: inner) { Array($0) }
        var mac = [UInt8](repeating: 0, count: 32)
        let message = Array("what do ya want for nothing?".utf8)
        wxpay_hmac_sha256_keyed(&inner, &outer, message, message.count, &mac)
        #expect(mac == [UInt8](hex: "5bdcc146bf60754e6a042426089575c75a003f089d2739839dec58b964ec3843"))
        // The states are read, never written: the same key MACs again to the same answer.
        #expect(withUnsafeBytes(of: inner) { Array($0) } == copyOfInner)
        var again = [UInt8](repeating: 0, count: 32)
        wxpay_hmac_sha256_keyed(&inner, &outer, message, message.count, &again)
        #expect(again == mac)

        wxpay_hmac_sha256_key(nil, 0, &inner, &outer)
        wxpay_hmac_sha256_keyed(&inner, &outer, nil, 0, &mac)
        #expect(mac == [UInt8](hex: "b613679a0814d9ec772f95d778c35fc5ff1697c493715653c6c712144292c5ad"))
    }

    @Test("a certificate issued in C reads back from its DER and PEM, and DER with trailing bytes is refused")
    func certificatesRoundTrip() throws {
        let chain = try Chain()
        defer { chain.free() }
        let der = Self.der(of: chain.leaf)
        #expect(!der.isEmpty)
        let parsed = try #require(der.withUnsafeBufferPointer { wxpay_x509_from_der($0.baseAddress!, $0.count) })
        #expect(X509_cmp(parsed, chain.leaf) == 0)
        X509_free(parsed)
        let trailing = der + [0]
        #expect(trailing.withUnsafeBufferPointer { wxpay_x509_from_der($0.baseAddress!, $0.count) } == nil)
        #expect(ERR_peek_error() == 0)
        let truncated = Array(der.dropLast())
        #expect(truncated.withUnsafeBufferPointer { wxpay_x509_from_der($0.baseAddress!, $0.count) } == nil)
        #expect(ERR_peek_error() == 0)

        var pem: UnsafeMutablePointer<CChar>?
        let length = wxpay_x509_to_pem(chain.leaf, &pem)
        defer { wxpay_openssl_free(pem) }
        #expect(length > 0)
        let fromPEM = try #require(wxpay_x509_from_pem(pem!, Int(length)))
        #expect(X509_cmp(fromPEM, chain.leaf) == 0)
        X509_free(fromPEM)
        let broken = "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n"
        #expect(wxpay_x509_from_pem(broken, broken.utf8.count) == nil)
        #expect(ERR_peek_error() == 0)
    }

    @Test("issued certificates carry their extensions, validity and serial; a bad OID is no extension")
    func issuedCertificateFacts() throws {
        let chain = try Chain(leafNotAfter: 2_000_000_000)
        defer { chain.free() }
        #expect(wxpay_x509_has_extension(chain.leaf, "1.2.840.113635.100.6.11.1") == 1)
        #expect(wxpay_x509_has_extension(chain.intermediate, "1.2.840.113635.100.6.11.1") == 0)
        #expect(wxpay_x509_has_extension(chain.leaf, "2.5.29.19") == 1)  // basicConstraints
        #expect(wxpay_x509_has_extension(chain.leaf, "not an oid") == 0)
        #expect(ERR_peek_error() == 0)
        var notBefore: Int64 = 0
        var notAfter: Int64 = 0
        #expect(wxpay_x509_validity(chain.leaf, &notBefore, &notAfter) == 1)
        #expect(notBefore == Self.start && notAfter == 2_000_000_000)
        #expect(Self.serial(of: chain.leaf).bytes == [3])
    }

    @Test("a serial comes out as its magnitude without leading zero bytes, zero as one zero byte, and a short buffer gives 0")
    func serials() throws {
        let key = try #require(wxpay_ec_generate(NID_X9_62_prime256v1))
        defer { EVP_PKEY_free(key) }
        let cases: [(written: [UInt8], read: [UInt8])] = [([0x00, 0x00, 0x01, 0x02], [0x01, 0x02]), ([0x80, 0x00], [0x80, 0x00]), ([0x00], [0x00])]
        for (written, read) in cases {
            let certificate = try #require(Self.issue(key: key, commonName: "Serial", issuer: nil, issuerKey: key,
                                                      serial: written, isCA: false))
            defer { X509_free(certificate) }
            let serial = Self.serial(of: certificate)
            #expect(serial.bytes == read, "\(written)")
            #expect(serial.length == Int32(read.count))
        }
        let long = try #require(Self.issue(key: key, commonName: "Serial", issuer: nil, issuerKey: key,
                                           serial: [UInt8](repeating: 0x5A, count: 20), isCA: false))
        defer { X509_free(long) }
        #expect(Self.serial(of: long).bytes.count == 20)
        #expect(Self.serial(of: long, capacity: 19).length == 0)
        #expect(ERR_peek_error() == 0)
    }

    @Test("the chain check answers OK, REFUSED with OpenSSL's code, or WRONG_PATH, and never leaves an error queued")
    func chainOutcomes() throws {
        let chain = try Chain()
        defer { chain.free() }
        let store = try #require(Chain.store([chain.root]))
        defer { X509_STORE_free(store) }
        let now: Int64 = 1_800_000_000
        var error: Int32 = -1
        #expect(wxpay_x509_verify_chain(store, chain.leaf, chain.intermediate, chain.root, now, &error) == Int32(WXPAY_CHAIN_OK))
        #expect(error == 0)
        #expect(wxpay_x509_verify_chain(store, chain.leaf, chain.intermediate, nil, now, &error) == Int32(WXPAY_CHAIN_OK))

        // Before the certificates were valid: refused, with OpenSSL's reason.
        #expect(wxpay_x509_verify_chain(store, chain.leaf, chain.intermediate, nil, Self.start - 86400, &error)
                == Int32(WXPAY_CHAIN_REFUSED))
        #expect(error == X509_V_ERR_CERT_NOT_YET_VALID)
        #expect(ERR_peek_error() == 0)

        // A root the store does not hold.
        let other = try Chain()
        defer { other.free() }
        #expect(wxpay_x509_verify_chain(store, other.leaf, other.intermediate, nil, now, &error) == Int32(WXPAY_CHAIN_REFUSED))
        #expect(error == X509_V_ERR_UNABLE_TO_GET_ISSUER_CERT_LOCALLY)

        // Both roots trusted, but the path ends at another root than the one expected.
        let both = try #require(Chain.store([chain.root, other.root]))
        defer { X509_STORE_free(both) }
        #expect(wxpay_x509_verify_chain(both, chain.leaf, chain.intermediate, other.root, now, &error) == Int32(WXPAY_CHAIN_WRONG_PATH))

        // A leaf the root signed directly: a two-certificate path, whatever intermediate is offered.
        let direct = try #require(Self.issue(key: chain.leafKey, commonName: "Direct", issuer: chain.root, issuerKey: chain.rootKey,
                                             serial: [9], isCA: false))
        defer { X509_free(direct) }
        #expect(wxpay_x509_verify_chain(store, direct, chain.intermediate, nil, now, &error) == Int32(WXPAY_CHAIN_WRONG_PATH))
        #expect(ERR_peek_error() == 0)
    }

    @Test("an ECDSA signature converts from DER to raw r‖s and back; malformed DER, trailing bytes and long integers are refused")
    func ecdsaEncodings() {
        // r = 1, s = 0x80 (which DER writes with a leading zero byte).
        let der: [UInt8] = [0x30, 0x07, 0x02, 0x01, 0x01, 0x02, 0x02, 0x00, 0x80]
        var raw = [UInt8](repeating: 0xEE, count: 64)
        #expect(der.withUnsafeBufferPointer { wxpay_ecdsa_der_to_raw($0.baseAddress!, $0.count, &raw, 32) } == 1)
        #expect(raw == [UInt8](repeating: 0, count: 31) + [1] + [UInt8](repeating: 0, count: 31) + [0x80])
        var back = [UInt8](repeating: 0, count: 72)
        let length = raw.withUnsafeBufferPointer { wxpay_ecdsa_raw_to_der($0.baseAddress!, 32, &back) }
        #expect(Array(back.prefix(Int(length))) == der)

        let refused: [[UInt8]] = [
            der + [0x00],  // trailing bytes
            Array(der.dropLast()),  // truncated
            [0x30, 0x00],  // no integers
            [0x30, 0x26, 0x02, 0x21, 0x01] + [UInt8](repeating: 0xAB, count: 32) + [0x02, 0x01, 0x01],  // r of 33 bytes
        ]
        for bytes in refused {
            #expect(bytes.withUnsafeBufferPointer { wxpay_ecdsa_der_to_raw($0.baseAddress!, $0.count, &raw, 32) } == 0, "\(bytes)")
        }
        #expect(ERR_peek_error() == 0)
    }

    @Test("a P-256 signature made through EVP verifies as raw r‖s on the EC_KEY fast path; a P-384 key has no P-256 key")
    func p256FastPath() throws {
        let key = try #require(wxpay_ec_generate(NID_X9_62_prime256v1))
        defer { EVP_PKEY_free(key) }
        #expect(wxpay_pkey_ec_curve(key) == NID_X9_62_prime256v1)
        let message = Array("eyJhbGciOiJFUzI1NiJ9.eyJ9".utf8)
        let capacity = Int(EVP_PKEY_get_size(key))
        var der = [UInt8](repeating: 0, count: capacity)
        let length = message.withUnsafeBytes { input in
            wxpay_pkey_sign(key, EVP_sha256(), input.baseAddress!, input.count, &der, capacity)
        }
        #expect(length > 0)
        der = Array(der.prefix(Int(length)))
        #expect(message.withUnsafeBytes { wxpay_pkey_verify(key, EVP_sha256(), $0.baseAddress!, $0.count, der, der.count) } == 1)

        var raw = [UInt8](repeating: 0, count: 64)
        #expect(der.withUnsafeBufferPointer { wxpay_ecdsa_der_to_raw($0.baseAddress!, $0.count, &raw, 32) } == 1)
        var digest = [UInt8](repeating: 0, count: 32)
        SHA256(message, message.count, &digest)
        let ec = try #require(wxpay_pkey_p256_key(key))
        defer { EC_KEY_free(ec) }
        #expect(wxpay_p256_verify_raw(ec, digest, raw) == 1)
        var tampered = raw
        tampered[63] ^= 1
        #expect(wxpay_p256_verify_raw(ec, digest, tampered) == 0)
        // r = s = 0 is no signature (and no crash).
        #expect(wxpay_p256_verify_raw(ec, digest, [UInt8](repeating: 0, count: 64)) == 0)
        #expect(ERR_peek_error() == 0)

        let p384 = try #require(wxpay_ec_generate(NID_secp384r1))
        defer { EVP_PKEY_free(p384) }
        #expect(wxpay_pkey_ec_curve(p384) == NID_secp384r1)
        #expect(wxpay_pkey_p256_key(p384) == nil)
        let rsa = try #require(wxpay_rsa_generate(2048))
        defer { EVP_PKEY_free(rsa) }
        #expect(wxpay_pkey_ec_curve(rsa) == 0)
        #expect(wxpay_pkey_p256_key(rsa) == nil)
        #expect(ERR_peek_error() == 0)
    }

    @Test("the RSA fast path signs the bytes EVP_DigestSign makes; a short buffer or an EC key gives 0 and an empty error queue")
    func rsaSignFastPath() throws {
        let rsa = try #require(wxpay_rsa_generate(2048))
        defer { EVP_PKEY_free(rsa) }
        let message = Array("POST\n/v3/pay/transactions/app\n1554208460\n593BEC0C930BF1AFEB40B4A08C8FB242\n{}\n".utf8)
        var fast = [UInt8](repeating: 0, count: 256), general = [UInt8](repeating: 0, count: 256)
        #expect(message.withUnsafeBytes { wxpay_rsa_sha256_sign(rsa, $0.baseAddress!, $0.count, &fast, 256) } == 256)
        #expect(message.withUnsafeBytes { wxpay_pkey_sign(rsa, EVP_sha256(), $0.baseAddress!, $0.count, &general, 256) } == 256)
        #expect(fast == general)
        #expect(message.withUnsafeBytes { wxpay_rsa_sha256_verify(rsa, $0.baseAddress!, $0.count, fast, fast.count) } == 1)
        var short = [UInt8](repeating: 0, count: 255)
        #expect(message.withUnsafeBytes { wxpay_rsa_sha256_sign(rsa, $0.baseAddress!, $0.count, &short, 255) } == 0)
        let ec = try #require(wxpay_ec_generate(NID_X9_62_prime256v1))
        defer { EVP_PKEY_free(ec) }
        #expect(message.withUnsafeBytes { wxpay_rsa_sha256_sign(ec, $0.baseAddress!, $0.count, &fast, 256) } == 0)
        #expect(ERR_peek_error() == 0)
    }

    @Test("keys go out as PEM and come back; an encrypted key without its password and garbage give NULL without prompting")
    func keysThroughPEM() throws {
        let rsa = try #require(wxpay_rsa_generate(2048))
        defer { EVP_PKEY_free(rsa) }
        var text: UnsafeMutablePointer<CChar>?
        let length = wxpay_pkey_to_pem(rsa, 1, &text)
        defer { wxpay_openssl_free(text) }
        let pem = String(decoding: UnsafeRawBufferPointer(start: text, count: Int(length)), as: UTF8.self)
        #expect(pem.hasPrefix("-----BEGIN PRIVATE KEY-----"))
        let reloaded = try #require(wxpay_pkey_private_from_pem(pem, pem.utf8.count, nil))
        defer { EVP_PKEY_free(reloaded) }
        #expect(EVP_PKEY_eq(rsa, reloaded) == 1)

        var publicText: UnsafeMutablePointer<CChar>?
        let publicLength = wxpay_pkey_to_pem(rsa, 0, &publicText)
        defer { wxpay_openssl_free(publicText) }
        let publicPEM = String(decoding: UnsafeRawBufferPointer(start: publicText, count: Int(publicLength)), as: UTF8.self)
        #expect(publicPEM.hasPrefix("-----BEGIN PUBLIC KEY-----"))
        let publicKey = try #require(wxpay_pkey_public_from_pem(publicPEM, publicPEM.utf8.count))
        defer { EVP_PKEY_free(publicKey) }
        #expect(EVP_PKEY_eq(rsa, publicKey) == 1)
        // A public key is no private key, and a private key's text is no public key.
        #expect(wxpay_pkey_private_from_pem(publicPEM, publicPEM.utf8.count, nil) == nil)
        #expect(wxpay_pkey_public_from_pem(pem, pem.utf8.count) == nil)

        // An encrypted PKCS#8 key: NULL without the password (the callback refuses to ask), the key with it.
        let bio = try #require(BIO_new(BIO_s_mem()))
        #expect(PEM_write_bio_PKCS8PrivateKey(bio, rsa, EVP_aes_256_cbc(), "s3cret", 6, nil, nil) == 1)
        var data: UnsafeMutablePointer<CChar>?
        let size = BIO_ctrl(bio, BIO_CTRL_INFO, 0, &data)
        let encrypted = String(decoding: UnsafeRawBufferPointer(start: data, count: size), as: UTF8.self)
        BIO_free(bio)
        #expect(encrypted.hasPrefix("-----BEGIN ENCRYPTED PRIVATE KEY-----"))
        #expect(wxpay_pkey_private_from_pem(encrypted, encrypted.utf8.count, nil) == nil)
        #expect(wxpay_pkey_private_from_pem(encrypted, encrypted.utf8.count, "wrong") == nil)
        let decrypted = try #require(wxpay_pkey_private_from_pem(encrypted, encrypted.utf8.count, "s3cret"))
        EVP_PKEY_free(decrypted)
        #expect(wxpay_pkey_private_from_pem("garbage", 7, nil) == nil)
        #expect(ERR_peek_error() == 0)
    }
}

// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import Testing

/// X.509 certificates: reading, the facts WeChat Pay API v3 names a certificate by, key matching,
/// issuing and the chain check, PKCS#12.
struct CertificateTests {
    static let start = Date(timeIntervalSince1970: 946_684_800)  // 2000-01-01
    static let end = Date(timeIntervalSince1970: 4_102_444_800)  // 2100-01-01

    /// A root (P-384), an intermediate under it and a P-256 leaf under that, like Apple's.
    struct Chain {
        let rootKey = PrivateKey.generateEC(.p384)
        let intermediateKey = PrivateKey.generateEC(.p384)
        let leafKey = PrivateKey.generateEC(.p256)
        let root: Certificate
        let intermediate: Certificate
        let leaf: Certificate

        init(leafValidity: ClosedRange<Date> = CertificateTests.start...CertificateTests.end) throws {
            func name(_ text: String) -> CertificateIssuer.Name { .init(commonName: text, organization: "Crypto Tests", country: "US") }
            root = try #require(CertificateIssuer.issue(name("Root"), key: rootKey, issuer: nil, issuerKey: rootKey, serial: 1,
                                                        validity: start...end, kind: .authority(pathLength: nil), digest: .sha384))
            intermediate = try #require(CertificateIssuer.issue(name("Intermediate"), key: intermediateKey, issuer: root, issuerKey: rootKey,
                                                                serial: 2, validity: start...end, kind: .authority(pathLength: 0),
                                                                markerOID: "1.2.840.113635.100.6.2.1", digest: .sha384))
            leaf = try #require(CertificateIssuer.issue(name("Leaf"), key: leafKey, issuer: intermediate, issuerKey: intermediateKey,
                                                        serial: 3, validity: leafValidity, kind: .leaf,
                                                        markerOID: "1.2.840.113635.100.6.11.1"))
        }
    }

    @Test("a merchant certificate made by openssl reads back its serial, name, validity, key and fingerprint")
    func readsWhatOpenSSLWrote() async throws {
        let openssl = try OpenSSLCommand()
        defer { openssl.remove() }
        try await openssl.run(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", openssl.path("key.pem")])
        // A serial whose first nibble is zero: WeChat Pay and its SDKs write it without leading zeros.
        try await openssl.run(["req", "-x509", "-new", "-key", openssl.path("key.pem"), "-subj", "/CN=1900000109/O=Tenpay.com/C=CN",
                               "-days", "2", "-set_serial", "0x05157F09EFDC096DE15EBE81A47057A7232F1B8E1", "-sha256",
                               "-out", openssl.path("cert.pem")])
        let pem = try openssl.text("cert.pem")
        let certificate = try #require(Certificate(pem: pem))
        #expect(certificate.serialNumberHex == "5157F09EFDC096DE15EBE81A47057A7232F1B8E1")
        let printed = String(decoding: try await openssl.run(["x509", "-in", openssl.path("cert.pem"), "-noout", "-serial"]), as: UTF8.self)
        #expect(printed.trimmingCharacters(in: .whitespacesAndNewlines) == "serial=" + (certificate.serialNumberHex ?? ""))
        #expect(certificate.commonName == "1900000109")
        let window = certificate.validity
        // openssl reads the clock once for notBefore and again for notAfter: a second may tick in between.
        #expect(abs(window.notAfter.timeIntervalSince(window.notBefore) - 2 * 86400) <= 1)
        #expect(abs(window.notBefore.timeIntervalSinceNow) < 3600)

        // The certificate and its key belong together; another key does not.
        let key = try RSAPrivateKey(pem: try openssl.text("key.pem"))
        #expect(certificate.matches(key.key))
        #expect(!certificate.matches(RSAPrivateKey.generate().key))
        let publicKey = try RSAPublicKey(certificate: certificate)
        let message = Array("1554208460\n593BEC0C930BF1AFEB40B4A08C8FB242\n{}\n".utf8)
        #expect(publicKey.isValidSignature(key.signature(for: message), for: message))

        // DER and PEM are the same certificate, and the fingerprint is openssl's.
        try await openssl.run(["x509", "-in", openssl.path("cert.pem"), "-outform", "DER", "-out", openssl.path("cert.der")])
        let der = try openssl.read("cert.der")
        #expect(certificate.der == der)
        #expect(Certificate(pemOrDER: der) == certificate)
        #expect(Certificate(pemOrDER: Array(pem.utf8)) == certificate)
        #expect(Certificate(pem: certificate.pem) == certificate)
        let fingerprint = String(decoding: try await openssl.run(["x509", "-in", openssl.path("cert.pem"), "-noout", "-fingerprint", "-sha256"]),
                                 as: UTF8.self)
        #expect(fingerprint.uppercased().replacingOccurrences(of: ":", with: "").contains(certificate.sha256Fingerprint.uppercased()))
    }

    @Test("serial numbers are uppercase hex without leading zeros, whatever their top bit")
    func serialNumbers() throws {
        let key = PrivateKey.generateEC(.p256)
        let name = CertificateIssuer.Name(commonName: "Serial", organization: "Crypto Tests", country: "US")
        for (serial, hex) in [(UInt64(1), "1"), (0x0ABC, "ABC"), (0x8000_0000_0000_0001, "8000000000000001"), (0x00FF_FFFF, "FFFFFF")] {
            let certificate = try #require(CertificateIssuer.issue(name, key: key, issuer: nil, issuerKey: key, serial: serial,
                                                                   validity: Self.start...Self.end, kind: .leaf))
            #expect(certificate.serialNumberHex == hex)
        }
    }

    @Test("DER with trailing bytes, truncated DER and text without a certificate are not certificates")
    func refusesWhatIsNotACertificate() throws {
        let chain = try Chain()
        #expect(Certificate(der: chain.leaf.der + [0]) == nil)
        #expect(Certificate(der: Array(chain.leaf.der.dropLast())) == nil)
        #expect(Certificate(der: []) == nil)
        #expect(Certificate(pem: "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n") == nil)
        #expect(Certificate(pemOrDER: Array("hello".utf8)) == nil)
    }

    @Test("an issued chain verifies leaf → intermediate → root, with its marker extensions")
    func issuedChainVerifies() throws {
        let chain = try Chain()
        let store = try TrustStore([chain.root])
        try store.verify(leaf: chain.leaf, intermediate: chain.intermediate, root: chain.root, at: Date())
        try store.verify(leaf: chain.leaf, intermediate: chain.intermediate, root: nil, at: Date())
        #expect(chain.leaf.hasExtension("1.2.840.113635.100.6.11.1"))
        #expect(!chain.leaf.hasExtension("1.2.840.113635.100.6.2.1"))
        #expect(chain.intermediate.hasExtension("1.2.840.113635.100.6.2.1"))
        #expect(!chain.root.hasExtension("not an oid"))
        #expect(ES256PublicKey(certificate: chain.leaf) != nil)
        #expect(ES256PublicKey(certificate: chain.root) == nil)  // P-384
        #expect(chain.leaf.matches(chain.leafKey) && !chain.leaf.matches(chain.rootKey))
    }

    @Test("a chain is refused for time, for an unknown root, for a wrong path, each with its reason")
    func chainRefusals() throws {
        let chain = try Chain(leafValidity: Self.start...Date(timeIntervalSince1970: 1_000_000_000))
        let store = try TrustStore([chain.root])
        #expect { try store.verify(leaf: chain.leaf, intermediate: chain.intermediate, root: chain.root, at: Date()) } throws: {
            ($0 as? ChainError)?.reason == .expired
        }
        #expect { try store.verify(leaf: chain.leaf, intermediate: chain.intermediate, root: chain.root, at: Self.start - 86400) } throws: {
            ($0 as? ChainError)?.reason == .notYetValid
        }
        let valid = Date(timeIntervalSince1970: 990_000_000)
        try store.verify(leaf: chain.leaf, intermediate: chain.intermediate, root: chain.root, at: valid)
        let other = try Chain()
        #expect { try TrustStore([other.root]).verify(leaf: chain.leaf, intermediate: chain.intermediate, root: nil, at: valid) } throws: {
            ($0 as? ChainError)?.reason == .untrustedIssuer
        }
        // Both roots trusted, but the path must end at the one expected.
        let both = try TrustStore([chain.root, other.root])
        #expect { try both.verify(leaf: chain.leaf, intermediate: chain.intermediate, root: other.root, at: valid) } throws: {
            ($0 as? ChainError)?.reason == .wrongPath
        }
        // A leaf signed by the root directly is not a three-certificate path.
        let direct = try #require(CertificateIssuer.issue(.init(commonName: "Direct", organization: "Crypto Tests", country: "US"),
                                                          key: chain.leafKey, issuer: chain.root, issuerKey: chain.rootKey, serial: 9,
                                                          validity: Self.start...Self.end, kind: .leaf))
        #expect { try store.verify(leaf: direct, intermediate: chain.intermediate, root: nil, at: valid) } throws: {
            ($0 as? ChainError)?.reason == .wrongPath
        }
    }

    @Test("a PKCS#12 bundle gives its certificate and key with the password, nothing without it; legacy bundles too")
    func pkcs12Bundles() async throws {
        let openssl = try OpenSSLCommand()
        defer { openssl.remove() }
        try await openssl.run(["genpkey", "-algorithm", "RSA", "-pkeyopt", "rsa_keygen_bits:2048", "-out", openssl.path("key.pem")])
        try await openssl.run(["req", "-x509", "-new", "-key", openssl.path("key.pem"), "-subj", "/CN=1900000109", "-days", "2",
                               "-out", openssl.path("cert.pem")])
        for (name, extra) in [("modern.p12", [String]()), ("legacy.p12", ["-legacy"])] {
            try await openssl.run(["pkcs12", "-export", "-inkey", openssl.path("key.pem"), "-in", openssl.path("cert.pem"),
                                   "-passout", "pass:1900000109", "-out", openssl.path(name)] + extra)
            let bytes = try openssl.read(name)
            let bundle = try #require(PKCS12.read(bytes, password: "1900000109"), "\(name)")
            #expect(bundle.certificate == Certificate(pem: try openssl.text("cert.pem")))
            #expect(bundle.certificate.matches(bundle.key))
            #expect(PKCS12.read(bytes, password: "wrong") == nil)
        }
        #expect(LegacyAlgorithms.available)
        #expect(PKCS12.read(Array("not a bundle".utf8), password: "") == nil)
    }
}

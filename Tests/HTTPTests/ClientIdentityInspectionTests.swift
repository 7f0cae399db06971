// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
import HTTPClientTestSupport
import Testing

struct ClientIdentityInspectionTests {
    @Test func aPEMPairThatBelongsTogetherIsReadWithItsCommonNameAndExpiry() throws {
        let certificate = try TestCertificates.clientPEMIdentity.inspect()
        #expect(certificate.commonName == TestCertificates.clientCommonName)
        // The test certificates are made for ten years; they are well inside that.
        #expect(certificate.secondsUntilExpiry() > 30 * 86400)
        #expect(certificate.secondsUntilExpiry() < 3651 * 86400)
        #expect(certificate.secondsUntilExpiry(now: certificate.notAfter.addingTimeInterval(5)) == -5)
    }

    @Test func aPKCS12BundleIsReadWithItsPasswordAndRefusedWithAnother() throws {
        #expect(try TestCertificates.clientPKCS12Identity.inspect().commonName == TestCertificates.clientCommonName)
        #expect(throws: TLSClientIdentityError.unreadablePKCS12) {
            try TLSClientIdentity.pkcs12(file: TestCertificates.clientPKCS12, password: "not-the-mch-id").inspect()
        }
    }

    @Test func anOldStylePKCS12IsReadToo() async throws {
        let legacy = try await TestCertificates.makeLegacyPKCS12()
        defer { try? FileManager.default.removeItem(atPath: legacy) }
        let certificate = try TLSClientIdentity.pkcs12(file: legacy, password: TestCertificates.clientPKCS12Password).inspect()
        #expect(certificate.commonName == TestCertificates.clientCommonName)
    }

    @Test func aKeyOfAnotherCertificateIsAMismatch() {
        let crossed = TLSClientIdentity.pem(certificateFile: TestCertificates.clientCertificate,
                                            keyFile: TestCertificates.rogueClientKey)
        #expect(throws: TLSClientIdentityError.keyMismatch) { try crossed.inspect() }
    }

    @Test func missingOrSwappedFilesAreNamedWithoutShowingAPassword() {
        let missing = TLSClientIdentity.pem(certificateFile: "/nonexistent/apiclient_cert.pem", keyFile: TestCertificates.clientKey)
        #expect(throws: TLSClientIdentityError.unreadableCertificate) { try missing.inspect() }
        let swapped = TLSClientIdentity.pem(certificateFile: TestCertificates.clientCertificate,
                                            keyFile: TestCertificates.clientCertificate, keyPassword: "secret-pass")
        do {
            _ = try swapped.inspect()
            Issue.record("a certificate was read as a key")
        } catch {
            #expect(error.code == .unreadableKey)
            #expect(!error.description.contains("secret-pass"))
        }
    }
}

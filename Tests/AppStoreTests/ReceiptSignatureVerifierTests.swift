// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import Crypto
import Foundation
import Testing

/// App receipts read with their PKCS #7 signature and chain verified to a configured root: what
/// makes a StoreKit 1 receipt the device's evidence instead of a list of ids anyone could name.
struct ReceiptSignatureVerifierTests {
    static let pki = SimulatorPKI()
    static let issuer = ReceiptIssuer(pki: pki, bundleID: "com.example.courses")

    static func verifier(_ root: Certificate = pki.root) throws -> ReceiptSignatureVerifier {
        try ReceiptSignatureVerifier(roots: TrustedRoots([root], allowUntrustedRoot: true, apple: .appleRootCA))
    }

    static func receipt(_ issuer: ReceiptIssuer = issuer) -> String {
        issuer.receipt(for: [AppReceiptTests.transaction("2000000000000001")], now: Date())
    }

    @Test("A receipt signed under the configured root is read with its purchases")
    func aReceiptSignedUnderTheConfiguredRootIsRead() throws {
        let read = try Self.verifier().verify(base64: Self.receipt(), now: Date())
        #expect(read.bundleID == "com.example.courses")
        #expect(read.contains(transactionID: "2000000000000001"))
        #expect(read.creationDate != nil)
    }

    @Test("A receipt signed under another root is refused as an invalid chain, though it reads as a receipt")
    func aReceiptOfAnotherRootIsRefused() throws {
        let forged = Self.receipt(ReceiptIssuer(pki: SimulatorPKI(), bundleID: "com.example.courses"))
        #expect(try AppReceipt(base64: forged).contains(transactionID: "2000000000000001"))
        let verifier = try Self.verifier()
        do throws(AppReceiptError) {
            _ = try verifier.verify(base64: forged, now: Date())
            Issue.record("a receipt of another root was accepted")
        } catch {
            #expect(error.kind == .invalidChain)
        }
    }

    @Test("A receipt whose content was changed after signing is refused as an invalid signature")
    func aTamperedReceiptIsRefused() throws {
        var der = try #require(Data(base64Encoded: Self.receipt())).map { $0 }
        let bundle = Array("com.example.courses".utf8)
        let at = try #require((0...(der.count - bundle.count)).first { Array(der[$0..<($0 + bundle.count)]) == bundle })
        der[at] = UInt8(ascii: "k")  // kom.example.courses: still a well-formed receipt
        #expect(try AppReceipt(der: der).bundleID == "kom.example.courses")
        let verifier = try Self.verifier()
        do throws(AppReceiptError) {
            _ = try verifier.verify(der: der, now: Date())
            Issue.record("a changed receipt was accepted")
        } catch {
            #expect(error.kind == .invalidSignature)
        }
    }

    @Test("A chain whose leaf lacks Apple's receipt-signing marker is refused")
    func aLeafWithoutTheMarkerIsRefused() throws {
        let pki = SimulatorPKI(SimulatorPKI.Options(leafOID: false))
        let receipt = Self.receipt(ReceiptIssuer(pki: pki, bundleID: "com.example.courses"))
        let verifier = try Self.verifier(pki.root)
        do throws(AppReceiptError) {
            _ = try verifier.verify(base64: receipt, now: Date())
            Issue.record("a receipt without the marker was accepted")
        } catch {
            #expect(error.kind == .invalidChain)
        }
    }

    @Test("Production refuses a receipt root that is not Apple Root CA unless told otherwise")
    func productionRefusesAnotherReceiptRoot() throws {
        #expect(throws: AppStoreConfigurationError.self) {
            try TrustedRoots([Self.pki.root], apple: .appleRootCA)
        }
    }
}

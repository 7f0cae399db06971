// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import Crypto
import Foundation
import JSON
import Testing

/// What a genuine App Store token decodes to, and how the environment and app checks apply.
struct SignedDataVerifierTests {
    typealias F = SignedDataFixtures

    @Test func aGenuineTransactionVerifiesAndDecodesEveryField() throws {
        let original = F.transaction()
        let decoded = try F.verifier().verifyTransaction(F.pki.sign(payload: original.payload))
        #expect(decoded == original)
        #expect(decoded.appAccountToken == original.appAccountToken)
        #expect(decoded.price == 68000)
        #expect(decoded.environment == .production)
    }

    @Test func renewalInfoVerifiesWithItsEnvironmentChecked() throws {
        let info = F.renewalInfo(environment: .sandbox)
        let jws = F.pki.sign(payload: info.payload)
        #expect(try F.verifier().verifyRenewalInfo(jws) == info)
        #expect(try F.verifier(environment: .sandbox).verifyRenewalInfo(jws) == info)
        #expect(throws: SignedDataError(.environmentMismatch, "environment is not the expected one")) {
            try F.verifier(environment: .production).verifyRenewalInfo(jws)
        }
    }

    @Test func aNotificationIsVerifiedWithTheTransactionInsideIt() throws {
        let transaction = F.transaction(id: "2000000899999999")
        let notification = try F.verifier().verifyNotification(F.notification(transaction: transaction))
        #expect(notification.notificationType == .oneTimeCharge)
        #expect(notification.bundleID == F.bundleID)
        #expect(notification.appAppleID == F.appAppleID)
        #expect(notification.transaction == transaction)
    }

    @Test func verifyTellsTheThreeKindsApartByTheirPayload() throws {
        let verifier = try F.verifier()
        guard case .transaction = try verifier.verify(F.pki.sign(payload: F.transaction().payload)) else {
            Issue.record("a transaction was not recognised")
            return
        }
        guard case .renewalInfo = try verifier.verify(F.pki.sign(payload: F.renewalInfo().payload)) else {
            Issue.record("renewal info was not recognised")
            return
        }
        guard case .notification = try verifier.verify(F.notification()) else {
            Issue.record("a notification was not recognised")
            return
        }
        #expect(throws: SignedDataError.self) { try verifier.verify(F.pki.sign(payload: ["signedDate": 1_764_460_800_000])) }
    }

    @Test func withoutAnExpectedEnvironmentBothAreAcceptedAndNamed() throws {
        let verifier = try F.verifier(environment: nil)
        #expect(try verifier.verifyTransaction(F.pki.sign(payload: F.transaction(environment: .sandbox).payload)).environment == .sandbox)
        #expect(try verifier.verifyTransaction(F.pki.sign(payload: F.transaction(environment: .production).payload)).environment == .production)
    }

    @Test func aProductionVerifierNeedsTheAppAppleID() {
        #expect(throws: AppStoreConfigurationError.self) { try F.verifier(environment: .production, appAppleID: nil) }
        #expect(throws: Never.self) { try F.verifier(environment: .sandbox, appAppleID: nil) }
    }

    @Test func theLeafCacheRemembersAVerifiedChainAndNeverChangesAVerdict() throws {
        let verifier = try F.verifier()
        let jws = F.pki.sign(payload: F.transaction().payload)
        #expect(verifier.cachedLeafCount == 0)
        _ = try verifier.verifyTransaction(jws)
        #expect(verifier.cachedLeafCount == 1)
        _ = try verifier.verifyTransaction(jws)
        #expect(verifier.cachedLeafCount == 1)
        // The cached leaf with another intermediate is checked in full, and refused.
        let x5c = [F.pki.x5c[0], F.otherPKI.x5c[1], F.pki.x5c[2]]
        let spliced = F.token(header: F.header(x5c: x5c), payload: F.transaction().payload)
        #expect(throws: SignedDataError.self) { try verifier.verifyTransaction(spliced) }
        // Outside the chain's validity the cache does not answer either.
        let early = F.transaction(signedDate: Date(timeIntervalSince1970: 900_000_000))
        #expect(throws: SignedDataError.self) { try verifier.verifyTransaction(F.pki.sign(payload: early.payload)) }
    }

    @Test func withTheCacheOffEveryTokenIsVerifiedInFull() throws {
        let verifier = try F.verifier(cache: 0)
        let jws = F.pki.sign(payload: F.transaction().payload)
        _ = try verifier.verifyTransaction(jws)
        _ = try verifier.verifyTransaction(jws)
        #expect(verifier.cachedLeafCount == 0)
    }

    @Test func onlyApplesRootIsTrustedWithoutTheExplicitFlag() throws {
        #expect(throws: AppStoreConfigurationError.self) { try TrustedRoots([F.pki.root]) }
        #expect(throws: AppStoreConfigurationError.self) { try TrustedRoots.load(Array(F.pki.root.pem.utf8)) }
        let pem = try TrustedRoots.load(Array(F.pki.root.pem.utf8), allowUntrustedRoot: true)
        let der = try TrustedRoots.load(F.pki.root.der, allowUntrustedRoot: true)
        #expect(pem.certificates == der.certificates)
        #expect(pem.includesUntrustedRoot)
        #expect(throws: AppStoreConfigurationError.self) { try TrustedRoots.load(Array("not a certificate".utf8), allowUntrustedRoot: true) }
        #expect(TrustedRoots.appleRootCAG3Fingerprint == "63343abfb89a6a03ebb57e9b3f5fa7be7c4f5c756f3017b3a8c488c3653e9179")
        #expect(F.pki.root.sha256Fingerprint.count == 64)
    }

    @Test func theCallersNowReplacesSignedDateForTheChainCheck() throws {
        let validity = Date(timeIntervalSince1970: 1_577_836_800)...Date(timeIntervalSince1970: 1_735_689_600)  // 2020–2025
        let pki = SimulatorPKI(.init(name: "Short-lived", leafValidity: validity))
        let verifier = try F.verifier(pki: pki)
        let jws = pki.sign(payload: F.transaction(signedDate: Date(timeIntervalSince1970: 1_700_000_000)).payload)
        #expect(throws: Never.self) { try verifier.verifyTransaction(jws) }
        #expect(throws: SignedDataError.self) { try verifier.verifyTransaction(jws, now: F.signedDate) }
    }
}

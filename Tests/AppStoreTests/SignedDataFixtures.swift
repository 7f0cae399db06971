// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreSimulator
import Foundation
import JSON

/// Chains and signed payloads for the verifier's tests, built like Apple's with the simulator's
/// PKI. Key generation is the slow part, so the common chains are made once per test process.
enum SignedDataFixtures {
    static let bundleID = "com.example.courses"
    static let appAppleID: Int64 = 1_234_567_890
    /// 2025-11-30 00:00:00 UTC.
    static let signedDate = Date(timeIntervalSince1970: 1_764_460_800)

    static let pki = SimulatorPKI()
    /// A second, unrelated chain: "a valid chain to another root".
    static let otherPKI = SimulatorPKI(.init(name: "Other CA"))

    static func verifier(environment: AppStoreEnvironment? = nil, appAppleID: Int64? = SignedDataFixtures.appAppleID,
                         pki: SimulatorPKI = SignedDataFixtures.pki, cache: Int = 64) throws -> SignedDataVerifier {
        try SignedDataVerifier(roots: TrustedRoots([pki.root], allowUntrustedRoot: true), bundleID: bundleID,
                               environment: environment, appAppleID: appAppleID, leafCacheCapacity: cache)
    }

    static func transaction(id: String = "2000000812345678", environment: AppStoreEnvironment = .production,
                            bundleID: String = SignedDataFixtures.bundleID, token: UUID? = UUID(),
                            signedDate: Date = SignedDataFixtures.signedDate) -> AppStoreTransaction {
        AppStoreTransaction(
            transactionID: id, originalTransactionID: id, bundleID: bundleID, productID: "course.swift.basics",
            type: .nonConsumable, quantity: 1, appAccountToken: token, inAppOwnershipType: .purchased,
            environment: environment, purchaseDate: signedDate.addingTimeInterval(-5),
            originalPurchaseDate: signedDate.addingTimeInterval(-5), signedDate: signedDate,
            price: 68000, currency: "CNY", transactionReason: .purchase, storefront: "CHN")
    }

    static func renewalInfo(environment: AppStoreEnvironment = .production) -> AppStoreRenewalInfo {
        AppStoreRenewalInfo(originalTransactionID: "2000000812340000", productID: "vip.monthly",
                            autoRenewProductID: "vip.monthly", autoRenewStatus: 1, environment: environment,
                            signedDate: signedDate, renewalDate: signedDate.addingTimeInterval(30 * 86400))
    }

    static func notification(environment: AppStoreEnvironment = .production, appAppleID: Int64? = SignedDataFixtures.appAppleID,
                             bundleID: String = SignedDataFixtures.bundleID,
                             transaction: AppStoreTransaction? = nil, pki: SimulatorPKI = SignedDataFixtures.pki) -> String {
        let inner = transaction ?? Self.transaction(environment: environment)
        let notification = AppStoreNotification(
            notificationType: .oneTimeCharge, notificationUUID: "6b0a2c8e-4a8f-4a47-9c29-3f6f1f6d1a00",
            signedDate: signedDate, bundleID: bundleID, appAppleID: appAppleID, environment: environment)
        return pki.sign(payload: notification.payload(signedTransactionInfo: pki.sign(payload: inner.payload),
                                                      signedRenewalInfo: nil))
    }

    /// A token with its header and payload given as exact bytes, signed by `pki`'s leaf.
    static func token(header: String, payload: JSONValue, pki: SimulatorPKI = SignedDataFixtures.pki) -> String {
        JWSSigner.sign(headerBytes: Array(header.utf8), payloadBytes: payload.bytes(), with: pki.leafKey!)
    }

    /// The standard header with `x5c` as given.
    static func header(x5c: [String], alg: String = "ES256") -> String {
        JSONValue.object(["alg": .string(alg), "x5c": .array(x5c.map(JSONValue.string))]).serialized()
    }

    /// Splits a compact JWS into its three segments.
    static func segments(_ jws: String) -> [String] { jws.split(separator: ".", omittingEmptySubsequences: false).map(String.init) }
}

// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON

/// A verified, decoded `signedRenewalInfo` (Apple's JWSRenewalInfoDecodedPayload): what an
/// auto-renewable subscription will do at its next renewal. It carries no bundle id; Apple's own
/// library checks only its environment, and so does ``SignedDataVerifier``.
public struct AppStoreRenewalInfo: Sendable, Hashable {
    public var originalTransactionID: String
    public var productID: String?
    public var autoRenewProductID: String?
    /// 1: the subscription renews; 0: the customer turned renewal off.
    public var autoRenewStatus: Int?
    public var environment: AppStoreEnvironment
    public var signedDate: Date
    public var expirationIntent: Int?
    public var isInBillingRetryPeriod: Bool?
    public var gracePeriodExpiresDate: Date?
    public var renewalDate: Date?
    public var recentSubscriptionStartDate: Date?
    public var renewalPrice: Int64?
    public var currency: String?
    public var appAccountToken: UUID?

    public init(
        originalTransactionID: String, productID: String?, autoRenewProductID: String?, autoRenewStatus: Int?,
        environment: AppStoreEnvironment, signedDate: Date, expirationIntent: Int? = nil,
        isInBillingRetryPeriod: Bool? = nil, gracePeriodExpiresDate: Date? = nil, renewalDate: Date? = nil,
        recentSubscriptionStartDate: Date? = nil, renewalPrice: Int64? = nil, currency: String? = nil,
        appAccountToken: UUID? = nil
    ) {
        self.originalTransactionID = originalTransactionID
        self.productID = productID
        self.autoRenewProductID = autoRenewProductID
        self.autoRenewStatus = autoRenewStatus
        self.environment = environment
        self.signedDate = signedDate
        self.expirationIntent = expirationIntent
        self.isInBillingRetryPeriod = isInBillingRetryPeriod
        self.gracePeriodExpiresDate = gracePeriodExpiresDate
        self.renewalDate = renewalDate
        self.recentSubscriptionStartDate = recentSubscriptionStartDate
        self.renewalPrice = renewalPrice
        self.currency = currency
        self.appAccountToken = appAccountToken
    }

    /// Decodes a payload whose signature was verified.
    public init(payload: JSONValue) throws(SignedDataError) {
        let reader = try PayloadReader(payload)
        self.init(
            originalTransactionID: try reader.requiredString("originalTransactionId"),
            productID: try reader.string("productId"),
            autoRenewProductID: try reader.string("autoRenewProductId"),
            autoRenewStatus: try reader.integer("autoRenewStatus").map { Int(clamping: $0) },
            environment: try reader.environment(),
            signedDate: try reader.requiredDate("signedDate"),
            expirationIntent: try reader.integer("expirationIntent").map { Int(clamping: $0) },
            isInBillingRetryPeriod: try reader.bool("isInBillingRetryPeriod"),
            gracePeriodExpiresDate: try reader.date("gracePeriodExpiresDate"),
            renewalDate: try reader.date("renewalDate"),
            recentSubscriptionStartDate: try reader.date("recentSubscriptionStartDate"),
            renewalPrice: try reader.integer("renewalPrice"),
            currency: try reader.string("currency"),
            appAccountToken: try reader.uuid("appAccountToken"))
    }

    /// The payload as Apple writes it.
    public var payload: JSONValue {
        var members: [String: JSONValue] = [
            "originalTransactionId": .string(originalTransactionID), "environment": .string(environment.rawValue),
            "signedDate": .int(Int(signedDate.millisecondsSince1970)),
        ]
        members["productId"] = productID.map { .string($0) }
        members["autoRenewProductId"] = autoRenewProductID.map { .string($0) }
        members["autoRenewStatus"] = autoRenewStatus.map { .int($0) }
        members["expirationIntent"] = expirationIntent.map { .int($0) }
        members["isInBillingRetryPeriod"] = isInBillingRetryPeriod.map { .bool($0) }
        members["gracePeriodExpiresDate"] = gracePeriodExpiresDate.map { .int(Int($0.millisecondsSince1970)) }
        members["renewalDate"] = renewalDate.map { .int(Int($0.millisecondsSince1970)) }
        members["recentSubscriptionStartDate"] = recentSubscriptionStartDate.map { .int(Int($0.millisecondsSince1970)) }
        members["renewalPrice"] = renewalPrice.map { .int(Int($0)) }
        members["currency"] = currency.map { .string($0) }
        members["appAccountToken"] = appAccountToken.map { .string($0.uuidString.lowercased()) }
        return .object(members)
    }
}

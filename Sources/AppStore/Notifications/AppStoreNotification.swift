// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON

/// A verified, decoded App Store Server Notification V2 (`signedPayload`), with its inner
/// `signedTransactionInfo` and `signedRenewalInfo` verified by the same rules.
///
/// Apple retries a notification until it is answered 200–206, and may send the same one more
/// than once: ``notificationUUID`` is the idempotency key.
public struct AppStoreNotification: Sendable, Hashable {
    public var notificationType: NotificationType
    public var subtype: Subtype?
    public var notificationUUID: String
    public var version: String?
    public var signedDate: Date
    public var bundleID: String
    public var appAppleID: Int64?
    public var environment: AppStoreEnvironment
    public var bundleVersion: String?
    /// The transaction the notification is about (verified), if it carries one.
    public var transaction: AppStoreTransaction?
    /// The subscription's renewal info (verified), if it carries one.
    public var renewalInfo: AppStoreRenewalInfo?
    /// CONSUMPTION_REQUEST only: why the customer asked for a refund (`UNINTENDED_PURCHASE`,
    /// `FULFILLMENT_ISSUE`, `UNSATISFIED_WITH_PURCHASE`, `LEGAL`, `OTHER`), when Apple says.
    public var consumptionRequestReason: String?

    /// Apple's `notificationType` values (others are kept as they come).
    public struct NotificationType: OpenStringEnumeration {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let oneTimeCharge = Self(rawValue: "ONE_TIME_CHARGE")
        public static let subscribed = Self(rawValue: "SUBSCRIBED")
        public static let didRenew = Self(rawValue: "DID_RENEW")
        public static let didFailToRenew = Self(rawValue: "DID_FAIL_TO_RENEW")
        public static let gracePeriodExpired = Self(rawValue: "GRACE_PERIOD_EXPIRED")
        public static let didChangeRenewalPref = Self(rawValue: "DID_CHANGE_RENEWAL_PREF")
        public static let renewalExtended = Self(rawValue: "RENEWAL_EXTENDED")
        public static let didChangeRenewalStatus = Self(rawValue: "DID_CHANGE_RENEWAL_STATUS")
        public static let expired = Self(rawValue: "EXPIRED")
        public static let refund = Self(rawValue: "REFUND")
        public static let refundDeclined = Self(rawValue: "REFUND_DECLINED")
        public static let refundReversed = Self(rawValue: "REFUND_REVERSED")
        public static let revoke = Self(rawValue: "REVOKE")
        public static let consumptionRequest = Self(rawValue: "CONSUMPTION_REQUEST")
        public static let test = Self(rawValue: "TEST")
    }

    /// Apple's `subtype` values (others are kept as they come).
    public struct Subtype: OpenStringEnumeration {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let initialBuy = Self(rawValue: "INITIAL_BUY")
        public static let resubscribe = Self(rawValue: "RESUBSCRIBE")
        public static let autoRenewEnabled = Self(rawValue: "AUTO_RENEW_ENABLED")
        public static let autoRenewDisabled = Self(rawValue: "AUTO_RENEW_DISABLED")
        public static let voluntary = Self(rawValue: "VOLUNTARY")
        public static let billingRetry = Self(rawValue: "BILLING_RETRY")
        public static let billingRecovery = Self(rawValue: "BILLING_RECOVERY")
        public static let gracePeriod = Self(rawValue: "GRACE_PERIOD")
        public static let upgrade = Self(rawValue: "UPGRADE")
        public static let downgrade = Self(rawValue: "DOWNGRADE")
    }

    public init(
        notificationType: NotificationType, subtype: Subtype? = nil, notificationUUID: String, version: String? = "2.0",
        signedDate: Date, bundleID: String, appAppleID: Int64?, environment: AppStoreEnvironment,
        bundleVersion: String? = nil, transaction: AppStoreTransaction? = nil, renewalInfo: AppStoreRenewalInfo? = nil,
        consumptionRequestReason: String? = nil
    ) {
        self.notificationType = notificationType
        self.subtype = subtype
        self.notificationUUID = notificationUUID
        self.version = version
        self.signedDate = signedDate
        self.bundleID = bundleID
        self.appAppleID = appAppleID
        self.environment = environment
        self.bundleVersion = bundleVersion
        self.transaction = transaction
        self.renewalInfo = renewalInfo
        self.consumptionRequestReason = consumptionRequestReason
    }
}

/// The outer notification payload before its inner JWS are verified.
struct NotificationEnvelope {
    let notificationType: AppStoreNotification.NotificationType
    let subtype: AppStoreNotification.Subtype?
    let notificationUUID: String
    let version: String?
    let signedDate: Date
    let bundleID: String
    let appAppleID: Int64?
    let environment: AppStoreEnvironment
    let bundleVersion: String?
    let signedTransactionInfo: String?
    let signedRenewalInfo: String?
    let consumptionRequestReason: String?

    init(payload: JSONValue) throws(SignedDataError) {
        let reader = try PayloadReader(payload)
        notificationType = .init(rawValue: try reader.requiredString("notificationType"))
        subtype = try reader.string("subtype").map(AppStoreNotification.Subtype.init(rawValue:))
        notificationUUID = try reader.requiredString("notificationUUID")
        version = try reader.string("version")
        signedDate = try reader.requiredDate("signedDate")
        // Subscription-wide notifications (renewal extensions) carry `summary` instead of `data`.
        guard let data = payload["data"] ?? payload["summary"] else {
            throw SignedDataError(.malformed, "notification has neither data nor summary")
        }
        let inner = try PayloadReader(data)
        bundleID = try inner.requiredString("bundleId")
        appAppleID = try inner.integer("appAppleId")
        environment = try inner.environment()
        bundleVersion = try inner.string("bundleVersion")
        signedTransactionInfo = try inner.string("signedTransactionInfo")
        signedRenewalInfo = try inner.string("signedRenewalInfo")
        consumptionRequestReason = try inner.string("consumptionRequestReason")
    }
}

extension AppStoreNotification {
    /// The payload as Apple writes it, given the inner JWS (the simulator signs this).
    public func payload(signedTransactionInfo: String?, signedRenewalInfo: String?) -> JSONValue {
        var data: [String: JSONValue] = ["bundleId": .string(bundleID), "environment": .string(environment.rawValue)]
        data["appAppleId"] = appAppleID.map { .int(Int($0)) }
        data["bundleVersion"] = bundleVersion.map { .string($0) }
        data["signedTransactionInfo"] = signedTransactionInfo.map { .string($0) }
        data["signedRenewalInfo"] = signedRenewalInfo.map { .string($0) }
        data["consumptionRequestReason"] = consumptionRequestReason.map { .string($0) }
        var members: [String: JSONValue] = [
            "notificationType": .string(notificationType.rawValue), "notificationUUID": .string(notificationUUID),
            "signedDate": .int(Int(signedDate.millisecondsSince1970)), "data": .object(data),
        ]
        members["subtype"] = subtype.map { .string($0.rawValue) }
        members["version"] = version.map { .string($0) }
        return .object(members)
    }
}

extension AppStoreNotification {
    /// The `notificationUUID` a signed payload claims, read without verifying anything: only to
    /// skip work already done (a notification handled under that UUID), never to believe it. Nil
    /// for a token that is not a well-formed App Store JWS.
    public static func claimedUUID(_ signedPayload: String) -> String? {
        guard let jws = try? CompactJWS(signedPayload) else { return nil }
        return jws.payload["notificationUUID"]?.stringValue
    }
}

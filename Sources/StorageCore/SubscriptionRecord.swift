// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Where an auto-renewable subscription stands, in Apple's words: Get All Subscription Statuses'
/// `status` 1 to 5.
public enum SubscriptionStatus: String, Sendable, Hashable, CaseIterable {
    case active
    case expired
    case billingRetry = "billing_retry"
    case gracePeriod = "grace_period"
    case revoked

    /// Apple's `status` number, or nil for another.
    public init?(appleStatus: Int) {
        switch appleStatus {
        case 1: self = .active
        case 2: self = .expired
        case 3: self = .billingRetry
        case 4: self = .gracePeriod
        case 5: self = .revoked
        default: return nil
        }
    }

    /// Apple may still charge (and then renew) it by itself.
    public var mayRenew: Bool { self == .active || self == .gracePeriod || self == .billingRetry }
}

/// What one verified word from Apple says about one subscription: a notification (its signed
/// transaction and renewal info) or one item of Get All Subscription Statuses. The subscription's
/// row is the merge of every observation ever made (`SubscriptionRecord.merging`), whatever order
/// they arrived in.
public struct SubscriptionObservation: Sendable, Hashable {
    /// The transaction the observation carries (a notification about an old renewal carries that one).
    public struct Transaction: Sendable, Hashable {
        public var transactionID: String
        public var productID: String
        public var purchaseDate: Date
        public var expiresDate: Date
        public var revocationDate: Date?

        public init(transactionID: String, productID: String, purchaseDate: Date, expiresDate: Date, revocationDate: Date?) {
            self.transactionID = transactionID
            self.productID = productID
            self.purchaseDate = purchaseDate
            self.expiresDate = expiresDate
            self.revocationDate = revocationDate
        }
    }

    /// The signed renewal info: what Apple will do at the period's end.
    public struct Renewal: Sendable, Hashable {
        public var autoRenew: Bool
        public var autoRenewProductID: String?
        public var inBillingRetry: Bool
        public var gracePeriodExpiresDate: Date?

        public init(autoRenew: Bool, autoRenewProductID: String?, inBillingRetry: Bool, gracePeriodExpiresDate: Date?) {
            self.autoRenew = autoRenew
            self.autoRenewProductID = autoRenewProductID
            self.inBillingRetry = inBillingRetry
            self.gracePeriodExpiresDate = gracePeriodExpiresDate
        }
    }

    public var originalTransactionID: String
    /// `Production` or `Sandbox`.
    public var environment: String
    /// When Apple signed it: the newest signed word about a subscription is the one that counts.
    public var signedAt: Date
    public var transaction: Transaction
    public var renewal: Renewal?
    /// The status Apple states outright (a status read; EXPIRED, DID_FAIL_TO_RENEW and
    /// GRACE_PERIOD_EXPIRED notifications), or nil when it follows from the facts.
    public var stated: SubscriptionStatus?
    /// For people: `notification DID_RENEW/BILLING_RECOVERY`, `subscription status`.
    public var source: String

    public init(originalTransactionID: String, environment: String, signedAt: Date, transaction: Transaction, renewal: Renewal?,
                stated: SubscriptionStatus?, source: String) {
        self.originalTransactionID = originalTransactionID
        self.environment = environment
        self.signedAt = signedAt
        self.transaction = transaction
        self.renewal = renewal
        self.stated = stated
        self.source = source
    }
}

/// One auto-renewable subscription (an `original_transaction_id`) as the gateway last heard of it
/// from Apple. Three parts, each kept from the observation that is newest for it, so the row is
/// the same whatever order the observations arrived in:
/// - the **latest transaction** (the one bought last, `purchaseDate`; its newest signed copy, so
///   an extension's new `expiresDate` or a refund's `revocationDate`, and its reversal, count);
/// - the **renewal info** of the newest observation that carried one (auto-renew, billing retry,
///   grace period);
/// - the **stated status** of the newest observation of all.
public struct SubscriptionRecord: Sendable, Hashable {
    public var originalTransactionID: String
    public var environment: String
    public var latestTransactionID: String
    /// The Apple product of the latest transaction.
    public var productID: String
    /// The latest transaction's `purchaseDate` and `expiresDate`.
    public var periodStartedAt: Date
    public var expiresAt: Date
    /// When Apple signed the copy of the latest transaction kept.
    public var transactionSignedAt: Date
    /// The latest transaction was refunded or revoked then.
    public var revokedAt: Date?
    public var renewalSignedAt: Date?
    public var autoRenew: Bool
    public var autoRenewProductID: String?
    public var inBillingRetry: Bool
    public var gracePeriodExpiresAt: Date?
    /// The newest observation's signing date, stated status and source.
    public var signedAt: Date
    public var stated: SubscriptionStatus?
    public var source: String
    /// When the gateway last heard from Apple about it (any observation, even an older one).
    public var checkedAt: Date

    public init(originalTransactionID: String, environment: String, latestTransactionID: String, productID: String,
                periodStartedAt: Date, expiresAt: Date, transactionSignedAt: Date, revokedAt: Date?, renewalSignedAt: Date?,
                autoRenew: Bool, autoRenewProductID: String?, inBillingRetry: Bool, gracePeriodExpiresAt: Date?, signedAt: Date,
                stated: SubscriptionStatus?, source: String, checkedAt: Date) {
        self.originalTransactionID = originalTransactionID
        self.environment = environment
        self.latestTransactionID = latestTransactionID
        self.productID = productID
        self.periodStartedAt = periodStartedAt
        self.expiresAt = expiresAt
        self.transactionSignedAt = transactionSignedAt
        self.revokedAt = revokedAt
        self.renewalSignedAt = renewalSignedAt
        self.autoRenew = autoRenew
        self.autoRenewProductID = autoRenewProductID
        self.inBillingRetry = inBillingRetry
        self.gracePeriodExpiresAt = gracePeriodExpiresAt
        self.signedAt = signedAt
        self.stated = stated
        self.source = source
        self.checkedAt = checkedAt
    }

    /// The row a first observation makes.
    public init(first observation: SubscriptionObservation, heardAt: Date) {
        let transaction = observation.transaction
        self.init(originalTransactionID: observation.originalTransactionID, environment: observation.environment,
                  latestTransactionID: transaction.transactionID, productID: transaction.productID,
                  periodStartedAt: transaction.purchaseDate, expiresAt: transaction.expiresDate,
                  transactionSignedAt: observation.signedAt, revokedAt: transaction.revocationDate,
                  renewalSignedAt: observation.renewal == nil ? nil : observation.signedAt,
                  autoRenew: observation.renewal?.autoRenew ?? false, autoRenewProductID: observation.renewal?.autoRenewProductID,
                  inBillingRetry: observation.renewal?.inBillingRetry ?? false,
                  gracePeriodExpiresAt: observation.renewal?.gracePeriodExpiresDate, signedAt: observation.signedAt,
                  stated: observation.stated, source: observation.source, checkedAt: heardAt)
    }

    /// This row with `observation` merged in. Each part takes the observation only when it is
    /// newer for that part (ties keep what is there), so merging is commutative and idempotent.
    public func merging(_ observation: SubscriptionObservation, heardAt: Date) -> SubscriptionRecord {
        var merged = self
        merged.checkedAt = max(checkedAt, heardAt)
        let transaction = observation.transaction
        let newerTransaction = (transaction.purchaseDate, transaction.transactionID) > (periodStartedAt, latestTransactionID)
            && transaction.transactionID != latestTransactionID
        let newerCopy = transaction.transactionID == latestTransactionID && observation.signedAt > transactionSignedAt
        if newerTransaction || newerCopy {
            merged.latestTransactionID = transaction.transactionID
            merged.productID = transaction.productID
            merged.periodStartedAt = transaction.purchaseDate
            merged.expiresAt = transaction.expiresDate
            merged.transactionSignedAt = observation.signedAt
            merged.revokedAt = transaction.revocationDate
        }
        if let renewal = observation.renewal,
           renewalSignedAt.map({ (observation.signedAt, Self.lateness(renewal)) > ($0, Self.lateness(currentRenewal)) }) ?? true {
            merged.renewalSignedAt = observation.signedAt
            merged.autoRenew = renewal.autoRenew
            merged.autoRenewProductID = renewal.autoRenewProductID
            merged.inBillingRetry = renewal.inBillingRetry
            merged.gracePeriodExpiresAt = renewal.gracePeriodExpiresDate
        }
        if (observation.signedAt, Self.lateness(observation.stated), observation.source) > (signedAt, Self.lateness(stated), source) {
            merged.signedAt = observation.signedAt
            merged.stated = observation.stated
            merged.source = observation.source
        }
        return merged
    }

    // Two words signed in the same millisecond (never seen from Apple, whose notifications of
    // one subscription are signed as they are sent) are told apart by what comes later in a
    // subscription's life, so that even then the merge does not depend on their order.

    private var currentRenewal: SubscriptionObservation.Renewal {
        .init(autoRenew: autoRenew, autoRenewProductID: autoRenewProductID, inBillingRetry: inBillingRetry,
              gracePeriodExpiresDate: gracePeriodExpiresAt)
    }

    private static func lateness(_ renewal: SubscriptionObservation.Renewal) -> Int {
        (renewal.autoRenew ? 0 : 2) + (renewal.inBillingRetry ? 0 : 1)
    }

    private static func lateness(_ status: SubscriptionStatus?) -> Int {
        switch status {
        case nil: 0
        case .active: 1
        case .gracePeriod: 2
        case .billingRetry: 3
        case .expired: 4
        case .revoked: 5
        }
    }

    /// Where it stands as of the newest observation: revoked when its latest transaction was;
    /// else what Apple stated; else billing retry (within its grace period or past it) while the
    /// renewal info says so; else active until the latest transaction expires.
    public var status: SubscriptionStatus {
        if revokedAt != nil { return .revoked }
        if let stated { return stated }
        if inBillingRetry {
            return gracePeriodExpiresAt.map { $0 > signedAt } == true ? .gracePeriod : .billingRetry
        }
        return expiresAt > signedAt ? .active : .expired
    }

    /// Until when it gives access: the period's end, or the grace period's in a grace period, or
    /// the revocation (if earlier than the period's end).
    public var accessEndsAt: Date {
        switch status {
        case .revoked: min(expiresAt, revokedAt ?? expiresAt)
        case .gracePeriod: max(expiresAt, gracePeriodExpiresAt ?? expiresAt)
        default: expiresAt
        }
    }

    /// Apple will renew it by itself: auto-renew is on and it has not ended for good.
    public var willRenew: Bool { autoRenew && status.mayRenew }

    /// What entitlements read of it: a merge that leaves these alike changes nobody's access.
    public var grantFacts: [String] {
        [status.rawValue, String(accessEndsAt.timeIntervalSince1970), String(willRenew), productID]
    }
}

/// Auto-renewable subscriptions as the App Store last told of them, one row each.
///
/// Every method is atomic; writes return only once durable. Implementations: `SQLiteOrderStore`,
/// `PostgresOrderStore`.
public protocol SubscriptionStore: Sendable {
    /// Merges `observation` into its subscription's row (made on first sight), in one transaction
    /// in which nobody else merges into it; when the merge changes what the row grants
    /// (`grantFacts`), `announcement` is written to the outbox in the same transaction. Returns the
    /// merged row and whether it changed what it grants.
    func recordSubscription(_ observation: SubscriptionObservation, heardAt: Date, announcement: OutboxEvent?)
        async throws(StorageError) -> (record: SubscriptionRecord, grantsChanged: Bool)

    /// The rows of these subscriptions that exist, in no particular order.
    func subscriptions(originalTransactionIDs: [String]) async throws(StorageError) -> [SubscriptionRecord]

    /// Subscriptions Apple may still renew by itself (active, grace period, billing retry) that are
    /// due a fresh status read: not heard of since `heardBefore`, and either ending (period or
    /// grace period) before `endingBefore`, or not heard of for a whole period (as long as its
    /// latest transaction's) by `now`. Least recently heard of first, at most `limit`.
    func subscriptionsToRecheck(now: Date, endingBefore: Date, heardBefore: Date, limit: Int)
        async throws(StorageError) -> [SubscriptionRecord]

    /// Records that the gateway asked Apple about the subscription at `at` (when Apple's answer
    /// said nothing of it), so that it is not asked again at once.
    func markSubscriptionChecked(_ originalTransactionID: String, at: Date) async throws(StorageError)
}

extension SubscriptionRecord {
    /// The columns both stores select, in `init(row:)`'s order.
    package static let columns: SQL = """
        original_transaction_id, environment, latest_transaction_id, product_id, period_started_at, expires_at, \
        transaction_signed_at, revoked_at, renewal_signed_at, auto_renew, auto_renew_product_id, in_billing_retry, \
        grace_period_expires_at, signed_at, stated_status, source, checked_at
        """

    package init(row: some StoreRow) throws(StorageError) {
        let stated = try row.optionalText(14)
        let statedStatus = try stated.map { text throws(StorageError) in
            guard let status = SubscriptionStatus(rawValue: text) else { throw StorageError.unexpectedRow }
            return status
        }
        self.init(originalTransactionID: try row.text(0), environment: try row.text(1), latestTransactionID: try row.text(2),
                  productID: try row.text(3), periodStartedAt: try row.date(4), expiresAt: try row.date(5),
                  transactionSignedAt: try row.date(6), revokedAt: try row.optionalDate(7), renewalSignedAt: try row.optionalDate(8),
                  autoRenew: try row.int(9) != 0, autoRenewProductID: try row.optionalText(10), inBillingRetry: try row.int(11) != 0,
                  gracePeriodExpiresAt: try row.optionalDate(12), signedAt: try row.date(13), stated: statedStatus,
                  source: try row.text(15), checkedAt: try row.date(16))
    }

    /// Text every store keeps (no U+0000).
    package func validate() throws(StorageError) {
        try StoreText.validate(originalTransactionID, environment, latestTransactionID, productID, autoRenewProductID, source)
    }
}

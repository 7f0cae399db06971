// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import JSON
import SimulatorKit
import Synchronization

/// Auto-renewable subscriptions on the simulator's clock, as the App Store runs them: each period
/// ends in a renewal (a new transaction under the same original transaction id, DID_RENEW), a
/// failed charge in billing retry (DID_FAIL_TO_RENEW, with a grace period when the product has
/// one, then GRACE_PERIOD_EXPIRED), a recovery (DID_RENEW BILLING_RECOVERY) or an expiry (EXPIRED
/// BILLING_RETRY, or VOLUNTARY once auto-renew is off). What customers do to them — turn
/// auto-renew off, upgrade, downgrade — and what the test makes the bank do are the control API's.
///
/// Time moves in the background loop (``run()``) and is caught up before every request and
/// control action, event by event in date order, so a clock advanced by a year renews twelve
/// times, each period from the end of the last.
extension AppStoreSimulator {
    /// A renewal's web order line item id: distinct for each transaction of a subscription.
    static func webOrderLineItemID(_ transactionID: String) -> String {
        String((UInt64(transactionID) ?? 0) &- 1_000_000_000_000)
    }

    /// The subscription's signed renewal info as it stands.
    func renewalInfo(_ subscription: SimulatedSubscription, now: Date, store: StoreState) -> AppStoreRenewalInfo {
        let renewing = subscription.phase == .active || subscription.phase == .gracePeriod || subscription.phase == .billingRetry
        let price = configuration.priceOf?(subscription.autoRenewProductID) ?? AppStoreSimulatorConfiguration.defaultPrice
        return AppStoreRenewalInfo(
            originalTransactionID: subscription.originalTransactionID, productID: subscription.productID,
            autoRenewProductID: subscription.autoRenewProductID,
            autoRenewStatus: subscription.autoRenewEnabled && renewing ? 1 : 0, environment: subscription.environment,
            signedDate: now, expirationIntent: subscription.phase == .expired ? subscription.expirationIntent : nil,
            isInBillingRetryPeriod: subscription.phase == .billingRetry || subscription.phase == .gracePeriod,
            gracePeriodExpiresDate: subscription.phase == .gracePeriod ? subscription.gracePeriodExpiresDate : nil,
            renewalDate: subscription.expiresDate, recentSubscriptionStartDate: subscription.recentSubscriptionStartDate,
            renewalPrice: price.price, currency: price.currency, appAccountToken: subscription.appAccountToken)
    }

    /// Acts out every subscription event due by now, and sends their notifications.
    public func catchUpSubscriptions() {
        let now = clock.now()
        state.withLock { advanceSubscriptions(to: now, store: &$0) }
        sendOutbox()
    }

    /// Every due event, earliest first, each at its own date (notifications into the outbox).
    func advanceSubscriptions(to now: Date, store: inout StoreState) {
        let retryDays = configuration.billingRetryDays
        while true {
            var due: (date: Date, id: String)?
            for (id, subscription) in store.subscriptions {
                guard let date = subscription.nextEvent(retryDays: retryDays), date <= now else { continue }
                if due == nil || date < due!.date || (date == due!.date && id < due!.id) { due = (date, id) }
            }
            guard let (date, id) = due else { return }
            step(id, at: date, now: now, store: &store)
        }
    }

    /// One event of one subscription at `date`.
    private func step(_ id: String, at date: Date, now: Date, store: inout StoreState) {
        guard var subscription = store.subscriptions[id] else { return }
        let product = store.subscriptionProduct(subscription.autoRenewProductID)
        var notify: (AppStoreNotification.NotificationType, AppStoreNotification.Subtype?)?
        switch subscription.phase {
        case .active:
            if !subscription.autoRenewEnabled {
                subscription.phase = .expired
                subscription.expirationIntent = 1
                notify = (.expired, .voluntary)
            } else if subscription.failuresAhead > 0 {
                if subscription.failuresAhead != .max { subscription.failuresAhead -= 1 }
                subscription.billingRetryStarted = date
                subscription.nextRetry = date.addingTimeInterval(configuration.billingRetryInterval)
                if product.gracePeriodDays > 0 {
                    subscription.phase = .gracePeriod
                    subscription.gracePeriodExpiresDate = date.addingTimeInterval(Double(product.gracePeriodDays) * 86400)
                    notify = (.didFailToRenew, .gracePeriod)
                } else {
                    subscription.phase = .billingRetry
                    notify = (.didFailToRenew, nil)
                }
            } else {
                store.subscriptions[id] = subscription
                renew(id, periodStart: date, purchaseDate: date, subtype: nil, now: now, store: &store)
                return
            }
        case .gracePeriod, .billingRetry:
            let retryEnd = (subscription.billingRetryStarted ?? date).addingTimeInterval(Double(configuration.billingRetryDays) * 86400)
            if let retry = subscription.nextRetry, retry <= date, retry < retryEnd {
                if !subscription.autoRenewEnabled {
                    subscription.phase = .expired
                    subscription.expirationIntent = 1
                    notify = (.expired, .voluntary)
                } else if subscription.failuresAhead > 0 {
                    if subscription.failuresAhead != .max { subscription.failuresAhead -= 1 }
                    subscription.nextRetry = retry.addingTimeInterval(configuration.billingRetryInterval)
                    store.subscriptions[id] = subscription
                    return
                } else {
                    let inGrace = subscription.phase == .gracePeriod
                    store.subscriptions[id] = subscription
                    // Recovered in the grace period, the renewal date stays; later, it becomes the recovery's.
                    renew(id, periodStart: inGrace ? subscription.expiresDate : date, purchaseDate: date,
                          subtype: .billingRecovery, now: now, store: &store)
                    return
                }
            } else if subscription.phase == .gracePeriod, let grace = subscription.gracePeriodExpiresDate, grace <= date {
                subscription.phase = .billingRetry
                subscription.gracePeriodExpiresDate = nil
                notify = (.gracePeriodExpired, nil)
            } else {
                subscription.phase = .expired
                subscription.expirationIntent = 2
                subscription.nextRetry = nil
                notify = (.expired, .billingRetry)
            }
        case .expired, .revoked:
            return
        }
        if subscription.phase == .expired {
            subscription.billingRetryStarted = nil
            subscription.gracePeriodExpiresDate = nil
            subscription.nextRetry = nil
            subscription.failuresAhead = 0
        }
        store.subscriptions[id] = subscription
        store.count("subscription \(notify.map { [$0.0.rawValue, $0.1?.rawValue].compactMap { $0 }.joined(separator: " ") } ?? "")")
        if let notify, let latest = store.transactions[subscription.latestTransactionID] {
            // Signed when the event happened, as Apple signs a notification when it sends it: a
            // clock moved by months acts out each event in turn, not all at the same instant.
            store.outbox.append(notificationFor(latest, type: notify.0, subtype: notify.1, now: date, store: &store))
        }
    }

    /// A successful charge: the next period's transaction (the auto-renew product's, so a
    /// downgrade takes effect here) and its DID_RENEW.
    private func renew(_ id: String, periodStart: Date, purchaseDate: Date, subtype: AppStoreNotification.Subtype?, now: Date,
                       store: inout StoreState) {
        guard var subscription = store.subscriptions[id], let previous = store.transactions[subscription.latestTransactionID]
        else { return }
        let product = store.subscriptionProduct(subscription.autoRenewProductID)
        let continuing = product.productID == subscription.productID && periodStart == subscription.expiresDate
        if continuing {
            subscription.periodsFromAnchor += 1
        } else {
            subscription.anchor = periodStart
            subscription.periodsFromAnchor = 1
        }
        let expires = product.end(from: subscription.anchor, periods: subscription.periodsFromAnchor)
        let record = addTransaction(to: &subscription, product: product.productID, purchaseDate: purchaseDate, expires: expires,
                                    reason: .renewal, previous: previous.transaction, now: now, store: &store)
        subscription.phase = .active
        subscription.billingRetryStarted = nil
        subscription.gracePeriodExpiresDate = nil
        subscription.nextRetry = nil
        subscription.expirationIntent = nil
        store.subscriptions[id] = subscription
        store.count("renewals")
        store.outbox.append(notificationFor(record, type: .didRenew, subtype: subtype, now: purchaseDate, store: &store))
    }

    /// A new transaction of the subscription (a renewal, an upgrade) at the product's price,
    /// recorded, and made the subscription's latest.
    private func addTransaction(to subscription: inout SimulatedSubscription, product: String, purchaseDate: Date, expires: Date,
                                reason: AppStoreTransaction.TransactionReason, previous: AppStoreTransaction, now: Date,
                                store: inout StoreState) -> SimulatedTransaction {
        let price = configuration.priceOf?(product) ?? AppStoreSimulatorConfiguration.defaultPrice
        let transactionID = store.newTransactionID(subscription.environment)
        let transaction = AppStoreTransaction(
            transactionID: transactionID, originalTransactionID: subscription.originalTransactionID,
            bundleID: configuration.bundleID, productID: product, type: .autoRenewableSubscription,
            appAccountToken: subscription.appAccountToken, inAppOwnershipType: subscription.ownership,
            environment: subscription.environment, purchaseDate: purchaseDate,
            originalPurchaseDate: previous.originalPurchaseDate, expiresDate: expires, signedDate: now,
            price: price.price, currency: price.currency, transactionReason: reason, storefront: subscription.storefront,
            webOrderLineItemID: Self.webOrderLineItemID(transactionID), subscriptionGroupIdentifier: subscription.groupIdentifier)
        let record = SimulatedTransaction(transaction: transaction, user: subscription.user, orderID: store.newOrderID())
        store.transactions[transactionID] = record
        store.chronology.append(transactionID)
        subscription.productID = product
        subscription.latestTransactionID = transactionID
        subscription.expiresDate = expires
        return record
    }

    // MARK: - The control API's commands

    /// The next `count` charges of the subscription fail (its renewal at the period's end, then
    /// Apple's daily retries); nil: every one until billing retry gives up. Returns the state.
    @discardableResult
    public func failRenewals(originalTransactionID id: String, count: Int?) throws(AppStoreSimulatorControlError)
        -> SubscriptionSnapshot
    {
        try changeSubscription(id) { subscription, _, _ throws(AppStoreSimulatorControlError) in
            try Self.requireLive(subscription)
            subscription.failuresAhead = count.map { max(0, $0) } ?? .max
            return nil
        }
    }

    /// The customer fixes their payment method: the failures planned are cleared and, in billing
    /// retry or grace, Apple charges at once (DID_RENEW BILLING_RECOVERY).
    @discardableResult
    public func recoverBilling(originalTransactionID id: String) throws(AppStoreSimulatorControlError) -> SubscriptionSnapshot {
        try changeSubscription(id) { subscription, now, _ throws(AppStoreSimulatorControlError) in
            try Self.requireLive(subscription)
            subscription.failuresAhead = 0
            if subscription.phase == .billingRetry || subscription.phase == .gracePeriod { subscription.nextRetry = now }
            return nil
        }
    }

    /// The customer turns auto-renew off or on: DID_CHANGE_RENEWAL_STATUS (AUTO_RENEW_DISABLED or
    /// AUTO_RENEW_ENABLED); off, the subscription expires at the period's end (EXPIRED VOLUNTARY).
    @discardableResult
    public func setAutoRenew(originalTransactionID id: String, enabled: Bool) throws(AppStoreSimulatorControlError)
        -> SubscriptionSnapshot
    {
        try changeSubscription(id) { subscription, _, _ throws(AppStoreSimulatorControlError) in
            try Self.requireLive(subscription)
            guard subscription.autoRenewEnabled != enabled else { return nil }
            subscription.autoRenewEnabled = enabled
            return (.didChangeRenewalStatus, enabled ? .autoRenewEnabled : .autoRenewDisabled, nil)
        }
    }

    /// The customer switches to another product of the group. A higher level (a smaller number),
    /// or the same level and duration (a crossgrade), takes effect now: a new transaction at the
    /// new product's price for a new period from now, the old one `isUpgraded` (Apple refunds its
    /// unused part to the customer) — DID_CHANGE_RENEWAL_PREF UPGRADE. A lower level, or the same
    /// level with another duration, waits for the renewal — DID_CHANGE_RENEWAL_PREF DOWNGRADE;
    /// choosing the current product again cancels that (no subtype).
    @discardableResult
    public func changeProduct(originalTransactionID id: String, to productID: String) throws(AppStoreSimulatorControlError)
        -> SubscriptionSnapshot
    {
        try changeSubscription(id) { subscription, now, store throws(AppStoreSimulatorControlError) in
            guard subscription.phase == .active || subscription.phase == .gracePeriod else {
                throw AppStoreSimulatorControlError(code: .subscriptionInactive)
            }
            let target = store.subscriptionProduct(productID)
            let current = store.subscriptionProduct(subscription.productID)
            guard !productID.isEmpty, target.groupIdentifier == subscription.groupIdentifier else {
                throw AppStoreSimulatorControlError(code: .invalidProduct)
            }
            if productID == subscription.productID {
                guard subscription.autoRenewProductID != productID else { return nil }
                subscription.autoRenewProductID = productID
                return (.didChangeRenewalPref, nil, nil)
            }
            let immediate = target.level < current.level
                || (target.level == current.level && target.nominalDays == current.nominalDays)
            guard immediate else {
                subscription.autoRenewProductID = productID
                return (.didChangeRenewalPref, .downgrade, nil)
            }
            guard var old = store.transactions[subscription.latestTransactionID] else {
                throw AppStoreSimulatorControlError(code: .subscriptionNotFound)
            }
            old.transaction.isUpgraded = true
            store.transactions[old.transaction.transactionID] = old
            let record = addTransaction(to: &subscription, product: productID, purchaseDate: now, expires: target.end(from: now),
                                        reason: .purchase, previous: old.transaction, now: now, store: &store)
            subscription.autoRenewProductID = productID
            subscription.anchor = now
            subscription.periodsFromAnchor = 1
            subscription.phase = .active
            subscription.gracePeriodExpiresDate = nil
            subscription.billingRetryStarted = nil
            subscription.nextRetry = nil
            store.count("upgrades")
            return (.didChangeRenewalPref, .upgrade, record)
        }
    }

    private static func requireLive(_ subscription: SimulatedSubscription) throws(AppStoreSimulatorControlError) {
        guard subscription.phase != .expired, subscription.phase != .revoked else {
            throw AppStoreSimulatorControlError(code: .subscriptionInactive)
        }
    }

    typealias SubscriptionNotice = (AppStoreNotification.NotificationType, AppStoreNotification.Subtype?, SimulatedTransaction?)

    /// The subscription as the App Store holds it.
    public func subscription(originalTransactionID id: String) -> SubscriptionSnapshot? {
        catchUpSubscriptions()
        let now = clock.now()
        return state.withLock { store in store.subscriptions[id].map { snapshot($0, now: now, store: store) } }
    }

    /// Configures auto-renewable products (replacing those of the same id).
    public func configureSubscriptionProducts(_ products: [AppStoreSubscriptionProduct]) {
        state.withLock { store in for product in products { store.subscriptionProducts[product.productID] = product } }
    }

    /// The products configured as auto-renewable subscriptions, by id.
    public var subscriptionProducts: [AppStoreSubscriptionProduct] {
        state.withLock { $0.subscriptionProducts.values.sorted { $0.productID < $1.productID } }
    }

    /// Applies one command to a subscription under the lock, then its notification (about the
    /// transaction it names, else the latest) and anything it made due.
    private func changeSubscription(
        _ id: String,
        _ change: (inout SimulatedSubscription, Date, inout StoreState) throws(AppStoreSimulatorControlError) -> SubscriptionNotice?
    ) throws(AppStoreSimulatorControlError) -> SubscriptionSnapshot {
        catchUpSubscriptions()
        let now = clock.now()
        let snapshot = try state.withLock { store throws(AppStoreSimulatorControlError) -> SubscriptionSnapshot in
            guard var subscription = store.subscriptions[id] else { throw AppStoreSimulatorControlError(code: .subscriptionNotFound) }
            let notice = try change(&subscription, now, &store)
            store.subscriptions[id] = subscription
            if let notice, let record = notice.2 ?? store.transactions[subscription.latestTransactionID] {
                store.outbox.append(notificationFor(record, type: notice.0, subtype: notice.1, now: now, store: &store))
            }
            // A retry set for now (a recovery) happens at once.
            advanceSubscriptions(to: now, store: &store)
            return self.snapshot(store.subscriptions[id]!, now: now, store: store)
        }
        sendOutbox()
        return snapshot
    }

    func snapshot(_ subscription: SimulatedSubscription, now: Date, store: StoreState) -> SubscriptionSnapshot {
        SubscriptionSnapshot(
            originalTransactionId: subscription.originalTransactionID, user: subscription.user,
            environment: subscription.environment, subscriptionGroupIdentifier: subscription.groupIdentifier,
            productId: subscription.productID, autoRenewProductId: subscription.autoRenewProductID,
            autoRenewStatus: subscription.autoRenewEnabled, status: subscription.phase.rawValue,
            state: "\(subscription.phase)", expiresDate: subscription.expiresDate.millisecondsSince1970,
            gracePeriodExpiresDate: subscription.phase == .gracePeriod ? subscription.gracePeriodExpiresDate?.millisecondsSince1970 : nil,
            latestTransactionId: subscription.latestTransactionID,
            transactionIds: store.chronology.filter {
                store.transactions[$0]?.transaction.originalTransactionID == subscription.originalTransactionID
            },
            failuresAhead: subscription.failuresAhead == .max ? nil : subscription.failuresAhead)
    }
}

/// A subscription as the control API shows it.
public struct SubscriptionSnapshot: Sendable, Codable, Hashable {
    public var originalTransactionId: String
    public var user: String
    public var environment: AppStoreEnvironment
    public var subscriptionGroupIdentifier: String
    public var productId: String
    public var autoRenewProductId: String
    public var autoRenewStatus: Bool
    /// Get All Subscription Statuses' status: 1 active, 2 expired, 3 billing retry, 4 grace period, 5 revoked.
    public var status: Int
    /// The same in words: `active`, `expired`, `billingRetry`, `gracePeriod`, `revoked`.
    public var state: String
    /// Milliseconds since 1970 (simulated time).
    public var expiresDate: Int64
    public var gracePeriodExpiresDate: Int64?
    public var latestTransactionId: String
    /// Every transaction of the subscription, oldest first.
    public var transactionIds: [String]
    /// Charges still planned to fail; nil when every one will.
    public var failuresAhead: Int?
}

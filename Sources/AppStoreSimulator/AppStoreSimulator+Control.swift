// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import JSON
import SimulatorKit
import Synchronization

extension AppStoreSimulator {
    /// The customer buys: a transaction is recorded and signed, and its notification queued
    /// (ONE_TIME_CHARGE, or SUBSCRIBED/INITIAL_BUY for an auto-renewable subscription).
    @discardableResult
    public func purchase(_ purchase: SimulatedPurchase) throws(AppStoreSimulatorControlError) -> PurchaseReceipt {
        // StoreKit sells several at once only of a consumable.
        guard !purchase.user.isEmpty, !purchase.productID.isEmpty, (1...10).contains(purchase.quantity),
              purchase.quantity == 1 || purchase.type == AppStoreTransaction.ProductType.consumable.rawValue,
              purchase.offerType.map({ (1...4).contains($0) }) ?? true else {
            throw AppStoreSimulatorControlError(code: .invalidPurchase)
        }
        let now = clock.now()
        let listed = configuration.priceOf?(purchase.productID) ?? AppStoreSimulatorConfiguration.defaultPrice
        // Apple's `price` is the whole transaction's: the price of one times the quantity.
        let price = purchase.price ?? listed.price * Int64(purchase.quantity)
        let currency = purchase.currency ?? (purchase.price == nil ? listed.currency : "CNY")
        catchUpSubscriptions()
        let type = AppStoreTransaction.ProductType(rawValue: purchase.type)
        let receipt = try state.withLock { store throws(AppStoreSimulatorControlError) -> PurchaseReceipt in
            var subscribed: AppStoreNotification.Subtype?
            var subscription: SimulatedSubscription?
            var product: AppStoreSubscriptionProduct?
            if type == .autoRenewableSubscription {
                let configured = store.subscriptionProduct(purchase.productID)
                product = configured
                if let current = store.subscription(of: purchase.user, group: configured.groupIdentifier, purchase.environment) {
                    // StoreKit does not sell a subscription the customer already has; one that
                    // ended is bought again under its original transaction id.
                    guard current.phase == .expired || current.phase == .revoked else {
                        throw AppStoreSimulatorControlError(code: .alreadySubscribed)
                    }
                    subscription = current
                    subscribed = .resubscribe
                } else {
                    subscribed = .initialBuy
                }
            }
            let id = store.newTransactionID(purchase.environment)
            let original = subscription?.originalTransactionID ?? id
            let originalPurchaseDate = subscription.flatMap { store.transactions[$0.originalTransactionID]?.transaction.purchaseDate } ?? now
            let expires = product?.end(from: now)
            let transaction = AppStoreTransaction(
                transactionID: id, originalTransactionID: original, bundleID: configuration.bundleID,
                productID: purchase.productID, type: type, quantity: purchase.quantity,
                appAccountToken: purchase.appAccountToken, inAppOwnershipType: .init(rawValue: purchase.ownership),
                environment: purchase.environment, purchaseDate: now, originalPurchaseDate: originalPurchaseDate,
                expiresDate: expires, signedDate: now,
                price: price, currency: currency, transactionReason: .purchase,
                storefront: purchase.storefront,
                webOrderLineItemID: product != nil ? Self.webOrderLineItemID(id) : nil,
                subscriptionGroupIdentifier: product?.groupIdentifier, offerType: purchase.offerType,
                offerIdentifier: purchase.offerIdentifier)
            let record = SimulatedTransaction(transaction: transaction, user: purchase.user, orderID: store.newOrderID())
            store.transactions[id] = record
            store.chronology.append(id)
            store.count("purchases")
            if let product, let expires {
                store.subscriptions[original] = SimulatedSubscription(
                    originalTransactionID: original, user: purchase.user, environment: purchase.environment,
                    groupIdentifier: product.groupIdentifier, productID: product.productID, autoRenewProductID: product.productID,
                    appAccountToken: purchase.appAccountToken, storefront: purchase.storefront,
                    ownership: transaction.inAppOwnershipType, latestTransactionID: id, expiresDate: expires, anchor: now,
                    recentSubscriptionStartDate: now)
            }
            let receipt = PurchaseReceipt(
                transactionID: id, originalTransactionID: original, orderID: record.orderID, environment: purchase.environment,
                productID: purchase.productID, appAccountToken: purchase.appAccountToken,
                signedTransactionInfo: signedTransaction(record, now: now, store: store),
                receipt: store.issueReceipt(for: purchase.user, purchase.environment, issuer: receiptIssuer, now: now))
            store.outbox.append(notificationFor(record, type: subscribed != nil ? .subscribed : .oneTimeCharge,
                                                subtype: subscribed, now: now, store: &store))
            return receipt
        }
        sendOutbox()
        return receipt
    }

    /// An interrupted purchase, as the write-ups describe: the first attempt fails (terms to
    /// accept, a card to bind) carrying the app's token, then StoreKit completes a new one
    /// **without** the token. Returns the failure and the purchase that went through.
    public func interruptedPurchase(_ purchase: SimulatedPurchase) throws(AppStoreSimulatorControlError)
        -> (failed: FailedPurchase, completed: PurchaseReceipt)
    {
        let failed = FailedPurchase(user: purchase.user, productID: purchase.productID,
                                    appAccountToken: purchase.appAccountToken, environment: purchase.environment,
                                    reason: "interrupted: terms and conditions")
        state.withLock { $0.failedPurchases.append(failed) }
        var second = purchase
        second.appAccountToken = nil
        return (failed, try self.purchase(second))
    }

    /// Apple refunds the transaction: `revocationDate` and `revocationReason` are set and a REFUND
    /// notification goes out.
    @discardableResult
    public func refund(transactionID: String, reason: Int = 0) throws(AppStoreSimulatorControlError) -> AppStoreTransaction {
        try revoke(transactionID, reason: reason, type: .refund)
    }

    /// Family Sharing access ends (or Apple revokes): a REVOKE notification.
    @discardableResult
    public func revoke(transactionID: String) throws(AppStoreSimulatorControlError) -> AppStoreTransaction {
        try revoke(transactionID, reason: 0, type: .revoke)
    }

    private func revoke(_ id: String, reason: Int, type: AppStoreNotification.NotificationType)
        throws(AppStoreSimulatorControlError) -> AppStoreTransaction
    {
        catchUpSubscriptions()
        let now = clock.now()
        let (transaction, notification) = try state.withLock {
            store throws(AppStoreSimulatorControlError) -> (AppStoreTransaction, PendingNotification) in
            guard var record = store.transactions[id] else { throw AppStoreSimulatorControlError(code: .transactionNotFound) }
            guard record.transaction.revocationDate == nil else { throw AppStoreSimulatorControlError(code: .alreadyRevoked) }
            record.transaction.revocationDate = now
            record.transaction.revocationReason = reason
            store.transactions[id] = record
            store.count(type == .refund ? "refunds" : "revocations")
            // Refunding (or revoking) the period the customer is in ends the subscription; an
            // older period's refund leaves it as it is.
            let original = record.transaction.originalTransactionID
            if var subscription = store.subscriptions[original], subscription.latestTransactionID == id {
                subscription.phase = .revoked
                subscription.autoRenewEnabled = false
                store.subscriptions[original] = subscription
            }
            return (record.transaction, notificationFor(record, type: type, subtype: nil, now: now, store: &store))
        }
        deliver(notification)
        return transaction
    }

    /// Apple reverses a refund it granted (the customer's dispute went the developer's way):
    /// `revocationDate` is cleared and a REFUND_REVERSED notification goes out.
    @discardableResult
    public func reverseRefund(transactionID id: String) throws(AppStoreSimulatorControlError) -> AppStoreTransaction {
        catchUpSubscriptions()
        let now = clock.now()
        let (transaction, notification) = try state.withLock {
            store throws(AppStoreSimulatorControlError) -> (AppStoreTransaction, PendingNotification) in
            guard var record = store.transactions[id] else { throw AppStoreSimulatorControlError(code: .transactionNotFound) }
            guard record.transaction.revocationDate != nil else { throw AppStoreSimulatorControlError(code: .notRevoked) }
            record.transaction.revocationDate = nil
            record.transaction.revocationReason = nil
            store.transactions[id] = record
            store.count("refunds reversed")
            let original = record.transaction.originalTransactionID
            if var subscription = store.subscriptions[original], subscription.latestTransactionID == id,
               subscription.phase == .revoked {
                subscription.phase = subscription.expiresDate > now ? .active : .expired
                if subscription.phase == .expired { subscription.expirationIntent = 5 }
                store.subscriptions[original] = subscription
            }
            return (record.transaction, notificationFor(record, type: .refundReversed, subtype: nil, now: now, store: &store))
        }
        deliver(notification)
        return transaction
    }

    /// The customer asks Apple for a refund and Apple asks the developer for consumption
    /// information: a CONSUMPTION_REQUEST notification (with `reason` as its
    /// `consumptionRequestReason`). Answer with Send Consumption Information within 12 hours.
    @discardableResult
    public func requestConsumption(transactionID id: String, reason: String? = "UNINTENDED_PURCHASE")
        throws(AppStoreSimulatorControlError) -> String
    {
        let now = clock.now()
        let notification = try state.withLock { store throws(AppStoreSimulatorControlError) -> PendingNotification in
            guard let record = store.transactions[id] else { throw AppStoreSimulatorControlError(code: .transactionNotFound) }
            store.count("consumption requests")
            return notificationFor(record, type: .consumptionRequest, subtype: nil, now: now, store: &store,
                                   consumptionRequestReason: reason)
        }
        deliver(notification)
        return notification.uuid
    }

    /// What Send Consumption Information received, oldest first.
    public var consumptionReceived: [ConsumptionReceived] { state.withLock { $0.consumptionReceived } }

    /// A TEST notification (what "Request a Test Notification" sends).
    @discardableResult
    public func sendTestNotification(environment: AppStoreEnvironment = .production) -> String {
        let now = clock.now()
        let notification = state.withLock { store -> PendingNotification in
            let uuid = UUID(uuid: Self.uuidBytes(&store.random)).uuidString.lowercased()
            let payload = AppStoreNotification(
                notificationType: .test, notificationUUID: uuid, signedDate: now, bundleID: configuration.bundleID,
                appAppleID: configuration.appAppleID, environment: environment
            ).payload(signedTransactionInfo: nil, signedRenewalInfo: nil)
            let signed = signNotification({ _ in payload }, store: &store)
            store.record(.init(uuid: uuid, environment: environment, signedPayload: signed, signedDate: now, type: "TEST",
                               subtype: nil, user: nil))
            store.testNotifications[uuid] = signed
            return PendingNotification(uuid: uuid, environment: environment, body: Self.body(signed))
        }
        deliver(notification)
        return notification.uuid
    }

    /// The transaction as the App Store holds it now.
    public func transaction(_ id: String) -> AppStoreTransaction? {
        state.withLock { $0.transactions[id]?.transaction }
    }

    /// The invoice order id (Look Up Order ID's key) of a transaction.
    public func orderID(of transactionID: String) -> String? {
        state.withLock { $0.transactions[transactionID]?.orderID }
    }

    /// Purchases that failed on the device, oldest first.
    public var failedPurchases: [FailedPurchase] { state.withLock { $0.failedPurchases } }

    /// The fault plan in force.
    public var faults: AppStoreFaultPlan { state.withLock { $0.faults } }

    /// Replaces the fault plan (endpoint limits start afresh).
    public func apply(_ plan: AppStoreFaultPlan) {
        state.withLock { store in
            store.faults = plan
            store.faultBudget = plan.endpoints.compactMapValues(\.limit)
            store.faultDelay = plan.endpoints.compactMapValues(\.after)
            store.notificationDropsLeft = plan.dropNotifications?.limit
        }
        notifications.setFaults(plan.notify)
    }

    /// Counters: requests per environment and endpoint, statuses, refusals by reason, faults.
    public var counters: [String: Int] {
        var counters = state.withLock { $0.counters }
        let history = notifications.history
        counters["notification attempts"] = history.count
        counters["notifications acknowledged"] = history.filter(\.acknowledged).count
        counters["notifications dropped"] = history.filter(\.dropped).count
        counters["notifications pending"] = notifications.pending
        counters["notifications abandoned"] = notifications.abandoned
        return counters
    }

    /// Every notification attempt so far (reference: the notificationUUID).
    public var notificationHistory: [NotifyAttempt] { notifications.history }

    /// The transaction each notification (by its UUID) carries, for the control panel's list.
    var notificationTransactions: [String: String] {
        state.withLock { store in store.notifications.compactMapValues(\.transactionID) }
    }

    /// Notifications still waiting for a 2xx.
    public var pendingNotifications: Int { notifications.pending }

    // MARK: - Notifications

    struct PendingNotification: Sendable {
        var uuid: String
        var environment: AppStoreEnvironment
        var body: [UInt8]
        /// The fault plan's `dropNotifications` chose it: every attempt is lost.
        var dropped = false
    }

    func notificationFor(_ record: SimulatedTransaction, type: AppStoreNotification.NotificationType,
                                 subtype: AppStoreNotification.Subtype?, now: Date, store: inout StoreState,
                                 consumptionRequestReason: String? = nil) -> PendingNotification {
        let uuid = UUID(uuid: Self.uuidBytes(&store.random)).uuidString.lowercased()
        let environment = record.transaction.environment
        var renewal: String?
        if let subscription = store.subscriptions[record.transaction.originalTransactionID] {
            renewal = sign(renewalInfo(subscription, now: now, store: store).payload, store: store)
        }
        let notification = AppStoreNotification(
            notificationType: type, subtype: subtype, notificationUUID: uuid, signedDate: now,
            bundleID: configuration.bundleID, appAppleID: configuration.appAppleID, environment: environment,
            bundleVersion: "1", consumptionRequestReason: consumptionRequestReason)
        // The rogue-chain fault signs the inner transaction with the same rogue chain as the outside.
        let signed = signNotification({ store in
            notification.payload(signedTransactionInfo: signedTransaction(record, now: now, store: store), signedRenewalInfo: renewal)
        }, store: &store)
        store.record(.init(uuid: uuid, environment: environment, signedPayload: signed, signedDate: now, type: type.rawValue,
                           subtype: subtype?.rawValue, user: record.user, transactionID: record.transaction.transactionID))
        var pending = PendingNotification(uuid: uuid, environment: environment, body: Self.body(signed))
        pending.dropped = store.dropsNotification(type: type.rawValue, subtype: subtype?.rawValue)
        return pending
    }

    /// Signs a notification, with the rogue chain when the fault plan picks it (drawn here, once).
    private func signNotification(_ payload: (StoreState) -> JSONValue, store: inout StoreState) -> String {
        let rogue = store.random.chance(store.faults.notificationRogueChainRate)
        if rogue { store.count("fault notification_rogue_chain") }
        store.signWithRogueChain = rogue
        defer { store.signWithRogueChain = false }
        return sign(payload(store), store: store)
    }

    private static func body(_ signedPayload: String) -> [UInt8] {
        JSONValue.object(["signedPayload": .string(signedPayload)]).bytes()
    }

    /// Sends what was made under the lock.
    func sendOutbox() {
        let pending = state.withLock { store in
            defer { store.outbox.removeAll() }
            return store.outbox
        }
        pending.forEach(deliver)
    }

    func deliver(_ notification: PendingNotification) {
        let url = notification.environment == .production
            ? configuration.productionNotificationURL : configuration.sandboxNotificationURL ?? configuration.productionNotificationURL
        guard let url else {
            state.withLock { $0.count("notifications without a URL") }
            return
        }
        notifications.enqueue(kind: NotifyAttempt.Kind(rawValue: "appstore"), reference: notification.uuid, url: url,
                               body: notification.body, dropped: notification.dropped)
    }

    private static func uuidBytes(_ random: inout SeededRandom) -> uuid_t {
        var bytes = (0..<16).map { _ in UInt8(truncatingIfNeeded: random.next()) }
        bytes[6] = bytes[6] & 0x0F | 0x40  // version 4
        bytes[8] = bytes[8] & 0x3F | 0x80  // RFC 4122 variant
        return (bytes[0], bytes[1], bytes[2], bytes[3], bytes[4], bytes[5], bytes[6], bytes[7],
                bytes[8], bytes[9], bytes[10], bytes[11], bytes[12], bytes[13], bytes[14], bytes[15])
    }
}

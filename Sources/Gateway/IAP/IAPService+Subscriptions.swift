// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import Observability
import StorageCore

/// Auto-renewable subscriptions' states (`SubscriptionRecord`): every verified word from Apple
/// about one — a notification, a credited transaction, a status read by the reconciler — is
/// merged into its row, whatever order they arrive in. Entitlements read the row for how far a
/// subscription reaches and whether it will renew; the reconciler reads it for which ones to ask
/// Apple about again.
extension IAPService {
    /// Merges what a verified notification says of its subscription, if it is about one.
    /// - Parameter announce: whether a change of what it grants needs an `entitlement.changed`
    ///   event of its own (not when the notification credited an order: that wrote one).
    func recordSubscription(from notification: AppStoreNotification, source: String, announce: Bool) async throws(APIError) {
        guard let observation = Self.observation(of: notification, source: source) else { return }
        try await record(observation, announce: announce)
    }

    /// Merges a credited transaction of a subscription (the app's report, a receipt): its period,
    /// before or without Apple's notification. Best effort: the credit stands if this fails, and
    /// the next notification or status read brings the row up to date.
    func recordSubscription(of transaction: AppStoreTransaction, source: String) async {
        guard let observation = Self.observation(of: transaction, renewal: nil, stated: nil, signedAt: transaction.signedDate,
                                                 source: source) else { return }
        do {
            try await record(observation, announce: true)
        } catch {
            logger.warning("App Store subscription state not recorded; the next notification or status read records it",
                           ["original_transaction_id": transaction.originalTransactionID, "error": error.code])
        }
    }

    /// Merges one observation; announces a change of what it grants to the user of the order its
    /// subscription credited, when there is one.
    func record(_ observation: SubscriptionObservation, announce: Bool) async throws(APIError) {
        let at = now()
        let catalog = context.catalog.catalog
        var announcement: OutboxEvent?
        if announce, let order = try await creditedOrder(of: observation) {
            announcement = EntitlementEvents.marker(for: order, catalog: catalog, at: at)
        }
        let merged = try await context.storage { () throws(StorageError) in
            try await self.context.store.recordSubscription(observation, heardAt: at, announcement: announcement)
        }
        if merged.grantsChanged {
            instruments.subscriptionStates.labelled(merged.record.status.rawValue).increment()
        }
    }

    /// A subscription's payment credited to `order`, another user's than the payment before it
    /// (the subscription went on under them: a shared App Store account's resubscription or
    /// upgrade): the former holder's entitlements changed too — their period ends where this
    /// payment began and no longer renews — and no payment of theirs announces it. Best effort: the
    /// entitlements route is right either way.
    func announceToFormerHolder(of purchase: VerifiedPurchase, creditedTo order: OrderRecord) async {
        guard purchase.transactionID != purchase.facts.originalTransactionID,
              case .user(let former, _, let after) = await renewalHolder(purchase), !sameUser(former, order.userID),
              let row = try? await store.appleTransaction(after), let paid = row.outTradeNo,
              let formerOrder = try? await context.store.order(paid),
              let marker = EntitlementEvents.marker(for: formerOrder, catalog: context.catalog.catalog, at: now())
        else { return }
        do {
            try await context.store.announce(marker)
        } catch {
            logger.warning("entitlement.changed for a subscription's former holder not written", [
                "out_trade_no": formerOrder.outTradeNo, "error": error.shortDescription,
            ])
        }
    }

    /// The order the observation's transaction credited, else the subscription's latest credited
    /// order: its holder's, whose entitlements its state counts for (after another user of a
    /// shared account resubscribed, theirs, not the first purchase's user; and when its latest
    /// transaction waits unclaimed, the holder is who loses what the state gave).
    private func creditedOrder(of observation: SubscriptionObservation) async throws(APIError) -> OrderRecord? {
        let id = observation.transaction.transactionID
        let known = try await context.storage { () throws(StorageError) in try await self.store.appleTransaction(id) }
        if let credited = known?.outTradeNo {
            return try await context.storage { () throws(StorageError) in try await self.context.store.order(credited) }
        }
        let original = observation.originalTransactionID
        return try await context.storage { () throws(StorageError) in try await self.store.orders(originalTransactionID: original) }
            .last { $0.userID != nil }
    }

    /// A notification's observation: its transaction, its renewal info, and the status its type
    /// states outright (EXPIRED, DID_FAIL_TO_RENEW, GRACE_PERIOD_EXPIRED); nil when it is not
    /// about an auto-renewable subscription.
    static func observation(of notification: AppStoreNotification, source: String) -> SubscriptionObservation? {
        guard let transaction = notification.transaction else { return nil }
        let stated: SubscriptionStatus? = switch notification.notificationType {
        case .expired: .expired
        case .didFailToRenew: notification.subtype == .gracePeriod ? .gracePeriod : .billingRetry
        case .gracePeriodExpired: .billingRetry
        default: nil
        }
        return observation(of: transaction, renewal: notification.renewalInfo, stated: stated, signedAt: notification.signedDate,
                           source: source)
    }

    /// One item of Get All Subscription Statuses, verified: Apple's status stated outright, as of
    /// the renewal info's signing.
    static func observation(of transaction: AppStoreTransaction, renewal: AppStoreRenewalInfo, appleStatus: Int)
        -> SubscriptionObservation?
    {
        observation(of: transaction, renewal: renewal, stated: SubscriptionStatus(appleStatus: appleStatus),
                    signedAt: max(renewal.signedDate, transaction.signedDate), source: "subscription status \(appleStatus)")
    }

    private static func observation(of transaction: AppStoreTransaction, renewal: AppStoreRenewalInfo?, stated: SubscriptionStatus?,
                                    signedAt: Date, source: String) -> SubscriptionObservation? {
        guard transaction.type == .autoRenewableSubscription, let expires = transaction.expiresDate else { return nil }
        return SubscriptionObservation(
            originalTransactionID: transaction.originalTransactionID, environment: transaction.environment.rawValue,
            signedAt: signedAt,
            transaction: .init(transactionID: transaction.transactionID, productID: transaction.productID,
                               purchaseDate: transaction.purchaseDate, expiresDate: expires,
                               revocationDate: transaction.revocationDate),
            renewal: renewal.map {
                .init(autoRenew: $0.autoRenewStatus == 1, autoRenewProductID: $0.autoRenewProductID,
                      inBillingRetry: $0.isInBillingRetryPeriod ?? false, gracePeriodExpiresDate: $0.gracePeriodExpiresDate)
            },
            stated: stated, source: String(source.prefix(200)))
    }
}

// MARK: - The reconciler's status reads

extension IAPService {
    /// Subscriptions re-read per sweep; how close to its end (period or grace period) one is
    /// re-read; and how long after a read it may be read again.
    static let subscriptionsPerSweep = 20
    static let subscriptionEndMargin: TimeInterval = 86400
    static let subscriptionRecheckInterval: TimeInterval = 3600

    /// Asks Apple (Get All Subscription Statuses) about the subscriptions that may have changed
    /// without the gateway hearing of it: those that end within a day or ended (a renewal, a
    /// failed charge, an expiry whose notification was lost) and those not heard of for a whole
    /// period. Each answer is verified and merged, and a latest transaction no order has is
    /// credited (its user inferred from the subscription's first purchase). Returns how many
    /// subscriptions were read.
    func recheckSubscriptions() async -> Int {
        guard let api = clients.serverAPI else { return 0 }
        let at = now()
        guard let due = try? await context.store.subscriptionsToRecheck(
            now: at, endingBefore: at.addingTimeInterval(Self.subscriptionEndMargin),
            heardBefore: at.addingTimeInterval(-Self.subscriptionRecheckInterval), limit: Self.subscriptionsPerSweep)
        else { return 0 }
        var read = 0
        for record in due {
            // Asked once an interval whatever the outcome: an answer that says nothing of it (or
            // an App Store that is down) is not asked again every sweep.
            try? await context.store.markSubscriptionChecked(record.originalTransactionID, at: at)
            guard let environment = AppStoreEnvironment(rawValue: record.environment) else { continue }
            let response: SubscriptionStatusesResponse
            do {
                response = try await api.allSubscriptionStatuses(record.latestTransactionID, environment: environment)
            } catch {
                let outcome = error.kind == .notFound ? "not_found" : "error"
                instruments.subscriptionChecks.labelled(outcome).increment()
                instruments.upstreamErrors.labelled("subscription_statuses", error.kind.rawValue).increment()
                logger.warning("Get All Subscription Statuses failed; asked again later", [
                    "original_transaction_id": record.originalTransactionID, "error": error.kind.rawValue,
                ])
                continue
            }
            read += 1
            instruments.subscriptionChecks.labelled("ok").increment()
            for item in response.items {
                await merge(item, environment: environment)
            }
        }
        return read
    }

    /// Support's recheck of a subscription's order: Apple's word on the subscription read now
    /// (Get All Subscription Statuses) and merged; what it says, for the timeline (`recheck`, or
    /// `recheck_failed` when Apple could not be asked). Nil when the
    /// order belongs to no subscription the gateway has heard of, or the Server API is not configured.
    func refreshSubscription(of order: OrderRecord) async -> (failed: Bool, words: String)? {
        guard let api = clients.serverAPI, let original = order.originalTransactionID,
              let state = try? await context.store.subscriptions(originalTransactionIDs: [original]).first,
              let environment = AppStoreEnvironment(rawValue: state.environment) else { return nil }
        let response: SubscriptionStatusesResponse
        do {
            response = try await api.allSubscriptionStatuses(state.latestTransactionID, environment: environment)
        } catch {
            instruments.upstreamErrors.labelled("subscription_statuses", error.kind.rawValue).increment()
            return (true, "Get All Subscription Statuses: \(error.kind.rawValue)")
        }
        for item in response.items where item.originalTransactionID == original {
            await merge(item, environment: environment)
        }
        guard let after = try? await context.store.subscriptions(originalTransactionIDs: [original]).first else { return nil }
        return (false, "Get All Subscription Statuses: subscription \(original) \(after.status.rawValue) until "
            + "\(Timestamp.rfc3339(after.accessEndsAt)), auto-renew \(after.autoRenew ? "on" : "off")")
    }

    /// One verified item of a status read: merged into its subscription, and its latest
    /// transaction credited when nothing credited it yet.
    private func merge(_ item: SubscriptionStatusesResponse.Item, environment: AppStoreEnvironment) async {
        guard let transaction = try? clients.verifier.verifyTransaction(item.signedTransactionInfo),
              let renewal = try? clients.verifier.verifyRenewalInfo(item.signedRenewalInfo),
              transaction.originalTransactionID == item.originalTransactionID,
              renewal.originalTransactionID == item.originalTransactionID,
              let observation = Self.observation(of: transaction, renewal: renewal, appleStatus: item.status)
        else {
            instruments.upstreamErrors.labelled("subscription_statuses", "invalid_signed_data").increment()
            return
        }
        let known = try? await store.appleTransaction(transaction.transactionID)
        if known?.outTradeNo == nil, known?.isRevoked != true {
            let purchase = VerifiedPurchase(
                transaction, via: "subscription status",
                verification: "found with Get All Subscription Statuses (\(environment.rawValue)); its signed transaction "
                    + "and renewal info verified")
            _ = try? await creditWithoutReporter(purchase, source: "reconcile (Get All Subscription Statuses)")
        }
        do {
            try await record(observation, announce: true)
        } catch {
            logger.warning("App Store subscription state not recorded; read again later",
                           ["original_transaction_id": item.originalTransactionID, "error": error.code])
        }
    }
}

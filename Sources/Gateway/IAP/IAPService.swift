// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import JSON
import Observability
import StorageCore
import Synchronization
import WeChatPay

/// iOS purchases through the gateway, with the dropped order solved: the app creates an order
/// (with an `appAccountToken` for StoreKit), buys, and reports the transaction; the gateway
/// verifies it with the App Store, matches it to its order (token, out_trade_no, 凑单 by user and
/// product, else a flagged new order), credits it through the one door, and tells the app whether
/// it may finish the transaction. Notifications V2 (IAPService+Notifications.swift) and the
/// reconciler's history look-ups (IAPService+Reconcile.swift) credit what the app never reported.
///
/// One order model with WeChat's: `channel` apple on the same orders, the same door to SUCCESS
/// (`Settlement.creditApple`), the same outbox and webhook. **A transaction id credits one order,
/// ever** (`IAPStore`, held by the database too).
///
/// ```swift
/// let iap = GatewayServices(context, appStore: try AppStoreClients.production(
///     configuration.appStore, transport: AppStoreHTTPTransport(client: http), clock: SystemAppStoreClock())).iap!
/// let answer = try await iap.report(IAPReportInput(json: body, user: "u-42"))
/// ```
public final class IAPService: Sendable {
    let context: GatewayContext
    /// The App Store ledger (the same database as the orders).
    public var store: any IAPStore { context.store }
    public let clients: AppStoreClients
    /// How Get Notification History and consumption requests are used.
    public let recovery: AppStoreRecoveryPolicy
    /// Refused notifications are logged at most once a second per reason (anyone can post them).
    let rejectedNotificationLog = LogThrottle()
    let instruments: IAPInstruments

    /// Made by `GatewayServices`, the composition root.
    /// - Parameter recovery: the notification history's and consumption requests' settings.
    init(context: GatewayContext, clients: AppStoreClients, recovery: AppStoreRecoveryPolicy) {
        self.context = context
        self.clients = clients
        self.recovery = recovery
        instruments = IAPInstruments(context.metrics)
    }

    var logger: Logger { context.logger }
    func now() -> Date { context.now() }

    // MARK: - Create

    /// Creates an iOS order for a catalog product with an App Store product id: NOTPAY, with a
    /// fresh `app_account_token` unique to it, closed locally if unpaid after `expires_in`.
    /// Idempotent on out_trade_no as WeChat creates are (same parameters: 200 and the same order,
    /// token included; others: 409).
    func createOrder(_ input: IAPOrderInput) async throws(APIError) -> OrderCreation.Created {
        guard let product = context.catalog.catalog.product(input.productID), product.active,
              let appleProductID = product.appleProductID
        else { throw .unknownAppleProduct }
        let createdAt = now()
        let outTradeNo = input.outTradeNo ?? OrderCreation.generateOutTradeNo(at: createdAt)
        let expiresAt = Date(timeIntervalSince1970: (createdAt.timeIntervalSince1970 + Double(input.expiresIn)).rounded(.down))
        let record = OrderRecord(
            outTradeNo: outTradeNo, amount: product.amount, description: product.description, clientIP: input.clientIP,
            attach: input.attach, userID: input.userID, productID: product.id, signType: "",
            timeExpire: BeijingTime.format(expiresAt), expiresAt: expiresAt, createdAt: createdAt,
            parametersDigest: input.parametersDigest, channel: .apple, appleProductID: appleProductID,
            appAccountToken: UUID().uuidString.lowercased())
        let result = try await context.storage { () throws(StorageError) in
            try await self.context.store.create(record, event: NewOrderEvent(
                kind: "created", detail: "iOS order for \(appleProductID) (\(product.amount) fen), expires_in=\(input.expiresIn); "
                    + "app_account_token \(record.appAccountToken ?? "")", at: createdAt),
                terms: .appStoreProduct(terms: product.terms.terms, appleProductID: appleProductID))
        }
        let (order, created) = try instruments.creates.resolve(result)
        return OrderCreation.Created(created: created, view: try await context.apiView(order))
    }

    // MARK: - Report

    /// Verifies the reported transaction, checks it (bundle id, environment, not revoked, not a
    /// family member's), matches and credits it, and answers
    /// `{"order","finish_transaction":true,"matched_by","credited_user_id"}` — or the error that
    /// says whether to finish (`APIError+IAP.swift`). A repeat report is 200 and changes nothing.
    ///
    /// Only data Apple signed for the paying device proves that the reporter holds the purchase: a
    /// signed transaction, or a receipt whose signature was verified (by verifyReceipt, or locally
    /// to APPSTORE_RECEIPT_ROOT_CA_FILE). A bare `transaction_id`, or one named with a receipt read
    /// without its signature, may be anyone's guess: it credits only the user the purchase is tied
    /// to (`tiedUser`) — reported by another, it is answered only
    /// `{"credited_elsewhere":true,"finish_transaction":true}`, never the owner's order, user,
    /// token or amount — and a purchase tied to nobody is not credited: 409
    /// `transaction_unclaimed` (keep it; report the signed transaction), its ledger row waiting
    /// on the attention list.
    func report(_ input: IAPReportInput) async throws(APIError) -> [UInt8] {
        let purchase: VerifiedPurchase
        do {
            purchase = try await withDeadline(clients.deadline) { () async throws(APIError) in try await self.verify(input.evidence) }
        } catch {
            instruments.reports.labelled(error.code).increment()
            throw error
        }
        let answer: ReportAnswer
        do throws(APIError) {
            // Evidence of possession credits the reporter; weak evidence only the user the gateway
            // can tie the purchase to, and a purchase tied to nobody waits in the ledger, unclaimed.
            let user = purchase.provesPossession ? input.userID : await tiedUser(purchase)
            let source = "App Store report (\(input.evidence.name))"
            guard let credited = try await credit(purchase, user: user, outTradeNo: sameUser(user, input.userID) ? input.outTradeNo : nil,
                                                  source: source)
            else {
                logger.warning("a weak App Store report named a purchase nothing ties to its reporter; it waits unclaimed", [
                    "transaction_id": purchase.transactionID, "evidence": input.evidence.name,
                ])
                throw APIError.transactionUnclaimed
            }
            answer = credited
        } catch {
            instruments.reports.labelled(error.code).increment()
            throw error.keepingTransaction()
        }
        // Only a signed transaction shows another user's order: a receipt, even verified, is the
        // app's whole receipt, which any account signed in on the device can send.
        if !input.evidence.isSignedTransaction, !sameUser(answer.order.userID, input.userID) {
            instruments.reports.labelled("credited_elsewhere").increment()
            return ReportAnswer.creditedElsewhere
        }
        instruments.reports.labelled(answer.outcome).increment()
        return try await answer.json(context)
    }

    /// Whose purchase a transaction reported with weak evidence is, as far as the gateway can tell
    /// without the reporter's word: the user of the order its `appAccountToken` names, else of an
    /// order credited by the same original transaction or another purchase of the same App Store
    /// account (`inferUser`). Nil: nothing ties it to anyone yet.
    func tiedUser(_ purchase: VerifiedPurchase) async -> String? {
        await inferUser(purchase)?.user
    }

    /// What a credit answered: the order, how it was matched, whether this call credited it.
    struct ReportAnswer: Sendable {
        var order: OrderRecord
        var matchedBy: AppleMatch
        var outcome: String

        func json(_ context: GatewayContext) async throws(APIError) -> [UInt8] {
            let view = try await context.viewJSON(order)
            var writer = JSONObjectWriter(capacity: view.count + 128)
            writer.string("credited_user_id", order.userID)
            writer.bool("finish_transaction", true)
            writer.string("matched_by", matchedBy.rawValue)
            writer.raw("order", view)
            return writer.finish()
        }

        /// The answer to a weak report of a transaction that credited another user's order.
        static let creditedElsewhere = Array(#"{"credited_elsewhere":true,"finish_transaction":true}"#.utf8)
    }

    /// The checks and the credit every verified purchase goes through (reports, notifications, the
    /// reconciler, recheck): revoked → the revocation recorded (and a credited order refunded);
    /// not creditable → 422; otherwise matched and credited, or found credited before. Nil: no
    /// order has its token and no user is known (a notification's purchase), its ledger row waits.
    ///
    /// - Parameter siblings: whether a credit also credits the purchases of the same
    ///   original transaction that waited for their user (`creditWaitingSiblings`); false for those.
    func credit(_ purchase: VerifiedPurchase, user: String?, outTradeNo: String?, source: String, siblings: Bool = true)
        async throws(APIError) -> ReportAnswer?
    {
        // Credited before: the same answer (a redelivered transaction), or 409 for another user's.
        if let known = try await context.storage({ () throws(StorageError) in try await self.store.appleTransaction(purchase.transactionID) }),
           let credited = known.outTradeNo {
            if purchase.facts.revocationDate != nil { _ = try await recordRevocation(purchase, source: source) }
            guard var order = try await context.storage({ () throws(StorageError) in try await self.context.store.order(credited) }) else {
                throw .internalError
            }
            // Apple's word about the transaction fills in what the order lacked, whoever relays it
            // (`fillIn`: only where it agrees with what is known of the transaction).
            if let filled = try await fillIn(purchase, known: known, order: order, source: source) { order = filled }
            return try await repeated(order, known.matchedBy ?? .userProduct, purchase: purchase, user: user)
        }
        if purchase.facts.revocationDate != nil {
            _ = try await recordRevocation(purchase, source: source)
            throw .transactionNotCreditable("Apple refunded or revoked it")
        }
        if purchase.ownership == "FAMILY_SHARED" {
            throw .transactionNotCreditable("a family member's purchase (FAMILY_SHARED): it paid no order here")
        }
        let at = now()
        // The order to make when no open order matches: the catalog's product at its price, or, for
        // a product the catalog does not have, one at what Apple charged, flagged for a person.
        // (A token or 凑单 still finds an order made while the product was in the catalog.)
        var newOrder: AppleNewOrder?
        var nothingCharged: APIError?
        // A subscription's renewal: Apple charged it by itself, and no app ever makes an order for
        // it, so the order made for it is the expected one, not one to look at. A purchase a person
        // made (a resubscription, an upgrade: `transactionReason` PURCHASE) without an order is
        // still flagged: on a shared App Store account it may be another user's.
        let renewal = purchase.isRenewal
        if let user {
            if let product = context.catalog.catalog.product(appleProductID: purchase.productID) {
                newOrder = AppleNewOrder(
                    order: Self.madeOrder(for: purchase, user: user, amount: product.amount, currency: nil,
                                          description: product.description, productID: product.id, at: at),
                    event: NewOrderEvent(kind: "created", detail: renewal
                        ? "made for App Store \(purchase.summary.prefix(60))…: a payment Apple took by itself for "
                            + "\(user)'s subscription \(purchase.facts.originalTransactionID)"
                        : "made for App Store \(purchase.summary.prefix(60))…: no open order of \(user) for \(purchase.productID)",
                        at: at),
                    expected: renewal, terms: .appStoreProduct(terms: product.terms.terms, appleProductID: purchase.productID))
            } else if let charged = purchase.chargedMinorUnits {
                newOrder = AppleNewOrder(
                    order: Self.madeOrder(for: purchase, user: user, amount: charged.amount,
                                          currency: charged.currency == "CNY" ? nil : charged.currency,
                                          description: "App Store product \(purchase.productID) (not in the catalog)",
                                          productID: nil, at: at),
                    event: NewOrderEvent(kind: "created", detail: "made for App Store \(purchase.summary.prefix(60))…: its product "
                        + "\(purchase.productID) is not in the catalog; recorded at what Apple charged "
                        + "(\(charged.amount) in the minor unit of \(charged.currency)), flagged unknown_product", at: at),
                    flags: [.unknownProduct], expected: renewal, terms: .unknownAppleProduct(purchase.productID))
            } else {
                // A free transaction of an unknown product (or one at no price anything is sold at):
                // no amount to record, so no order is made for it (an order its token names is
                // still credited).
                nothingCharged = .transactionNotCreditable("its product \(purchase.productID) is not in the catalog and "
                                                           + "Apple reports no charge it could be recorded at (no price, zero, "
                                                           + "beyond any App Store price, or not in a currency code): there is "
                                                           + "no amount to record")
            }
        }
        let reporter = user
        let summary = purchase.summary
        var credit = AppleCredit(
            transaction: purchase.facts, userID: user, outTradeNo: outTradeNo, newOrder: newOrder, source: source,
            outbox: { _ in nil },
            events: { decision in
                [NewOrderEvent(kind: "appstore_verified", detail: summary, at: at),
                 NewOrderEvent(kind: "appstore_match", detail: Self.words(decision, reporter: reporter, source: source), at: at)]
            }, at: at)
        credit.renewal = renewal
        let result = try await context.storage { () throws(StorageError) in
            try await self.context.settlement.creditApple(credit, in: self.store)
        }
        switch result {
        case .credited(let order, let how):
            instruments.credits.labelled(how.rawValue, purchase.environment).increment()
            logger.info("App Store transaction credited", [
                "out_trade_no": order.outTradeNo, "transaction_id": purchase.transactionID, "matched_by": how.rawValue,
                "environment": purchase.environment,
            ])
            // A notification records its subscription's state itself, with the renewal info.
            if let transaction = purchase.subscriptionTransaction, !purchase.via.hasPrefix("notification") {
                await recordSubscription(of: transaction, source: purchase.via)
            }
            await announceToFormerHolder(of: purchase, creditedTo: order)
            if siblings { await creditWaitingSiblings(of: purchase) }
            return ReportAnswer(order: order, matchedBy: how, outcome: "credited")
        case .alreadyCredited(let order, let how):
            return try await repeated(order, how, purchase: purchase, user: user)
        case .revoked:
            throw .transactionNotCreditable("Apple refunded or revoked it")
        case .unmatched:
            if let nothingCharged { throw nothingCharged }
            return nil
        }
    }

    /// The order a credit makes for a purchase that matched no open order.
    static func madeOrder(for purchase: VerifiedPurchase, user: String, amount: Int, currency: String?, description: String,
                          productID: String?, at: Date) -> OrderRecord {
        OrderRecord(
            outTradeNo: OrderCreation.generateOutTradeNo(at: at), amount: amount, description: description, clientIP: "",
            userID: user, productID: productID, signType: "", timeExpire: BeijingTime.format(at), expiresAt: at, createdAt: at,
            parametersDigest: "apple|matched|\(purchase.transactionID)", channel: .apple, appleProductID: purchase.productID,
            appAccountToken: UUID().uuidString.lowercased(), currency: currency)
    }

    /// A transaction credited before: 200 with its order for the same user, or for anyone when its
    /// own token names the order (the account switch, reported again); else 409, on the timeline.
    private func repeated(_ order: OrderRecord, _ how: AppleMatch, purchase: VerifiedPurchase, user: String?)
        async throws(APIError) -> ReportAnswer
    {
        let tokenNamesOrder = purchase.facts.appAccountToken != nil && purchase.facts.appAccountToken == order.appAccountToken
        guard let user else { return ReportAnswer(order: order, matchedBy: how, outcome: "repeated") }
        if sameUser(order.userID, user) || tokenNamesOrder {
            // The app reports until it may finish: bounded, and what support wants to see. When a
            // notification credited the order first, this report is where support learns that
            // another account of the app reported it.
            let switched = sameUser(order.userID, user) ? ""
                : " (the account was switched: its token names this order of \(order.userID ?? "nobody"))"
            await appendReportLine(order.outTradeNo,
                                   "transaction \(purchase.transactionID) reported by \(user) (\(purchase.via))\(switched): "
                                       + "credited to this order before; answered finish_transaction true")
            return ReportAnswer(order: order, matchedBy: how, outcome: "repeated")
        }
        await appendReportLine(order.outTradeNo,
                               "transaction \(purchase.transactionID) reported again by \(user) (\(purchase.via)): refused 409 "
                                   + "transaction_already_used, it credited this order of \(order.userID ?? "nobody")")
        instruments.reports.labelled("transaction_already_used").increment()
        throw .transactionAlreadyUsed
    }

    /// A report's line on the order's timeline, at most once a minute per order: the app reports
    /// until it may finish, and anyone may report a bare transaction id as often as the per-user
    /// limit lets them, so the timeline keeps the first of each minute (counted all the same).
    func appendReportLine(_ outTradeNo: String, _ detail: String) async {
        let at = now()
        let written = try? await context.store.appendEvent(
            outTradeNo, NewOrderEvent(kind: "appstore_report", detail: detail, at: at),
            quietSince: at.addingTimeInterval(-PaymentNotifies.copyQuietPeriod))
        if written == nil { instruments.reportLinesSuppressed.increment() }
    }

    /// How the order was found, in words for the support timeline.
    static func words(_ decision: AppleMatchDecision, reporter: String?, source: String) -> String {
        let order = decision.order
        let owner = order.userID ?? "nobody"
        let product = order.appleProductID ?? "?"
        var text: String
        switch decision.matchedBy {
        case .appAccountToken:
            text = "matched by app_account_token: the transaction carries this order's token"
            if let reporter, !sameUser(reporter, owner) {
                text += "; \(source) came from \(reporter) but the token names this order of \(owner) "
                    + "(the account was switched): credited to \(owner)"
            }
        case .outTradeNo:
            text = "matched by out_trade_no: the transaction carries no usable token; the app named this open order of "
                + "\(owner) for \(product)"
        case .userProduct:
            text = "matched by user and product (凑单): no usable token or out_trade_no; the oldest open order of "
                + "\(owner) for \(product)"
        case .newOrder where !order.flags.contains(.matchedWithoutOrder):
            text = "a payment Apple took by itself for \(owner)'s subscription \(order.originalTransactionID ?? "?") "
                + "(\(product)): this order was made for it"
        case .newOrder:
            text = "no open order of \(owner) for \(product): this order was made for the purchase and flagged "
                + "matched_without_order (never dropped; for support to look at)"
        }
        if decision.previousState == .closed {
            text += "; the order had been closed locally (unpaid at its expiry): paid after close, flagged paid_after_close"
        }
        for note in decision.notes {
            switch note {
            case .tokenOrderOtherProduct(let other, let otherProduct):
                text += "; its token names order \(other), which sells \(otherProduct ?? "another product"): passed over"
            case .tokenOrderAlreadyPaid(let other):
                text += "; its token names order \(other), which another transaction paid already: passed over"
            case .tokenUnknown:
                text += "; its appAccountToken names no order of this gateway"
            case .outTradeNoNotUsable(let other):
                text += "; the out_trade_no given (\(other)) is not an open iOS order of \(owner) for \(product): passed over"
            }
        }
        return text + "; via \(source)"
    }

    // MARK: - Helpers

    /// Runs `operation`, or answers 503 `appstore_unavailable` once `deadline` has passed.
    func withDeadline<T: Sendable>(_ deadline: Duration, _ operation: @escaping @Sendable () async throws(APIError) -> T)
        async throws(APIError) -> T
    {
        let result = await withTaskGroup(of: Result<T, APIError>?.self) { group -> Result<T, APIError> in
            group.addTask {
                do throws(APIError) {
                    return .success(try await operation())
                } catch {
                    return .failure(error)
                }
            }
            group.addTask {
                try? await Task.sleep(for: deadline)
                return Task.isCancelled ? nil : .failure(.appStoreUnavailable)
            }
            var first: Result<T, APIError> = .failure(.appStoreUnavailable)
            if let answer = await group.next() { first = answer ?? .failure(.appStoreUnavailable) }
            group.cancelAll()
            return first
        }
        return try result.get()
    }
}

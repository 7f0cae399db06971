// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON
import Observability
import StorageCore
import Synchronization
import WeChatPay

/// The product's order flows: create, notify, query with polling, close, support lookup and
/// recheck. Every change of state goes through `Settlement`, the one door; everything WeChat says
/// is verified by the protocol core before it is believed.
public final class OrderService: Sendable {
    let context: GatewayContext
    /// iOS purchases, when on: support's look-ups by Apple's ids and rechecks of iOS orders go there.
    let iap: IAPService?
    /// Refused notifies are logged at most once a second per reason (OrderService+Notify.swift).
    let rejectedNotifyLog = LogThrottle()
    /// The reads and rechecks of order queries, a few at a time (OrderService+Wait.swift).
    let queryWork = OrderQueryWork()

    var configuration: GatewayConfiguration { context.configuration }
    var store: any GatewayStore { context.store }
    var metrics: MetricsRegistry { context.metrics }
    var instruments: OrderInstruments { context.instruments }
    var logger: Logger { context.logger }
    var signals: OrderSignals { context.signals }
    var settlement: Settlement { context.settlement }
    var upstream: Upstream { context.upstream }
    var signer: Signer { context.signer }
    var userLimits: UserLimits { context.userLimits }
    func now() -> Date { context.now() }
    var notifyURL: String { context.callbacks.payment }

    /// How long WeChat keeps a prepay_id (2 hours); a re-entry after that asks for a fresh one.
    static let prepayLifetime: TimeInterval = 2 * 3600
    /// WeChat does not close an order within 5 minutes of its creation.
    static let minimumAgeToClose: TimeInterval = 5 * 60

    /// Made by `GatewayServices`, the composition root.
    init(context: GatewayContext, iap: IAPService?) {
        self.context = context
        self.iap = iap
        listenForChangesElsewhere()
    }

    // MARK: - Create

    /// What `create` answers: the order and whether this call created it (201) or found it (200).
    public struct Created: Sendable {
        public var created: Bool
        var view: OrderView
        public var json: [UInt8] { view.json }
    }

    /// Creates the order, or answers the existing one for an identical replay.
    public func create(_ input: CreateOrderInput) async throws(APIError) -> Created {
        let createdAt = now()
        let outTradeNo = input.outTradeNo ?? Self.generateOutTradeNo(at: createdAt)
        let expiresAt = Date(timeIntervalSince1970: (createdAt.timeIntervalSince1970 + Double(input.expiresIn)).rounded(.down))
        let record = OrderRecord(
            outTradeNo: outTradeNo, amount: input.amount, description: input.description, clientIP: input.clientIP,
            attach: input.attach, userID: input.userID, productID: input.productID,
            signType: configuration.signType.rawValue, timeExpire: BeijingTime.format(expiresAt),
            expiresAt: expiresAt, createdAt: createdAt, parametersDigest: input.parametersDigest)
        let result = try await storage { () throws(StorageError) in
            try await self.store.create(record, event: NewOrderEvent(
                kind: "created", detail: "amount=\(input.amount) expires_in=\(input.expiresIn)", at: createdAt))
        }
        switch result {
        case .conflict:
            instruments.conflicted.increment()
            throw .conflict("this out_trade_no was used with different parameters")
        case .created(let order):
            instruments.created.increment()
            return Created(created: true, view: try await prepare(order))
        case .existing(let order):
            guard !order.state.isFinal else {
                instruments.conflicted.increment()
                throw .conflict("the order with this out_trade_no is already \(order.state.rawValue)")
            }
            instruments.replayed.increment()
            return Created(created: false, view: try await prepare(order))
        }
    }

    /// Makes sure the order has a live prepay_id (one unifiedorder per order at a time, however
    /// many identical creates arrive) and signs the app parameters.
    private func prepare(_ order: OrderRecord) async throws(APIError) -> OrderView {
        var order = order
        if !hasLivePrepay(order) {
            let outTradeNo = order.outTradeNo
            let outcome = await upstream.prepays.run(outTradeNo) { [self] in
                await self.requestPrepay(outTradeNo)
            }
            order = try outcome.get()
        }
        guard let prepayID = order.prepayID, let issuedAt = order.prepayIssuedAt else { throw .internalError }
        var view = OrderView(order)
        view.prepayID = prepayID
        do {
            view.appParams = try upstream.appPayment(for: order, prepayID: prepayID, issuedAt: issuedAt)
        } catch {
            logger.error("app parameters could not be signed", ["error": "\(error)"])
            throw .internalError
        }
        return view
    }

    func hasLivePrepay(_ order: OrderRecord) -> Bool {
        guard order.prepayID != nil, let issuedAt = order.prepayIssuedAt else { return false }
        return now().timeIntervalSince(issuedAt) < Self.prepayLifetime
    }

    /// The order with a live prepay_id: one unifiedorder (with retries on the same parameters) for
    /// the order as stored, unless a concurrent caller stored one meanwhile. With several instances
    /// on one store, one of them calls (OrderService+Instances.swift).
    private func requestPrepay(_ outTradeNo: String) async -> Result<OrderRecord, APIError> {
        if let claims = store as? any OrderCallClaims { return await prepayAcrossInstances(outTradeNo, claims: claims) }
        do {
            // Re-read: a concurrent caller may have stored a prepay_id while this one waited.
            guard let order = try await store.order(outTradeNo) else { return .failure(.orderNotFound) }
            if hasLivePrepay(order) { return .success(order) }
            return await unifiedOrder(order)
        } catch {
            return .failure(apiError(for: error))
        }
    }

    /// A prepay for `order` (v2 unifiedorder), and its prepay_id stored.
    func unifiedOrder(_ order: OrderRecord) async -> Result<OrderRecord, APIError> {
        let outTradeNo = order.outTradeNo
        let prepayID: String
        do {
            prepayID = try await upstream.prepay(order, notifyURL: notifyURL)
        } catch {
            return .failure(await upstreamFailure(error, outTradeNo: outTradeNo, api: "unifiedorder"))
        }
        do {
            let issuedAt = now()
            // The prepay_id and its timeline event in one write (one savepoint in the group commit).
            guard let updated = try await store.setPrepay(
                outTradeNo, prepayID: prepayID, issuedAt: issuedAt,
                event: NewOrderEvent(kind: "prepay", detail: "prepay_id issued", at: issuedAt))
            else { return .failure(.orderNotFound) }
            return .success(updated)
        } catch {
            return .failure(apiError(for: error))
        }
    }

    /// What the API answers when WeChat refused or failed; some answers also change the order.
    private func upstreamFailure(_ error: UpstreamError, outTradeNo: String, api: String) async -> APIError {
        let at = now()
        _ = try? await store.appendEvent(outTradeNo, kind: "\(api)_failed", detail: error.shortDescription, at: at)
        switch error.advice {
        case .treatAsPaid:
            // ORDERPAID: WeChat says it is paid; believe it only after a verified orderquery.
            _ = await refresh(outTradeNo, reason: "\(api) answered ORDERPAID", fresh: true)
            return .conflict("the order with this out_trade_no is already paid")
        case .treatAsClosed:
            if let order = try? await store.order(outTradeNo) {
                _ = try? await settlement.close(order, detail: "\(api) answered ORDERCLOSED")
            }
            return .conflict("the order with this out_trade_no is closed")
        default:
            break
        }
        if error.isRetryable || error.mayHaveTakenEffect || error.kind == .transport || error.kind == .httpStatus
            || error.kind == .malformedResponse || error.kind == .badSignature
        {
            return .upstreamUnavailable
        }
        if let code = error.code {
            return .upstreamRejected(code, "WeChat Pay refused the request (\(code))")
        }
        return .upstreamRejected("RETURN_FAIL", "WeChat Pay refused the request")
    }

    /// A fresh out_trade_no: Beijing date and time plus 12 random characters (26 in all).
    static func generateOutTradeNo(at date: Date) -> String {
        BeijingTime.format(date) + String(RandomNonceSource().nextNonce().prefix(12))
    }

    // MARK: - Query

    // `order(_:wait:)` and the held waits are in OrderService+Wait.swift.

    /// Asks WeChat (orderquery) and settles what it says. One query per order at a time.
    /// - Parameters:
    ///   - fresh: the answer must come from a query sent now, not one already in flight.
    ///   - includingFinal: ask even when the order is final (a support recheck).
    ///   - paced: ask only if no orderquery about the order ended within the poll interval (polls).
    @discardableResult
    func refresh(_ outTradeNo: String, reason: String, fresh: Bool = false, includingFinal: Bool = false,
                 paced: Bool = false) async -> OrderRecord?
    {
        let ask = { @Sendable [self] in
            await self.queryAndSettle(outTradeNo, reason: reason, includingFinal: includingFinal, paced: paced)
        }
        if fresh && upstream.queries.isRunning(outTradeNo) {
            // The query in flight may have left before the news that prompted this one
            // (closeorder's ORDERPAID, a person asking now): let it finish, then ask again.
            _ = await upstream.queries.run(outTradeNo, ask)
            if !includingFinal, let order = try? await store.order(outTradeNo), order.state.isFinal { return order }
        }
        return await upstream.queries.run(outTradeNo, ask)
    }

    /// Asks WeChat (orderquery) about one order and settles the answer through the one door. Every
    /// caller — waits, recheck, close, the reconciler, the bill comparison — comes here, inside the
    /// per-order single-flight (`upstream.queries`). `source` names the caller in the timeline
    /// (`orderquery`, `reconcile`, `bill`); a failed call's label goes to `failure` when given.
    ///
    /// A final order is asked about only with `includingFinal` (support's recheck): WeChat may
    /// hold a CLOSED order paid (it then settles as paid after close), and a SUCCESS order stays
    /// SUCCESS whatever the answer, as the one door allows no way out of it but REFUND.
    ///
    /// With `paced` (the waits' polls and the sweeps: routine checks, no news behind them) nothing
    /// is asked when an orderquery about the order ended within the poll interval: its answer is
    /// already settled, and WeChat hears about an order at most once per poll interval from this
    /// process. Queries prompted by news (closeorder's ORDERPAID, a support recheck, the bill) ask.
    func queryAndSettle(_ outTradeNo: String, reason: String, source: String = "orderquery",
                        failure: LockedBox<String?>? = nil, includingFinal: Bool = false,
                        paced: Bool = false) async -> OrderRecord? {
        guard let order = try? await store.order(outTradeNo) else { return nil }
        guard includingFinal || !order.state.isFinal else { return order }
        // WeChat knows nothing of an iOS order: the App Store's side is IAPService's.
        guard order.channel == .wechat else { return order }
        if paced && upstream.isPaced(outTradeNo, interval: configuration.pollInterval) { return order }
        do {
            let trade = try await upstream.queryOrder(order)
            let at = now()
            _ = try? await store.touch(outTradeNo, .lastQueried, at: at)
            // A sweep checks long-unpaid orders again and again: the first check and every answer
            // other than NOTPAY are what a person needs to see in the timeline.
            if order.lastQueriedAt == nil || trade.state != .notPay || source != "reconcile" {
                _ = try? await store.appendEvent(
                    outTradeNo, kind: source, detail: "\(reason): orderquery trade_state=\(trade.state.rawValue)",
                    at: at)
            }
            return await settlement.apply(trade, to: order, source: source) ?? order
        } catch {
            if error.notFound {
                // unifiedorder never reached WeChat; the order is closed locally once it expires.
                _ = try? await store.touch(outTradeNo, .lastQueried, at: now())
                return order
            }
            failure?.update { $0 = error.shortDescription }
            _ = try? await store.appendEvent(
                outTradeNo, kind: "\(source)_failed", detail: "\(reason): orderquery \(error.shortDescription)", at: now())
            return order
        }
    }

    // MARK: - Close

    /// Closes the order with WeChat; an order WeChat says is paid is settled as paid instead.
    /// With `owner` (an app token's user), another user's order is `order_not_found`.
    public func close(_ outTradeNo: String, owner: String? = nil) async throws(APIError) -> [UInt8] {
        guard let order = try await storage({ () throws(StorageError) in try await self.store.order(outTradeNo) }),
              Self.isVisible(order, to: owner)
        else {
            throw .orderNotFound
        }
        if order.state.isFinal { return try await viewJSON(order) }
        if order.channel == .apple {
            // There is nothing to close at Apple: a transaction arriving later still settles it,
            // flagged paid_after_close.
            let closed = (try? await settlement.close(order, detail: "closed on request (iOS order: closed locally)")) ?? order
            return try await viewJSON(closed)
        }
        let age = now().timeIntervalSince(order.createdAt)
        guard age >= Self.minimumAgeToClose else {
            throw .closeTooEarly(retryAfter: Int((Self.minimumAgeToClose - age).rounded(.up)))
        }
        // A close answers a final order or an error, never the order as it was: the client asked
        // for an outcome, and "still open" would read as "not paid, not closed" when WeChat may
        // hold it either.
        let outcome: UpstreamClosing
        do {
            outcome = try await upstream.closeOrder(order)
        } catch {
            guard error.notFound else {
                throw await upstreamFailure(error, outTradeNo: outTradeNo, api: "closeorder")
            }
            // WeChat never had the order (unifiedorder never reached it): nothing can pay it.
            let closed = try await storage { () throws(StorageError) in
                try await self.settlement.close(order, detail: "closeorder: ORDERNOTEXIST")
            }
            return try await viewJSON(closed)
        }
        switch outcome {
        case .closed:
            let closed = try await storage { () throws(StorageError) in
                try await self.settlement.close(order, detail: "closeorder")
            }
            return try await viewJSON(closed)
        case .alreadyPaid:
            // ORDERPAID: settled only on a verified orderquery answer, never on closeorder's word.
            // When that orderquery fails, the outcome is WeChat's to confirm: the client retries.
            guard let settled = await refresh(outTradeNo, reason: "closeorder answered ORDERPAID", fresh: true),
                  settled.state.isFinal
            else {
                throw .upstreamUnavailable
            }
            return try await viewJSON(settled)
        }
    }

    // MARK: - Support

    /// Orders found by exactly one identifier, each with its event timeline. A `user_id` lookup
    /// answers one page (`page`, default the 100 newest) and `next_cursor` when there are more.
    public func supportLookup(outTradeNo: String?, transactionID: String?, userID: String?,
                              appleTransactionID: String? = nil, originalTransactionID: String? = nil,
                              appleOrderID: String? = nil) async throws(APIError) -> [UInt8]
    {
        try await supportLookup(outTradeNo: outTradeNo, transactionID: transactionID, userID: userID,
                                appleTransactionID: appleTransactionID, originalTransactionID: originalTransactionID,
                                appleOrderID: appleOrderID,
                                page: OrderPageRequest(limit: nil, cursor: nil, defaultLimit: 100, maximum: 100))
    }

    /// With `apple_transaction_id` or `original_transaction_id` (App Store ids), the answer also
    /// lists `apple_transactions`: the ledger's rows for them, credited or not yet (an unmatched
    /// purchase has no order to show). With `apple_order_id` (the order id of the customer's Apple
    /// receipt e-mail) the App Store is asked (Look Up Order ID), and `apple_order` says whether it
    /// knew the id.
    func supportLookup(outTradeNo: String?, transactionID: String?, userID: String?, appleTransactionID: String? = nil,
                       originalTransactionID: String? = nil, appleOrderID: String? = nil,
                       page: OrderPageRequest) async throws(APIError) -> [UInt8]
    {
        let given = [outTradeNo, transactionID, userID, appleTransactionID, originalTransactionID, appleOrderID].compactMap { $0 }
        guard given.count == 1 else {
            throw .invalid(nil, "give exactly one of out_trade_no, transaction_id, user_id, apple_transaction_id, "
                           + "original_transaction_id or apple_order_id")
        }
        var orders: [OrderRecord] = []
        var next: OrderPageKey?
        var ledger: [[UInt8]]?
        var appleOrder: [UInt8]?
        if appleTransactionID != nil || originalTransactionID != nil || appleOrderID != nil {
            guard let iap else { throw .invalid(nil, "App Store purchases are off (APPSTORE_BUNDLE_ID is unset)") }
            if let appleOrderID {
                let found = try await iap.lookup(appleOrderID: appleOrderID)
                (orders, ledger) = found ?? ([], [])
                var writer = JSONObjectWriter(capacity: 64)
                writer.string("order_id", appleOrderID)
                writer.string("status", found == nil ? "invalid" : "valid")
                appleOrder = writer.finish()
            } else {
                (orders, ledger) = try await iap.lookup(appleTransactionID: appleTransactionID,
                                                        originalTransactionID: originalTransactionID)
            }
        } else if let outTradeNo {
            orders = try await storage { () throws(StorageError) in try await self.store.order(outTradeNo).map { [$0] } ?? [] }
        } else if let transactionID {
            orders = try await storage { () throws(StorageError) in try await self.store.orders(transactionID: transactionID) }
        } else if let userID {
            let found = try await storage { () throws(StorageError) in
                try await self.store.orders(userID: userID, limit: page.limit, after: page.after)
            }
            orders = found.orders
            next = found.next
        }
        var views: [[UInt8]] = []
        for order in orders { views.append(try await supportView(order, timeline: true)) }
        var lookup = JSONObjectWriter(capacity: 1024)
        if let appleOrder { lookup.raw("apple_order", appleOrder) }
        if let ledger { lookup.array("apple_transactions", ledger) }
        lookup.string("next_cursor", next.map(OrderPageRequest.cursor))
        lookup.array("orders", views)
        return lookup.finish()
    }

    /// The attention list (`GET /v1/support/attention`): the orders whose flags need a person
    /// (`OrderFlag.needingAttention`, or only `flag`), newest first, a page at a time; without
    /// `flag`, also the App Store purchases waiting unclaimed (`unclaimed_transactions`).
    func attentionList(flag: String?, page: OrderPageRequest) async throws(APIError) -> [UInt8] {
        var flags = OrderFlag.needingAttention
        if let flag {
            guard let parsed = OrderFlag(rawValue: flag), flags.contains(parsed) else {
                throw .invalid("flag", "flag must be one of " + flags.map(\.rawValue).sorted().joined(separator: ", "))
            }
            flags = [parsed]
        }
        let found = try await storage { () throws(StorageError) in
            try await self.store.orders(flagged: flags, limit: page.limit, after: page.after)
        }
        var views: [[UInt8]] = []
        for order in found.orders { views.append(try await supportView(order, timeline: false)) }
        var list = JSONObjectWriter(capacity: 1024)
        list.string("next_cursor", found.next.map(OrderPageRequest.cursor))
        list.array("orders", views)
        if flag == nil, iap != nil {
            list.array("unclaimed_transactions", try await unclaimedTransactions().map(IAPService.json))
        }
        return list.finish()
    }

    /// The App Store purchases no order holds yet (a notification's without a token, a weak report's
    /// nothing ties to its reporter), least recently tried first: what the attention list shows
    /// beside its orders, since only a signed report, the reconciler or a person can place them.
    func unclaimedTransactions(limit: Int = 50) async throws(APIError) -> [AppleTransactionRecord] {
        guard let iap else { return [] }
        let before = now().addingTimeInterval(1)
        return try await storage { () throws(StorageError) in try await iap.store.unmatchedAppleTransactions(before: before, limit: limit) }
    }

    /// An order as support sees it: its view with the user, prepay_id and flags, and — with
    /// `timeline` — its events and webhook deliveries.
    private func supportView(_ order: OrderRecord, timeline: Bool) async throws(APIError) -> [UInt8] {
        var view = try await storage { () throws(StorageError) in try await self.view(order) }
        view.userID = order.userID
        view.prepayID = order.prepayID
        view.flags = order.flags.map(\.rawValue).sorted()
        if timeline {
            view.events = try await storage { () throws(StorageError) in try await self.store.events(order.outTradeNo) }
                .map(EventView.init)
            // Whether the business backend heard of the payment: delivered, pending or dead.
            view.outbox = try await storage { () throws(StorageError) in try await self.store.outboxEvents(order.outTradeNo) }
                .map(OutboxEventView.init)
        }
        return view.json
    }

    /// Asks WeChat about the order now, final or not, and settles the answer: a CLOSED order
    /// WeChat holds paid (the payment that raced the close) is exactly what support rechecks.
    public func recheck(_ outTradeNo: String) async throws(APIError) -> [UInt8] {
        try await viewJSON(try await recheckOrder(outTradeNo).order)
    }

    /// `recheck`'s work: the order afterwards and the timeline's `recheck` event, after which the
    /// answer WeChat (or the App Store) gave is the next `orderquery` (or `orderquery_failed`)
    /// entry. `requestedBy` names who asked, in that event (`support`, or a console user).
    func recheckOrder(_ outTradeNo: String, requestedBy: String = "support") async throws(APIError)
        -> (order: OrderRecord, request: OrderEvent?)
    {
        guard let found = try await storage({ () throws(StorageError) in try await self.store.order(outTradeNo) }) else {
            throw .orderNotFound
        }
        let request = try? await store.appendEvent(outTradeNo, kind: "recheck", detail: "requested by \(requestedBy)", at: now())
        if found.channel == .apple {
            // The App Store is asked instead of WeChat (IAP/IAPService+Support.swift).
            guard let iap else { return (found, request ?? nil) }
            return (await iap.recheck(found), request ?? nil)
        }
        let order = await refresh(outTradeNo, reason: "support recheck", fresh: true, includingFinal: true)
        guard let order else { throw .orderNotFound }
        return (order, request ?? nil)
    }

    // MARK: - Helpers

    /// `GatewayContext.storage`: a storage failure as an API error.
    func storage<T>(_ operation: () async throws(StorageError) -> T) async throws(APIError) -> T {
        try await context.storage(operation)
    }

    func apiError(for error: StorageError) -> APIError { context.apiError(for: error) }
}

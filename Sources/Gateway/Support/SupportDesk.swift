// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON
import Observability
import StorageCore
import WeChatPay

/// The support flow behind `/v1/support/*` and the console: look-ups by any identifier (Apple's
/// too), the attention list, rechecks (WeChat's orderquery, or the App Store for an iOS order) and
/// redrives of the outbox (SupportDesk+Outbox.swift).
public final class SupportDesk: OrderFlow {
    let context: GatewayContext
    /// A recheck asks WeChat through the query flow.
    let queries: OrderQueries
    /// iOS purchases, when on: look-ups by Apple's ids and rechecks of iOS orders go there.
    let iap: IAPService?

    /// Made by `GatewayServices`, the composition root.
    init(context: GatewayContext, queries: OrderQueries, iap: IAPService?) {
        self.context = context
        self.queries = queries
        self.iap = iap
    }

    /// Orders found by exactly one identifier, each with its event timeline. A `user_id` lookup
    /// answers one page (`page`, default the 100 newest) and `next_cursor` when there are more.
    public func supportLookup(outTradeNo: String?, transactionID: String?, userID: String?,
                              appleTransactionID: String? = nil, originalTransactionID: String? = nil,
                              appleOrderID: String? = nil, app: String? = nil, tradeType: String? = nil)
        async throws(APIError) -> [UInt8]
    {
        try await supportLookup(outTradeNo: outTradeNo, transactionID: transactionID, userID: userID,
                                appleTransactionID: appleTransactionID, originalTransactionID: originalTransactionID,
                                appleOrderID: appleOrderID, app: app, tradeType: tradeType,
                                page: OrderPageRequest(limit: nil, cursor: nil, defaultLimit: 100, maximum: 100))
    }

    /// With `apple_transaction_id` or `original_transaction_id` (App Store ids), the answer also
    /// lists `apple_transactions`: the ledger's rows for them, credited or not yet (an unmatched
    /// purchase has no order to show). With `apple_order_id` (the order id of the customer's Apple
    /// receipt e-mail) the App Store is asked (Look Up Order ID), and `apple_order` says whether it
    /// knew the id.
    ///
    /// `app` (a name in WXPAY_APPS) and `tradeType` (`APP`, `JSAPI`, `NATIVE`, `MWEB`) narrow the
    /// orders found as the console's filters do (`OrderSearch`); given without an identifier, they
    /// list every order of that channel, newest first, a page at a time.
    func supportLookup(outTradeNo: String?, transactionID: String?, userID: String?, appleTransactionID: String? = nil,
                       originalTransactionID: String? = nil, appleOrderID: String? = nil, app: String? = nil,
                       tradeType: String? = nil, page: OrderPageRequest) async throws(APIError) -> [UInt8]
    {
        let given = [outTradeNo, transactionID, userID, appleTransactionID, originalTransactionID, appleOrderID].compactMap { $0 }
        let filter = try channelFilter(app: app, tradeType: tradeType)
        guard given.count == 1 || (given.isEmpty && filter != nil) else {
            throw .invalid(nil, "give exactly one of out_trade_no, transaction_id, user_id, apple_transaction_id, "
                           + "original_transaction_id or apple_order_id, or app or trade_type alone to list a channel's orders")
        }
        var orders: [OrderRecord] = []
        var next: OrderPageKey?
        var ledger: [[UInt8]]?
        var appleOrder: [UInt8]?
        if appleTransactionID != nil || originalTransactionID != nil || appleOrderID != nil {
            guard let iap else { throw .invalid(nil, "App Store purchases are off (APPSTORE_BUNDLE_ID is unset)") }
            if let appleOrderID {
                let found = try await iap.lookup(appleOrderID: appleOrderID)
                (orders, ledger) = (found?.orders ?? [], found?.ledger ?? [])
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
        } else if let userID, filter == nil {
            let found = try await storage { () throws(StorageError) in
                try await self.store.orders(userID: userID, limit: page.limit, after: page.after)
            }
            orders = found.orders
            next = found.next
        } else if var search = filter {
            // A user's orders of one channel, or every order of it: the store's search pages them
            // in the same order and with the same cursor as the user's orders.
            search.userID = userID
            let found = try await storage { () throws(StorageError) in
                try await self.store.searchOrders(search, limit: page.limit, after: page.after)
            }
            orders = found.orders
            next = found.next
        }
        // The look-ups above find a handful of orders; the filters narrow them as the store would.
        if let filter, userID == nil { orders = orders.filter(filter.matchesChannel) }
        var views: [[UInt8]] = []
        for order in orders { views.append(try await supportView(order, timeline: true)) }
        var lookup = JSONObjectWriter(capacity: 1024)
        if let appleOrder { lookup.raw("apple_order", appleOrder) }
        if let ledger { lookup.array("apple_transactions", ledger) }
        lookup.string("next_cursor", next.map(OrderPageRequest.cursor))
        lookup.array("orders", views)
        return lookup.finish()
    }

    /// WeChat's trade types, as support filters by them.
    static let tradeTypes: Set<String> = ["APP", "JSAPI", "NATIVE", "MWEB"]

    /// The search `app` and `tradeType` ask for, or nil when neither is given; an app the merchant
    /// does not have (WXPAY_APPS) or a trade type WeChat does not have is 400, so a typo is never
    /// read as "no orders".
    func channelFilter(app: String?, tradeType: String?) throws(APIError) -> OrderSearch? {
        if app == nil, tradeType == nil { return nil }
        if let app {
            let names = context.configuration.apps.all.map(\.name)
            guard names.contains(app) else {
                throw .invalid("app", "app must be one of the merchant's apps (\(names.joined(separator: ", ")))")
            }
        }
        if let tradeType, !Self.tradeTypes.contains(tradeType) {
            throw .invalid("trade_type", "trade_type must be one of APP, JSAPI, NATIVE, MWEB")
        }
        return OrderSearch(app: app, tradeType: tradeType)
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
    public func unclaimedTransactions(limit: Int = 50) async throws(APIError) -> [AppleTransactionRecord] {
        guard let iap else { return [] }
        let before = now().addingTimeInterval(1)
        return try await storage { () throws(StorageError) in try await iap.store.unmatchedAppleTransactions(before: before, limit: limit) }
    }

    /// An order as support sees it: its view with the user, prepay_id and flags, and — with
    /// `timeline` — its events and webhook deliveries.
    func supportView(_ order: OrderRecord, timeline: Bool) async throws(APIError) -> [UInt8] {
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
    public func recheckOrder(_ outTradeNo: String, requestedBy: String = "support") async throws(APIError)
        -> (order: OrderRecord, request: OrderEvent?)
    {
        guard let found = try await storage({ () throws(StorageError) in try await self.store.order(outTradeNo) }) else {
            throw .orderNotFound
        }
        // Nothing is asked of WeChat, nor written, for an order whose API version has no keys here.
        if found.channel == .wechat, let problem = queries.upstream.unconfigured(.queryOrder, for: found) {
            throw .apiVersionNotConfigured(problem)
        }
        let request = try? await store.appendEvent(outTradeNo, kind: "recheck", detail: "requested by \(requestedBy)", at: now())
        if found.channel == .apple {
            // The App Store is asked instead of WeChat (IAP/IAPService+Support.swift).
            guard let iap else { return (found, request ?? nil) }
            return (await iap.recheck(found), request ?? nil)
        }
        let order = await queries.refresh(outTradeNo, reason: "support recheck", fresh: true, includingFinal: true)
        guard let order else { throw .orderNotFound }
        return (order, request ?? nil)
    }
}

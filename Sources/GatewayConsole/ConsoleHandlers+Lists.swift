// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import HTTP
import StorageCore

/// The handlers of the console's list pages (`ConsolePages+Lists.swift`): the order search (with
/// Apple's Order ID looked up when nothing here matches), the orders that need attention, and the
/// audit log.
extension Console {
    // MARK: - Search

    func searchPage(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        await signedInPage(request, right: .search, action: "search") { (exchange) throws(APIError) in
            let query = request.query
            var model = ConsolePages.Search()
            // No identifier holds a control character (and no store keeps U+0000): they go.
            let typed = (query["q"] ?? "").unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }
            model.q = String(String(String.UnicodeScalarView(typed)).trimmingWhitespace().prefix(128))
            model.from = query["from"] ?? ""
            model.to = query["to"] ?? ""
            var search = OrderSearch(identifier: model.q.isEmpty ? nil : model.q)
            var problems: [String] = []
            if let state = query["state"], !state.isEmpty {
                if let parsed = OrderState(rawValue: state) {
                    model.state = parsed
                    search.states = [parsed]
                } else {
                    problems.append(exchange.text.invalidState)
                }
            }
            model.apps = self.services.configuration.apps.all.map(\.name)
            if let app = query["app"], !app.isEmpty {
                if model.apps.contains(app) {
                    model.app = app
                    search.app = app
                } else {
                    problems.append(exchange.text.invalidApp)
                }
            }
            if let type = query["trade_type"], !type.isEmpty {
                if ConsolePages.tradeTypes.contains(type) {
                    model.tradeType = type
                    search.tradeType = type
                } else {
                    problems.append(exchange.text.invalidTradeType)
                }
            }
            for (value, isEnd) in [(model.from, false), (model.to, true)] where !value.isEmpty {
                guard let day = ConsoleFormat.beijingDay(value) else {
                    problems.append(exchange.text.invalidDate)
                    continue
                }
                if isEnd { search.createdBefore = day.addingTimeInterval(86400) } else { search.createdFrom = day }
            }
            var after: OrderPageKey?
            if let cursor = query["cursor"] {
                if let page = try? OrderPageRequest(limit: nil, cursor: cursor, defaultLimit: Self.pageSize, maximum: Self.pageSize) {
                    after = page.after
                    model.cursor = cursor
                    model.offset = min(max(Int(query["offset"] ?? "") ?? 0, 0), 1_000_000_000)
                } else {
                    problems.append(exchange.text.invalidCursor)
                }
            }
            if !problems.isEmpty {
                model.notice = ConsoleNotice(kind: .error, text: Array(Set(problems)).sorted().joined(separator: " "))
            }
            // A filter that could not be read is not silently dropped: nothing is listed under its error.
            let found = problems.isEmpty
                ? try await storage { () throws(StorageError) in try await self.store.searchOrders(search, limit: Self.pageSize, after: after) }
                : OrderPage(orders: [], next: nil)
            model.orders = found.orders
            model.nextCursor = found.next.map(OrderPageRequest.cursor)
            var filters = [("state", model.state?.rawValue), ("app", model.app), ("trade_type", model.tradeType),
                           ("from", model.from), ("to", model.to)]
                .compactMap { name, value in value.flatMap { $0.isEmpty ? nil : "\(name)=\($0)" } }
            if found.orders.isEmpty, after == nil, problems.isEmpty,
               let (orders, notice, unclaimed) = await self.appleOrderLookup(model.q, exchange.text) {
                // An Order ID from Apple's receipt e-mail is not stored: Apple is asked which
                // transactions it covers (Look Up Order ID), as GET /v1/support/orders?apple_order_id=.
                model.orders = orders
                model.notice = notice
                if orders.isEmpty { model.unclaimedPurchase = unclaimed }
                filters.append("apple_order_id lookup")
            }
            if found.orders.isEmpty, after == nil, problems.isEmpty, let iap = services.iap,
               (1...32).contains(model.q.utf8.count), model.q.utf8.allSatisfy({ $0 >= 0x30 && $0 <= 0x39 }),
               let purchase = try await storage({ () throws(StorageError) in try await iap.store.appleTransaction(model.q) }),
               purchase.outTradeNo == nil
            {
                // An App Store purchase no order holds: its page is where support assigns it.
                model.unclaimedPurchase = purchase.transactionID
                filters.append("unclaimed purchase")
            }
            // What the page showed: the search's orders, or the Apple order id look-up's.
            try await record(exchange, action: "search", target: model.q.isEmpty ? nil : model.q, outcome: "ok",
                             detail: (filters + ["offset=\(model.offset)", "\(model.orders.count) orders"
                                 + (model.nextCursor == nil ? "" : ", more")]).joined(separator: " "))
            return ConsoleHTTP.html(ConsolePages.search(exchange.chrome, model))
        }
    }

    /// Look Up Order ID for what was typed, when it can be an Apple order id (6 to 64 capitals and
    /// digits, with a letter) and the App Store Server API is configured; nil otherwise.
    private func appleOrderLookup(_ typed: String, _ text: ConsoleText) async -> ([OrderRecord], ConsoleNotice, unclaimed: String?)? {
        guard let iap = services.iap, iap.clients.serverAPI != nil, (6...64).contains(typed.utf8.count),
              typed.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 >= 0x41 && $0 <= 0x5A) }),
              typed.utf8.contains(where: { $0 >= 0x41 })
        else { return nil }
        do {
            let found = try await iap.lookup(appleOrderID: typed)
            let orders = found?.orders ?? []
            let unclaimed = found?.unclaimed.first
            return (orders, ConsoleNotice(kind: .info, text: text.appleOrderLookup(typed, found: orders.count + (unclaimed == nil ? 0 : 1))),
                    unclaimed)
        } catch {
            return ([], ConsoleNotice(kind: .error, text: text.appleOrderLookupFailed, detail: error.message), nil)
        }
    }

    // MARK: - Needs attention

    /// The orders whose flags need a person, newest first, as GET /v1/support/attention lists them.
    func attentionPage(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        await signedInPage(request, right: .search, action: "view_attention") { (exchange) throws(APIError) in
            let query = request.query
            var model = ConsolePages.Attention()
            var flags = OrderFlag.needingAttention
            if let flag = query["flag"].flatMap(OrderFlag.init(rawValue:)), flags.contains(flag) {
                model.flag = flag
                flags = [flag]
            }
            var after: OrderPageKey?
            if let cursor = query["cursor"],
               let page = try? OrderPageRequest(limit: nil, cursor: cursor, defaultLimit: Self.pageSize, maximum: Self.pageSize) {
                after = page.after
                model.cursor = cursor
                model.offset = min(max(Int(query["offset"] ?? "") ?? 0, 0), 1_000_000_000)
            }
            let found = try await storage { () throws(StorageError) in
                try await self.store.searchOrders(OrderSearch(flags: flags), limit: Self.pageSize, after: after)
            }
            model.orders = found.orders
            model.nextCursor = found.next.map(OrderPageRequest.cursor)
            if model.flag == nil { model.unclaimed = try await services.support.unclaimedTransactions() }
            try await record(exchange, action: "view_attention", outcome: "ok",
                             detail: (model.flag.map { ["flag=\($0.rawValue)"] } ?? [])
                                 .joined(separator: " ") + " offset=\(model.offset) \(found.orders.count) orders"
                                 + (found.next == nil ? "" : ", more"))
            return ConsoleHTTP.html(ConsolePages.attention(exchange.chrome, model))
        }
    }

    // MARK: - The audit log

    func auditPage(_ request: HTTPServerRequest) async -> HTTPServerResponse {
        await signedInPage(request, right: .audit, action: "view_audit") { (exchange) throws(APIError) in
            let audit = self.services.audit
            var model = ConsolePages.Audit()
            let query = request.query
            model.actor = String((query["actor"] ?? "").trimmingWhitespace().prefix(128))
            model.order = String((query["order"] ?? "").trimmingWhitespace().prefix(64))
            // As long as the longest action: a refused support call's is its method and route.
            model.action = String((query["action"] ?? "").trimmingWhitespace().prefix(128))
            model.before = query["before"].flatMap { Int64($0) }.flatMap { $0 > 0 ? $0 : nil }
            let filter = AuditQuery(actor: model.actor.isEmpty ? nil : model.actor, outTradeNo: model.order.isEmpty ? nil : model.order,
                                    action: model.action.isEmpty ? nil : model.action)
            // The look is on record before the page is built, so it lists itself.
            try await self.record(exchange, action: "view_audit", outTradeNo: filter.outTradeNo, target: filter.actor,
                                  outcome: "ok", detail: model.action.isEmpty ? "" : "action=\(model.action)")
            let page = try await audit.entries(filter, limit: Self.pageSize, before: model.before)
            model.entries = page.entries
            model.nextBefore = page.nextBefore
            return ConsoleHTTP.html(ConsolePages.audit(exchange.chrome, model))
        }
    }
}

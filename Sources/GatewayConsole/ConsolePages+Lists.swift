// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import StorageCore

/// The console's list pages: the order search, the orders that need attention, and the audit log.
extension ConsolePages {
    // MARK: - Search

    struct Search: Sendable {
        var q = ""
        var state: OrderState?
        var app = ""
        var tradeType = ""
        /// The merchant's app names, for the app filter.
        var apps: [String] = []
        var from = ""
        var to = ""
        var orders: [OrderRecord] = []
        /// What was typed is an App Store purchase no order holds (shown instead of "no order").
        var unclaimedPurchase: String?
        /// The cursor of the next page, when there is one.
        var nextCursor: String?
        /// This page's cursor (nil on the first page).
        var cursor: String?
        /// How many orders the pages before this one held (for "orders 51–100").
        var offset = 0
        var notice: ConsoleNotice?
    }

    static func search(_ chrome: ConsoleChrome, _ model: Search) -> HTML {
        let text = chrome.text
        let options: [HTML] = [HTML("<option value=\"\"\(model.state == nil ? " selected" : "")>\(text.anyState)</option>")]
            + OrderState.allCases.map { state in
                "<option value=\"\(state.rawValue)\"\(model.state == state ? " selected" : "")>\(text.stateLabel(state))</option>"
            }
        let appOptions: [HTML] = [HTML("<option value=\"\"\(model.app.isEmpty ? " selected" : "")>\(text.anyApp)</option>")]
            + model.apps.map { name in "<option value=\"\(name)\"\(model.app == name ? " selected" : "")>\(name)</option>" }
        let tradeTypeOptions: [HTML] = [HTML("<option value=\"\"\(model.tradeType.isEmpty ? " selected" : "")>\(text.anyTradeType)</option>")]
            + ConsolePages.tradeTypes.map { type in "<option value=\"\(type)\"\(model.tradeType == type ? " selected" : "")>\(type)</option>" }
        let form: HTML = """
            <form method="get" action="/console/" id="search" class="card">
            <label for="q">\(text.searchLabel)</label>
            <input id="q" name="q" value="\(model.q)" maxlength="128" autofocus>
            <div class="filters">
            <label>\(text.stateLabel) <select name="state" id="state">\(options)</select></label>
            <label>\(text.appLabel) <select name="app" id="app">\(appOptions)</select></label>
            <label>\(text.tradeTypeLabel) <select name="trade_type" id="trade-type">\(tradeTypeOptions)</select></label>
            <label>\(text.fromLabel) <input type="date" name="from" id="from" value="\(model.from)"></label>
            <label>\(text.toLabel) <input type="date" name="to" id="to" value="\(model.to)"></label>
            <span class="hint">\(text.beijingDateHint)</span>
            </div>
            <button type="submit">\(text.searchButton)</button>
            </form>
            """
        let keep: [(String, String?)] = [("q", model.q), ("state", model.state?.rawValue), ("app", model.app),
                                         ("trade_type", model.tradeType), ("from", model.from), ("to", model.to)]
        var results: HTML
        if let purchase = model.unclaimedPurchase {
            let link = "/console/apple-transactions/" + HTML.segment(purchase)
            results = "<p id=\"unclaimed-purchase\">\(text.unclaimedPurchaseFound) <a href=\"\(link)\" id=\"unclaimed-purchase-link\">\(text.openPurchase)</a></p>"
        } else if model.orders.isEmpty {
            results = "<p id=\"no-results\">\(text.noResults)</p>"
        } else {
            results = orderTable(model.orders, text, range: text.showing(model.offset + 1, model.offset + model.orders.count,
                                                                            more: model.nextCursor != nil))
        }
        var pages: [HTML] = []
        if model.cursor != nil {
            pages.append("<a href=\"/console/\(HTML.query(keep))\" id=\"first-page\">\(text.firstPage)</a>")
        }
        if let next = model.nextCursor {
            let link = "/console/" + HTML.query(keep + [("cursor", next), ("offset", String(model.offset + model.orders.count))])
            pages.append("<a href=\"\(link)\" id=\"next-page\" rel=\"next\">\(text.nextPage)</a>")
        }
        let pager: HTML = pages.isEmpty ? .empty : "<nav class=\"pages\">\(pages)</nav>"
        return document(chrome, title: text.searchTitle, "\(notice(model.notice))\(form)\n\(results)\n\(pager)")
    }

    /// The orders as a table: number, channel, state, amount (in its currency), user, the paying
    /// transaction (WeChat's or Apple's), created, paid — and flags when `flags`.
    static func orderTable(_ orders: [OrderRecord], _ text: ConsoleText, range: String, flags: Bool = false) -> HTML {
        let rows: [HTML] = orders.map { order in
            let flagCell: HTML = flags
                ? "<td class=\"flags\">\(order.flags.sorted().map { HTML("<span class=\"flag\" title=\"\(text.flagExplanation($0))\">\($0.rawValue)</span> ") })</td>"
                : .empty
            return """
                <tr data-channel="\(order.channel.rawValue)"><td><a href="/console/orders/\(HTML.segment(order.outTradeNo))">\(order.outTradeNo)</a></td>\
                <td>\(text.channelName(order.channel))</td><td class="app">\(text.appAndTradeType(order))</td>\
                <td>\(stateBadge(order.state, text))</td><td class="amount">\(ConsoleFormat.money(order.amount, currency: order.currency))</td>\
                <td>\(order.userID ?? "")</td><td class="mono">\(order.transactionID ?? order.appleTransactionID ?? "")</td>\
                <td>\(ConsoleFormat.time(order.createdAt))</td><td>\(order.paidAt.map(ConsoleFormat.time) ?? "")</td>\(flagCell)</tr>
                """
        }
        let flagHeader: HTML = flags ? "<th>\(text.flags)</th>" : .empty
        return """
            <p id="results-range">\(range)</p>
            <table id="results"><thead><tr><th>\(text.outTradeNo)</th><th>\(text.channel)</th>\
            <th>\(text.appLabel) · \(text.tradeTypeLabel)</th><th>\(text.state)</th>\
            <th>\(text.amount)</th><th>\(text.userID)</th><th>\(text.paymentID)</th><th>\(text.created)</th>\
            <th>\(text.paid)</th>\(flagHeader)</tr></thead>
            <tbody>
            \(rows)
            </tbody></table>
            """
    }

    /// WeChat's trade types, as the search filters by them.
    static let tradeTypes = ["APP", "JSAPI", "NATIVE", "MWEB"]

    // MARK: - Needs attention

    struct Attention: Sendable {
        var flag: OrderFlag?
        var orders: [OrderRecord] = []
        /// App Store purchases no order holds yet (only without a flag filter).
        var unclaimed: [AppleTransactionRecord] = []
        var nextCursor: String?
        var cursor: String?
        var offset = 0
    }

    static func attention(_ chrome: ConsoleChrome, _ model: Attention) -> HTML {
        let text = chrome.text
        func current(_ flag: OrderFlag?) -> HTML { model.flag == flag ? " class=\"current\"" : .empty }
        let choices: [HTML] = [HTML("<a href=\"/console/attention\"\(current(nil))>\(text.anyFlag)</a>")]
            + OrderFlag.needingAttention.sorted().map { flag in
                "<a href=\"/console/attention\(HTML.query([("flag", flag.rawValue)]))\" data-flag=\"\(flag.rawValue)\"\(current(flag))>\(flag.rawValue)</a>"
            }
        let explanations: [HTML] = OrderFlag.needingAttention.sorted().map { flag in
            "<dt><code>\(flag.rawValue)</code></dt><dd>\(text.flagExplanation(flag))</dd>"
        }
        let results: HTML = model.orders.isEmpty
            ? "<p id=\"no-results\">\(text.nothingNeedsAttention)</p>"
            : orderTable(model.orders, text, range: text.showing(model.offset + 1, model.offset + model.orders.count,
                                                                 more: model.nextCursor != nil), flags: true)
        let keep: [(String, String?)] = [("flag", model.flag?.rawValue)]
        var pages: [HTML] = []
        if model.cursor != nil { pages.append("<a href=\"/console/attention\(HTML.query(keep))\" id=\"first-page\">\(text.firstPage)</a>") }
        if let next = model.nextCursor {
            let link = "/console/attention" + HTML.query(keep + [("cursor", next), ("offset", String(model.offset + model.orders.count))])
            pages.append("<a href=\"\(link)\" id=\"next-page\" rel=\"next\">\(text.nextPage)</a>")
        }
        let pager: HTML = pages.isEmpty ? .empty : "<nav class=\"pages\">\(pages)</nav>"
        let unclaimedRows: [HTML] = model.unclaimed.map { row in
            let link = "/console/apple-transactions/" + HTML.segment(row.facts.transactionID)
            return HTML("""
                <tr><td><a href="\(link)">\(row.facts.transactionID)</a></td><td>\(row.facts.productID)</td>\
                <td>\(ConsoleFormat.time(row.facts.purchaseDate))</td><td>\(row.source)</td></tr>
                """)
        }
        let unclaimed: HTML = model.unclaimed.isEmpty ? .empty : """
            <section id="unclaimed"><h2>\(text.unclaimedTitle)</h2><p class="hint">\(text.unclaimedHelp)</p>
            <table><thead><tr><th>\(text.appleTransactionID)</th><th>\(text.appleProductID)</th><th>\(text.purchasedAt)</th>\
            <th>\(text.firstSeenVia)</th></tr></thead><tbody>\(unclaimedRows)</tbody></table></section>
            """
        return document(chrome, title: text.attentionTitle, """
            <p class="hint">\(text.attentionHelp)</p>
            <nav class="filters" id="attention-flags">\(choices)</nav>
            \(results)
            \(pager)
            \(unclaimed)
            <section><h2>\(text.flagsTitle)</h2><dl id="flag-explanations">\(explanations)</dl></section>
            """)
    }

    // MARK: - The audit log

    struct Audit: Sendable {
        var actor = ""
        var order = ""
        var action = ""
        var entries: [AuditEntry] = []
        var nextBefore: Int64?
        var before: Int64?
    }

    static func audit(_ chrome: ConsoleChrome, _ model: Audit) -> HTML {
        let text = chrome.text
        let form: HTML = """
            <form method="get" action="/console/audit" id="audit-filter" class="card filters">
            <label>\(text.actor) <input name="actor" value="\(model.actor)" maxlength="128"></label>
            <label>\(text.order) <input name="order" value="\(model.order)" maxlength="64"></label>
            <label>\(text.action) <input name="action" value="\(model.action)" maxlength="128"></label>
            <button type="submit">\(text.filterButton)</button>
            </form>
            """
        var table: HTML
        if model.entries.isEmpty {
            table = "<p id=\"audit-none\">\(text.noEntries)</p>"
        } else {
            let rows: [HTML] = model.entries.map { stored in
                let entry = stored.entry
                let order: HTML = entry.outTradeNo.map {
                    "<a href=\"/console/orders/\(HTML.segment($0))\">\($0)</a>"
                } ?? .empty
                return """
                    <tr data-action="\(entry.action)" data-outcome="\(entry.outcome)"><td>\(ConsoleFormat.time(entry.at))</td>\
                    <td class="typed">\(entry.actor)</td><td>\(entry.role)</td><td>\(entry.channel)</td>\
                    <td>\(text.actionName(entry.action)) <code>\(entry.action)</code></td><td class="mono">\(order)</td>\
                    <td class="mono">\(entry.target ?? "")</td><td>\(entry.address ?? "")</td><td>\(entry.outcome)</td>\
                    <td>\(entry.detail)</td></tr>
                    """
            }
            table = """
                <table id="audit"><thead><tr><th>\(text.time)</th><th>\(text.actor)</th><th>\(text.role)</th>\
                <th>\(text.channel)</th><th>\(text.action)</th><th>\(text.order)</th><th>\(text.target)</th>\
                <th>\(text.address)</th><th>\(text.outcome)</th><th>\(text.detail)</th></tr></thead>
                <tbody>
                \(rows)
                </tbody></table>
                """
        }
        let keep: [(String, String?)] = [("actor", model.actor), ("order", model.order), ("action", model.action)]
        var pages: [HTML] = []
        if model.before != nil { pages.append("<a href=\"/console/audit\(HTML.query(keep))\" id=\"first-page\">\(text.firstPage)</a>") }
        if let next = model.nextBefore {
            pages.append("<a href=\"/console/audit\(HTML.query(keep + [("before", String(next))]))\" id=\"next-page\" rel=\"next\">\(text.nextPage)</a>")
        }
        let pager: HTML = pages.isEmpty ? .empty : "<nav class=\"pages\">\(pages)</nav>"
        return document(chrome, title: text.auditTitle, "\(form)\n\(table)\n\(pager)")
    }
}

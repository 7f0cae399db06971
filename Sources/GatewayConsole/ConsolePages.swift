// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import Gateway
import StorageCore

/// What every console page shows around its content: the language, who is signed in (with the
/// session's CSRF token for the sign-out form), and where the language switch returns to.
struct ConsoleChrome: Sendable {
    var language: ConsoleLanguage
    var user: ConsoleUser?
    var csrf: String?
    /// The current path and query, for the language switch to come back to.
    var here: String
    var text: ConsoleText { language.text }
}

/// A message at the top of a page.
struct ConsoleNotice: Sendable {
    enum Kind: String, Sendable { case info, success, error }
    var kind: Kind
    var text: String
    /// Shown under the text in monospace (what WeChat said, say).
    var detail: String?
}

/// The console's pages as pure functions of what they show: no request, no store, no clock, so
/// each is tested by rendering it (`ConsolePagesTests`). Every page is complete HTML with no
/// script and one stylesheet served by the gateway; every form works without JavaScript.
enum ConsolePages {
    // MARK: - The frame

    static func document(_ chrome: ConsoleChrome, title: String, _ content: HTML) -> HTML {
        let text = chrome.text
        var nav: [HTML] = []
        if let user = chrome.user {
            nav.append("<a href=\"/console/\" id=\"nav-search\">\(text.navSearch)</a>")
            nav.append("<a href=\"/console/attention\" id=\"nav-attention\">\(text.navAttention)</a>")
            if user.role.allows(.audit) { nav.append("<a href=\"/console/audit\" id=\"nav-audit\">\(text.navAudit)</a>") }
            nav.append("<span class=\"who\" id=\"who\">\(text.signedIn(as: user.name, user.role))</span>")
            nav.append("""
                <form method="post" action="/console/logout" class="inline" id="logout">\(csrfField(chrome.csrf))\
                <button type="submit">\(text.logout)</button></form>
                """)
        }
        let switchURL = "/console/language" + HTML.query([("to", chrome.language.other.rawValue), ("back", chrome.here)])
        nav.append("<a href=\"\(switchURL)\" id=\"language\" lang=\"\(chrome.language.other.rawValue)\">\(text.switchLanguage)</a>")
        return """
            <!DOCTYPE html>
            <html lang="\(chrome.language.rawValue)">
            <head>
            <meta charset="utf-8">
            <meta name="viewport" content="width=device-width, initial-scale=1">
            <title>\(title) · \(text.brand)</title>
            <link rel="stylesheet" href="/console/console.css">
            </head>
            <body>
            <header><a class="brand" href="/console/">\(text.brand)</a><nav>\(nav)</nav></header>
            <main>
            <h1>\(title)</h1>
            \(content)
            </main>
            <footer>\(text.footer)</footer>
            </body>
            </html>

            """
    }

    static func csrfField(_ token: String?) -> HTML {
        guard let token else { return .empty }
        return "<input type=\"hidden\" name=\"csrf\" value=\"\(token)\">"
    }

    static func notice(_ notice: ConsoleNotice?) -> HTML {
        guard let notice else { return .empty }
        let detail: HTML = notice.detail.map { "<pre>\($0)</pre>" } ?? .empty
        let role = notice.kind == .error ? "alert" : "status"
        return "<div class=\"notice \(notice.kind.rawValue)\" id=\"notice\" role=\"\(role)\"><p>\(notice.text)</p>\(detail)</div>\n"
    }

    /// A page that only says something (a refusal, an error).
    static func message(_ chrome: ConsoleChrome, title: String, _ text: String, back: String? = "/console/") -> HTML {
        let link: HTML = back.map { "<p><a href=\"\($0)\">\(chrome.text.back)</a></p>" } ?? .empty
        return document(chrome, title: title, "<div class=\"notice error\" id=\"notice\" role=\"alert\"><p>\(text)</p></div>\n\(link)")
    }

    // MARK: - Login

    static func login(_ chrome: ConsoleChrome, csrf: String, username: String, next: String = "/console/",
                      notice: ConsoleNotice?) -> HTML {
        let text = chrome.text
        let nextField: HTML = next == "/console/" ? .empty : "<input type=\"hidden\" name=\"next\" value=\"\(next)\">"
        return document(chrome, title: text.loginTitle, """
            \(self.notice(notice))<form method="post" action="/console/login" id="login" class="card">
            \(csrfField(csrf))\(nextField)
            <label for="username">\(text.username)</label>
            <input id="username" name="username" autocomplete="username" required maxlength="64" value="\(username)" autofocus>
            <label for="password">\(text.password)</label>
            <input id="password" name="password" type="password" autocomplete="current-password" required maxlength="1024">
            <button type="submit">\(text.loginButton)</button>
            </form>
            """)
    }

    // MARK: - The order

    struct Order: Sendable {
        var order: OrderRecord
        var events: [OrderEvent]
        var outbox: [OutboxEvent]
        var refunds: [RefundRecord]
        var refundsConfigured: Bool
        var notice: ConsoleNotice?
        /// The refund form's values, kept when it is shown again with an error.
        var refundAmount = "", refundReason = ""
        /// A fresh number per rendering: a form posted twice is one refund.
        var refundNumber: String
        /// App Store orders: the ledger's row of the transaction that paid it (what Apple charged,
        /// its refund and reversal), and Apple's consumption requests about it, newest first.
        var appleTransaction: AppleTransactionRecord?
        var consumption: [ConsumptionRequestRecord] = []
        /// The mark-handled form's reason, kept when it is shown again with an error.
        var handleReason = ""
        /// The user's entitlements as the page was made (nil without a user), and that instant.
        var entitlements: Entitlements?
        var now = Date()
        var subscription: Subscription?  // an App Store membership's payments (ConsolePages+Subscription.swift)

        /// What is left to refund: the amount less every refund that is not REFUNDCLOSE.
        var refundable: Int {
            order.amount - refunds.filter { $0.state != .refundClose }.reduce(0) { $0 + $1.amount }
        }

        /// What went back to the payer: the successful refunds (WeChat), or the whole purchase
        /// Apple refunded (an App Store order in REFUND), as the API's `refunded_amount` says.
        var refunded: Int {
            if order.channel == .apple { return order.state == .refund ? order.amount : 0 }
            return refunds.filter { $0.state == .success }.reduce(0) { $0 + $1.amount }
        }
    }

    static func order(_ chrome: ConsoleChrome, _ model: Order) -> HTML {
        let text = chrome.text
        let order = model.order
        let role = chrome.user?.role ?? .viewer
        let path = "/console/orders/" + HTML.segment(order.outTradeNo)
        let isApple = order.channel == .apple
        var sections: [HTML] = [notice(model.notice)]
        let warnings = self.warnings(model, text)
        if !warnings.isEmpty {
            sections.append("""
                <section class="warnings"><h2>\(text.warningsTitle)</h2><ul id="warnings">\(warnings.map { HTML("<li>\($0)</li>") })</ul></section>
                """)
        }
        if let form = handleAttentionForm(model, chrome, path: path) { sections.append(form) }
        sections.append("<section><h2>\(text.factsTitle)</h2><dl id=\"facts\">\(isApple ? appleFacts(model, text) : wechatFacts(model, text))</dl></section>")
        if let user = order.userID, let rights = model.entitlements { sections.append(entitlements(rights, user: user, at: model.now, text)) }
        if role.allows(.recheck) {
            sections.append("""
                <section><h2>\(isApple ? text.recheckAppleTitle : text.recheckTitle)</h2>\
                <p class="hint">\(isApple ? text.recheckAppleHelp : text.recheckHelp)</p>
                <form method="post" action="\(path)/recheck" id="recheck" class="inline">\(csrfField(chrome.csrf))\
                <button type="submit">\(text.recheckButton)</button></form></section>
                """)
        }
        let timeline: [HTML] = model.events.map { event in
            """
            <li data-kind="\(event.kind)"><time>\(ConsoleFormat.time(event.at))</time> \
            <span class="kind">\(text.eventName(event.kind)) <code>\(event.kind)</code></span> \
            <span class="detail">\(text.eventDetail(event.detail))</span></li>
            """
        }
        sections.append("<section><h2>\(text.timelineTitle)</h2><ol id=\"timeline\">\n\(timeline)\n</ol></section>")
        sections.append(deliveries(model, chrome, path: path))
        if isApple {
            sections += [subscription(model, chrome, path: path), consumption(model, text)]
            sections.append("<section><h2>\(text.refundsTitle)</h2><p class=\"hint\" id=\"refunds-apple\">\(text.appleRefundsExplained)</p></section>")
        } else {
            sections.append(refunds(model, chrome, path: path))
        }
        if role.allows(.audit) {
            sections.append("<p><a href=\"/console/audit\(HTML.query([("order", order.outTradeNo)]))\" id=\"order-audit\">\(text.auditForOrder)</a></p>")
        }
        return document(chrome, title: text.orderTitle(order.outTradeNo), HTML("\(sections.map { HTML("\($0)\n") })"))
    }

    static func fact(_ name: String, _ value: String?, _ text: ConsoleText, id: String? = nil, mono: Bool = false) -> HTML {
        let idAttribute: HTML = id.map { " id=\"\($0)\"" } ?? .empty
        let classAttribute: HTML = mono ? " class=\"mono\"" : .empty
        return "<dt>\(name)</dt><dd\(idAttribute)\(classAttribute)>\(value ?? text.none)</dd>"
    }

    /// A WeChat Pay order's facts: WeChat's ids and parameters.
    static func wechatFacts(_ model: Order, _ text: ConsoleText) -> [HTML] {
        let order = model.order
        return [
            fact(text.outTradeNo, order.outTradeNo, text, id: "fact-out-trade-no", mono: true),
            fact(text.channel, text.channelName(order.channel), text, id: "fact-channel"),
            fact(text.appLabel, text.appName(order), text, id: "fact-app"), fact(text.tradeTypeLabel, order.tradeType ?? "APP", text, id: "fact-trade-type"),
            "<dt>\(text.state)</dt><dd id=\"fact-state\">\(stateBadge(order.state, text, refunded: model.refunded, of: order.amount))</dd>",
            fact(text.amount, ConsoleFormat.yuan(order.amount), text, id: "fact-amount"),
            fact(text.description, order.description, text),
            fact(text.userID, order.userID, text, id: "fact-user-id"),
            fact(text.product, order.productID, text),
            fact(text.transactionID, order.transactionID, text, id: "fact-transaction-id", mono: true),
            fact(text.created, ConsoleFormat.time(order.createdAt), text),
            fact(text.paid, order.paidAt.map(ConsoleFormat.time), text, id: "fact-paid-at"),
            fact(text.expires, ConsoleFormat.time(order.expiresAt), text),
            fact(text.prepayID, order.prepayID, text, mono: true),
            fact(text.apiVersion, "API " + order.apiVersion, text, id: "fact-api-version"),
            fact(text.signType, order.signType, text),
            fact(text.attach, order.attach, text),
            fact(text.refunded, ConsoleFormat.yuan(model.refunded), text, id: "fact-refunded"),
        ]
    }

    /// Apple's consumption requests about an App Store order, and where each stands.
    private static func consumption(_ model: Order, _ text: ConsoleText) -> HTML {
        guard !model.consumption.isEmpty else {
            return "<section><h2>\(text.consumptionTitle)</h2><p id=\"consumption-none\">\(text.noConsumption)</p></section>"
        }
        let rows: [HTML] = model.consumption.map { request in
            """
            <tr data-state="\(request.state.rawValue)"><td class="mono">\(request.transactionID)</td>\
            <td>\(text.consumptionState(request.state))</td><td>\(request.reason ?? "")</td>\
            <td>\(ConsoleFormat.time(request.requestedAt))</td><td>\(ConsoleFormat.time(request.deadline))</td>\
            <td>\(request.answeredBy.map(text.consumptionAnsweredBy) ?? "")</td>\
            <td>\(request.sentAt.map(ConsoleFormat.time) ?? "")</td><td>\(request.attempts)</td><td>\(request.lastError ?? "")</td></tr>
            """
        }
        return """
            <section><h2>\(text.consumptionTitle)</h2><p class="hint">\(text.consumptionHelp)</p>
            <table id="consumption"><thead><tr><th>\(text.appleTransactionID)</th><th>\(text.status)</th><th>\(text.reason)</th>\
            <th>\(text.requested)</th><th>\(text.deadline)</th><th>\(text.answeredBy)</th><th>\(text.sentToApple)</th>\
            <th>\(text.attempts)</th><th>\(text.lastError)</th></tr></thead>
            <tbody>
            \(rows)
            </tbody></table></section>
            """
    }

    /// The order's flags and troubling timeline entries, in plain words.
    static func warnings(_ model: Order, _ text: ConsoleText) -> [String] {
        var warnings: [String] = []
        for flag in model.order.flags.sorted() where flag != .amountMismatch {   // said once, below, from the timeline
            switch flag {
            case .paidAfterClose: warnings.append(model.order.channel == .apple ? text.applePaidAfterClose : text.paidAfterClose)
            case .refundNeedsAttention: warnings.append(text.refundNeedsAttention)
            case .unknownProduct: warnings.append(text.unknownProduct)
            case .matchedWithoutOrder: warnings.append(text.matchedWithoutOrder)
            case .refundOutsideGateway: warnings.append(text.refundOutsideGateway)
            case .otherTransactionID: warnings.append(text.otherTransactionID)
            default: warnings.append(text.otherFlag(flag.rawValue))
            }
        }
        let kinds = Set(model.events.map(\.kind))
        if kinds.contains("amount_mismatch") { warnings.append(text.amountMismatch) }
        if kinds.contains("refund_amount_mismatch") || kinds.contains("refund_notify_conflict") {
            warnings.append(text.refundDisagreement)
        }
        return warnings
    }

    private static func deliveries(_ model: Order, _ chrome: ConsoleChrome, path: String) -> HTML {
        let text = chrome.text
        let mayRedeliver = chrome.user?.role.allows(.redeliver) ?? false
        guard !model.outbox.isEmpty else {
            return "<section><h2>\(text.deliveriesTitle)</h2><p id=\"deliveries-none\">\(text.noDeliveries)</p></section>"
        }
        let rows: [HTML] = model.outbox.map { event in
            let status = event.deliveredAt != nil ? "delivered" : event.deadAt != nil ? "dead" : "pending"
            let action: HTML = status == "dead" && mayRedeliver
                ? """
                  <form method="post" action="\(path)/outbox/\(HTML.segment(event.id))/redeliver" class="inline redeliver">\
                  \(csrfField(chrome.csrf))<button type="submit">\(text.redeliverButton)</button></form>
                  """
                : .empty
            return """
                <tr data-status="\(status)"><td class="mono">\(event.id)</td><td>\(event.type)</td>\
                <td>\(text.deliveryStatus(status))</td><td>\(event.attempts)</td><td>\(ConsoleFormat.time(event.createdAt))</td>\
                <td>\(event.isPending ? ConsoleFormat.time(event.nextAttemptAt) : "")</td>\
                <td>\(event.deliveredAt.map(ConsoleFormat.time) ?? "")</td><td>\(event.deadAt.map(ConsoleFormat.time) ?? "")</td>\
                <td>\(event.lastError ?? "")</td><td>\(action)</td></tr>
                """
        }
        return """
            <section><h2>\(text.deliveriesTitle)</h2>
            <table id="deliveries"><thead><tr><th>\(text.eventID)</th><th>\(text.type)</th><th>\(text.status)</th>\
            <th>\(text.attempts)</th><th>\(text.created)</th><th>\(text.nextAttempt)</th><th>\(text.delivered)</th>\
            <th>\(text.dead)</th><th>\(text.lastError)</th><th></th></tr></thead>
            <tbody>
            \(rows)
            </tbody></table></section>
            """
    }

    private static func refunds(_ model: Order, _ chrome: ConsoleChrome, path: String) -> HTML {
        let text = chrome.text
        var parts: [HTML] = []
        if model.refunds.isEmpty {
            parts.append("<p id=\"refunds-none\">\(text.noRefunds)</p>")
        } else {
            let rows: [HTML] = model.refunds.map { refund in
                """
                <tr data-state="\(refund.state.rawValue)"><td class="mono">\(refund.outRefundNo)</td>\
                <td class="amount">\(ConsoleFormat.yuan(refund.amount))</td><td>\(refund.reason)</td>\
                <td>\(text.refundStateLabel(refund.state))</td><td class="mono">\(refund.refundID ?? "")</td>\
                <td>\(ConsoleFormat.time(refund.createdAt))</td><td>\(refund.succeededAt.map(ConsoleFormat.time) ?? "")</td>\
                <td>\(refund.failureReason ?? "")</td></tr>
                """
            }
            parts.append("""
                <table id="refunds"><thead><tr><th>\(text.outRefundNo)</th><th>\(text.amount)</th><th>\(text.reason)</th>\
                <th>\(text.state)</th><th>\(text.refundID)</th><th>\(text.created)</th><th>\(text.succeeded)</th>\
                <th>\(text.failure)</th></tr></thead>
                <tbody>
                \(rows)
                </tbody></table>
                """)
        }
        let paid = model.order.state == .success || model.order.state == .refund
        if chrome.user?.role.allows(.refund) ?? false {
            if !model.refundsConfigured {
                parts.append("<p class=\"hint\" id=\"refunds-off\">\(text.refundsOff)</p>")
            } else if !paid {
                parts.append("<p class=\"hint\" id=\"refunds-unpaid\">\(text.notRefundable)</p>")
            } else {
                let refundable = max(0, model.refundable)
                parts.append("""
                    <form method="post" action="\(path)/refunds" id="refund" class="card">
                    <h3>\(text.refundFormTitle)</h3>
                    \(csrfField(chrome.csrf))<input type="hidden" name="out_refund_no" value="\(model.refundNumber)">
                    <p class="hint">\(text.refundable): <span id="refundable">\(ConsoleFormat.yuan(refundable))</span></p>
                    <label for="refund-amount">\(text.amountYuan)</label>
                    <input id="refund-amount" name="amount" inputmode="decimal" required maxlength="16" value="\(model.refundAmount)" placeholder="\(ConsoleFormat.yuan(refundable).dropFirst().description)">
                    <label for="refund-reason">\(text.reasonVisible)</label>
                    <input id="refund-reason" name="reason" required maxlength="80" value="\(model.refundReason)">
                    <button type="submit">\(text.refundButton)</button>
                    </form>
                    """)
            }
        }
        return "<section><h2>\(text.refundsTitle)</h2>\n\(parts)</section>"
    }

    static func stateBadge(_ state: OrderState, _ text: ConsoleText) -> HTML {
        "<span class=\"state state-\(state.rawValue.lowercased())\">\(text.stateLabel(state))</span>"
    }

    /// The state on a WeChat order's page, where its refunds are known: a REFUND order partly
    /// refunded says so, with how much of how much.
    static func stateBadge(_ state: OrderState, _ text: ConsoleText, refunded: Int, of amount: Int) -> HTML {
        guard state == .refund, refunded < amount else { return stateBadge(state, text) }
        return "<span class=\"state state-refund partial\">\(text.partlyRefunded(ConsoleFormat.yuan(refunded), of: ConsoleFormat.yuan(amount)))</span>"
    }
}

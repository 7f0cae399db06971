// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import StorageCore

extension ConsolePages {
    /// An App Store membership bought as an auto-renewable subscription: every payment Apple made
    /// for it (the first purchase and each renewal, each an order of its own), and, for those who
    /// may, Apple's Extend a Subscription Renewal Date.
    struct Subscription: Sendable {
        var originalTransactionID: String
        /// Oldest payment first.
        var payments: [OrderRecord]
        /// Its state as Apple last told of it; nil before Apple's first word.
        var state: SubscriptionRecord?
        /// Apple's requestIdentifier for the form: the same form posted twice extends once.
        var requestID = UUID()
    }

    static func subscription(_ model: Order, _ chrome: ConsoleChrome, path: String) -> HTML {
        guard let subscription = model.subscription else { return .empty }
        let text = chrome.text
        let rows: [HTML] = subscription.payments.map { payment in
            let current: HTML = payment.outTradeNo == model.order.outTradeNo ? " class=\"current\"" : .empty
            return """
                <tr\(current)><td><a href="/console/orders/\(HTML.segment(payment.outTradeNo))" class="mono">\(payment.outTradeNo)</a></td>\
                <td class="mono">\(payment.appleTransactionID ?? "")</td><td class="mono">\(payment.userID ?? "")</td>\
                <td>\(stateBadge(payment.state, text))</td>\
                <td class="amount">\(ConsoleFormat.money(payment.amount, currency: payment.currency))</td>\
                <td>\(payment.paidAt.map(ConsoleFormat.time) ?? "")</td></tr>
                """
        }
        var form: HTML = .empty
        if chrome.user?.role.allows(.extendSubscription) == true {
            let reasons: [HTML] = [(3, text.extendReasonOutage), (1, text.extendReasonSatisfaction), (2, text.extendReasonOther),
                                   (0, text.extendReasonUndeclared)].map { code, label in
                HTML("<option value=\"\(String(code))\">\(label)</option>")
            }
            form = """
                <form method="post" action="\(path)/extend" id="extend" class="card">\(csrfField(chrome.csrf))\
                <input type="hidden" name="request_id" value="\(subscription.requestID.uuidString.lowercased())">
                <p class="hint">\(text.extendHelp)</p>
                <label>\(text.extendDays) <input type="number" name="days" id="extend-days" min="1" max="90" value="7" required></label>
                <label>\(text.extendReason) <select name="reason" id="extend-reason">\(reasons)</select></label>
                <button type="submit">\(text.extendButton)</button></form>
                """
        }
        let state: HTML
        if let record = subscription.state {
            state = """
                <dl id="subscription-state" class="card"><dt>\(text.subscriptionStatusLabel)</dt>\
                <dd data-status="\(record.status.rawValue)">\(text.subscriptionStatus(record.status))</dd>\
                <dt>\(text.subscriptionAccessEnds)</dt><dd>\(ConsoleFormat.time(record.accessEndsAt))</dd>\
                <dt>\(text.subscriptionAutoRenew)</dt><dd>\(text.yesNo(record.autoRenew))</dd>\
                <dt>\(text.subscriptionLatest)</dt><dd class="mono">\(record.latestTransactionID) (\(record.productID))</dd>\
                <dt>\(text.subscriptionHeard)</dt><dd>\(ConsoleFormat.time(record.checkedAt)) · \(record.source)</dd></dl>
                """
        } else {
            state = "<p id=\"subscription-state\" class=\"hint\">\(text.subscriptionNoState)</p>"
        }
        return """
            <section id="subscription"><h2>\(text.subscriptionTitle(subscription.originalTransactionID))</h2>\
            <h3>\(text.subscriptionStateTitle)</h3>\(state)
            <p class="hint">\(text.subscriptionHelp)</p>
            <table id="subscription-payments"><thead><tr><th>\(text.outTradeNo)</th><th>\(text.appleTransactionID)</th>\
            <th>\(text.userID)</th><th>\(text.state)</th><th>\(text.amount)</th><th>\(text.paid)</th></tr></thead>
            <tbody>\(rows)</tbody></table>
            \(form)</section>
            """
    }
}

// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import Gateway
import StorageCore

/// Working the attention list off: an App Store purchase from the ledger, the page the list's
/// unclaimed purchases open (its facts, what the customer and support can do, the assign form),
/// and an order page's mark-handled form. Their handlers: ConsoleHandlers+Attention.swift.
extension ConsolePages {
    /// The order page's form marking its attention flags handled, while it carries one and the
    /// role may.
    static func handleAttentionForm(_ model: Order, _ chrome: ConsoleChrome, path: String) -> HTML? {
        let text = chrome.text
        guard !model.order.flags.isDisjoint(with: OrderFlag.needingAttention), chrome.user?.role.allows(.handleAttention) ?? false
        else { return nil }
        return """
            <form method="post" action="\(path)/attention" id="handle-attention" class="card">
            <h3>\(text.handleTitle)</h3><p class="hint">\(text.handleHelp)</p>
            \(csrfField(chrome.csrf))<label for="handle-reason">\(text.assignReasonLabel)</label>
            <input id="handle-reason" name="reason" value="\(model.handleReason)" required maxlength="200">
            <button type="submit">\(text.handleButton)</button></form>
            """
    }

    // MARK: - An App Store purchase (the attention list's unclaimed ones)

    struct Purchase: Sendable {
        var row: AppleTransactionRecord
        var notice: ConsoleNotice?
        /// The assign form's values, kept when it is shown again with an error.
        var outTradeNo = ""
        var reason = ""
        var takesOver = false
    }

    static func purchase(_ chrome: ConsoleChrome, _ model: Purchase) -> HTML {
        let text = chrome.text
        let row = model.row
        let facts = row.facts
        var charged: String?
        if let price = facts.price, let currency = facts.currency,
           let minor = AppStorePrice.minorUnits(milli: price, currency: currency), let amount = Int(exactly: minor) {
            charged = ConsoleFormat.money(amount, currency: currency)
        }
        let credited: HTML = row.outTradeNo.map { number in
            HTML("<a href=\"/console/orders/\(HTML.segment(number))\" id=\"purchase-order\">\(number)</a>")
        } ?? HTML("\(text.unclaimedState)")
        let refund = facts.revocationDate.map { text.appleRefunded(at: ConsoleFormat.time($0)) } ?? text.appleNotRefunded
        let rows: [HTML] = [
            fact(text.appleTransactionID, facts.transactionID, text, id: "purchase-transaction-id", mono: true),
            fact(text.originalTransactionID, facts.originalTransactionID, text, mono: true),
            fact(text.appleProductID, facts.productID, text, id: "purchase-product-id", mono: true),
            fact(text.environment, text.environmentName(facts.environment), text),
            fact(text.purchasedAt, ConsoleFormat.time(facts.purchaseDate), text),
            fact(text.appleCharged, charged, text),
            fact(text.quantity, facts.quantity.map(String.init) ?? text.quantityUnknown, text, id: "purchase-quantity"),
            fact(text.storefront, facts.storefront, text),
            fact(text.appAccountToken, facts.appAccountToken, text, mono: true),
            fact(text.firstSeenVia, row.source, text),
            fact(text.firstSeenAt, ConsoleFormat.time(row.firstSeenAt), text),
            fact(text.appleRefundState, refund, text, id: "purchase-refund"),
            "<dt>\(text.creditedOrder)</dt><dd id=\"purchase-credited\">\(credited)</dd>",
        ]
        var sections: [HTML] = [notice(model.notice)]
        sections.append("<section><h2>\(text.factsTitle)</h2><dl id=\"purchase-facts\">\(rows)</dl></section>")
        if row.outTradeNo != nil || row.isRevoked {
            sections.append("<p class=\"hint\" id=\"not-assignable\">\(text.notAssignable)</p>")
        } else {
            sections.append("<p class=\"hint\" id=\"unclaimed-help\">\(text.unclaimedHelp)</p>")
            if chrome.user?.role.allows(.assign) ?? false {
                sections.append("""
                    <form method="post" action="/console/apple-transactions/\(HTML.segment(facts.transactionID))/assign" id="assign" class="card">
                    <h3>\(text.assignTitle)</h3><p class="hint">\(text.assignHelp)</p>
                    \(csrfField(chrome.csrf))<label for="assign-order">\(text.assignOrderLabel)</label>
                    <input id="assign-order" name="out_trade_no" value="\(model.outTradeNo)" required maxlength="64">
                    <label for="assign-reason">\(text.assignReasonLabel)</label>
                    <input id="assign-reason" name="reason" value="\(model.reason)" required maxlength="200">
                    <p><input type="checkbox" id="assign-takes-over" name="takes_over" value="1"\(model.takesOver ? " checked" : "")>
                    <label for="assign-takes-over">\(text.assignTakesOverLabel)</label></p>
                    <button type="submit">\(text.assignButton)</button></form>
                    """)
            } else {
                sections.append("<p class=\"hint\" id=\"assign-needs-role\">\(text.assignNeedsRole)</p>")
            }
        }
        return document(chrome, title: text.purchaseTitle(facts.transactionID), HTML("\(sections.map { HTML("\($0)\n") })"))
    }
}

// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import StorageCore

/// The order page's facts for an App Store order (a WeChat order's are `wechatFacts`).
extension ConsolePages {
    /// An App Store order's facts: Apple's ids, environment and storefront, what Apple charged and
    /// how many it sold, and where Apple's refund stands.
    static func appleFacts(_ model: Order, _ text: ConsoleText) -> [HTML] {
        let order = model.order
        let ledger = model.appleTransaction
        let charged = ledger.flatMap { row -> String? in
            guard let price = row.facts.price, let currency = row.facts.currency,
                  let minor = AppStorePrice.minorUnits(milli: price, currency: currency), let amount = Int(exactly: minor)
            else { return nil }
            return ConsoleFormat.money(amount, currency: currency)
        }
        let refundState: String
        if let revoked = ledger?.facts.revocationDate {
            refundState = text.appleRefunded(at: ConsoleFormat.time(revoked))
        } else if let reversed = ledger?.refundReversedAt {
            refundState = text.appleRefundReversed(at: ConsoleFormat.time(reversed))
        } else {
            refundState = order.appleTransactionID == nil ? text.none : text.appleNotRefunded
        }
        return [
            fact(text.outTradeNo, order.outTradeNo, text, id: "fact-out-trade-no", mono: true),
            fact(text.channel, text.channelName(order.channel), text, id: "fact-channel"),
            "<dt>\(text.state)</dt><dd id=\"fact-state\">\(stateBadge(order.state, text))</dd>",
            fact(text.amount, ConsoleFormat.money(order.amount, currency: order.currency), text, id: "fact-amount"),
            fact(text.description, order.description, text),
            fact(text.userID, order.userID, text, id: "fact-user-id"),
            fact(text.product, order.productID, text),
            fact(text.appleProductID, order.appleProductID, text, id: "fact-apple-product-id", mono: true),
            fact(text.appleTransactionID, order.appleTransactionID, text, id: "fact-apple-transaction-id", mono: true),
            fact(text.originalTransactionID, order.originalTransactionID, text, id: "fact-original-transaction-id", mono: true),
            fact(text.appAccountToken, order.appAccountToken, text, id: "fact-app-account-token", mono: true),
            fact(text.environment, order.environment.map(text.environmentName), text, id: "fact-environment"),
            fact(text.storefront, ledger?.facts.storefront, text, id: "fact-storefront"),
            fact(text.appleCharged, charged, text, id: "fact-apple-charged"),
            fact(text.quantity, order.appleQuantity.map(String.init) ?? order.appleTransactionID.map { _ in text.quantityUnknown },
                 text, id: "fact-quantity"),
            fact(text.created, ConsoleFormat.time(order.createdAt), text),
            fact(text.paid, order.paidAt.map(ConsoleFormat.time), text, id: "fact-paid-at"),
            fact(text.expires, ConsoleFormat.time(order.expiresAt), text),
            fact(text.attach, order.attach, text),
            fact(text.appleRefundState, refundState, text, id: "fact-apple-refund"),
            fact(text.refunded, ConsoleFormat.money(model.refunded, currency: order.currency), text, id: "fact-refunded"),
        ]
    }
}

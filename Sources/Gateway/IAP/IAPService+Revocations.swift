// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import JSON
import Observability
import StorageCore
import WeChatPay

/// Apple's refunds, revocations and refund reversals of a purchase, recorded in the ledger and
/// moved onto the order it credited through the one door (`Settlement.refunded`,
/// `Settlement.refundReversed`).
extension IAPService {
    /// Records Apple's refund or revocation and moves the order it credited, if still SUCCESS, to
    /// REFUND (with `order.refunded`). Returns the order afterwards, if the transaction credited one.
    @discardableResult
    func recordRevocation(_ purchase: VerifiedPurchase, source: String, reason: String? = nil) async throws(APIError)
        -> OrderRecord?
    {
        var facts = purchase.facts
        let at = now()
        if facts.revocationDate == nil { facts.revocationDate = at }
        let row = try await context.storage { () throws(StorageError) in
            try await self.store.recordAppleRevocation(facts, source: source, at: at)
        }
        guard let credited = row.outTradeNo,
              let order = try await context.storage({ () throws(StorageError) in try await self.context.store.order(credited) })
        else { return nil }
        guard row.isRevoked else {
            // Apple reversed this refund after it was made (REFUND_REVERSED came first, or the
            // refund was read late from the notification history): not applied again.
            _ = try? await context.store.appendEvent(
                order.outTradeNo, kind: "appstore_refund",
                detail: "a refund of transaction \(purchase.transactionID) dated \(Timestamp.rfc3339(facts.revocationDate ?? at)) "
                    + "arrived via \(source), but Apple reversed that refund at "
                    + "\(row.refundReversedAt.map(Timestamp.rfc3339) ?? "?"): not applied", at: now())
            return order
        }
        guard order.state == .success else { return order }
        let detail = "Apple refunded or revoked transaction \(purchase.transactionID)"
            + (reason.map { " (\($0))" } ?? "") + "; via \(source)"
        let result = try await context.storage { () throws(StorageError) in
            try await self.context.settlement.refunded(order, source: detail)
        }
        if result.didChange {
            instruments.refunds.labelled(purchase.environment).increment()
            logger.info("App Store refund applied", ["out_trade_no": order.outTradeNo, "transaction_id": purchase.transactionID])
        }
        return result.record ?? order
    }

    /// Records Apple's reversal of a refund (REFUND_REVERSED) and moves the order the transaction
    /// credited, if REFUND because of that refund, back to SUCCESS through the door (with
    /// `order.refund_reversed`). Returns the order afterwards, if the transaction credited one.
    @discardableResult
    func reverseRefund(_ purchase: VerifiedPurchase, reversedAt: Date, source: String) async throws(APIError) -> OrderRecord? {
        var facts = purchase.facts
        facts.revocationDate = nil
        let at = now()
        let row = try await context.storage { () throws(StorageError) in
            try await self.store.recordAppleRefundReversal(facts, reversedAt: reversedAt, source: source, at: at)
        }
        guard let credited = row.outTradeNo,
              let order = try await context.storage({ () throws(StorageError) in try await self.context.store.order(credited) })
        else { return nil }
        guard order.state == .refund, !row.isRevoked else {
            _ = try? await context.store.appendEvent(
                order.outTradeNo, kind: "appstore_refund",
                detail: "Apple reversed a refund of transaction \(purchase.transactionID) (via \(source)); the order is "
                    + "\(order.state.rawValue)" + (row.isRevoked ? " and a newer refund stands: nothing changed" : ": nothing to change"),
                at: now())
            return order
        }
        let result = try await context.storage { () throws(StorageError) in
            try await self.context.settlement.refundReversed(
                order, source: "Apple reversed its refund of transaction \(purchase.transactionID) (REFUND_REVERSED); via \(source)")
        }
        if result.didChange {
            instruments.refundsReversed.labelled(purchase.environment).increment()
            logger.info("App Store refund reversed", ["out_trade_no": order.outTradeNo, "transaction_id": purchase.transactionID])
        }
        return result.record ?? order
    }
}

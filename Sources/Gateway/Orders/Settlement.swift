// SPDX-License-Identifier: Apache-2.0
import Foundation
import Storage
import WeChatPay

/// The one door to SUCCESS. Notify, query, close and (later) the reconciler and the bill all settle
/// through here: one conditional transition in the store, the `order.paid` outbox event in the
/// same transaction, and only the caller whose transition changed the state announces it.
struct Settlement: Sendable {
    let store: any OrderStore
    let signals: OrderSignals
    let metrics: MetricsRegistry
    let logger: Logger
    let now: @Sendable () -> Date

    /// Settles the order as paid with what WeChat said (a verified notify or orderquery answer).
    /// The amount must equal the order's; an order closed locally is still settled, and flagged.
    /// `receipt` (a notify's bookkeeping) is written in the transaction that decides the outcome.
    func settlePaid(_ order: OrderRecord, transactionID: String, paidAt: Date?, amount: Int,
                    source: String, receipt: TransitionReceipt? = nil) async throws(StorageError) -> TransitionResult {
        guard amount == order.amount else {
            try await recordAmountMismatch(order, reported: amount, source: source)
            if let receipt { try await write(receipt, unchanged: order) }
            return .unchanged(order)
        }
        let at = now()
        let outbox = paidEvent(order, transactionID: transactionID, paidAt: paidAt ?? at, at: at)
        // A closed order is left to the second transition below, which then writes the receipt.
        var deferring = receipt
        deferring?.deferredWhenUnchangedIn.insert(.closed)
        var result = try await store.transition(
            order.outTradeNo, to: .success, from: OrderState.open.union([.payError]), transactionID: transactionID,
            paidAt: paidAt ?? at, expectedAmount: amount, detail: source, outbox: outbox, at: at, receipt: deferring,
            lastRead: order)
        if case .unchanged(let current) = result, current.state == .closed {
            // Paid after we closed it: the money arrived, so it is SUCCESS, flagged for a person,
            // and the business backend hears it too (deliver, or refund: its decision).
            let flagged = paidEvent(order, transactionID: transactionID, paidAt: paidAt ?? at, at: at, paidAfterClose: true)
            result = try await store.transition(
                order.outTradeNo, to: .success, from: [.closed], transactionID: transactionID, paidAt: paidAt ?? at,
                expectedAmount: amount, detail: "\(source) (paid after close)", outbox: flagged,
                addingFlags: [.paidAfterClose], at: at, receipt: receipt)
        }
        announce(result, source: source)
        return result
    }

    /// WeChat (a verified answer or notify) reported another amount than the order's: a leaked key
    /// or a bug, never settled. Counted, logged, and on the order's timeline for a person.
    /// Without `onTimeline`, only counted and logged (the same line is on the timeline already).
    func recordAmountMismatch(_ order: OrderRecord, reported amount: Int, source: String,
                              onTimeline: Bool = true) async throws(StorageError) {
        metrics.increment("wxpay_amount_mismatches_total", ["source": Self.label(source)])
        logger.warning("WeChat reported another amount than the order's; not settled",
                       ["out_trade_no": order.outTradeNo, "source": source])
        guard onTimeline else { return }
        _ = try await store.appendEvent(order.outTradeNo, kind: "amount_mismatch",
                                        detail: Self.amountMismatchDetail(order, reported: amount, source: source), at: now())
    }

    /// The timeline line of a mismatch, e.g. `notify reported 1 fen, order is 990 fen`.
    static func amountMismatchDetail(_ order: OrderRecord, reported amount: Int, source: String) -> String {
        "\(source) reported \(amount) fen, order is \(order.amount) fen"
    }

    /// A receipt for a settlement that never reached the door (the amount differed).
    private func write(_ receipt: TransitionReceipt, unchanged order: OrderRecord) async throws(StorageError) {
        let at = now()
        if let timestamp = receipt.touching { _ = try await store.touch(order.outTradeNo, timestamp, at: at) }
        _ = try await store.appendEvent(order.outTradeNo, kind: receipt.kind, detail: receipt.unchangedDetail, at: at)
    }

    /// Applies a verified orderquery answer; returns the order afterwards.
    func apply(_ response: OrderQueryResponse, to order: OrderRecord, source: String) async -> OrderRecord? {
        guard response.outTradeNo == order.outTradeNo else {
            logger.error("orderquery answered about another order", ["out_trade_no": order.outTradeNo])
            return order
        }
        do {
            switch response.tradeState {
            case .success, .refund:
                guard let transactionID = response.transactionID, let totalFee = response.totalFee else { return order }
                var result = try await settlePaid(order, transactionID: transactionID, paidAt: response.timeEnd,
                                                  amount: totalFee, source: source)
                if response.tradeState == .refund, let paid = result.record, paid.state == .success {
                    result = try await refunded(paid, source: source)
                }
                return result.record
            case .closed:
                return try await transition(order, to: .closed, source: source)
            case .payError:
                return try await transition(order, to: .payError, source: source)
            case .revoked:
                return try await transition(order, to: .revoked, source: source)
            default:
                return order
            }
        } catch {
            logger.error("storage failure while settling", ["out_trade_no": order.outTradeNo, "error": error.shortDescription])
            return nil
        }
    }

    /// Closes an unpaid order locally (WeChat closed it, or said it never had it).
    func close(_ order: OrderRecord, detail: String) async throws(StorageError) -> OrderRecord {
        try await transition(order, to: .closed, source: detail)
    }

    private func transition(_ order: OrderRecord, to state: OrderState, source: String) async throws(StorageError) -> OrderRecord {
        let result = try await store.transition(order.outTradeNo, to: state, from: OrderState.open, detail: source, at: now())
        announce(result, source: source)
        return result.record ?? order
    }

    private func announce(_ result: TransitionResult, source: String) {
        guard case .changed(let record) = result else { return }
        metrics.increment("wxpay_settlements_total", ["source": Self.label(source), "state": record.state.rawValue])
        logger.info("order state changed", ["out_trade_no": record.outTradeNo, "state": record.state.rawValue,
                                            "source": source])
        signals.wake(record.outTradeNo)
    }

    /// Metric labels stay a small fixed set whatever the detail text says.
    /// The bounded `source` labels of the settlement metrics.
    static let sourceLabels = ["notify", "orderquery", "closeorder", "reconcile", "bill", "appstore", "other"]

    private static func label(_ source: String) -> String {
        for known in sourceLabels.dropLast() where source.hasPrefix(known) {
            return known
        }
        return source.hasPrefix("wait") || source.hasPrefix("support") ? "orderquery" : "other"
    }

    /// The `order.paid` event the fulfilment webhook delivers: `{"created_at","data","id","type"}`,
    /// `data` being the order as `GET /v1/orders/{id}` will show it once this transition commits,
    /// plus what only the business needs (`PaidEventEncoding`).
    private func paidEvent(_ order: OrderRecord, transactionID: String, paidAt: Date, at: Date,
                           paidAfterClose: Bool = false) -> OutboxEvent {
        var paid = order
        paid.state = .success
        paid.transactionID = transactionID
        // As the store keeps it (the nearest millisecond), so the webhook and GET show the same instant.
        paid.paidAt = Date(timeIntervalSince1970: (paidAt.timeIntervalSince1970 * 1000).rounded() / 1000)
        if paidAfterClose { paid.flags.insert(.paidAfterClose) }
        return Self.event("order.paid", for: paid, at: at)
    }

    /// An order event (`order.paid`, `order.refunded`) whose `data` is `order` as GET shows it, plus
    /// `attach`, `user_id`, `product_id` and, when flagged so, `paid_after_close`. An App Store
    /// order's flags come too (`matched_without_order`), since its view shows them.
    static func event(_ type: String, for order: OrderRecord, at: Date) -> OutboxEvent {
        let id = PaidEventEncoding.newID(at: at)
        var data = OrderView(order)
        data.attach = order.attach
        data.userID = order.userID
        data.productID = order.productID
        if order.flags.contains(.paidAfterClose) { data.paidAfterClose = true }
        if order.channel == .apple {
            if !order.flags.isEmpty { data.flags = order.flags.map(\.rawValue).sorted() }
            // Apple refunds the whole purchase.
            if order.state == .refund { data.refundedAmount = order.amount }
        }
        let payload = PaidEventEncoding.payload(id: id, createdAt: Timestamp.rfc3339(at), data: data.json, type: type)
        return OutboxEvent(id: id, outTradeNo: order.outTradeNo, type: type, payload: payload, createdAt: at, nextAttemptAt: at)
    }

    // MARK: - App Store

    /// Credits a verified App Store transaction to its order (`IAPStore.creditAppleTransaction`:
    /// the matching and the door's conditional transition in one transaction), with the
    /// `order.paid` event made from the order as credited. Only the call that credited announces it.
    func creditApple(_ credit: AppleCredit, in store: any IAPStore) async throws(StorageError) -> AppleCreditResult {
        var credit = credit
        let at = credit.at
        credit.outbox = { paid in Self.event("order.paid", for: paid, at: at) }
        let result = try await store.creditAppleTransaction(credit)
        if case .credited(let order, _) = result { announce(.changed(order), source: "appstore") }
        return result
    }

    /// Moves a paid order to REFUND through the door, with an `order.refunded` event whose `data` is
    /// the order as GET shows it afterwards: Apple refunded or revoked the purchase, or WeChat's
    /// orderquery says a refund made outside the gateway went through. (Refunds the gateway makes
    /// itself move the order in `RefundStore.transitionRefund`, with their `refund.succeeded`.)
    func refunded(_ order: OrderRecord, source: String) async throws(StorageError) -> TransitionResult {
        let at = now()
        var refunded = order
        refunded.state = .refund
        let result = try await store.transition(order.outTradeNo, to: .refund, from: [.success], detail: source,
                                                outbox: Self.event("order.refunded", for: refunded, at: at), at: at)
        announce(result, source: source)
        return result
    }
}

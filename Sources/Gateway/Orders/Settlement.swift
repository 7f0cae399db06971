// SPDX-License-Identifier: Apache-2.0
import Foundation
import Observability
import StorageCore
import WeChatPay

/// The one door to SUCCESS. Notify, query, close and (later) the reconciler and the bill all settle
/// through here: one conditional transition in the store, the `order.paid` outbox event in the
/// same transaction, and only the caller whose transition changed the state announces it.
struct Settlement: Sendable {
    let store: any OrderStore
    /// What the order's product grants decides whether a change writes `entitlement.changed`.
    let catalog: CatalogSource
    let signals: OrderSignals
    let instruments: OrderInstruments
    let logger: Logger
    let now: @Sendable () -> Date
    /// The mismatch warning is logged at most once a second per source: a signed notify for another
    /// amount can be replayed as often as its sender likes (the metric counts every copy).
    let amountMismatchLog = LogThrottle()
    /// Likewise the warning for a payment reported under another transaction id.
    let otherTransactionLog = LogThrottle()

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
        let (paidAt, replaced) = Self.paidAt(reported: paidAt, order: order, at: at)
        let detail = replaced.map { "\(source) (\($0))" } ?? source
        let outbox = paidEvent(order, transactionID: transactionID, paidAt: paidAt, at: at)
        // A closed order is left to the second transition below, which then writes the receipt.
        var deferring = receipt
        deferring?.deferredWhenUnchangedIn.insert(.closed)
        var result = try await store.transition(
            order.outTradeNo, to: .success, from: OrderState.open.union([.payError]), transactionID: transactionID,
            paidAt: paidAt, expectedAmount: amount, detail: detail, outbox: outbox,
            followUp: entitlementMarker(order, at: at), at: at, receipt: deferring, lastRead: order)
        if case .unchanged(let current) = result, current.state == .closed {
            // Paid after we closed it: the money arrived, so it is SUCCESS, flagged for a person,
            // and the business backend hears it too (deliver, or refund: its decision).
            let flagged = paidEvent(order, transactionID: transactionID, paidAt: paidAt, at: at, paidAfterClose: true)
            result = try await store.transition(
                order.outTradeNo, to: .success, from: [.closed], transactionID: transactionID, paidAt: paidAt,
                expectedAmount: amount, detail: "\(detail) (paid after close)", outbox: flagged,
                followUp: entitlementMarker(order, at: at), addingFlags: [.paidAfterClose], at: at, receipt: receipt)
        }
        announce(result, source: source)
        if case .unchanged(let current) = result, current.state == .success || current.state == .refund,
           let recorded = current.transactionID, recorded != transactionID
        {
            _ = try await recordOtherTransaction(current, transactionID: transactionID, source: source)
        }
        return result
    }

    /// How far WeChat's payment time may lie outside the order's life (created, until now) before it
    /// is not believed: clocks differ by seconds, not by this.
    static let paidAtSkew: TimeInterval = 600

    /// The order's `paid_at`: WeChat's payment time (`time_end`, `success_time`, orderquery's), or
    /// `at` when WeChat gave none, or gave one before the order existed or after now (beyond
    /// `paidAtSkew`), which only a leaked key or a broken clock writes. A membership's period starts
    /// at `paid_at`, and the bill reconciliation looks for an order in the bill of its `paid_at`'s
    /// Beijing day: `time_end` 2035 would run a month's pass to 2036 and hide the order from every
    /// bill checked. Then the second value says what was replaced, for the timeline.
    static func paidAt(reported: Date?, order: OrderRecord, at: Date) -> (Date, String?) {
        guard let reported else { return (at, nil) }
        guard !isBelievable(reported, since: order.createdAt, now: at) else { return (reported, nil) }
        return (at, "reported payment time \(BeijingTime.formatWithSeparators(reported)) Beijing is outside the order's life; "
                    + "paid_at is when the gateway learned of the payment")
    }

    /// Whether a time WeChat reports for something recorded at `since` lies within its life (from
    /// then until `now`) give or take `paidAtSkew`: clocks differ by seconds, a leaked key or a
    /// broken clock by years. A payment's time and a refund's success time are judged alike.
    static func isBelievable(_ reported: Date, since: Date, now: Date) -> Bool {
        reported >= since.addingTimeInterval(-paidAtSkew) && reported <= now.addingTimeInterval(paidAtSkew)
    }

    /// WeChat (a verified notify or orderquery answer) reported a payment of the paid `order` under
    /// another transaction id than the one it was settled with: WeChat does not take two payments
    /// for one out_trade_no, so it is a second payment made around the gateway or a leaked key,
    /// and either needs a person. Nothing is settled again; the order is flagged
    /// `other_transaction_id`, the other id goes on its timeline (`transaction_mismatch`, at most
    /// once a minute per id), every report is counted and the warning logged at most once a second.
    func recordOtherTransaction(_ order: OrderRecord, transactionID: String, source: String) async throws(StorageError)
        -> OrderRecord
    {
        let label = Self.label(source)
        instruments.transactionMismatches.labelled(label).increment()
        if let suppressed = otherTransactionLog.admit(label) {
            logger.warning("WeChat reported a paid order paid again under another transaction id; flagged for support",
                           ["out_trade_no": order.outTradeNo, "source": source, "suppressed": String(suppressed)])
        }
        var current = order
        if !order.flags.contains(.otherTransactionID) {
            current = try await store.addFlags(order.outTradeNo, [.otherTransactionID], at: now()) ?? order
        }
        let detail = "\(source) reported transaction_id \(transactionID); the order was paid with \(order.transactionID ?? "none")"
        try await appendQuietLine(order.outTradeNo, kind: "transaction_mismatch", detail: detail)
        return current
    }

    /// WeChat (a verified answer or notify) reported another amount than the order's: a leaked key
    /// or a bug, never settled. Counted, logged, on the order's timeline and flagged
    /// `amount_mismatch` (once) for support's attention list, where a person sees it.
    /// With `quietly`, the line is written at most once a quiet period (`appendQuietLine`): a
    /// notify anyone holding it can replay.
    func recordAmountMismatch(_ order: OrderRecord, reported amount: Int, source: String,
                              quietly: Bool = false) async throws(StorageError) {
        instruments.amountMismatches.labelled(Self.label(source)).increment()
        if let suppressed = amountMismatchLog.admit(Self.label(source)) {
            logger.warning("WeChat reported another amount than the order's; not settled",
                           ["out_trade_no": order.outTradeNo, "source": source, "suppressed": String(suppressed)])
        }
        if !order.flags.contains(.amountMismatch) {
            _ = try await store.addFlags(order.outTradeNo, [.amountMismatch], at: now())
        }
        let detail = Self.amountMismatchDetail(order, reported: amount, source: source)
        if quietly {
            try await appendQuietLine(order.outTradeNo, kind: "amount_mismatch", detail: detail)
        } else {
            _ = try await store.appendEvent(order.outTradeNo, kind: "amount_mismatch", detail: detail, at: now())
        }
    }

    /// The timeline line of a mismatch, e.g. `notify reported 1 fen, order is 990 fen`.
    static func amountMismatchDetail(_ order: OrderRecord, reported amount: Int, source: String) -> String {
        "\(source) reported \(amount) fen, order is \(order.amount) fen"
    }

    /// Appends this very line to the order's timeline unless it was written less than
    /// `PaymentNotifies.copyQuietPeriod` ago, the check and the write one step in the store. A
    /// verified message that changes nothing (a FAIL or wrong-amount notify, a refund notify
    /// contradicting its refund's final state, another transaction id), replayed, then adds
    /// nothing, however the copies arrive (its reply and its count stay the same). Answers whether
    /// the line was written; a failed write writes nothing.
    @discardableResult
    func appendQuietLine(_ outTradeNo: String, kind: String, detail: String) async throws(StorageError) -> Bool {
        let at = now()
        return try await store.appendEvent(outTradeNo, NewOrderEvent(kind: kind, detail: detail, at: at),
                                           quietSince: at.addingTimeInterval(-PaymentNotifies.copyQuietPeriod),
                                           matching: .kindAndDetail) != nil
    }

    /// A receipt for a settlement that never reached the door (the amount differed).
    private func write(_ receipt: TransitionReceipt, unchanged order: OrderRecord) async throws(StorageError) {
        let at = now()
        if let timestamp = receipt.touching { _ = try await store.touch(order.outTradeNo, timestamp, at: at) }
        _ = try await store.appendEvent(order.outTradeNo, kind: receipt.kind, detail: receipt.unchangedDetail, at: at)
    }

    /// Applies what WeChat verifiably holds of the order (its query's answer); returns the order afterwards.
    func apply(_ response: UpstreamTrade, to order: OrderRecord, source: String) async -> OrderRecord? {
        guard response.outTradeNo == order.outTradeNo else {
            logger.error("orderquery answered about another order", ["out_trade_no": order.outTradeNo])
            return order
        }
        do {
            switch response.state {
            case .success, .refund:
                guard let transactionID = response.transactionID, let totalFee = response.amount else { return order }
                let result = try await settlePaid(order, transactionID: transactionID, paidAt: response.paidAt,
                                                  amount: totalFee, source: source)
                // REFUND says two things: the order was paid (settled above, as SUCCESS is), and a
                // refund of it was asked for. The second is the refunds' to decide, each by its own
                // notify or refundquery through the refund door, and the order follows its refunds:
                // WeChat says REFUND from the moment a refund is requested, while it may still end
                // REFUNDCLOSE, so on orderquery's word alone the order never moves to REFUND.
                if response.state == .refund, let paid = result.record, paid.state == .success {
                    return try await flagRefundMadeElsewhere(paid, source: source)
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

    /// The `entitlement.changed` row a payment or refund of `order` writes beside its own event.
    private func entitlementMarker(_ order: OrderRecord, at: Date) -> OutboxEvent? {
        EntitlementEvents.marker(for: order, catalog: catalog.catalog, at: at)
    }

    private func announce(_ result: TransitionResult, source: String) {
        guard case .changed(let record) = result else { return }
        instruments.settlements.labelled(Self.label(source), record.state.rawValue).increment()
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

    /// An order event (`order.paid`, `order.refunded`, `order.refund_reversed`) whose `data` is
    /// `order` as GET shows it, plus
    /// `attach`, `user_id`, `product_id` and, when flagged so, `paid_after_close`. An App Store
    /// order's flags come too (`matched_without_order`), since its view shows them.
    static func event(_ type: String, for order: OrderRecord, at: Date) -> OutboxEvent {
        let id = Self.eventID(type, for: order, at: at)
        let payload = PaidEventEncoding.payload(id: id, createdAt: Timestamp.rfc3339(at), data: eventData(order).json, type: type)
        return OutboxEvent(id: id, outTradeNo: order.outTradeNo, type: type, payload: payload, createdAt: at, nextAttemptAt: at)
    }

    /// An order's `order.paid` is named by its payment (the transaction, WeChat's or Apple's, one
    /// order's only) and the payment's time, so a payment settled again after a restore keeps the
    /// id the business applied (`PaidEventEncoding.derivedID`). The other order events may happen
    /// more than once to one order (Apple refunds, reverses, refunds again): fresh ids.
    static func eventID(_ type: String, for order: OrderRecord, at: Date) -> String {
        guard type == "order.paid", let paidAt = order.paidAt else { return PaidEventEncoding.newID(at: at) }
        let payment = (order.channel == .apple ? order.appleTransactionID : order.transactionID) ?? order.outTradeNo
        return PaidEventEncoding.derivedID(at: paidAt, fact: "order.paid\n\(order.channel.rawValue)\n\(payment)")
    }

    /// The order as an event's `data` shows it: GET's view plus what only the business needs.
    static func eventData(_ order: OrderRecord) -> OrderView {
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
        return data
    }

    /// WeChat's orderquery says REFUND for `order` (paid): when WeChat never accepted a refund of it
    /// from the gateway, the refund was made elsewhere (by hand in the merchant platform), and
    /// nothing here will ever hear of it. (With a refund of its own that WeChat accepted or may have,
    /// even one that ended REFUNDCLOSE, WeChat's REFUND is that refund's: nothing to flag. One WeChat
    /// refused when asked, NOT_ENOUGH after a refund by hand, never reached its books.) The order
    /// stays SUCCESS (its state follows its own refunds) and is flagged `refund_outside_gateway` for
    /// a person, with one timeline line; the next day's bill lists the refund as
    /// `unknown_out_refund_no` too. Once support has marked it handled, orderquery's REFUND, which
    /// says nothing new, does not raise it again.
    private func flagRefundMadeElsewhere(_ order: OrderRecord, source: String) async throws(StorageError) -> OrderRecord {
        guard !order.flags.contains(.refundOutsideGateway), !order.flags.contains(OrderFlag.refundOutsideGateway.handled),
              let refunds = store as? any RefundStore
        else { return order }
        let ours = try await refunds.refunds(outTradeNo: order.outTradeNo)
        // Closed without a refund_id: refused when requested, never accepted (RefundRecord.failureReason).
        guard ours.allSatisfy({ $0.state == .refundClose && $0.refundID == nil }) else { return order }
        let at = now()
        let flagged = try await store.addFlags(order.outTradeNo, [.refundOutsideGateway], at: at) ?? order
        _ = try await store.appendEvent(
            order.outTradeNo, kind: "refund_outside_gateway",
            detail: "\(source): orderquery trade_state=REFUND, but WeChat accepted no refund of this order from the gateway; "
                + "the order stays SUCCESS", at: at)
        instruments.refundsOutsideGateway.increment()
        logger.warning("WeChat reports a refund the gateway did not make; flagged for support",
                       ["out_trade_no": order.outTradeNo])
        return flagged
    }

    // MARK: - App Store

    /// Credits a verified App Store transaction to its order (`IAPStore.creditAppleTransaction`:
    /// the matching and the door's conditional transition in one transaction), with the
    /// `order.paid` event made from the order as credited. Only the call that credited announces it.
    func creditApple(_ credit: AppleCredit, in store: any IAPStore) async throws(StorageError) -> AppleCreditResult {
        var credit = credit
        let at = credit.at
        credit.outbox = { paid in Self.event("order.paid", for: paid, at: at) }
        let catalog = self.catalog.catalog
        credit.followUp = { paid in EntitlementEvents.marker(for: paid, catalog: catalog, at: at) }
        let result = try await store.creditAppleTransaction(credit)
        if case .credited(let order, _) = result { announce(.changed(order), source: "appstore") }
        return result
    }

    /// Moves a paid App Store order to REFUND through the door, with an `order.refunded` event whose
    /// `data` is the order as GET shows it afterwards: Apple refunded or revoked the purchase, and
    /// Apple's word is about Apple's own transaction. A WeChat order is never moved here: it turns
    /// REFUND only when one of its own refunds succeeds (`RefundStore.transitionRefund`, with the
    /// refund's `refund.succeeded`), so no other protocol's word about it can refund it.
    func refunded(_ order: OrderRecord, source: String) async throws(StorageError) -> TransitionResult {
        try await move(order, from: .success, to: .refund, announcing: "order.refunded", source: source)
    }

    /// Moves an App Store order Apple had refunded back to SUCCESS through the door, with an
    /// `order.refund_reversed` event whose `data` is the order as GET shows it afterwards (paid,
    /// refunded 0): Apple reversed the refund (REFUND_REVERSED). Nothing else leaves REFUND.
    func refundReversed(_ order: OrderRecord, source: String) async throws(StorageError) -> TransitionResult {
        try await move(order, from: .refund, to: .success, announcing: "order.refund_reversed", source: source)
    }

    /// One move between SUCCESS and REFUND with its event, whose `data` is the order as GET shows
    /// it afterwards.
    private func move(_ order: OrderRecord, from: OrderState, to: OrderState, announcing type: String, source: String)
        async throws(StorageError) -> TransitionResult
    {
        guard order.channel == .apple else {
            logger.error("refused to move a WeChat order between SUCCESS and REFUND outside its refunds",
                         ["out_trade_no": order.outTradeNo])
            return .unchanged(order)
        }
        let at = now()
        var after = order
        after.state = to
        let result = try await store.transition(OrderTransition(
            outTradeNo: order.outTradeNo, to: to, from: [from], detail: source, outbox: Self.event(type, for: after, at: at),
            followUp: entitlementMarker(order, at: at), at: at))
        announce(result, source: source)
        return result
    }
}

// SPDX-License-Identifier: Apache-2.0
import Foundation
import Observability
import StorageCore
import WeChatPay
import WeChatPayV3

/// The notify flow (`POST /wechat/notify`, API v2's signed XML): verified by the protocol core
/// before anything is read or written beyond the order, settled through the one door, answered
/// SUCCESS only once the change is durable.
public final class PaymentNotifies: OrderFlow {
    let context: GatewayContext
    let refusals: NotifyRefusals

    /// Made by `GatewayServices`, the composition root.
    init(context: GatewayContext) {
        self.context = context
        refusals = NotifyRefusals(counts: context.instruments.notifyRejected, message: "payment notify rejected",
                                  logger: context.logger)
    }

    /// Handles a payment notify: strict XML, the order's own signature algorithm, appid and mch_id,
    /// result_code, and total_fee equal to the order's amount; then the one door. Answers SUCCESS
    /// only once the change is durable (or was already made), FAIL otherwise — and then nothing
    /// has changed, so WeChat's retry (or the reconciler) gets another chance.
    ///
    /// Nothing is written for a notify until `PaymentNotification.verify` has accepted it (our
    /// key's signature, our appid and mch_id): a malformed, unsigned, badly signed or foreign
    /// notify, or one naming an order we do not have, is only counted and logged (the log line
    /// throttled), so no outsider can make the database grow. Only verified notifies reach the
    /// order's timeline.
    ///
    /// Without the v2 key (WXPAY_API_VERSION=v3 without WXPAY_API_KEY) no v2 notify can be verified:
    /// each is refused (`v2_not_configured`) before it is read, and the order is found by the
    /// wait's polls or the reconciler through v3's query.
    public func handleNotify(_ body: [UInt8]) async -> [UInt8] {
        guard let signer = context.signer else { return rejected(reason: "v2_not_configured") }
        let fields: Fields
        do {
            fields = try PaymentNotification.decode(body)
        } catch {
            return rejected(reason: error.shortDescription)
        }
        guard let outTradeNo = PaymentNotification.claimedOutTradeNo(in: fields) else {
            return rejected(reason: "no_out_trade_no")
        }
        let order: OrderRecord
        do {
            guard let found = try await store.order(outTradeNo) else { return rejected(reason: "unknown_order") }
            // An iOS order is paid by the App Store only, whatever a notify says.
            guard found.channel == .wechat else { return rejected(reason: "not_a_wechat_order") }
            order = found
        } catch {
            context.countStorageError(error)
            return rejected(reason: "storage_error")
        }
        let outcome: PaymentNotifyOutcome
        do {
            outcome = try PaymentNotification.verify(
                fields, merchant: MerchantIdentity(appID: order.appID ?? configuration.appID, mchID: configuration.mchID),
                signer: signer,
                expectedSignType: SignType(rawValue: order.signType) ?? configuration.signType)
        } catch {
            // Signed with our key and addressed to our merchant, yet unusable (a missing field, an
            // amount or a time not in WeChat's form): a bug at WeChat, for a person to see on the
            // order's timeline, at most once a minute; nothing else is written and nothing settled.
            // Another merchant's notify is not ours to record, whoever signed it.
            if error.signatureError == nil, ![NotifyError.returnFail, .wrongAppID, .wrongMchID].contains(error) {
                _ = try? await settlement.appendQuietLine(outTradeNo, kind: "notify_refused", detail: error.shortDescription)
            }
            return rejected(reason: error.shortDescription)
        }
        // An order created with v3 hears from WeChat in v3 only, RSA-signed by WeChat Pay: the v2
        // key, a secret the merchant shares with WeChat, must not be able to pay it. Checked once
        // the signature is (a forgery is counted as one: `bad_sign`).
        guard order.apiVersion == WeChatPayAPIVersion.v2.rawValue else { return rejected(reason: "not_a_v2_order") }
        switch outcome {
        case .failed(let failure):
            // A genuine "payment failed" notify: nothing to settle; acknowledged so WeChat stops.
            let detail = "result_code=FAIL \(failure.errCode ?? "")"
            _ = try? await settlement.appendQuietLine(outTradeNo, kind: "notify_received", detail: detail)
            instruments.notifies(configuration.apps.kind(of: order)).paymentFailed.increment()
            return NotifyReply.success.bytes
        case .paid(let payment):
            let verified = VerifiedPayment(transactionID: payment.transactionID, amount: payment.totalFee, currency: payment.feeType,
                                           paidAt: payment.timeEndDate)
            return await settle(verified, order: order).v2Reply(countingRefusal: { countRejected($0) })
        }
    }

    /// A payment a notify proved, whatever the API version: WeChat's transaction id, the amount
    /// paid (fen) and when.
    struct VerifiedPayment: Sendable {
        var transactionID: String
        var amount: Int
        var currency: String
        var paidAt: Date?
    }

    /// The one settle step of a verified payment notify, v2's and v3's: the amount equal to the
    /// order's (another amount under our key's signature is put on the timeline for a person, never
    /// settled), another transaction id on a paid order recorded, a recent copy answered from the
    /// read alone, then the one door, acknowledged only once the change is durable.
    func settle(_ payment: VerifiedPayment, order: OrderRecord) async -> NotifyOutcome {
        let outTradeNo = order.outTradeNo
        guard payment.amount == order.amount, payment.currency == "CNY" else {
            // Our key's signature on another amount means a leaked key or a bug: never settle
            // it. It is authenticated, so it goes on the order's timeline for a person.
            try? await settlement.recordAmountMismatch(order, reported: payment.amount, source: "notify", quietly: true)
            return .rejected("amount_mismatch")
        }
        if order.state == .success || order.state == .refund, let recorded = order.transactionID, recorded != payment.transactionID {
            // Paid already, under another transaction id: nothing to settle, a person to tell.
            do {
                _ = try await settlement.recordOtherTransaction(order, transactionID: payment.transactionID, source: "notify")
            } catch {
                instruments.notifyStorageError.increment()
                context.countStorageError(error)
                return .retry("try again")
            }
            instruments.notifies(configuration.apps.kind(of: order)).otherTransaction.increment()
            return .acknowledged
        }
        let outcomes = instruments.notifies(configuration.apps.kind(of: order))
        if Self.isRecentCopy(transactionID: payment.transactionID, of: order, now: now()) {
            outcomes.duplicate.increment()
            return .acknowledged
        }
        do {
            // One durable write: the transition, last_notify_at and the notify_received event
            // commit together, so group commit batches one operation per notify.
            let result = try await settlement.settlePaid(
                order, transactionID: payment.transactionID, paidAt: payment.paidAt, amount: payment.amount, source: "notify",
                receipt: TransitionReceipt(kind: "notify_received", changedDetail: "settled", unchangedDetail: "duplicate",
                                           touching: .lastNotify))
            if result.didChange { CrashPoint.hit(CrashPoint.notifyCommitted) }
            if case .unchanged(let current) = result, current.state != .success && current.state != .refund {
                // Not settled and not already paid: let WeChat retry rather than lose it.
                outcomes.notSettled.increment()
                return .retry("order not settled")
            }
            (result.didChange ? outcomes.settled : outcomes.duplicate).increment()
            return .acknowledged
        } catch {
            logger.error("storage failure while settling a notify", ["out_trade_no": outTradeNo, "error": error.shortDescription])
            instruments.notifyStorageError.increment()
            context.countStorageError(error)
            return .retry("try again")
        }
    }

    /// How long after a payment notify was recorded a copy of it is acknowledged without a write,
    /// and how long the timeline line of a verified message that changes nothing (a FAIL or
    /// wrong-amount notify, a refund notify contradicting its refund) stays written only once.
    static let copyQuietPeriod: TimeInterval = 60

    /// Whether `payment` repeats a notify already settled on `order` (as just read) and recorded
    /// less than `copyQuietPeriod` ago. WeChat's own repeats come further apart than that; a genuine
    /// notify captured and replayed comes as often as its sender likes. Such a copy is answered
    /// SUCCESS and writes nothing (it would only add a `duplicate` line and move `last_notify_at`),
    /// so no number of copies grows an order's timeline by more than a line a minute. A copy with
    /// another transaction id is no copy: it goes through the door like any notify.
    static func isRecentCopy(transactionID: String, of order: OrderRecord, now: Date) -> Bool {
        guard order.state == .success || order.state == .refund, order.transactionID == transactionID,
              let recorded = order.lastNotifyAt
        else { return false }
        return now.timeIntervalSince(recorded) < copyQuietPeriod
    }

    /// Refuses a notify without writing anything (`NotifyRefusals`).
    private func rejected(reason: String) -> [UInt8] { refusals.reply(reason) }

    /// Counts a refused notify, and logs it unless `quietly` (WeChat's signature probes).
    func countRejected(_ reason: String, quietly: Bool = false) { refusals.count(reason, quietly: quietly) }
}

/// What settling a verified notify (payment or refund, v2 or v3) asks its answer to say; each
/// version writes it in its own words (v2's XML SUCCESS/FAIL, v3's 204 or 5xx with FAIL).
enum NotifyOutcome: Sendable, Hashable {
    /// Committed (or committed before): acknowledge, WeChat stops.
    case acknowledged
    /// Nothing changed and something should have: fail, WeChat (or the reconciler) comes again.
    case retry(String)
    /// Authenticated but never to be settled (another amount, an unknown order): refuse, counted
    /// by this reason.
    case rejected(String)

    /// v2's reply: SUCCESS, or FAIL (a refusal counted first).
    func v2Reply(countingRefusal count: (String) -> Void) -> [UInt8] {
        switch self {
        case .acknowledged: return NotifyReply.success.bytes
        case .retry(let message): return NotifyReply.fail(message).bytes
        case .rejected(let reason):
            count(reason)
            return NotifyReply.fail("rejected").bytes
        }
    }

    /// v3's reply: 204, or 500 with `{"code":"FAIL"}` (WeChat sends it again; a refusal counted first).
    func v3Reply(countingRefusal count: (String) -> Void) -> V3NotifyReply {
        switch self {
        case .acknowledged: return .accepted
        case .retry(let message): return .failed(status: 500, message: message)
        case .rejected(let reason):
            count(reason)
            return .failed(status: 500, message: "rejected")
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
import Foundation
import Observability
import StorageCore
import WeChatPay

extension RefundService {
    /// Handles a refund notify (`POST /wechat/refund-notify`): strict XML; `return_code`, `appid` and
    /// `mch_id`; `req_info` decrypted (AES-256-ECB under the MD5 of the API key, through OpenSSL);
    /// its `out_refund_no`, `out_trade_no`, `refund_fee` and `total_fee` must be a stored refund's.
    /// Then the one door. Answers SUCCESS only once the change is durable (or was already made).
    ///
    /// A refund notify carries no signature: decrypting under our key is its only proof. One that
    /// does not decrypt, names an unknown refund or disagrees on the amounts writes nothing at all
    /// (no timeline line, nothing an attacker can fill a database with); it is counted and logged,
    /// and answered FAIL.
    ///
    /// Without the v2 key (WXPAY_API_VERSION=v3 without WXPAY_API_KEY) nothing can be decrypted: every
    /// v2 refund notify is refused (`v2_not_configured`), and refundquery through v3 finishes the refund.
    public func handleNotify(_ body: [UInt8]) async -> [UInt8] {
        guard let key = context.configuration.apiKey else { return rejected(reason: "v2_not_configured") }
        let notification: RefundNotification
        let appID: String
        do {
            let fields = try RefundNotification.decode(body)
            // A refund notify names the app its order was paid through: any of the merchant's
            // here, and the order's own in `settle`.
            let configuration = context.configuration
            appID = fields["appid"].flatMap { configuration.apps.withAppID($0)?.appID } ?? configuration.appID
            notification = try RefundNotification.decrypt(
                fields, merchant: MerchantIdentity(appID: appID, mchID: configuration.mchID), key: key)
        } catch {
            return rejected(reason: error.shortDescription)
        }
        let target: RefundState = switch notification.refundStatus {
        case .success: .success
        case .change: .change
        case .refundClose: .refundClose
        }
        let notice = VerifiedRefundNotice(
            outRefundNo: notification.outRefundNo, outTradeNo: notification.outTradeNo, amount: notification.refundFee,
            totalFee: notification.totalFee, target: target, refundID: notification.refundID,
            transactionID: notification.transactionID, succeededAt: notification.successDate, appID: appID)
        return await settle(notice).v2Reply(countingRefusal: { countRejected($0) })
    }

    /// What a refund notify proved, whatever the API version.
    struct VerifiedRefundNotice: Sendable {
        var outRefundNo: String
        var outTradeNo: String
        /// The refund's and the order's amounts, in fen.
        var amount: Int
        var totalFee: Int
        var target: RefundState
        var refundID: String
        /// WeChat's transaction id of the refunded payment: the order's.
        var transactionID: String
        var succeededAt: Date?
        /// The app id a v2 notify names (v3's name none): it must be the order's.
        var appID: String? = nil
    }

    /// The settle step v2's and v3's refund notifies share: the notice must name a stored refund
    /// with its order, amounts, WeChat's refund id (once known) and the order's transaction id
    /// (else nothing is written: only a leaked key or a bug at WeChat signs another, and refundquery
    /// still finishes the refund from WeChat's own answer), then the one door; acknowledged once the
    /// change is durable, or when it was made before.
    func settle(_ notice: VerifiedRefundNotice) async -> NotifyOutcome {
        let refund: RefundRecord
        let order: OrderRecord
        do {
            guard let found = try await store.refund(notice.outRefundNo) else { return .rejected("unknown_refund") }
            refund = found
            // Refund notifies are rare: reading the order too is cheap.
            guard let refunded = try await context.store.order(refund.outTradeNo) else { return .rejected("refund_mismatch") }
            order = refunded
        } catch {
            context.countStorageError(error)
            return .rejected("storage_error")
        }
        guard refund.outTradeNo == notice.outTradeNo, refund.amount == notice.amount, refund.totalFee == notice.totalFee,
              refund.refundID.map({ $0 == notice.refundID }) ?? true,
              order.transactionID.map({ $0 == notice.transactionID }) ?? true
        else { return .rejected("refund_mismatch") }
        if let appID = notice.appID {
            // WeChat names the app the order was paid through; another of the merchant's apps is
            // not this order's refund. And a v2 notify, whose only proof is the v2 key, never
            // finishes a refund of an order created with v3: WeChat tells of those in v3, signed.
            guard appID == order.appID ?? context.configuration.appID else { return .rejected("refund_mismatch") }
            guard order.apiVersion == WeChatPayAPIVersion.v2.rawValue else { return .rejected("not_a_v2_order") }
        }
        let target = notice.target
        let result: RefundTransitionResult
        do {
            result = try await settle(
                refund.outRefundNo, to: target, source: "refund_notify", refundID: notice.refundID,
                succeededAt: notice.succeededAt.map { Self.succeededAt(reported: $0, refund: refund, at: now()) },
                expectedOutTradeNo: notice.outTradeNo, expectedAmount: notice.amount, touchesNotify: true)
        } catch {
            logger.error("storage failure while settling a refund notify",
                         ["out_refund_no": refund.outRefundNo, "error": error.shortDescription])
            instruments.notifyStorageError.increment()
            context.countStorageError(error)
            return .retry("try again")
        }
        switch result {
        case .changed:
            CrashPoint.hit(CrashPoint.refundNotifyCommitted)
            instruments.notifySettled.increment()
            return .acknowledged
        case .unchanged(let current) where current.state == target:
            instruments.notifyDuplicate.increment()
            return .acknowledged
        case .unchanged(let current):
            // A verified notify that contradicts a finished refund (SUCCESS, then REFUNDCLOSE):
            // nothing to change, and WeChat's retries would not help; a person must look. Anyone
            // holding one such notify can replay it, so, as for payment notifies, every copy is
            // counted but the timeline line is written at most once a minute per refund and the
            // log line at most once a second.
            instruments.notifyContradicting.increment()
            if let suppressed = conflictingNotifyLog.admit("contradicts_final_state") {
                logger.error("a refund notify contradicts the refund's final state",
                             ["out_refund_no": current.outRefundNo, "state": current.state.rawValue,
                              "notify": target.rawValue, "suppressed": String(suppressed)])
            }
            let detail = "\(current.outRefundNo): notify says \(target.rawValue), the refund is \(current.state.rawValue)"
            _ = try? await context.settlement.appendQuietLine(current.outTradeNo, kind: "refund_notify_conflict", detail: detail)
            return .acknowledged
        case .mismatch, .notFound:
            return .rejected("refund_mismatch")
        }
    }

    /// Refuses a notify without writing anything (`NotifyRefusals`).
    private func rejected(reason: String) -> [UInt8] { refusals.reply(reason) }

    /// Counts a refused notify, and logs it unless `quietly` (WeChat's signature probes).
    func countRejected(_ reason: String, quietly: Bool = false) { refusals.count(reason, quietly: quietly) }
}

// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import WeChatPayV3

extension RefundService {
    /// `POST /wechat/v3/refund-notify`: REFUND.SUCCESS, REFUND.ABNORMAL or REFUND.CLOSED, opened as
    /// payment notifies are (signature first, then the resource decrypted and read), then the
    /// settle step v2's refund notifies share. Answers as `PaymentNotifies.handleV3Notify` does.
    public func handleV3Notify(headers: [String: String], body: [UInt8]) async -> V3NotifyReply {
        let event: V3NotifyEvent
        switch await context.openV3Notify(headers: headers, body: body, count: countRejected) {
        case .opened(let opened): event = opened
        case .refused(let reply): return reply
        }
        guard case .refund(let notice) = event else {
            countRejected("not_a_refund_event")
            return .failed(status: 400, message: "not a refund notify")
        }
        let target: RefundState = switch notice.refundStatus {
        case .success: .success
        case .abnormal: .change
        case .closed: .refundClose
        case .processing: .processing
        }
        guard target != .processing else {
            countRejected("not_a_refund_result")
            return .failed(status: 400, message: "rejected")
        }
        let verified = VerifiedRefundNotice(
            outRefundNo: notice.outRefundNo, outTradeNo: notice.outTradeNo, amount: notice.refund, totalFee: notice.total,
            target: target, refundID: notice.refundID, transactionID: notice.transactionID,
            succeededAt: notice.successTime.flatMap(RFC3339.parse))
        return await settle(verified).v3Reply(countingRefusal: { countRejected($0) })
    }
}

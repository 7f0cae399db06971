// SPDX-License-Identifier: Apache-2.0
import StorageCore
import WeChatPay

extension Upstream {
    /// `/secapi/pay/refund` for the refund exactly as recorded: every retry, replay and resend
    /// after a crash sends the same order, number, amounts, reason and notify_url; only nonce_str
    /// and sign change. Signed with the order's algorithm. `failed` sees every failed attempt.
    func refund(_ refund: RefundRecord, order: OrderRecord, failed: (WeChatPayError) -> Void)
        async throws(WeChatPayError) -> RefundResponse
    {
        let request = RefundRequest(
            order: .outTradeNo(refund.outTradeNo), outRefundNo: refund.outRefundNo, totalFee: refund.totalFee,
            refundFee: refund.amount, refundDescription: refund.reason, notifyURL: refund.notifyURL)
        return try await withRetries(api: "refund", failed: failed) { () throws(WeChatPayError) in
            try await self.client(for: order).send(request)
        }
    }

    /// refundquery for one refund by its number (a read: the sweep asks again next time).
    func refundQuery(_ outRefundNo: String, order: OrderRecord) async throws(WeChatPayError) -> RefundQueryResponse {
        try await withRetries(api: "refundquery", attempts: 1) { () throws(WeChatPayError) in
            try await self.client(for: order).send(RefundQueryRequest(.outRefundNo(outRefundNo)))
        }
    }
}

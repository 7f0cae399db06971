// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization
import WeChatPay

extension WeChatPaySimulator {
    func refund(_ request: RefundRequest, now: Date, book: inout OrderBook) throws(BusinessFailure) -> Fields {
        var order = try lookUpOrder(request.order, now: now, book: &book)
        guard order.isPaid else { throw BusinessFailure(code: "ORDERNOTEXIST", description: "订单未支付") }

        if let existing = order.refunds.first(where: { $0.outRefundNo == request.outRefundNo }) {
            // The same out_refund_no is one refund: a retry with the same amounts answers it again.
            guard existing.totalFee == request.totalFee, existing.refundFee == request.refundFee else {
                throw .invalid("订单金额或退款金额与之前请求不一致，请核实后再试")
            }
            return refundReply(existing, order: order)
        }
        guard request.totalFee == order.totalFee else { throw .invalid("订单金额或退款金额与之前请求不一致，请核实后再试") }
        guard order.refunds.count < configuration.maximumRefundsPerOrder else {
            throw .invalid("该订单的退款次数已超过\(configuration.maximumRefundsPerOrder)次")
        }
        guard order.refundedTotal + request.refundFee <= order.totalFee else { throw .invalid("退款金额大于支付金额") }

        let refund = SimulatedRefund(
            outRefundNo: request.outRefundNo, refundID: book.newRefundID(), outTradeNo: order.outTradeNo,
            totalFee: request.totalFee, refundFee: request.refundFee, refundDesc: request.refundDescription,
            refundAccount: request.refundAccount ?? .unsettledFunds, notifyURL: request.notifyURL, requestedAt: now, status: .processing)
        book.record(refund, of: &order, completionDelay: configuration.refundCompletionDelay)
        return refundReply(refund, order: order)
    }

    private func refundReply(_ refund: SimulatedRefund, order: SimulatedOrder) -> Fields {
        [
            "transaction_id": order.transactionID ?? "", "out_trade_no": order.outTradeNo,
            "out_refund_no": refund.outRefundNo, "refund_id": refund.refundID,
            "refund_fee": String(refund.refundFee), "settlement_refund_fee": String(refund.refundFee),
            "total_fee": String(order.totalFee), "settlement_total_fee": String(order.totalFee), "fee_type": "CNY",
            "cash_fee": String(order.totalFee), "cash_refund_fee": String(refund.refundFee),
            "coupon_refund_fee": "0", "coupon_refund_count": "0",
        ]
    }

    /// refundquery names its subject by refund_id, out_refund_no, transaction_id or out_trade_no,
    /// in that order of precedence; per order it lists ten refunds from `offset`.
    func refundQuery(_ request: RefundQueryRequest, now: Date, book: inout OrderBook) throws(BusinessFailure) -> Fields {
        let order: SimulatedOrder
        var single: String?  // out_refund_no when one refund was asked for
        switch request.identifier {
        case .refundID(let refundID):
            guard let outRefundNo = book.byRefundID[refundID], let owner = book.refundOwner[outRefundNo],
                  let found = book.order(owner, now: now) else { throw .refundNotExist }
            order = found
            single = outRefundNo
        case .outRefundNo(let outRefundNo):
            guard let owner = book.refundOwner[outRefundNo], let found = book.order(owner, now: now) else {
                throw .refundNotExist
            }
            order = found
            single = outRefundNo
        case .transactionID(let id):
            do { order = try lookUpOrder(.transactionID(id), now: now, book: &book) } catch { throw .refundNotExist }
        case .outTradeNo(let number):
            do { order = try lookUpOrder(.outTradeNo(number), now: now, book: &book) } catch { throw .refundNotExist }
        }
        var refunds = order.refunds
        if let single { refunds = refunds.filter { $0.outRefundNo == single } }
        guard !refunds.isEmpty else { throw .refundNotExist }
        let offset = request.offset ?? 0
        guard offset < refunds.count else { throw .param("offset参数错误") }
        let page = refunds[offset..<min(offset + 10, refunds.count)]
        var reply: Fields = [
            "transaction_id": order.transactionID ?? "", "out_trade_no": order.outTradeNo,
            "total_fee": String(order.totalFee), "settlement_total_fee": String(order.totalFee), "fee_type": "CNY",
            "cash_fee": String(order.totalFee), "refund_count": String(page.count),
            "total_refund_count": String(refunds.count),
        ]
        for (n, refund) in page.enumerated() {
            reply["out_refund_no_\(n)"] = refund.outRefundNo
            reply["refund_id_\(n)"] = refund.refundID
            reply["refund_channel_\(n)"] = "ORIGINAL"
            reply["refund_fee_\(n)"] = String(refund.refundFee)
            reply["settlement_refund_fee_\(n)"] = String(refund.refundFee)
            reply["refund_status_\(n)"] = refund.status.rawValue
            reply["refund_account_\(n)"] = refund.refundAccount.rawValue
            reply["refund_recv_accout_\(n)"] = Self.refundReceivingAccount
            if let completedAt = refund.completedAt, refund.status == .success {
                reply["refund_success_time_\(n)"] = BeijingTime.formatWithSeparators(completedAt)
            }
        }
        return reply
    }
}

extension WeChatPaySimulator {
    /// Where a refund to a WeChat balance lands, as the refund notify documentation spells it
    /// (`refund_recv_accout`, sic); refundquery and the notify say the same.
    static let refundReceivingAccount = "支付用户零钱"

    /// The refund notify: return_code, appid, mch_id, nonce_str and the encrypted `req_info`, unsigned.
    func refundNotifyBody(_ refund: SimulatedRefund, order: SimulatedOrder, book: inout OrderBook) -> [UInt8] {
        var builder = RefundNotifyBuilder(
            merchant: MerchantIdentity(appID: order.appID.isEmpty ? configuration.appID : order.appID, mchID: configuration.mchID),
            transactionID: order.transactionID ?? "", outTradeNo: order.outTradeNo, refundID: refund.refundID,
            outRefundNo: refund.outRefundNo, totalFee: order.totalFee, refundFee: refund.refundFee,
            nonce: book.random.alphanumerics(32))
        builder.refundStatus = switch refund.status {
        case .success, .processing: .success
        case .closed: .refundClose
        case .change: .change
        }
        builder.successTime = refund.status == .success ? refund.completedAt : nil
        builder.refundAccount = refund.refundAccount.rawValue
        builder.refundRecvAccount = Self.refundReceivingAccount
        do {
            return encode(try builder.fields(encryptedWith: configuration.key))
        } catch {
            preconditionFailure("simulator wrote an unencodable refund notify: \(error)")
        }
    }
}

extension WeChatPaySimulator {
    /// Every refund request each out_refund_no received, production and sandbox.
    public var refundRequests: [String: RefundRequestLog] {
        books.withLock { $0.production.refundRequests.merging($0.sandbox.refundRequests) { a, _ in a } }
    }

    /// Completes accepted refunds SUCCESS once `refundCompletionDelay` has passed on the simulated
    /// clock, as WeChat's bank side does, until the task is cancelled.
    func completeRefundsWhenDue() async {
        while !Task.isCancelled {
            let now = clock.now()
            let due = books.withLock { books -> [String] in
                var due: [String] = []
                for book in [\Books.production, \Books.sandbox] {
                    let ready = books[keyPath: book].refundsDue.prefix { $0.due <= now }
                    due += ready.map(\.outRefundNo)
                    books[keyPath: book].refundsDue.removeFirst(ready.count)
                }
                return due
            }
            // A refund completed by hand meanwhile is no longer PROCESSING: nothing to do for it.
            for number in due { _ = try? completeRefund(outRefundNo: number) }
            try? await Task.sleep(for: .seconds(max(clock.realWait(for: 1, cap: 0.02), 0.002)))
        }
    }
}

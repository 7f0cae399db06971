// SPDX-License-Identifier: Apache-2.0
import Foundation
@testable import Gateway
import StorageCore
import WeChatPay

/// A WeChat Pay behind the upstream seam that answers every call at once with an empty success,
/// or, for a prepay, with `prepayError` when one is set: for tests of what sits above the seam.
struct ScriptedUpstream: WeChatPayUpstream {
    var prepayError: UpstreamError?

    func prepay(_ order: OrderRecord, notifyURL: String) async throws(UpstreamError) -> StoredPrepay {
        if let prepayError { throw prepayError }
        return StoredPrepay(prepayID: "")
    }
    func jsapiPayment(for order: OrderRecord, prepayID: String, issuedAt: Date) throws(UpstreamError) -> JSAPIPayRequest {
        JSAPIPayRequest(appId: "", timeStamp: "", nonceStr: "", package: "", signType: "", paySign: "")
    }
    func appPayment(for order: OrderRecord, prepayID: String, issuedAt: Date) throws(UpstreamError) -> AppPayRequest {
        AppPayRequest(appId: "", partnerId: "", prepayId: "", packageValue: "", nonceStr: "", timeStamp: "", sign: "", signType: "")
    }
    func queryOrder(_ order: OrderRecord) async throws(UpstreamError) -> UpstreamTrade {
        UpstreamTrade(outTradeNo: "", state: .notPay, transactionID: nil, amount: nil, paidAt: nil)
    }
    func closeOrder(_ order: OrderRecord) async throws(UpstreamError) -> UpstreamClosing { .closed }
    func refund(_ refund: RefundRecord, order: OrderRecord) async throws(UpstreamError) -> UpstreamRefundAcceptance {
        UpstreamRefundAcceptance(outRefundNo: "", outTradeNo: "", amount: 0, refundID: "")
    }
    func queryRefund(_ outRefundNo: String, order: OrderRecord) async throws(UpstreamError) -> UpstreamRefundReport {
        UpstreamRefundReport(outTradeNo: "", refunds: [])
    }
    func bill(day: String) async throws(UpstreamError) -> [BillRow] { [] }
}

// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import WeChatPayV3

extension PaymentNotifies {
    /// `POST /wechat/v3/notify`: the signature over the raw body verified first (the key its
    /// `Wechatpay-Serial` names, within five minutes, WeChat's probes refused), then the resource
    /// decrypted with the APIv3 key and read (`GatewayContext.openV3Notify`), then the order (a
    /// read), then the settle step v2's notifies share. 204 only once the change is durable (or was
    /// made before); otherwise 5xx with `{"code":"FAIL"}`, so WeChat comes again; 401 for what is
    /// not WeChat's (nothing written, counted and logged throttled); 400 for a signature probe
    /// (counted, never logged).
    public func handleV3Notify(headers: [String: String], body: [UInt8]) async -> V3NotifyReply {
        let event: V3NotifyEvent
        switch await context.openV3Notify(headers: headers, body: body, count: countRejected) {
        case .opened(let opened): event = opened
        case .refused(let reply): return reply
        }
        guard case .payment(let transaction) = event else {
            countRejected("not_a_payment_event")
            return .failed(status: 400, message: "not a payment notify")
        }
        // One of the merchant's apps here; the order's own app once the order is read.
        guard configuration.apps.withAppID(transaction.appID) != nil || transaction.appID == configuration.appID,
              let transactionID = transaction.transactionID, let total = transaction.total
        else {
            countRejected("merchant_mismatch")
            return .failed(status: 400, message: "rejected")
        }
        let order: OrderRecord
        do {
            guard let found = try await store.order(transaction.outTradeNo) else {
                countRejected("unknown_order")
                return .failed(status: 500, message: "unknown order")
            }
            // An iOS order is paid by the App Store only, whatever a notify says.
            guard found.channel == .wechat else {
                countRejected("not_a_wechat_order")
                return .failed(status: 500, message: "rejected")
            }
            order = found
        } catch {
            context.countStorageError(error)
            countRejected("storage_error")
            return .failed(status: 500, message: "try again")
        }
        // An order is paid only through the app it was created with: another app's payment of the
        // same number is not this order's.
        guard transaction.appID == order.appID ?? configuration.appID else {
            countRejected("merchant_mismatch")
            return .failed(status: 400, message: "rejected")
        }
        let payment = VerifiedPayment(transactionID: transactionID, amount: total, currency: transaction.currency,
                                      paidAt: transaction.successTime.flatMap(RFC3339.parse))
        return await settle(payment, order: order).v3Reply(countingRefusal: { countRejected($0) })
    }
}

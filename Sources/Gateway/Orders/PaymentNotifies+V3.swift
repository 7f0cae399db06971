// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import WeChatPayV3

extension PaymentNotifies {
    /// `POST /wechat/v3/notify`: the signature over the raw body verified first (the key its
    /// `Wechatpay-Serial` names, within five minutes, WeChat's probes refused), then the resource
    /// decrypted with the APIv3 key and read, then the order (a read), then the settle step v2's
    /// notifies share. 204 only once the change is durable (or was made before); otherwise 5xx with
    /// `{"code":"FAIL"}`, so WeChat comes again; 401 for what is not WeChat's (nothing written,
    /// counted and logged throttled); 400 for a signature probe (counted, never logged).
    public func handleV3Notify(headers: [String: String], body: [UInt8]) async -> V3NotifyReply {
        guard let keys = context.v3 else {
            countRejected("v3_not_configured")
            return .failed(status: 404, message: "WeChat Pay API v3 is not configured")
        }
        let event: V3NotifyEvent
        do {
            event = try await context.openV3Notify(keys, headers: headers, body: body)
        } catch {
            return Self.refusal(error, count: countRejected)
        }
        guard case .payment(let transaction) = event else {
            countRejected("not_a_payment_event")
            return .failed(status: 400, message: "not a payment notify")
        }
        guard transaction.appID == configuration.appID, let transactionID = transaction.transactionID,
              let total = transaction.total
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
            guard found.channel == .wechat else {
                countRejected("not_a_wechat_order")
                return .failed(status: 500, message: "rejected")
            }
            order = found
        } catch {
            countRejected("storage_error")
            return .failed(status: 500, message: "try again")
        }
        let payment = VerifiedPayment(transactionID: transactionID, amount: total, currency: transaction.currency,
                                      paidAt: transaction.successTime.flatMap(RFC3339.parse))
        switch await settle(payment, order: order) {
        case .acknowledged: return .accepted
        case .retry(let message): return .failed(status: 500, message: message)
        case .rejected(let reason):
            countRejected(reason)
            return .failed(status: 500, message: "rejected")
        }
    }

    /// The answer to a v3 notify the protocol core refused: a probe 400 and quiet, a signature
    /// that is not WeChat's (stale, unknown serial, forged, headers missing) 401, a verified body
    /// that does not read 400. Every refusal is counted by its reason; `count` logs all but probes.
    static func refusal(_ error: WeChatPayV3Error, count: (String, Bool) -> Void) -> V3NotifyReply {
        switch error.code {
        case .signatureProbe:
            count(error.shortDescription, true)
            return .failed(status: 400, message: "signature probe")
        case .missingHeader, .malformedHeader, .staleTimestamp, .unknownSerial, .certificateNotValidNow, .badSignature:
            count(error.shortDescription, false)
            return .failed(status: 401, message: "signature not verified")
        default:
            count(error.shortDescription, false)
            return .failed(status: 400, message: "rejected")
        }
    }
}

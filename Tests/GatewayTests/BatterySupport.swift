// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import StorageCore
import WeChatPay
import WeChatPaySimulator

/// Shared pieces of the reduced-scale reliability battery (reliability.md T1, T4, T6).
enum Battery {
    static let acknowledged = "<return_code><![CDATA[SUCCESS]]></return_code>"

    /// WeChat's notify for an order the simulator has paid: its transaction id, its amount, signed
    /// with the merchant key and the order's algorithm, exactly what a duplicate delivery carries.
    static func genuineNotify(_ paid: SimulatedOrderSnapshot, nonce: String) -> [UInt8] {
        genuineNotify(outTradeNo: paid.outTradeNo, transactionID: paid.transactionID ?? "", totalFee: paid.totalFee,
                      signType: paid.signType == "MD5" ? .md5 : .hmacSHA256, nonce: nonce)
    }

    /// A payment notify signed with the merchant key, as WeChat sends it (no `sign_type` for HMAC).
    static func genuineNotify(outTradeNo: String, transactionID: String, totalFee: Int, signType: SignType = .hmacSHA256,
                              nonce: String) -> [UInt8] {
        var builder = PaymentNotifyBuilder(
            merchant: MerchantIdentity(appID: GatewayConfiguration.demoAppID, mchID: GatewayConfiguration.demoMchID),
            outTradeNo: outTradeNo, transactionID: transactionID, totalFee: totalFee, timeEnd: Date(), nonce: nonce)
        builder.openid = "oBattery"
        let fields = builder.fields(signedWith: Signer(key: APIKey(GatewayConfiguration.demoKey)), signType: signType,
                                    declaresSignType: false)
        return (try? FlatXML.encode(fields)) ?? []
    }

    /// The number of transitions into SUCCESS in an order's event log (C4 wants at most one).
    static func transitionsIntoSuccess(_ store: some OrderStore, _ outTradeNo: String) async throws -> Int {
        try await store.events(outTradeNo).filter {
            $0.kind == OrderEvent.stateChangedKind && $0.detail.contains("-> SUCCESS")
        }.count
    }

    /// The sum of the Prometheus samples whose series starts with `prefix`.
    static func sum(_ exposition: String, _ prefix: String) -> Double {
        exposition.split(separator: "\n").filter { $0.hasPrefix(prefix) }
            .compactMap { $0.split(separator: " ").last.flatMap { Double($0) } }.reduce(0, +)
    }
}

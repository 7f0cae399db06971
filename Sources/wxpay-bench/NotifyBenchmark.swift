// SPDX-License-Identifier: Apache-2.0
import Foundation
import WeChatPay

/// `wxpay-bench notifications [count]`: single-thread throughput of the notification paths on
/// pre-built bodies (default 20,000): payment notify decode + verify (HMAC-SHA256 and MD5),
/// refund notify decode + decrypt, and app pay parameter signing. Medians of 5 rounds.
enum NotifyBenchmark {
    static func run(_ arguments: [String]) throws {
        let count = arguments.first.flatMap(Int.init) ?? 20_000
        let merchant = MerchantIdentity(appID: "wxd930ea5d5a258f4f", mchID: "10000100")
        let key = APIKey("192006250b4c09247ec02edce69f6a2d")
        let signer = Signer(key: key)
        let paidAt = Date(timeIntervalSince1970: 1_414_411_779)

        func paymentBodies(_ type: SignType) throws -> [[UInt8]] {
            try (0..<count).map { index in
                var builder = PaymentNotifyBuilder(
                    merchant: merchant, outTradeNo: "order\(index)", transactionID: "420000\(index)",
                    totalFee: 100 + index, timeEnd: paidAt, nonce: "nonce\(index)")
                builder.attach = "cart=\(index)"
                return try FlatXML.encode(builder.fields(signedWith: signer, signType: type))
            }
        }
        for type in [SignType.hmacSHA256, .md5] {
            let bodies = try paymentBodies(type)
            var verified = 0
            let duration = try medianDuration(rounds: 5) {
                verified = 0
                for body in bodies {
                    let fields = try PaymentNotification.decode(body)
                    if case .paid = try PaymentNotification.verify(fields, merchant: merchant, signer: signer, expectedSignType: type) {
                        verified += 1
                    }
                }
            }
            report("payment notify decode+verify (\(type), \(bodies[0].count) B)", count: verified, duration)
        }

        let refundBodies = try (0..<count).map { index in
            var builder = RefundNotifyBuilder(
                merchant: merchant, transactionID: "420000\(index)", outTradeNo: "order\(index)",
                refundID: "5030\(index)", outRefundNo: "R\(index)", totalFee: 100 + index, refundFee: 100, nonce: "n\(index)")
            builder.successTime = paidAt
            return try FlatXML.encode(builder.fields(encryptedWith: key))
        }
        var decrypted = 0
        let refund = try medianDuration(rounds: 5) {
            decrypted = 0
            for body in refundBodies {
                _ = try RefundNotification.decrypt(RefundNotification.decode(body), merchant: merchant, key: key)
                decrypted += 1
            }
        }
        report("refund notify decode+decrypt (\(refundBodies[0].count) B)", count: decrypted, refund)

        var signed = 0
        let appPay = try medianDuration(rounds: 5) {
            signed = 0
            for index in 0..<count {
                _ = try AppPayParameters(appID: merchant.appID, partnerID: merchant.mchID, prepayID: "wx2014102720093955226\(index)",
                                         nonce: "5K8264ILTKCH16CQ2502SI8ZNMTM67VS", timestamp: 1_412_000_000 + index,
                                         signType: .hmacSHA256, signer: signer)
                signed += 1
            }
        }
        report("app pay parameters (HMAC-SHA256)", count: signed, appPay)
    }

    private static func report(_ name: String, count: Int, _ duration: Duration) {
        let seconds = duration.seconds
        print("\(name): \(count) in \(formatted(seconds * 1000)) ms, \(formatted(Double(count) / seconds / 1000)) k/s, \(formatted(seconds / Double(count) * 1e6, decimals: 2)) µs each")
    }
}

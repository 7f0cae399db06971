// SPDX-License-Identifier: Apache-2.0
import Foundation
import WeChatPay

/// `wxpay-bench client-pipeline [iterations]`: the cost the client pipeline adds to each WeChat
/// call, without the network. Measures, for a unifiedorder with each sign type: building the
/// signed request (validate, envelope, sign, encode), checking the response (decode, verify,
/// typed decode), and a whole `send` through `InMemoryTransport`.
///
/// Each measurement runs five rounds and reports the fastest, because the machine is shared and
/// the slower rounds measure the neighbours rather than this code.
enum ClientPipelineBenchmark {
    static let rounds = 5

    static func run(_ arguments: [String]) async -> Int32 {
        let iterations = arguments.first.flatMap(Int.init) ?? 20_000
        guard iterations > 0, iterations <= 10_000_000 else {
            FileHandle.standardError.write(Data("iterations must be between 1 and 10000000\n".utf8))
            return 64
        }
        print("client-pipeline: best of \(rounds) rounds of \(iterations) iterations per measurement")
        for signType in SignType.allCases {
            await measure(signType: signType, iterations: iterations)
        }
        return 0
    }

    private static func measure(signType: SignType, iterations: Int) async {
        let merchant = MerchantCredentials(
            appID: "wxd930ea5d5a258f4f", mchID: "10000100", key: APIKey("192006250b4c09247ec02edce69f6a2d"),
            signType: signType)
        let reply = ResponseEnvelope.success(
            ["trade_type": "APP", "prepay_id": "wx201410272009395522657a690389285100"],
            appID: merchant.appID, mchID: merchant.mchID, nonceStr: "5K8264ILTKCH16CQ2502SI8ZNMTM67VS",
            signer: Signer(key: merchant.key), signType: signType)
        let response = TransportResponse(status: 200, body: try! FlatXML.encode(reply))
        let transport = InMemoryTransport { _ in response }
        let client = WeChatPayClient(merchant: merchant, transport: transport, nonces: CountingNonceSource(prefix: "B"))
        let order = UnifiedOrderRequest(
            body: "腾讯充值中心-QQ会员充值", outTradeNo: "T20240101001", totalFee: 1200, spbillCreateIP: "203.0.113.7",
            notifyURL: "https://pay.example.com/wechat/notify", attach: "bench")

        // A checksum of every result keeps the optimizer from discarding the work.
        var checksum = 0
        let clock = ContinuousClock()

        var build = Duration.seconds(Int64.max), check = build, whole = build
        for _ in 0..<rounds {
            build = min(build, clock.measure {
                for _ in 0..<iterations { checksum &+= (try? client.transportRequest(for: order))?.body.count ?? -1 }
            })
            check = min(check, clock.measure {
                for _ in 0..<iterations {
                    checksum &+= (try? client.decodeResponse(response, for: UnifiedOrderRequest.self))?.prepayID.utf8.count ?? -1
                }
            })
            let start = clock.now
            for _ in 0..<iterations { checksum &+= (try? await client.send(order))?.prepayID.utf8.count ?? -1 }
            whole = min(whole, clock.now - start)
        }

        let sentBytes = (try? client.transportRequest(for: order))?.body.count ?? 0
        print("  \(signType): request \(sentBytes) B, response \(response.body.count) B (checksum \(checksum))")
        report("build signed request", build, iterations)
        report("check + decode response", check, iterations)
        report("send via InMemoryTransport", whole, iterations)
    }

    private static func report(_ label: String, _ duration: Duration, _ iterations: Int) {
        let seconds = Double(duration.components.seconds) + Double(duration.components.attoseconds) / 1e18
        let micros = seconds / Double(iterations) * 1e6
        let label = label.padding(toLength: 28, withPad: " ", startingAt: 0)
        print("    \(label) \(String(format: "%7.2f", micros)) µs/op  \(String(format: "%9.0f", Double(iterations) / seconds)) ops/s")
    }
}

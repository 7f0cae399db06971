// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import Glibc
import WeChatPay
import Crypto
import WeChatPayV3

/// `wxpay-bench gateway <phase> --url BASE [options]`: load phases against a running gateway in
/// demo mode (scripts/bench-gateway starts it, runs the phases in order and stops it).
///
/// - `create --orders N --prefix P [--concurrency C]`: N `POST /v1/orders`, out_trade_no `P` + index,
///   each answered 201 with a prepay_id and app parameters; prints orders/s.
/// - `channels --orders N --prefix P [--rounds R] [--pid PID]`: JSAPI creates (demo mode's mini
///   program `mini`, with a payer's openid under its app id) against APP creates (`android`) in one
///   run: R rounds of N creates each way, alternating which goes first, each round's JSAPI/APP ratio
///   of orders/s and (with the gateway's `--pid`) of its CPU per create, and their medians.
/// - `notify --orders N --prefix P [--concurrency C]`: signed payment notifies for the first N of
///   those orders, built before the clock starts; each answered SUCCESS; prints notifies/s.
/// - `notify-v3 --orders N --prefix P --wechatpay-key FILE --public-key-id ID --api-v3-key K`: the
///   same as API v3's notifies (`/wechat/v3/notify`): the transaction sealed with the APIv3 key, the
///   envelope signed with the WeChat Pay key the gateway trusts (scripts/bench-gateway-v3 makes the
///   keys); each answered 204.
/// - `wait --orders N --prefix P --pid PID [--from I]`: N raw connections, each holding
///   `GET /v1/orders/{P+I}?wait=30`; once the gateway's `wxpay_waits_open` gauge shows them all,
///   prints the gateway's RSS, then closes the connections.
///
/// `create` and `notify` run on `GatewayLoadGenerator` (raw keep-alive sockets, one thread), so the
/// measuring tool takes a few µs of the shared 2 cores per request instead of libcurl's ~65 µs.
///
/// Every phase is bounded in count and in time (`--timeout`, default 120 s) and exits non-zero on
/// any unexpected answer, so a figure is never printed for a run that did not do its work.
enum GatewayBench {
    struct Options {
        var url = ""
        var orders = 10_000
        var concurrency = 128
        var prefix = "bench"
        var from = 0
        var pid: Int32 = 0
        var amount = 990
        var timeout = 120.0
        var hold = 0.0
        /// `client`: the backend's bearer token and a priced body; `app`: an app token per user and
        /// a catalog product; `client-catalog`: the backend's token creating the very rows the app
        /// tokens create (the same user ids and catalog product), so scripts/bench-app-tokens
        /// compares `app` with it and the difference is the app token's own cost.
        var token = "client"
        /// App users the creates are spread over (each a token minted before the clock starts).
        var users = 1000
        /// `wakeup`: the instance the notifies go to (the waits are held on `url`), and how many
        /// waits are held at once.
        var notifyURL = ""
        var batch = 100
        /// `notify-v3`: the WeChat Pay private key (PEM) notifies are signed with, its public key's
        /// id, and the APIv3 key resources are sealed with.
        var wechatpayKey = ""
        var publicKeyID = ""
        var apiV3Key = ""
        /// `channels`: how many rounds of APP and JSAPI creates.
        var rounds = 3
    }

    /// Demo mode's client token, or BENCH_CLIENT_TOKEN's for a production-mode gateway (which
    /// refuses demo mode's published tokens).
    static let clientToken = ProcessInfo.processInfo.environment["BENCH_CLIENT_TOKEN"] ?? "demo-client-token"
    /// The v2 key notifies are signed with: demo mode's, or BENCH_API_KEY's for a production-mode
    /// gateway (which refuses demo mode's published key).
    static let demoKey = ProcessInfo.processInfo.environment["BENCH_API_KEY"] ?? "192006250b4c09247ec02edce69f6a2d"
    static let demoMerchant = MerchantIdentity(appID: "wxd930ea5d5a258f4f", mchID: "10000100")

    static func run(_ arguments: [String]) async -> Int32 {
        guard let phase = arguments.first else { return usage() }
        let options: Options
        do {
            options = try parse(Array(arguments.dropFirst()))
        } catch {
            print("gateway bench: \(error)")
            return usage()
        }
        do {
            switch phase {
            case "create": try create(options)
            case "channels": try GatewayChannelBench.run(options)
            case "notify": try notify(options)
            case "notify-v3": try notifyV3(options)
            case "wait": try await GatewayWaitLoad.run(options)
            case "wakeup": try await GatewayWakeupBench.run(options)
            default: return usage()
            }
            return 0
        } catch {
            print("gateway bench \(phase) FAILED: \(error)")
            return 1
        }
    }

    static func outTradeNo(_ options: Options, _ index: Int) -> String {
        options.prefix + String(index)
    }

    // MARK: Phases

    private static func create(_ options: Options) throws {
        let (generator, host) = try loadGenerator(options)
        var requests = GatewayLoadGenerator.Requests()
        // App tokens are minted before the clock starts, one per user, as each app holds its own.
        let minter = AppTokenMinter(secret: AppConfiguration.demoTokenSecret)
        let appTokens = options.token == "app"
            ? (0..<options.users).map { minter.token(subject: "bench-user-\($0)", now: Date(), ttl: 3600) } : []
        for index in 0..<options.orders {
            let body: String
            let token: String
            if options.token == "client-catalog" {
                body = #"{"client_ip":"127.0.0.1","out_trade_no":"\#(outTradeNo(options, index))","product_id":"swift-101","user_id":"bench-user-\#(index % options.users)"}"#
                token = clientToken
            } else if appTokens.isEmpty {
                body = #"{"amount":\#(options.amount),"description":"bench order","client_ip":"203.0.113.7","out_trade_no":"\#(outTradeNo(options, index))"}"#
                token = clientToken
            } else {
                // The catalog prices it; the address is the peer's (no client_ip), as from a phone.
                body = #"{"product_id":"swift-101","out_trade_no":"\#(outTradeNo(options, index))"}"#
                token = appTokens[index % appTokens.count]
            }
            requests.append(("POST /v1/orders HTTP/1.1\r\nHost: \(host)\r\nAuthorization: Bearer \(token)\r\n"
                + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body).utf8)
        }
        // 201 with the prepay_id and the signed app parameters: the order went through unifiedorder.
        let prepay = Array(#""prepay_id":""#.utf8)
        let appParams = Array(#""app_params":{"#.utf8)
        let outcome = try generator.run(requests) { status, body in
            status == 201 && contains(body, prepay) && contains(body, appParams)
        }
        try Result(outcome, name: options.token == "client" ? "create" : "create-\(options.token)", expected: options.orders)
            .report(unit: "orders created/s (201, through unifiedorder to the simulator and the store's commit)")
    }

    private static func notify(_ options: Options) throws {
        let (generator, host) = try loadGenerator(options)
        let signer = Signer(key: APIKey(demoKey))
        let paidAt = Date()
        // Built and signed before the clock starts: the figure is the gateway's, not the builder's.
        var requests = GatewayLoadGenerator.Requests()
        for index in 0..<options.orders {
            let builder = PaymentNotifyBuilder(
                merchant: demoMerchant, outTradeNo: outTradeNo(options, index),
                transactionID: "4200" + String(format: "%024d", index), totalFee: options.amount, timeEnd: paidAt,
                nonce: "n" + String(index))
            let body = try FlatXML.encode(builder.fields(signedWith: signer, signType: .hmacSHA256, declaresSignType: false))
            requests.append(("POST /wechat/notify HTTP/1.1\r\nHost: \(host)\r\nContent-Type: text/xml\r\n"
                + "Content-Length: \(body.count)\r\n\r\n").utf8 + body)
        }
        let success = Array("<return_code><![CDATA[SUCCESS]]>".utf8)
        let outcome = try generator.run(requests) { status, body in
            status == 200 && contains(body, success)
        }
        try Result(outcome, name: "notify", expected: options.orders)
            .report(unit: "notifies settled/s (verified, committed durably before SUCCESS)")
    }

    private static func notifyV3(_ options: Options) throws {
        let (generator, host) = try loadGenerator(options)
        let signer = WeChatPaySigner(key: try RSAPrivateKey(pem: try String(contentsOfFile: options.wechatpayKey, encoding: .utf8)),
                                     serial: options.publicKeyID)
        let builder = V3NotifyBuilder(key: try APIv3Key(options.apiV3Key))
        let now = Date()
        // Built, sealed and signed before the clock starts (within the 5 minutes a signature lives).
        var requests = GatewayLoadGenerator.Requests()
        for index in 0..<options.orders {
            let transaction = V3Transaction(
                appID: demoMerchant.appID, mchID: demoMerchant.mchID, outTradeNo: outTradeNo(options, index),
                transactionID: "4200" + String(format: "%024d", index), tradeType: "APP", tradeState: .success,
                tradeStateDescription: "支付成功", bankType: "OTHERS", successTime: RFC3339.format(now), payerOpenID: "oBench",
                total: options.amount, payerTotal: options.amount)
            let body = builder.body(.payment(transaction), id: "bench-\(index)", createTime: RFC3339.format(now),
                                    nonce: String(format: "%012d", index))
            let signed = signer.sign(body, timestamp: Int64(now.timeIntervalSince1970), nonce: "n" + String(index))
            let headers = signed.headers.sorted { $0.key < $1.key }.map { "\($0.key): \($0.value)\r\n" }.joined()
            requests.append(("POST /wechat/v3/notify HTTP/1.1\r\nHost: \(host)\r\nContent-Type: application/json\r\n"
                + headers + "Content-Length: \(body.count)\r\n\r\n").utf8 + body)
        }
        let outcome = try generator.run(requests) { status, _ in status == 204 }
        try Result(outcome, name: "notify-v3", expected: options.orders)
            .report(unit: "v3 notifies settled/s (verified, decrypted, committed durably before 204)")
    }

    // MARK: Driving

    struct Result: Sendable {
        var name = ""
        var completed = 0
        var latenciesMicroseconds: [Int] = []
        var seconds = 0.0
        var clientCPUSeconds = 0.0

        /// Fails unless every request was answered as expected within the timeout.
        init(_ outcome: GatewayLoadGenerator.Outcome, name: String, expected: Int) throws {
            guard outcome.failures == 0, outcome.completed == expected else {
                throw Failed(description: "\(outcome.completed) of \(expected) answered as expected, "
                    + "\(outcome.failures) failed; first: \(outcome.firstFailure ?? "(timed out)")")
            }
            self.name = name
            completed = outcome.completed
            latenciesMicroseconds = outcome.latenciesMicroseconds
            seconds = outcome.seconds
            clientCPUSeconds = outcome.cpuSeconds
        }

        func report(unit: String) {
            let sorted = latenciesMicroseconds.sorted()
            func percentile(_ p: Double) -> Int { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
            print("\(name): \(completed) in \(String(format: "%.3f", seconds)) s = \(Int(Double(completed) / seconds)) \(unit)")
            print("\(name): load generator CPU \(String(format: "%.1f", clientCPUSeconds * 1e6 / Double(max(completed, 1)))) µs per request")
            print("\(name): latency p50 \(percentile(0.5)) µs, p99 \(percentile(0.99)) µs, max \(sorted.last ?? 0) µs")
            print("RESULT \(name) \(Int(Double(completed) / seconds))")
            print("RESULT \(name)-client-us \(String(format: "%.1f", clientCPUSeconds * 1e6 / Double(max(completed, 1))))")
        }
    }

    struct Failed: Error, CustomStringConvertible {
        var description: String
    }

    /// `--url` names one instance, or several separated by commas (same host): the connections are
    /// spread over them.
    static func loadGenerator(_ options: Options) throws -> (GatewayLoadGenerator, host: String) {
        var host = ""
        var ports: [UInt16] = []
        for base in options.url.split(separator: ",") {
            guard let parsed = URL(string: String(base)), let name = parsed.host, let port = parsed.port,
                  parsed.scheme == "http", host.isEmpty || host == name
            else { throw Failed(description: "--url must be http://IPv4:PORT[,http://IPv4:PORT…] on one host") }
            host = name
            ports.append(UInt16(port))
        }
        guard !ports.isEmpty else { throw Failed(description: "--url is empty") }
        return (GatewayLoadGenerator(host: host, ports: ports, connections: options.concurrency,
                                     timeout: options.timeout), host)
    }

    static func contains(_ body: UnsafeRawBufferPointer, _ needle: [UInt8]) -> Bool {
        GatewayResponseFraming.find(needle, in: body, from: 0) != nil
    }

    // MARK: Arguments

    private static func usage() -> Int32 {
        print("usage: wxpay-bench gateway create|channels|notify|wait|wakeup --url BASE[,BASE…] [--orders N] [--prefix P] [--concurrency C]")
        print("                                              [--from I] [--pid PID] [--timeout S] [--hold S]")
        print("                                              [--token client|client-catalog|app] [--users N]")
        print("                                              [--notify-url BASE] [--batch N]   (wakeup)")
        print("                                              [--rounds R]   (channels)")
        print("                                              --wechatpay-key FILE --public-key-id ID --api-v3-key K   (notify-v3)")
        return 64
    }

    private static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            let value = iterator.next() ?? ""
            switch argument {
            case "--url": options.url = value
            case "--notify-url": options.notifyURL = value
            case "--batch": options.batch = Int(value) ?? 0
            case "--orders": options.orders = Int(value) ?? 0
            case "--concurrency": options.concurrency = Int(value) ?? 0
            case "--prefix": options.prefix = value
            case "--from": options.from = Int(value) ?? -1
            case "--pid": options.pid = Int32(value) ?? 0
            case "--timeout": options.timeout = Double(value) ?? 0
            case "--hold": options.hold = Double(value) ?? -1
            case "--token": options.token = value
            case "--users": options.users = Int(value) ?? 0
            case "--wechatpay-key": options.wechatpayKey = value
            case "--public-key-id": options.publicKeyID = value
            case "--api-v3-key": options.apiV3Key = value
            case "--rounds": options.rounds = Int(value) ?? 0
            default: throw Failed(description: "unknown argument \(argument)")
            }
        }
        guard !options.url.isEmpty, options.orders > 0, options.concurrency > 0, options.from >= 0,
              options.timeout > 0, options.hold >= 0, ["client", "client-catalog", "app"].contains(options.token), options.users > 0,
              (1...20).contains(options.rounds)
        else { throw Failed(description: "bad arguments") }
        return options
    }
}

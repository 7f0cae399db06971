// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import HTTP
import Synchronization
import WeChatPay

/// `wxpay-bench gateway <phase> --url BASE [options]`: load phases against a running gateway in
/// demo mode (scripts/bench-gateway starts it, runs the phases in order and stops it).
///
/// - `create --orders N --prefix P [--concurrency C]`: N `POST /v1/orders`, out_trade_no `P` + index,
///   each answered 201; prints orders/s.
/// - `notify --orders N --prefix P [--concurrency C]`: signed payment notifies for the first N of
///   those orders, built before the clock starts; each answered SUCCESS; prints notifies/s.
/// - `wait --orders N --prefix P --pid PID [--from I]`: N raw connections, each holding
///   `GET /v1/orders/{P+I}?wait=30`; once the gateway's `wxpay_waits_open` gauge shows them all,
///   prints the gateway's RSS, then closes the connections.
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
    }

    static let clientToken = "demo-client-token"
    static let demoKey = "192006250b4c09247ec02edce69f6a2d"
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
            case "create": try await create(options)
            case "notify": try await notify(options)
            case "wait": try await GatewayWaitLoad.run(options)
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

    private static func create(_ options: Options) async throws {
        let url = options.url + "/v1/orders"
        let result = try await drive(options, name: "create") { index in
            let body = #"{"amount":\#(options.amount),"description":"bench order","client_ip":"203.0.113.7","out_trade_no":"\#(outTradeNo(options, index))"}"#
            return HTTPClientRequest(
                method: .post, url: url,
                headers: ["Authorization": "Bearer \(clientToken)", "Content-Type": "application/json"],
                body: Array(body.utf8))
        } check: { response in
            response.status == 201 && response.body.count > 100
        }
        result.report(unit: "orders created/s (201, through unifiedorder to the simulator and the SQLite commit)")
    }

    private static func notify(_ options: Options) async throws {
        let signer = Signer(key: APIKey(demoKey))
        let paidAt = Date()
        // Built and signed before the clock starts: the figure is the gateway's, not the builder's.
        let bodies: [[UInt8]] = try (0..<options.orders).map { index in
            let builder = PaymentNotifyBuilder(
                merchant: demoMerchant, outTradeNo: outTradeNo(options, index),
                transactionID: "4200" + String(format: "%024d", index), totalFee: options.amount, timeEnd: paidAt,
                nonce: "n" + String(index))
            return try FlatXML.encode(builder.fields(signedWith: signer, signType: .hmacSHA256, declaresSignType: false))
        }
        let url = options.url + "/wechat/notify"
        let success = Array("<return_code><![CDATA[SUCCESS]]>".utf8)
        let result = try await drive(options, name: "notify") { index in
            HTTPClientRequest(method: .post, url: url, headers: ["Content-Type": "text/xml"], body: bodies[index])
        } check: { response in
            response.status == 200 && response.body.firstRange(of: success) != nil
        }
        result.report(unit: "notifies settled/s (verified, committed durably before SUCCESS)")
    }

    // MARK: Driving

    struct Result: Sendable {
        var name = ""
        var completed = 0
        var failures = 0
        var firstFailure: String?
        var latenciesMicroseconds: [Int] = []
        var seconds = 0.0
        var clientCPUSeconds = 0.0

        func report(unit: String) {
            let sorted = latenciesMicroseconds.sorted()
            func percentile(_ p: Double) -> Int { sorted.isEmpty ? 0 : sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
            print("\(name): \(completed) in \(String(format: "%.3f", seconds)) s = \(Int(Double(completed) / seconds)) \(unit)")
            print("\(name): load generator CPU \(Int(clientCPUSeconds * 1e6 / Double(max(completed, 1)))) µs per request")
            print("\(name): latency p50 \(percentile(0.5)) µs, p99 \(percentile(0.99)) µs, max \(sorted.last ?? 0) µs")
            print("RESULT \(name) \(Int(Double(completed) / seconds))")
        }
    }

    struct Failed: Error, CustomStringConvertible {
        var description: String
    }

    /// Sends requests 0..<orders from `concurrency` tasks sharing one keep-alive client; fails if
    /// any answer does not pass `check` or the whole run exceeds the timeout.
    private static func drive(
        _ options: Options, name: String, request: @escaping @Sendable (Int) -> HTTPClientRequest,
        check: @escaping @Sendable (HTTPClientResponse) -> Bool
    ) async throws -> Result {
        let client = try HTTPClient(configuration: .init(connectionCacheSize: max(64, options.concurrency)))
        let tickets = Tickets()
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(options.timeout)
        let started = clock.now
        let cpuBefore = processCPUSeconds()
        var result = await withTaskGroup(of: Result.self) { group in
            for _ in 0..<options.concurrency {
                group.addTask {
                    var local = Result()
                    while clock.now < deadline {
                        let index = tickets.next()
                        guard index < options.orders else { break }
                        let begin = clock.now
                        do {
                            let response = try await client.execute(request(index))
                            if check(response) {
                                local.completed += 1
                            } else {
                                local.failures += 1
                                local.firstFailure = local.firstFailure
                                    ?? "#\(index): HTTP \(response.status) \(String(decoding: response.body.prefix(200), as: UTF8.self))"
                            }
                        } catch {
                            local.failures += 1
                            local.firstFailure = local.firstFailure ?? "#\(index): \(error)"
                        }
                        let (s, atto) = (clock.now - begin).components
                        local.latenciesMicroseconds.append(Int(s) * 1_000_000 + Int(atto / 1_000_000_000_000))
                    }
                    return local
                }
            }
            var merged = Result(name: name)
            for await local in group {
                merged.completed += local.completed
                merged.failures += local.failures
                merged.firstFailure = merged.firstFailure ?? local.firstFailure
                merged.latenciesMicroseconds += local.latenciesMicroseconds
            }
            return merged
        }
        let (s, atto) = (clock.now - started).components
        result.seconds = Double(s) + Double(atto) / 1e18
        result.clientCPUSeconds = processCPUSeconds() - cpuBefore
        await client.shutdown()
        guard result.failures == 0, result.completed == options.orders else {
            throw Failed(description: "\(result.completed) of \(options.orders) answered as expected, "
                + "\(result.failures) failed; first: \(result.firstFailure ?? "(timed out)")")
        }
        return result
    }

    /// User + system time of this process: the load generator shares the 2 cores with the gateway.
    private static func processCPUSeconds() -> Double {
        var usage = rusage()
        getrusage(RUSAGE_SELF.rawValue, &usage)
        func seconds(_ time: timeval) -> Double { Double(time.tv_sec) + Double(time.tv_usec) / 1e6 }
        return seconds(usage.ru_utime) + seconds(usage.ru_stime)
    }

    /// Hands out request numbers to the tasks; an Atomic must live in a class to be shared.
    private final class Tickets: Sendable {
        private let value = Atomic<Int>(0)
        func next() -> Int { value.wrappingAdd(1, ordering: .relaxed).oldValue }
    }

    // MARK: Arguments

    private static func usage() -> Int32 {
        print("usage: wxpay-bench gateway create|notify|wait --url BASE [--orders N] [--prefix P] [--concurrency C]")
        print("                                              [--from I] [--pid PID] [--timeout S] [--hold S]")
        return 64
    }

    private static func parse(_ arguments: [String]) throws -> Options {
        var options = Options()
        var iterator = arguments.makeIterator()
        while let argument = iterator.next() {
            let value = iterator.next() ?? ""
            switch argument {
            case "--url": options.url = value
            case "--orders": options.orders = Int(value) ?? 0
            case "--concurrency": options.concurrency = Int(value) ?? 0
            case "--prefix": options.prefix = value
            case "--from": options.from = Int(value) ?? -1
            case "--pid": options.pid = Int32(value) ?? 0
            case "--timeout": options.timeout = Double(value) ?? 0
            case "--hold": options.hold = Double(value) ?? -1
            default: throw Failed(description: "unknown argument \(argument)")
            }
        }
        guard !options.url.isEmpty, options.orders > 0, options.concurrency > 0, options.from >= 0,
              options.timeout > 0, options.hold >= 0
        else { throw Failed(description: "bad arguments") }
        return options
    }
}

// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import Glibc

/// `wxpay-bench gateway channels`: what a JSAPI create (mini program, official account) costs
/// against an APP create on the same gateway, in one run. A JSAPI create carries the payer's
/// openid to WeChat and answers `jsapi_params` signed over five fields instead of `app_params`
/// over six; the bar (BENCHMARKS.md) is JSAPI ≥ 0.95 × APP.
///
/// On a shared machine the load moves between phases, so the two kinds alternate in rounds and
/// only neighbours compare: round r runs APP then JSAPI when r is even, JSAPI then APP when odd,
/// each with `--orders` fresh out_trade_nos, and each round gives its own ratios. With the
/// gateway's `--pid`, the gateway's CPU (user + system, all threads) per create is read from
/// /proc around each phase: the fairer figure when other processes take the cores.
enum GatewayChannelBench {
    struct Phase {
        var name: String
        var app: WeChatApp
        /// The create's extra body fields (JSAPI: the payer's openid under the app's id).
        var extra: (Int) -> String
        /// What a 201 for this kind must hold besides the prepay_id.
        var answer: [UInt8]
    }

    struct Measured {
        var perSecond: Double
        var gatewayMicroseconds: Double?
    }

    static func run(_ options: GatewayBench.Options) throws {
        guard let android = WeChatApps.demo.first(where: { $0.kind == .app }),
              let mini = WeChatApps.demo.first(where: { $0.kind == .miniprogram })
        else { throw GatewayBench.Failed(description: "demo mode has no app of kind app and miniprogram") }
        // The simulator's openid rule: "o" and the app id's last six characters, then the user.
        let openIDPrefix = "o" + String(mini.appID.suffix(6))
        let app = Phase(name: "APP", app: android, extra: { _ in "" }, answer: Array(#""app_params":{"#.utf8))
        let jsapi = Phase(name: "JSAPI", app: mini, extra: { #","openid":"\#(openIDPrefix)bench\#($0 % 1000)""# },
                          answer: Array(#""jsapi_params":{"#.utf8))
        print("channels: \(options.rounds) rounds of \(options.orders) APP (\(android.name)) and \(options.orders) "
            + "JSAPI (\(mini.name)) creates, \(options.concurrency) concurrent, alternating which goes first")
        var rateRatios: [Double] = []
        var cpuRatios: [Double] = []
        for round in 0..<options.rounds {
            var results: [String: Measured] = [:]
            for phase in round % 2 == 0 ? [app, jsapi] : [jsapi, app] {
                results[phase.name] = try measure(phase, round: round, options)
            }
            guard let a = results["APP"], let j = results["JSAPI"] else { continue }
            let rateRatio = j.perSecond / a.perSecond
            rateRatios.append(rateRatio)
            var line = "round \(round + 1): APP \(Int(a.perSecond))/s, JSAPI \(Int(j.perSecond))/s, JSAPI/APP "
                + String(format: "%.2fx", rateRatio)
            if let aCPU = a.gatewayMicroseconds, let jCPU = j.gatewayMicroseconds, jCPU > 0 {
                cpuRatios.append(aCPU / jCPU)
                line += String(format: "; gateway CPU per create APP %.0f µs, JSAPI %.0f µs, JSAPI/APP per CPU %.2fx",
                               aCPU, jCPU, aCPU / jCPU)
            }
            print(line + "  (load \(loadAverage()))")
        }
        print(String(format: "median JSAPI/APP creates/s: %.2fx (bar >= 0.95x)", median(rateRatios)))
        print(String(format: "RESULT channels-ratio %.3f", median(rateRatios)))
        if !cpuRatios.isEmpty {
            print(String(format: "median JSAPI/APP creates per gateway CPU-second: %.2fx", median(cpuRatios)))
            print(String(format: "RESULT channels-cpu-ratio %.3f", median(cpuRatios)))
        }
    }

    private static func measure(_ phase: Phase, round: Int, _ options: GatewayBench.Options) throws -> Measured {
        let (generator, host) = try GatewayBench.loadGenerator(options)
        var requests = GatewayLoadGenerator.Requests()
        let prefix = options.prefix + (phase.app.kind == .app ? "a" : "j") + String(round) + "x"
        for index in 0..<options.orders {
            let body = #"{"amount":\#(options.amount),"description":"bench order","client_ip":"203.0.113.7","#
                + #""out_trade_no":"\#(prefix)\#(index)","app":"\#(phase.app.name)"\#(phase.extra(index))}"#
            requests.append(("POST /v1/orders HTTP/1.1\r\nHost: \(host)\r\nAuthorization: Bearer \(GatewayBench.clientToken)\r\n"
                + "Content-Type: application/json\r\nContent-Length: \(body.utf8.count)\r\n\r\n" + body).utf8)
        }
        let prepay = Array(#""prepay_id":""#.utf8)
        let before = gatewayCPUTicks(options.pid)
        let outcome = try generator.run(requests) { status, body in
            status == 201 && GatewayBench.contains(body, prepay) && GatewayBench.contains(body, phase.answer)
        }
        let after = gatewayCPUTicks(options.pid)
        let result = try GatewayBench.Result(outcome, name: "create-" + phase.name.lowercased(), expected: options.orders)
        result.report(unit: "\(phase.name) orders created/s")
        var cpu: Double?
        if let before, let after {
            cpu = Double(after - before) / Double(sysconf(Int32(_SC_CLK_TCK))) * 1e6 / Double(options.orders)
        }
        return Measured(perSecond: Double(result.completed) / result.seconds, gatewayMicroseconds: cpu)
    }

    /// The process's user + system clock ticks (all threads), from /proc/PID/stat; nil without a pid.
    private static func gatewayCPUTicks(_ pid: Int32) -> Int? {
        guard pid > 0, let stat = try? String(contentsOfFile: "/proc/\(pid)/stat", encoding: .utf8),
              let close = stat.lastIndex(of: ")") else { return nil }
        // After the command's closing parenthesis: state is field 3, utime 14 and stime 15.
        let fields = stat[stat.index(after: close)...].split(separator: " ")
        guard fields.count > 12, let user = Int(fields[11]), let system = Int(fields[12]) else { return nil }
        return user + system
    }

    private static func loadAverage() -> String {
        ((try? String(contentsOfFile: "/proc/loadavg", encoding: .utf8)) ?? "").split(separator: " ").prefix(3).joined(separator: " ")
    }

    private static func median(_ values: [Double]) -> Double {
        let sorted = values.sorted()
        guard !sorted.isEmpty else { return 0 }
        return sorted.count % 2 == 1 ? sorted[sorted.count / 2] : (sorted[sorted.count / 2 - 1] + sorted[sorted.count / 2]) / 2
    }
}

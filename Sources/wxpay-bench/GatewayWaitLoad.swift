// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import HTTP

/// The `wait` phase of `wxpay-bench gateway`: many long-polls held at once on raw sockets (one
/// connection each, as many apps polling would), and the gateway's memory while it holds them.
///
/// Raw sockets rather than `HTTPClient`: the point is 10,000 open requests that nobody reads
/// until the end, which a client with a connection cache and timeouts is not built for.
enum GatewayWaitLoad {
    static func run(_ options: GatewayBench.Options) async throws {
        guard options.pid > 0 else { throw GatewayBench.Failed(description: "wait needs --pid of the gateway") }
        try raiseFileLimit(to: options.orders + 256)
        let (host, port) = try address(of: options.url)
        let metricsClient = try HTTPClient()
        let clock = ContinuousClock()
        let deadline = clock.now + .seconds(min(options.timeout, 25))
        let before = try memory(of: options.pid)
        let baselineWaits = try await openWaits(metricsClient, options.url)

        var sockets: [Int32] = []
        sockets.reserveCapacity(options.orders)
        defer { for fd in sockets { close(fd) } }
        let started = clock.now
        for index in 0..<options.orders {
            guard clock.now < deadline else { throw GatewayBench.Failed(description: "opening timed out at \(index)") }
            let fd = try connect(host: host, port: port)
            sockets.append(fd)
            let request = "GET /v1/orders/\(GatewayBench.outTradeNo(options, options.from + index))?wait=30 HTTP/1.1\r\n"
                + "Host: \(host)\r\nAuthorization: Bearer \(GatewayBench.clientToken)\r\n\r\n"
            let sent = request.utf8CString.withUnsafeBufferPointer { send(fd, $0.baseAddress, $0.count - 1, 0) }
            guard sent == request.utf8.count else { throw GatewayBench.Failed(description: "send failed at \(index)") }
        }
        let opened = clock.now - started

        // Held means counted by the gateway itself: its gauge of waits open.
        var held = 0
        while clock.now < deadline {
            held = try await openWaits(metricsClient, options.url) - baselineWaits
            if held >= options.orders { break }
            try await Task.sleep(for: .milliseconds(200))
        }
        guard held >= options.orders else {
            throw GatewayBench.Failed(description: "only \(held) of \(options.orders) waits held before the deadline")
        }
        // Let the first orderquery of every wait and its writes settle before sampling memory.
        try await Task.sleep(for: .seconds(2))
        let during = try memory(of: options.pid)
        let answeredEarly = sockets.filter { fd in
            var byte: UInt8 = 0
            return recv(fd, &byte, 1, Int32(MSG_PEEK | MSG_DONTWAIT)) > 0
        }.count
        let stillHeld = try await openWaits(metricsClient, options.url) - baselineWaits
        guard answeredEarly == 0, stillHeld >= options.orders else {
            throw GatewayBench.Failed(description: "\(answeredEarly) waits were answered early; \(stillHeld) held")
        }
        let mib = { (kib: Int) in String(format: "%.1f MiB", Double(kib) / 1024) }
        let perWait = { (kib: Int) in Int(Double((kib - before.rss) * 1024) / Double(options.orders)) }
        print("wait: \(options.orders) connections opened in \(opened), all \(held) held by the gateway (wxpay_waits_open)")
        print("wait: gateway RSS \(mib(before.rss)) before, \(mib(during.rss)) while holding them (peak \(mib(during.peak)));"
            + " \(perWait(during.rss)) bytes per wait; gateway threads \(before.threads) before, \(during.threads) holding")
        print("RESULT wait-rss-mib \(String(format: "%.1f", Double(during.rss) / 1024))")
        print("RESULT wait-rss-before-mib \(String(format: "%.1f", Double(before.rss) / 1024))")
        // Sampled again later, still holding every wait: the first sample includes what the burst
        // of 10,000 arrivals left behind, the second what holding them costs once it has settled.
        if options.hold > 0 {
            try await Task.sleep(for: .seconds(min(options.hold, 20)))
            let later = try memory(of: options.pid)
            let held = try await openWaits(metricsClient, options.url) - baselineWaits
            print("wait: \(Int(min(options.hold, 20))) s later, \(held) still held: gateway RSS \(mib(later.rss)),"
                + " \(perWait(later.rss)) bytes per wait; gateway threads \(later.threads)")
            print("RESULT wait-rss-later-mib \(String(format: "%.1f", Double(later.rss) / 1024))")
        }
        await metricsClient.shutdown()
    }

    /// The gateway's `wxpay_waits_open` now (this benchmark's and the wake-up benchmark's).
    static func openWaits(_ client: HTTPClient, _ base: String) async throws -> Int {
        let response = try await client.execute(HTTPClientRequest(method: .get, url: base + "/metrics"))
        let text = String(decoding: response.body, as: UTF8.self)
        guard let line = text.split(separator: "\n").first(where: { $0.hasPrefix("wxpay_waits_open ") }),
              let value = Double(line.split(separator: " ").last ?? "")
        else { throw GatewayBench.Failed(description: "no wxpay_waits_open in /metrics") }
        return Int(value)
    }

    /// VmRSS and VmHWM of a process, in KiB, and its thread count (a held wait must not cost one).
    private static func memory(of pid: Int32) throws -> (rss: Int, peak: Int, threads: Int) {
        guard let status = try? String(contentsOfFile: "/proc/\(pid)/status", encoding: .utf8) else {
            throw GatewayBench.Failed(description: "cannot read /proc/\(pid)/status")
        }
        func field(_ name: String) -> Int {
            guard let line = status.split(separator: "\n").first(where: { $0.hasPrefix(name + ":") }) else { return 0 }
            return Int(line.split(whereSeparator: { $0 == " " || $0 == "\t" }).dropFirst().first ?? "") ?? 0
        }
        return (field("VmRSS"), field("VmHWM"), field("Threads"))
    }

    private static func raiseFileLimit(to wanted: Int) throws {
        var limit = rlimit()
        getrlimit(RLIMIT_NOFILE_VALUE, &limit)
        if limit.rlim_cur < rlim_t(wanted) {
            limit.rlim_cur = min(limit.rlim_max, rlim_t(wanted))
            setrlimit(RLIMIT_NOFILE_VALUE, &limit)
        }
        guard limit.rlim_cur >= rlim_t(wanted) else {
            throw GatewayBench.Failed(description: "RLIMIT_NOFILE is \(limit.rlim_cur), \(wanted) needed (ulimit -n)")
        }
    }

    // Glibc imports RLIMIT_NOFILE as an enum case on some versions and an Int32 on others.
    private static var RLIMIT_NOFILE_VALUE: __rlimit_resource_t { __rlimit_resource_t(RLIMIT_NOFILE.rawValue) }

    private static func address(of url: String) throws -> (String, UInt16) {
        guard let parsed = URL(string: url), let host = parsed.host, let port = parsed.port else {
            throw GatewayBench.Failed(description: "--url must be http://HOST:PORT")
        }
        return (host, UInt16(port))
    }

    private static func connect(host: String, port: UInt16) throws -> Int32 {
        let fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw GatewayBench.Failed(description: "socket: errno \(errno)") }
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        }
        guard result == 0 else {
            let code = errno
            close(fd)
            throw GatewayBench.Failed(description: "connect: errno \(code)")
        }
        return fd
    }
}

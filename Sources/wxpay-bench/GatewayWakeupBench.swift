// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc
import HTTP
import WeChatPay

/// The `wakeup` phase of `wxpay-bench gateway`: how soon a `wait` held on one gateway instance
/// answers once another instance has settled its order (the cross-instance wake-up through the
/// database's LISTEN/NOTIFY).
///
/// In batches of `--batch`, that many unpaid orders each get a raw connection holding
/// `GET /v1/orders/{id}?wait=30` on `--url` (instance A), counted by A's own `wxpay_waits_open`
/// gauge. Then, one order at a time, its signed payment notify goes to `--notify-url` (instance
/// B); the latency is from B's SUCCESS reply (the settlement committed) to A's answer to the wait
/// (SUCCESS). One at a time, so each figure is one wake-up's path, not a queue's.
enum GatewayWakeupBench {
    static func run(_ options: GatewayBench.Options) async throws {
        guard !options.notifyURL.isEmpty, options.batch > 0 else {
            throw GatewayBench.Failed(description: "wakeup needs --notify-url and a --batch of at least 1")
        }
        let (waitHost, waitPort) = try address(options.url)
        let (notifyHost, notifyPort) = try address(options.notifyURL)
        let metrics = try HTTPClient()
        defer { Task { await metrics.shutdown() } }
        let signer = Signer(key: APIKey(GatewayBench.demoKey))
        let notify = try RawConnection(host: notifyHost, port: notifyPort)
        defer { notify.close() }
        let success = Array(#""state":"SUCCESS""#.utf8)
        let acknowledged = Array("<return_code><![CDATA[SUCCESS]]>".utf8)
        var fromSettled: [Double] = []
        var fromSent: [Double] = []
        var index = options.from
        let end = options.from + options.orders
        while index < end {
            let batch = Array(index..<min(end, index + options.batch))
            let baseline = try await GatewayWaitLoad.openWaits(metrics, options.url)
            var waits: [RawConnection] = []
            defer { waits.forEach { $0.close() } }
            for order in batch {
                let wait = try RawConnection(host: waitHost, port: waitPort)
                try wait.send(Array(("GET /v1/orders/\(GatewayBench.outTradeNo(options, order))?wait=30 HTTP/1.1\r\n"
                    + "Host: \(waitHost)\r\nAuthorization: Bearer \(GatewayBench.clientToken)\r\n\r\n").utf8))
                waits.append(wait)
            }
            let deadline = ContinuousClock.now + .seconds(options.timeout)
            while try await GatewayWaitLoad.openWaits(metrics, options.url) - baseline < batch.count {
                guard ContinuousClock.now < deadline else { throw GatewayBench.Failed(description: "the waits were not all held") }
                try await Task.sleep(for: .milliseconds(50))
            }
            // The first orderquery of each wait, and its writes, settle before the clock starts.
            try await Task.sleep(for: .seconds(1))
            for (position, order) in batch.enumerated() {
                let builder = PaymentNotifyBuilder(
                    merchant: GatewayBench.demoMerchant, outTradeNo: GatewayBench.outTradeNo(options, order),
                    transactionID: "4201" + String(format: "%024d", order), totalFee: options.amount, timeEnd: Date(),
                    nonce: "w" + String(order))
                let body = try FlatXML.encode(builder.fields(signedWith: signer, signType: .hmacSHA256, declaresSignType: false))
                let request = Array(("POST /wechat/notify HTTP/1.1\r\nHost: \(notifyHost)\r\nContent-Type: text/xml\r\n"
                    + "Content-Length: \(body.count)\r\n\r\n").utf8) + body
                let sent = ContinuousClock.now
                try notify.send(request)
                guard try notify.receive(until: acknowledged, within: .seconds(options.timeout)) else {
                    throw GatewayBench.Failed(description: "notify for order \(order) was not acknowledged")
                }
                let settled = ContinuousClock.now
                guard try waits[position].receive(until: success, within: .seconds(options.timeout)) else {
                    throw GatewayBench.Failed(description: "the wait on order \(order) was not answered SUCCESS")
                }
                let answered = ContinuousClock.now
                fromSettled.append(milliseconds(answered - settled))
                fromSent.append(milliseconds(answered - sent))
                // The notify connection is keep-alive; its reply was read whole above.
            }
            index += batch.count
        }
        func percentiles(_ values: [Double]) -> String {
            let sorted = values.sorted()
            func at(_ p: Double) -> Double { sorted[min(sorted.count - 1, Int(Double(sorted.count) * p))] }
            return String(format: "p50 %.1f ms, p95 %.1f ms, p99 %.1f ms, max %.1f ms", at(0.5), at(0.95), at(0.99),
                          sorted.last ?? 0)
        }
        print("wakeup: \(fromSettled.count) waits held on \(options.url), each settled by a notify to \(options.notifyURL)")
        print("wakeup: from the notify's SUCCESS to the wait's answer: \(percentiles(fromSettled))")
        print("wakeup: from sending the notify to the wait's answer:   \(percentiles(fromSent))")
        let sorted = fromSettled.sorted()
        print("RESULT wakeup-p50-ms \(String(format: "%.1f", sorted[sorted.count / 2]))")
        print("RESULT wakeup-p95-ms \(String(format: "%.1f", sorted[min(sorted.count - 1, sorted.count * 95 / 100)]))")
        print("RESULT wakeup-p99-ms \(String(format: "%.1f", sorted[min(sorted.count - 1, sorted.count * 99 / 100)]))")
    }

    private static func milliseconds(_ duration: Duration) -> Double {
        Double(duration.components.seconds) * 1000 + Double(duration.components.attoseconds) * 1e-15
    }

    private static func address(_ url: String) throws -> (String, UInt16) {
        guard let parsed = URL(string: url), let host = parsed.host, let port = parsed.port else {
            throw GatewayBench.Failed(description: "a URL must be http://IPv4:PORT")
        }
        return (host, UInt16(port))
    }
}

/// One blocking TCP connection: send bytes, read until a needle shows up (bounded by poll).
private final class RawConnection {
    private let fd: Int32
    private var received: [UInt8] = []

    init(host: String, port: UInt16) throws {
        fd = socket(AF_INET, Int32(SOCK_STREAM.rawValue), 0)
        guard fd >= 0 else { throw GatewayBench.Failed(description: "socket: errno \(errno)") }
        var one: Int32 = 1
        setsockopt(fd, Int32(IPPROTO_TCP), TCP_NODELAY, &one, socklen_t(MemoryLayout<Int32>.size))
        var address = sockaddr_in()
        address.sin_family = sa_family_t(AF_INET)
        address.sin_port = port.bigEndian
        inet_pton(AF_INET, host, &address.sin_addr)
        let result = withUnsafePointer(to: &address) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glibc.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard result == 0 else {
            Glibc.close(fd)
            throw GatewayBench.Failed(description: "connect to \(host):\(port): errno \(errno)")
        }
    }

    func send(_ bytes: [UInt8]) throws {
        var offset = 0
        while offset < bytes.count {
            let sent = bytes[offset...].withUnsafeBytes { Glibc.send(fd, $0.baseAddress, $0.count, Int32(MSG_NOSIGNAL)) }
            guard sent > 0 else { throw GatewayBench.Failed(description: "send: errno \(errno)") }
            offset += sent
        }
    }

    /// Reads until `needle` appears in what arrived since the last match (then forgets it all).
    func receive(until needle: [UInt8], within timeout: Duration) throws -> Bool {
        let deadline = ContinuousClock.now + timeout
        var buffer = [UInt8](repeating: 0, count: 16384)
        while true {
            if let found = find(needle) {
                received.removeSubrange(..<found)
                received.removeAll(keepingCapacity: true)
                return true
            }
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            var descriptor = pollfd(fd: fd, events: Int16(POLLIN), revents: 0)
            let milliseconds = Int32(min(1000, left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1))
            guard poll(&descriptor, 1, milliseconds) >= 0 else { throw GatewayBench.Failed(description: "poll: errno \(errno)") }
            if descriptor.revents == 0 { continue }
            let count = buffer.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
            guard count > 0 else { return false }
            received.append(contentsOf: buffer[0..<count])
        }
    }

    private func find(_ needle: [UInt8]) -> Int? {
        guard received.count >= needle.count else { return nil }
        for start in 0...(received.count - needle.count) where received[start] == needle[0] {
            if Array(received[start..<start + needle.count]) == needle { return start + needle.count }
        }
        return nil
    }

    func close() { Glibc.close(fd) }
}

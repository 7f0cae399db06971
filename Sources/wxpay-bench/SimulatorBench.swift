// SPDX-License-Identifier: Apache-2.0
import Foundation
import WeChatPay
import WeChatPaySimulator

/// `wxpay-bench simulator [orders] [queries]`: the simulator in process, no sockets.
///
/// Creates `orders` (default 100,000) orders through `WeChatPaySimulator.handle` with signed
/// unifiedorder requests, reports the creation rate and the process RSS it holds them in, then
/// runs `queries` (default 100,000) signed orderquery requests against random orders. Requests
/// are built and signed in batches outside the timed region (so the figure is the simulator's
/// cost: XML decode, signature check, order book, signed XML answer), and every answer is checked
/// outside it too. Single thread: the order book sits behind one mutex.
enum SimulatorBench {
    static let batchSize = 1_000

    static func run(_ arguments: [String]) throws {
        let orderCount = arguments.first.flatMap(Int.init) ?? 100_000
        let queryCount = arguments.dropFirst().first.flatMap(Int.init) ?? 100_000
        guard orderCount > 0, queryCount >= 0 else {
            print("usage: wxpay-bench simulator [orders > 0] [queries >= 0]")
            return
        }
        let configuration = SimulatorConfiguration()
        // No order is paid, so no notify is ever sent; the sender only satisfies the initialiser.
        let simulator = WeChatPaySimulator(configuration: configuration, clock: ScaledClock(),
                                           notifySender: ClosureNotifySender { _, _ in nil })
        let requests = RequestFactory(configuration: configuration)
        let rssBefore = residentSetKiB()
        print("simulator bench: \(orderCount) orders, \(queryCount) orderqueries, batches of \(batchSize), "
              + "RSS before \(rssBefore / 1024) MiB")

        let creation = try timeBatches(total: orderCount, simulator: simulator, path: "/pay/unifiedorder",
                                       build: { try requests.unifiedOrder(index: $0) },
                                       check: { fields, _ in fields["result_code"] == "SUCCESS" && fields["prepay_id"] != nil })
        let rssAfter = residentSetKiB()
        report("unifiedorder (create)", creation)
        print("orders held: \(simulator.orderCount); RSS after \(rssAfter / 1024) MiB "
              + "(+\(formatted(Double(rssAfter - rssBefore) / 1024)) MiB, "
              + "\(formatted(Double(rssAfter - rssBefore) * 1024 / Double(orderCount), decimals: 0)) B per order, "
              + "including the nonce and request logs the simulator keeps)")

        guard queryCount > 0 else { return }
        var random = SeededRandom(seed: 42)
        let targets = (0..<queryCount).map { _ in Int(random.next() % UInt64(orderCount)) }
        let query = try timeBatches(total: queryCount, simulator: simulator, path: "/pay/orderquery",
                                    build: { try requests.orderQuery(index: targets[$0], nonce: $0) },
                                    check: { fields, index in
                                        fields["trade_state"] == "NOTPAY"
                                            && fields["out_trade_no"] == RequestFactory.outTradeNo(targets[index])
                                    })
        report("orderquery (random order)", query)
        print("RSS at the end \(residentSetKiB() / 1024) MiB")
    }

    struct Measured {
        var count: Int
        var duration: Duration
        var requestBytes: Int
        var responseBytes: Int
    }

    /// Builds each batch, times only `handle` over it, then checks every answer (signature included).
    private static func timeBatches(total: Int, simulator: WeChatPaySimulator, path: String,
                                    build: (Int) throws -> [UInt8],
                                    check: (Fields, Int) -> Bool) throws -> Measured {
        let clock = ContinuousClock()
        let signer = Signer(key: simulator.configuration.key)
        var measured = Measured(count: 0, duration: .zero, requestBytes: 0, responseBytes: 0)
        var start = 0
        while start < total {
            let end = min(start + batchSize, total)
            let bodies = try (start..<end).map(build)
            var responses: [SimulatorResponse] = []
            responses.reserveCapacity(bodies.count)
            let began = clock.now
            for body in bodies {
                responses.append(simulator.handle(SimulatorRequest(path: path, body: body)))
            }
            measured.duration += clock.now - began
            for (offset, response) in responses.enumerated() {
                let fields = try FlatXML.decode(response.body)
                guard response.status == 200, fields["return_code"] == "SUCCESS",
                      (try? signer.verify(fields, expected: .md5)) != nil, check(fields, start + offset) else {
                    throw BenchFailure(message: "\(path) answered an unexpected document for request \(start + offset)")
                }
                measured.requestBytes = bodies[offset].count
                measured.responseBytes = response.body.count
            }
            measured.count += responses.count
            start = end
        }
        return measured
    }

    private static func report(_ name: String, _ measured: Measured) {
        let seconds = measured.duration.seconds
        print("\(name): \(measured.count) in \(formatted(seconds * 1000)) ms, "
              + "\(formatted(Double(measured.count) / seconds / 1000)) k/s, "
              + "\(formatted(seconds / Double(measured.count) * 1e6, decimals: 2)) µs each "
              + "(request \(measured.requestBytes) B, answer \(measured.responseBytes) B)")
    }

    /// This process's resident set, from /proc/self/status (VmRSS, KiB); 0 where there is none.
    static func residentSetKiB() -> Int {
        guard let status = try? String(contentsOfFile: "/proc/self/status", encoding: .utf8) else { return 0 }
        for line in status.split(separator: "\n") where line.hasPrefix("VmRSS:") {
            return Int(line.split(separator: " ", omittingEmptySubsequences: true).dropFirst().first ?? "") ?? 0
        }
        return 0
    }

    struct BenchFailure: Error, CustomStringConvertible {
        var message: String
        var description: String { message }
    }
}

/// Signed request bodies as a merchant would send them (MD5, the envelope of `RequestEnvelope`).
private struct RequestFactory {
    let configuration: SimulatorConfiguration
    let signer: Signer

    init(configuration: SimulatorConfiguration) {
        self.configuration = configuration
        signer = Signer(key: configuration.key)
    }

    static func outTradeNo(_ index: Int) -> String { "BENCH\(index)" }

    func unifiedOrder(index: Int) throws -> [UInt8] {
        let request = UnifiedOrderRequest(
            body: "Bench-goods", outTradeNo: Self.outTradeNo(index), totalFee: 1 + index % 10_000,
            spbillCreateIP: "127.0.0.1", notifyURL: "http://127.0.0.1:9/notify", attach: "bench")
        return try signed(request.businessFields(), nonce: "c\(index)")
    }

    func orderQuery(index: Int, nonce: Int) throws -> [UInt8] {
        try signed(OrderQueryRequest(outTradeNo: Self.outTradeNo(index)).businessFields(), nonce: "q\(nonce)")
    }

    private func signed(_ business: Fields, nonce: String) throws -> [UInt8] {
        let envelope = RequestEnvelope(appID: configuration.appID, mchID: configuration.mchID, nonceStr: nonce,
                                       declaredSignType: nil)
        return try FlatXML.encode(envelope.signedFields(business: business, signer: signer))
    }
}

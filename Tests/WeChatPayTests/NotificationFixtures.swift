// SPDX-License-Identifier: Apache-2.0
import Dispatch
import ChildProcessSupport
import Foundation
import Testing
import WeChatPay

/// Merchant, key and builders shared by the notification tests.
enum NotifyFixture {
    static let merchant = MerchantIdentity(appID: "wxd930ea5d5a258f4f", mchID: "10000100")
    static let key = APIKey("192006250b4c09247ec02edce69f6a2d")
    static let signer = Signer(key: key)
    /// 2014-10-27 20:09:39 Beijing time.
    static let paidAt = Date(timeIntervalSince1970: 1_414_411_779)

    static func payment(totalFee: Int = 100, _ configure: (inout PaymentNotifyBuilder) -> Void = { _ in }) -> PaymentNotifyBuilder {
        var builder = PaymentNotifyBuilder(
            merchant: merchant, outTradeNo: "1409811653", transactionID: "1004400740201409030005092168",
            totalFee: totalFee, timeEnd: paidAt, nonce: "5d2b6c2a8db53831f7eda20af46e531c")
        configure(&builder)
        return builder
    }

    static func refund(_ configure: (inout RefundNotifyBuilder) -> Void = { _ in }) -> RefundNotifyBuilder {
        var builder = RefundNotifyBuilder(
            merchant: merchant, transactionID: "4200000215201811190261405420", outTradeNo: "1409811653",
            refundID: "50000408942018111907145868882", outRefundNo: "R1409811653", totalFee: 100,
            refundFee: 60, nonce: "TeqClE3i0mvn3DrK")
        configure(&builder)
        return builder
    }
}

/// Runs a command-line tool (openssl, gzip) for interoperability checks: the library itself never
/// starts processes. Bounded: the tool is killed after 30 seconds.
enum ExternalTool {
    struct Failure: Error, CustomStringConvertible {
        let status: Int32
        var description: String { "tool exited with status \(status)" }
    }

    /// Async, waiting without a thread, so no cooperative-pool thread is held while the tool runs.
    static func run(_ path: String, _ arguments: [String], input: [UInt8]) async throws -> [UInt8] {
        // A ChildProcess (posix_spawn): Foundation's Process.run() can crash the test process on Linux.
        let result = try await ChildProcess.run(path, arguments, environment: ProcessInfo.processInfo.environment,
                                                input: input, timeout: .seconds(30))
        guard result.status == 0 else { throw Failure(status: result.status) }
        return result.output
    }
}

/// A deterministic generator for fuzz-style tests (SplitMix64), so a failure reproduces exactly.
struct SeededGenerator: RandomNumberGenerator {
    var state: UInt64

    init(seed: UInt64) { state = seed }

    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

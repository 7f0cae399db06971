// SPDX-License-Identifier: Apache-2.0
import Foundation
import Lifecycle
import Observability

/// Asks the App Store's Get Refund History once a day (the first run a few minutes after start)
/// for refunds whose notification never arrived (`IAPService.checkRefundHistory`). On whenever the
/// Server API key is configured. Several gateways may each run it: applying a refund is one
/// conditional transition, so a second run only asks again.
public final class DailyAppStoreRefundCheck: Service, CustomStringConvertible {
    private let iap: IAPService
    private let firstRunAfter: TimeInterval
    private let interval: TimeInterval

    public init(iap: IAPService, firstRunAfter: TimeInterval = Double.random(in: 300...900), interval: TimeInterval = 86400) {
        self.iap = iap
        self.firstRunAfter = firstRunAfter
        self.interval = interval
    }

    public var description: String { "daily App Store refund check" }

    /// Runs until its graceful shutdown or the task is cancelled.
    public func run() async {
        await cancelWhenGracefulShutdown { [self] in await checkDaily() }
    }

    private func checkDaily() async {
        iap.logger.notice("daily App Store refund history check on", ["first_run_in_seconds": String(Int(firstRunAfter))])
        try? await Task.sleep(for: .seconds(firstRunAfter))
        while !Task.isCancelled {
            let report = await iap.checkRefundHistory()
            (report.errors == 0 ? iap.instruments.refundHistoryClean : iap.instruments.refundHistoryWithErrors).increment()
            try? await Task.sleep(for: .seconds(interval))
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
import Foundation
import Lifecycle
import Observability
import WeChatPay

/// Compares the previous Beijing day's bill every day after 10:00 Beijing time (bills are ready
/// from about 09:00; WeChat recommends fetching after 10:00). Turned on with
/// GATEWAY_BILL_RECONCILE=on. Several gateways may each run it: settling is idempotent, and a
/// report twice is only noise.
public final class DailyBillReconciliation: Service, CustomStringConvertible {
    /// Minutes after 10:00 the run happens, so instances do not download at the same second.
    private let offset: TimeInterval
    private let reconciler: BillReconciler
    private let context: GatewayContext

    public init(services: GatewayServices, offset: TimeInterval = Double.random(in: 0...600)) {
        context = services.context
        self.offset = offset
        reconciler = BillReconciler(services: services)
    }

    /// The first 10:00 Beijing (plus `offset`) strictly after `date`, and the Beijing day
    /// (`yyyy-MM-dd`) whose bill is due then: the day before.
    public static func nextRun(after date: Date, offset: TimeInterval = 0) -> (at: Date, day: String) {
        let beijing = date.timeIntervalSince1970 + Double(BeijingTime.offsetSeconds)
        var midnight = (beijing / 86400).rounded(.down) * 86400
        if midnight + 36000 + offset <= beijing { midnight += 86400 }
        let at = Date(timeIntervalSince1970: midnight + 36000 + offset - Double(BeijingTime.offsetSeconds))
        let previous = BeijingTime.formatDay(Date(timeIntervalSince1970: midnight - 86400 - Double(BeijingTime.offsetSeconds)))
        let day = "\(previous.prefix(4))-\(previous.dropFirst(4).prefix(2))-\(previous.suffix(2))"
        return (at, day)
    }

    public var description: String { "daily bill reconciliation" }

    /// Runs once a day until its graceful shutdown or the task is cancelled; a failed run is
    /// retried after 30 minutes, until noon.
    public func run() async {
        await cancelWhenGracefulShutdown { [self] in await reconcileDaily() }
    }

    private func reconcileDaily() async {
        context.logger.notice("daily bill reconciliation on", ["offset_seconds": String(Int(offset))])
        while !Task.isCancelled {
            let next = Self.nextRun(after: context.now(), offset: offset)
            try? await Task.sleep(for: .seconds(max(0, next.at.timeIntervalSince(context.now()))))
            var attempt = 0
            while !Task.isCancelled && attempt < 4 {
                attempt += 1
                do {
                    let report = try await reconciler.reconcile(day: next.day)
                    if !report.isClean {
                        context.logger.warning("bill differences found", ["day": next.day,
                                                                          "report": report.render()])
                    }
                    break
                } catch {
                    reconciler.instruments.failed.labelled(error.shortDescription).increment()
                    context.logger.error("bill reconciliation failed", ["day": next.day, "error": error.description])
                    try? await Task.sleep(for: .seconds(1800))
                }
            }
        }
    }
}

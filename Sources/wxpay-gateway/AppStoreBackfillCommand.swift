// SPDX-License-Identifier: Apache-2.0
import AppStore
import AppStoreHTTPTransport
import Foundation
import Gateway
import HTTP
import Observability
import WeChatPay

/// `wxpay-gateway appstore backfill --since DATE`: reads the App Store's notification history
/// (Get Notification History) from DATE to now once, by hand, with the gateway's configuration
/// (as for a production `serve`), and handles every notification it never handled — what the
/// reconciler does every APPSTORE_BACKFILL_INTERVAL seconds from where it last went. It takes
/// the same lease, so it never reads alongside a running instance, and moves the durable
/// progress forward. Exit status: 0 done, 1 some notifications could not be handled, 2
/// configuration refused, 64 usage, 69 the App Store failed or another instance holds the lease,
/// 74 database.
enum AppStoreBackfillCommand {
    static let usage = """
        usage: wxpay-gateway appstore backfill --since DATE
        DATE is a Beijing day (YYYY-MM-DD, from its midnight) or an RFC 3339 time, at most 180 days ago.
        """

    static func run(_ arguments: [String]) async -> Int32 {
        guard arguments.count == 2, arguments[0] == "--since", let since = parseSince(arguments[1]) else {
            FileHandle.standardError.write(Data("\(usage)\n".utf8))
            return ExitStatus.usage
        }
        if let refusal = sinceRefusal(since, now: Date()) {
            FileHandle.standardError.write(Data("appstore backfill: \(refusal)\n\(usage)\n".utf8))
            return ExitStatus.usage
        }
        let resources: GatewayResources
        switch await GatewayResources.open(for: "appstore backfill", demo: false) {
        case .success(let opened): resources = opened
        case .failure(let failure): return failure.status
        }
        let configuration = resources.configuration
        guard configuration.appStore.isEnabled, configuration.appStore.serverAPICredentials != nil else {
            FileHandle.standardError.write(Data(("appstore backfill: the notification history is read with the App Store Server "
                + "API: set APPSTORE_BUNDLE_ID and APPSTORE_ISSUER_ID, APPSTORE_KEY_ID, APPSTORE_PRIVATE_KEY_FILE\n").utf8))
            await resources.close()
            return ExitStatus.configuration
        }
        let wechat: WeChatConnection
        do {
            wechat = try WeChatConnection.open(configuration, sharedClient: resources.client)
        } catch {
            FileHandle.standardError.write(Data("appstore backfill: cannot start the HTTP client: \(error)\n".utf8))
            await resources.close()
            return ExitStatus.internal
        }
        var logger = resources.logger
        logger.level = max(logger.level, .warning)
        let context = GatewayContext(configuration: configuration, store: resources.store, transport: wechat.transport,
                                     logger: logger)
        let status: Int32
        do {
            let transport = AppStoreHTTPTransport(client: resources.client, timeouts: .init(connect: .seconds(5), total: .seconds(30)))
            let clients = try AppStoreClients.production(configuration.appStore, transport: transport, clock: SystemAppStoreClock())
            let iap = GatewayServices(context, appStore: clients).iap!
            let report = await iap.backfill(since: since, claimant: "cli-" + String(UUID().uuidString.prefix(8)).lowercased(),
                                            force: true)
            FileHandle.standardOutput.write(Data(render(report, since: since).utf8))
            if report.environments.isEmpty && report.errors.isEmpty {
                FileHandle.standardError.write(Data(
                    "appstore backfill: another instance is reading the notification history now; try again in a few minutes\n".utf8))
                status = ExitStatus.unavailable
            } else if !report.errors.isEmpty && report.failed == 0 {
                status = ExitStatus.unavailable
            } else {
                status = report.succeeded ? 0 : 1
            }
        } catch {
            FileHandle.standardError.write(Data("appstore backfill: \(error)\n".utf8))
            status = ExitStatus.configuration
        }
        await wechat.close()
        await resources.close()
        return status
    }

    /// Why `since` cannot be read, or nil: Apple keeps the notification history for 180 days (the
    /// reader starts an hour inside them, so a request is never refused at the edge), and a start in
    /// the future has nothing to read. Refused rather than clamped, so the report never claims a
    /// window it did not read.
    static func sinceRefusal(_ since: Date, now: Date) -> String? {
        let days = AppStoreRecoveryPolicy.appleHistoryDays
        let earliest = now.addingTimeInterval(-Double(days) * 86400 + 3600)
        if since < earliest {
            return "\(BeijingTime.formatWithSeparators(since)) is more than \(days) days ago: Apple keeps the notification "
                + "history for \(days) days, so the earliest start now is \(BeijingTime.formatWithSeparators(earliest)) (Beijing time)"
        }
        if since > now { return "\(BeijingTime.formatWithSeparators(since)) is in the future: there is nothing to read yet" }
        return nil
    }

    /// A Beijing day's midnight, or an RFC 3339 instant.
    static func parseSince(_ text: String) -> Date? {
        if text.utf8.count == 10, let day = BeijingTime.parseDay(text.replacingOccurrences(of: "-", with: "")) { return day }
        return try? Date(text, strategy: .iso8601)
    }

    static func render(_ report: IAPService.BackfillReport, since: Date) -> String {
        var lines = ["notification history from \(BeijingTime.formatWithSeparators(since)) (Beijing time)"]
        lines.append("environments read: \(report.environments.isEmpty ? "none" : report.environments.joined(separator: ", "))")
        lines.append("pages \(report.pages), notifications \(report.seen): recovered \(report.recovered), handled before "
                     + "\(report.alreadyHandled), for another app or environment \(report.ignored), failed \(report.failed)")
        for (environment, through) in report.through.sorted(by: { $0.key < $1.key }) {
            lines.append("\(environment): read through \(BeijingTime.formatWithSeparators(through))")
        }
        lines += report.errors.map { "error: \($0)" }
        return lines.joined(separator: "\n") + "\n"
    }
}

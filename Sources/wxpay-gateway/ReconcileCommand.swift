// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import HTTP
import Observability
import StorageCore
import WeChatPay
import WeChatPayHTTPTransport

/// `wxpay-gateway reconcile --date YYYY-MM-DD`: downloads that Beijing day's bill, compares it
/// with the gateway's database (configured as for a production `serve`), settles the payments
/// WeChat confirms and prints every other difference. Exit status: 0 clean, 1 differences found,
/// 2 configuration refused, 64 usage, 69 WeChat or the bill failed, 74 database.
enum ReconcileCommand {
    static func run(_ arguments: [String]) async -> Int32 {
        guard arguments.count == 2, arguments[0] == "--date", BillReconciler.dayStart(arguments[1]) != nil else {
            FileHandle.standardError.write(Data("usage: wxpay-gateway reconcile --date YYYY-MM-DD (a Beijing day)\n".utf8))
            return ExitStatus.usage
        }
        let day = arguments[1]
        let resources: GatewayResources
        // Only WeChat has bills: there is no demo mode here.
        switch await GatewayResources.open(for: "reconcile", demo: false, needs: .reconcile) {
        case .success(let opened): resources = opened
        case .failure(let failure): return failure.status
        }
        let (configuration, store, client) = (resources.configuration, resources.store, resources.client)
        let wechat: WeChatConnection
        do {
            wechat = try WeChatConnection.open(configuration, sharedClient: client)
        } catch {
            FileHandle.standardError.write(Data("reconcile: cannot start the HTTP client for WeChat: \(error)\n".utf8))
            await resources.close()
            return ExitStatus.internal
        }
        let transport = wechat.transport
        // The report goes to standard output; the log keeps to what went wrong.
        var logger = resources.logger
        logger.level = max(logger.level, .warning)
        // The bill's refund lines are compared with the local refunds (refundquery needs no certificate).
        let services = GatewayServices(GatewayContext(configuration: configuration, store: store, transport: transport,
                                                      logger: logger))
        let status: Int32
        do {
            let report = try await BillReconciler(services: services).reconcile(day: day)
            FileHandle.standardOutput.write(Data(report.render().utf8))
            status = report.isClean ? 0 : 1
        } catch {
            FileHandle.standardError.write(Data("reconcile: \(error)\n".utf8))
            // A day with no bill is a wrong request, not WeChat failing.
            status = error == .noBillForDay ? ExitStatus.usage : ExitStatus.unavailable
        }
        await wechat.close()
        await resources.close()
        return status
    }
}

// SPDX-License-Identifier: Apache-2.0
import Foundation
import Gateway
import HTTP
import Storage
import WeChatPay
import WeChatPayHTTPTransport
import WeChatPaySimulator

/// `wxpay-gateway reconcile --date YYYY-MM-DD`: downloads that Beijing day's bill, compares it
/// with the gateway's database (configured as for `serve`), settles the payments WeChat confirms
/// and prints every other difference. Exit status: 0 clean, 1 differences found, 64 usage, 69
/// WeChat or the bill failed, 74 database, 78 configuration.
enum ReconcileCommand {
    static func run(_ arguments: [String]) async -> Int32 {
        guard arguments.count == 2, arguments[0] == "--date", BillReconciler.dayStart(arguments[1]) != nil else {
            FileHandle.standardError.write(Data("usage: wxpay-gateway reconcile --date YYYY-MM-DD (a Beijing day)\n".utf8))
            return 64
        }
        let day = arguments[1]
        let resources: GatewayResources
        switch await GatewayResources.open(for: "reconcile") {
        case .success(let opened): resources = opened
        case .failure(let failure): return failure.status
        }
        let (configuration, store, client) = (resources.configuration, resources.store, resources.client)
        let refunds: GatewayConfiguration.Refunds
        do {
            refunds = try configuration.refunds(Environment(ProcessInfo.processInfo.environment))
        } catch {
            FileHandle.standardError.write(Data("reconcile: configuration error: \(error)\n".utf8))
            await resources.close()
            return 78
        }
        var wechat: WeChatConnection?
        let transport: any WeChatPayTransport
        if configuration.demo {
            // Demo mode has no real WeChat: a fresh embedded simulator, which holds no bill.
            FileHandle.standardError.write(Data("reconcile: demo mode; the embedded simulator has no bills\n".utf8))
            let simulator = WeChatPaySimulator(
                configuration: SimulatorConfiguration(appID: configuration.appID, mchID: configuration.mchID,
                                                      key: configuration.apiKey),
                notifySender: HTTPNotifySender(client: client))
            transport = SimulatorTransport(simulator: simulator)
        } else {
            do {
                wechat = try WeChatConnection.open(configuration, refunds: refunds, sharedClient: client)
            } catch {
                FileHandle.standardError.write(Data("reconcile: cannot start the HTTP client for WeChat: \(error)\n".utf8))
                await resources.close()
                return 70
            }
            transport = wechat!.transport
        }
        let logger = Logger(label: "wxpay-gateway", level: .warning, handler: JSONLinesLogHandler())
        let service = OrderService(configuration: configuration, store: store, transport: transport, logger: logger)
        // The bill's refund lines are compared with the local refunds (refundquery needs no certificate).
        _ = RefundService(orders: service, store: store, configuration: refunds)
        let status: Int32
        do {
            let report = try await BillReconciler(service: service).reconcile(day: day)
            FileHandle.standardOutput.write(Data(report.render().utf8))
            status = report.isClean ? 0 : 1
        } catch {
            FileHandle.standardError.write(Data("reconcile: \(error)\n".utf8))
            status = 69
        }
        await wechat?.close()
        await resources.close()
        return status
    }
}

// SPDX-License-Identifier: Apache-2.0
import AppStore
import Observability

/// The composition root: every flow of the gateway, made here and only here, from one shared
/// `GatewayContext`. A flow that needs another is given it now, as a value; none keeps a pointer
/// back to what made it, so the graph has no cycle and nothing is filled in after construction.
///
/// ```
/// context ─┬─ refunds (request, notify, recovery)
///          ├─ iap (iOS purchases: reports, notifications, recovery) — when App Store purchases are on
///          ├─ orders (create, notify, query, close, support) ── iap
///          └─ audit (the one writer of the audit log)
/// ```
///
/// What runs on top — the HTTP surface (`GatewayAPI`), the console, the reconciler, the bill job —
/// takes the whole `GatewayServices`.
///
/// ```swift
/// let context = GatewayContext(configuration: configuration, store: store, transport: transport)
/// let services = GatewayServices(context)
/// GatewayAPI(services: services).register(in: &router)
/// ```
public struct GatewayServices: Sendable {
    public let context: GatewayContext
    public let orders: OrderService
    /// Always made: with refunds off (`mode` `.off`) its routes answer 503.
    public let refunds: RefundService
    /// Nil while App Store purchases are off (APPSTORE_BUNDLE_ID unset): the iOS routes are 404.
    public let iap: IAPService?
    public let audit: AuditLog

    /// - Parameters:
    ///   - refundMode: how refunds reach WeChat; default the configuration's (`refundMode`).
    ///   - appStore: the App Store's clients, when App Store purchases are on.
    ///   - recovery: the notification history's and consumption requests' settings; default the
    ///     configuration's.
    public init(_ context: GatewayContext, refundMode: GatewayConfiguration.RefundMode? = nil,
                appStore: AppStoreClients? = nil, recovery: AppStoreRecoveryPolicy? = nil) {
        self.context = context
        refunds = RefundService(context: context, mode: refundMode ?? context.configuration.refundMode)
        iap = appStore.map { clients in
            IAPService(context: context, clients: clients,
                       recovery: recovery ?? AppStoreRecoveryPolicy(context.configuration.appStore))
        }
        orders = OrderService(context: context, iap: iap)
        audit = AuditLog(context: context)
    }

    public var configuration: GatewayConfiguration { context.configuration }
    public var metrics: MetricsRegistry { context.metrics }
}

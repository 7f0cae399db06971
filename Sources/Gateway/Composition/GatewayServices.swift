// SPDX-License-Identifier: Apache-2.0
import AppStore
import Observability

/// The composition root: every flow of the gateway, made here and only here, from one shared
/// `GatewayContext`. A flow that needs another is given it now, as a value; none keeps a pointer
/// back to what made it, so the graph has no cycle and nothing is filled in after construction.
///
/// ```
/// context ─┬─ queries (what WeChat holds of an order, settled; held waits; an app user's orders)
///          ├─ creation ── queries        (create: prepay, app parameters)
///          ├─ closing ── queries         (close)
///          ├─ notifies                   (WeChat's payment notifies)
///          ├─ refunds                    (request, notify, recovery)
///          ├─ iap                        (iOS purchases: reports, notifications, recovery) — when on
///          ├─ support ── queries, iap    (look-ups, attention list, recheck, redrive)
///          └─ audit                      (the one writer of the audit log)
/// ```
///
/// What runs on top — the HTTP surface (`GatewayAPI`), the console, the reconciler, the bill job —
/// takes the whole `GatewayServices`.
///
/// A class, so that taking it is one reference: as a struct it was about 5 KB (the context and
/// its configuration inline, twice over), copied with every reference in it retained wherever a
/// closure captured it, and every held `wait` kept such a copy for its whole life (5.3 of the
/// 13 KB one cost).
///
/// ```swift
/// let context = GatewayContext(configuration: configuration, store: store, transport: transport)
/// let services = GatewayServices(context)
/// GatewayAPI(services: services).register(in: &router)
/// let created = try await services.creation.create(input)
/// ```
public final class GatewayServices: Sendable {
    public let context: GatewayContext
    public let queries: OrderQueries
    public let creation: OrderCreation
    public let closing: OrderClosing
    public let notifies: PaymentNotifies
    public let support: SupportDesk
    /// Always made: with refunds off (no merchant certificate and no API v3) its routes answer 503.
    public let refunds: RefundService
    /// Nil while App Store purchases are off (APPSTORE_BUNDLE_ID unset): the iOS routes are 404.
    public let iap: IAPService?
    public let audit: AuditLog
    public let entitlements: EntitlementQueries
    /// Whether a support-requested bill comparison is running (`GatewayAPI+Bills.swift`).
    let billReconciliations = BillReconciliationGate()

    /// - Parameters:
    ///   - appStore: the App Store's clients, when App Store purchases are on.
    ///   - recovery: the notification history's and consumption requests' settings; default the
    ///     configuration's.
    public init(_ context: GatewayContext, appStore: AppStoreClients? = nil, recovery: AppStoreRecoveryPolicy? = nil) {
        self.context = context
        refunds = RefundService(context: context, mode: context.refundMode)
        iap = appStore.map { clients in
            IAPService(context: context, clients: clients,
                       recovery: recovery ?? AppStoreRecoveryPolicy(context.configuration.appStore))
        }
        queries = OrderQueries(context: context)
        creation = OrderCreation(context: context, queries: queries)
        closing = OrderClosing(context: context, queries: queries)
        notifies = PaymentNotifies(context: context)
        support = SupportDesk(context: context, queries: queries, iap: iap)
        audit = AuditLog(context: context)
        entitlements = EntitlementQueries(context: context)
    }

    public var configuration: GatewayConfiguration { context.configuration }
    public var metrics: MetricsRegistry { context.metrics }
}

// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import Observability

/// Every call to the App Store counted and timed, whichever client made it: what the "App Store
/// answering errors or slowly" alerts and the dashboard read. `api` is the endpoint's name (never
/// a transaction id), `outcome` the HTTP status class or the transport failure.
public struct MeasuredAppStoreTransport: AppStoreTransport {
    static let requests = Metric<Counter>(
        "wxpay_appstore_requests_total",
        help: "Calls to the App Store (Server API, verifyReceipt) by endpoint and outcome (2xx, 401, 4xx, 5xx, or the transport failure).")
    static let duration = Metric<Histogram>(
        "wxpay_appstore_request_duration_seconds", help: "Latency of calls to the App Store, by endpoint.")

    let inner: any AppStoreTransport
    /// By endpoint and outcome.
    private let requests: MetricFamily<Counter>
    /// By endpoint.
    private let durations: MetricFamily<Histogram>

    public init(_ inner: any AppStoreTransport, metrics: MetricsRegistry) {
        self.inner = inner
        metrics.describe(Self.requests, Self.duration)
        requests = metrics.makeCounters(Self.requests, labelNames: "api", "outcome")
        durations = metrics.makeHistograms(Self.duration, labelNames: "api")
        // Exported from the start, for the alerts that compare them over time: WxpayAppStoreErrors
        // divides Apple's failures (5xx) by every call, WxpayAppStoreSlow takes a rate of the buckets.
        for api in Self.apis {
            requests.labelled(api, "2xx").publish()
            requests.labelled(api, "5xx").publish()
            durations.labelled(api).publish()
        }
    }

    public func send(_ request: AppStoreRequest) async throws(AppStoreTransportError) -> AppStoreResponse {
        let api = Self.api(request.path)
        let started = ContinuousClock.now
        defer { durations.labelled(api).record(ContinuousClock.now - started) }
        do {
            let response = try await inner.send(request)
            // 401 apart from the other 4xx: the key or its token refused, which no retry mends.
            let outcome = response.status == 401 ? "401" : "\(response.status / 100)xx"
            requests.labelled(api, outcome).increment()
            return response
        } catch {
            requests.labelled(api, error.kind.rawValue).increment()
            throw error
        }
    }

    /// Every `api` label `api(_:)` gives but `other`.
    static let apis = [
        "transaction_info", "transaction_history", "refund_history", "look_up_order", "verify_receipt", "notification_history",
        "test_notification", "subscription_status", "extend_renewal_date", "send_consumption",
    ]

    /// The endpoint of a Server API or verifyReceipt path, in both environments.
    static func api(_ path: String) -> String {
        let segments = path.split(separator: "/").filter { $0 != "sandbox" }
        if segments.last == "verifyReceipt" { return "verify_receipt" }
        guard segments.count >= 3, segments[0] == "inApps" else { return "other" }
        let next = segments.count > 3 ? segments[3] : ""
        switch segments[2] {
        case "transactions": return next == "consumption" ? "send_consumption" : "transaction_info"
        case "history": return "transaction_history"
        case "refund": return "refund_history"
        case "lookup": return "look_up_order"
        case "notifications": return next == "history" ? "notification_history" : "test_notification"
        case "subscriptions": return next == "extend" ? "extend_renewal_date" : "subscription_status"
        default: return "other"
        }
    }
}

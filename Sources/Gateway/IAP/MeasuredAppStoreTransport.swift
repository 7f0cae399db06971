// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import Observability

/// Every call to the App Store counted and timed, whichever client made it: what the "App Store
/// answering errors or slowly" alerts and the dashboard read. `api` is the endpoint's name (never
/// a transaction id), `outcome` the HTTP status class or the transport failure.
public struct MeasuredAppStoreTransport: AppStoreTransport {
    let inner: any AppStoreTransport
    let metrics: MetricsRegistry

    public init(_ inner: any AppStoreTransport, metrics: MetricsRegistry) {
        self.inner = inner
        self.metrics = metrics
        metrics.describe("wxpay_appstore_requests_total", type: "counter",
                         help: "Calls to the App Store (Server API, verifyReceipt) by endpoint and outcome (2xx, 401, 4xx, 5xx, or the transport failure).")
        metrics.describe("wxpay_appstore_request_duration_seconds", type: "histogram",
                         help: "Latency of calls to the App Store, by endpoint.")
        for api in ["transaction_info", "transaction_history", "refund_history", "look_up_order", "verify_receipt"] {
            metrics.increment("wxpay_appstore_requests_total", by: 0, ["api": api, "outcome": "2xx"])
        }
    }

    public func send(_ request: AppStoreRequest) async throws(AppStoreTransportError) -> AppStoreResponse {
        let api = Self.api(request.path)
        let started = ContinuousClock.now
        defer {
            let elapsed = ContinuousClock.now - started
            metrics.observe("wxpay_appstore_request_duration_seconds",
                            Double(elapsed.components.seconds) + Double(elapsed.components.attoseconds) * 1e-18, ["api": api])
        }
        do {
            let response = try await inner.send(request)
            // 401 apart from the other 4xx: the key or its token refused, which no retry mends.
            let outcome = response.status == 401 ? "401" : "\(response.status / 100)xx"
            metrics.increment("wxpay_appstore_requests_total", ["api": api, "outcome": outcome])
            return response
        } catch {
            metrics.increment("wxpay_appstore_requests_total", ["api": api, "outcome": error.kind.rawValue])
            throw error
        }
    }

    /// The endpoint of a Server API or verifyReceipt path, in both environments.
    static func api(_ path: String) -> String {
        let segments = path.split(separator: "/").filter { $0 != "sandbox" }
        if segments.last == "verifyReceipt" { return "verify_receipt" }
        guard segments.count >= 3, segments[0] == "inApps" else { return "other" }
        switch segments[2] {
        case "transactions": return "transaction_info"
        case "history": return "transaction_history"
        case "refund": return "refund_history"
        case "lookup": return "look_up_order"
        case "notifications": return "test_notification"
        case "subscriptions": return "subscription_status"
        default: return "other"
        }
    }
}

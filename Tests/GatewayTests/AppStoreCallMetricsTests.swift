// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
@testable import Gateway
import Observability
import Testing

/// Every call to the App Store is counted and timed under its own endpoint's name, and each name
/// has its latency series from the start (WxpayAppStoreSlow takes a rate of the buckets).
struct AppStoreCallMetricsTests {
    @Test("each Server API endpoint and verifyReceipt has its own label, in both environments", arguments: [
        ("/inApps/v1/transactions/2000000123", "transaction_info"),
        ("/inApps/v2/transactions/consumption/2000000123", "send_consumption"),
        ("/inApps/v2/history/2000000123", "transaction_history"),
        ("/inApps/v2/refund/lookup/2000000123", "refund_history"),
        ("/inApps/v1/lookup/MQ4Z7R9", "look_up_order"),
        ("/inApps/v1/notifications/history", "notification_history"),
        ("/inApps/v1/notifications/test", "test_notification"),
        ("/inApps/v1/notifications/test/6a7f-token", "test_notification"),
        ("/inApps/v1/subscriptions/2000000123", "subscription_status"),
        ("/inApps/v1/subscriptions/extend/2000000123", "extend_renewal_date"),
        ("/verifyReceipt", "verify_receipt"),
        ("/inApps/v9/unheard-of/1", "other"),
    ])
    func labels(_ path: String, _ api: String) {
        #expect(MeasuredAppStoreTransport.api(path) == api)
        #expect(MeasuredAppStoreTransport.api(path.replacingOccurrences(of: "/inApps/", with: "/sandbox/inApps/")) == api
                || !path.hasPrefix("/inApps/"))
        #expect(MeasuredAppStoreTransport.apis.contains(api) || api == "other")
    }

    @Test func everyEndpointsLatencySeriesIsExportedBeforeItsFirstCall() {
        let metrics = MetricsRegistry()
        _ = MeasuredAppStoreTransport(UnusedTransport(), metrics: metrics)
        let exposition = metrics.exposition()
        for api in MeasuredAppStoreTransport.apis {
            #expect(exposition.contains(#"wxpay_appstore_request_duration_seconds_count{api="\#(api)"} 0"#), "\(api)")
            #expect(exposition.contains(#"wxpay_appstore_requests_total{api="\#(api)",outcome="5xx"} 0"#), "\(api)")
        }
    }

    private struct UnusedTransport: AppStoreTransport {
        func send(_ request: AppStoreRequest) async throws(AppStoreTransportError) -> AppStoreResponse {
            throw AppStoreTransportError(kind: .connect)
        }
    }
}

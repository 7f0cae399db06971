// SPDX-License-Identifier: Apache-2.0
import AppStoreSimulator
import Foundation
@testable import Gateway
@testable import GatewayConsole
import HTTP
import Observability
import SimulatorKit
import StorageCore
import StoreTestSupport
import TestSupport
import Testing
import WeChatPay
import WeChatPaySimulator

/// `/metrics` byte for byte, for a gateway that has done some of everything: orders created,
/// replayed and refused, paid by notify, a forged notify, a held wait that polled WeChat, a support
/// look-up, a refund and its notify, a reconciler sweep, a bill compared, webhook deliveries that
/// failed, an iOS purchase credited, a console sign-in refused. Every name, HELP and TYPE line, label
/// order and count is pinned; only what a clock decides (latency buckets and sums, lag and
/// timestamp gauges) is masked. Dashboards and alert rules read these lines: a change here must be
/// deliberate.
@Suite(.serialized)
struct MetricsExpositionTests {
    @Test func theExpositionOfAGatewayThatHasDoneSomeWorkIsPinned() async throws {
        let users = FileManager.default.temporaryDirectory.appendingPathComponent("exposition-users-\(UUID().uuidString)").path
        defer {
            try? FileManager.default.removeItem(atPath: users)
            try? FileManager.default.removeItem(atPath: users + ".lock")
        }
        try ConsoleUserFile.update(path: users) { list in
            list = [ConsoleUser(name: "adam", role: .admin, password: ConsoleRig.hash(ConsoleRig.password))]
        }
        // Refunds through the embedded simulator, the audit log and the console, as demo mode has
        // them. A held wait asks WeChat once (the first poll) whatever the machine's speed.
        let rig = try await IAPRig.start(.inProcess, environment: ["GATEWAY_REFUND_QUERY_AFTER": "0"], pollInterval: 60,
                                         consoleUsers: users)
        do {
            try await work(rig)
            // Each scrape probes the database with a 1 s deadline, and a machine loaded by the
            // whole suite has missed it (`wxpay_database_up 0`): that is the machine, not the
            // exposition, so a scrape that found the database late is repeated, and the probe
            // count pinned is the number of scrapes.
            var scrapes = 0
            var exposition = ""
            repeat {
                scrapes += 1
                let scraped = try await rig.gateway.send(.get, "/metrics", token: nil)
                #expect(scraped.status == 200)
                exposition = Self.masked(String(decoding: scraped.body, as: UTF8.self))
            } while scrapes < 5 && !exposition.contains("\nwxpay_database_up 1\n")
            let expected = Self.expected.replacingOccurrences(
                of: "wxpay_database_probe_duration_seconds_count 1\n",
                with: "wxpay_database_probe_duration_seconds_count \(scrapes)\n"
            ).split(separator: "\n", omittingEmptySubsequences: false)
            let got = exposition.split(separator: "\n", omittingEmptySubsequences: false)
            let first = zip(got, expected).enumerated().first { $0.element.0 != $0.element.1 }?.offset ?? min(got.count, expected.count)
            let same = got == expected
            #expect(same, """
                first difference at line \(first + 1): \(first < got.count ? got[first] : "(end)") \
                (expected \(first < expected.count ? expected[first] : "(end)")); the exposition as served, masked:
                \(exposition)
                """)
        } catch {
            await rig.stop()
            throw error
        }
        await rig.stop()
    }

    /// Calls made through API v3 are counted under v3's own names (`api="v3_…"`), each series once
    /// per call, beside v2's series (pinned above, unchanged): the same two families, the same labels.
    @Test func callsThroughAPIv3AreCountedUnderV3sOwnNames() async throws {
        let rig = try await GatewayRig.start(.inProcess, environment: ["GATEWAY_REFUND_QUERY_AFTER": "0"],
                                             v3: V3Setup(mode: .publicKey))
        do {
            rig.simulator.apply(FaultPlan(notify: NotifyFaults(dropRate: 1)))
            #expect(try await rig.createOrder("metrics-v3-1").status == 201)
            #expect(try await rig.createOrder("metrics-v3-2").status == 201)
            try rig.simulator.pay(outTradeNo: "metrics-v3-1")
            #expect(try await rig.send(.get, "/v1/orders/metrics-v3-1?wait=20").json.string("state") == "SUCCESS")
            let refund = try await rig.send(.post, "/v1/orders/metrics-v3-1/refunds",
                                            body: #"{"amount":300,"reason":"bought by mistake","out_refund_no":"metrics-v3-r1"}"#)
            #expect(refund.status == 201)
            _ = try rig.simulator.completeRefund(outRefundNo: "metrics-v3-r1")
            _ = await Reconciler(services: rig.services).sweep()
            #expect(try await rig.store.refund("metrics-v3-r1")?.state == .success)
            rig.clock.advance(by: 301)
            #expect(try await rig.send(.post, "/v1/orders/metrics-v3-2/close").json.string("state") == "CLOSED")

            let scraped = try await rig.send(.get, "/metrics", token: nil)
            let exposition = String(decoding: scraped.body, as: UTF8.self).split(separator: "\n")
            // Each API of both versions is exported from the start (WxpayWeChatErrors), at 0 until called.
            for api in ["unifiedorder", "v3_pay_app", "v3_tradebill"] {
                #expect(exposition.contains { $0.hasPrefix(#"wxpay_upstream_calls_total{api="\#(api)",outcome="success"} "#) }, "\(api)")
            }
            let lines = exposition.filter {
                ($0.hasPrefix("wxpay_upstream_calls_total") || $0.hasPrefix("wxpay_upstream_duration_seconds_count")) && !$0.hasSuffix(" 0")
            }
            #expect(lines == [
                #"wxpay_upstream_calls_total{api="v3_close_order",outcome="success"} 1"#,
                #"wxpay_upstream_calls_total{api="v3_pay_app",outcome="success"} 2"#,
                #"wxpay_upstream_calls_total{api="v3_query_order",outcome="success"} 1"#,
                #"wxpay_upstream_calls_total{api="v3_query_refund",outcome="success"} 1"#,
                #"wxpay_upstream_calls_total{api="v3_refund",outcome="success"} 1"#,
                #"wxpay_upstream_duration_seconds_count{api="v3_close_order"} 1"#,
                #"wxpay_upstream_duration_seconds_count{api="v3_pay_app"} 2"#,
                #"wxpay_upstream_duration_seconds_count{api="v3_query_order"} 1"#,
                #"wxpay_upstream_duration_seconds_count{api="v3_query_refund"} 1"#,
                #"wxpay_upstream_duration_seconds_count{api="v3_refund"} 1"#,
            ], "\(lines)")
        } catch {
            await rig.stop()
            throw error
        }
        await rig.stop()
    }

    /// What the gateway does before the scrape; each step waits for its effect, so that what is
    /// counted does not depend on the machine's speed.
    private func work(_ rig: IAPRig) async throws {
        let gateway = rig.gateway
        // Every payment on one Beijing day (the bill's), whatever time the test runs.
        let secondOfDay = (Int(gateway.clock.now().timeIntervalSince1970) + BeijingTime.offsetSeconds) % 86400
        if secondOfDay > 86400 - 900 { gateway.clock.advance(by: 1200) }
        let paymentDay = gateway.clock.now()
        let dayStart = try #require(BeijingTime.parseDay(BeijingTime.formatDay(paymentDay)))
        // Apple's notifications are dropped: a purchase is credited by the app's report alone.
        rig.appStore.apply(AppStoreFaultPlan(notify: NotifyFaults(dropRate: 1)))

        // Created, replayed, refused; paid by WeChat's notify.
        #expect(try await gateway.createOrder("exposition-1").status == 201)
        #expect(try await gateway.createOrder("exposition-1").status == 200)
        #expect(try await gateway.createOrder("exposition-1", amount: 991).status == 409)
        try gateway.simulator.pay(outTradeNo: "exposition-1")
        #expect(await eventually(timeout: .seconds(120)) {
            (try? await gateway.store.order("exposition-1"))??.state == .success
                && gateway.services.metrics.counter("wxpay_notifies_total", ["outcome": "settled", "channel": "app"]) == 1
        })
        // A forged notify (another key): refused, counted by reason.
        let forged = gateway.forgedNotify("exposition-1", amount: 990, key: APIKey("forged-key-forged-key-forged-key"))
        #expect(try await gateway.send(.post, "/wechat/notify", token: nil, body: forged).status == 200)

        // An order nobody pays: a held wait asks WeChat (orderquery) and runs out.
        #expect(try await gateway.createOrder("exposition-2").status == 201)
        #expect(try await gateway.send(.get, "/v1/orders/exposition-2?wait=1").status == 200)
        #expect(await eventually(timeout: .seconds(60)) { gateway.services.metrics.gauge("wxpay_waits_open") == 0 })
        // Support looks the paid one up (audited).
        #expect(try await gateway.send(.get, "/v1/support/orders?out_trade_no=exposition-1", token: GatewayRig.support)
            .status == 200)

        // A refund of part of it, completed by WeChat's refund notify.
        let refund = try await gateway.send(.post, "/v1/orders/exposition-1/refunds",
                                            body: #"{"amount":300,"reason":"bought by mistake","out_refund_no":"exposition-r1"}"#)
        #expect(refund.status == 201)
        try gateway.simulator.completeRefund(outRefundNo: "exposition-r1")
        #expect(await eventually(timeout: .seconds(120)) {
            (try? await gateway.store.refund("exposition-r1"))??.state == .success
        })

        // An iOS purchase, reported by the app and credited.
        let created = try await rig.createOrder("user-a")
        let bought = try rig.buy("apple-a", token: created["app_account_token"] as? String)
        let answer = try await rig.report("user-a", ["signed_transaction": bought.signedTransactionInfo])
        #expect(answer.status == 200 && answer.json["finish_transaction"] as? Bool == true)

        // A sweep (the unpaid order is asked about); the next morning, the day's bill; the webhook down.
        _ = await rig.sweep(after: 0)
        gateway.clock.advance(by: (dayStart + 86400 + 10 * 3600 + 60).timeIntervalSince(gateway.clock.now()))
        _ = try await BillReconciler(services: gateway.services).reconcile(day: BillReconcilerTests.day(paymentDay))
        let dispatcher = FulfilmentDispatcher(
            store: gateway.store, configuration: .init(url: "http://127.0.0.1:9/hooks", secret: WebhookReceiver.secret),
            transport: RefusingTransport(), metrics: gateway.services.metrics, now: { gateway.clock.now() })
        _ = await dispatcher.deliverDue()

        // A console sign-in with the wrong password.
        let browser = ConsoleBrowser(rig: gateway, language: nil)
        #expect(try await browser.signIn("adam", password: "not the password").status == 403)
    }

    /// The exposition with what a clock decides replaced by `…`: the buckets and sums of every
    /// histogram of seconds, and gauges of seconds (lags, timestamps, the certificate's expiry).
    static func masked(_ exposition: String) -> String {
        exposition.split(separator: "\n", omittingEmptySubsequences: false).map { line -> String in
            guard !line.hasPrefix("#"), let space = line.lastIndex(of: " ") else { return String(line) }
            let series = line[..<space]
            let name = series.prefix { $0 != "{" }
            let timed = name.hasSuffix("_seconds_bucket") || name.hasSuffix("_seconds_sum") || name.hasSuffix("_seconds")
            return timed ? series + " …" : String(line)
        }.joined(separator: "\n")
    }

    static let expected = """
        # HELP wxpay_amount_mismatches_total Payments WeChat reported with another amount than the order's (not settled), by source.
        # TYPE wxpay_amount_mismatches_total counter
        wxpay_amount_mismatches_total{source="appstore"} 0
        wxpay_amount_mismatches_total{source="bill"} 0
        wxpay_amount_mismatches_total{source="closeorder"} 0
        wxpay_amount_mismatches_total{source="notify"} 0
        wxpay_amount_mismatches_total{source="orderquery"} 0
        wxpay_amount_mismatches_total{source="other"} 0
        wxpay_amount_mismatches_total{source="reconcile"} 0
        wxpay_amount_mismatches_total{source="refundquery"} 0
        # HELP wxpay_appstore_backfill_recovered_total Notifications the backfill handled that had not been handled before (their delivery was lost).
        # TYPE wxpay_appstore_backfill_recovered_total counter
        wxpay_appstore_backfill_recovered_total 1
        # HELP wxpay_appstore_backfill_runs_total Runs of the notification history backfill (Get Notification History) by this instance, by outcome.
        # TYPE wxpay_appstore_backfill_runs_total counter
        wxpay_appstore_backfill_runs_total{outcome="failed"} 0
        wxpay_appstore_backfill_runs_total{outcome="ok"} 1
        # HELP wxpay_appstore_credits_total App Store transactions credited to an order, by how the order was found and environment.
        # TYPE wxpay_appstore_credits_total counter
        wxpay_appstore_credits_total{environment="Production",matched_by="app_account_token"} 1
        # HELP wxpay_appstore_notifications_total App Store Server Notifications by outcome (handled, duplicate, ignored, rejected, error).
        # TYPE wxpay_appstore_notifications_total counter
        wxpay_appstore_notifications_total{outcome="rejected",reason="invalid_signature"} 0
        # HELP wxpay_appstore_reports_total iOS transaction reports by outcome (credited, repeated, or the error code).
        # TYPE wxpay_appstore_reports_total counter
        wxpay_appstore_reports_total{outcome="credited"} 1
        # HELP wxpay_audit_entries_total Audit log entries written, by channel.
        # TYPE wxpay_audit_entries_total counter
        wxpay_audit_entries_total{channel="api"} 1
        wxpay_audit_entries_total{channel="console"} 1
        # HELP wxpay_bill_runs_total Bill comparisons run.
        # TYPE wxpay_bill_runs_total counter
        wxpay_bill_runs_total{result="clean"} 1
        # HELP wxpay_console_logins_total Console login attempts by outcome (ok, refused, locked, paced, busy).
        # TYPE wxpay_console_logins_total counter
        wxpay_console_logins_total{outcome="refused"} 1
        # HELP wxpay_console_password_checks_total scrypt password checks of console logins (an unknown name costs one too).
        # TYPE wxpay_console_password_checks_total counter
        wxpay_console_password_checks_total 1
        # HELP wxpay_notifies_total Payment notifies by outcome (and channel, when the order is known).
        # TYPE wxpay_notifies_total counter
        wxpay_notifies_total{channel="app",outcome="settled"} 1
        wxpay_notifies_total{channel="h5",outcome="settled"} 0
        wxpay_notifies_total{channel="miniprogram",outcome="settled"} 0
        wxpay_notifies_total{channel="native",outcome="settled"} 0
        wxpay_notifies_total{channel="official_account",outcome="settled"} 0
        wxpay_notifies_total{outcome="rejected",reason="bad_sign"} 1
        # HELP wxpay_orders_created_total Order creations by channel and outcome.
        # TYPE wxpay_orders_created_total counter
        wxpay_orders_created_total{channel="app",outcome="conflict"} 1
        wxpay_orders_created_total{channel="app",outcome="created"} 2
        wxpay_orders_created_total{channel="app",outcome="replayed"} 1
        wxpay_orders_created_total{channel="apple",outcome="created"} 1
        # HELP wxpay_outbox_deliveries_total Fulfilment webhook attempts by outcome (delivered, failed, dead).
        # TYPE wxpay_outbox_deliveries_total counter
        wxpay_outbox_deliveries_total{outcome="dead"} 0
        wxpay_outbox_deliveries_total{outcome="delivered"} 0
        wxpay_outbox_deliveries_total{outcome="failed"} 4
        # HELP wxpay_reconcile_errors_total Reconciler failures by stage.
        # TYPE wxpay_reconcile_errors_total counter
        wxpay_reconcile_errors_total{stage="store"} 0
        # HELP wxpay_reconcile_orders_checked_total Open orders the reconciler asked WeChat about (orderquery or closeorder).
        # TYPE wxpay_reconcile_orders_checked_total counter
        wxpay_reconcile_orders_checked_total 1
        # HELP wxpay_reconcile_orders_closed_total Orders the reconciler closed (expired) or found closed or failed at WeChat.
        # TYPE wxpay_reconcile_orders_closed_total counter
        wxpay_reconcile_orders_closed_total 0
        # HELP wxpay_reconcile_orders_settled_total Orders the reconciler moved to SUCCESS: payments whose notify never arrived.
        # TYPE wxpay_reconcile_orders_settled_total counter
        wxpay_reconcile_orders_settled_total 0
        # HELP wxpay_reconcile_orders_skipped_total Claimed orders left for a later sweep (lease ran out or upstream kept failing).
        # TYPE wxpay_reconcile_orders_skipped_total counter
        wxpay_reconcile_orders_skipped_total 0
        # HELP wxpay_reconcile_refunds_checked_total PROCESSING refunds the reconciler asked WeChat about (refundquery, or a resend).
        # TYPE wxpay_reconcile_refunds_checked_total counter
        wxpay_reconcile_refunds_checked_total 0
        # HELP wxpay_reconcile_refunds_settled_total Refunds the reconciler finished: their notify never arrived.
        # TYPE wxpay_reconcile_refunds_settled_total counter
        wxpay_reconcile_refunds_settled_total 0
        # HELP wxpay_reconcile_sweeps_total Reconciler sweeps run.
        # TYPE wxpay_reconcile_sweeps_total counter
        wxpay_reconcile_sweeps_total 1
        # HELP wxpay_refund_notifies_total Refund notifies by outcome.
        # TYPE wxpay_refund_notifies_total counter
        wxpay_refund_notifies_total{outcome="rejected",reason="bad_sign"} 0
        wxpay_refund_notifies_total{outcome="settled"} 1
        # HELP wxpay_refund_settlements_total Refund state changes by source and new state.
        # TYPE wxpay_refund_settlements_total counter
        wxpay_refund_settlements_total{source="reconcile",state="CHANGE"} 0
        wxpay_refund_settlements_total{source="refund_notify",state="CHANGE"} 0
        wxpay_refund_settlements_total{source="refund_notify",state="SUCCESS"} 1
        wxpay_refund_settlements_total{source="refundquery",state="CHANGE"} 0
        # HELP wxpay_refunds_requested_total Refund requests by outcome.
        # TYPE wxpay_refunds_requested_total counter
        wxpay_refunds_requested_total{outcome="created"} 1
        # HELP wxpay_settlements_total State changes by source and new state.
        # TYPE wxpay_settlements_total counter
        wxpay_settlements_total{source="appstore",state="SUCCESS"} 1
        wxpay_settlements_total{source="notify",state="SUCCESS"} 1
        # HELP wxpay_storage_errors_total Storage failures (reads and writes, the audit log's included), by error.
        # TYPE wxpay_storage_errors_total counter
        wxpay_storage_errors_total{error="full"} 0
        wxpay_storage_errors_total{error="io"} 0
        # HELP wxpay_upstream_calls_total Calls to WeChat Pay by API and outcome.
        # TYPE wxpay_upstream_calls_total counter
        wxpay_upstream_calls_total{api="closeorder",outcome="http_status"} 0
        wxpay_upstream_calls_total{api="closeorder",outcome="success"} 0
        wxpay_upstream_calls_total{api="closeorder",outcome="transport_connect"} 0
        wxpay_upstream_calls_total{api="closeorder",outcome="transport_dns"} 0
        wxpay_upstream_calls_total{api="closeorder",outcome="transport_timeout"} 0
        wxpay_upstream_calls_total{api="closeorder",outcome="transport_tls"} 0
        wxpay_upstream_calls_total{api="downloadbill",outcome="http_status"} 0
        wxpay_upstream_calls_total{api="downloadbill",outcome="success"} 1
        wxpay_upstream_calls_total{api="downloadbill",outcome="transport_connect"} 0
        wxpay_upstream_calls_total{api="downloadbill",outcome="transport_dns"} 0
        wxpay_upstream_calls_total{api="downloadbill",outcome="transport_timeout"} 0
        wxpay_upstream_calls_total{api="downloadbill",outcome="transport_tls"} 0
        wxpay_upstream_calls_total{api="orderquery",outcome="http_status"} 0
        wxpay_upstream_calls_total{api="orderquery",outcome="success"} 1
        wxpay_upstream_calls_total{api="orderquery",outcome="transport_connect"} 0
        wxpay_upstream_calls_total{api="orderquery",outcome="transport_dns"} 0
        wxpay_upstream_calls_total{api="orderquery",outcome="transport_timeout"} 0
        wxpay_upstream_calls_total{api="orderquery",outcome="transport_tls"} 0
        wxpay_upstream_calls_total{api="refund",outcome="http_status"} 0
        wxpay_upstream_calls_total{api="refund",outcome="success"} 1
        wxpay_upstream_calls_total{api="refund",outcome="transport_connect"} 0
        wxpay_upstream_calls_total{api="refund",outcome="transport_dns"} 0
        wxpay_upstream_calls_total{api="refund",outcome="transport_timeout"} 0
        wxpay_upstream_calls_total{api="refund",outcome="transport_tls"} 0
        wxpay_upstream_calls_total{api="refundquery",outcome="http_status"} 0
        wxpay_upstream_calls_total{api="refundquery",outcome="success"} 0
        wxpay_upstream_calls_total{api="refundquery",outcome="transport_connect"} 0
        wxpay_upstream_calls_total{api="refundquery",outcome="transport_dns"} 0
        wxpay_upstream_calls_total{api="refundquery",outcome="transport_timeout"} 0
        wxpay_upstream_calls_total{api="refundquery",outcome="transport_tls"} 0
        wxpay_upstream_calls_total{api="unifiedorder",outcome="http_status"} 0
        wxpay_upstream_calls_total{api="unifiedorder",outcome="success"} 2
        wxpay_upstream_calls_total{api="unifiedorder",outcome="transport_connect"} 0
        wxpay_upstream_calls_total{api="unifiedorder",outcome="transport_dns"} 0
        wxpay_upstream_calls_total{api="unifiedorder",outcome="transport_timeout"} 0
        wxpay_upstream_calls_total{api="unifiedorder",outcome="transport_tls"} 0
        # HELP wxpay_wait_polls_total Polls of waiting queries: queried WeChat, or left to the instance holding the claim.
        # TYPE wxpay_wait_polls_total counter
        wxpay_wait_polls_total{outcome="queried"} 1
        # HELP wxpay_appstore_backfill_last_success_timestamp_seconds When the notification history was last read through, for the environment furthest behind.
        # TYPE wxpay_appstore_backfill_last_success_timestamp_seconds gauge
        wxpay_appstore_backfill_last_success_timestamp_seconds …
        # HELP wxpay_database_up 1 when the database answered the last readiness probe (each scrape and /readyz) within 1 s.
        # TYPE wxpay_database_up gauge
        wxpay_database_up 1
        # HELP wxpay_outbox_dead Outbox events given up on, waiting for a redrive.
        # TYPE wxpay_outbox_dead gauge
        wxpay_outbox_dead 0
        # HELP wxpay_outbox_lag_seconds Age of the oldest pending outbox event.
        # TYPE wxpay_outbox_lag_seconds gauge
        wxpay_outbox_lag_seconds …
        # HELP wxpay_outbox_pending Outbox events not yet delivered.
        # TYPE wxpay_outbox_pending gauge
        wxpay_outbox_pending 4
        # HELP wxpay_ready 1 when /readyz would answer 200: take the instance out of rotation at 0.
        # TYPE wxpay_ready gauge
        wxpay_ready 1
        # HELP wxpay_reconcile_lag_seconds How long the longest-waiting due order had waited for its check at the last sweep.
        # TYPE wxpay_reconcile_lag_seconds gauge
        wxpay_reconcile_lag_seconds …
        # HELP wxpay_reconcile_last_sweep_claimed Orders leased by the last sweep.
        # TYPE wxpay_reconcile_last_sweep_claimed gauge
        wxpay_reconcile_last_sweep_claimed 1
        # HELP wxpay_reconcile_last_sweep_timestamp_seconds When the last sweep finished (Unix seconds): a reconciler that stopped sweeping leaves it behind.
        # TYPE wxpay_reconcile_last_sweep_timestamp_seconds gauge
        wxpay_reconcile_last_sweep_timestamp_seconds …
        # HELP wxpay_waits_open Order and refund queries waiting for a final state.
        # TYPE wxpay_waits_open gauge
        wxpay_waits_open 0
        # HELP wxpay_database_probe_duration_seconds How long the database took to answer a readiness probe (capped at the 1 s deadline).
        # TYPE wxpay_database_probe_duration_seconds histogram
        wxpay_database_probe_duration_seconds_bucket{le="0.005"} …
        wxpay_database_probe_duration_seconds_bucket{le="0.01"} …
        wxpay_database_probe_duration_seconds_bucket{le="0.025"} …
        wxpay_database_probe_duration_seconds_bucket{le="0.05"} …
        wxpay_database_probe_duration_seconds_bucket{le="0.1"} …
        wxpay_database_probe_duration_seconds_bucket{le="0.25"} …
        wxpay_database_probe_duration_seconds_bucket{le="0.5"} …
        wxpay_database_probe_duration_seconds_bucket{le="1"} …
        wxpay_database_probe_duration_seconds_bucket{le="2.5"} …
        wxpay_database_probe_duration_seconds_bucket{le="5"} …
        wxpay_database_probe_duration_seconds_bucket{le="10"} …
        wxpay_database_probe_duration_seconds_bucket{le="30"} …
        wxpay_database_probe_duration_seconds_bucket{le="+Inf"} …
        wxpay_database_probe_duration_seconds_sum …
        wxpay_database_probe_duration_seconds_count 1
        # HELP wxpay_outbox_delivery_duration_seconds Webhook delivery latency.
        # TYPE wxpay_outbox_delivery_duration_seconds histogram
        wxpay_outbox_delivery_duration_seconds_bucket{le="0.005"} …
        wxpay_outbox_delivery_duration_seconds_bucket{le="0.01"} …
        wxpay_outbox_delivery_duration_seconds_bucket{le="0.025"} …
        wxpay_outbox_delivery_duration_seconds_bucket{le="0.05"} …
        wxpay_outbox_delivery_duration_seconds_bucket{le="0.1"} …
        wxpay_outbox_delivery_duration_seconds_bucket{le="0.25"} …
        wxpay_outbox_delivery_duration_seconds_bucket{le="0.5"} …
        wxpay_outbox_delivery_duration_seconds_bucket{le="1"} …
        wxpay_outbox_delivery_duration_seconds_bucket{le="2.5"} …
        wxpay_outbox_delivery_duration_seconds_bucket{le="5"} …
        wxpay_outbox_delivery_duration_seconds_bucket{le="10"} …
        wxpay_outbox_delivery_duration_seconds_bucket{le="30"} …
        wxpay_outbox_delivery_duration_seconds_bucket{le="+Inf"} …
        wxpay_outbox_delivery_duration_seconds_sum …
        wxpay_outbox_delivery_duration_seconds_count 4
        # HELP wxpay_reconcile_sweep_duration_seconds Duration of one sweep.
        # TYPE wxpay_reconcile_sweep_duration_seconds histogram
        wxpay_reconcile_sweep_duration_seconds_bucket{le="0.005"} …
        wxpay_reconcile_sweep_duration_seconds_bucket{le="0.01"} …
        wxpay_reconcile_sweep_duration_seconds_bucket{le="0.025"} …
        wxpay_reconcile_sweep_duration_seconds_bucket{le="0.05"} …
        wxpay_reconcile_sweep_duration_seconds_bucket{le="0.1"} …
        wxpay_reconcile_sweep_duration_seconds_bucket{le="0.25"} …
        wxpay_reconcile_sweep_duration_seconds_bucket{le="0.5"} …
        wxpay_reconcile_sweep_duration_seconds_bucket{le="1"} …
        wxpay_reconcile_sweep_duration_seconds_bucket{le="2.5"} …
        wxpay_reconcile_sweep_duration_seconds_bucket{le="5"} …
        wxpay_reconcile_sweep_duration_seconds_bucket{le="10"} …
        wxpay_reconcile_sweep_duration_seconds_bucket{le="30"} …
        wxpay_reconcile_sweep_duration_seconds_bucket{le="+Inf"} …
        wxpay_reconcile_sweep_duration_seconds_sum …
        wxpay_reconcile_sweep_duration_seconds_count 1
        # HELP wxpay_upstream_duration_seconds Latency of calls to WeChat Pay.
        # TYPE wxpay_upstream_duration_seconds histogram
        wxpay_upstream_duration_seconds_bucket{api="closeorder",le="0.005"} …
        wxpay_upstream_duration_seconds_bucket{api="closeorder",le="0.01"} …
        wxpay_upstream_duration_seconds_bucket{api="closeorder",le="0.025"} …
        wxpay_upstream_duration_seconds_bucket{api="closeorder",le="0.05"} …
        wxpay_upstream_duration_seconds_bucket{api="closeorder",le="0.1"} …
        wxpay_upstream_duration_seconds_bucket{api="closeorder",le="0.25"} …
        wxpay_upstream_duration_seconds_bucket{api="closeorder",le="0.5"} …
        wxpay_upstream_duration_seconds_bucket{api="closeorder",le="1"} …
        wxpay_upstream_duration_seconds_bucket{api="closeorder",le="2.5"} …
        wxpay_upstream_duration_seconds_bucket{api="closeorder",le="5"} …
        wxpay_upstream_duration_seconds_bucket{api="closeorder",le="10"} …
        wxpay_upstream_duration_seconds_bucket{api="closeorder",le="30"} …
        wxpay_upstream_duration_seconds_bucket{api="closeorder",le="+Inf"} …
        wxpay_upstream_duration_seconds_sum{api="closeorder"} …
        wxpay_upstream_duration_seconds_count{api="closeorder"} 0
        wxpay_upstream_duration_seconds_bucket{api="downloadbill",le="0.005"} …
        wxpay_upstream_duration_seconds_bucket{api="downloadbill",le="0.01"} …
        wxpay_upstream_duration_seconds_bucket{api="downloadbill",le="0.025"} …
        wxpay_upstream_duration_seconds_bucket{api="downloadbill",le="0.05"} …
        wxpay_upstream_duration_seconds_bucket{api="downloadbill",le="0.1"} …
        wxpay_upstream_duration_seconds_bucket{api="downloadbill",le="0.25"} …
        wxpay_upstream_duration_seconds_bucket{api="downloadbill",le="0.5"} …
        wxpay_upstream_duration_seconds_bucket{api="downloadbill",le="1"} …
        wxpay_upstream_duration_seconds_bucket{api="downloadbill",le="2.5"} …
        wxpay_upstream_duration_seconds_bucket{api="downloadbill",le="5"} …
        wxpay_upstream_duration_seconds_bucket{api="downloadbill",le="10"} …
        wxpay_upstream_duration_seconds_bucket{api="downloadbill",le="30"} …
        wxpay_upstream_duration_seconds_bucket{api="downloadbill",le="+Inf"} …
        wxpay_upstream_duration_seconds_sum{api="downloadbill"} …
        wxpay_upstream_duration_seconds_count{api="downloadbill"} 1
        wxpay_upstream_duration_seconds_bucket{api="orderquery",le="0.005"} …
        wxpay_upstream_duration_seconds_bucket{api="orderquery",le="0.01"} …
        wxpay_upstream_duration_seconds_bucket{api="orderquery",le="0.025"} …
        wxpay_upstream_duration_seconds_bucket{api="orderquery",le="0.05"} …
        wxpay_upstream_duration_seconds_bucket{api="orderquery",le="0.1"} …
        wxpay_upstream_duration_seconds_bucket{api="orderquery",le="0.25"} …
        wxpay_upstream_duration_seconds_bucket{api="orderquery",le="0.5"} …
        wxpay_upstream_duration_seconds_bucket{api="orderquery",le="1"} …
        wxpay_upstream_duration_seconds_bucket{api="orderquery",le="2.5"} …
        wxpay_upstream_duration_seconds_bucket{api="orderquery",le="5"} …
        wxpay_upstream_duration_seconds_bucket{api="orderquery",le="10"} …
        wxpay_upstream_duration_seconds_bucket{api="orderquery",le="30"} …
        wxpay_upstream_duration_seconds_bucket{api="orderquery",le="+Inf"} …
        wxpay_upstream_duration_seconds_sum{api="orderquery"} …
        wxpay_upstream_duration_seconds_count{api="orderquery"} 1
        wxpay_upstream_duration_seconds_bucket{api="refund",le="0.005"} …
        wxpay_upstream_duration_seconds_bucket{api="refund",le="0.01"} …
        wxpay_upstream_duration_seconds_bucket{api="refund",le="0.025"} …
        wxpay_upstream_duration_seconds_bucket{api="refund",le="0.05"} …
        wxpay_upstream_duration_seconds_bucket{api="refund",le="0.1"} …
        wxpay_upstream_duration_seconds_bucket{api="refund",le="0.25"} …
        wxpay_upstream_duration_seconds_bucket{api="refund",le="0.5"} …
        wxpay_upstream_duration_seconds_bucket{api="refund",le="1"} …
        wxpay_upstream_duration_seconds_bucket{api="refund",le="2.5"} …
        wxpay_upstream_duration_seconds_bucket{api="refund",le="5"} …
        wxpay_upstream_duration_seconds_bucket{api="refund",le="10"} …
        wxpay_upstream_duration_seconds_bucket{api="refund",le="30"} …
        wxpay_upstream_duration_seconds_bucket{api="refund",le="+Inf"} …
        wxpay_upstream_duration_seconds_sum{api="refund"} …
        wxpay_upstream_duration_seconds_count{api="refund"} 1
        wxpay_upstream_duration_seconds_bucket{api="refundquery",le="0.005"} …
        wxpay_upstream_duration_seconds_bucket{api="refundquery",le="0.01"} …
        wxpay_upstream_duration_seconds_bucket{api="refundquery",le="0.025"} …
        wxpay_upstream_duration_seconds_bucket{api="refundquery",le="0.05"} …
        wxpay_upstream_duration_seconds_bucket{api="refundquery",le="0.1"} …
        wxpay_upstream_duration_seconds_bucket{api="refundquery",le="0.25"} …
        wxpay_upstream_duration_seconds_bucket{api="refundquery",le="0.5"} …
        wxpay_upstream_duration_seconds_bucket{api="refundquery",le="1"} …
        wxpay_upstream_duration_seconds_bucket{api="refundquery",le="2.5"} …
        wxpay_upstream_duration_seconds_bucket{api="refundquery",le="5"} …
        wxpay_upstream_duration_seconds_bucket{api="refundquery",le="10"} …
        wxpay_upstream_duration_seconds_bucket{api="refundquery",le="30"} …
        wxpay_upstream_duration_seconds_bucket{api="refundquery",le="+Inf"} …
        wxpay_upstream_duration_seconds_sum{api="refundquery"} …
        wxpay_upstream_duration_seconds_count{api="refundquery"} 0
        wxpay_upstream_duration_seconds_bucket{api="unifiedorder",le="0.005"} …
        wxpay_upstream_duration_seconds_bucket{api="unifiedorder",le="0.01"} …
        wxpay_upstream_duration_seconds_bucket{api="unifiedorder",le="0.025"} …
        wxpay_upstream_duration_seconds_bucket{api="unifiedorder",le="0.05"} …
        wxpay_upstream_duration_seconds_bucket{api="unifiedorder",le="0.1"} …
        wxpay_upstream_duration_seconds_bucket{api="unifiedorder",le="0.25"} …
        wxpay_upstream_duration_seconds_bucket{api="unifiedorder",le="0.5"} …
        wxpay_upstream_duration_seconds_bucket{api="unifiedorder",le="1"} …
        wxpay_upstream_duration_seconds_bucket{api="unifiedorder",le="2.5"} …
        wxpay_upstream_duration_seconds_bucket{api="unifiedorder",le="5"} …
        wxpay_upstream_duration_seconds_bucket{api="unifiedorder",le="10"} …
        wxpay_upstream_duration_seconds_bucket{api="unifiedorder",le="30"} …
        wxpay_upstream_duration_seconds_bucket{api="unifiedorder",le="+Inf"} …
        wxpay_upstream_duration_seconds_sum{api="unifiedorder"} …
        wxpay_upstream_duration_seconds_count{api="unifiedorder"} 2
        # HELP wxpay_wait_duration_seconds How long a held wait (an order's or a refund's) lasted until it answered, by how it ended: final, ran out (open), or cancelled (its client left, or a shutdown).
        # TYPE wxpay_wait_duration_seconds histogram
        wxpay_wait_duration_seconds_bucket{state="open",le="0.005"} …
        wxpay_wait_duration_seconds_bucket{state="open",le="0.01"} …
        wxpay_wait_duration_seconds_bucket{state="open",le="0.025"} …
        wxpay_wait_duration_seconds_bucket{state="open",le="0.05"} …
        wxpay_wait_duration_seconds_bucket{state="open",le="0.1"} …
        wxpay_wait_duration_seconds_bucket{state="open",le="0.25"} …
        wxpay_wait_duration_seconds_bucket{state="open",le="0.5"} …
        wxpay_wait_duration_seconds_bucket{state="open",le="1"} …
        wxpay_wait_duration_seconds_bucket{state="open",le="2.5"} …
        wxpay_wait_duration_seconds_bucket{state="open",le="5"} …
        wxpay_wait_duration_seconds_bucket{state="open",le="10"} …
        wxpay_wait_duration_seconds_bucket{state="open",le="30"} …
        wxpay_wait_duration_seconds_bucket{state="open",le="+Inf"} …
        wxpay_wait_duration_seconds_sum{state="open"} …
        wxpay_wait_duration_seconds_count{state="open"} 1
        # HELP wxpay_app_rate_limited_total App-token requests refused by a per-user limit (429), by limit.
        # TYPE wxpay_app_rate_limited_total counter
        # HELP wxpay_app_token_refusals_total App tokens refused (401 invalid_token), by the rule they broke.
        # TYPE wxpay_app_token_refusals_total counter
        # HELP wxpay_appstore_consumption_answers_total Consumption requests answered, by who answered (business, defaults) and consent.
        # TYPE wxpay_appstore_consumption_answers_total counter
        # HELP wxpay_appstore_consumption_expired_total Consumption requests whose 12 hours passed before an answer was sent.
        # TYPE wxpay_appstore_consumption_expired_total counter
        # HELP wxpay_appstore_consumption_requests_total Consumption requests (CONSUMPTION_REQUEST) recorded, by environment.
        # TYPE wxpay_appstore_consumption_requests_total counter
        # HELP wxpay_appstore_consumption_sent_total Attempts to send consumption information to Apple, by outcome (accepted, refused, retry).
        # TYPE wxpay_appstore_consumption_sent_total counter
        # HELP wxpay_appstore_receipts_read_total App receipts read locally (StoreKit 1 reports with the Server API), by outcome.
        # TYPE wxpay_appstore_receipts_read_total counter
        # HELP wxpay_appstore_refunds_reversed_total Orders moved back to SUCCESS because Apple reversed its refund (REFUND_REVERSED).
        # TYPE wxpay_appstore_refunds_reversed_total counter
        # HELP wxpay_appstore_refunds_total Orders moved to REFUND because Apple refunded or revoked their transaction.
        # TYPE wxpay_appstore_refunds_total counter
        # HELP wxpay_appstore_report_lines_suppressed_total Repeated iOS reports of one order within a minute that added no timeline line.
        # TYPE wxpay_appstore_report_lines_suppressed_total counter
        # HELP wxpay_appstore_subscription_changes_total Changes to what an App Store subscription grants (its status, its end, its renewal), by the status it came to.
        # TYPE wxpay_appstore_subscription_changes_total counter
        # HELP wxpay_appstore_subscription_checks_total The reconciler's reads of Get All Subscription Statuses, by outcome (ok, not_found, error).
        # TYPE wxpay_appstore_subscription_checks_total counter
        # HELP wxpay_appstore_upstream_errors_total Failed calls to the App Store (Server API, verifyReceipt) by API and error.
        # TYPE wxpay_appstore_upstream_errors_total counter
        # HELP wxpay_audit_failures_total Audit log entries that could not be written (the request was refused or, after an action, logged).
        # TYPE wxpay_audit_failures_total counter
        # HELP wxpay_bill_differences_total Bill comparison findings by kind (settled_from_bill is a repair).
        # TYPE wxpay_bill_differences_total counter
        # HELP wxpay_console_logins_paced_total Console login attempts that waited their turn: their name failed too often from many addresses.
        # TYPE wxpay_console_logins_paced_total counter
        # HELP wxpay_console_refusals_total Console requests refused, by reason (csrf, form, role, session).
        # TYPE wxpay_console_refusals_total counter
        # HELP wxpay_outbox_errors_total Outbox store failures.
        # TYPE wxpay_outbox_errors_total counter
        # HELP wxpay_refunds_outside_gateway_total Paid orders WeChat reports REFUND without a refund of the gateway's (flagged for support).
        # TYPE wxpay_refunds_outside_gateway_total counter
        # HELP wxpay_refunds_refused_total Refunds WeChat refused before accepting them (they end REFUNDCLOSE), by reason.
        # TYPE wxpay_refunds_refused_total counter
        # HELP wxpay_transaction_mismatches_total Paid orders WeChat reported paid again under another transaction id (flagged for support).
        # TYPE wxpay_transaction_mismatches_total counter

        """
}

// SPDX-License-Identifier: Apache-2.0
import Foundation
import Observability
import StorageCore
import WeChatPay

/// The query flow: what WeChat holds of an order, asked and settled through the one door. Every
/// caller — held waits (OrderQueries+Wait.swift), create's and close's ORDERPAID, support's
/// recheck, the reconciler, the bill comparison — comes here, one query per order at a time
/// (`Upstream.queries`). An app user's list of orders is here too (App/OrderCursor.swift).
public final class OrderQueries: OrderFlow {
    let context: GatewayContext
    /// The reads and rechecks of order queries, a few at a time (OrderQueries+Wait.swift).
    let queryWork = OrderQueryWork()

    /// Made by `GatewayServices`, the composition root.
    init(context: GatewayContext) {
        self.context = context
        listenForChangesElsewhere()
    }

    /// Asks WeChat (orderquery) and settles what it says. One query per order at a time.
    /// - Parameters:
    ///   - fresh: the answer must come from a query sent now, not one already in flight.
    ///   - includingFinal: ask even when the order is final (a support recheck).
    ///   - paced: ask only if no orderquery about the order ended within the poll interval (polls).
    @discardableResult
    func refresh(_ outTradeNo: String, reason: String, fresh: Bool = false, includingFinal: Bool = false,
                 paced: Bool = false) async -> OrderRecord?
    {
        let ask = { @Sendable [self] in
            await self.queryAndSettle(outTradeNo, reason: reason, includingFinal: includingFinal, paced: paced)
        }
        if fresh && upstream.queries.isRunning(outTradeNo) {
            // The query in flight may have left before the news that prompted this one
            // (closeorder's ORDERPAID, a person asking now): let it finish, then ask again.
            _ = await upstream.queries.run(outTradeNo, ask)
            if !includingFinal, let order = try? await store.order(outTradeNo), order.state.isFinal { return order }
        }
        return await upstream.queries.run(outTradeNo, ask)
    }

    /// Asks WeChat (orderquery) about one order and settles the answer through the one door. Every
    /// caller — waits, recheck, close, the reconciler, the bill comparison — comes here, inside the
    /// per-order single-flight (`upstream.queries`). `source` names the caller in the timeline
    /// (`orderquery`, `reconcile`, `bill`); a failed call's label goes to `failure` when given.
    ///
    /// A final order is asked about only with `includingFinal` (support's recheck): WeChat may
    /// hold a CLOSED order paid (it then settles as paid after close), and a SUCCESS order stays
    /// SUCCESS whatever the answer, as the one door allows no way out of it but REFUND.
    ///
    /// With `paced` (the waits' polls and the sweeps: routine checks, no news behind them) nothing
    /// is asked when an orderquery about the order ended within the poll interval: its answer is
    /// already settled, and WeChat hears about an order at most once per poll interval from this
    /// process. Queries prompted by news (closeorder's ORDERPAID, a support recheck, the bill) ask.
    func queryAndSettle(_ outTradeNo: String, reason: String, source: String = "orderquery",
                        failure: LockedBox<String?>? = nil, includingFinal: Bool = false,
                        paced: Bool = false) async -> OrderRecord? {
        guard let order = try? await store.order(outTradeNo) else { return nil }
        guard includingFinal || !order.state.isFinal else { return order }
        // WeChat knows nothing of an iOS order: the App Store's side is IAPService's.
        guard order.channel == .wechat else { return order }
        if let problem = upstream.unconfigured(.queryOrder, for: order) {
            await notAsked(order, problem, reason: reason, source: source)
            return order
        }
        if paced && upstream.isPaced(outTradeNo, interval: configuration.pollInterval) { return order }
        do {
            let trade = try await upstream.queryOrder(order)
            let at = now()
            _ = try? await store.touch(outTradeNo, .lastQueried, at: at)
            // A sweep checks long-unpaid orders again and again: the first check and every answer
            // other than NOTPAY are what a person needs to see in the timeline.
            if order.lastQueriedAt == nil || trade.state != .notPay || source != "reconcile" {
                _ = try? await store.appendEvent(
                    outTradeNo, kind: source, detail: "\(reason): orderquery trade_state=\(trade.state.rawValue)",
                    at: at)
            }
            return await settlement.apply(trade, to: order, source: source) ?? order
        } catch {
            if error.notFound {
                // unifiedorder never reached WeChat; the order is closed locally once it expires.
                _ = try? await store.touch(outTradeNo, .lastQueried, at: now())
                return order
            }
            failure?.update { $0 = error.shortDescription }
            let said = error.message.map { ": " + $0 } ?? ""
            _ = try? await store.appendEvent(
                outTradeNo, kind: "\(source)_failed", detail: String("\(reason): orderquery \(error.shortDescription)\(said)".prefix(256)),
                at: now())
            return order
        }
    }

    /// An order whose API version has no keys here (v3's removed after it was created) is not asked
    /// about, and that is not WeChat failing: no call is counted, the reconciler does not back off
    /// for it, and its last query time moves on so a sweep's batch moves on to other orders. Its
    /// timeline says so at most once a day per reason (the start of `serve` warns while any is in
    /// flight).
    func notAsked(_ order: OrderRecord, _ problem: UpstreamError, reason: String, source: String) async {
        let at = now()
        _ = try? await store.touch(order.outTradeNo, .lastQueried, at: at)
        _ = try? await store.appendEvent(
            order.outTradeNo, NewOrderEvent(kind: "\(source)_failed", detail: "\(reason): orderquery not sent: \(problem.shortDescription)", at: at),
            quietSince: at.addingTimeInterval(-Self.notAskedQuiet), matching: .kindAndDetail)
    }

    /// How often an order that cannot be asked about says so on its timeline, per reason.
    static let notAskedQuiet: TimeInterval = 86_400

    /// What the API answers when WeChat refused or failed; some answers also change the order.
    func upstreamFailure(_ error: UpstreamError, outTradeNo: String, api: String) async -> APIError {
        // Not WeChat's refusal: it was never asked (the order's API version has no keys here).
        if error.isUnconfiguredVersion { return .apiVersionNotConfigured(error) }
        let at = now()
        // WeChat's own words (err_code_des, return_msg, v3's message) go on the timeline for
        // support: "PARAM_ERROR" alone does not say which parameter.
        let detail = error.message.map { error.shortDescription + ": " + $0 } ?? error.shortDescription
        _ = try? await store.appendEvent(outTradeNo, kind: "\(api)_failed", detail: String(detail.prefix(256)), at: at)
        switch error.advice {
        case .treatAsPaid:
            // ORDERPAID: WeChat says it is paid; believe it only after a verified orderquery.
            _ = await refresh(outTradeNo, reason: "\(api) answered ORDERPAID", fresh: true)
            return .conflict("the order with this out_trade_no is already paid")
        case .treatAsClosed:
            if let order = try? await store.order(outTradeNo) {
                _ = try? await settlement.close(order, detail: "\(api) answered ORDERCLOSED")
            }
            return .conflict("the order with this out_trade_no is closed")
        default:
            break
        }
        // The app's appid is not bound to the merchant: v3's APPID_MCHID_NOT_MATCH, v2's protocol
        // failure "appid和mch_id不匹配" (the simulator's v2 says it as err_code). No retry helps;
        // the operator binds the appid (merchant platform, AppID account management).
        if error.code == "APPID_MCHID_NOT_MATCH"
            || (error.kind == .protocolFailure && error.message?.contains("mch_id不匹配") == true)
        {
            return .appIDNotBound(error.code ?? "RETURN_FAIL")
        }
        // A JSAPI payer's openid under another app id: v2's PARAM_ERROR "appid和openid不匹配",
        // v3's PARAM_ERROR on payer.openid. The client must send the right openid.
        if error.code == "PARAM_ERROR", error.message?.lowercased().contains("openid") == true {
            return .openIDNotForApp("PARAM_ERROR")
        }
        if error.isRetryable || error.mayHaveTakenEffect || error.kind == .transport || error.kind == .httpStatus
            || error.kind == .malformedResponse || error.kind == .badSignature
        {
            return .upstreamUnavailable
        }
        if let code = error.code {
            return .upstreamRejected(code, "WeChat Pay refused the request (\(code))")
        }
        return .upstreamRejected("RETURN_FAIL", "WeChat Pay refused the request")
    }
}

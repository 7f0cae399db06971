// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import WeChatPay

/// The seam's one implementation the flows are given, and the one place that decides which API
/// version speaks each call (`apiVersion(of:for:)`):
///
/// - a call about an order goes to the version the order was created with
///   (`OrderRecord.apiVersion`), so orders made under v2 finish in v2 after the merchant switches
///   new orders to v3, and the other way round;
/// - except where v2 cannot sign it: without the v2 key (WXPAY_API_KEY unset, allowed only under
///   WXPAY_API_VERSION=v3) a v2 order's query, close, refund and refund query go through v3,
///   which finds an order by its out_trade_no whichever version created it; without the merchant
///   certificate v2 cannot refund, so a v2 order's refund goes through v3 (which needs none);
/// - a v2 order's prepay (and its app parameters) belong to v2 alone: without the v2 key it is
///   refused (`v2_not_configured`);
/// - the bill, which belongs to no order, comes through the version new orders use.
struct VersionedUpstream: WeChatPayUpstream {
    /// Nil without the v2 key: v2 then signs nothing.
    let v2: (any WeChatPayUpstream)?
    /// Whether v2 can send a refund: the merchant certificate is configured (or demo mode's
    /// simulator takes refunds in process).
    let v2Refunds: Bool
    /// Nil while v3 is not configured: a v3 order then cannot be spoken about (a configuration error).
    let v3: (any WeChatPayUpstream)?
    let newOrders: WeChatPayAPIVersion

    func apiVersion(of call: UpstreamCall, for order: OrderRecord?) -> WeChatPayAPIVersion {
        guard let order else { return newOrders == .v3 && v3 != nil ? .v3 : .v2 }
        if order.apiVersion == WeChatPayAPIVersion.v3.rawValue { return .v3 }
        let v2Signs = v2 != nil && (call != .refund || v2Refunds)
        return switch call {
        case .prepay: .v2
        case .queryOrder, .closeOrder, .refund, .queryRefund, .bill: v2Signs || v3 == nil ? .v2 : .v3
        }
    }

    func unconfigured(_ call: UpstreamCall, for order: OrderRecord) -> UpstreamError? {
        do { _ = try api(call, for: order) } catch { return error }
        return nil
    }

    private func api(_ call: UpstreamCall, for order: OrderRecord) throws(UpstreamError) -> any WeChatPayUpstream {
        switch apiVersion(of: call, for: order) {
        case .v2:
            guard let v2 else { throw .v2NotConfigured }
            return v2
        case .v3:
            guard let v3 else { throw .v3NotConfigured }
            return v3
        }
    }

    func prepay(_ order: OrderRecord, notifyURL: String) async throws(UpstreamError) -> StoredPrepay {
        try await api(.prepay, for: order).prepay(order, notifyURL: notifyURL)
    }

    func appPayment(for order: OrderRecord, prepayID: String, issuedAt: Date) throws(UpstreamError) -> AppPayRequest {
        try api(.prepay, for: order).appPayment(for: order, prepayID: prepayID, issuedAt: issuedAt)
    }

    func jsapiPayment(for order: OrderRecord, prepayID: String, issuedAt: Date) throws(UpstreamError) -> JSAPIPayRequest {
        try api(.prepay, for: order).jsapiPayment(for: order, prepayID: prepayID, issuedAt: issuedAt)
    }

    func queryOrder(_ order: OrderRecord) async throws(UpstreamError) -> UpstreamTrade {
        try await api(.queryOrder, for: order).queryOrder(order)
    }

    func closeOrder(_ order: OrderRecord) async throws(UpstreamError) -> UpstreamClosing {
        try await api(.closeOrder, for: order).closeOrder(order)
    }

    func refund(_ refund: RefundRecord, order: OrderRecord) async throws(UpstreamError) -> UpstreamRefundAcceptance {
        try await api(.refund, for: order).refund(refund, order: order)
    }

    func queryRefund(_ outRefundNo: String, order: OrderRecord) async throws(UpstreamError) -> UpstreamRefundReport {
        try await api(.queryRefund, for: order).queryRefund(outRefundNo, order: order)
    }

    func bill(day: String) async throws(UpstreamError) -> [BillRow] {
        switch apiVersion(of: .bill, for: nil) {
        case .v3:
            guard let v3 else { throw .v3NotConfigured }
            return try await v3.bill(day: day)
        case .v2:
            guard let v2 else { throw .v2NotConfigured }
            return try await v2.bill(day: day)
        }
    }
}

extension UpstreamError {
    /// One of the two errors below: nothing was sent, the order's version has no keys here.
    var isUnconfiguredVersion: Bool { self == .v3NotConfigured || self == .v2NotConfigured }

    /// A v3 order while the gateway has no v3 keys (they were removed after it was created).
    static let v3NotConfigured = UpstreamError(
        kind: .invalidRequest, advice: .fixConfiguration, mayHaveTakenEffect: false, shortDescription: "v3_not_configured",
        description: "the order was created with WeChat Pay API v3, and API v3 is not configured (WXPAY_API_V3_KEY …)")

    /// A call only v2 can make (a v2 order's prepay) while the v2 key is not configured.
    static let v2NotConfigured = UpstreamError(
        kind: .invalidRequest, advice: .fixConfiguration, mayHaveTakenEffect: false, shortDescription: "v2_not_configured",
        description: "the order was created with WeChat Pay API v2, and its v2 key (WXPAY_API_KEY) is not configured")
}

// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import WeChatPay

/// The seam's one implementation the flows are given: each call about an order goes to the API
/// version the order was created with (`OrderRecord.apiVersion`), so orders made under v2 finish
/// in v2 after the merchant switches new orders to v3, and the other way round. The bill, which
/// belongs to no order, comes through the version new orders use.
struct VersionedUpstream: WeChatPayUpstream {
    let v2: any WeChatPayUpstream
    /// Nil while v3 is not configured: a v3 order then cannot be spoken about (a configuration error).
    let v3: (any WeChatPayUpstream)?
    let newOrders: WeChatPayAPIVersion

    private func api(for order: OrderRecord) throws(UpstreamError) -> any WeChatPayUpstream {
        guard order.apiVersion == WeChatPayAPIVersion.v3.rawValue else { return v2 }
        guard let v3 else { throw .v3NotConfigured }
        return v3
    }

    func prepay(_ order: OrderRecord, notifyURL: String) async throws(UpstreamError) -> String {
        try await api(for: order).prepay(order, notifyURL: notifyURL)
    }

    func appPayment(for order: OrderRecord, prepayID: String, issuedAt: Date) throws(UpstreamError) -> AppPayRequest {
        try api(for: order).appPayment(for: order, prepayID: prepayID, issuedAt: issuedAt)
    }

    func queryOrder(_ order: OrderRecord) async throws(UpstreamError) -> UpstreamTrade {
        try await api(for: order).queryOrder(order)
    }

    func closeOrder(_ order: OrderRecord) async throws(UpstreamError) -> UpstreamClosing {
        try await api(for: order).closeOrder(order)
    }

    func refund(_ refund: RefundRecord, order: OrderRecord) async throws(UpstreamError) -> UpstreamRefundAcceptance {
        try await api(for: order).refund(refund, order: order)
    }

    func queryRefund(_ outRefundNo: String, order: OrderRecord) async throws(UpstreamError) -> UpstreamRefundReport {
        try await api(for: order).queryRefund(outRefundNo, order: order)
    }

    func bill(day: String) async throws(UpstreamError) -> [BillRow] {
        try await (newOrders == .v3 ? v3 ?? v2 : v2).bill(day: day)
    }
}

extension UpstreamError {
    /// A v3 order while the gateway has no v3 keys (they were removed after it was created).
    static let v3NotConfigured = UpstreamError(
        kind: .invalidRequest, advice: .fixConfiguration, mayHaveTakenEffect: false, shortDescription: "v3_not_configured",
        description: "the order was created with WeChat Pay API v3, and API v3 is not configured (WXPAY_API_V3_KEY …)")
}

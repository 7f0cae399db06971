// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

/// A NATIVE (PC web) order's QR code: which order may show one, to whom. The image itself is drawn
/// by the API (GatewayAPI+QRCode.swift) from the `code_url` this answers.
extension OrderQueries {
    /// The `code_url` of `outTradeNo` for its QR code.
    ///
    /// With `owner` (an app token's user), another user's order is `order_not_found`, as GET order
    /// answers. An order that has no `code_url` (another trade type, an iOS order, a NATIVE order
    /// whose unifiedorder never answered) is `no_qr_code`; a final one (paid, refunded, closed) is
    /// `order_not_payable`: its code can no longer be paid, and a page still showing it should stop;
    /// so is one past its `expires_at` (WeChat closes it then) before the reconciler closes it here.
    /// A code_url more than 2 hours old is `qr_code_expired`: WeChat no longer takes it, and an
    /// identical create gets a new one.
    func qrCodeURL(_ outTradeNo: String, owner: String?) async throws(APIError) -> String {
        guard let order = try await storage({ () throws(StorageError) in try await self.store.order(outTradeNo) }),
              Self.isVisible(order, to: owner)
        else {
            throw .orderNotFound
        }
        guard let codeURL = order.codeURL, !codeURL.isEmpty else {
            throw .noQRCode(order)
        }
        if order.state.isFinal { throw .orderNotPayable(state: order.state.rawValue) }
        guard !order.hasExpiredUnpaid(at: now()) else { throw .orderNotPayable(expiredAt: order.expiresAt) }
        guard order.hasLivePrepay(at: now()) else { throw .qrCodeExpired }
        return codeURL
    }
}

extension APIError {
    /// An order with no `code_url` to draw, saying why: it is an iOS purchase or another trade
    /// type (only a NATIVE order has one), or a NATIVE order WeChat has not answered yet.
    static func noQRCode(_ order: OrderRecord) -> APIError {
        let why = if order.channel == .apple {
            "it is an iOS purchase; only a WeChat native (PC web) order has a QR code"
        } else if order.tradeType == "NATIVE" {
            "WeChat has not given this native order a code_url (its prepay failed or is pending): repeat the create to ask again"
        } else {
            "only a WeChat native (PC web) order has a QR code; this order's trade_type is \(order.tradeType ?? "APP")"
        }
        return APIError(status: 409, code: "no_qr_code", message: why)
    }
    /// A QR code asked for a payable order whose code_url WeChat no longer takes (2 hours old).
    static let qrCodeExpired = APIError(
        status: 409, code: "qr_code_expired",
        message: "the order's code_url has expired (WeChat keeps one 2 hours): repeat the create with the same parameters for a new one")
    /// A QR code asked for an order that is final: its code_url can no longer be paid.
    static func orderNotPayable(state: String) -> APIError {
        APIError(status: 410, code: "order_not_payable",
                 message: "the order is \(state): its QR code can no longer be paid")
    }
    /// The same for an unpaid order past its `expires_at`.
    static func orderNotPayable(expiredAt: Date) -> APIError {
        APIError(status: 410, code: "order_not_payable",
                 message: "the order expired unpaid at \(Timestamp.rfc3339(expiredAt)): its QR code can no longer be paid")
    }
    /// A repeated create of an unpaid order past its `expires_at`: WeChat has closed it, and would
    /// refuse a new prepay for a time_expire in the past.
    static func orderExpired(at expiredAt: Date) -> APIError {
        APIError(status: 410, code: "order_not_payable",
                 message: "the order expired unpaid at \(Timestamp.rfc3339(expiredAt)) and can no longer be paid; "
                     + "create a new order with another out_trade_no")
    }
}

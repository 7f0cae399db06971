// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import WeChatPay

/// WeChat Pay API v2 behind the upstream seam: signed XML through the protocol core's client, one
/// client per signature algorithm (an order is always spoken about with the algorithm it was
/// created with; a bill, which belongs to no order, with the configured one).
public struct WeChatPayV2Upstream: WeChatPayUpstream {
    private let clients: [SignType: WeChatPayClient]
    private let merchant: (appID: String, mchID: String)
    /// The algorithm of new orders and of the bill (WXPAY_SIGN_TYPE).
    private let signType: SignType
    /// The merchant key's signer, made once: its HMAC-SHA256 key schedule is two SHA-256 blocks.
    private let signer: Signer
    /// A bill larger than this after decompression is refused (WeChat's largest are far smaller).
    static let maximumBillBytes = 512 << 20

    /// - Parameters:
    ///   - key: the v2 API key (`configuration.apiKey`; without it v2 is not spoken at all).
    ///   - transport: how requests reach WeChat (libcurl in production, the simulator in demo mode
    ///     and tests).
    public init(configuration: GatewayConfiguration, key: APIKey, transport: any WeChatPayTransport,
                nonces: any NonceSource = RandomNonceSource()) {
        var clients: [SignType: WeChatPayClient] = [:]
        for type in SignType.allCases {
            let credentials = MerchantCredentials(appID: configuration.appID, mchID: configuration.mchID,
                                                  key: key, signType: type)
            clients[type] = WeChatPayClient(merchant: credentials, transport: transport, nonces: nonces)
        }
        self.clients = clients
        merchant = (configuration.appID, configuration.mchID)
        signType = configuration.signType
        signer = Signer(key: key)
    }

    private func client(for order: OrderRecord) -> WeChatPayClient {
        clients[SignType(rawValue: order.signType) ?? .hmacSHA256]!
    }

    /// unifiedorder, APP trade type: only nonce_str and sign change between sends.
    public func prepay(_ order: OrderRecord, notifyURL: String) async throws(UpstreamError) -> String {
        let request = UnifiedOrderRequest(
            body: order.description, outTradeNo: order.outTradeNo, totalFee: order.amount,
            spbillCreateIP: order.clientIP, notifyURL: notifyURL, tradeType: .app, attach: order.attach,
            timeExpire: BeijingTime.parse(order.timeExpire), productID: order.productID)
        return try await Self.speaking { () throws(WeChatPayError) in try await client(for: order).send(request).prepayID }
    }

    /// The SDK's PayReq, signed with the order's algorithm. Its noncestr is derived from the
    /// prepay_id under our key, and its timestamp is the prepay's issue time.
    public func appPayment(for order: OrderRecord, prepayID: String, issuedAt: Date) throws(UpstreamError) -> AppPayRequest {
        let type = SignType(rawValue: order.signType) ?? signType
        let nonce = signer.signature(for: ["prepayid": prepayID, "purpose": "app-noncestr"], type: .md5)
        let parameters: AppPayParameters
        do {
            parameters = try AppPayParameters(appID: merchant.appID, partnerID: merchant.mchID, prepayID: prepayID, nonce: nonce,
                                              timestamp: Int(issuedAt.timeIntervalSince1970), signType: type, signer: signer)
        } catch {
            throw UpstreamError(kind: .invalidRequest, advice: .fixRequest, mayHaveTakenEffect: false,
                                shortDescription: "invalid_request", description: "app parameters not signed: \(error)")
        }
        return AppPayRequest(appId: parameters.appId, partnerId: parameters.partnerId, prepayId: parameters.prepayId,
                             packageValue: parameters.packageValue, nonceStr: parameters.nonceStr,
                             timeStamp: parameters.timeStamp, sign: parameters.sign, signType: parameters.signType)
    }

    /// orderquery by out_trade_no.
    public func queryOrder(_ order: OrderRecord) async throws(UpstreamError) -> UpstreamTrade {
        let response = try await Self.speaking { () throws(WeChatPayError) in
            try await client(for: order).send(OrderQueryRequest(outTradeNo: order.outTradeNo))
        }
        return UpstreamTrade(outTradeNo: response.outTradeNo, state: response.tradeState, transactionID: response.transactionID,
                             amount: response.totalFee, paidAt: response.timeEnd)
    }

    /// closeorder: ORDERCLOSED is closed too, ORDERPAID is paid.
    public func closeOrder(_ order: OrderRecord) async throws(UpstreamError) -> UpstreamClosing {
        let response = try await Self.speaking { () throws(WeChatPayError) in
            try await client(for: order).send(CloseOrderRequest(outTradeNo: order.outTradeNo))
        }
        return switch response.outcome {
        case .closed, .alreadyClosed: .closed
        case .alreadyPaid: .alreadyPaid
        }
    }

    /// `/secapi/pay/refund` (mutual TLS: the transport presents the merchant certificate there).
    public func refund(_ refund: RefundRecord, order: OrderRecord) async throws(UpstreamError) -> UpstreamRefundAcceptance {
        let request = RefundRequest(
            order: .outTradeNo(refund.outTradeNo), outRefundNo: refund.outRefundNo, totalFee: refund.totalFee,
            refundFee: refund.amount, refundDescription: refund.reason, notifyURL: refund.notifyURL)
        let response = try await Self.speaking { () throws(WeChatPayError) in try await client(for: order).send(request) }
        return UpstreamRefundAcceptance(outRefundNo: response.outRefundNo, outTradeNo: response.outTradeNo,
                                        amount: response.refundFee, refundID: response.refundID)
    }

    /// refundquery by out_refund_no.
    public func queryRefund(_ outRefundNo: String, order: OrderRecord) async throws(UpstreamError) -> UpstreamRefundReport {
        let response = try await Self.speaking { () throws(WeChatPayError) in
            try await client(for: order).send(RefundQueryRequest(.outRefundNo(outRefundNo)))
        }
        return UpstreamRefundReport(outTradeNo: response.outTradeNo, refunds: response.refunds.map { refund in
            .init(outRefundNo: refund.outRefundNo, refundID: refund.refundID, amount: refund.refundFee, status: refund.status,
                  succeededAt: refund.successTime)
        })
    }

    /// downloadbill ALL, gzip. "No Bill Exist" (a day without transactions) is `notFound`.
    public func bill(day: String) async throws(UpstreamError) -> [BillRow] {
        let request = DownloadBillRequest(billDate: day.replacingOccurrences(of: "-", with: ""), billType: .all, gzip: true)
        let response: DownloadBillResponse
        do {
            response = try await clients[signType]!.send(request)
        } catch {
            var failure = UpstreamError(error)
            // "No Bill Exist": no transaction that day.
            failure.notFound = error.kind == .protocolFailure && error.returnMessage?.contains("No Bill Exist") == true
            throw failure
        }
        var text = response.body
        if response.isGzip {
            do {
                text = try Gzip.decompress(response.body, maximumOutput: Self.maximumBillBytes)
            } catch {
                throw .unreadableBill("gzip")
            }
        }
        do {
            return try Bill.parse(text).rows
        } catch {
            throw .unreadableBill(error.shortDescription)
        }
    }

    /// Runs a call of the protocol core, its failure in the seam's words.
    private static func speaking<T>(_ call: () async throws(WeChatPayError) -> T) async throws(UpstreamError) -> T {
        do {
            return try await call()
        } catch {
            throw UpstreamError(error)
        }
    }
}

extension UpstreamError {
    /// The protocol core's error in the seam's words; the descriptions and labels are its own.
    init(_ error: WeChatPayError) {
        self.init(kind: Kind(rawValue: error.kind.rawValue) ?? .invalidResponse, advice: error.advice,
                  mayHaveTakenEffect: error.mayHaveTakenEffect, code: error.errorCode?.rawValue,
                  codeLabel: error.errorCode?.description,
                  notFound: error.errorCode == .orderNotExist || error.errorCode == .refundNotExist,
                  httpStatus: error.httpStatus, message: error.returnMessage, shortDescription: error.shortDescription,
                  description: error.description)
    }

    /// A bill that arrived but cannot be read; `reason` is a stable label.
    static func unreadableBill(_ reason: String) -> UpstreamError {
        UpstreamError(kind: .unreadableBill, advice: .retryLater, mayHaveTakenEffect: false, shortDescription: reason,
                      description: "the bill could not be read (\(reason))")
    }
}

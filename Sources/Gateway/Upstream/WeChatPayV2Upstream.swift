// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON
import StorageCore
import WeChatPay

/// WeChat Pay API v2 behind the upstream seam: signed XML through the protocol core's client, one
/// client per signature algorithm (an order is always spoken about with the algorithm it was
/// created with; a bill, which belongs to no order, with the configured one).
public struct WeChatPayV2Upstream: WeChatPayUpstream {
    /// One client per app id and signature algorithm: every v2 call carries the app id its order
    /// was created through, and an answer naming another is refused by the client.
    private let clients: [String: [SignType: WeChatPayClient]]
    private let merchant: (appID: String, mchID: String)
    /// The mobile website MWEB orders declare in `scene_info` (WXPAY_H5_SITE_NAME, WXPAY_H5_SITE_URL).
    private let h5Site: WeChatApps.H5Site?
    /// The algorithm of new orders and of the bill (WXPAY_SIGN_TYPE).
    private let signType: SignType
    /// The merchant key's signer, made once: its HMAC-SHA256 key schedule is two SHA-256 blocks.
    private let signer: Signer
    private let key: APIKey
    private let transport: any WeChatPayTransport
    private let nonces: any NonceSource
    /// A bill larger than this after decompression is refused (WeChat's largest are far smaller).
    static let maximumBillBytes = 512 << 20

    /// - Parameters:
    ///   - key: the v2 API key (`configuration.apiKey`; without it v2 is not spoken at all).
    ///   - transport: how requests reach WeChat (libcurl in production, the simulator in demo mode
    ///     and tests).
    public init(configuration: GatewayConfiguration, key: APIKey, transport: any WeChatPayTransport,
                nonces: any NonceSource = RandomNonceSource()) {
        var clients: [String: [SignType: WeChatPayClient]] = [:]
        for appID in Set(configuration.apps.all.map(\.appID) + [configuration.appID]) {
            for type in SignType.allCases {
                let credentials = MerchantCredentials(appID: appID, mchID: configuration.mchID, key: key, signType: type)
                clients[appID, default: [:]][type] = WeChatPayClient(merchant: credentials, transport: transport, nonces: nonces)
            }
        }
        self.clients = clients
        merchant = (configuration.appID, configuration.mchID)
        h5Site = configuration.apps.h5Site
        signType = configuration.signType
        signer = Signer(key: key)
        self.key = key
        self.transport = transport
        self.nonces = nonces
    }

    /// The app id calls about `order` carry: its app's, or the default app's for an order made
    /// before apps had names.
    private func appID(of order: OrderRecord) -> String { order.appID ?? merchant.appID }

    /// The client of the order's app and algorithm; for an app id no longer configured (an order
    /// of an app since removed from WXPAY_APPS) one is made for the call, so it still carries its own.
    private func client(for order: OrderRecord) -> WeChatPayClient {
        let type = SignType(rawValue: order.signType) ?? .hmacSHA256
        let appID = appID(of: order)
        if let client = clients[appID]?[type] { return client }
        return WeChatPayClient(merchant: MerchantCredentials(appID: appID, mchID: merchant.mchID, key: key, signType: type),
                               transport: transport, nonces: nonces)
    }

    /// unifiedorder in the order's trade type: only nonce_str and sign change between sends. JSAPI
    /// sends the payer's openid, NATIVE a product_id (the catalog product's, else the order's
    /// number), MWEB the site's `scene_info` (h5_info of type Wap).
    public func prepay(_ order: OrderRecord, notifyURL: String) async throws(UpstreamError) -> StoredPrepay {
        let tradeType = TradeType(rawValue: order.tradeType ?? "APP")
        let request = UnifiedOrderRequest(
            body: order.description, outTradeNo: order.outTradeNo, totalFee: order.amount,
            spbillCreateIP: order.clientIP, notifyURL: notifyURL, tradeType: tradeType, attach: order.attach,
            timeExpire: BeijingTime.parse(order.timeExpire),
            openID: tradeType == .jsapi ? order.openID : nil,
            productID: tradeType == .native ? (order.productID ?? order.outTradeNo) : order.productID,
            sceneInfo: tradeType == .mweb ? h5Site.map(Self.sceneInfo) : nil)
        let response = try await Self.speaking { () throws(WeChatPayError) in try await client(for: order).send(request) }
        for (type, url, name) in [(TradeType.native, response.codeURL, "code_url"), (.mweb, response.mwebURL, "mweb_url")]
        where tradeType == type && url == nil {
            throw UpstreamError(kind: .invalidResponse, advice: .retrySameParameters, mayHaveTakenEffect: true,
                                shortDescription: "invalid_response", description: "WeChat Pay v2: unifiedorder answered no \(name)")
        }
        return StoredPrepay(prepayID: response.prepayID, codeURL: response.codeURL, mwebURL: response.mwebURL)
    }

    /// `{"h5_info":{"type":"Wap","wap_url":…,"wap_name":…}}`, keys sorted so every send is the same.
    static func sceneInfo(_ site: WeChatApps.H5Site) -> String {
        let info: JSONValue = ["h5_info": ["type": "Wap", "wap_url": .string(site.url), "wap_name": .string(site.name)]]
        return info.serialized(sortedKeys: true)
    }

    /// The SDK's PayReq, signed with the order's algorithm. Its noncestr is derived from the
    /// prepay_id under our key, and its timestamp is the prepay's issue time.
    public func appPayment(for order: OrderRecord, prepayID: String, issuedAt: Date) throws(UpstreamError) -> AppPayRequest {
        let type = SignType(rawValue: order.signType) ?? signType
        let nonce = signer.signature(for: ["prepayid": prepayID, "purpose": "app-noncestr"], type: .md5)
        let parameters: AppPayParameters
        do {
            parameters = try AppPayParameters(appID: appID(of: order), partnerID: merchant.mchID, prepayID: prepayID, nonce: nonce,
                                              timestamp: Int(issuedAt.timeIntervalSince1970), signType: type, signer: signer)
        } catch {
            throw UpstreamError(kind: .invalidRequest, advice: .fixRequest, mayHaveTakenEffect: false,
                                shortDescription: "invalid_request", description: "app parameters not signed: \(error)")
        }
        return AppPayRequest(appId: parameters.appId, partnerId: parameters.partnerId, prepayId: parameters.prepayId,
                             packageValue: parameters.packageValue, nonceStr: parameters.nonceStr,
                             timeStamp: parameters.timeStamp, sign: parameters.sign, signType: parameters.signType)
    }

    /// A JSAPI page's parameters, paySign with the order's algorithm over the five camelCase
    /// fields; the nonce derived from the prepay_id as the APP one is, the timestamp the issue time.
    public func jsapiPayment(for order: OrderRecord, prepayID: String, issuedAt: Date) throws(UpstreamError) -> JSAPIPayRequest {
        let type = SignType(rawValue: order.signType) ?? signType
        let nonce = signer.signature(for: ["prepayid": prepayID, "purpose": "jsapi-noncestr"], type: .md5)
        let parameters: JSAPIPayParameters
        do {
            parameters = try JSAPIPayParameters(appID: appID(of: order), prepayID: prepayID, nonce: nonce,
                                                timestamp: Int(issuedAt.timeIntervalSince1970), signType: type, signer: signer)
        } catch {
            throw UpstreamError(kind: .invalidRequest, advice: .fixRequest, mayHaveTakenEffect: false,
                                shortDescription: "invalid_request", description: "jsapi parameters not signed: \(error)")
        }
        return JSAPIPayRequest(appId: parameters.appId, timeStamp: parameters.timeStamp, nonceStr: parameters.nonceStr,
                               package: parameters.package, signType: parameters.signType, paySign: parameters.paySign)
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
            response = try await clients[merchant.appID]![signType]!.send(request)
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
                  httpStatus: error.httpStatus, message: error.returnMessage ?? error.errorCodeDescription,
                  shortDescription: error.shortDescription,
                  description: error.description)
    }

    /// A bill that arrived but cannot be read; `reason` is a stable label.
    static func unreadableBill(_ reason: String) -> UpstreamError {
        UpstreamError(kind: .unreadableBill, advice: .retryLater, mayHaveTakenEffect: false, shortDescription: reason,
                      description: "the bill could not be read (\(reason))")
    }
}

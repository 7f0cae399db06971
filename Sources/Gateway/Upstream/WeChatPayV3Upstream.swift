// SPDX-License-Identifier: Apache-2.0
import Crypto
import Foundation
import StorageCore
import WeChatPay
import WeChatPayV3

/// WeChat Pay API v3 behind the upstream seam: JSON requests signed with the merchant key, answers
/// verified by the serial they name (the WeChat Pay public key or a platform certificate) through
/// `V3Client`, WeChat's answers translated into the seam's words, which are v2's: the same trade
/// states, refund statuses, advice and bill lines, so the flows decide once for both versions.
public struct WeChatPayV3Upstream: WeChatPayUpstream {
    let client: V3Client
    private let merchant: (appID: String, mchID: String)
    /// The mobile website MWEB orders declare (WXPAY_H5_SITE_NAME, WXPAY_H5_SITE_URL).
    private let h5Site: WeChatApps.H5Site?
    /// Keys the app parameters' nonce, derived from the prepay_id (an identical create answers
    /// identical bytes) and unpredictable to anyone without the APIv3 key.
    private let nonceKey: HMACSHA256Key

    /// A bill larger than this after decompression is refused (as v2's).
    static let maximumBillBytes = WeChatPayV2Upstream.maximumBillBytes

    /// - Parameters:
    ///   - keys: the merchant's v3 keys and WeChat's, with the verifier the notifies share.
    ///   - transport: libcurl in production (one failover with v2), the simulator in demo mode and tests.
    public init(configuration: GatewayConfiguration, keys: V3Keys, transport: any WeChatPayV3Transport,
                nonces: any NonceSource = RandomNonceSource(), now: @escaping @Sendable () -> Date = { Date() }) {
        client = V3Client(signer: keys.signer, verifier: keys.verifier, apiV3Key: keys.apiV3Key, transport: transport,
                          nonces: nonces, now: now)
        merchant = (configuration.appID, configuration.mchID)
        h5Site = configuration.apps.h5Site
        nonceKey = HMACSHA256Key(keys.apiV3Key.bytes)
    }

    public func apiVersion(of call: UpstreamCall, for order: OrderRecord?) -> WeChatPayAPIVersion { .v3 }

    /// `POST /v3/pay/transactions/{app|jsapi|native|h5}` through the order's app: every retry,
    /// replay and refresh sends the same JSON (the order's stored parameters, its expiry as RFC
    /// 3339). v3's NATIVE and H5 answers carry no prepay_id: the order keeps its `code_url` in its
    /// place, and the prepay_id an `h5_url` names (the whole URL if it names none).
    public func prepay(_ order: OrderRecord, notifyURL: String) async throws(UpstreamError) -> StoredPrepay {
        let tradeType = V3TradeType(rawValue: order.tradeType ?? "APP") ?? .app
        let request = PrepayRequest(
            tradeType: tradeType, appID: appID(of: order), mchID: merchant.mchID, description: order.description,
            outTradeNo: order.outTradeNo, notifyURL: notifyURL, total: order.amount, timeExpire: RFC3339.format(order.expiresAt),
            attach: order.attach, payerClientIP: order.clientIP, payerOpenID: tradeType == .jsapi ? order.openID : nil,
            h5Site: tradeType == .mweb ? h5Site.map { PrepayRequest.H5Info(appName: $0.name, appURL: $0.url) } : nil)
        let body = try await call(try Self.built { () throws(WeChatPayV3Error) in try request.request() })
        let answer = try Self.read { () throws(WeChatPayV3Error) in try PrepayResponse(body: body, tradeType: tradeType) }
        switch answer {
        case .prepayID(let id): return StoredPrepay(prepayID: id)
        case .codeURL(let url): return StoredPrepay(prepayID: url, codeURL: url)
        case .h5URL(let url):
            let named = URLComponents(string: url)?.queryItems?.first { $0.name == "prepay_id" }?.value
            return StoredPrepay(prepayID: named ?? url, mwebURL: url)
        }
    }

    /// The app id calls about `order` carry: its app's, or the default app's for an order made
    /// before apps had names.
    private func appID(of order: OrderRecord) -> String { order.appID ?? merchant.appID }

    /// The SDK's PayReq with v3's signature: SHA256withRSA with the merchant key over
    /// `appId\ntimeStamp\nnonceStr\nprepayId\n` (deterministic, so a replay answers the same bytes).
    public func appPayment(for order: OrderRecord, prepayID: String, issuedAt: Date) throws(UpstreamError) -> AppPayRequest {
        let nonce = String(Hex.encode(nonceKey.authenticationCode(for: Array(("app-noncestr\n" + prepayID).utf8))).prefix(32))
        let parameters = V3AppPayParameters(appID: appID(of: order), mchID: merchant.mchID, prepayID: prepayID, nonce: nonce,
                                            timestamp: Int64(issuedAt.timeIntervalSince1970), signer: client.signer)
        return AppPayRequest(appId: parameters.appID, partnerId: parameters.partnerID, prepayId: parameters.prepayID,
                             packageValue: parameters.packageValue, nonceStr: parameters.nonceStr,
                             timeStamp: parameters.timeStamp, sign: parameters.sign, signType: "RSA")
    }

    /// A JSAPI page's parameters with v3's paySign: SHA256withRSA over
    /// `appId\ntimeStamp\nnonceStr\npackage\n`, the nonce derived as the APP one is.
    public func jsapiPayment(for order: OrderRecord, prepayID: String, issuedAt: Date) throws(UpstreamError) -> JSAPIPayRequest {
        let nonce = String(Hex.encode(nonceKey.authenticationCode(for: Array(("jsapi-noncestr\n" + prepayID).utf8))).prefix(32))
        let parameters = V3JSAPIPayParameters(appID: appID(of: order), prepayID: prepayID, nonce: nonce,
                                              timestamp: Int64(issuedAt.timeIntervalSince1970), signer: client.signer)
        return JSAPIPayRequest(appId: parameters.appID, timeStamp: parameters.timeStamp, nonceStr: parameters.nonceStr,
                               package: parameters.package, signType: V3JSAPIPayParameters.signType, paySign: parameters.paySign)
    }

    /// `GET /v3/pay/transactions/out-trade-no/{no}?mchid=`; an answer about another order is refused.
    public func queryOrder(_ order: OrderRecord) async throws(UpstreamError) -> UpstreamTrade {
        let body = try await call(TransactionRequests.query(outTradeNo: order.outTradeNo, mchID: merchant.mchID))
        let transaction = try Self.read { () throws(WeChatPayV3Error) in try V3Transaction(body: body) }
        guard transaction.outTradeNo == order.outTradeNo else { throw .answerMismatch("out_trade_no") }
        guard transaction.mchID == merchant.mchID, transaction.appID == appID(of: order) else { throw .merchantMismatch }
        return UpstreamTrade(outTradeNo: transaction.outTradeNo, state: TradeState(rawValue: transaction.tradeState.rawValue),
                             transactionID: transaction.transactionID, amount: transaction.total,
                             paidAt: transaction.successTime.flatMap(RFC3339.parse))
    }

    /// `POST …/{no}/close` → 204 (repeatable); ORDERPAID is paid, ORDER_CLOSED closed.
    public func closeOrder(_ order: OrderRecord) async throws(UpstreamError) -> UpstreamClosing {
        do {
            _ = try await call(TransactionRequests.close(outTradeNo: order.outTradeNo, mchID: merchant.mchID))
            return .closed
        } catch where error.advice == .treatAsPaid {
            return .alreadyPaid
        } catch where error.advice == .treatAsClosed {
            return .closed
        }
    }

    /// `POST /v3/refund/domestic/refunds` with exactly the recorded parameters (no mutual TLS in v3).
    public func refund(_ refund: RefundRecord, order: OrderRecord) async throws(UpstreamError) -> UpstreamRefundAcceptance {
        let request = V3RefundRequest(order: .outTradeNo(refund.outTradeNo), outRefundNo: refund.outRefundNo, refund: refund.amount,
                                      total: refund.totalFee, reason: refund.reason, notifyURL: refund.notifyURL)
        let body = try await call(try Self.built { () throws(WeChatPayV3Error) in try request.request() })
        let answer = try Self.read { () throws(WeChatPayV3Error) in try V3Refund(body: body) }
        return UpstreamRefundAcceptance(outRefundNo: answer.outRefundNo, outTradeNo: answer.outTradeNo, amount: answer.refund,
                                        refundID: answer.refundID)
    }

    /// `GET /v3/refund/domestic/refunds/{out_refund_no}`: one refund, in v2's statuses (CLOSED is
    /// REFUNDCLOSE, ABNORMAL is CHANGE).
    public func queryRefund(_ outRefundNo: String, order: OrderRecord) async throws(UpstreamError) -> UpstreamRefundReport {
        let body = try await call(V3RefundRequest.query(outRefundNo: outRefundNo))
        let refund = try Self.read { () throws(WeChatPayV3Error) in try V3Refund(body: body) }
        guard refund.outRefundNo == outRefundNo else { throw .answerMismatch("out_refund_no") }
        return UpstreamRefundReport(outTradeNo: refund.outTradeNo, refunds: [
            .init(outRefundNo: refund.outRefundNo, refundID: refund.refundID, amount: refund.refund,
                  status: Self.refundStatus(refund.status), succeededAt: refund.successTime.flatMap(RFC3339.parse)),
        ])
    }

    static func refundStatus(_ status: V3RefundStatus) -> RefundStatus {
        switch status {
        case .success: .success
        case .closed: .refundClose
        case .processing: .processing
        case .abnormal: .change
        }
    }

    /// `GET /v3/bill/tradebill` (signed: where the file is and its SHA-1), then the file (unsigned,
    /// gzip), checked against the hash before a line of it is read. A day without a bill
    /// (NO_STATEMENT_EXIST) is `notFound`.
    public func bill(day: String) async throws(UpstreamError) -> [BillRow] {
        let request = TradeBillRequest(billDate: day, billType: "ALL", gzip: true)
        let answer: TradeBillResponse
        do {
            let body = try await call(try Self.built { () throws(WeChatPayV3Error) in try request.request() })
            answer = try Self.read { () throws(WeChatPayV3Error) in try TradeBillResponse(body: body) }
        } catch {
            var failure = error
            failure.notFound = failure.notFound || failure.code == "NO_STATEMENT_EXIST"
            throw failure
        }
        guard let download = answer.downloadRequest else { throw .invalidAnswer(WeChatPayV3Error(.invalidField, "download_url")) }
        let file: [UInt8]
        do {
            file = try await client.download(download)
        } catch {
            throw UpstreamError(error)
        }
        let text: [UInt8]
        do {
            text = try answer.checkedBill(file, gzip: request.gzip, maximumSize: Self.maximumBillBytes)
        } catch {
            throw .unreadableBill(error.shortDescription)
        }
        do {
            return try Bill.parse(text).rows
        } catch {
            throw .unreadableBill(error.shortDescription)
        }
    }

    /// Platform certificates fetched again (certificate mode): a download trusted only under a key
    /// already trusted. Returns the serials newly trusted.
    public func refreshCertificates() async throws(UpstreamError) -> [String] {
        do {
            return try await client.refreshCertificates()
        } catch {
            throw UpstreamError(error)
        }
    }

    private func call(_ request: V3Request) async throws(UpstreamError) -> [UInt8] {
        do {
            return try await client.call(request)
        } catch {
            throw UpstreamError(error)
        }
    }

    /// A request the protocol core refused to build: never sent.
    private static func built(_ make: () throws(WeChatPayV3Error) -> V3Request) throws(UpstreamError) -> V3Request {
        do {
            return try make()
        } catch {
            throw UpstreamError(kind: .invalidRequest, advice: .fixRequest, mayHaveTakenEffect: false,
                                shortDescription: "invalid_request", description: "the v3 request was not sent: \(error)")
        }
    }

    /// A verified answer that is not the document the endpoint defines.
    private static func read<T>(_ decode: () throws(WeChatPayV3Error) -> T) throws(UpstreamError) -> T {
        do {
            return try decode()
        } catch {
            throw .invalidAnswer(error)
        }
    }
}

extension UpstreamError {
    /// A v3 call's failure in the seam's words, decided as v2's are: transport and unverified
    /// answers are repeated; WeChat's error codes carry their advice (`V3ErrorBody.advice`); a 4xx
    /// with a code that refuses the request cannot have taken effect, a 5xx or an unknown code may have.
    init(_ error: V3CallError) {
        switch error {
        case .transport(let failure):
            self.init(kind: .transport, advice: .retrySameParameters, mayHaveTakenEffect: failure.mayHaveBeenDelivered,
                      shortDescription: "transport_" + failure.kind.rawValue, description: "WeChat Pay v3: \(failure)")
        case .failed(let body):
            let advice = body.advice
            let looksLikeCode = (1...64).contains(body.code.utf8.count)
                && body.code.utf8.allSatisfy { (0x41...0x5A).contains($0) || $0 == UInt8(ascii: "_") }
            let code = looksLikeCode ? body.code : "UNKNOWN"
            self.init(kind: looksLikeCode && code != "UNKNOWN" ? .business : .httpStatus, advice: advice,
                      mayHaveTakenEffect: !(400..<500).contains(body.status) || advice == .query, code: code, codeLabel: code,
                      notFound: advice == .doesNotExist, httpStatus: body.status,
                      message: Self.displayed(body),
                      shortDescription: looksLikeCode ? code.lowercased() : "http_status",
                      description: "WeChat Pay v3 answered \(body.status) \(code) (advice: \(advice))")
        case .unverified(let failure):
            self.init(kind: .badSignature, advice: .retrySameParameters, mayHaveTakenEffect: true,
                      shortDescription: failure.shortDescription, description: "WeChat Pay v3: the answer is not verified: \(failure)")
        case .malformed(let failure):
            self = .invalidAnswer(failure)
        }
    }

    /// v3's `message` (and the field it names) as a person may read it: printable, at most 128 characters.
    static func displayed(_ body: V3ErrorBody) -> String? {
        let text = body.message + (body.field.map { " (\($0))" } ?? "")
        let shown = String(String.UnicodeScalarView(text.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }).prefix(128))
        return shown.isEmpty ? nil : shown
    }

    /// A verified v3 answer that is not what the endpoint defines.
    static func invalidAnswer(_ error: WeChatPayV3Error) -> UpstreamError {
        UpstreamError(kind: .invalidResponse, advice: .retrySameParameters, mayHaveTakenEffect: true,
                      shortDescription: "invalid_response", description: "WeChat Pay v3: the answer is malformed: \(error)")
    }

    /// A signed answer about another order or refund than the one asked about.
    static func answerMismatch(_ field: String) -> UpstreamError {
        UpstreamError(kind: .answerMismatch, advice: .retrySameParameters, mayHaveTakenEffect: true,
                      shortDescription: "answer_mismatch", description: "WeChat Pay v3 answered about another \(field)")
    }

    static let merchantMismatch = UpstreamError(kind: .merchantMismatch, advice: .fixConfiguration, mayHaveTakenEffect: true,
                                                shortDescription: "merchant_mismatch",
                                                description: "WeChat Pay v3 answered for another appid or mchid")
}

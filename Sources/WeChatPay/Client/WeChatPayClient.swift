// SPDX-License-Identifier: Apache-2.0

/// The one request pipeline for every v2 endpoint.
///
/// ``send(_:)`` runs the same steps for every request type:
/// 1. business fields → validated against the endpoint's rules (nothing invalid is sent);
/// 2. envelope: `appid`, `mch_id`, `nonce_str` (from the injected ``NonceSource``), `sign_type`;
/// 3. `sign` with the merchant's key and sign type (sandbox: MD5 and the sandbox key);
/// 4. strict XML encoding, then the transport;
/// 5. a non-2xx status is a thrown error, never data;
/// 6. strict XML decoding; `return_code=FAIL` is a protocol failure;
/// 7. the response signature is verified with the algorithm the request used — never a weaker
///    one the response asks for — and a SUCCESS without `sign` is refused;
/// 8. `appid`/`mch_id` must echo the merchant's;
/// 9. `result_code=FAIL` becomes a business error with advice (or an outcome, for closeorder);
/// 10. the typed response is decoded, keeping every received field;
/// 11. it must be about what was asked (``WeChatPayRequest/mismatchedField(in:)``): a signed
///     answer about another order is refused, never believed.
///
/// downloadbill differs only where WeChat does: a successful bill is a file, returned as is.
///
/// ```swift
/// let client = WeChatPayClient(merchant: merchant, transport: curlTransport, nonces: randomNonces)
/// let prepay = try await client.send(UnifiedOrderRequest(...)).prepayID
/// let state = try await client.send(OrderQueryRequest(outTradeNo: "T1")).tradeState
/// ```
///
/// A value: cheap to copy and share between tasks; the transport owns connections.
public struct WeChatPayClient: Sendable {
    public let merchant: MerchantCredentials
    public let environment: WeChatPayEnvironment
    private let transport: any WeChatPayTransport
    private let nonces: any NonceSource

    /// - Parameters:
    ///   - merchant: the credentials requests are filled and signed with.
    ///   - environment: production (default) or the sandbox with its key.
    ///   - transport: the network (libcurl in production, ``InMemoryTransport`` in tests).
    ///   - nonces: where each `nonce_str` comes from.
    public init(
        merchant: MerchantCredentials, environment: WeChatPayEnvironment = .production,
        transport: any WeChatPayTransport, nonces: any NonceSource
    ) {
        self.merchant = merchant
        self.environment = environment
        self.transport = transport
        self.nonces = nonces
    }

    /// The same client in another environment, e.g. the sandbox once its key is fetched:
    ///
    /// ```swift
    /// let key = try await client.send(GetSignKeyRequest()).sandboxSignKey
    /// let sandbox = client.with(environment: .sandbox(signKey: key))
    /// ```
    public func with(environment: WeChatPayEnvironment) -> WeChatPayClient {
        WeChatPayClient(merchant: merchant, environment: environment, transport: transport, nonces: nonces)
    }

    /// Sends `request` through the pipeline and returns its typed response.
    /// - Throws: ``WeChatPayError`` for every failure; see its ``WeChatPayError/advice``.
    public func send<Request: WeChatPayRequest>(_ request: Request) async throws(WeChatPayError) -> Request.Response {
        let outgoing = try transportRequest(for: request)
        let incoming: TransportResponse
        do {
            incoming = try await transport.send(outgoing)
        } catch {
            throw .transport(error, api: Request.api)
        }
        let response = try decodeResponse(incoming, for: Request.self)
        if let field = request.mismatchedField(in: response) { throw .answerMismatch(field: field, api: Request.api) }
        return response
    }

    /// The key and algorithm requests to `api` are signed with, and the only ones its responses
    /// are accepted with: getsignkey always uses MD5 and the production key; the sandbox MD5 and
    /// its own key; production the merchant's choice.
    public func signing(for api: WeChatPayAPI) -> (signer: Signer, signType: SignType) {
        if api == .getSignKey { return (Signer(key: merchant.key), .md5) }
        switch environment {
        case .production: return (Signer(key: merchant.key), merchant.signType)
        case .sandbox(let signKey): return (Signer(key: signKey), .md5)
        }
    }

    /// Steps 1–4 of the pipeline without the network: the signed request as the transport gets it.
    public func transportRequest<Request: WeChatPayRequest>(for request: Request) throws(WeChatPayError) -> TransportRequest {
        let api = Request.api
        let business = request.businessFields()
        do {
            _ = try Request(fields: business)
        } catch {
            throw .invalidRequest(error, api: api)
        }
        let (signer, signType) = signing(for: api)
        if api.usesAppIDAndSignType, merchant.appID.isEmpty { throw .invalidConfiguration(field: "appid", api: api) }
        if merchant.mchID.isEmpty { throw .invalidConfiguration(field: "mch_id", api: api) }
        if signer.key.isEmpty { throw .invalidConfiguration(field: "key", api: api) }
        let nonce = nonces.nextNonce()
        guard RequestEnvelope.isValidNonce(nonce) else { throw .invalidNonce(api: api) }

        let envelope = RequestEnvelope(
            appID: api.usesAppIDAndSignType ? merchant.appID : nil, mchID: merchant.mchID, nonceStr: nonce,
            declaredSignType: api.usesAppIDAndSignType ? signType : nil)
        let fields = envelope.signedFields(business: business, signer: signer)
        let body: [UInt8]
        do {
            body = try FlatXML.encode(fields)
        } catch {
            throw .unencodableRequest(error, api: api)
        }
        let sandbox = environment.isSandbox
        return TransportRequest(
            path: api.path(sandbox: sandbox), body: body, needsClientCertificate: api.needsClientCertificate(sandbox: sandbox))
    }

    /// Steps 5–10 of the pipeline: what the transport returned, checked and decoded.
    public func decodeResponse<Request: WeChatPayRequest>(
        _ response: TransportResponse, for _: Request.Type
    ) throws(WeChatPayError) -> Request.Response {
        let api = Request.api
        guard (200..<300).contains(response.status) else { throw .httpStatus(response.status, api: api) }

        if api.returnsFile, !DownloadBillResponse.isXMLDocument(response.body) {
            guard let file = Request.Response(fileBody: response.body) else { throw .malformedResponse(.empty, api: api) }
            return file
        }

        let fields: Fields
        do {
            fields = try FlatXML.decode(response.body)
        } catch {
            throw .malformedResponse(error, api: api)
        }

        switch fields["return_code"] {
        case "SUCCESS": break
        case "FAIL": throw .protocolFailure(returnMessage: fields.nonEmpty("return_msg"), api: api)
        case nil, "": throw .invalidResponse(.missingField("return_code"), api: api)
        default: throw .invalidResponse(.invalidField("return_code"), api: api)
        }

        // Verified before anything else in the document is believed, including result_code.
        if api.requiresSignedResponse || fields.nonEmpty("sign") != nil {
            let (signer, signType) = signing(for: api)
            do {
                try signer.verify(fields, expected: signType)
            } catch {
                throw .badSignature(error, api: api)
            }
        }
        if let mchID = fields.nonEmpty("mch_id"), mchID != merchant.mchID {
            throw .merchantMismatch(field: "mch_id", api: api)
        }
        if api.usesAppIDAndSignType, let appID = fields.nonEmpty("appid"), appID != merchant.appID {
            throw .merchantMismatch(field: "appid", api: api)
        }

        if api.hasResultCode {
            switch fields["result_code"] {
            case "SUCCESS": break
            case "FAIL":
                let errorCode = WeChatPayErrorCode(rawValue: fields.nonEmpty("err_code") ?? "")
                if let outcome = Request.Response.acceptingBusinessFailure(errorCode, verifiedFields: fields) {
                    return outcome
                }
                throw .business(errorCode, description: fields.nonEmpty("err_code_des"), api: api)
            case nil, "": throw .invalidResponse(.missingField("result_code"), api: api)
            default: throw .invalidResponse(.invalidField("result_code"), api: api)
            }
        }

        do {
            return try Request.Response(verifiedFields: fields)
        } catch {
            throw .invalidResponse(error, api: api)
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
import WeChatPay
#if canImport(FoundationEssentials)
import FoundationEssentials
#else
import Foundation
#endif

/// The one request pipeline for every v3 endpoint, as `WeChatPayClient` is for v2:
/// 1. the request's exact bytes signed with the merchant key (`Authorization`), `Wechatpay-Serial`
///    naming the key WeChat should answer with;
/// 2. the transport;
/// 3. a status other than 2xx is a ``V3CallError/failed(_:)`` with WeChat's error body (unsigned:
///    believed only for its advice);
/// 4. a 2xx answer's signature verified over the raw body before anything of it is read; an
///    unknown serial in certificate mode refreshes the platform certificates once, then verifies again.
///
/// The bill file is the one unsigned answer: ``download(_:)`` fetches it, and its hash (in the
/// signed tradebill answer) is what proves it.
///
/// ```swift
/// let client = V3Client(signer: signer, verifier: verifier, apiV3Key: key, transport: transport, nonces: nonces, now: { Date() })
/// let body = try await client.call(TransactionRequests.query(outTradeNo: "T1", mchID: "1900000109"))
/// let transaction = try V3Transaction(body: body)
/// ```
public struct V3Client: Sendable {
    public let signer: MerchantSigner
    public let verifier: V3Verifier
    public let apiV3Key: APIv3Key
    private let transport: any WeChatPayV3Transport
    private let nonces: any NonceSource
    private let now: @Sendable () -> Date

    /// - Parameters:
    ///   - verifier: the WeChat Pay public key and/or the platform certificates (refreshed through
    ///     this client in certificate mode: ``refreshCertificates()``).
    ///   - nonces: each request's `nonce_str`.
    ///   - now: the signature timestamps' clock (wall time: WeChat refuses one 5 minutes off).
    public init(signer: MerchantSigner, verifier: V3Verifier, apiV3Key: APIv3Key, transport: any WeChatPayV3Transport,
                nonces: any NonceSource, now: @escaping @Sendable () -> Date) {
        self.signer = signer
        self.verifier = verifier
        self.apiV3Key = apiV3Key
        self.transport = transport
        self.nonces = nonces
        self.now = now
    }

    /// Sends `request`; the verified body of its 2xx answer (empty for 204).
    public func call(_ request: V3Request) async throws(V3CallError) -> [UInt8] {
        let response = try await send(request)
        guard (200..<300).contains(response.status) else {
            throw .failed(V3ErrorBody(status: response.status, body: response.body))
        }
        let message: V3SignedMessage
        do {
            message = try V3SignedMessage(headers: response.headers, body: response.body)
        } catch {
            throw .unverified(error)
        }
        do {
            try verifier.verify(message, now: now())
        } catch where error.code == .unknownSerial && verifier.platformCertificates != nil {
            // A rotation WeChat made since the last refresh: fetch once, then the serial must be known.
            try await refreshCertificates()
            do { try verifier.verify(message, now: now()) } catch { throw .unverified(error) }
        } catch {
            throw .unverified(error)
        }
        return response.body
    }

    /// Fetches a bill file (a signed GET of the download URL's path and query); its body as sent,
    /// unverified: check it against the tradebill answer's hash.
    public func download(_ request: V3Request) async throws(V3CallError) -> [UInt8] {
        let response = try await send(request)
        guard (200..<300).contains(response.status) else {
            throw .failed(V3ErrorBody(status: response.status, body: response.body))
        }
        return response.body
    }

    /// `GET /v3/certificates`, taken by the platform certificate store only when its answer verifies
    /// under a key it trusted before (the pinned certificate, an earlier download, the public key).
    /// Returns the serials newly trusted. In public-key mode there is nothing to refresh.
    @discardableResult
    public func refreshCertificates() async throws(V3CallError) -> [String] {
        guard let store = verifier.platformCertificates else { return [] }
        let response = try await send(PlatformCertificateDownload.request)
        guard (200..<300).contains(response.status) else {
            throw .failed(V3ErrorBody(status: response.status, body: response.body))
        }
        do {
            return try store.accept(V3SignedMessage(headers: response.headers, body: response.body), key: apiV3Key, now: now())
        } catch {
            throw .unverified(error)
        }
    }

    private func send(_ request: V3Request) async throws(V3CallError) -> V3TransportResponse {
        let headers = signer.headers(for: request, timestamp: Int64(now().timeIntervalSince1970.rounded(.down)),
                                     nonce: nonces.nextNonce(), wechatpaySerial: verifier.preferredSerial(at: now()))
        do {
            return try await transport.send(V3TransportRequest(method: request.method, url: request.url, headers: headers,
                                                               body: request.body))
        } catch {
            throw .transport(error)
        }
    }
}

/// Why a v3 call did not give a verified answer. The descriptions never quote a body or a key.
public enum V3CallError: Error, Sendable, Hashable, CustomStringConvertible {
    /// The request did not complete below HTTP; whether WeChat may have it is the error's to say.
    case transport(TransportError)
    /// WeChat answered with a status other than 2xx and its error body.
    case failed(V3ErrorBody)
    /// A 2xx answer whose signature did not verify (or a certificate download no trusted key vouches for).
    case unverified(WeChatPayV3Error)
    /// A verified answer that is not the document the endpoint defines.
    case malformed(WeChatPayV3Error)

    public var description: String {
        switch self {
        case .transport(let error): "\(error)"
        case .failed(let body): "\(body)"
        case .unverified(let error): "the answer is not verified: \(error)"
        case .malformed(let error): "the answer is malformed: \(error)"
        }
    }
}

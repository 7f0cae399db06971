// SPDX-License-Identifier: Apache-2.0

/// Why an App Store Server API call returned no answer. The description never contains the
/// bearer token or the key; what Apple wrote in `errorMessage` is shortened and kept printable.
public struct AppStoreServerAPIError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// The request was refused before sending (an id that cannot be a transaction id).
        case invalidRequest = "invalid_request"
        /// The network failed on every attempt.
        case transport
        /// 401: the key, issuer or bundle id is wrong, or the app is not yet approved.
        case unauthorized
        /// 429 with a `Retry-After` longer than the policy waits, or on the last attempt.
        case rateLimited = "rate_limited"
        /// 5xx on every attempt.
        case serverError = "server_error"
        /// 404 with errorCode 4040010 in every environment asked: no such transaction.
        case notFound = "not_found"
        /// Another error Apple answered (400, 403, other 404s), with its errorCode.
        case apiError = "api_error"
        /// A 2xx answer that is not the documented JSON.
        case malformedResponse = "malformed_response"
        /// Look Up Order ID asked of the sandbox, which Apple does not serve.
        case unsupportedInSandbox = "unsupported_in_sandbox"
    }

    public let kind: Kind
    /// The HTTP status of the last answer, if there was one.
    public let status: Int?
    /// Apple's `errorCode` (4040010 transaction id not found, 4290000 rate limit exceeded, …).
    public let errorCode: Int?
    /// For `rateLimited`: how long Apple asked to wait.
    public let retryAfter: Duration?
    let message: String?

    init(_ kind: Kind, status: Int? = nil, errorCode: Int? = nil, retryAfter: Duration? = nil, message: String? = nil) {
        self.kind = kind
        self.status = status
        self.errorCode = errorCode
        self.retryAfter = retryAfter
        self.message = message.map { String($0.unicodeScalars.filter { $0.value >= 0x20 && $0.value != 0x7F }.prefix(120)) }
    }

    /// Apple's error code for "Transaction id not found": the other environment may have it.
    public static let transactionIDNotFound = 4_040_010

    public var description: String {
        switch kind {
        case .invalidRequest: return "App Store Server API: invalid request (\(message ?? "refused before sending"))"
        case .transport: return "App Store Server API: \(message ?? "transport failure")"
        case .unauthorized:
            return "App Store Server API answered 401: key, issuer or bundle id wrong, or the app is not yet approved"
        case .rateLimited:
            let wait = retryAfter.map { " (retry after \($0.components.seconds) s)" } ?? ""
            return "App Store Server API answered 429: rate limit exceeded\(wait)"
        case .serverError: return "App Store Server API answered \(status ?? 500) on every attempt"
        case .notFound: return "App Store Server API: transaction id not found (4040010)"
        case .apiError:
            return "App Store Server API answered \(status ?? 0)" + (errorCode.map { " errorCode \($0)" } ?? "")
                + (message.map { ": \($0)" } ?? "")
        case .malformedResponse: return "App Store Server API: the answer is not the documented JSON"
        case .unsupportedInSandbox: return "App Store Server API: Look Up Order ID is not available in the sandbox"
        }
    }
}

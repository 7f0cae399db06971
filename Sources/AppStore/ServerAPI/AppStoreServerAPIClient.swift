// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON

/// The App Store Server API: transaction info, transaction history, refund history, order look-up,
/// notification history, and Send Consumption Information.
///
/// One pipeline for every endpoint: a fresh ES256 token per attempt; production first, then the
/// sandbox when production answers TransactionIdNotFound (4040010) and the sandbox is allowed
/// (App Review and TestFlight buy in the sandbox against the production build); 5xx and network
/// failures retried with exponential backoff, 429 after its `Retry-After`; 401 an error that says
/// what is usually wrong. Answers are returned signed: verify them with ``SignedDataVerifier``.
///
/// ```swift
/// let client = AppStoreServerAPIClient(credentials: credentials, transport: curl, clock: SystemAppStoreClock())
/// let info = try await client.transactionInfo("2000000812345678")
/// let transaction = try verifier.verifyTransaction(info.signedTransactionInfo)
/// var page = try await client.transactionHistory("2000000812345678")
/// while page.hasMore {
///     page = try await client.transactionHistory("2000000812345678",
///                                                query: .init(revision: page.revision), environment: page.environment)
/// }
/// ```
public struct AppStoreServerAPIClient: Sendable {
    /// Where the API is and how hard to try.
    public struct Configuration: Sendable, Hashable {
        /// Default `https://api.storekit.apple.com` (Apple's current documentation).
        public var productionBaseURL: String
        /// Default `https://api.storekit-sandbox.apple.com`.
        public var sandboxBaseURL: String
        /// Ask the sandbox when production does not know a transaction id. Default true.
        public var sandboxFallback: Bool
        public var retry: AppStoreRetryPolicy
        /// Lifetime of each bearer token. Default 5 minutes.
        public var tokenLifetime: TimeInterval

        public static let appleProductionBaseURL = "https://api.storekit.apple.com"
        public static let appleSandboxBaseURL = "https://api.storekit-sandbox.apple.com"

        public init(productionBaseURL: String = appleProductionBaseURL, sandboxBaseURL: String = appleSandboxBaseURL,
                    sandboxFallback: Bool = true, retry: AppStoreRetryPolicy = AppStoreRetryPolicy(),
                    tokenLifetime: TimeInterval = ServerAPICredentials.defaultTokenLifetime) {
            self.productionBaseURL = productionBaseURL
            self.sandboxBaseURL = sandboxBaseURL
            self.sandboxFallback = sandboxFallback
            self.retry = retry
            self.tokenLifetime = tokenLifetime
        }
    }

    public let credentials: ServerAPICredentials
    public let configuration: Configuration
    private let transport: any AppStoreTransport
    private let clock: any AppStoreClock

    public init(credentials: ServerAPICredentials, configuration: Configuration = Configuration(),
                transport: any AppStoreTransport, clock: any AppStoreClock) {
        self.credentials = credentials
        self.configuration = configuration
        self.transport = transport
        self.clock = clock
    }

    // MARK: - Endpoints

    /// Get Transaction Info: `GET /inApps/v1/transactions/{transactionId}` (finished transactions too).
    public func transactionInfo(_ transactionID: String, environment: AppStoreEnvironment? = nil)
        async throws(AppStoreServerAPIError) -> TransactionInfoResponse
    {
        try Self.checkIdentifier(transactionID)
        let (json, found) = try await get("/inApps/v1/transactions/\(transactionID)", query: [], environment: environment)
        guard let signed = json["signedTransactionInfo"]?.stringValue else { throw AppStoreServerAPIError(.malformedResponse) }
        return TransactionInfoResponse(environment: found, signedTransactionInfo: signed)
    }

    /// Get Transaction History v2: `GET /inApps/v2/history/{transactionId}`, 20 per page.
    /// - Parameter environment: nil asks production first (then the sandbox); pass the previous
    ///   page's environment when following `revision`.
    public func transactionHistory(_ transactionID: String, query: TransactionHistoryQuery = TransactionHistoryQuery(),
                                   environment: AppStoreEnvironment? = nil) async throws(AppStoreServerAPIError) -> TransactionHistoryPage {
        try Self.checkIdentifier(transactionID)
        var parameters: [(String, String)] = []
        if let revision = query.revision { parameters.append(("revision", revision)) }
        for product in query.productIDs { parameters.append(("productId", product)) }
        if let sort = query.sort { parameters.append(("sort", sort.rawValue)) }
        if let revoked = query.revoked { parameters.append(("revoked", revoked ? "true" : "false")) }
        let (json, found) = try await get("/inApps/v2/history/\(transactionID)", query: parameters, environment: environment)
        return try TransactionHistoryPage(json, environment: found)
    }

    /// Get Refund History v2: `GET /inApps/v2/refund/lookup/{transactionId}`.
    public func refundHistory(_ transactionID: String, revision: String? = nil, environment: AppStoreEnvironment? = nil)
        async throws(AppStoreServerAPIError) -> TransactionHistoryPage
    {
        try Self.checkIdentifier(transactionID)
        let (json, found) = try await get(
            "/inApps/v2/refund/lookup/\(transactionID)", query: revision.map { [("revision", $0)] } ?? [], environment: environment)
        return try TransactionHistoryPage(json, environment: found)
    }

    /// Look Up Order ID: `GET /inApps/v1/lookup/{orderId}`, the id on the customer's invoice.
    /// Production only: Apple does not serve it in the sandbox.
    public func lookUpOrder(_ orderID: String, environment: AppStoreEnvironment = .production)
        async throws(AppStoreServerAPIError) -> OrderLookupResponse
    {
        guard environment == .production else { throw AppStoreServerAPIError(.unsupportedInSandbox) }
        try Self.checkIdentifier(orderID)
        let (json, _) = try await get("/inApps/v1/lookup/\(orderID)", query: [], environment: .production)
        guard let status = json["status"]?.intValue else { throw AppStoreServerAPIError(.malformedResponse) }
        let signed = (json["signedTransactions"]?.arrayValue ?? []).compactMap(\.stringValue)
        return OrderLookupResponse(status: Int(status), signedTransactions: signed)
    }

    /// Get Notification History: `POST /inApps/v1/notifications/history[?paginationToken=…]`, 20
    /// notifications a page, every one Apple sent (or keeps trying to send) in the request's window
    /// of the last 180 days, each with its send attempts. Asked of one environment (no fallback:
    /// each environment has a history of its own).
    public func notificationHistory(_ request: NotificationHistoryRequest, paginationToken: String? = nil,
                                    environment: AppStoreEnvironment) async throws(AppStoreServerAPIError)
        -> NotificationHistoryPage
    {
        let (json, _) = try await send(
            .post, "/inApps/v1/notifications/history", query: paginationToken.map { [("paginationToken", $0)] } ?? [],
            body: request.json.bytes(), environment: environment)
        guard let json else { throw AppStoreServerAPIError(.malformedResponse) }
        return try NotificationHistoryPage(json)
    }

    /// Send Consumption Information (v2): `PUT /inApps/v2/transactions/consumption/{transactionId}`;
    /// Apple answers 202 Accepted. Production first, then the sandbox when production does not know
    /// the transaction (as for Get Transaction Info), unless `environment` says where it is.
    /// A body Apple refuses is `.apiError` with Apple's `errorCode` (4000035 InvalidCustomerConsented,
    /// 4000036 InvalidDeliveryStatus, …): sending it again would be refused again.
    public func sendConsumptionInformation(_ transactionID: String, _ information: ConsumptionInformation,
                                           environment: AppStoreEnvironment? = nil) async throws(AppStoreServerAPIError)
        -> AppStoreEnvironment
    {
        try Self.checkIdentifier(transactionID)
        let (_, found) = try await send(.put, "/inApps/v2/transactions/consumption/\(transactionID)", query: [],
                                        body: information.json.bytes(), environment: environment)
        return found
    }

    // MARK: - The pipeline

    /// Ids are digits (transactions) or letters and digits (order ids); anything else would change
    /// the path, so it is refused before sending.
    static func checkIdentifier(_ id: String) throws(AppStoreServerAPIError) {
        guard !id.isEmpty, id.utf8.count <= 64,
              id.utf8.allSatisfy({ ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) })
        else { throw AppStoreServerAPIError(.invalidRequest, message: "an id must be 1-64 ASCII letters and digits") }
    }

    private func baseURL(_ environment: AppStoreEnvironment) -> String {
        environment == .production ? configuration.productionBaseURL : configuration.sandboxBaseURL
    }

    /// GETs `path` in `environment`, or production then (on 4040010) the sandbox.
    private func get(_ path: String, query: [(String, String)], environment: AppStoreEnvironment?)
        async throws(AppStoreServerAPIError) -> (JSONValue, AppStoreEnvironment)
    {
        let (json, found) = try await send(.get, path, query: query, body: [], environment: environment)
        guard let json else { throw AppStoreServerAPIError(.malformedResponse) }
        return (json, found)
    }

    /// Sends the request in `environment`, or in production then (on 4040010) the sandbox; returns
    /// the answer's JSON object (nil for an empty 2xx body) and where it was found.
    private func send(_ method: AppStoreRequest.Method, _ path: String, query: [(String, String)], body: [UInt8],
                      environment: AppStoreEnvironment?) async throws(AppStoreServerAPIError) -> (JSONValue?, AppStoreEnvironment)
    {
        let order: [AppStoreEnvironment] = environment.map { [$0] }
            ?? (configuration.sandboxFallback ? [.production, .sandbox] : [.production])
        var lastNotFound: AppStoreServerAPIError?
        for candidate in order {
            do {
                return (try await send(method, path, query: query, body: body, in: candidate), candidate)
            } catch where error.kind == .notFound {
                lastNotFound = error
            }
        }
        throw lastNotFound ?? AppStoreServerAPIError(.notFound)
    }

    /// One endpoint in one environment: a fresh token per attempt, the retry policy, the status
    /// translated (every endpoint's errors mean the same). Nil only for a PUT answered without a body.
    func send(_ method: AppStoreRequest.Method, _ path: String, query: [(String, String)], body: [UInt8],
              in environment: AppStoreEnvironment) async throws(AppStoreServerAPIError) -> JSONValue?
    {
        let queryString = query.isEmpty ? "" : "?" + query.map { "\(Self.percentEncode($0.0))=\(Self.percentEncode($0.1))" }.joined(separator: "&")
        let url = baseURL(environment) + path + queryString
        let policy = configuration.retry
        var attempt = 0
        while true {
            attempt += 1
            let token = credentials.token(issuedAt: clock.now(), lifetime: configuration.tokenLifetime)
            var headers = ["Authorization": "Bearer \(token)", "Accept": "application/json", "User-Agent": "wxpay-gateway"]
            if method != .get { headers["Content-Type"] = "application/json" }
            let request = AppStoreRequest(method: method, url: url, headers: headers, body: body)
            let response: AppStoreResponse
            do {
                response = try await transport.send(request)
            } catch {
                guard attempt < policy.maximumAttempts else { throw AppStoreServerAPIError(.transport, message: error.description) }
                try await pause(policy.backoff(after: attempt))
                continue
            }
            switch response.status {
            case 200..<300:
                // Send Consumption Information answers 202 with no body.
                if response.body.isEmpty && method == .put { return nil }
                guard let json = try? JSONValue.parse(response.body), json.objectValue != nil else {
                    throw AppStoreServerAPIError(.malformedResponse, status: response.status)
                }
                return json
            case 401:
                throw AppStoreServerAPIError(.unauthorized, status: 401)
            case 429:
                let wait = AppStoreRetryPolicy.retryAfter(response.headers["retry-after"], now: clock.now())
                    ?? policy.backoff(after: attempt)
                guard attempt < policy.maximumAttempts, wait <= policy.maximumRetryAfter else {
                    throw AppStoreServerAPIError(.rateLimited, status: 429, errorCode: Self.errorCode(response), retryAfter: wait)
                }
                try await pause(wait)
            case 500..<600:
                guard attempt < policy.maximumAttempts else { throw AppStoreServerAPIError(.serverError, status: response.status) }
                try await pause(policy.backoff(after: attempt))
            default:
                let code = Self.errorCode(response)
                if response.status == 404, code == AppStoreServerAPIError.transactionIDNotFound {
                    throw AppStoreServerAPIError(.notFound, status: 404, errorCode: code)
                }
                let message = (try? JSONValue.parse(response.body))?["errorMessage"]?.stringValue
                throw AppStoreServerAPIError(.apiError, status: response.status, errorCode: code, message: message)
            }
        }
    }

    private func pause(_ duration: Duration) async throws(AppStoreServerAPIError) {
        do {
            try await clock.sleep(for: duration)
        } catch {
            throw AppStoreServerAPIError(.transport, message: "cancelled while waiting to retry")
        }
    }

    private static func errorCode(_ response: AppStoreResponse) -> Int? {
        (try? JSONValue.parse(response.body))?["errorCode"]?.intValue.map { Int($0) }
    }

    /// RFC 3986 unreserved characters stay; everything else is %XX.
    static func percentEncode(_ text: String) -> String {
        var output = ""
        for byte in text.utf8 {
            switch byte {
            case 0x30...0x39, 0x41...0x5A, 0x61...0x7A, UInt8(ascii: "-"), UInt8(ascii: "."), UInt8(ascii: "_"), UInt8(ascii: "~"):
                output.unicodeScalars.append(Unicode.Scalar(byte))
            default:
                let hex = Array("0123456789ABCDEF".utf8)
                output += "%" + String(decoding: [hex[Int(byte >> 4)], hex[Int(byte & 0xF)]], as: UTF8.self)
            }
        }
        return output
    }
}

// SPDX-License-Identifier: Apache-2.0
import Foundation

/// One HTTPS request to Apple (the Server API or verifyReceipt), as the clients hand it to a
/// transport. The client owns URLs, headers and bodies; the transport only moves bytes.
public struct AppStoreRequest: Sendable, Hashable {
    public enum Method: String, Sendable, Hashable { case get = "GET", post = "POST", put = "PUT" }

    public var method: Method
    /// An absolute URL (`https://api.storekit.apple.com/inApps/v1/transactions/…`).
    public var url: String
    /// Header fields; the Server API's carry `Authorization: Bearer …`, which a transport must
    /// never log.
    public var headers: [String: String]
    public var body: [UInt8]

    public init(method: Method, url: String, headers: [String: String] = [:], body: [UInt8] = []) {
        self.method = method
        self.url = url
        self.headers = headers
        self.body = body
    }

    /// The path of `url` (from the first `/` after the host), without the query.
    public var path: String {
        var rest = Substring(url)
        if let scheme = rest.range(of: "://") { rest = rest[scheme.upperBound...] }
        guard let slash = rest.firstIndex(of: "/") else { return "/" }
        let path = rest[slash...]
        return String(path.prefix { $0 != "?" })
    }

    /// The raw query string of `url` (after `?`), or "".
    public var query: String {
        guard let mark = url.firstIndex(of: "?") else { return "" }
        return String(url[url.index(after: mark)...])
    }
}

/// What came back: any status, the header fields (names lowercased) and the body. The clients,
/// not the transport, decide what a status means.
public struct AppStoreResponse: Sendable, Hashable {
    public var status: Int
    public var headers: [String: String]
    public var body: [UInt8]

    public init(status: Int, headers: [String: String] = [:], body: [UInt8] = []) {
        self.status = status
        self.headers = Dictionary(headers.map { ($0.key.lowercased(), $0.value) }, uniquingKeysWith: { first, _ in first })
        self.body = body
    }
}

/// How a request failed below HTTP. Every App Store call the clients make is a read (GET, and the
/// notification history's POST), an idempotent verification (verifyReceipt) or an idempotent
/// replacement (Send Consumption Information's PUT), so any of these may be retried.
public struct AppStoreTransportError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable {
        case dns, connect, tls, timeout, connectionReset = "connection_reset", responseTooLarge = "response_too_large", other
    }

    public var kind: Kind

    public init(kind: Kind) { self.kind = kind }

    public var description: String { "transport failure (\(kind.rawValue))" }
}

/// The network, behind one method: libcurl in production (`AppStoreHTTPTransport`), the
/// simulator in process for demo mode and tests, a closure in unit tests.
public protocol AppStoreTransport: Sendable {
    func send(_ request: AppStoreRequest) async throws(AppStoreTransportError) -> AppStoreResponse
}

/// A transport that hands each request to a closure.
public struct AppStoreClosureTransport: AppStoreTransport {
    public typealias Handler = @Sendable (AppStoreRequest) async throws(AppStoreTransportError) -> AppStoreResponse
    private let handler: Handler

    public init(_ handler: @escaping Handler) { self.handler = handler }

    public func send(_ request: AppStoreRequest) async throws(AppStoreTransportError) -> AppStoreResponse {
        try await handler(request)
    }
}

/// Time, injected: the JWT's `iat` and the waits between retries. The module reads no clock of
/// its own, so tests run retry schedules instantly and check every wait; production passes
/// `SystemAppStoreClock` (AppStoreHTTPTransport).
public protocol AppStoreClock: Sendable {
    func now() -> Date
    /// Waits `duration`; throws when the task is cancelled.
    func sleep(for duration: Duration) async throws
}

/// How the clients retry: 5xx answers, transport failures and Apple's retryable receipt statuses
/// with exponential backoff; 429 after its `Retry-After`.
public struct AppStoreRetryPolicy: Sendable, Hashable {
    /// Attempts per environment, the first included. Default 3.
    public var maximumAttempts: Int
    /// The wait before the second attempt; doubled each time. Default 0.5 s.
    public var initialBackoff: Duration
    /// The longest backoff. Default 8 s.
    public var maximumBackoff: Duration
    /// The longest `Retry-After` waited for; a longer one is returned as a rate-limit error with
    /// its wait, for the caller to schedule. Default 30 s.
    public var maximumRetryAfter: Duration

    public init(maximumAttempts: Int = 3, initialBackoff: Duration = .milliseconds(500), maximumBackoff: Duration = .seconds(8),
                maximumRetryAfter: Duration = .seconds(30)) {
        precondition(maximumAttempts >= 1, "at least one attempt")
        self.maximumAttempts = maximumAttempts
        self.initialBackoff = initialBackoff
        self.maximumBackoff = maximumBackoff
        self.maximumRetryAfter = maximumRetryAfter
    }

    /// The wait after failed attempt number `attempt` (1-based).
    public func backoff(after attempt: Int) -> Duration {
        var wait = initialBackoff
        for _ in 1..<max(1, attempt) where wait < maximumBackoff { wait *= 2 }
        return min(wait, maximumBackoff)
    }

    /// How long a `Retry-After` value asks to wait, measured from `now`: delay-seconds (RFC 9110),
    /// or UNIX time in milliseconds (which the App Store Server API documents for its 429s).
    public static func retryAfter(_ value: String?, now: Date) -> Duration? {
        guard let text = value?.trimmingCharacters(in: .whitespaces), let number = Int64(text), number >= 0 else { return nil }
        if number > 1_000_000_000_000 {
            let milliseconds = number - now.millisecondsSince1970
            return .milliseconds(max(0, milliseconds))
        }
        return .seconds(number)
    }
}

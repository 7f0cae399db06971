// SPDX-License-Identifier: Apache-2.0

/// Why ``HTTPClient/execute(_:)`` produced no response.
///
/// The cases follow what a payment retry policy must know: failures before anything was sent (DNS,
/// connect, TLS set-up) are safe to retry anywhere, while failures after the request was written
/// (timeouts, resets) mean the server may have acted on it. ``mayHaveBeenDelivered`` answers that
/// directly, from libcurl's count of request bytes written.
///
/// Compare with the static members; equality looks at the case only, not at
/// ``mayHaveBeenDelivered`` or the diagnostic detail:
///
/// ```swift
/// do { _ = try await client.execute(request) }
/// catch .dnsFailure { … }
/// catch let error where error.mayHaveBeenDelivered { … }
/// ```
///
/// `description` is generic and safe to log or return; `debugDescription` adds libcurl's code and
/// message (bounded), which name hosts but never passwords.
public struct HTTPClientError: Error, Sendable, Hashable, CustomStringConvertible, CustomDebugStringConvertible {
    private enum Code: String, Sendable, Hashable {
        case invalidRequest
        case dnsFailure
        case connectFailed
        case connectTimeout
        case tlsFailure
        case tlsConfigurationUnusable
        case timeout
        case sendFailed
        case receiveFailed
        case protocolViolation
        case responseTooLarge
        case cancelled
        case shutDown
        case internalFailure
    }

    private let code: Code
    /// Whether any byte of the request was written to the connection, so the server may have
    /// received the request and acted on it. `false` is a guarantee; `true` is a possibility.
    public let mayHaveBeenDelivered: Bool
    private let curlCode: Int32?
    private let detail: String?

    private init(_ code: Code, mayHaveBeenDelivered: Bool, curlCode: Int32? = nil, detail: String? = nil) {
        self.code = code
        self.mayHaveBeenDelivered = mayHaveBeenDelivered
        self.curlCode = curlCode
        self.detail = detail.map { String($0.prefix(240)) }
    }

    /// The request was malformed (URL scheme, control characters in a header) and was not sent.
    public static let invalidRequest = Self(.invalidRequest, mayHaveBeenDelivered: false)
    /// The host name could not be resolved (including a resolver that timed out). Not delivered.
    public static let dnsFailure = Self(.dnsFailure, mayHaveBeenDelivered: false)
    /// The TCP connection was refused or unreachable. Not delivered.
    public static let connectFailed = Self(.connectFailed, mayHaveBeenDelivered: false)
    /// The connection (TCP plus TLS handshake) was not established within the connect or total
    /// timeout. Not delivered.
    public static let connectTimeout = Self(.connectTimeout, mayHaveBeenDelivered: false)
    /// The TLS handshake failed: the server's certificate was not trusted, or the server refused
    /// the client certificate (with TLS 1.3 that refusal arrives after the request was written, so
    /// such an error reports ``mayHaveBeenDelivered``; the server cannot have read it, but the
    /// client cannot prove so).
    public static let tlsFailure = Self(.tlsFailure, mayHaveBeenDelivered: false)
    /// A local TLS file could not be used: the CA file, the client certificate or key is missing or
    /// malformed, or its password is wrong. Not delivered.
    public static let tlsConfigurationUnusable = Self(.tlsConfigurationUnusable, mayHaveBeenDelivered: false)
    /// The request was sent but the response did not complete within the total timeout.
    public static let timeout = Self(.timeout, mayHaveBeenDelivered: true)
    /// Writing the request failed (connection reset while sending).
    public static let sendFailed = Self(.sendFailed, mayHaveBeenDelivered: true)
    /// Reading the response failed: reset, closed without an answer, or truncated.
    public static let receiveFailed = Self(.receiveFailed, mayHaveBeenDelivered: true)
    /// The server's answer was not valid HTTP.
    public static let protocolViolation = Self(.protocolViolation, mayHaveBeenDelivered: true)
    /// The response body exceeded the size cap; the transfer was aborted.
    public static let responseTooLarge = Self(.responseTooLarge, mayHaveBeenDelivered: true)
    /// The calling task was cancelled; the transfer was removed.
    public static let cancelled = Self(.cancelled, mayHaveBeenDelivered: false)
    /// The client was shut down before the request completed.
    public static let shutDown = Self(.shutDown, mayHaveBeenDelivered: false)
    /// libcurl failed in a way none of the other cases describes (out of memory, a library error).
    public static let internalFailure = Self(.internalFailure, mayHaveBeenDelivered: true)

    /// The same case with the delivery flag and diagnostics of one transfer.
    func with(mayHaveBeenDelivered: Bool, curlCode: Int32? = nil, detail: String? = nil) -> Self {
        Self(code, mayHaveBeenDelivered: mayHaveBeenDelivered, curlCode: curlCode, detail: detail)
    }

    /// A stable, low-cardinality name for metric labels and logs, e.g. `connectTimeout`.
    public var shortDescription: String { code.rawValue }

    /// Generic and safe to log or show: the case and whether the request may have been delivered.
    public var description: String {
        "HTTP client error: \(code.rawValue)" + (mayHaveBeenDelivered ? " (request may have been delivered)" : "")
    }

    /// `description` plus libcurl's code and message (at most 240 characters), for operators.
    public var debugDescription: String {
        var text = description
        if let curlCode { text += ", curl code \(curlCode)" }
        if let detail, !detail.isEmpty { text += ": \(detail)" }
        return text
    }

    /// Same case; the delivery flag and diagnostics are not compared.
    public static func == (lhs: Self, rhs: Self) -> Bool { lhs.code == rhs.code }

    public func hash(into hasher: inout Hasher) { hasher.combine(code) }
}

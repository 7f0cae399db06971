// SPDX-License-Identifier: Apache-2.0
public import AppStore
import Foundation
public import HTTP

/// The libcurl client as an ``AppStoreTransport``: the Server API and verifyReceipt over HTTPS.
///
/// The client (its connection cache and TLS trust) is the caller's, shared with other users and
/// shut down by them. Request headers are never logged here: they carry the bearer token.
///
/// ```swift
/// let http = try HTTPClient()
/// let api = AppStoreServerAPIClient(credentials: credentials, transport: AppStoreHTTPTransport(client: http),
///                                   clock: SystemAppStoreClock())
/// ```
public struct AppStoreHTTPTransport: AppStoreTransport {
    private let client: HTTPClient
    private let timeouts: HTTPClient.Timeouts
    private let maxResponseBodyBytes: Int

    /// - Parameters:
    ///   - client: owned by the caller.
    ///   - timeouts: per request; default connect 5 s, total 15 s (history pages of 20 signed
    ///     transactions are ~100 KiB).
    ///   - maxResponseBodyBytes: default 2 MiB.
    public init(client: HTTPClient, timeouts: HTTPClient.Timeouts = .init(connect: .seconds(5), total: .seconds(15)),
                maxResponseBodyBytes: Int = 2 << 20) {
        self.client = client
        self.timeouts = timeouts
        self.maxResponseBodyBytes = maxResponseBodyBytes
    }

    public func send(_ request: AppStoreRequest) async throws(AppStoreTransportError) -> AppStoreResponse {
        let outgoing = HTTPClientRequest(
            method: HTTPMethod(rawValue: request.method.rawValue), url: request.url,
            headers: HTTPHeaders(request.headers.sorted { $0.key < $1.key }.map { ($0.key, $0.value) }),
            body: request.body, timeouts: timeouts, maxResponseBodyBytes: maxResponseBodyBytes)
        do {
            let response = try await client.execute(outgoing)
            var headers: [String: String] = [:]
            for field in response.headers where headers[field.name.lowercased()] == nil {
                headers[field.name.lowercased()] = field.value
            }
            return AppStoreResponse(status: response.status, headers: headers, body: response.body)
        } catch {
            throw AppStoreTransportError(error)
        }
    }
}

extension AppStoreTransportError {
    /// Translates a client failure for the App Store clients.
    public init(_ error: HTTPClientError) {
        switch error {
        case .dnsFailure: self.init(kind: .dns)
        case .connectFailed, .connectTimeout: self.init(kind: .connect)
        case .tlsFailure, .tlsConfigurationUnusable: self.init(kind: .tls)
        case .timeout: self.init(kind: .timeout)
        case .sendFailed, .receiveFailed: self.init(kind: .connectionReset)
        case .responseTooLarge: self.init(kind: .responseTooLarge)
        default: self.init(kind: .other)
        }
    }
}

/// The real clock for the App Store clients: `Date()` and `Task.sleep`.
public struct SystemAppStoreClock: AppStoreClock {
    public init() {}
    public func now() -> Date { Date() }
    public func sleep(for duration: Duration) async throws { try await Task.sleep(for: duration) }
}

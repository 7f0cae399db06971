// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON

/// Request a Test Notification and Get Test Notification Status: whether the key works and
/// whether Apple's notifications reach the URL set in App Store Connect.
///
/// ```swift
/// let token = try await client.requestTestNotification()
/// let status = try await client.testNotificationStatus(token)   // sendAttempts fill in within seconds
/// if status.delivered { … }
/// ```
extension AppStoreServerAPIClient {
    /// What Apple reports about one test notification's delivery.
    public struct TestNotificationStatus: Sendable, Hashable {
        public struct Attempt: Sendable, Hashable {
            public var date: Date
            /// `SUCCESS`, or why not (`TIMED_OUT`, `TLS_ISSUE`, `UNSUCCESSFUL_HTTP_RESPONSE_CODE`, …).
            public var result: String
        }

        public var signedPayload: String
        public var attempts: [Attempt]
        /// Whether an attempt succeeded (the notification URL answered 2xx).
        public var delivered: Bool { attempts.contains { $0.result == "SUCCESS" } }
    }

    /// `POST /inApps/v1/notifications/test`: Apple sends a TEST notification; the answer is the
    /// token to ask about it with.
    public func requestTestNotification(environment: AppStoreEnvironment = .production)
        async throws(AppStoreServerAPIError) -> String
    {
        let json = try await send(.post, "/inApps/v1/notifications/test", query: [], body: [], in: environment)
        guard let token = json?["testNotificationToken"]?.stringValue, Self.isTestNotificationToken(token) else {
            throw AppStoreServerAPIError(.malformedResponse)
        }
        return token
    }

    /// `GET /inApps/v1/notifications/test/{testNotificationToken}`.
    public func testNotificationStatus(_ token: String, environment: AppStoreEnvironment = .production)
        async throws(AppStoreServerAPIError) -> TestNotificationStatus
    {
        guard Self.isTestNotificationToken(token) else {
            throw AppStoreServerAPIError(.invalidRequest, message: "a test notification token is letters, digits, - and _")
        }
        guard let json = try await send(.get, "/inApps/v1/notifications/test/\(token)", query: [], body: [], in: environment),
              let signed = json["signedPayload"]?.stringValue else { throw AppStoreServerAPIError(.malformedResponse) }
        let attempts = (json["sendAttempts"]?.arrayValue ?? []).compactMap { attempt -> TestNotificationStatus.Attempt? in
            guard let result = attempt["sendAttemptResult"]?.stringValue else { return nil }
            let milliseconds = attempt["attemptDate"]?.intValue ?? 0
            return .init(date: Date(timeIntervalSince1970: Double(milliseconds) / 1000), result: result)
        }
        return TestNotificationStatus(signedPayload: signed, attempts: attempts)
    }

    /// A uuid, `_`, milliseconds: nothing that could change the path.
    static func isTestNotificationToken(_ token: String) -> Bool {
        !token.isEmpty && token.utf8.count <= 128 && token.utf8.allSatisfy {
            ($0 >= 0x30 && $0 <= 0x39) || ($0 | 0x20 >= 0x61 && $0 | 0x20 <= 0x7A) || $0 == 0x2D || $0 == 0x5F
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import JSON
import SimulatorKit
import Synchronization

/// The Server API's test notifications, as Apple serves them:
///
/// - `POST /inApps/v1/notifications/test` (Request a Test Notification) sends a TEST notification
///   to the app's notification URL and answers `{"testNotificationToken":"<uuid>_<ms>"}`;
/// - `GET /inApps/v1/notifications/test/{testNotificationToken}` (Get Test Notification Status)
///   answers its `signedPayload` and `sendAttempts` (`attemptDate`, `sendAttemptResult`: `SUCCESS`
///   when the merchant answered 2xx), or 404 with errorCode 4040008 for a token it never issued.
///
/// Both need a valid bearer token: what `wxpay-gateway doctor` uses to check the Server API key
/// and that notifications reach the gateway.
extension AppStoreSimulator {
    static let testNotificationNotFound = 4_040_008

    func testNotification(_ request: AppStoreSimulatorRequest, segments: [String], environment: AppStoreEnvironment)
        -> AppStoreSimulatorResponse
    {
        let refusal = state.withLock { store -> AppStoreSimulatorResponse? in
            store.count("\(environment.rawValue.lowercased()) notifications_test")
            return authenticate(request.headers["authorization"], store: &store)
        }
        if let refusal { return refusal }
        switch (request.method, segments.count) {
        case ("POST", 4):
            let uuid = sendTestNotification(environment: environment)
            let milliseconds = Int(clock.now().timeIntervalSince1970 * 1000)
            return Self.json(["testNotificationToken": .string("\(uuid)_\(milliseconds)")])
        case ("GET", 5):
            let token = segments[4]
            let uuid = String(token.prefix { $0 != "_" })
            guard let signed = state.withLock({ $0.testNotifications[uuid] }) else {
                return Self.apiError(404, Self.testNotificationNotFound, "An error that indicates the test notification token is expired or the test notification status isn’t available.")
            }
            let attempts = notifications.history.filter { $0.reference == uuid }.map { attempt -> JSONValue in
                .object([
                    "attemptDate": .int(Int(attempt.at.timeIntervalSince1970 * 1000)),
                    "sendAttemptResult": .string(attempt.acknowledged ? "SUCCESS" : attempt.dropped ? "NO_RESPONSE" : "OTHER"),
                ])
            }
            var answer: [String: JSONValue] = ["signedPayload": .string(signed), "sendAttempts": .array(attempts)]
            if let first = attempts.first?["sendAttemptResult"] { answer["firstSendAttemptResult"] = first }
            return Self.json(.object(answer))
        default:
            return AppStoreSimulatorResponse(status: 404, contentType: "text/plain", body: Array("Not Found\n".utf8))
        }
    }
}

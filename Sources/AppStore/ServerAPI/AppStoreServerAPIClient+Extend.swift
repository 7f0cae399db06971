// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON

/// Extend a Subscription Renewal Date: compensation for an outage or a goodwill gesture, without
/// a charge. Apple allows it for an active subscription, 1 to 90 days, at most twice a year; the
/// `requestIdentifier` makes it idempotent (the same one again answers the same, extending nothing).
///
/// ```swift
/// let answer = try await client.extendRenewalDate("2000000000000001",
///     ExtendRenewalDateRequest(days: 7, reason: .serviceIssueOrOutage, requestIdentifier: UUID()), environment: .production)
/// ```
extension AppStoreServerAPIClient {
    /// `PUT /inApps/v1/subscriptions/extend/{originalTransactionId}` in `environment` (the
    /// subscription's: no fallback, an extension is an action, not a look-up). Apple's refusals
    /// (4030004 ineligible, 4030005 extended twice this year, 4030007 family-shared, 4040005 no
    /// such subscription) are `.apiError` with that `errorCode`.
    public func extendRenewalDate(_ originalTransactionID: String, _ request: ExtendRenewalDateRequest,
                                  environment: AppStoreEnvironment) async throws(AppStoreServerAPIError) -> ExtendRenewalDateResponse
    {
        try Self.checkIdentifier(originalTransactionID)
        guard ExtendRenewalDateRequest.days.contains(request.days) else {
            throw AppStoreServerAPIError(.invalidRequest, message: "extendByDays must be 1 to 90")
        }
        let body: JSONValue = [
            "extendByDays": .int(request.days), "extendReasonCode": .int(request.reason.rawValue),
            "requestIdentifier": .string(request.requestIdentifier.uuidString.lowercased()),
        ]
        guard let json = try await send(.put, "/inApps/v1/subscriptions/extend/\(originalTransactionID)", query: [],
                                        body: body.bytes(), in: environment),
              let success = json["success"]?.boolValue
        else { throw AppStoreServerAPIError(.malformedResponse) }
        return ExtendRenewalDateResponse(
            originalTransactionID: json["originalTransactionId"]?.stringValue ?? originalTransactionID,
            webOrderLineItemID: json["webOrderLineItemId"]?.stringValue, success: success,
            effectiveDate: json["effectiveDate"]?.intValue.map { Date(timeIntervalSince1970: Double($0) / 1000) })
    }
}

/// The body of Extend a Subscription Renewal Date.
public struct ExtendRenewalDateRequest: Sendable, Hashable {
    /// Apple's `extendReasonCode`.
    public enum Reason: Int, Sendable, Hashable, CaseIterable {
        case undeclared = 0
        case customerSatisfaction = 1
        case other = 2
        case serviceIssueOrOutage = 3

        /// Apple's words, for the audit log.
        public var name: String {
            switch self {
            case .undeclared: "undeclared"
            case .customerSatisfaction: "customer satisfaction"
            case .other: "other"
            case .serviceIssueOrOutage: "service issue or outage"
            }
        }
    }

    /// What Apple accepts as `extendByDays`.
    public static let days = 1...90

    public var days: Int
    public var reason: Reason
    /// Sent lowercase; the same one again extends nothing more.
    public var requestIdentifier: UUID

    public init(days: Int, reason: Reason, requestIdentifier: UUID) {
        self.days = days
        self.reason = reason
        self.requestIdentifier = requestIdentifier
    }
}

/// Apple's answer: whether the date moved, and the subscription's new end.
public struct ExtendRenewalDateResponse: Sendable, Hashable {
    public var originalTransactionID: String
    public var webOrderLineItemID: String?
    public var success: Bool
    /// The new expiration date of the current period.
    public var effectiveDate: Date?
}

// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON

/// Get All Subscription Statuses: the App Store's own word on where a customer's subscriptions
/// stand, for the reconciler to re-read a subscription whose notifications may have been lost.
extension AppStoreServerAPIClient {
    /// `GET /inApps/v1/subscriptions/{transactionId}` in `environment` (the subscription's: no
    /// fallback). Any transaction of the customer names them; every subscription of theirs comes
    /// back, by group, each with its status, latest transaction and renewal info, signed when asked.
    public func allSubscriptionStatuses(_ transactionID: String, environment: AppStoreEnvironment)
        async throws(AppStoreServerAPIError) -> SubscriptionStatusesResponse
    {
        try Self.checkIdentifier(transactionID)
        guard let json = try await send(.get, "/inApps/v1/subscriptions/\(transactionID)", query: [], body: [], in: environment)
        else { throw AppStoreServerAPIError(.malformedResponse) }
        return try SubscriptionStatusesResponse(json, environment: environment)
    }
}

/// Get All Subscription Statuses' answer, flattened: one item per subscription, whatever its group.
public struct SubscriptionStatusesResponse: Sendable, Hashable {
    /// One subscription as Apple holds it. Verify both signed parts with ``SignedDataVerifier``
    /// before believing any of it.
    public struct Item: Sendable, Hashable {
        public var subscriptionGroupIdentifier: String
        public var originalTransactionID: String
        /// 1 active, 2 expired, 3 billing retry, 4 billing grace period, 5 revoked.
        public var status: Int
        public var signedTransactionInfo: String
        public var signedRenewalInfo: String
    }

    public var environment: AppStoreEnvironment
    public var items: [Item]

    init(_ json: JSONValue, environment: AppStoreEnvironment) throws(AppStoreServerAPIError) {
        guard let groups = json["data"]?.arrayValue else { throw AppStoreServerAPIError(.malformedResponse) }
        var items: [Item] = []
        for group in groups {
            guard let identifier = group["subscriptionGroupIdentifier"]?.stringValue,
                  let last = group["lastTransactions"]?.arrayValue else { throw AppStoreServerAPIError(.malformedResponse) }
            for entry in last {
                guard let original = entry["originalTransactionId"]?.stringValue, let status = entry["status"]?.intValue,
                      (1...5).contains(status), let transaction = entry["signedTransactionInfo"]?.stringValue,
                      let renewal = entry["signedRenewalInfo"]?.stringValue
                else { throw AppStoreServerAPIError(.malformedResponse) }
                items.append(Item(subscriptionGroupIdentifier: identifier, originalTransactionID: original, status: Int(status),
                                  signedTransactionInfo: transaction, signedRenewalInfo: renewal))
            }
        }
        self.environment = environment
        self.items = items
    }
}

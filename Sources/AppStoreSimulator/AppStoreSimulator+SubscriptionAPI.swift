// SPDX-License-Identifier: Apache-2.0
import AppStore
import Foundation
import HTTP
import JSON

/// Get All Subscription Statuses and Extend a Subscription Renewal Date, as Apple answers them.
extension AppStoreSimulator {
    /// Apple allows two renewal-date extensions per subscription in 365 days, of at most 90 days.
    static let maximumExtensionsPerYear = 2
    static let maximumExtensionDays = 90

    /// Get All Subscription Statuses: `GET /inApps/v1/subscriptions/{transactionId}[?status=N…]`.
    /// Every subscription of the customer the transaction belongs to, in this environment, by
    /// group: each with its status (1 active, 2 expired, 3 billing retry, 4 grace period, 5
    /// revoked), its latest transaction and its renewal info, signed now.
    func subscriptionStatuses(_ id: String, query: HTTPServerQuery, environment: AppStoreEnvironment, now: Date,
                              store: inout StoreState) -> AppStoreSimulatorResponse {
        guard Self.isTransactionID(id) else { return Self.invalidTransactionID }
        guard let anchor = store.transactions[id], anchor.transaction.environment == environment else {
            return Self.transactionNotFound
        }
        var wanted: Set<Int> = []
        for value in query.values(for: "status") {
            guard let status = Int(value), (1...5).contains(status) else {
                return Self.apiError(400, 4_000_031, "Invalid request. The status parameter is invalid.")
            }
            wanted.insert(status)
        }
        let mine = store.subscriptions.values
            .filter { $0.user == anchor.user && $0.environment == environment }
            .filter { wanted.isEmpty || wanted.contains($0.phase.rawValue) }
        let groups = Dictionary(grouping: mine, by: \.groupIdentifier)
        let data: [JSONValue] = groups.keys.sorted().map { group in
            let items: [JSONValue] = groups[group]!.sorted { $0.originalTransactionID < $1.originalTransactionID }.compactMap {
                subscription in
                guard let latest = store.transactions[subscription.latestTransactionID] else { return nil }
                return [
                    "originalTransactionId": .string(subscription.originalTransactionID),
                    "status": .int(subscription.phase.rawValue),
                    "signedTransactionInfo": .string(signedTransaction(latest, now: now, store: store)),
                    "signedRenewalInfo": .string(sign(renewalInfo(subscription, now: now, store: store).payload, store: store)),
                ]
            }
            return ["subscriptionGroupIdentifier": .string(group), "lastTransactions": .array(items)]
        }
        return Self.json([
            "environment": .string(environment.rawValue), "bundleId": .string(configuration.bundleID),
            "appAppleId": .int(Int(configuration.appAppleID)), "data": .array(data),
        ])
    }

    /// Extend a Subscription Renewal Date: `PUT /inApps/v1/subscriptions/extend/{originalTransactionId}`
    /// with `{"extendByDays": 1-90, "extendReasonCode": 0-3, "requestIdentifier": "…"}`. An active
    /// subscription's current period ends that many days later (its latest transaction's
    /// `expiresDate` moves, no charge), at most twice in 365 days, and a RENEWAL_EXTENDED
    /// notification goes out. The same `requestIdentifier` again answers the same and extends nothing.
    func extendRenewalDate(_ id: String, body: [UInt8], environment: AppStoreEnvironment, now: Date, store: inout StoreState)
        -> AppStoreSimulatorResponse
    {
        guard Self.isTransactionID(id) else { return Self.apiError(400, 4_000_008, "Invalid original transaction id.") }
        guard let json = try? JSONValue.parse(body), json.objectValue != nil else {
            return Self.apiError(400, 4_000_000, "Invalid request.")
        }
        guard let days = json["extendByDays"]?.intValue, (1...Self.maximumExtensionDays).contains(days) else {
            return Self.apiError(400, 4_000_009, "Invalid extend by days value.")
        }
        guard let reason = json["extendReasonCode"]?.intValue, (0...3).contains(reason) else {
            return Self.apiError(400, 4_000_010, "Invalid extend reason code.")
        }
        guard let requestID = json["requestIdentifier"]?.stringValue, !requestID.isEmpty, requestID.utf8.count <= 128 else {
            return Self.apiError(400, 4_000_011, "Invalid request identifier.")
        }
        guard var subscription = store.subscriptions[id], subscription.environment == environment else {
            return Self.apiError(404, 4_040_005, "Original transaction id not found.")
        }
        func answer(_ done: SimulatedSubscription.ExtensionAnswer) -> AppStoreSimulatorResponse {
            var body: [String: JSONValue] = [
                "originalTransactionId": .string(id), "success": true,
                "effectiveDate": .int(Int(done.effectiveDate.millisecondsSince1970)),
            ]
            body["webOrderLineItemId"] = done.webOrderLineItemID.map { .string($0) }
            return Self.json(.object(body))
        }
        if let done = subscription.extensionAnswers[requestID] { return answer(done) }
        if subscription.ownership == .familyShared {
            return Self.apiError(403, 4_030_007, "Subscriptions that users obtain through Family Sharing can't get a renewal date extension directly.")
        }
        guard subscription.phase == .active, var latest = store.transactions[subscription.latestTransactionID] else {
            return Self.apiError(403, 4_030_004, "Forbidden - subscription state ineligible for extension.")
        }
        let recent = subscription.extensionDates.filter { now.timeIntervalSince($0) < 365 * 86400 }
        guard recent.count < Self.maximumExtensionsPerYear else {
            return Self.apiError(403, 4_030_005, "Forbidden - subscription has reached maximum extension count.")
        }
        let shift = Double(days) * 86400
        subscription.expiresDate += shift
        subscription.anchor += shift
        subscription.extensionDates = recent + [now]
        latest.transaction.expiresDate = subscription.expiresDate
        store.transactions[latest.transaction.transactionID] = latest
        let done = SimulatedSubscription.ExtensionAnswer(webOrderLineItemID: latest.transaction.webOrderLineItemID,
                                                         effectiveDate: subscription.expiresDate)
        subscription.extensionAnswers[requestID] = done
        store.subscriptions[id] = subscription
        store.count("renewal extensions")
        store.outbox.append(notificationFor(latest, type: .renewalExtended, subtype: nil, now: now, store: &store))
        return answer(done)
    }
}

// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON

/// Get Transaction Info's answer: the transaction as Apple signed it, and where it was found.
/// Verify `signedTransactionInfo` with ``SignedDataVerifier`` before believing it.
public struct TransactionInfoResponse: Sendable, Hashable {
    public var environment: AppStoreEnvironment
    public var signedTransactionInfo: String
}

/// The query of Get Transaction History (v2).
public struct TransactionHistoryQuery: Sendable, Hashable {
    public enum Sort: String, Sendable, Hashable { case ascending = "ASCENDING", descending = "DESCENDING" }

    /// The `revision` of the previous page; nil for the first.
    public var revision: String?
    /// Only these products (the `productId` filter), if not empty.
    public var productIDs: [String]
    public var sort: Sort?
    /// true: only revoked transactions; false: only not revoked; nil: both.
    public var revoked: Bool?

    public init(revision: String? = nil, productIDs: [String] = [], sort: Sort? = nil, revoked: Bool? = nil) {
        self.revision = revision
        self.productIDs = productIDs
        self.sort = sort
        self.revoked = revoked
    }
}

/// One page (at most 20 transactions) of Get Transaction History or Get Refund History.
public struct TransactionHistoryPage: Sendable, Hashable {
    /// The environment the page came from; ask the next page of the same one.
    public var environment: AppStoreEnvironment
    /// Pass it back as ``TransactionHistoryQuery/revision`` for the next page.
    public var revision: String?
    public var hasMore: Bool
    public var bundleID: String?
    public var appAppleID: Int64?
    /// Signed transactions; verify each with ``SignedDataVerifier``.
    public var signedTransactions: [String]
}

/// Look Up Order ID's answer: the transactions on a customer's invoice (production only).
public struct OrderLookupResponse: Sendable, Hashable {
    /// 0: the order id is valid; 1: invalid (then there are no transactions).
    public var status: Int
    public var signedTransactions: [String]

    public var isValid: Bool { status == 0 }
}

extension TransactionHistoryPage {
    init(_ json: JSONValue, environment: AppStoreEnvironment) throws(AppStoreServerAPIError) {
        guard json.objectValue != nil, let hasMore = json["hasMore"]?.boolValue,
              let signed = json["signedTransactions"]?.arrayValue else { throw AppStoreServerAPIError(.malformedResponse) }
        var transactions: [String] = []
        for element in signed {
            guard let text = element.stringValue else { throw AppStoreServerAPIError(.malformedResponse) }
            transactions.append(text)
        }
        self.init(environment: environment, revision: json["revision"]?.stringValue, hasMore: hasMore,
                  bundleID: json["bundleId"]?.stringValue, appAppleID: json["appAppleId"]?.intValue.map(Int64.init),
                  signedTransactions: transactions)
    }
}

/// The body of Get Notification History: a window (at most 180 days back; Apple answers
/// 4000012 for an older start, 4000013 when the end is not after it) and at most one of the
/// filters `notificationType` (with its `notificationSubtype`) or `transactionID` (one customer).
public struct NotificationHistoryRequest: Sendable, Hashable {
    public var startDate: Date
    public var endDate: Date
    public var notificationType: String?
    public var notificationSubtype: String?
    public var transactionID: String?
    /// Only the notifications that have not reached the server (including those Apple still retries).
    public var onlyFailures: Bool?

    public init(startDate: Date, endDate: Date, notificationType: String? = nil, notificationSubtype: String? = nil,
                transactionID: String? = nil, onlyFailures: Bool? = nil) {
        self.startDate = startDate
        self.endDate = endDate
        self.notificationType = notificationType
        self.notificationSubtype = notificationSubtype
        self.transactionID = transactionID
        self.onlyFailures = onlyFailures
    }

    /// As Apple names it: dates in milliseconds since 1970 (to the nearest, so a window saved by
    /// a store that keeps milliseconds asks for the very same body again, as a pagination token needs).
    public var json: JSONValue {
        func milliseconds(_ date: Date) -> Int { Int((date.timeIntervalSince1970 * 1000).rounded()) }
        var members: [String: JSONValue] = ["startDate": .int(milliseconds(startDate)), "endDate": .int(milliseconds(endDate))]
        members["notificationType"] = notificationType.map { .string($0) }
        members["notificationSubtype"] = notificationSubtype.map { .string($0) }
        members["transactionId"] = transactionID.map { .string($0) }
        members["onlyFailures"] = onlyFailures.map { .bool($0) }
        return .object(members)
    }
}

/// One page of Get Notification History.
public struct NotificationHistoryPage: Sendable, Hashable {
    public var items: [NotificationHistoryItem]
    public var hasMore: Bool
    /// Pass it back for the next page (with the same request body).
    public var paginationToken: String?

    public init(items: [NotificationHistoryItem], hasMore: Bool, paginationToken: String?) {
        self.items = items
        self.hasMore = hasMore
        self.paginationToken = paginationToken
    }

    init(_ json: JSONValue) throws(AppStoreServerAPIError) {
        guard let history = json["notificationHistory"]?.arrayValue else { throw AppStoreServerAPIError(.malformedResponse) }
        var items: [NotificationHistoryItem] = []
        for element in history {
            guard let signed = element["signedPayload"]?.stringValue else { throw AppStoreServerAPIError(.malformedResponse) }
            var attempts: [NotificationHistoryItem.SendAttempt] = []
            for attempt in element["sendAttempts"]?.arrayValue ?? [] {
                guard let date = attempt["attemptDate"]?.intValue else { throw AppStoreServerAPIError(.malformedResponse) }
                attempts.append(.init(attemptDate: Date(millisecondsSince1970: Int64(date)),
                                      result: attempt["sendAttemptResult"]?.stringValue ?? "OTHER"))
            }
            items.append(NotificationHistoryItem(signedPayload: signed, sendAttempts: attempts))
        }
        self.init(items: items, hasMore: json["hasMore"]?.boolValue ?? false, paginationToken: json["paginationToken"]?.stringValue)
    }
}

/// One notification of the history: its `signedPayload` exactly as it was (or is being) sent, and
/// Apple's attempts to send it (at most six).
public struct NotificationHistoryItem: Sendable, Hashable {
    public struct SendAttempt: Sendable, Hashable {
        public var attemptDate: Date
        /// `SUCCESS`, `TIMED_OUT`, `NO_RESPONSE`, `UNSUCCESSFUL_HTTP_RESPONSE_CODE`, …
        public var result: String

        public init(attemptDate: Date, result: String) {
            self.attemptDate = attemptDate
            self.result = result
        }
    }

    public var signedPayload: String
    public var sendAttempts: [SendAttempt]

    public init(signedPayload: String, sendAttempts: [SendAttempt]) {
        self.signedPayload = signedPayload
        self.sendAttempts = sendAttempts
    }

    /// Whether one of Apple's attempts reached the server.
    public var wasDelivered: Bool { sendAttempts.contains { $0.result == "SUCCESS" } }
}

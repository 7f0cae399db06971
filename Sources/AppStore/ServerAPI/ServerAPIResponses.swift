// SPDX-License-Identifier: Apache-2.0
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

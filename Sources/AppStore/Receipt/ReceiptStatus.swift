// SPDX-License-Identifier: Apache-2.0

/// verifyReceipt's `status`, every value of Apple's table typed.
public struct ReceiptStatus: RawRepresentable, Sendable, Hashable, CustomStringConvertible {
    public let rawValue: Int
    public init(rawValue: Int) { self.rawValue = rawValue }

    /// The receipt is valid (as a whole: it says nothing about one purchase).
    public static let valid = Self(rawValue: 0)
    /// The request was not an HTTP POST.
    public static let notPOST = Self(rawValue: 21000)
    /// The receipt data was malformed, or the service had a temporary issue: retry.
    public static let malformedOrTemporary = Self(rawValue: 21002)
    /// The receipt could not be authenticated.
    public static let notAuthenticated = Self(rawValue: 21003)
    /// The shared secret does not match the account's.
    public static let sharedSecretMismatch = Self(rawValue: 21004)
    /// The receipt server was temporarily unable to provide the receipt: retry.
    public static let serverUnavailable = Self(rawValue: 21005)
    /// Valid, but the subscription has expired (the receipt is still decoded).
    public static let subscriptionExpired = Self(rawValue: 21006)
    /// A sandbox receipt sent to production: ask the sandbox.
    public static let sandboxReceipt = Self(rawValue: 21007)
    /// A production receipt sent to the sandbox: ask production.
    public static let productionReceipt = Self(rawValue: 21008)
    /// Internal data access error: retry.
    public static let internalError = Self(rawValue: 21009)
    /// The user account cannot be found or has been deleted.
    public static let accountNotFound = Self(rawValue: 21010)

    /// 21100–21199: internal data access errors, retryable when the answer's `is-retryable` says so.
    public var isInternalDataAccessError: Bool { (21100...21199).contains(rawValue) }

    /// Whether the receipt was decoded (0, and 21006 for an expired subscription).
    public var receiptDecoded: Bool { self == .valid || self == .subscriptionExpired }

    public var description: String {
        switch self {
        case .valid: return "0 (valid)"
        case .notPOST: return "21000 (not an HTTP POST)"
        case .malformedOrTemporary: return "21002 (malformed receipt data or temporary issue)"
        case .notAuthenticated: return "21003 (receipt not authenticated)"
        case .sharedSecretMismatch: return "21004 (shared secret mismatch)"
        case .serverUnavailable: return "21005 (receipt server unavailable)"
        case .subscriptionExpired: return "21006 (subscription expired)"
        case .sandboxReceipt: return "21007 (sandbox receipt sent to production)"
        case .productionReceipt: return "21008 (production receipt sent to the sandbox)"
        case .internalError: return "21009 (internal data access error)"
        case .accountNotFound: return "21010 (account not found or deleted)"
        default:
            return isInternalDataAccessError ? "\(rawValue) (internal data access error)" : "\(rawValue) (unknown status)"
        }
    }
}

/// Why a receipt verification returned no transaction.
public struct ReceiptError: Error, Sendable, Hashable, CustomStringConvertible {
    public enum Kind: String, Sendable, Hashable, CaseIterable {
        /// The receipt data is empty, too large or not base64; nothing was sent.
        case invalidRequest = "invalid_request"
        case transport
        /// An HTTP status other than 200 on the last attempt.
        case httpStatus = "http_status"
        /// A 200 answer that is not the documented JSON.
        case malformedResponse = "malformed_response"
        /// A status that ends the verification (see ``status``), retryable ones after the last retry.
        case status
        /// The receipt is valid but belongs to another app.
        case bundleMismatch = "bundle_mismatch"
        /// The receipt is valid but does not contain the transaction asked for: `status` 0 alone
        /// is never proof of a purchase.
        case transactionNotInReceipt = "transaction_not_in_receipt"
    }

    public let kind: Kind
    /// The last status Apple answered, for `.status`.
    public let status: ReceiptStatus?
    /// The last HTTP status, for `.httpStatus`.
    public let httpStatus: Int?
    /// Whether trying again later may succeed (21002, 21005, 21009, retryable 21100–21199, 5xx,
    /// transport failures).
    public let isRetryable: Bool

    init(_ kind: Kind, status: ReceiptStatus? = nil, httpStatus: Int? = nil, isRetryable: Bool = false) {
        self.kind = kind
        self.status = status
        self.httpStatus = httpStatus
        self.isRetryable = isRetryable
    }

    public var description: String {
        switch kind {
        case .invalidRequest: return "verifyReceipt: receipt data is empty, larger than 512 KiB or not base64"
        case .transport: return "verifyReceipt: transport failure on every attempt"
        case .httpStatus: return "verifyReceipt answered HTTP \(httpStatus ?? 0)"
        case .malformedResponse: return "verifyReceipt: the answer is not the documented JSON"
        case .status: return "verifyReceipt status \(status?.description ?? "?")" + (isRetryable ? ", retryable" : "")
        case .bundleMismatch: return "verifyReceipt: the receipt belongs to another bundle id"
        case .transactionNotInReceipt: return "verifyReceipt: the transaction is not in the receipt"
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
import Observability

/// Why a bill comparison could not run. The description names the stage and a stable reason,
/// never response bodies.
public struct BillReconciliationError: Error, Sendable, Hashable, CustomStringConvertible {
    private enum Code: Sendable, Hashable {
        case invalidDay
        case noBillForDay
        case notReady
        case download(String)
        case unreadableBill(String)
        case storage(String)
    }

    private let code: Code

    /// The day is not `yyyy-MM-dd`, or not a real date.
    public static let invalidDay = Self(code: .invalidDay)
    /// A day with no bill to download: it has not begun, or WeChat no longer keeps it (three months).
    public static let noBillForDay = Self(code: .noBillForDay)
    /// WeChat is still making the day's bill ("Bill Creating"; v3 `STATEMENT_CREATING`).
    static let notReady = Self(code: .notReady)
    static func download(_ reason: String) -> Self { Self(code: .download(reason)) }
    static func unreadableBill(_ reason: String) -> Self { Self(code: .unreadableBill(reason)) }
    static func storage(_ reason: String) -> Self { Self(code: .storage(reason)) }

    /// A stable label for metrics.
    public var shortDescription: String {
        switch code {
        case .invalidDay: "invalid_day"
        case .noBillForDay: "no_bill_for_day"
        case .notReady: "bill_not_ready"
        case .download: "download_failed"
        case .unreadableBill: "unreadable_bill"
        case .storage: "storage_failed"
        }
    }

    public var description: String {
        switch code {
        case .invalidDay: "the day must be a real date written yyyy-MM-dd"
        case .noBillForDay: "WeChat has no bill for that day: it has not begun, or it is older than the three months WeChat keeps"
        case .notReady: "WeChat has not made that day's bill yet (it is ready from about 10:00 Beijing time the next day); try again later"
        case .download(let reason): "downloadbill failed (\(reason))"
        case .unreadableBill(let reason): "the bill could not be read (\(reason))"
        case .storage(let reason): "the order store failed (\(reason))"
        }
    }
}

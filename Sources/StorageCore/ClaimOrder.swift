// SPDX-License-Identifier: Apache-2.0
import Foundation

/// A row that a claim (a lease of work: open orders for the sweeper, outbox events for the
/// dispatcher, refunds to query, consumption requests to answer) hands out in one order. Both
/// stores' SQL picks the batch by that order (`ORDER BY … LIMIT`), but neither's `RETURNING`
/// keeps it, so the claimed rows are put back in it here, once for both.
package protocol ClaimOrdered {
    /// Whether `lhs` comes before `rhs` in a claimed batch.
    static func claimedBefore(_ lhs: Self, _ rhs: Self) -> Bool
}

extension Array where Element: ClaimOrdered {
    package func inClaimOrder() -> [Element] { sorted(by: Element.claimedBefore) }
}

extension OrderRecord: ClaimOrdered {
    /// Least recently asked about first (never asked: by creation), so a backlog larger than one
    /// sweep's batch rotates instead of re-checking the oldest unpaid orders forever.
    package static func claimedBefore(_ lhs: OrderRecord, _ rhs: OrderRecord) -> Bool {
        (lhs.lastQueriedAt ?? lhs.createdAt, lhs.createdAt, lhs.outTradeNo)
            < (rhs.lastQueriedAt ?? rhs.createdAt, rhs.createdAt, rhs.outTradeNo)
    }
}

extension RefundRecord: ClaimOrdered {
    /// Least recently queried first (never queried: by creation), as orders.
    package static func claimedBefore(_ lhs: RefundRecord, _ rhs: RefundRecord) -> Bool {
        (lhs.lastQueriedAt ?? lhs.createdAt, lhs.createdAt, lhs.outRefundNo)
            < (rhs.lastQueriedAt ?? rhs.createdAt, rhs.createdAt, rhs.outRefundNo)
    }

    /// `claimProcessingRefunds`' `minimumGap` in the stores' unit, whole milliseconds (never negative).
    package static func queryGapMilliseconds(_ minimumGap: TimeInterval) -> Int {
        Int((max(0, minimumGap) * 1000).rounded())
    }
}

extension OutboxEvent: ClaimOrdered {
    /// Due first, then in the order they were made.
    package static func claimedBefore(_ lhs: OutboxEvent, _ rhs: OutboxEvent) -> Bool {
        (lhs.nextAttemptAt, lhs.createdAt, lhs.id) < (rhs.nextAttemptAt, rhs.createdAt, rhs.id)
    }
}

extension ConsumptionRequestRecord: ClaimOrdered {
    /// Oldest request first.
    package static func claimedBefore(_ lhs: ConsumptionRequestRecord, _ rhs: ConsumptionRequestRecord) -> Bool {
        (lhs.requestedAt, lhs.id) < (rhs.requestedAt, rhs.id)
    }
}

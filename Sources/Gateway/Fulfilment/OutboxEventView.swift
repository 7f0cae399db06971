// SPDX-License-Identifier: Apache-2.0
import Storage

/// An outbox event as support sees it: where its delivery stands, without the payload.
struct OutboxEventView: Encodable, Sendable {
    var id: String
    var type: String
    /// `pending`, `delivered` or `dead`.
    var status: String
    var attempts: Int
    var createdAt: String
    var nextAttemptAt: String?
    var deliveredAt: String?
    var deadAt: String?
    var lastError: String?

    enum CodingKeys: String, CodingKey {
        case id, type, status, attempts, createdAt = "created_at", nextAttemptAt = "next_attempt_at"
        case deliveredAt = "delivered_at", deadAt = "dead_at", lastError = "last_error"
    }

    init(_ event: OutboxEvent) {
        id = event.id
        type = event.type
        status = event.deliveredAt != nil ? "delivered" : event.deadAt != nil ? "dead" : "pending"
        attempts = event.attempts
        createdAt = Timestamp.rfc3339(event.createdAt)
        nextAttemptAt = event.isPending ? Timestamp.rfc3339(event.nextAttemptAt) : nil
        deliveredAt = event.deliveredAt.map(Timestamp.rfc3339)
        deadAt = event.deadAt.map(Timestamp.rfc3339)
        lastError = event.lastError
    }
}

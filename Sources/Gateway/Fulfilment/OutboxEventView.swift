// SPDX-License-Identifier: Apache-2.0
import JSON
import StorageCore

/// An outbox event as support sees it (the lookup's `outbox` and the redrive answer): where its
/// delivery stands, without the payload. Times absent until they happen.
struct OutboxEventView: Sendable {
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

    var json: [UInt8] {
        var writer = JSONObjectWriter(capacity: 256)
        writer.number("attempts", attempts)
        writer.string("created_at", createdAt)
        writer.string("dead_at", deadAt)
        writer.string("delivered_at", deliveredAt)
        writer.string("id", id)
        writer.string("last_error", lastError)
        writer.string("next_attempt_at", nextAttemptAt)
        writer.string("status", status)
        writer.string("type", type)
        return writer.finish()
    }
}

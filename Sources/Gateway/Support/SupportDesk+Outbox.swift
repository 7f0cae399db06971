// SPDX-License-Identifier: Apache-2.0
import Observability
import StorageCore

extension SupportDesk {
    /// Makes a dead-lettered fulfilment event pending again, due now (support's redrive). Answers the
    /// event as support sees it; 404 for an unknown id, 409 for an event that is not dead.
    public func redriveOutboxEvent(_ id: String) async throws(APIError) -> [UInt8] {
        OutboxEventView(try await redrive(id)).json
    }

    /// `redriveOutboxEvent`'s work: the event afterwards. `requestedBy` names who asked in the
    /// timeline (`support`, or a console user).
    public func redrive(_ id: String, requestedBy: String = "support") async throws(APIError) -> OutboxEvent {
        guard let event = try await outboxEvent(id) else {
            throw APIError(status: 404, code: "outbox_event_not_found", message: "no outbox event with that id")
        }
        let at = now()
        guard try await storage({ () throws(StorageError) in try await self.store.redrive(id, at: at) }) else {
            // Dead when read, yet refused: another redrive (or a delivery) came between. The event
            // as it is now says why; the one read before the refusal would say "dead".
            let read = OutboxEventView(event).status
            let current = (try? await outboxEvent(id)).map { OutboxEventView($0).status } ?? read
            let state = read == "dead" && current != "dead" ? "\(current) (redriven meanwhile)" : current
            throw APIError(status: 409, code: "outbox_event_not_dead",
                           message: "only a dead-lettered event can be redriven; this one is \(state)")
        }
        _ = try? await store.appendEvent(event.outTradeNo, kind: "fulfilment_redriven",
                                         detail: "\(event.type) \(event.id) redriven by \(requestedBy)", at: at)
        instruments.outboxRedrives.increment()
        logger.notice("fulfilment event redriven", ["event_id": id, "out_trade_no": event.outTradeNo])
        return try await outboxEvent(id) ?? event
    }

    /// One outbox event, or nil (also for an id no event could have).
    public func outboxEvent(_ id: String) async throws(APIError) -> OutboxEvent? {
        guard id.utf8.count <= 128 else { return nil }
        return try await storage { () throws(StorageError) in try await self.store.outboxEvent(id: id) }
    }
}

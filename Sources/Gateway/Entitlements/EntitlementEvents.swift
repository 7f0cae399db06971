// SPDX-License-Identifier: Apache-2.0
import Foundation
import JSON
import StorageCore

/// The `entitlement.changed` webhook. The doors write the outbox row in the very transaction of
/// the payment, refund or revocation that can change a user's entitlements (`marker`, handed to
/// the store as the change's `followUp` by `Settlement` and `RefundService.settle`: every path
/// to SUCCESS or REFUND goes through them); the row only names the user and the order. What is
/// delivered is computed at each attempt from the user's payments, like the entitlements route:
/// `{"created_at","data":{"entitlements":[…],"out_trade_no","user_id"},"id","type":"entitlement.changed"}`.
/// An attempt therefore never carries a state older than the change it announces, and a retry
/// carries the newest; the dispatcher sends one user's events one after another, and the store
/// leases none of them while another is out (`OutboxEvent.oneAtATimePerUser`), across instances.
public struct EntitlementEvents: Sendable {
    public static let type = OutboxEvent.oneAtATimePerUser

    let store: any EntitlementStore
    let catalog: CatalogSource

    public init(store: any EntitlementStore, catalog: CatalogSource) {
        self.store = store
        self.catalog = catalog
    }

    /// The outbox row announcing that `order`'s change (paid, refunded, revoked, reversed) may have
    /// changed its user's entitlements, or nil when it cannot have (`Entitlements.canChange`: no
    /// user, a consumable, a product the catalog does not know). Its payload only names the order
    /// and the user: `{"out_trade_no","user_id"}`.
    public static func marker(for order: OrderRecord, catalog: Catalog, at: Date) -> OutboxEvent? {
        guard let user = order.userID, Entitlements.canChange(order, catalog: catalog) else { return nil }
        var payload = JSONObjectWriter(capacity: 96)
        payload.string("out_trade_no", order.outTradeNo)
        payload.string("user_id", user)
        let id = PaidEventEncoding.newID(at: at)
        return OutboxEvent(id: id, outTradeNo: order.outTradeNo, type: type, payload: String(decoding: payload.finish(), as: UTF8.self),
                           createdAt: at, nextAttemptAt: at)
    }

    /// The user an `entitlement.changed` row is about (nil for any other event, or a row that does
    /// not name one).
    public static func user(of event: OutboxEvent) -> String? {
        guard event.type == type, let marker = try? JSONValue.parseObject(Array(event.payload.utf8)) else { return nil }
        return marker["user_id"]?.stringValue
    }

    /// The body to deliver for `event`, its entitlements computed now.
    public func body(of event: OutboxEvent, at now: Date) async throws(StorageError) -> [UInt8]? {
        guard let user = Self.user(of: event) else { return nil }
        let entitlements = try await Entitlements.read(userID: user, from: store, catalog: catalog.catalog,
                                                       recorded: catalog.recorded)
        var data = JSONObjectWriter(capacity: 256)
        data.array("entitlements", entitlements.grants.map { $0.json(at: now) })
        data.string("out_trade_no", event.outTradeNo)
        data.string("user_id", user)
        return Array(PaidEventEncoding.payload(id: event.id, createdAt: Timestamp.rfc3339(event.createdAt),
                                               data: data.finish(), type: Self.type).utf8)
    }
}

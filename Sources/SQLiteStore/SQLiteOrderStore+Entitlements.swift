// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension SQLiteOrderStore: EntitlementStore {
    public func paidOrders(userID: String) async throws(StorageError) -> [PaidOrder] {
        // The (user_id, created_at) index finds the user's orders; the few that were paid are
        // sorted here, the refunds' sum read by their own index on out_trade_no.
        try await read { db throws(StorageError) in
            try db.rows(
                "SELECT " + PaidOrder.columns + """
                     FROM orders WHERE user_id = ? AND state IN ('SUCCESS', 'REFUND') AND paid_at IS NOT NULL
                    ORDER BY paid_at, out_trade_no
                    """,
                userID, decode: PaidOrder.init(row:))
        }
    }
}

extension SQLiteOrderStore {
    /// The `entitlement.changed` outbox row, written by the database in the transaction of every
    /// change that can change a user's entitlements, whichever code path made it (only orders with
    /// a user and a product grant anything): a user's order paid (or paid again when Apple reverses a refund), an App Store order refunded or revoked,
    /// and a WeChat refund succeeding (the refund door's transaction). Its payload only names the
    /// user; the dispatcher sends the entitlements computed from the payments when it delivers it
    /// (`EntitlementEvents`). The id is time-ordered like the gateway's own (`evt_` + 12 hex
    /// digits of milliseconds + 20 random), so the outbox's index grows at its right edge. The
    /// payload's JSON is written by hand: with `trusted_schema` off a trigger may not call
    /// `json_object()`; user ids hold no control characters (`UserID`), so escaping `\\` and `"`
    /// is all JSON asks.
    static let entitlementEventsSchema: SQL = """
        CREATE TRIGGER orders_entitlement_changed AFTER UPDATE OF state ON orders
        WHEN NEW.user_id IS NOT NULL AND (NEW.product_id IS NOT NULL OR NEW.apple_product_id IS NOT NULL)
            AND NEW.state <> OLD.state
            AND (NEW.state = 'SUCCESS' OR (NEW.state = 'REFUND' AND NEW.channel = 'apple'))
        BEGIN
            INSERT INTO outbox (id, out_trade_no, type, payload, created_at, attempts, next_attempt_at)
            VALUES ('evt_' || printf('%012x', NEW.updated_at) || lower(hex(randomblob(10))), NEW.out_trade_no,
                    'entitlement.changed', '{"out_trade_no":"' || replace(replace(NEW.out_trade_no, '\\', '\\\\'), '"', '\\"') || '","user_id":"' || replace(replace(NEW.user_id, '\\', '\\\\'), '"', '\\"') || '"}',
                    NEW.updated_at, 0, NEW.updated_at);
        END;
        CREATE TRIGGER refunds_entitlement_changed AFTER UPDATE OF state ON refunds
        WHEN NEW.state = 'SUCCESS' AND OLD.state <> 'SUCCESS'
            AND EXISTS (SELECT 1 FROM orders WHERE out_trade_no = NEW.out_trade_no AND user_id IS NOT NULL
                        AND (product_id IS NOT NULL OR apple_product_id IS NOT NULL))
        BEGIN
            INSERT INTO outbox (id, out_trade_no, type, payload, created_at, attempts, next_attempt_at)
            SELECT 'evt_' || printf('%012x', NEW.updated_at) || lower(hex(randomblob(10))), out_trade_no,
                   'entitlement.changed', '{"out_trade_no":"' || replace(replace(out_trade_no, '\\', '\\\\'), '"', '\\"') || '","user_id":"' || replace(replace(user_id, '\\', '\\\\'), '"', '\\"') || '"}',
                   NEW.updated_at, 0, NEW.updated_at
            FROM orders WHERE out_trade_no = NEW.out_trade_no;
        END;
        """
}

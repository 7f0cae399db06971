// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore

extension PostgresOrderStore: EntitlementStore {
    public func paidOrders(userID: String) async throws(StorageError) -> [PaidOrder] {
        // Ties on paid_at broken bytewise, as SQLite compares, so both stores list alike.
        try await read { db throws(StorageError) in
            try db.run(PGQuery(
                "SELECT " + PaidOrder.columns + """
                     FROM orders WHERE user_id = $1 AND state IN ('SUCCESS', 'REFUND') AND paid_at IS NOT NULL
                    ORDER BY paid_at, out_trade_no COLLATE "C"
                    """,
                userID)).rows(PaidOrder.init(row:))
        }
    }
}

extension PostgresOrderStore {
    /// The `entitlement.changed` outbox row, written by the database in the transaction of every
    /// change that can change a user's entitlements (SQLiteOrderStore.entitlementEventsSchema says
    /// which): triggers, so the batched payments' one statement writes it too.
    static let entitlementEventsSchema: [SQL] = [
        """
        CREATE FUNCTION wxpay_entitlement_changed(number text, at timestamptz) RETURNS void LANGUAGE sql AS $$
            INSERT INTO outbox (id, out_trade_no, type, payload, created_at, attempts, next_attempt_at)
            SELECT 'evt_' || lpad(to_hex((extract(epoch FROM at) * 1000)::bigint), 12, '0')
                       || substr(md5(random()::text || clock_timestamp()::text), 1, 20),
                   out_trade_no, 'entitlement.changed',
                   json_build_object('out_trade_no', out_trade_no, 'user_id', user_id)::text, at, 0, at
            FROM orders WHERE out_trade_no = number AND user_id IS NOT NULL
                AND (product_id IS NOT NULL OR apple_product_id IS NOT NULL)
        $$
        """,
        """
        CREATE FUNCTION wxpay_orders_entitlement_changed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.user_id IS NOT NULL AND (NEW.product_id IS NOT NULL OR NEW.apple_product_id IS NOT NULL)
               AND NEW.state <> OLD.state
               AND (NEW.state = 'SUCCESS' OR (NEW.state = 'REFUND' AND NEW.channel = 'apple')) THEN
                PERFORM wxpay_entitlement_changed(NEW.out_trade_no, NEW.updated_at);
            END IF;
            RETURN NULL;
        END
        $$
        """,
        """
        CREATE TRIGGER orders_entitlement_changed AFTER UPDATE OF state ON orders
            FOR EACH ROW EXECUTE FUNCTION wxpay_orders_entitlement_changed()
        """,
        """
        CREATE FUNCTION wxpay_refunds_entitlement_changed() RETURNS trigger LANGUAGE plpgsql AS $$
        BEGIN
            IF NEW.state = 'SUCCESS' AND OLD.state <> 'SUCCESS' THEN
                PERFORM wxpay_entitlement_changed(NEW.out_trade_no, NEW.updated_at);
            END IF;
            RETURN NULL;
        END
        $$
        """,
        """
        CREATE TRIGGER refunds_entitlement_changed AFTER UPDATE OF state ON refunds
            FOR EACH ROW EXECUTE FUNCTION wxpay_refunds_entitlement_changed()
        """,
    ]
}

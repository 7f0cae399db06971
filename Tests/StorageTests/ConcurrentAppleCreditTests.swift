// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import StoreTestSupport
import TestSupport
import Testing

/// Many App Store purchases of one user and one product credited at the same moment, on both
/// stores: each is credited exactly once, none fails.
///
/// Why it is hard for PostgreSQL: a credit locks each candidate order it tries (the one door) and
/// keeps the lock until COMMIT, even of an order someone else paid meanwhile. The candidates come
/// in an order of their own per purchase (its token's order, the order the app named, then the
/// user's oldest), so two credits could each hold an order the other wants next: a deadlock the
/// server breaks by failing one of them, which the app was answered `finish_transaction: false`.
struct ConcurrentAppleCreditTests {
    static let user = "u-many"
    static let orders = 8
    /// A token purchase per order, one naming each order, and bare ones: twice as many purchases
    /// as orders, so some find every order paid and make one of their own.
    static let purchases = 24

    @Test("Concurrent credits of one user and product credit every purchase exactly once", arguments: StoreKind.all)
    func concurrentCreditsOfOneUserAndProductCreditEveryPurchaseExactlyOnce(_ kind: StoreKind) async throws {
        // Room for every credit to run at once on PostgreSQL (the default test pool is 3).
        try await withStore(kind, poolSize: Self.purchases) { store, _ async throws in
            for round in 0..<4 {
                try await Self.race(round: round, in: store)
            }
        }
    }

    /// One round: `orders` open orders, then `purchases` credits started together.
    private static func race(round: Int, in store: TestStore) async throws {
        var tokens: [String] = []
        for index in 0..<orders {
            let token = UUID().uuidString.lowercased()
            tokens.append(token)
            try await Fixture.create(
                IAPStoreTests.appleOrder("R\(round)-O\(index)", user: user, token: token,
                                         createdAt: TestTime.at(Double(round * 100 + index))),
                in: store)
        }
        let credits: [AppleCredit] = (0..<purchases).map { index in
            let id = String(3_000_000_000_000_000 + round * 1000 + index)
            // Each purchase tries the orders in an order of its own.
            let token = index < orders ? tokens[index] : nil
            let named = index % 3 == 1 ? "R\(round)-O\(orders - 1 - index % orders)" : nil
            return IAPStoreTests.credit(IAPStoreTests.facts(id, token: token), user: user, outTradeNo: named,
                                        newOrder: "R\(round)-N\(index)", at: TestTime.at(Double(round * 100 + 50)))
        }
        let results = await withTaskGroup(of: (String, Result<AppleCreditResult, StorageError>).self) { group in
            for credit in credits {
                group.addTask {
                    do throws(StorageError) {
                        return (credit.transaction.transactionID, .success(try await store.creditAppleTransaction(credit)))
                    } catch {
                        return (credit.transaction.transactionID, .failure(error))
                    }
                }
            }
            var all: [String: Result<AppleCreditResult, StorageError>] = [:]
            for await (id, result) in group { all[id] = result }
            return all
        }
        var creditedOrders: [String: String] = [:]
        for (id, result) in results.sorted(by: { $0.key < $1.key }) {
            switch result {
            case .success(.credited(let order, _)):
                #expect(creditedOrders[order.outTradeNo] == nil, "\(order.outTradeNo) credited twice")
                creditedOrders[order.outTradeNo] = id
            case .success(let other):
                Issue.record("round \(round): \(id) was not credited: \(other)")
            case .failure(let error):
                Issue.record("round \(round): \(id) failed: \(error.debugDescription)")
            }
        }
        #expect(creditedOrders.count == purchases)
        // What the database holds: each purchase on one order, each order paid once, one event each.
        for (outTradeNo, id) in creditedOrders {
            let order = try #require(try await store.order(outTradeNo))
            #expect(order.state == .success)
            #expect(order.appleTransactionID == id)
            #expect(try await store.orders(appleTransactionID: id).map(\.outTradeNo) == [outTradeNo])
            #expect(try await store.appleTransaction(id)?.outTradeNo == outTradeNo)
            #expect(try await store.outboxEvents(outTradeNo).count == 1)
            #expect(try await store.events(outTradeNo).filter { $0.kind == OrderEvent.stateChangedKind }.count == 1)
        }
        #expect(try await store.unmatchedAppleTransactionCount() == 0)
    }
}

/// What the PostgreSQL store does when the server aborts a transaction of its own to break a
/// deadlock the store's lock order could not prevent (another program holding the rows).
@Suite(.enabled(if: TestPostgres.url != nil, "needs WXPAY_TEST_POSTGRES (scripts/test starts a server)"))
struct TransactionRaceTests {
    @Test("A credit the server aborts to break a deadlock runs again and credits its purchase once")
    func aCreditTheServerAbortsToBreakADeadlockRunsAgainAndCreditsItsPurchaseOnce() async throws {
        let database = try await TestDatabase(.postgres)
        do {
            let store = try await database.open()
            do {
                // Which side the server aborts depends on whose deadlock check runs once both wait:
                // the credit's, unless the other side took longer than its deadlock_timeout to
                // start waiting. Only an abort of the credit proves anything, so a few tries.
                var creditAborted = false
                for attempt in 0..<10 where !creditAborted {
                    creditAborted = try await Self.deadlock(attempt: attempt, store: store, database: database)
                }
                #expect(creditAborted, "the server never chose the credit as the deadlock's victim")
                await store.close()
            } catch {
                await store.close()
                throw error
            }
        } catch {
            await database.remove()
            throw error
        }
        await database.remove()
    }

    /// Another session locks the newer of two open orders, waits until the credit (which locks
    /// both, the older first) waits for it, then asks for the older: a deadlock. Returns whether
    /// the server aborted the credit (the other session committed) rather than the other session.
    private static func deadlock(attempt: Int, store: TestStore, database: TestDatabase) async throws -> Bool {
        let older = "T\(attempt)-A"
        let newer = "T\(attempt)-B"
        let user = "u-race-\(attempt)"
        try await Fixture.create(IAPStoreTests.appleOrder(older, user: user, createdAt: TestTime.at(Double(attempt * 10))),
                                 in: store)
        try await Fixture.create(IAPStoreTests.appleOrder(newer, user: user, createdAt: TestTime.at(Double(attempt * 10 + 1))),
                                 in: store)
        let other = Task {
            try await RawPostgres.execute("""
                BEGIN;
                SELECT 1 FROM orders WHERE out_trade_no = '\(newer)' FOR NO KEY UPDATE;
                DO $$
                DECLARE started timestamptz := clock_timestamp();
                BEGIN
                    LOOP
                        EXIT WHEN clock_timestamp() > started + interval '60 seconds' OR EXISTS (
                            SELECT 1 FROM pg_stat_activity
                            WHERE application_name = current_setting('application_name') AND pid <> pg_backend_pid()
                              AND wait_event_type = 'Lock');
                        PERFORM pg_sleep(0.005);
                        -- pg_stat_activity is read once per transaction unless cleared.
                        PERFORM pg_stat_clear_snapshot();
                    END LOOP;
                END $$;
                SELECT 1 FROM orders WHERE out_trade_no = '\(older)' FOR NO KEY UPDATE;
                COMMIT;
                """, url: database.location)
        }
        // The other session holds the newer order (its row lock's table lock says so) before the credit starts.
        let schema = try #require(database.schema)
        try #require(await eventually(timeout: .seconds(60)) {
            await database.scalar("""
                SELECT COUNT(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
                WHERE a.application_name = '\(schema)' AND l.relation = 'orders'::regclass
                  AND l.mode = 'RowShareLock' AND l.granted
                """) == "1"
        })
        let id = String(4_000_000_000_000_000 + attempt)
        let result = try await store.creditAppleTransaction(
            IAPStoreTests.credit(IAPStoreTests.facts(id), user: user, at: TestTime.at(Double(attempt * 10 + 5))))
        #expect(result == .credited(try #require(try await store.order(older)), .userProduct))
        #expect(try await store.orders(appleTransactionID: id).map(\.outTradeNo) == [older])
        #expect(try await store.outboxEvents(older).count == 1)
        #expect(try await store.order(newer)?.state == .notPay)
        // The other session committed only if the server aborted the credit instead.
        do {
            try await other.value
            return true
        } catch {
            #expect("\(error)".contains("deadlock detected"), "\(error)")
            return false
        }
    }
}

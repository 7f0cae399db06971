// SPDX-License-Identifier: Apache-2.0
import Dispatch
import Foundation
import Synchronization
import Testing

@testable import PostgresStore
@testable import StorageCore
import TestSupport

/// What only the PostgreSQL store does: migrations shared by instances, the pool's group commit
/// and reconnection, cross-instance query claims, the change feed, outages. (Everything both
/// stores do is in the suites run with `StoreKind.all`.)
@Suite(.enabled(if: TestPostgres.url != nil, "needs WXPAY_TEST_POSTGRES (scripts/test starts a server)"))
struct PostgresStoreTests {
    private func withPostgresStore(
        poolSize: Int = 3, _ body: (PostgresOrderStore, TestDatabase) async throws -> Void
    ) async throws {
        let database = try await TestDatabase(.postgres)
        do {
            let store = try await PostgresOrderStore.open(database.postgresSettings!, configuration: .init(poolSize: poolSize))
            do {
                try await body(store, database)
            } catch {
                await store.close()
                throw error
            }
            await store.close()
        } catch {
            await database.remove()
            throw error
        }
        await database.remove()
    }

    // MARK: Migrations

    @Test func instancesStartingAtOnceMigrateOnce() async throws {
        let database = try await TestDatabase(.postgres)
        let stores = try await withThrowingTaskGroup(of: PostgresOrderStore.self) { group in
            for _ in 0..<4 {
                group.addTask { try await PostgresOrderStore.open(database.postgresSettings!) }
            }
            return try await group.reduce(into: []) { $0.append($1) }
        }
        for store in stores { await store.close() }
        #expect(await database.scalar("SELECT COUNT(*) FROM schema_migrations") == String(PostgresMigrations.all.count))
        #expect(await database.scalar("SELECT MAX(version) FROM schema_migrations") == String(PostgresMigrations.latestVersion))
        await database.remove()
    }

    /// Holds the migration lock of `database`'s schema, as an instance applying a long migration
    /// would, until a connection of the schema has waited for it `seconds` (bounded to a minute
    /// in all); `body` runs once the lock is held.
    private func holdingTheMigrationLock(
        _ database: TestDatabase, afterAWaiterFor seconds: Double, _ body: () async throws -> Void
    ) async throws {
        let holder = Task {
            try await RawPostgres.execute("""
                DO $$
                DECLARE started timestamptz := clock_timestamp();
                BEGIN
                    PERFORM pg_advisory_xact_lock(hashtext('wxpay-gateway migrations'), hashtext(current_schema()));
                    LOOP
                        EXIT WHEN clock_timestamp() > started + interval '60 seconds' OR EXISTS (
                            SELECT 1 FROM pg_locks l JOIN pg_stat_activity a USING (pid)
                            WHERE l.locktype = 'advisory' AND NOT l.granted
                              AND a.application_name = current_setting('application_name'));
                        PERFORM pg_sleep(0.02);
                        -- pg_stat_activity is read once per transaction unless cleared.
                        PERFORM pg_stat_clear_snapshot();
                    END LOOP;
                    PERFORM pg_sleep(\(seconds));
                END $$
                """, url: database.location)
        }
        let schema = database.schema!
        do {
            try #require(await eventually(timeout: .seconds(60)) {
                await database.scalar("""
                    SELECT COUNT(*) FROM pg_locks l JOIN pg_stat_activity a USING (pid)
                    WHERE l.locktype = 'advisory' AND l.granted AND a.application_name = '\(schema)'
                    """) == "1"
            })
            try await body()
        } catch {
            _ = try? await holder.value
            throw error
        }
        try await holder.value
    }

    @Test func anInstanceWaitsForAnotherInstancesMigrationLongerThanOneExchangeMayTake() async throws {
        let database = try await TestDatabase(.postgres)
        // Held 6 s after this instance starts waiting: longer than its 5 s for any one exchange.
        var settings = database.postgresSettings!
        settings.statementTimeout = .seconds(5)
        try await holdingTheMigrationLock(database, afterAWaiterFor: 6) {
            await (try await PostgresOrderStore.open(settings)).close()
        }
        #expect(await database.scalar("SELECT MAX(version) FROM schema_migrations") == String(PostgresMigrations.latestVersion))
        await database.remove()
    }

    @Test func anInstanceGivesUpWaitingForAMigrationAfterTheMigrationTimeout() async throws {
        let database = try await TestDatabase(.postgres)
        var settings = database.postgresSettings!
        settings.migrationTimeout = .seconds(1)
        try await holdingTheMigrationLock(database, afterAWaiterFor: 6) {
            await #expect(throws: StorageError.unavailable) { _ = try await PostgresOrderStore.open(settings) }
        }
        // Nothing was applied by the instance that gave up; the next start migrates.
        #expect(await database.scalar("SELECT COUNT(*) FROM pg_tables WHERE tablename = 'orders' AND schemaname = current_schema()") == "0")
        await (try await database.open()).close()
        #expect(await database.scalar("SELECT MAX(version) FROM schema_migrations") == String(PostgresMigrations.latestVersion))
        await database.remove()
    }

    @Test func openingReportsTheMigrationsItApplied() async throws {
        let database = try await TestDatabase(.postgres)
        let made = try await PostgresOrderStore.open(database.postgresSettings!)
        await made.close()
        #expect(made.schemaUpgrade?.from == 0)
        #expect(made.schemaUpgrade?.to == PostgresMigrations.latestVersion)
        #expect(made.schemaUpgrade?.applied.count == PostgresMigrations.all.count)
        #expect(await database.execute("DELETE FROM schema_migrations WHERE version = \(PostgresMigrations.latestVersion)"))
        let upgraded = try await PostgresOrderStore.open(database.postgresSettings!)
        await upgraded.close()
        #expect(upgraded.schemaUpgrade?.from == PostgresMigrations.latestVersion - 1)
        #expect(upgraded.schemaUpgrade?.applied == [made.schemaUpgrade?.applied.last].compactMap { $0 })
        let current = try await PostgresOrderStore.open(database.postgresSettings!)
        await current.close()
        #expect(current.schemaUpgrade == nil)
        await database.remove()
    }

    @Test func aDatabaseMigratedByANewerProgramIsRefused() async throws {
        let database = try await TestDatabase(.postgres)
        await (try await database.open()).close()
        #expect(await database.execute("INSERT INTO schema_migrations VALUES (999, 'from the future', now())"))
        await #expect(throws: StorageError.schemaTooNew) {
            _ = try await PostgresOrderStore.open(database.postgresSettings!)
        }
        await database.remove()
    }

    // MARK: Connections

    @Test func aServerThatCannotBeReachedIsUnavailable() async throws {
        let settings = PostgresSettings(url: "postgresql://wxpay@/wxpay?host=/nonexistent-\(UUID().uuidString)", connectTimeout: 2)
        await #expect(throws: StorageError.unavailable) { _ = try await PostgresOrderStore.open(settings) }
    }

    @Test func aMissingDatabaseFailsToOpenWithoutRetrying() async throws {
        let url = TestPostgres.url!.replacingOccurrences(of: "/wxpay?", with: "/no_such_database_\(UInt32.random(in: 0...UInt32.max))?")
        await #expect(throws: StorageError.openFailed) { _ = try await PostgresOrderStore.open(PostgresSettings(url: url)) }
    }

    @Test func operationsSurviveTheServerEndingEveryConnection() async throws {
        try await withPostgresStore { store, database async throws in
            try await Fixture.create(Fixture.order("P1"), in: store)
            #expect(try await database.terminateConnections() >= 1)
            // The next read and the next write find their connection gone, reconnect, and succeed.
            #expect(try await store.order("P1")?.state == .notPay)
            _ = try await database.terminateConnections()
            #expect(try await Fixture.pay("P1", in: store).didChange)
            #expect(try await store.outboxEvents("P1").count == 1)
        }
    }

    @Test func thePasswordNeverAppearsInTheRedactedForm() {
        #expect(PostgresSettings(url: "postgres://gw:s3cr3t@db.example:5432/pay?sslmode=require").redacted
            == "postgres://gw:***@db.example:5432/pay?sslmode=require")
        #expect(PostgresSettings(url: "postgresql://db/pay?user=gw&password=s3cr3t&sslmode=verify-full").redacted
            == "postgresql://db/pay?user=gw&password=***&sslmode=verify-full")
        #expect(PostgresSettings(url: "host=db user=gw password=s3cr3t dbname=pay").redacted
            == "host=db user=gw password=*** dbname=pay")
        #expect(PostgresSettings(url: "postgres://gw@db/pay").redacted == "postgres://gw@db/pay")
    }

    // MARK: Group commit

    /// Holds the pool's only connection until `release` is signalled, so that later writes queue up.
    private func occupy(_ store: PostgresOrderStore) async -> (Task<Int, any Error>, DispatchSemaphore) {
        let started = DispatchSemaphore(value: 0)
        let release = DispatchSemaphore(value: 0)
        let blocker = Task {
            try await store.write(key: "") { _ throws(StorageError) in
                started.signal()
                release.wait()
                return (0, nil)
            }
        }
        await onThread { started.wait() }
        return (blocker, release)
    }

    /// Calls `submit` while the pool's only connection is held, waits until `count` writes are
    /// queued, then lets them go, so they commit as one batch. Returns what `submit` returned and
    /// the write statistics from just before it (the holding write not counted).
    private func queuedTogether<T>(_ store: PostgresOrderStore, writes count: Int, _ submit: () -> T)
        async throws -> (T, before: PostgresOrderStore.WriteStatistics)
    {
        let (blocker, release) = await occupy(store)
        let before = store.writeStatistics
        let submitted = submit()
        try #require(await eventually { store.pool.queuedWrites == count })
        release.signal()
        _ = try await blocker.value
        return (submitted, before)
    }

    /// Creates the orders and returns each as read back (a payment's `lastRead`).
    private func createdAndRead(_ names: [String], in store: PostgresOrderStore) async throws -> [OrderRecord] {
        var reads: [OrderRecord] = []
        for name in names {
            try await Fixture.create(Fixture.order(name), in: store)
            reads.append(try #require(try await store.order(name)))
        }
        return reads
    }

    private func settling(_ reads: some Sequence<OrderRecord>, in store: PostgresOrderStore) -> [Task<TransitionResult, any Error>] {
        reads.map { read in Task { try await LastReadTransitionTests.settle(read.outTradeNo, lastRead: read, in: store) } }
    }

    @Test func writesQueuedWhileEveryConnectionIsBusyCommitInOneTransaction() async throws {
        try await withPostgresStore(poolSize: 1) { store, _ async throws in
            let orders = (0..<20).map { "G\($0)" }
            for order in orders { try await Fixture.create(Fixture.order(order), in: store) }
            let (payments, before) = try await queuedTogether(store, writes: orders.count) {
                orders.map { order in Task { try await Fixture.pay(order, in: store) } }
            }
            for payment in payments { #expect(try await payment.value.didChange) }
            let after = store.writeStatistics
            #expect(after.transactions - before.transactions == 1)
            #expect(after.operations - before.operations == orders.count)
        }
    }

    @Test func paymentsOnFreshReadsQueuedTogetherCommitAsOneStatementEachInOneTransaction() async throws {
        try await withPostgresStore(poolSize: 1) { store, _ async throws in
            let orders = (0..<20).map { "P\($0)" }
            let reads = try await createdAndRead(orders, in: store)
            let (payments, before) = try await queuedTogether(store, writes: orders.count) { settling(reads, in: store) }
            for payment in payments { #expect(try await payment.value.didChange) }
            let after = store.writeStatistics
            #expect(after.transactions - before.transactions == 1)
            #expect(after.oneStatement - before.oneStatement == orders.count)
            #expect(try await store.counts().ordersByState[.success] == orders.count)
            // The batch's one statement wrote each order's own events and outbox row.
            for read in reads {
                let events = try await store.events(read.outTradeNo)
                #expect(events.map(\.kind) == ["created", OrderEvent.stateChangedKind, "notify_received"])
                #expect(events.dropFirst().map(\.detail) == ["NOTPAY -> SUCCESS: notify", "settled"])
                #expect(events.dropFirst().allSatisfy { $0.at == TestTime.at(60) })
                #expect(try await store.outboxEvents(read.outTradeNo) == [Fixture.paid(read.outTradeNo, id: "evt-\(read.outTradeNo)")])
                let order = try #require(try await store.order(read.outTradeNo))
                #expect(order.transactionID == "wx-\(read.outTradeNo)")
                #expect(order.paidAt == TestTime.at(50))
                #expect(order.lastNotifyAt == TestTime.at(60))
            }
        }
    }

    @Test func aPaymentWhoseOrderChangedSinceItsReadRunsTheUsualWayAfterItsBatchCommitted() async throws {
        try await withPostgresStore(poolSize: 1) { store, _ async throws in
            let reads = try await createdAndRead((0..<10).map { "Q\($0)" }, in: store)
            #expect(try await store.transition("Q0", to: .closed, from: OrderState.open, detail: "close", at: TestTime.at(55)).didChange)
            let (payments, before) = try await queuedTogether(store, writes: reads.count) { settling(reads, in: store) }
            var results: [TransitionResult] = []
            for payment in payments { results.append(try await payment.value) }
            #expect(results.dropFirst().allSatisfy { $0.didChange })
            let closed = try #require(try await store.order("Q0"))
            #expect(results[0] == .unchanged(closed))
            #expect(try await store.order("Q0")?.state == .closed)
            #expect(try await store.events("Q0").last?.detail == "duplicate")
            let after = store.writeStatistics
            #expect(after.oneStatement - before.oneStatement == 9)
            #expect(after.transactions - before.transactions == 2)
        }
    }

    @Test func aFailingStatementInABatchOfPaymentsFailsAloneAndTheOthersCommit() async throws {
        try await withPostgresStore(poolSize: 1) { store, _ async throws in
            try await Fixture.create(Fixture.order("S0"), in: store)
            _ = try await store.transition("S0", to: .success, from: OrderState.open, outbox: Fixture.paid("S0"),
                                           at: TestTime.at(1))
            let reads = try await createdAndRead((1..<8).map { "S\($0)" }, in: store)
            let ((payments, clash), _) = try await queuedTogether(store, writes: reads.count) {
                (settling(reads.dropFirst(), in: store), Task {
                    try await store.transition("S1", to: .success, from: OrderState.open, outbox: Fixture.refusedByTheDatabase("S1"),
                                               at: TestTime.at(2), lastRead: reads[0])
                })
            }
            for payment in payments { #expect(try await payment.value.didChange) }
            await #expect(throws: StorageError.constraint) { try await clash.value }
            #expect(try await store.order("S1")?.state == .notPay)
            #expect(try await store.counts().ordersByState[.success] == 7)
        }
    }

    @Test func aFailingWriteInABatchRollsBackAloneAndTheOthersCommit() async throws {
        try await withPostgresStore(poolSize: 1) { store, _ async throws in
            try await Fixture.create(Fixture.order("F0"), in: store)
            _ = try await store.transition("F0", to: .success, from: OrderState.open, outbox: Fixture.paid("F0"),
                                           at: TestTime.at(1))
            try await Fixture.create(Fixture.order("F1"), in: store)
            let ((creates, clash), _) = try await queuedTogether(store, writes: 11) {
                ((2..<12).map { index in Task { try await Fixture.create(Fixture.order("F\(index)"), in: store) } }, Task {
                    try await store.transition("F1", to: .success, from: OrderState.open, outbox: Fixture.refusedByTheDatabase("F1"),
                                               at: TestTime.at(2))
                })
            }
            for create in creates { _ = try await create.value }
            await #expect(throws: StorageError.constraint) { try await clash.value }
            #expect(try await store.order("F1")?.state == .notPay)
            #expect(try await store.counts().ordersByState[.notPay] == 11)
        }
    }

    // MARK: Query claims

    @Test(arguments: ClaimedCall.allCases)
    func oneInstanceAtATimeMayMakeACallAboutAnOrder(_ call: ClaimedCall) async throws {
        try await withPostgresStore { first, database async throws in
            let second = try await PostgresOrderStore.open(database.postgresSettings!)
            try await Fixture.create(Fixture.order("Q1"), in: first)
            let granted = try await withThrowingTaskGroup(of: Bool.self) { group in
                for attempt in 0..<20 {
                    let store = attempt.isMultiple(of: 2) ? first : second
                    group.addTask { try await store.claimCall(call, for: "Q1", now: TestTime.at(10), until: TestTime.at(15)) }
                }
                return try await group.reduce(into: []) { $0.append($1) }
            }
            #expect(granted.filter { $0 }.count == 1)
            // The other kind of call is claimed on its own.
            let other = ClaimedCall.allCases.first { $0 != call }!
            #expect(try await second.claimCall(other, for: "Q1", now: TestTime.at(10), until: TestTime.at(15)))
            #expect(try await second.claimCall(call, for: "Q1", now: TestTime.at(14.9), until: TestTime.at(20)) == false)
            #expect(try await second.claimCall(call, for: "Q1", now: TestTime.at(15), until: TestTime.at(20)))
            // A release ends only the claim it names; then anyone may claim at once.
            try await first.releaseCall(call, for: "Q1", claimedUntil: TestTime.at(15))
            #expect(try await first.claimCall(call, for: "Q1", now: TestTime.at(16), until: TestTime.at(21)) == false)
            try await second.releaseCall(call, for: "Q1", claimedUntil: TestTime.at(20))
            #expect(try await first.claimCall(call, for: "Q1", now: TestTime.at(16), until: TestTime.at(21)))
            _ = try await Fixture.pay("Q1", in: first)
            #expect(try await first.claimCall(call, for: "Q1", now: TestTime.at(100), until: TestTime.at(105)) == false)
            #expect(try await first.claimCall(call, for: "unknown", now: TestTime.at(100), until: TestTime.at(105)) == false)
            await second.close()
        }
    }

    @Test func aNewPrepayAndAReleasedClaimAreAnnouncedToTheOtherInstances() async throws {
        try await withPostgresStore { first, database async throws in
            let second = try await PostgresOrderStore.open(database.postgresSettings!)
            let heard = Mutex<[String]>([])
            first.observeOrderChanges(changed: { key in heard.withLock { $0.append(key) } }, resync: {})
            try #require(await eventually { first.isFeedConnected })
            try await Fixture.create(Fixture.order("A1"), in: second)
            try await Fixture.create(Fixture.order("A2"), in: second)
            _ = try await second.setPrepay("A1", prepayID: "wx-prepay", issuedAt: TestTime.at(1))
            #expect(try await second.claimCall(.unifiedOrder, for: "A2", now: TestTime.at(1), until: TestTime.at(30)))
            try await second.releaseCall(.unifiedOrder, for: "A2", claimedUntil: TestTime.at(30))
            try #require(await eventually { Set(heard.withLock { $0 }) == ["A1", "A2"] })
            await second.close()
        }
    }

    // MARK: Change feed

    @Test func aStateChangeOnOneInstanceIsAnnouncedToTheOther() async throws {
        try await withPostgresStore { first, database async throws in
            let second = try await PostgresOrderStore.open(database.postgresSettings!)
            let heard = Mutex<[String]>([])
            first.observeOrderChanges(changed: { key in heard.withLock { $0.append(key) } }, resync: {})
            try #require(await eventually { first.isFeedConnected })
            for index in 0..<3 { try await Fixture.create(Fixture.order("N\(index)"), in: second) }
            _ = try await Fixture.pay("N0", in: second)
            _ = try await Fixture.pay("N1", in: first)
            // A transition that changes nothing announces nothing.
            _ = try await Fixture.pay("N0", in: second)
            try #require(await eventually { Set(heard.withLock { $0 }) == ["N0", "N1"] })
            await second.close()
            #expect(heard.withLock { $0 }.filter { $0 == "N2" }.isEmpty)
        }
    }

    @Test func theChangeFeedReconnectsAndAsksObserversToResync() async throws {
        try await withPostgresStore { store, database async throws in
            let heard = Mutex<[String]>([])
            let resyncs = Atomic<Int>(0)
            store.observeOrderChanges(changed: { key in heard.withLock { $0.append(key) } },
                                      resync: { resyncs.add(1, ordering: .relaxed) })
            try #require(await eventually { store.isFeedConnected })
            #expect(resyncs.load(ordering: .relaxed) == 0)
            _ = try await database.terminateConnections()
            try #require(await eventually { resyncs.load(ordering: .relaxed) >= 1 && store.isFeedConnected })
            try await Fixture.create(Fixture.order("R1"), in: store)
            _ = try await Fixture.pay("R1", in: store)
            try #require(await eventually { heard.withLock { $0 }.contains("R1") })
        }
    }

    // MARK: Outages

    @Test(.timeLimit(.minutes(3)))
    func duringAnOutageOperationsFailFastAsUnavailableAndTheStoreRecovers() async throws {
        let server = try await TestPostgresServer.start()
        do {
            let store = try await PostgresOrderStore.open(PostgresSettings(url: server.url, connectTimeout: 2))
            try await Fixture.create(Fixture.order("O1"), in: store)
            _ = try await Fixture.pay("O1", in: store)
            try await server.halt()
            await #expect(throws: StorageError.unavailable) { try await store.order("O1") }
            await #expect(throws: StorageError.unavailable) {
                try await store.create(Fixture.order("O2"), event: Fixture.created)
            }
            #expect(await store.isHealthy() == false)
            try await server.resume()
            // Connections come back (after the backoff): the retried create is the first.
            try #require(await eventually(timeout: .seconds(60)) { (try? await store.create(Fixture.order("O2"), event: Fixture.created)) != nil })
            #expect(await store.isHealthy())
            #expect(try await store.order("O1")?.state == .success)
            #expect(try await store.outboxEvents("O1").count == 1)
            await store.close()
        } catch {
            await server.remove()
            throw error
        }
        await server.remove()
    }

    @Test(.timeLimit(.minutes(3)))
    func aServerCrashLosesNoCommittedWrite() async throws {
        let server = try await TestPostgresServer.start()
        do {
            let store = try await PostgresOrderStore.open(PostgresSettings(url: server.url, connectTimeout: 2))
            let orders = (0..<40).map { "C\($0)" }
            try await withThrowingTaskGroup(of: Void.self) { group in
                for order in orders {
                    group.addTask {
                        try await Fixture.create(Fixture.order(order), in: store)
                        _ = try await Fixture.pay(order, in: store)
                    }
                }
                try await group.waitForAll()
            }
            try await server.halt(crash: true)
            try await server.resume()
            try #require(await eventually(timeout: .seconds(60)) { await store.isHealthy() })
            #expect(try await store.counts().ordersByState[.success] == orders.count)
            #expect(try await store.counts().outboxPending == orders.count)
            #expect(try await store.integrityCheck() == "ok")
            await store.close()
        } catch {
            await server.remove()
            throw error
        }
        await server.remove()
    }
}

// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import Synchronization

/// The order store on PostgreSQL, for one or several gateway instances sharing one database.
///
/// - A pool of connections (`PostgresPool`), each on its own thread, opened when needed and
///   replaced with backoff when the server goes away; no libpq call runs on the Swift cooperative
///   pool. Writes are group-committed: the writes queued when a connection becomes free commit in
///   one transaction (one WAL flush; at most two connections commit at once, so batches fill),
///   results delivered after COMMIT returned.
/// - Durability: `synchronous_commit` is forced on for every session, so a write that returned is
///   on the server's disk (and its synchronous standbys, if any).
/// - The same promises as `SQLiteOrderStore`, across instances: creates race on the primary key
///   (one winner); the one door locks the order's row, decides with the rules both stores share,
///   and moves it with one conditional `UPDATE … RETURNING` that inserts the events and the outbox
///   row in the same statement. A payment made on the order as the caller read it
///   (`OrderTransition.lastRead`) skips the locked read: a batch's such payments go to the server
///   as one multi-row statement, each row applying only while its order still stands as read, and
///   the others take the usual door after the batch committed. Reconciler leases and outbox
///   deliveries are claimed with
///   `FOR UPDATE SKIP LOCKED`; `claimCall` hands out one orderquery or unifiedorder per order at a time.
/// - Every committed state change (and a new prepay_id, and a released call claim) is announced
///   with `NOTIFY` (`OrderChangeFeed`), so instances wake their waiters for changes made elsewhere.
/// - Migrations run at `open`, under an advisory lock, in the connection's current schema (the
///   URI may choose one: `?options=-csearch_path%3Dgateway`).
///
/// ```swift
/// let store = try await PostgresOrderStore.open(PostgresSettings(url: "postgres://wxpay@db/wxpay"))
/// // … serve …
/// await store.close()
/// ```
public final class PostgresOrderStore: OrderStore, OrderChangeFeed, OrderCallClaims {
    /// Tuning knobs; the defaults suit the gateway.
    public struct Configuration: Sendable, Hashable {
        /// Connections (and threads) at most, per store. Default 8 (`GATEWAY_DATABASE_POOL`).
        public var poolSize: Int
        /// The most writes committed in one transaction. Default 64; 1 turns group commit off.
        public var maxBatchSize: Int
        /// Connections committing a batch of writes at once, at most. Default 2: while one batch
        /// commits, the next fills up.
        public var maxWritingConnections: Int

        public init(poolSize: Int = 8, maxBatchSize: Int = 64, maxWritingConnections: Int = 2) {
            self.poolSize = poolSize
            self.maxBatchSize = maxBatchSize
            self.maxWritingConnections = maxWritingConnections
        }
    }

    /// How much the pool batched: `operations / transactions` is the mean batch.
    public struct WriteStatistics: Sendable, Hashable {
        public var transactions: Int
        public var operations: Int
        /// Writes committed as one statement sent with their batch's others (a payment made on
        /// the order as the caller read it), without a read under the lock first.
        public var oneStatement: Int
    }

    public let settings: PostgresSettings
    /// The schema the store's tables live in.
    public let schema: String
    /// The NOTIFY channel of this schema's order changes.
    public let channel: String
    let pool: PostgresPool
    private let listener: Mutex<PostgresChangeListener?> = Mutex(nil)
    private let isClosed = Atomic<Bool>(false)
    /// The migrations this open applied (nil: the schema was the latest already), for start-up's log.
    public let schemaUpgrade: SchemaUpgrade?

    private init(settings: PostgresSettings, schema: String, channel: String, configuration: Configuration,
                 schemaUpgrade: SchemaUpgrade?) {
        self.settings = settings
        self.schema = schema
        self.channel = channel
        self.schemaUpgrade = schemaUpgrade
        pool = PostgresPool(
            settings: settings, size: configuration.poolSize, maxBatchSize: configuration.maxBatchSize,
            maxWritingThreads: min(configuration.maxWritingConnections, configuration.poolSize),
            channel: channel, name: "postgres")
    }

    /// Connects, applies pending migrations, and returns the store. Its connections open as work
    /// needs them.
    ///
    /// - Throws: `unavailable` (the server cannot be reached), `openFailed` (no such database,
    ///   refused login, bad URI), `schemaTooNew`, `invalidArgument` (a configuration out of range).
    public static func open(_ settings: PostgresSettings, configuration: Configuration = Configuration())
        async throws(StorageError) -> PostgresOrderStore
    {
        guard configuration.poolSize >= 1, configuration.maxBatchSize >= 1, configuration.maxWritingConnections >= 1 else {
            throw .invalidArgument("poolSize, maxBatchSize and maxWritingConnections must be at least 1")
        }
        let opened = await Blocking.run { () -> Result<(String, SchemaUpgrade?), StorageError> in
            do throws(StorageError) {
                let connection = try PGConnection.connect(settings)
                defer { connection.close() }
                let upgrade = try PostgresMigrations.apply(on: connection, now: Date(), timeout: settings.migrationTimeout)
                let schema = try connection.run(PGQuery("SELECT current_schema()::text"))
                    .first { row throws(StorageError) in try row.text(0) }
                guard let schema else { throw StorageError.unexpectedRow }
                return .success((schema, upgrade))
            } catch {
                return .failure(error)
            }
        }
        let (schema, upgrade) = try opened.get()
        return PostgresOrderStore(
            settings: settings, schema: schema, channel: Self.channel(for: schema), configuration: configuration,
            schemaUpgrade: upgrade)
    }

    /// `wxpay_orders` in the `public` schema, else suffixed with the schema: two deployments in
    /// one database never wake each other's waiters. (A channel name is at most 63 bytes.)
    static func channel(for schema: String) -> String {
        let name = schema == "public" ? "wxpay_orders" : "wxpay_orders." + schema
        return String(decoding: name.utf8.prefix(63), as: UTF8.self)
    }

    public func close() async {
        guard !isClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        let listener = self.listener.withLock { $0 }
        await listener?.close()
        await pool.close()
    }

    /// Counters of the pool's writes since open.
    public var writeStatistics: WriteStatistics {
        let (transactions, operations, oneStatement) = pool.statistics
        return WriteStatistics(transactions: transactions, operations: operations, oneStatement: oneStatement)
    }

    // MARK: OrderChangeFeed

    public func observeOrderChanges(changed: @escaping @Sendable (String) -> Void, resync: @escaping @Sendable () -> Void) {
        guard !isClosed.load(ordering: .acquiring) else { return }
        let listener = self.listener.withLock { listener in
            if listener == nil {
                listener = PostgresChangeListener(settings: settings, channel: channel)
            }
            return listener!
        }
        listener.add(PostgresChangeListener.Observer(changed: changed, resync: resync))
    }

    public var isFeedConnected: Bool { listener.withLock { $0 }?.isConnected ?? false }

    // MARK: Bridges to the pool's threads

    /// A read, in its own implicit transaction (each statement sees the latest committed state).
    func read<T: Sendable>(_ body: @escaping @Sendable (PGConnection) throws(StorageError) -> T)
        async throws(StorageError) -> T
    {
        try await submit(key: "", { connection throws(StorageError) in (try body(connection), nil) }, to: pool.submitRead)
    }

    /// A read that is one statement: queued reads like it share one round trip.
    func read<T: Sendable>(
        _ query: PGQuery, _ decode: @escaping @Sendable (PGResult) throws(StorageError) -> T
    ) async throws(StorageError) -> T {
        try await submit(
            key: "", statement: OneStatement(query: query) { result throws(StorageError) in (try decode(result), nil) },
            { connection throws(StorageError) in (try decode(connection.run(query)), nil) }, to: pool.submitRead)
    }

    /// A write inside a group-commit transaction; `key` is the one order (`o:`) or outbox event
    /// (`x:`) whose rows it locks. `body` returns its value and, when it changed an order's state,
    /// that order, announced at COMMIT. The value is returned after COMMIT.
    ///
    /// With `statement`, the write is first tried as that one statement, sent with the batch's
    /// others without waiting: its `decode` returns the value (and the changed order), or nil
    /// when the statement did not apply — it must then have written nothing, and `body` runs.
    func write<T: Sendable>(
        key: String, statement: OneStatement<T>? = nil,
        _ body: @escaping @Sendable (PGConnection) throws(StorageError) -> (T, changed: String?)
    ) async throws(StorageError) -> T {
        try await submit(key: key, statement: statement, body, to: pool.submitWrite)
    }

    /// A job as one statement (see `write(key:statement:_:)`).
    struct OneStatement<T: Sendable>: Sendable {
        let query: PGQuery
        let decode: @Sendable (PGResult) throws(StorageError) -> (T, changed: String?)?
        /// The statement's multi-row form (see `PGMerge`), with `decode` for its row of the result.
        var merge: Merge? = nil

        struct Merge: Sendable {
            let kind: String
            let row: [PGValue]
            let many: @Sendable ([[PGValue]]) -> PGQuery
            let decode: @Sendable (PGRow?) throws(StorageError) -> (T, changed: String?)?
        }
    }

    /// A write in a transaction of its own (claims of many rows).
    func exclusive<T: Sendable>(_ body: @escaping @Sendable (PGConnection) throws(StorageError) -> T)
        async throws(StorageError) -> T
    {
        try await submit(key: "", { connection throws(StorageError) in (try body(connection), nil) }, to: pool.submitExclusive)
    }

    /// A write in a transaction of its own (not in a group-commit batch), for writes that lock
    /// rows of more than one kind (a refund and its order: the order first). A changed order it
    /// returns is announced at COMMIT.
    ///
    /// A transaction the server aborted to resolve a deadlock or a serialization failure (40P01,
    /// 40001) wrote nothing, and runs again from the start, up to `transactionRaceRetries` times:
    /// `body` must be a function of its arguments and what it reads (every caller's is), so the
    /// second run decides on what the winner committed.
    func transaction<T: Sendable>(
        _ body: @escaping @Sendable (PGConnection) throws(StorageError) -> (T, changed: String?)
    ) async throws(StorageError) -> T {
        let channel = self.channel
        return try await exclusive { db throws(StorageError) in
            var races = 0
            while true {
                db.sendAhead(PGQuery("BEGIN"))
                do throws(StorageError) {
                    let (value, changed) = try body(db)
                    var finish: [PGQuery] = []
                    if let changed { finish.append(PGQuery("SELECT pg_notify($1, $2)", channel, changed)) }
                    finish.append(PGQuery("COMMIT"))
                    _ = try db.run(finish)
                    return value
                } catch {
                    // Also sends a BEGIN still waiting in front, so nothing is left for the next job.
                    if !db.isBroken { _ = try? db.run([PGQuery("ROLLBACK")]) }
                    guard error.isTransactionRace, !db.isBroken, races < Self.transactionRaceRetries else { throw error }
                    races += 1
                }
            }
        }
    }

    /// How many times a transaction of its own runs again after losing a race the server resolved
    /// by aborting it (as many as a group-commit batch does).
    static let transactionRaceRetries = 3

    private func submit<T: Sendable>(
        key: String, statement: OneStatement<T>? = nil,
        _ body: @escaping @Sendable (PGConnection) throws(StorageError) -> (T, changed: String?),
        to queue: (PGJob) -> Void
    ) async throws(StorageError) -> T {
        // Not cancellable on purpose: once queued, a write may commit, and its caller must learn
        // the outcome rather than guess.
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, StorageError>, Never>) in
            queue(PGJob(
                lockKey: key,
                statement: statement.map { statement in
                    // The delivery of what a statement (or its row) decoded to, or nil.
                    @Sendable func delivery(_ decoded: () throws(StorageError) -> (T, changed: String?)?)
                        -> Result<PGDelivery, StorageError>?
                    {
                        do throws(StorageError) {
                            guard let (value, changed) = try decoded() else { return nil }
                            return .success(PGDelivery(changedOrders: changed.map { [$0] } ?? []) {
                                continuation.resume(returning: .success(value))
                            })
                        } catch {
                            return .failure(error)
                        }
                    }
                    return PGStatement(
                        query: statement.query,
                        complete: { result in delivery { () throws(StorageError) in try statement.decode(result) } },
                        merge: statement.merge.map { merge in
                            PGMerge(kind: merge.kind, row: merge.row, many: merge.many) { row in
                                delivery { () throws(StorageError) in try merge.decode(row) }
                            }
                        })
                },
                perform: { connection in
                    do throws(StorageError) {
                        let (value, changed) = try body(connection)
                        return .success(PGDelivery(changedOrders: changed.map { [$0] } ?? []) {
                            continuation.resume(returning: .success(value))
                        })
                    } catch {
                        return .failure(error)
                    }
                },
                fail: { error in continuation.resume(returning: .failure(error)) }))
        }
        return try result.get()
    }

    static func orderKey(_ outTradeNo: String) -> String { "o:" + outTradeNo }
    static func outboxKey(_ id: String) -> String { "x:" + id }
}

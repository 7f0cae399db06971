// SPDX-License-Identifier: Apache-2.0
import Foundation
import StorageCore
import Synchronization

/// The order store on one SQLite database file, for a single gateway process.
///
/// - One writer thread owns the only write connection and commits whatever writes are queued when
///   it becomes free in one transaction (group commit), each write in its own SAVEPOINT; results
///   are delivered after COMMIT returns.
/// - A few reader threads, each with a read-only connection, serve reads concurrently (WAL mode).
/// - Durability: WAL with `synchronous=FULL`, so a write that has returned survives a power cut.
/// - No SQLite call ever runs on the Swift cooperative thread pool.
///
/// ```swift
/// let store = try await SQLiteOrderStore.open(path: "/var/lib/wxpay/orders.sqlite")
/// let result = try await store.create(order, event: NewOrderEvent(kind: "created", detail: "", at: now))
/// // … serve …
/// await store.close()   // in the service's graceful shutdown
/// ```
///
/// Call `close()` before the last reference goes away (debug builds assert it).
public final class SQLiteOrderStore: OrderStore {
    /// Tuning knobs; the defaults suit the gateway.
    public struct Configuration: Sendable, Hashable {
        /// Read-only connections, each on its own thread. Default 2. In memory there are none.
        public var readerCount: Int
        /// How long an operation waits for a lock held by another process. Default 5 seconds.
        public var busyTimeout: Duration
        /// The most writes committed in one transaction. Default 256; 1 turns group commit off
        /// (every write its own transaction), which only benchmarks want.
        public var maxBatchSize: Int

        public init(readerCount: Int = 2, busyTimeout: Duration = .seconds(5), maxBatchSize: Int = 256) {
            self.readerCount = readerCount
            self.busyTimeout = busyTimeout
            self.maxBatchSize = maxBatchSize
        }

        /// A copy with the given fields changed.
        public func with(readerCount: Int? = nil, busyTimeout: Duration? = nil, maxBatchSize: Int? = nil)
            -> Configuration
        {
            Configuration(
                readerCount: readerCount ?? self.readerCount, busyTimeout: busyTimeout ?? self.busyTimeout,
                maxBatchSize: maxBatchSize ?? self.maxBatchSize)
        }
    }

    /// How much the writer batched: with group commit, `operations / transactions` is the mean batch.
    public struct WriteStatistics: Sendable, Hashable {
        public var transactions: Int
        public var operations: Int

        public init(transactions: Int, operations: Int) {
            self.transactions = transactions
            self.operations = operations
        }
    }

    /// The database file, or `nil` in memory.
    public let path: String?
    let writer: SQLiteWriter
    private let readers: SQLiteReaderPool?
    /// Held while open: a restore refuses to replace a database someone is using (SQLiteUsageLock).
    private let usageLock: SQLiteUsageLock?
    private let isClosed = Atomic<Bool>(false)
    /// The migrations this open applied (nil: the schema was the latest already), for start-up's log.
    public let schemaUpgrade: SchemaUpgrade?

    private init(path: String?, writer: SQLiteWriter, readers: SQLiteReaderPool?, usageLock: SQLiteUsageLock? = nil,
                 schemaUpgrade: SchemaUpgrade? = nil) {
        self.path = path
        self.writer = writer
        self.readers = readers
        self.usageLock = usageLock
        self.schemaUpgrade = schemaUpgrade
    }

    deinit {
        if !isClosed.load(ordering: .acquiring) {
            assertionFailure("SQLiteOrderStore deinitialised without close()")
            writer.requestClose()
            readers?.requestClose()
        }
    }

    /// Opens the database at `path`, creating it and its parent directories if needed, switching it
    /// to WAL and applying pending migrations.
    ///
    /// - Throws: `openFailed`, `readOnly`, `corrupt`, `schemaTooNew`, or `io`.
    public static func open(path: String, configuration: Configuration = Configuration()) async throws(StorageError)
        -> SQLiteOrderStore
    {
        let opened = await Blocking.run { () -> Result<OpenedConnections, StorageError> in
            do throws(StorageError) {
                return .success(try openConnections(path: path, configuration: configuration))
            } catch {
                return .failure(error)
            }
        }
        let connections = try opened.get()
        return SQLiteOrderStore(
            path: path,
            writer: SQLiteWriter(
                connection: connections.writer, maxBatchSize: configuration.maxBatchSize, name: "sqlite-writer"),
            readers: SQLiteReaderPool(connections: connections.readers, name: "sqlite-reader"),
            usageLock: connections.lock, schemaUpgrade: connections.upgrade)
    }

    /// A private in-memory database, gone at `close()`: for fast tests. Reads share the writer's
    /// connection and thread; there is no durability.
    public static func openInMemory(configuration: Configuration = Configuration()) async throws(StorageError)
        -> SQLiteOrderStore
    {
        let opened = await Blocking.run { () -> Result<SQLiteConnection, StorageError> in
            do throws(StorageError) {
                let connection = try SQLiteConnection.open(
                    path: ":memory:", readOnly: false, busyTimeout: configuration.busyTimeout)
                do throws(StorageError) {
                    try SQLiteMigrations.apply(on: connection, now: Date())
                } catch {
                    connection.close()
                    throw error
                }
                return .success(connection)
            } catch {
                return .failure(error)
            }
        }
        return SQLiteOrderStore(
            path: nil,
            writer: SQLiteWriter(
                connection: try opened.get(), maxBatchSize: configuration.maxBatchSize, name: "sqlite-memory"),
            readers: nil)
    }

    public func close() async {
        guard !isClosed.exchange(true, ordering: .acquiringAndReleasing) else { return }
        await readers?.close()
        await writer.close()
        usageLock?.release()
    }

    /// Counters of the writer since open.
    public var writeStatistics: WriteStatistics {
        let (transactions, operations) = writer.statistics
        return WriteStatistics(transactions: transactions, operations: operations)
    }

    // MARK: Bridges to the threads

    /// Runs `body` on the writer thread inside a group-commit transaction and returns its result once
    /// the transaction has committed; if `body` throws, whatever it wrote is rolled back and nothing
    /// else in the batch is lost. `body` may run twice (`SQLiteWriter` says why): it must do nothing
    /// but read and write through the connection, and return what it read.
    func write<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws(StorageError) -> T)
        async throws(StorageError) -> T
    {
        // Not cancellable on purpose: once queued, a write may commit, and its caller must learn
        // the outcome rather than guess.
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, StorageError>, Never>) in
            writer.submit(
                WriteJob(
                    perform: { connection in
                        do throws(StorageError) {
                            let value = try body(connection)
                            return .success(Delivery { continuation.resume(returning: .success(value)) })
                        } catch {
                            return .failure(error)
                        }
                    },
                    fail: { error in continuation.resume(returning: .failure(error)) }))
        }
        return try result.get()
    }

    /// Runs `body` on a reader thread (the writer thread in memory), outside any write transaction.
    func read<T: Sendable>(_ body: @escaping @Sendable (SQLiteConnection) throws(StorageError) -> T)
        async throws(StorageError) -> T
    {
        let result = await withCheckedContinuation { (continuation: CheckedContinuation<Result<T, StorageError>, Never>) in
            let job = ReadJob(
                run: { connection in
                    do throws(StorageError) {
                        continuation.resume(returning: .success(try body(connection)))
                    } catch {
                        continuation.resume(returning: .failure(error))
                    }
                },
                fail: { error in continuation.resume(returning: .failure(error)) })
            if let readers {
                readers.submit(job)
            } else {
                writer.submit(job)
            }
        }
        return try result.get()
    }

    // MARK: Opening

    private struct OpenedConnections {
        var lock: SQLiteUsageLock
        var writer: SQLiteConnection
        var readers: [SQLiteConnection]
        var upgrade: SchemaUpgrade?
    }

    private static func openConnections(path: String, configuration: Configuration) throws(StorageError)
        -> OpenedConnections
    {
        guard configuration.readerCount >= 1, configuration.maxBatchSize >= 1 else {
            throw .invalidArgument("readerCount and maxBatchSize must be at least 1")
        }
        let directory = (path as NSString).deletingLastPathComponent
        if !directory.isEmpty, !SQLiteDatabaseFile.makeDirectories(directory) {
            throw StorageError(code: .openFailed, context: "create directory")
        }
        let creating = !FileManager.default.fileExists(atPath: path)
        // Held until close (a gateway's whole life): a restore refuses the file meanwhile.
        let lock = try SQLiteUsageLock.shared(path, create: true, timeout: configuration.busyTimeout)
        let writer: SQLiteConnection
        do {
            writer = try SQLiteConnection.open(path: path, readOnly: false, busyTimeout: configuration.busyTimeout)
        } catch {
            lock.release()
            throw error
        }
        // A new database is the owner's alone (its WAL and shared-memory files follow its mode).
        if creating { SQLiteBackup.restrictToOwner(path) }
        var readers: [SQLiteConnection] = []
        var upgrade: SchemaUpgrade?
        do throws(StorageError) {
            let mode = try writer.row("PRAGMA journal_mode = WAL") { row throws(StorageError) in try row.text(0) }
            guard mode?.lowercased() == "wal" else {
                throw StorageError(code: .openFailed, context: "enable WAL")
            }
            // FULL: the WAL is synced at every commit, so a SUCCESS answered to WeChat is on disk.
            try writer.execute("PRAGMA synchronous = FULL")
            // Each group-commit operation runs in its own SAVEPOINT, whose undo pages go to a
            // statement sub-journal; past 64 KiB SQLite spills that to a temporary file, and did
            // so in every batch: 95 % of the writer's pwrite calls (4,100 bytes each, about 13
            // per notify) went to a file that is thrown away at COMMIT. In memory it is released
            // after each operation, so it never holds more than one operation's pages. (The
            // setting also keeps the writer's sorts and temporary tables in memory; its queries
            // are by key or bounded by a LIMIT of a few thousand rows.)
            try writer.execute("PRAGMA temp_store = MEMORY")
            upgrade = try SQLiteMigrations.apply(on: writer, now: Date())
            for _ in 0..<configuration.readerCount {
                readers.append(
                    try SQLiteConnection.open(path: path, readOnly: true, busyTimeout: configuration.busyTimeout))
            }
        } catch {
            for reader in readers { reader.close() }
            writer.close()
            lock.release()
            throw error
        }
        return OpenedConnections(lock: lock, writer: writer, readers: readers, upgrade: upgrade)
    }
}

// SPDX-License-Identifier: Apache-2.0
import CLibPQ
import Foundation
#if canImport(Glibc)
import Glibc
import StorageCore
#endif

/// One libpq connection in non-blocking pipeline mode, with its prepared-statement cache.
///
/// Every exchange is a pipeline: the statements are sent together, executed in order, and their
/// results read after one sync, so several statements cost one round trip. Waiting is `poll` on
/// the connection's socket with a deadline: a server that stops answering fails the exchange
/// (and the connection) instead of holding the thread forever.
///
/// A connection is confined to the thread of the worker that owns it; nothing here is thread-safe.
// @unchecked Sendable: handed over once, at start, to the one worker thread that uses it thereafter.
final class PGConnection: @unchecked Sendable {
    private let handle: OpaquePointer
    private var statements: [SQL: String] = [:]
    private var preparedCount = 0
    private var isClosed = false
    /// Set when the connection failed: it must be closed and replaced.
    private(set) var isBroken = false
    /// Statements sent ahead of the next exchange's own (e.g. `BEGIN`), their results checked only.
    private var prefix: [PGQuery] = []

    /// How long one exchange may take before the connection is given up as broken.
    let timeout: Duration

    private init(handle: OpaquePointer, timeout: Duration) {
        self.handle = handle
        self.timeout = timeout
    }

    deinit {
        assert(isClosed, "PGConnection deinitialised without close()")
    }

    /// Connects (blocking this thread, for at most the connection's `connect_timeout`), switches to
    /// non-blocking pipeline mode and sets up the session.
    static func connect(_ settings: PostgresSettings) throws(StorageError) -> PGConnection {
        let (keywords, values) = settings.connectionParameters
        let handle = withCStrings(keywords) { keywordPointers in
            withCStrings(values) { valuePointers in
                PQconnectdbParams(keywordPointers, valuePointers, 1)
            }
        }
        guard let handle else { throw StorageError(code: .unavailable, context: "connect") }
        guard PQstatus(handle) == CONNECTION_OK else {
            let error = StorageError.postgresConnection(handle, during: "connect")
            PQfinish(handle)
            // A missing database or a refused login will not fix itself by retrying.
            let message = error.debugDescription
            if message.contains("does not exist") || message.contains("authentication failed") {
                throw StorageError(code: .openFailed, context: "connect", message: error.message)
            }
            throw error
        }
        // Notices (e.g. "relation already exists, skipping") are not errors; libpq would print them.
        PQsetNoticeProcessor(handle, { _, _ in }, nil)
        let connection = PGConnection(handle: handle, timeout: settings.statementTimeout)
        guard PQsetnonblocking(handle, 1) == 0, PQenterPipelineMode(handle) == 1 else {
            connection.close()
            throw StorageError(code: .openFailed, context: "pipeline mode")
        }
        do throws(StorageError) {
            // Durability is not negotiable: a notify is answered SUCCESS only after its COMMIT
            // has been flushed, whatever the server's or the role's default says.
            _ = try connection.run([PGQuery("SET synchronous_commit TO on")])
        } catch {
            connection.close()
            throw error
        }
        return connection
    }

    /// Runs one statement (see `run(_:)`).
    func run(_ query: PGQuery) throws(StorageError) -> PGResult {
        try run([query])[0]
    }

    /// Queues statements to be sent in front of the next `run` (their results are only checked).
    func sendAhead(_ query: PGQuery) {
        prefix.append(query)
    }

    /// Runs `queries` as one pipeline and returns one result per query. Throws the first failure
    /// once the pipeline has been read to its sync (so the connection stays usable), or
    /// `unavailable` when the connection broke or the deadline passed (then it is broken). The
    /// deadline is the connection's `timeout` from now unless `timeout` gives another.
    func run(_ queries: [PGQuery], timeout: Duration? = nil) throws(StorageError) -> [PGResult] {
        guard !isBroken, !isClosed else { throw StorageError(code: .unavailable, context: "closed connection") }
        let all = prefix + queries
        prefix.removeAll()
        let deadline = ContinuousClock.now + (timeout ?? self.timeout)
        // What each command sent will answer: a prepare, or the execution of all[index].
        var commands: [(query: Int, prepared: SQL?)] = []
        for (index, query) in all.enumerated() {
            if statements[query.sql] == nil {
                preparedCount += 1
                let name = "s\(preparedCount)"
                let types = query.parameters.map { $0.type.rawValue }
                let sent = types.withUnsafeBufferPointer { types in
                    PQsendPrepare(handle, name, query.sql.text, Int32(types.count), types.baseAddress)
                }
                guard sent == 1 else { throw broken(during: "send") }
                statements[query.sql] = name
                commands.append((index, query.sql))
            }
            guard send(query, name: statements[query.sql]!) else { throw broken(during: "send") }
            commands.append((index, nil))
        }
        guard PQpipelineSync(handle) == 1 else { throw broken(during: "sync") }
        try flush(until: deadline)

        var results = [PGResult?](repeating: nil, count: all.count)
        var failure: StorageError?
        for command in commands {
            var last: OpaquePointer?
            while let result = try nextResult(until: deadline) {
                if let last { PQclear(last) }
                last = result
            }
            guard let last else { throw broken(during: "read") }
            switch PQresultStatus(last) {
            case PGRES_COMMAND_OK, PGRES_TUPLES_OK:
                if command.prepared == nil { results[command.query] = PGResult(handle: last) } else { PQclear(last) }
            case PGRES_PIPELINE_ABORTED:
                PQclear(last)
                if let sql = command.prepared { statements[sql] = nil }
            default:
                if failure == nil { failure = .postgres(result: last, during: command.prepared == nil ? "execute" : "prepare") }
                PQclear(last)
                if let sql = command.prepared { statements[sql] = nil }
            }
        }
        guard let sync = try nextResult(until: deadline) else { throw broken(during: "sync") }
        let synced = PQresultStatus(sync) == PGRES_PIPELINE_SYNC
        PQclear(sync)
        guard synced else { throw broken(during: "sync") }
        if let failure {
            if failure.breaksConnection { isBroken = true }
            throw failure
        }
        // The prefix's results are checked (above) and dropped.
        return results.dropFirst(all.count - queries.count).map { $0! }
    }

    /// Waits up to `timeout` for a notification (`LISTEN`) and returns those that arrived.
    func notifications(waitingUpTo timeout: Duration) throws(StorageError) -> [(channel: String, payload: String)] {
        guard !isBroken, !isClosed else { throw StorageError(code: .unavailable, context: "closed connection") }
        var received = drainNotifications()
        if received.isEmpty {
            guard try wait(for: Int16(POLLIN), until: ContinuousClock.now + timeout) else { return [] }
            guard PQconsumeInput(handle) == 1 else { throw broken(during: "listen") }
            received = drainNotifications()
        }
        return received
    }

    /// Finalizes the connection (the server rolls back whatever was open).
    func close() {
        guard !isClosed else { return }
        isClosed = true
        PQfinish(handle)
    }

    // MARK: - Internals

    private func send(_ query: PGQuery, name: String) -> Bool {
        let values = query.parameters.map(\.bytes)
        let lengths = values.map { Int32($0?.count ?? 0) }
        let formats = query.parameters.map(\.format)
        // Every parameter's bytes in one buffer, and pointers into it (NULL for SQL NULL).
        var buffer: [UInt8] = []
        var offsets: [Int?] = []
        for (value, format) in zip(values, formats) {
            if let value {
                offsets.append(buffer.count)
                buffer.append(contentsOf: value)
                // A text-format value is read as a C string: its length is ignored.
                if format == 0 { buffer.append(0) }
            } else {
                offsets.append(nil)
            }
        }
        buffer.append(0)   // a non-empty buffer, so its base address is never nil
        return buffer.withUnsafeBufferPointer { bytes in
            let pointers: [UnsafePointer<CChar>?] = offsets.map { offset in
                offset.map { UnsafeRawPointer(bytes.baseAddress! + $0).assumingMemoryBound(to: CChar.self) }
            }
            return pointers.withUnsafeBufferPointer { pointers in
                lengths.withUnsafeBufferPointer { lengths in
                    formats.withUnsafeBufferPointer { formats in
                        PQsendQueryPrepared(
                            handle, name, Int32(values.count), pointers.baseAddress, lengths.baseAddress,
                            formats.baseAddress, 1) == 1
                    }
                }
            }
        }
    }

    /// Sends what libpq has buffered, reading meanwhile so a server busy answering never deadlocks.
    private func flush(until deadline: ContinuousClock.Instant) throws(StorageError) {
        while true {
            switch PQflush(handle) {
            case 0: return
            case 1:
                guard try wait(for: Int16(POLLOUT | POLLIN), until: deadline) else {
                    throw broken(during: "send (timed out)")
                }
                guard PQconsumeInput(handle) == 1 else { throw broken(during: "send") }
            default:
                throw broken(during: "send")
            }
        }
    }

    private func nextResult(until deadline: ContinuousClock.Instant) throws(StorageError) -> OpaquePointer? {
        while PQisBusy(handle) == 1 {
            guard try wait(for: Int16(POLLIN), until: deadline) else { throw broken(during: "read (timed out)") }
            guard PQconsumeInput(handle) == 1 else { throw broken(during: "read") }
        }
        return PQgetResult(handle)
    }

    /// Polls the socket; false when the deadline passed first.
    private func wait(for events: Int16, until deadline: ContinuousClock.Instant) throws(StorageError) -> Bool {
        let socket = PQsocket(handle)
        guard socket >= 0 else { throw broken(during: "poll") }
        while true {
            let left = deadline - ContinuousClock.now
            guard left > .zero else { return false }
            let milliseconds = Int32(clamping: left.components.seconds * 1000 + left.components.attoseconds / 1_000_000_000_000_000 + 1)
            var descriptor = pollfd(fd: socket, events: events, revents: 0)
            let ready = poll(&descriptor, 1, milliseconds)
            if ready > 0 { return true }
            if ready < 0 && errno != EINTR { throw broken(during: "poll") }
        }
    }

    private func drainNotifications() -> [(channel: String, payload: String)] {
        var received: [(channel: String, payload: String)] = []
        while let notification = PQnotifies(handle) {
            received.append((String(cString: notification.pointee.relname), String(cString: notification.pointee.extra)))
            PQfreemem(notification)
        }
        return received
    }

    private func broken(during context: String) -> StorageError {
        isBroken = true
        return .postgresConnection(handle, during: context)
    }
}

/// Calls `body` with a NULL-terminated array of C strings that live for the call.
private func withCStrings<R>(_ strings: [String], _ body: ([UnsafePointer<CChar>?]) -> R) -> R {
    var pointers: [UnsafeMutablePointer<CChar>?] = strings.map { strdup($0) }
    defer { for pointer in pointers { free(pointer) } }
    pointers.append(nil)
    return body(pointers.map { $0.map { UnsafePointer($0) } })
}

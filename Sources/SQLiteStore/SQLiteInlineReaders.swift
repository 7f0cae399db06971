// SPDX-License-Identifier: Apache-2.0
import Dispatch
import StorageCore
import Synchronization

/// Read-only connections lent to the calling thread for a read by primary key (an order by its
/// `out_trade_no`: every notify, create and order query makes one).
///
/// Such a read takes a few microseconds; queued to `SQLiteReaderPool`, it also cost two thread
/// hand-overs (a wake-up of a reader thread, then of the caller's continuation), which cost more
/// than the read. Blocking a cooperative thread for that long is no worse than the JSON or the
/// signature the same request computes there. Only reads whose cost is bounded by a key come
/// here; anything that scans (lists, exports, the audit log) stays on the reader threads.
///
/// There are as many connections as the cooperative pool has threads at most; when all are lent,
/// or a connection meets a lock (`busy`: in WAL mode only while another process recovers the
/// WAL), the caller queues its read as before. The connections answer `busy` at once instead of
/// waiting, for the same reason.
final class SQLiteInlineReaders: Sendable {
    private struct State: ~Copyable {
        var idle: [SQLiteConnection]
        var lent = 0
        var isClosed = false
    }

    private let state: Mutex<State>
    /// Signalled by each connection given back after `close` began.
    private let givenBack = DispatchSemaphore(value: 0)

    init(connections: [SQLiteConnection]) {
        state = Mutex(State(idle: connections))
    }

    /// Runs `body` on an idle connection on this thread; nil when none is idle, the store is
    /// closing, or the connection met a lock (then the caller queues the read instead).
    func read<T>(_ body: (SQLiteConnection) throws(StorageError) -> T) throws(StorageError) -> T? {
        let lent = state.withLock { state -> SQLiteConnection? in
            guard !state.isClosed, let connection = state.idle.popLast() else { return nil }
            state.lent += 1
            return connection
        }
        guard let connection = lent else { return nil }
        defer {
            let closing = state.withLock { state in
                state.lent -= 1
                state.idle.append(connection)
                return state.isClosed
            }
            if closing { givenBack.signal() }
        }
        do {
            return try body(connection)
        } catch where error.code == .busy {
            return nil
        }
    }

    /// Lends no more, waits for the lent connections to come back, and closes them all.
    func close() async {
        let lent = state.withLock { state -> Int? in
            guard !state.isClosed else { return nil }
            state.isClosed = true
            return state.lent
        }
        guard let lent else { return }
        await Blocking.run { [givenBack] in
            for _ in 0..<lent { givenBack.wait() }
        }
        let connections = state.withLock { state in
            defer { state.idle = [] }
            return state.idle
        }
        for connection in connections { connection.close() }
    }
}

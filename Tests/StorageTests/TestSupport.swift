// SPDX-License-Identifier: Apache-2.0
import Dispatch
import Foundation
import SQLiteStore
import StorageCore
@_exported import StoreTestSupport

/// Whole-millisecond times, so records compare equal after the store's millisecond rounding.
enum TestTime {
    static let t0 = Date(timeIntervalSince1970: 1_700_000_000)

    static func at(_ seconds: Double) -> Date { t0.addingTimeInterval(seconds) }
}

enum Fixture {
    static func order(
        _ outTradeNo: String,
        amount: Int = 100,
        digest: String = "digest-1",
        createdAt: Date = TestTime.t0,
        expiresAt: Date = TestTime.at(7200),
        userID: String? = nil
    ) -> OrderRecord {
        OrderRecord(
            outTradeNo: outTradeNo, amount: amount, description: "Test product", clientIP: "10.0.0.1",
            userID: userID, signType: "HMAC-SHA256", timeExpire: "20231115061320", expiresAt: expiresAt,
            createdAt: createdAt, parametersDigest: digest)
    }

    static let created = NewOrderEvent(kind: "created", detail: "by test", at: TestTime.t0)

    static func paid(_ outTradeNo: String, id: String = UUID().uuidString, at: Date = TestTime.at(60)) -> OutboxEvent {
        OutboxEvent(
            id: id, outTradeNo: outTradeNo, type: "order.paid", payload: #"{"out_trade_no":"\#(outTradeNo)"}"#,
            createdAt: at)
    }

    /// An event of the type sent one at a time per user (`entitlement.changed`), naming `user`.
    static func entitlement(_ outTradeNo: String, id: String, user: String, at: Date = TestTime.at(60)) -> OutboxEvent {
        OutboxEvent(
            id: id, outTradeNo: outTradeNo, type: OutboxEvent.oneAtATimePerUser,
            payload: #"{"out_trade_no":"\#(outTradeNo)","user_id":"\#(user)"}"#, createdAt: at)
    }

    /// An `order.paid` the database itself refuses (its table's rule `attempts >= 0`): a write that
    /// fails inside the store's transaction, after the door's UPDATE and event. (An id on record
    /// does not fail: it is the same event written again, `OutboxEvent.id`.)
    static func refusedByTheDatabase(_ outTradeNo: String, id: String = UUID().uuidString) -> OutboxEvent {
        var event = paid(outTradeNo, id: id)
        event.attempts = -1
        return event
    }

    /// Creates the order and fails the test's expectations loudly if it was not new.
    @discardableResult
    static func create(_ order: OrderRecord, in store: some OrderStore) async throws -> OrderRecord {
        guard case .created(let record) = try await store.create(order, event: created) else {
            throw FixtureError.notCreated
        }
        return record
    }

    static func pay(_ outTradeNo: String, in store: some OrderStore, at: Date = TestTime.at(60)) async throws
        -> TransitionResult
    {
        try await store.transition(
            outTradeNo, to: .success, from: OrderState.open, transactionID: "wx-\(outTradeNo)", paidAt: at,
            expectedAmount: nil, detail: "test", outbox: paid(outTradeNo, at: at), at: at)
    }
}

enum FixtureError: Error {
    case notCreated
    case timedOut
}

/// A fresh directory per test, removed afterwards.
struct TemporaryDirectory {
    let path: String

    init() throws {
        path = FileManager.default.temporaryDirectory
            .appendingPathComponent("wxpay-storage-tests-\(UUID().uuidString)").path
        try FileManager.default.createDirectory(atPath: path, withIntermediateDirectories: true)
    }

    var databasePath: String { path + "/orders.sqlite" }

    func remove() {
        try? FileManager.default.removeItem(atPath: path)
    }
}

/// Opens a SQLite store on a temporary file, runs `body`, and closes the store and removes the
/// file whether or not `body` throws. (Store behaviour common to both stores uses
/// `withStore(_:_:)` with a `StoreKind`.)
func withSQLiteStore(
    configuration: SQLiteOrderStore.Configuration = SQLiteOrderStore.Configuration(),
    _ body: (SQLiteOrderStore, TemporaryDirectory) async throws -> Void
) async throws {
    let directory = try TemporaryDirectory()
    defer { directory.remove() }
    let store = try await SQLiteOrderStore.open(path: directory.databasePath, configuration: configuration)
    do {
        try await body(store, directory)
        await store.close()
    } catch {
        await store.close()
        throw error
    }
}

/// Waits on a semaphore without blocking a cooperative-pool thread.
func wait(for semaphore: DispatchSemaphore) async {
    await withCheckedContinuation { continuation in
        Thread.detachNewThread {
            semaphore.wait()
            continuation.resume()
        }
    }
}

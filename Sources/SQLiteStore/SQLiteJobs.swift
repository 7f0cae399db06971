// SPDX-License-Identifier: Apache-2.0
import StorageCore

/// A write for the writer thread, run inside its own SAVEPOINT within a group-commit transaction.
struct WriteJob: Sendable {
    /// Runs the operation. On success it returns the delivery of its result, which the writer calls
    /// only after COMMIT has returned, so nobody learns of a change before it is durable.
    let perform: @Sendable (SQLiteConnection) -> Result<Delivery, StorageError>
    /// Reports a failure of the operation, of its transaction, or of the store (closed).
    let fail: @Sendable (StorageError) -> Void
}

/// Hands a committed result to its waiter.
struct Delivery: Sendable {
    let deliver: @Sendable () -> Void
}

/// A read for a reader connection (or, in memory, for the writer's connection).
struct ReadJob: Sendable {
    let run: @Sendable (SQLiteConnection) -> Void
    let fail: @Sendable (StorageError) -> Void
}

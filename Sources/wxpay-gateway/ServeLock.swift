// SPDX-License-Identifier: Apache-2.0
import Foundation
import Glibc

/// One `serve` per SQLite database: an exclusive `flock` on `<database>.serve-lock`, held for the
/// gateway's life and dropped by the kernel however it ends.
///
/// SQLite would let a second gateway in (its WAL takes several processes), but a second `serve`
/// is always a mistake — a unit started twice, a demo left running — and costs: two reconcilers
/// and dispatchers, waits not woken by the other's payments, writers contending for the file. A
/// gateway serves one SQLite database alone; several instances need PostgreSQL. (`backup`,
/// `doctor` and `reconcile` do not take it: they run beside a serving gateway.)
final class ServeLock: Sendable {
    private let descriptor: Int32

    private init(descriptor: Int32) {
        self.descriptor = descriptor
    }

    enum Outcome {
        case taken(ServeLock)
        /// Another `serve` holds it.
        case held
        case failed(String)
    }

    /// Takes the lock of the database at `database` (its real path, so every name of the one file
    /// meets the one lock file).
    static func take(for database: String) -> Outcome {
        let path = database + ".serve-lock"
        let descriptor = open(path, O_RDWR | O_CREAT | O_CLOEXEC, 0o600)
        guard descriptor >= 0 else {
            return .failed("cannot open \(path): \(String(cString: strerror(errno)))")
        }
        guard flock(descriptor, LOCK_EX | LOCK_NB) == 0 else {
            let busy = errno == EWOULDBLOCK
            close(descriptor)
            return busy ? .held : .failed("cannot lock \(path): \(String(cString: strerror(errno)))")
        }
        return .taken(ServeLock(descriptor: descriptor))
    }

    deinit {
        close(descriptor)
    }
}

// SPDX-License-Identifier: Apache-2.0
import Dispatch

/// Runs blocking work (opening files, waiting for threads) on a Dispatch thread, never on the
/// Swift cooperative pool, whose few threads must not sleep.
enum Blocking {
    static func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            DispatchQueue.global().async {
                continuation.resume(returning: work())
            }
        }
    }
}

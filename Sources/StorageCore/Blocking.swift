// SPDX-License-Identifier: Apache-2.0
import Foundation

/// Runs blocking work (opening files, waiting for threads to exit) on a thread of its own, never
/// on the Swift cooperative pool, whose few threads must not sleep — and not on Dispatch's global
/// queues either: on Linux, blocked global-queue threads were seen to stall async work for seconds.
package enum Blocking {
    package static func run<T: Sendable>(_ work: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { continuation in
            Thread.detachNewThread {
                continuation.resume(returning: work())
            }
        }
    }
}

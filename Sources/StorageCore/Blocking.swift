// SPDX-License-Identifier: Apache-2.0
import Foundation
#if canImport(Glibc)
import Glibc
#endif

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

/// The stores' own threads (a writer, readers, a change listener): started with a name that
/// `top -H`, `perf` and `/proc/PID/task/*/comm` show, so an operator can tell which of them spends
/// the CPU. Linux keeps at most 15 bytes of a thread's name and refuses a longer one outright, and
/// Foundation does not pass `Thread.name` on to Linux: so the thread writes its own name where
/// Linux keeps it (`pthread_setname_np` does the same; Glibc's Swift module does not offer it).
package enum StoreThread {
    package static func start(named name: String, _ body: @escaping @Sendable () -> Void) {
        precondition(name.utf8.count <= 15, "Linux refuses thread names over 15 bytes")
        let thread = Thread {
            let file = open("/proc/thread-self/comm", O_WRONLY)
            if file >= 0 {
                _ = name.withCString { write(file, $0, strlen($0)) }
                close(file)
            }
            body()
        }
        thread.start()
    }
}

// SPDX-License-Identifier: Apache-2.0
import Dispatch
import Foundation

/// Waits for SIGINT or SIGTERM without blocking a thread: Dispatch signal sources resume a
/// continuation, so the command can shut its server down gracefully.
enum Signals {
    static func waitForTermination() async -> Int32 {
        await withCheckedContinuation { (continuation: CheckedContinuation<Int32, Never>) in
            let once = OnceBox(continuation)
            for signalNumber in [SIGINT, SIGTERM] {
                signal(signalNumber, SIG_IGN)
                let source = DispatchSource.makeSignalSource(signal: signalNumber, queue: .main)
                source.setEventHandler { once.resume(signalNumber) }
                source.resume()
                once.keep(source)
            }
        }
    }
}

/// Resumes the continuation once, and keeps the signal sources alive while it waits.
private final class OnceBox: @unchecked Sendable {
    // Touched only on the main queue (where the signal handlers run) and once at setup.
    private var continuation: CheckedContinuation<Int32, Never>?
    private var sources: [any DispatchSourceSignal] = []

    init(_ continuation: CheckedContinuation<Int32, Never>) { self.continuation = continuation }
    func keep(_ source: any DispatchSourceSignal) { sources.append(source) }
    func resume(_ signal: Int32) {
        continuation?.resume(returning: signal)
        continuation = nil
    }
}

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

extension Signals {
    /// Runs `action` on every SIGHUP from now on (the serve command fires its reload hooks).
    /// The source lives as long as the process.
    static func onHangUp(_ action: @escaping @Sendable () -> Void) {
        signal(SIGHUP, SIG_IGN)
        let source = DispatchSource.makeSignalSource(signal: SIGHUP, queue: .global())
        source.setEventHandler(handler: action)
        source.resume()
        hangUpSources.append(source)
    }

    /// Keeps the SIGHUP sources alive; appended to only while `serve` starts, on its one task.
    nonisolated(unsafe) private static var hangUpSources: [any DispatchSourceSignal] = []
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

// SPDX-License-Identifier: Apache-2.0
import Dispatch
import Glibc
import Synchronization

/// Unix signals as an asynchronous sequence, through Dispatch signal sources: nothing runs in the
/// signal handler itself, and no thread blocks waiting. From the moment it is made, the signals'
/// default action is off (`SIG_IGN`) for the life of the process, so a signal that arrives before
/// anyone reads (or after the reader stopped) is queued or ignored, never fatal.
///
/// ```swift
/// let hangUps = UnixSignals([SIGHUP])
/// for await _ in hangUps { await reloads.fire() }
/// ```
public final class UnixSignals: AsyncSequence, Sendable {
    public typealias Element = Int32

    private let mailbox: Mailbox<Int32>
    private let trap: SignalTrap

    public init(_ signals: [Int32]) {
        let mailbox = Mailbox<Int32>()
        self.mailbox = mailbox
        trap = SignalTrap(signals) { mailbox.post($0) }
    }

    /// The next signal caught; nil once `cancel` was called or the reading task is cancelled.
    public func next() async -> Int32? { await mailbox.next() }

    /// Stops listening (the signals stay ignored).
    public func cancel() {
        trap.cancel()
        mailbox.close()
    }

    public struct AsyncIterator: AsyncIteratorProtocol {
        let signals: UnixSignals
        public mutating func next() async -> Int32? { await signals.next() }
    }

    public func makeAsyncIterator() -> AsyncIterator { AsyncIterator(signals: self) }
}

/// Dispatch signal sources for a set of signals, each delivery handed to `handler` on a queue of
/// the trap's own; the signals are ignored by default from the start, and a signal sent once the
/// trap is made is delivered.
final class SignalTrap: Sendable {
    // Dispatch's sources are thread-safe; Swift's overlay does not say so yet.
    private let sources: Mutex<[any DispatchSourceSignal]>

    init(_ signals: [Int32], handler: @escaping @Sendable (Int32) -> Void) {
        let queue = DispatchQueue(label: "wxpay.lifecycle.signals")
        var sources: [any DispatchSourceSignal] = []
        // A source is armed asynchronously after `resume`; until then a signal would be ignored
        // and lost, so the trap waits for every registration before it counts as made.
        let registered = DispatchGroup()
        for number in signals {
            signal(number, SIG_IGN)
            let source = DispatchSource.makeSignalSource(signal: number, queue: queue)
            source.setEventHandler { handler(number) }
            registered.enter()
            source.setRegistrationHandler { registered.leave() }
            source.resume()
            sources.append(source)
        }
        registered.wait()
        self.sources = Mutex(sources)
    }

    func cancel() {
        for source in sources.withLock({ $0 }) { source.cancel() }
    }

    deinit { cancel() }
}

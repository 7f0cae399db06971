// SPDX-License-Identifier: Apache-2.0
import Dispatch
import Foundation
import StorageCore
import Synchronization

/// `LISTEN` on the store's channel, on a thread and a connection of its own, handing every
/// announced order to the observers. When the connection breaks it reconnects with backoff
/// (50 ms doubling to 5 s) and, once listening again, tells the observers to `resync`: changes
/// committed meanwhile were not heard. While idle it checks the connection every few seconds, so
/// a server that went away silently is noticed.
final class PostgresChangeListener: Sendable {
    struct Observer: Sendable {
        let changed: @Sendable (String) -> Void
        let resync: @Sendable () -> Void
    }

    private struct State {
        var observers: [Observer] = []
        var isClosed = false
        var isConnected = false
    }

    private let settings: PostgresSettings
    private let channel: String
    private let state = Mutex(State())
    private let exited = DispatchSemaphore(value: 0)
    /// How long the thread waits for a notification before checking the connection and `close`.
    private static let idleCheck: Duration = .seconds(2)

    init(settings: PostgresSettings, channel: String) {
        self.settings = settings
        self.channel = channel
        StoreThread.start(named: "pg-listener") { [self] in self.runLoop() }
    }

    func add(_ observer: Observer) {
        state.withLock { $0.observers.append(observer) }
    }

    var isConnected: Bool { state.withLock { $0.isConnected } }

    /// Stops listening; returns once the thread has closed its connection.
    func close() async {
        let first = state.withLock { state in
            defer { state.isClosed = true }
            return !state.isClosed
        }
        guard first else { return }
        await Blocking.run { [exited] in exited.wait() }
    }

    private var isClosed: Bool { state.withLock { $0.isClosed } }

    private func runLoop() {
        var backoff = PostgresPool.firstBackoff
        var everConnected = false
        while !isClosed {
            guard let connection = try? listen() else {
                sleep(backoff)
                backoff = min(backoff * 2, PostgresPool.maximumBackoff)
                continue
            }
            backoff = PostgresPool.firstBackoff
            state.withLock { $0.isConnected = true }
            // The first connection starts the feed; a later one follows a gap in which
            // notifications were lost.
            if everConnected { for observer in observers() { observer.resync() } }
            everConnected = true
            receive(on: connection)
            state.withLock { $0.isConnected = false }
            connection.close()
        }
        exited.signal()
    }

    private func listen() throws(StorageError) -> PGConnection {
        let connection = try PGConnection.connect(settings)
        do throws(StorageError) {
            _ = try connection.run(PGQuery("SELECT wxpay_listen($1)", channel))
        } catch {
            connection.close()
            throw error
        }
        return connection
    }

    /// Delivers notifications until the connection breaks or the listener closes.
    private func receive(on connection: PGConnection) {
        while !isClosed {
            do throws(StorageError) {
                let received = try connection.notifications(waitingUpTo: Self.idleCheck)
                if received.isEmpty {
                    // Quiet: make sure the server is still there (a round trip, answered at once).
                    _ = try connection.run(PGQuery("SELECT 1"))
                    continue
                }
                let observers = observers()
                for notification in received where notification.channel == channel {
                    for key in notification.payload.split(separator: "\n") {
                        let outTradeNo = String(key)
                        for observer in observers { observer.changed(outTradeNo) }
                    }
                }
            } catch {
                return
            }
        }
    }

    private func observers() -> [Observer] { state.withLock { $0.observers } }

    /// Sleeps up to `duration`, waking early to notice `close`.
    private func sleep(_ duration: Duration) {
        let end = ContinuousClock.now + duration
        while !isClosed && ContinuousClock.now < end {
            Thread.sleep(forTimeInterval: min(0.05, Double((end - ContinuousClock.now).components.attoseconds) * 1e-18
                + Double((end - ContinuousClock.now).components.seconds)))
        }
    }
}

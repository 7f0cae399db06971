// SPDX-License-Identifier: Apache-2.0
import Foundation
import Synchronization

/// How notifies reach the merchant: HTTP in a real run, a direct call in tests.
public protocol NotifySender: Sendable {
    /// Posts `body` to `url`; returns the reply body of a 2xx answer, or nil when the merchant could
    /// not be reached, did not answer within `timeout` seconds, or answered with another status.
    func post(_ body: [UInt8], to url: String, timeout: TimeInterval) async -> [UInt8]?

    /// Posts `body` with `headers` besides the sender's own (WeChat Pay v3 signs every notify in
    /// its `Wechatpay-*` headers). Senders that cannot carry headers post the body alone.
    func post(_ body: [UInt8], headers: [String: String], to url: String, timeout: TimeInterval) async -> [UInt8]?
}

extension NotifySender {
    public func post(_ body: [UInt8], headers: [String: String], to url: String, timeout: TimeInterval) async -> [UInt8]? {
        await post(body, to: url, timeout: timeout)
    }
}

/// One delivery attempt, as the merchant would have seen it.
public struct NotifyAttempt: Sendable, Hashable {
    /// What was notified, as the control APIs name it.
    public struct Kind: RawRepresentable, Sendable, Hashable, Codable {
        public let rawValue: String
        public init(rawValue: String) { self.rawValue = rawValue }
        public static let payment = Kind(rawValue: "payment")
        public static let refund = Kind(rawValue: "refund")
    }
    public var kind: Kind
    /// What the notify is about (out_trade_no for payments, out_refund_no for refunds, the
    /// notificationUUID for App Store notifications).
    public var reference: String
    /// 1 for the first attempt.
    public var number: Int
    /// Simulated time of the attempt.
    public var at: Date
    public var acknowledged: Bool
    /// Whether the fault plan dropped this attempt on the way (the merchant saw nothing).
    public var dropped: Bool
    /// How many copies were sent at once.
    public var copies: Int
}

/// Delivers notifications on a retry schedule (WeChat's, or the App Store's scaled down) until the
/// merchant acknowledges one, acting out the notify faults of the plan: drops, concurrent
/// duplicates, delays, reordering. What counts as an acknowledgement is the caller's: WeChat wants
/// a `SUCCESS` document, Apple any 200–206 answer.
///
/// One loop polls simulated time and starts due attempts as child tasks, so a scaled or advanced
/// clock moves the schedule without a sleeping task per notify.
public final class NotifyScheduler: Sendable {
    struct Delivery: Sendable {
        var kind: NotifyAttempt.Kind
        var reference: String
        var url: String
        var body: [UInt8]
        var attemptsMade = 0
        var nextAt: Date
        var inFlight = false
        /// Every attempt is lost: the merchant never hears of this payment.
        var droppedEntirely: Bool
    }

    struct State: Sendable {
        var deliveries: [UInt64: Delivery] = [:]
        var nextID: UInt64 = 0
        var random: SeededRandom
        var faults = NotifyFaults()
        var history: [NotifyAttempt] = []
        var abandoned = 0
        var inFlight = 0
    }

    private let clock: any SimulatorClock
    private let sender: any NotifySender
    private let retryIntervals: [TimeInterval]
    private let timeout: TimeInterval
    private let acknowledges: @Sendable ([UInt8]) -> Bool
    private let headers: (@Sendable ([UInt8]) -> [String: String])?
    private let state: Mutex<State>
    static let historyLimit = 200_000
    static let maximumInFlight = 256

    /// - Parameters:
    ///   - retryIntervals: the waits after each failed attempt; after the last one the notify is abandoned.
    ///   - timeout: how long one attempt waits for the merchant.
    ///   - acknowledges: whether the body of a 2xx answer acknowledges the notify.
    ///   - headers: the headers of one attempt at a body, made afresh for each attempt (a v3
    ///     notify is signed when it is sent, so a retry a day later carries a fresh timestamp).
    public init(clock: any SimulatorClock, sender: any NotifySender, retryIntervals: [TimeInterval], timeout: TimeInterval,
                seed: UInt64 = 0x5EED, headers: (@Sendable ([UInt8]) -> [String: String])? = nil,
                acknowledges: @escaping @Sendable ([UInt8]) -> Bool) {
        self.clock = clock
        self.sender = sender
        self.retryIntervals = retryIntervals
        self.timeout = timeout
        self.headers = headers
        self.acknowledges = acknowledges
        state = Mutex(State(random: SeededRandom(seed: seed)))
    }

    public func setFaults(_ faults: NotifyFaults) {
        state.withLock { $0.faults = faults }
    }

    /// Queues a notify; its first attempt goes out at once unless the fault plan delays it.
    /// `dropped`: every attempt is lost whatever the plan's rates (the caller chose this one).
    public func enqueue(kind: NotifyAttempt.Kind, reference: String, url: String, body: [UInt8], dropped chosen: Bool = false) {
        let now = clock.now()
        state.withLock { state in
            let faults = state.faults
            var delay = faults.delay
            if faults.reorderWindow > 0 {
                delay += Double(state.random.next() % 1_000_000) / 1_000_000 * faults.reorderWindow
            }
            let dropped = state.random.chance(faults.dropRate) || chosen
            state.nextID += 1
            state.deliveries[state.nextID] = Delivery(
                kind: kind, reference: reference, url: url, body: body, nextAt: now + delay, droppedEntirely: dropped)
        }
    }

    /// Every attempt so far, oldest first.
    public var history: [NotifyAttempt] { state.withLock { $0.history } }

    /// Notifies still waiting for an acknowledgement.
    public var pending: Int { state.withLock { $0.deliveries.count } }

    /// Notifies given up after the last scheduled retry.
    public var abandoned: Int { state.withLock { $0.abandoned } }

    /// Runs the delivery loop until the surrounding task is cancelled.
    public func run() async {
        await withDiscardingTaskGroup { group in
            while !Task.isCancelled {
                for (id, delivery) in takeDue() {
                    group.addTask { await self.attempt(id: id, delivery) }
                }
                let wait = clock.realWait(for: 1, cap: 0.01)
                try? await Task.sleep(for: .seconds(max(wait, 0.002)))
            }
            group.cancelAll()
        }
    }

    private func takeDue() -> [(UInt64, Delivery)] {
        let now = clock.now()
        return state.withLock { state in
            var due: [(UInt64, Delivery)] = []
            for (id, delivery) in state.deliveries where !delivery.inFlight && delivery.nextAt <= now {
                guard state.inFlight < Self.maximumInFlight else { break }
                state.deliveries[id]!.inFlight = true
                state.inFlight += 1
                due.append((id, delivery))
            }
            return due
        }
    }

    private func attempt(id: UInt64, _ delivery: Delivery) async {
        let (drop, copies) = state.withLock { state -> (Bool, Int) in
            let drop = delivery.droppedEntirely || state.random.chance(state.faults.attemptDropRate)
            let copies = state.random.chance(state.faults.duplicateRate) ? max(2, state.faults.duplicateCopies) : 1
            return (drop, copies)
        }
        let startedAt = clock.now()
        var acknowledged = false
        if !drop {
            acknowledged = await withTaskGroup(of: Bool.self) { group in
                for _ in 0..<copies {
                    group.addTask {
                        let sent: [UInt8]?
                        if let headers = self.headers {
                            sent = await self.sender.post(delivery.body, headers: headers(delivery.body), to: delivery.url,
                                                          timeout: self.timeout)
                        } else {
                            sent = await self.sender.post(delivery.body, to: delivery.url, timeout: self.timeout)
                        }
                        guard let reply = sent else { return false }
                        return self.acknowledges(reply)
                    }
                }
                var any = false
                for await ok in group where ok { any = true }
                return any
            }
        }
        let now = clock.now()
        state.withLock { state in
            state.inFlight -= 1
            guard var current = state.deliveries[id] else { return }
            current.attemptsMade += 1
            current.inFlight = false
            if state.history.count >= Self.historyLimit { state.history.removeFirst(state.history.count / 2) }
            state.history.append(NotifyAttempt(
                kind: delivery.kind, reference: delivery.reference, number: current.attemptsMade, at: startedAt,
                acknowledged: acknowledged, dropped: drop, copies: drop ? 0 : copies))
            if acknowledged {
                state.deliveries.removeValue(forKey: id)
            } else if current.attemptsMade > retryIntervals.count {
                state.deliveries.removeValue(forKey: id)
                state.abandoned += 1
            } else {
                current.nextAt = max(now, startedAt + retryIntervals[current.attemptsMade - 1])
                state.deliveries[id] = current
            }
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
import Foundation
import HTTP
import Lifecycle
import Observability
import StorageCore
import Synchronization

/// Delivers the transactional outbox (`order.paid` events written in the same transaction as the
/// move to SUCCESS) to the business backend's webhook, at least once, signed with
/// `Gateway-Signature`.
///
/// Everything lives in the store: due events are leased (`dueOutboxEvents`), a 2xx marks the event
/// delivered, anything else reschedules it with exponential backoff and jitter, and an event still
/// failing after `maxAge` (24 h by default) is dead-lettered until support redrives it. A restart simply
/// continues from the store. The receiver deduplicates on the event `id`: a delivery acknowledged
/// while the gateway crashed before recording it is sent again.
///
/// ```swift
/// let dispatcher = FulfilmentDispatcher(store: store, configuration: .init(url: url, secret: secret),
///                                       transport: HTTPFulfilmentTransport(client: client))
/// try await ServiceGroup(services: [dispatcher]).run()   // until SIGTERM
/// ```
public final class FulfilmentDispatcher: Service, CustomStringConvertible {
    /// Where and how events are delivered.
    public struct Configuration: Sendable, Hashable {
        /// The business backend's webhook URL (GATEWAY_FULFILMENT_URL).
        public var url: String
        /// The HMAC key of `Gateway-Signature` (GATEWAY_FULFILMENT_SECRET).
        public var secret: String
        /// After this many seconds without a 2xx an event is dead-lettered (default 24 h), once it
        /// has also had `minimumAttempts` attempts (so a redriven or long-queued event gets tries).
        public var maxAge: TimeInterval
        public var minimumAttempts: Int
        /// The first retry's delay (default 5 s); each later one doubles, up to `maxBackoff` (1 h).
        /// Jitter only lengthens a delay (by up to half), never beyond `maxBackoff`.
        public var initialBackoff: TimeInterval
        public var maxBackoff: TimeInterval
        /// How often the store is asked for due events when the last pass found few (default 1 s).
        public var pollInterval: TimeInterval
        /// Events leased per pass (default 32), all delivered concurrently.
        public var batchSize: Int
        /// One delivery's time limit (default 10 s).
        public var timeout: TimeInterval

        public init(url: String, secret: String, maxAge: TimeInterval = 86400, minimumAttempts: Int = 5,
                    initialBackoff: TimeInterval = 5, maxBackoff: TimeInterval = 3600, pollInterval: TimeInterval = 1,
                    batchSize: Int = 32, timeout: TimeInterval = 10) {
            self.url = url
            self.secret = secret
            self.maxAge = maxAge
            self.minimumAttempts = max(1, minimumAttempts)
            self.initialBackoff = initialBackoff
            self.maxBackoff = max(initialBackoff, maxBackoff)
            self.pollInterval = pollInterval
            self.batchSize = max(1, batchSize)
            self.timeout = timeout
        }

        /// The webhook settings of a gateway configuration (GATEWAY_FULFILMENT_*); nil when no URL
        /// is configured (the dispatcher is off, events wait in the outbox).
        public init?(_ settings: GatewayConfiguration.Fulfilment) {
            guard let url = settings.url, let secret = settings.secret else { return nil }
            self.init(url: url, secret: secret, maxAge: settings.deadAfter, initialBackoff: settings.retryMin,
                      maxBackoff: settings.retryMax)
        }
    }

    /// What one pass did.
    public struct Pass: Sendable, Hashable {
        public var delivered = 0
        public var failed = 0
        public var deadLettered = 0
        /// Whether the pass leased a full batch (more may be due at once).
        public var full = false
    }

    public let configuration: Configuration
    public let claimant: String
    private let store: any OrderStore
    private let entitlements: EntitlementEvents?
    private let transport: any FulfilmentTransport
    private let instruments: FulfilmentInstruments
    private let logger: Logger
    private let now: @Sendable () -> Date
    private let signingClock: @Sendable () -> Date
    private let jitter: @Sendable () -> Double
    private let lastGauges = Mutex<ContinuousClock.Instant?>(nil)

    /// - Parameters:
    ///   - now: the clock the events were written by (tests move it past the 24-hour limit).
    ///   - signingClock: the signature's timestamp, which the receiver checks against its own clock
    ///     (`now` unless given: demo mode's moved clock dates the events, the wall clock signs).
    ///   - jitter: a number in 0...1 per retry; the delay is `(1 + jitter / 2)` × the backoff, at most `maxBackoff`.
    ///   - entitlements: what fills an `entitlement.changed` event at each attempt; without it the
    ///     row's own payload (the user and the order) is sent.
    public init(store: any OrderStore, configuration: Configuration, transport: any FulfilmentTransport,
                metrics: MetricsRegistry = MetricsRegistry(), logger: Logger = .disabled, claimant: String? = nil,
                entitlements: EntitlementEvents? = nil,
                now: @escaping @Sendable () -> Date = { Date() }, signingClock: (@Sendable () -> Date)? = nil,
                jitter: @escaping @Sendable () -> Double = { Double.random(in: 0...1) }) {
        self.store = store
        self.entitlements = entitlements
        self.configuration = configuration
        self.transport = transport
        instruments = FulfilmentInstruments(metrics)
        self.logger = logger
        self.claimant = claimant ?? "dispatcher-" + UUID().uuidString.prefix(8).lowercased()
        self.now = now
        self.signingClock = signingClock ?? now
        self.jitter = jitter
    }

    public var description: String { "fulfilment dispatcher" }

    /// Delivers until its graceful shutdown or the task is cancelled: a pass, then the poll
    /// interval unless the pass was full. Events leased by a pass cut short are due again later.
    public func run() async {
        await cancelWhenGracefulShutdown { [self] in await deliverUntilCancelled() }
    }

    private func deliverUntilCancelled() async {
        logger.notice("fulfilment dispatcher started", ["claimant": claimant])
        while !Task.isCancelled {
            let pass = await deliverDue()
            if !pass.full { try? await Task.sleep(for: .seconds(configuration.pollInterval)) }
        }
        logger.notice("fulfilment dispatcher stopped", ["claimant": claimant])
    }

    /// One pass: lease the due events and deliver each once.
    @discardableResult
    public func deliverDue() async -> Pass {
        var pass = Pass()
        let at = now()
        let events: [OutboxEvent]
        do {
            events = try await store.dueOutboxEvents(
                now: at, limit: configuration.batchSize, claimant: claimant,
                // Long enough for every delivery of the batch to finish or time out.
                leaseUntil: at.addingTimeInterval(configuration.timeout + 30))
        } catch {
            logger.error("outbox could not be read", ["error": error.shortDescription])
            instruments.storeErrors.increment()
            return pass
        }
        pass.full = events.count == configuration.batchSize
        // One user's entitlement events go one after another, oldest first: each carries the
        // entitlements computed as it is sent, so the last one the receiver gets is the newest.
        var queues: [[OutboxEvent]] = []
        var queueOfUser: [String: Int] = [:]
        for event in events {
            if let user = EntitlementEvents.user(of: event) {
                if let index = queueOfUser[user] { queues[index].append(event); continue }
                queueOfUser[user] = queues.count
            }
            queues.append([event])
        }
        let outcomes = await withTaskGroup(of: [Outcome].self) { group -> [Outcome] in
            for queue in queues {
                group.addTask {
                    var outcomes: [Outcome] = []
                    for event in queue { outcomes.append(await self.deliver(event)) }
                    return outcomes
                }
            }
            var outcomes: [Outcome] = []
            for await some in group { outcomes.append(contentsOf: some) }
            return outcomes
        }
        for outcome in outcomes {
            switch outcome {
            case .delivered: pass.delivered += 1
            case .failed: pass.failed += 1
            case .dead: pass.failed += 1; pass.deadLettered += 1
            }
        }
        await updateGauges()
        return pass
    }

    enum Outcome: Sendable { case delivered, failed, dead }

    /// One attempt for one event, and its bookkeeping.
    func deliver(_ event: OutboxEvent) async -> Outcome {
        let sentAt = now()
        var body = Array(event.payload.utf8)
        if let entitlements, event.type == EntitlementEvents.type {
            do {
                if let computed = try await entitlements.body(of: event, at: sentAt) { body = computed }
            } catch {
                // Not sent without its entitlements: the lease runs out and it is tried again.
                logger.error("entitlements could not be read for an event", ["event_id": event.id, "error": error.shortDescription])
                instruments.storeErrors.increment()
                return .failed
            }
        }
        let headers = [
            "Content-Type": "application/json",
            WebhookSignature.headerName: WebhookSignature.header(
                payload: body, secret: configuration.secret, timestamp: Int(signingClock().timeIntervalSince1970)),
            "Gateway-Event-Id": event.id,
            "Gateway-Event-Type": event.type,
        ]
        let started = ContinuousClock.now
        let failure: String?
        do {
            let status = try await transport.post(url: configuration.url, headers: headers, body: body,
                                                  timeout: .milliseconds(Int64(configuration.timeout * 1000)))
            failure = (200..<300).contains(status) ? nil : "http_\(status)"
        } catch let error as HTTPClientError {
            failure = "transport_" + error.shortDescription
        } catch {
            failure = "transport_failure"
        }
        instruments.deliveryDuration.record(ContinuousClock.now - started)
        let at = now()
        do {
            guard let failure else {
                CrashPoint.hit(CrashPoint.outboxDelivered)
                if try await store.markDelivered(event.id, at: at) {
                    _ = try? await store.appendEvent(event.outTradeNo, kind: "fulfilment_delivered",
                                                     detail: "\(event.type) \(event.id) acknowledged", at: at)
                }
                instruments.delivered.increment()
                return .delivered
            }
            let attempts = event.attempts + 1
            if at.timeIntervalSince(event.createdAt) >= configuration.maxAge && attempts >= configuration.minimumAttempts {
                if try await store.deadLetter(event.id, at: at, lastError: failure) {
                    _ = try? await store.appendEvent(
                        event.outTradeNo, kind: "fulfilment_dead",
                        detail: "\(event.type) \(event.id) given up after \(attempts) attempts (\(failure)); redrive to retry",
                        at: at)
                    logger.error("fulfilment event dead-lettered", ["event_id": event.id, "out_trade_no": event.outTradeNo,
                                                                    "error": failure])
                }
                instruments.deadLettered.increment()
                return .dead
            }
            let delay = backoff(attempts: attempts)
            _ = try await store.reschedule(event.id, nextAttemptAt: at.addingTimeInterval(delay), attempts: attempts,
                                           lastError: failure)
            logger.warning("fulfilment delivery failed; will retry", ["event_id": event.id, "error": failure,
                                                                     "attempt": String(attempts)])
            instruments.failed.increment()
            return .failed
        } catch {
            // The lease runs out and the event is tried again: at least once, never lost.
            logger.error("outbox bookkeeping failed", ["event_id": event.id, "error": error.shortDescription])
            instruments.storeErrors.increment()
            return failure == nil ? .delivered : .failed
        }
    }

    /// Exponential backoff with jitter: `initial × 2^(attempts-1)`, capped, then lengthened by up to
    /// half and capped again, so a receiver that comes back is not hit by every event at once and
    /// no retry comes sooner than the configured minimum (GATEWAY_FULFILMENT_RETRY_MIN).
    func backoff(attempts: Int) -> TimeInterval {
        let exponent = Double(min(max(attempts - 1, 0), 30))
        let base = min(configuration.maxBackoff, configuration.initialBackoff * pow(2, exponent))
        return min(configuration.maxBackoff, base * (1 + min(1, max(0, jitter())) / 2))
    }

    /// Pending, dead and lag gauges, refreshed after a pass at most every 5 s (the count reads
    /// every order).
    private func updateGauges() async {
        let due = lastGauges.withLock { last -> Bool in
            if let last, ContinuousClock.now - last < .seconds(5) { return false }
            last = .now
            return true
        }
        if due { await refreshGauges() }
    }

    /// Sets the pending, dead and lag gauges from the store now.
    public func refreshGauges() async {
        guard let counts = try? await store.counts() else { return }
        instruments.pending.set(Double(counts.outboxPending))
        instruments.dead.set(Double(counts.outboxDead))
        instruments.lag.set(counts.oldestPendingOutboxAt.map { max(0, now().timeIntervalSince($0)) } ?? 0)
    }
}

/// The dispatcher's metrics: its attempts and their latency, and the outbox as the store counts it.
private struct FulfilmentInstruments: Sendable {
    static let deliveries = Metric<Counter>(
        "wxpay_outbox_deliveries_total", help: "Fulfilment webhook attempts by outcome (delivered, failed, dead).")
    static let pending = Metric<Gauge>("wxpay_outbox_pending", help: "Outbox events not yet delivered.")
    static let dead = Metric<Gauge>("wxpay_outbox_dead", help: "Outbox events given up on, waiting for a redrive.")
    static let lag = Metric<Gauge>("wxpay_outbox_lag_seconds", help: "Age of the oldest pending outbox event.")
    static let errors = Metric<Counter>("wxpay_outbox_errors_total", help: "Outbox store failures.")
    static let deliveryDuration = Metric<Histogram>("wxpay_outbox_delivery_duration_seconds", help: "Webhook delivery latency.")

    let delivered: Counter
    let failed: Counter
    let deadLettered: Counter
    let storeErrors: Counter
    let deliveryDuration: Histogram
    let pending: Gauge
    let dead: Gauge
    let lag: Gauge

    init(_ registry: MetricsRegistry) {
        registry.describe(Self.deliveries, Self.pending, Self.dead, Self.lag, Self.errors, Self.deliveryDuration)
        delivered = registry.makeCounter(Self.deliveries, ["outcome": "delivered"])
        failed = registry.makeCounter(Self.deliveries, ["outcome": "failed"])
        deadLettered = registry.makeCounter(Self.deliveries, ["outcome": "dead"])
        storeErrors = registry.makeCounter(Self.errors, ["stage": "store"])
        deliveryDuration = registry.makeHistogram(Self.deliveryDuration)
        pending = registry.makeGauge(Self.pending)
        dead = registry.makeGauge(Self.dead)
        lag = registry.makeGauge(Self.lag)
        // Exported from the start: a rate of failed deliveries must see the first one.
        for counter in [delivered, failed, deadLettered] { counter.publish() }
    }
}

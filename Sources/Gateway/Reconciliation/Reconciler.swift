// SPDX-License-Identifier: Apache-2.0
import Foundation
import Lifecycle
import Observability
import StorageCore
import Synchronization
import WeChatPay

/// The background sweeper that recovers dropped orders: every `interval` seconds it leases the open
/// orders that have heard no notify for `after` seconds, asks WeChat about each (orderquery) and
/// settles the answer through the one door; orders past their expiry are closed with closeorder
/// instead, where ORDERPAID settles as paid only after a verified orderquery.
///
/// Several sweepers (several gateway processes on one database) never start checking the same
/// order in the same period: orders are leased with `OrderStore.claimOpenOrders`, and a sweeper
/// starts no call once its lease has run out. A call already started is not cut short, so on a
/// slow machine it may reach WeChat after the lease (the battery's T7 saw up to 10 s) while
/// another sweeper holds the order: two orderqueries then overlap, which is harmless (a query is
/// a read and settling is one conditional transition), but each sweep still queries an order at
/// most once. Within a process, queries are shared with `wait` polling
/// through `Upstream.queries` (one orderquery per order at a time). Calls to WeChat are bounded in
/// concurrency and rate, and a sweep whose calls keep failing stops early and the next one is
/// delayed (exponential backoff).
///
/// ```swift
/// let reconciler = Reconciler(services: services)
/// try await ServiceGroup(services: [reconciler]).run()   // until SIGTERM
/// ```
public final class Reconciler: Service, CustomStringConvertible {
    /// How a sweeper paces itself; defaults come from `GatewayConfiguration`.
    public struct Configuration: Sendable, Hashable {
        /// Seconds between sweeps (default 30).
        public var interval: Double
        /// Seconds without a notify before an open order is checked (default 60).
        public var after: Double
        /// Calls to WeChat in flight at once (default 8).
        public var concurrency: Int
        /// Calls to WeChat per second (default 50).
        public var rate: Double
        /// Consecutive failed calls after which the rest of a sweep is left for later (default 10).
        public var failureLimit: Int

        public init(interval: Double = 30, after: Double = 60, concurrency: Int = 8, rate: Double = 50,
                    failureLimit: Int = 10) {
            self.interval = interval
            self.after = after
            self.concurrency = max(1, concurrency)
            self.rate = rate
            self.failureLimit = max(1, failureLimit)
        }

        /// The reconciler settings of a gateway configuration.
        public init(_ configuration: GatewayConfiguration) {
            self.init(interval: configuration.reconcileInterval, after: configuration.reconcileAfter,
                      concurrency: configuration.reconcileConcurrency, rate: configuration.reconcileRate)
        }

        /// How long a sweeper holds its batch: a little less than one period, so its own next sweep
        /// finds the leases free while other sweepers in this period do not.
        var lease: Double { max(0.05, interval * 0.9) }

        /// As many orders as the rate allows within one lease (and at least one call per worker).
        var batchLimit: Int { min(5000, max(concurrency, Int(rate * lease))) }
    }

    public let configuration: Configuration
    /// The name this sweeper's leases carry.
    public let claimant: String
    let context: GatewayContext
    /// The orderquery flow the sweeps share with the waits (`OrderQueries.queryAndSettle`).
    let queries: OrderQueries
    let refunds: RefundService
    let iap: IAPService?
    let instruments: ReconcilerInstruments
    private let limiter: RateLimiter

    /// - Parameters:
    ///   - services: the flows whose orders, refunds and iOS purchases the sweeps check.
    ///   - configuration: pacing; default: the `GatewayConfiguration`'s.
    ///   - claimant: the lease owner's name; default: unique per instance.
    public init(services: GatewayServices, configuration: Configuration? = nil, claimant: String? = nil) {
        context = services.context
        queries = services.queries
        refunds = services.refunds
        iap = services.iap
        self.configuration = configuration ?? Configuration(services.configuration)
        self.claimant = claimant ?? "sweeper-" + UUID().uuidString.prefix(8).lowercased()
        limiter = RateLimiter(rate: self.configuration.rate)
        instruments = ReconcilerInstruments(context.metrics)
    }

    public var description: String { "reconciler" }

    /// Sweeps every `interval` seconds until its graceful shutdown or the task is cancelled (the
    /// sweep in hand is cut short: what it leased is leased again next time). After a sweep whose
    /// calls to WeChat mostly failed, the next waits longer (doubling, up to 32 periods).
    public func run() async {
        await cancelWhenGracefulShutdown { [self] in await sweepUntilCancelled() }
    }

    private func sweepUntilCancelled() async {
        context.logger.notice("reconciler started", ["claimant": claimant, "interval": String(configuration.interval),
                                                     "after": String(configuration.after)])
        var failedSweeps = 0
        // Once the gateway has begun to stop, no new sweep: the listener may still be draining its
        // requests for up to the grace period, and a sweep started now would lease orders and call
        // WeChat only to be cut short when the reconciler's own turn to stop comes.
        while !Task.isCancelled, !serviceGroupIsStopping() {
            let report = await sweep()
            let errors = report.errors + report.refundErrors
            if errors > 0 && errors * 2 >= report.checked + report.refundsChecked {
                failedSweeps = min(failedSweeps + 1, 5)
                context.logger.warning("reconciler backing off after upstream errors",
                                       ["errors": String(errors), "periods": String(1 << failedSweeps)])
            } else {
                failedSweeps = 0
            }
            try? await Task.sleep(for: .seconds(configuration.interval * Double(1 << failedSweeps)))
        }
        context.logger.notice("reconciler stopped", ["claimant": claimant])
    }

    /// One sweep: lease the due refunds and orders, check each (bounded in concurrency and rate), report.
    @discardableResult
    public func sweep() async -> SweepReport {
        let started = ContinuousClock.now
        let now = context.now()
        let leaseUntil = now.addingTimeInterval(configuration.lease)
        var report = SweepReport()
        // Refunds first, with at most a quarter of the batch: rarer than orders, and never starved
        // by a large backlog of unpaid ones (Reconciler+Refunds.swift).
        let refunds = await claimRefunds(now: now, leaseUntil: leaseUntil, into: &report)
        let claimed: [OrderRecord]
        do {
            claimed = try await context.store.claimOpenOrders(
                noNotifySince: now.addingTimeInterval(-configuration.after), now: now,
                limit: configuration.batchLimit - refunds.count, claimant: claimant, leaseUntil: leaseUntil)
        } catch {
            context.logger.error("reconciler could not claim orders", ["error": error.shortDescription])
            instruments.storeErrors.increment()
            report.errors += 1
            claimed = []
        }
        report.claimed = claimed.count
        report.lagSeconds = claimed.map { lag(of: $0, now: now) }.max() ?? 0

        let items = refunds.map(SweepItem.refund) + claimed.map(SweepItem.order)
        // Apple's recovery APIs run beside the order checks: a long first read of the notification
        // history does not hold the checks up.
        async let recovery: SweepReport = {
            var recovered = SweepReport()
            await self.sweepAppStoreRecovery(into: &recovered)
            return recovered
        }()
        let outcomes = await checkAll(items, leaseUntil: leaseUntil)
        report.settled += await retryUnmatchedApplePurchases(now: now)
        let recovered = await recovery
        report.backfillRan = recovered.backfillRan
        report.notificationsRecovered = recovered.notificationsRecovered
        report.consumptionSent = recovered.consumptionSent
        report.subscriptionsChecked = recovered.subscriptionsChecked
        for (item, outcome) in zip(items, outcomes) {
            if case .refund = item {
                report.count(refundOutcome: outcome)
                continue
            }
            switch outcome {
            case .open: report.checked += 1
            case .settled: report.checked += 1; report.settled += 1
            case .closed: report.checked += 1; report.closed += 1
            case .failed: report.checked += 1; report.errors += 1
            case .skipped: report.skipped += 1
            }
        }
        instruments.recordRefunds(checked: report.refundsChecked, settled: report.refundsSettled)
        instruments.sweeps.increment()
        instruments.ordersChecked.increment(by: report.checked)
        instruments.ordersSettled.increment(by: report.settled)
        instruments.ordersClosed.increment(by: report.closed)
        instruments.ordersSkipped.increment(by: report.skipped)
        instruments.lag.set(report.lagSeconds)
        instruments.lastSweepClaimed.set(Double(report.claimed))
        instruments.lastSweepTimestamp.set(context.now().timeIntervalSince1970.rounded(.down))
        instruments.sweepDuration.record(ContinuousClock.now - started)
        if report.claimed + report.refundsClaimed > 0 {
            context.logger.info("reconcile sweep", [
                "claimed": String(report.claimed), "checked": String(report.checked), "settled": String(report.settled),
                "closed": String(report.closed), "errors": String(report.errors), "skipped": String(report.skipped),
                "refunds_checked": String(report.refundsChecked), "refunds_settled": String(report.refundsSettled),
            ])
        }
        return report
    }

    /// What a sweep checks: a leased refund or a leased order.
    enum SweepItem: Sendable {
        case refund(RefundRecord)
        case order(OrderRecord)
    }

    /// Checks every item, `concurrency` at a time, each after its rate-limiter slot, and answers
    /// their outcomes in the items' order. After `failureLimit` failed checks in a row, or once the
    /// lease has run out (another sweeper may hold the item then), the rest are released, skipped.
    private func checkAll(_ items: [SweepItem], leaseUntil: Date) async -> [Outcome] {
        let consecutiveFailures = LockedBox(0)
        return await withTaskGroup(of: (Int, Outcome).self) { group -> [Outcome] in
            var outcomes = [Outcome](repeating: .skipped, count: items.count)
            var pending = items.enumerated().makeIterator()
            func startNext() {
                guard let (index, item) = pending.next() else { return }
                group.addTask {
                    if consecutiveFailures.value >= self.configuration.failureLimit {
                        return (index, await self.skip(item))
                    }
                    await self.limiter.acquire()
                    guard self.context.now() < leaseUntil, !Task.isCancelled else { return (index, await self.skip(item)) }
                    let outcome = await self.check(item)
                    CrashPoint.hit(CrashPoint.midSweep)
                    if outcome == .failed {
                        consecutiveFailures.update { $0 += 1 }
                    } else {
                        consecutiveFailures.update { $0 = 0 }
                    }
                    return (index, outcome)
                }
            }
            for _ in 0..<configuration.concurrency { startNext() }
            while let (index, outcome) = await group.next() {
                outcomes[index] = outcome
                startNext()
            }
            return outcomes
        }
    }

    private func check(_ item: SweepItem) async -> Outcome {
        switch item {
        case .order(let order): await check(order, now: context.now())
        case .refund(let refund): await check(refund)
        }
    }

    private func skip(_ item: SweepItem) async -> Outcome {
        switch item {
        case .order(let order): await skip(order)
        case .refund(let refund): await skip(refund)
        }
    }

    // MARK: - One order

    enum Outcome: Sendable, Hashable {
        /// Checked; still open (unpaid, or WeChat's answer changed nothing).
        case open
        case settled
        case closed
        case failed
        case skipped
    }

    /// How long the order has been due for a check: since `after` seconds past its creation, or
    /// one period after its last query, whichever is later.
    private func lag(of order: OrderRecord, now: Date) -> Double {
        var due = order.createdAt.addingTimeInterval(configuration.after)
        if let queried = order.lastQueriedAt { due = max(due, queried.addingTimeInterval(configuration.interval)) }
        return max(0, now.timeIntervalSince(due))
    }

    private func skip(_ order: OrderRecord) async -> Outcome {
        _ = try? await context.store.releaseClaim(order.outTradeNo, claimant: claimant)
        return .skipped
    }

    private func check(_ order: OrderRecord, now: Date) async -> Outcome {
        // An iOS order is the App Store's to find (Reconciler+AppStore.swift), never WeChat's.
        if order.channel == .apple { return await checkApple(order, now: now) }
        // An expired order is closed at WeChat; one whose API version has no keys here cannot be,
        // and is not asked about either (`OrderQueries.notAsked`): never an upstream error.
        if order.expiresAt <= now, context.upstream.unconfigured(.closeOrder, for: order) == nil { return await closeExpired(order) }
        return await query(order, reason: "reconcile")
    }

    /// orderquery through the shared single-flight, and the answer settled through the one door.
    private func query(_ order: OrderRecord, reason: String, fresh: Bool = false) async -> Outcome {
        let failure = LockedBox<String?>(nil)
        let outTradeNo = order.outTradeNo
        let (queries, flights) = (self.queries, context.upstream.queries)
        if fresh && flights.isRunning(outTradeNo) {
            // A query in flight may have left before closeorder's ORDERPAID: let it finish first,
            // then ask again, so the answer settled is one given after the payment (T7 found this).
            _ = await flights.run(outTradeNo) {
                await queries.queryAndSettle(outTradeNo, reason: reason, source: "reconcile", failure: failure)
            }
        }
        // A routine check is paced like the waits' polls (an order a wait asked about moments ago
        // is not asked again); the check after ORDERPAID is news and asks.
        let after = await flights.run(outTradeNo) {
            await queries.queryAndSettle(outTradeNo, reason: reason, source: "reconcile", failure: failure, paced: !fresh)
        }
        if let error = failure.value {
            instruments.callErrors.labelled("orderquery", error).increment()
            return .failed
        }
        return Self.outcome(before: order, after: after)
    }

    /// closeorder for an order past its expiry: closed → closed locally; ORDERPAID → believed only
    /// after a verified orderquery (as `OrderClosing.close` does).
    private func closeExpired(_ order: OrderRecord) async -> Outcome {
        let store = context.store
        do {
            switch try await context.upstream.closeOrder(order) {
            case .closed:
                let after = try? await context.settlement.close(order, detail: "reconcile: closeorder (expired)")
                return Self.outcome(before: order, after: after)
            case .alreadyPaid:
                _ = try? await store.appendEvent(order.outTradeNo, kind: "reconcile",
                                                 detail: "closeorder answered ORDERPAID; confirming with orderquery",
                                                 at: context.now())
                return await query(order, reason: "reconcile after ORDERPAID", fresh: true)
            }
        } catch {
            if error.notFound {
                // WeChat never had the order (unifiedorder never reached it): nothing can pay it.
                let after = try? await context.settlement.close(order, detail: "reconcile: closeorder ORDERNOTEXIST")
                return Self.outcome(before: order, after: after)
            }
            instruments.callErrors.labelled("closeorder", error.shortDescription).increment()
            _ = try? await store.appendEvent(order.outTradeNo, kind: "reconcile_failed",
                                             detail: "closeorder \(error.shortDescription)", at: context.now())
            return .failed
        }
    }

    private static func outcome(before: OrderRecord, after: OrderRecord?) -> Outcome {
        guard let after, !before.state.isFinal, after.state != before.state else { return .open }
        switch after.state {
        case .success, .refund: return .settled
        case .closed, .payError, .revoked: return .closed
        case .notPay, .userPaying: return .open
        }
    }
}

/// A value shared between child tasks (a `Mutex` cannot be captured by an escaping closure).
final class LockedBox<Value: Sendable>: Sendable {
    private let storage: Mutex<Value>
    init(_ value: Value) { storage = Mutex(value) }
    var value: Value { storage.withLock { $0 } }
    func update(_ change: (inout Value) -> Void) { storage.withLock { change(&$0) } }
}

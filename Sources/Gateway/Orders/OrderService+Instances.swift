// SPDX-License-Identifier: Apache-2.0
import Foundation
import Observability
import StorageCore

/// What changes when several gateway instances share one database (PostgreSQL): a wait is woken
/// by a change made on any instance, the waits of all instances together ask WeChat about an
/// order at most once per poll interval, and identical creates reaching several instances make
/// one unifiedorder. With a store that offers neither (SQLite), an instance hears only its own
/// changes and single-flights only its own calls, as before.
extension OrderService {
    /// Subscribes the waits to the store's change feed, if it has one: an order settled on another
    /// instance wakes the waits held here as a local settlement would. While the feed is down the
    /// waits still re-read their order every poll interval; when it is back, every wait re-reads
    /// at once (it may have missed a change).
    func listenForChangesElsewhere() {
        guard let feed = store as? any OrderChangeFeed else { return }
        let signals = self.signals
        let logger = self.logger
        feed.observeOrderChanges(
            changed: { outTradeNo in signals.wake(outTradeNo) },
            resync: {
                logger.notice("database change feed reconnected; every held wait re-reads its order")
                signals.wakeAll()
            })
    }

    /// A wait's poll of WeChat (orderquery through the per-order single-flight), taken only when
    /// this instance wins the order's query claim for the period: another instance's waits on the
    /// same order then rely on its answer, which reaches them through the change feed or their
    /// next read. A claim that cannot be taken (the database is down) skips this poll.
    func poll(_ outTradeNo: String) async {
        if let claims = store as? any OrderCallClaims {
            let at = now()
            let claimed = try? await claims.claimCall(
                .orderQuery, for: outTradeNo, now: at, until: at.addingTimeInterval(configuration.pollInterval))
            guard claimed == true else {
                instruments.pollClaimedElsewhere.increment()
                return
            }
        }
        instruments.pollQueried.increment()
        _ = await refresh(outTradeNo, reason: "wait", paced: true)
    }

    /// How long an instance may take over unifiedorder for an order before another may try: its
    /// three attempts with their timeouts and backoff fit in it.
    static let prepayClaimSeconds: TimeInterval = 40

    /// The order's prepay_id on a shared store: the instance that wins the order's unifiedorder
    /// claim calls WeChat, the others wait for its prepay_id (woken by the change feed when it is
    /// stored or the claim is given up, and re-reading every 250 ms whatever the feed does). A
    /// claim given up (the call failed) or run out (the instance died) lets the next one try.
    func prepayAcrossInstances(_ outTradeNo: String, claims: any OrderCallClaims) async -> Result<OrderRecord, APIError> {
        let deadline = ContinuousClock.now + .seconds(Self.prepayClaimSeconds + 5)
        do {
            while true {
                let token = signals.token()
                guard let order = try await store.order(outTradeNo) else { return .failure(.orderNotFound) }
                if hasLivePrepay(order) { return .success(order) }
                let at = now()
                let until = at.addingTimeInterval(Self.prepayClaimSeconds)
                if try await claims.claimCall(.unifiedOrder, for: outTradeNo, now: at, until: until) {
                    let result = await unifiedOrder(order)
                    if case .failure = result {
                        try? await claims.releaseCall(.unifiedOrder, for: outTradeNo, claimedUntil: until)
                    }
                    return result
                }
                // A final order has no claim to win: create's own checks answer for it.
                if order.state.isFinal { return .failure(.conflict("the order with this out_trade_no is already \(order.state.rawValue)")) }
                guard ContinuousClock.now < deadline else { return .failure(.upstreamUnavailable) }
                _ = await signals.wait(for: outTradeNo, since: token, seconds: 0.25)
            }
        } catch {
            return .failure(apiError(for: error))
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
import Foundation
import Observability
import StorageCore

/// What changes when several gateway instances share one database (PostgreSQL): a wait is woken
/// by a change made on any instance, the waits of all instances together ask WeChat about an
/// order at most once per poll interval, and identical creates reaching several instances make
/// one unifiedorder. With a store that offers neither (SQLite), an instance hears only its own
/// changes and single-flights only its own calls, as before.
extension OrderQueries {
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
}

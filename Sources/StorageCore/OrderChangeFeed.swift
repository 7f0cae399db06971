// SPDX-License-Identifier: Apache-2.0

/// A store shared by several gateway instances that tells each of them when an order's state
/// changed, wherever the change was made, so a `wait` on one instance answers a notify settled on
/// another without waiting for its next poll.
///
/// Delivery is best effort and may repeat: a change can be announced more than once, and while the
/// feed is down (the database restarting) changes are missed. After such a gap `resync` is called,
/// and every observer re-reads what it waits for. Observers must never rely on the feed alone:
/// a wait still re-reads its order every poll interval. Implementations: `PostgresOrderStore`
/// (`LISTEN`/`NOTIFY`).
public protocol OrderChangeFeed: Sendable {
    /// Starts delivering to the observer: `changed(outTradeNo)` after a committed state change,
    /// `resync()` when changes may have been missed (the feed reconnected). Both run on the feed's
    /// own thread, must be quick and must not block. Observers stay until the store closes.
    func observeOrderChanges(changed: @escaping @Sendable (String) -> Void, resync: @escaping @Sendable () -> Void)

    /// Whether the feed is connected now (for metrics and logs; waits do not depend on it).
    var isFeedConnected: Bool { get }
}

// SPDX-License-Identifier: Apache-2.0
import Observability
import Synchronization

/// What a running gateway re-reads when asked (`serve` fires these on SIGHUP): the catalog file
/// and the console's user file. Each part registers its own hook; the signal handling knows
/// nothing of what they reload.
///
/// A refused reload keeps the previous file in force and says so in the log, which nobody may be
/// reading when `systemctl reload` has already returned: `wxpay_reload_successful{what}` is 0 from
/// then until a good file is reloaded, for WxpayReloadRefused.
public final class ReloadHooks: Sendable {
    /// Reloads one thing; returns whether the new file is in force (false: refused, the old one stays).
    public typealias Hook = @Sendable () async -> Bool

    static let successful = Metric<Gauge>(
        "wxpay_reload_successful",
        help: "Whether the last reload of each file (on SIGHUP; the console's users also at the first sign-in or signed-in page after their file changes) was applied (1; also before any reload) or refused, the previous one staying in force (0).")

    private let hooks = Mutex<[(name: String, hook: Hook, outcome: Gauge?)]>([])
    private let metrics: MetricsRegistry?

    public init(metrics: MetricsRegistry? = nil) {
        metrics?.describe(Self.successful)
        self.metrics = metrics
    }

    /// Adds `hook`, run on every `fire()` after those added before it. `name` is the `what` label
    /// (lower case, `_` between words).
    public func add(_ name: String, _ hook: @escaping Hook) {
        let outcome = metrics?.makeGauge(Self.successful, ["what": name])
        outcome?.set(1)
        hooks.withLock { $0.append((name, hook, outcome)) }
    }

    /// What a part that also reloads by itself (the console's users, re-read when the file
    /// changes) calls with each outcome, so that the gauge says how the last reload went, however
    /// it came.
    public func reporter(for name: String) -> @Sendable (Bool) -> Void {
        let outcome = metrics?.makeGauge(Self.successful, ["what": name])
        return { applied in outcome?.set(applied ? 1 : 0) }
    }

    /// The names of the registered hooks, in order.
    public var names: [String] { hooks.withLock { $0.map(\.name) } }

    /// Runs every hook, one after the other.
    public func fire() async {
        for entry in hooks.withLock({ $0 }) {
            let applied = await entry.hook()
            entry.outcome?.set(applied ? 1 : 0)
        }
    }
}

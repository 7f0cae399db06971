// SPDX-License-Identifier: Apache-2.0
import Synchronization

/// What a running gateway re-reads when asked (`serve` fires these on SIGHUP): the catalog file
/// now, the console's user file later. Each part registers its own hook; the signal handling
/// knows nothing of what they reload.
public final class ReloadHooks: Sendable {
    public typealias Hook = @Sendable () async -> Void

    private let hooks = Mutex<[(name: String, hook: Hook)]>([])

    public init() {}

    /// Adds `hook`, run on every `fire()` after those added before it.
    public func add(_ name: String, _ hook: @escaping Hook) {
        hooks.withLock { $0.append((name, hook)) }
    }

    /// The names of the registered hooks, in order.
    public var names: [String] { hooks.withLock { $0.map(\.name) } }

    /// Runs every hook, one after the other.
    public func fire() async {
        for entry in hooks.withLock({ $0 }) { await entry.hook() }
    }
}

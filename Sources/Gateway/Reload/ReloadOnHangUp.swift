// SPDX-License-Identifier: Apache-2.0
import Glibc
import Lifecycle

/// Fires the reload hooks on every SIGHUP, one reload at a time, until the service group stops it.
///
/// Make it before the gateway says it listens: from then on a SIGHUP is queued for it, never the
/// default action (which would end the process).
///
/// ```swift
/// let reloading = ReloadOnHangUp(reloads)
/// try await ServiceGroup(services: [listeners, reloading]).run()
/// ```
public struct ReloadOnHangUp: Service, CustomStringConvertible {
    private let hooks: ReloadHooks
    private let hangUps: UnixSignals

    public init(_ hooks: ReloadHooks) {
        self.init(hooks, hangUps: UnixSignals([SIGHUP]))
    }

    /// With SIGHUP trapped earlier (from a program's first line): one that came in the meantime
    /// reloads as soon as this runs.
    public init(_ hooks: ReloadHooks, hangUps: UnixSignals) {
        self.hooks = hooks
        self.hangUps = hangUps
    }

    public var description: String { "reload on SIGHUP" }

    public func run() async {
        await cancelWhenGracefulShutdown { [hooks, hangUps] in
            for await _ in hangUps { await hooks.fire() }
        }
        hangUps.cancel()
    }
}

// SPDX-License-Identifier: Apache-2.0
import HTTP
import Lifecycle

/// Servers already listening, as a service: they answer until the group's graceful shutdown, then
/// refuse new connections and give the requests in flight `gracePeriod` (none once cancelled).
struct Serving: Service, CustomStringConvertible {
    let description: String
    let servers: [HTTPServer]
    let gracePeriod: Duration

    func run() async {
        try? await gracefulShutdown()
        let grace = Task.isCancelled ? .zero : gracePeriod
        await withDiscardingTaskGroup { group in
            for server in servers { group.addTask { await server.shutdown(gracePeriod: grace) } }
        }
    }
}

/// A loop that runs until its task is cancelled (a simulator's notification sender), as a
/// service: the group's graceful shutdown cancels it.
struct BackgroundLoop: Service, CustomStringConvertible {
    let description: String
    let loop: @Sendable () async -> Void

    func run() async {
        await cancelWhenGracefulShutdown(loop)
    }
}

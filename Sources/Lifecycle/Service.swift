// SPDX-License-Identifier: Apache-2.0

/// Work that runs for as long as the process serves: a listener, a sweeper, a daily job. A
/// `ServiceGroup` runs each as a child task and, to stop them, fires its graceful shutdown (see
/// `withGracefulShutdownHandler`, `gracefulShutdown()` and `cancelWhenGracefulShutdown`), then
/// cancels what is still running once the group's deadline has passed.
///
/// `run` returns when the service has stopped; returning or throwing before the group asked it to
/// stop is a failure that stops the group. The shape is swift-service-lifecycle's.
///
/// ```swift
/// struct Sweeper: Service {
///     func run() async throws {
///         try await cancelWhenGracefulShutdown {
///             while !Task.isCancelled { await sweep(); try? await Task.sleep(for: .seconds(30)) }
///         }
///     }
/// }
/// ```
public protocol Service: Sendable {
    func run() async throws
}

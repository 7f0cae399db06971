// SPDX-License-Identifier: Apache-2.0
import Lifecycle
import Synchronization

/// Answers one request of a deferred route (see `HTTPRouter.addDeferred`), from any thread, at any
/// time after the handler returned.
///
/// Why it exists: an async handler that waits keeps its task, and a task keeps the memory of its
/// deepest chain of async calls for as long as it lives (several KiB in a real handler). A long-poll
/// held by a responder costs only the suspended connection and this small object, so ten thousand
/// held requests do not cost ten thousand tasks.
///
/// The first `respond` wins; later ones are ignored (a wake-up and a deadline may race). A responder
/// let go without answering answers 500, so a request can never be left hanging.
public final class HTTPServerResponder: Sendable {
    private enum Target {
        /// A request held by the server: its suspended connection is resumed with the answer.
        case exchange(HTTPExchange, HTTPServerCore)
        /// A request answered in process (`HTTPRouter.respond(to:)`).
        case callback(@Sendable (HTTPServerResponse) -> Void)
    }

    private let target: Target
    private let cancellation: CancellationLatch
    private let answered = Atomic<Bool>(false)

    init(exchange: HTTPExchange, core: HTTPServerCore) {
        target = .exchange(exchange, core)
        cancellation = exchange.cancellation
    }

    init(cancellation: CancellationLatch, _ callback: @escaping @Sendable (HTTPServerResponse) -> Void) {
        target = .callback(callback)
        self.cancellation = cancellation
    }

    deinit {
        if !answered.load(ordering: .acquiring) { send(.internalServerError) }
    }

    /// Sends `response`, unless an answer was already given (or the server already answered 503
    /// at the end of a shutdown's grace period). Cheap and non-blocking: call it from any thread.
    public func respond(_ response: HTTPServerResponse) {
        guard answered.compareExchange(expected: false, desired: true, ordering: .acquiringAndReleasing).exchanged
        else { return }
        send(response)
    }

    /// Runs `action` once, on any thread, if the request is cancelled before it is answered: the
    /// server is shutting down (at the end of its grace period), or the client left, on a route
    /// with `HTTPRouteOptions.cancelledWhenClientLeaves`; in process (`HTTPRouter.respond(to:)`),
    /// when the calling task is cancelled. The handler should then answer at once with what it
    /// has. Runs at once when the request was already cancelled; a later call replaces an action
    /// not yet run. The action is kept until the answer, so it must not hold the responder:
    /// a responder let go unanswered answers 500, and one kept by its own action never is.
    public func onCancel(_ action: @escaping @Sendable () -> Void) {
        cancellation.whenCancelled(action)
    }

    private func send(_ response: HTTPServerResponse) {
        switch target {
        case .exchange(let exchange, let core): core.deliver(response, to: exchange)
        case .callback(let callback):
            cancellation.forget()
            callback(response)
        }
    }
}

// SPDX-License-Identifier: Apache-2.0
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
    private let answered = Atomic<Bool>(false)

    init(exchange: HTTPExchange, core: HTTPServerCore) {
        target = .exchange(exchange, core)
    }

    init(_ callback: @escaping @Sendable (HTTPServerResponse) -> Void) {
        target = .callback(callback)
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

    private func send(_ response: HTTPServerResponse) {
        switch target {
        case .exchange(let exchange, let core): core.deliver(response, to: exchange)
        case .callback(let callback): callback(response)
        }
    }
}

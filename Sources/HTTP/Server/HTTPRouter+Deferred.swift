// SPDX-License-Identifier: Apache-2.0
import Lifecycle

/// A handler that answers through a responder, possibly long after it returned: the request stays
/// held (its connection suspended, no thread and no task) until `HTTPServerResponder.respond`.
///
/// It runs on the server's polling thread, like an immediate handler, so it must not block: it
/// answers at once or hands the responder (and any async work) on, to a task, a queue or a
/// registry of waiters. Not spawning a task per request is the point: the handler decides how
/// many run at once, so a burst of ten thousand long-polls need not become ten thousand tasks.
public typealias HTTPServerDeferredHandler = @Sendable (HTTPServerRequest, HTTPServerResponder) -> Void

extension HTTPRouter {
    /// Adds a deferred handler for `method` on `template`: for long-polls that may be held for tens
    /// of seconds by the thousand, where a task per held request would cost more memory than the
    /// request itself (see `HTTPServerResponder`).
    ///
    /// ```swift
    /// router.addDeferred(.get, "/v1/orders/{id}") { request, responder in
    ///     let id = request.pathParameters["id"] ?? ""
    ///     orders.whenFinished(id) { json in responder.respond(.json(json)) }   // no task while it waits
    /// }
    /// ```
    ///
    /// On shutdown a held request is treated like a waiting async handler: the server waits for its
    /// answer until the grace period ends, then cancels it (`HTTPServerResponder.onCancel`) and,
    /// unanswered at the end of the cancellation window, answers 503 itself (a later `respond` is
    /// ignored).
    public mutating func addDeferred(
        _ method: HTTPMethod, _ template: String, options: HTTPRouteOptions = HTTPRouteOptions(),
        handler: @escaping HTTPServerDeferredHandler
    ) {
        insertDeferred(
            Route(method: method, template: HTTPRouteTemplate(template), options: options, handler: .deferred(handler)))
    }

    /// Runs a deferred handler in process and waits for its answer (`respond(to:)`); cancelling
    /// the calling task cancels the request, as a client leaving does over a socket.
    static func run(_ handler: HTTPServerDeferredHandler, _ request: HTTPServerRequest) async -> HTTPServerResponse {
        let cancellation = CancellationLatch()
        return await withTaskCancellationHandler {
            await withCheckedContinuation { (continuation: CheckedContinuation<HTTPServerResponse, Never>) in
                handler(request, HTTPServerResponder(cancellation: cancellation) { continuation.resume(returning: $0) })
            }
        } onCancel: {
            cancellation.cancel()
        }
    }
}
